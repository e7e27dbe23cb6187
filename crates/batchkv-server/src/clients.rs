//! The connection registry: what CLIENT LIST, CLIENT INFO and CLIENT KILL
//! see of every connection ([`ClientHandle`]), and the server cron that
//! closes idle clients (`timeout`) and samples the command rate.
//!
//! A connection registers when it is accepted and unregisters when it
//! ends ([`Registration`]). Its handle is shared: the connection publishes
//! into it (with relaxed atomic stores, once per command, from
//! `commands::execute`) what other connections may list, and reads from it
//! whether it was killed. A killed connection closes when it next waits
//! for input (or while blocked in BLPOP and friends): `conn.rs` selects on
//! [`ClientHandle::interrupted`] (killed, or the server stopping) or
//! [`ClientHandle::killed`]. Those waits keep the connection task's waker
//! in its handle, replaced only when the task's waker changes: a
//! `tokio::sync::Notify` waiter (and the shutdown `watch`'s, shared by
//! every connection) was registered and removed under a lock on every
//! request, ~1,000 instructions of a single HGET's 15,000.
//!
//! A client's idle time (CLIENT LIST `idle`, `timeout`) counts from the
//! start of its last command; Redis counts from its last read or write,
//! so a request whose bytes trickle in for longer than `timeout` is cut
//! here and not in Redis.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicU8, AtomicUsize};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::watch;

use crate::shared::Shared;

/// [`ClientHandle::flags`]: blocked in BLPOP and friends.
pub const BLOCKED: u32 = 1;
/// CLIENT UNBLOCK TIMEOUT: the blocked command answers as if timed out.
pub const UNBLOCK_TIMEOUT: u8 = 1;
/// CLIENT UNBLOCK ERROR: the blocked command answers `-UNBLOCKED`.
pub const UNBLOCK_ERROR: u8 = 2;
/// CLIENT NO-EVICT ON.
pub const NO_EVICT: u32 = 2;
/// CLIENT NO-TOUCH ON.
pub const NO_TOUCH: u32 = 4;
/// After MONITOR.
pub const MONITOR: u32 = 8;

/// What the registry knows of one connection.
pub struct ClientHandle {
    pub id: u64,
    /// The peer's `ip:port`.
    pub addr: String,
    /// The local `ip:port` the client connected to.
    pub laddr: String,
    /// The socket's file descriptor (-1 if unknown).
    pub fd: i64,
    connected: Instant,
    /// Milliseconds from `connected` to the start of the last command.
    last_ms: AtomicU64,
    /// The last command's statistics slot plus one (0: none yet).
    cmd: AtomicUsize,
    db: AtomicU8,
    resp: AtomicU8,
    /// Commands queued in MULTI; -1 outside MULTI.
    multi: AtomicI64,
    watch: AtomicU64,
    flags: AtomicU32,
    /// Channel, pattern and shard-channel subscriptions (pub/sub keeps
    /// them up to date; a subscribed client is never closed as idle).
    pub sub: AtomicU64,
    pub psub: AtomicU64,
    pub ssub: AtomicU64,
    text: Mutex<Text>,
    killed: AtomicBool,
    /// A pending CLIENT UNBLOCK of this (blocked) client: 0 none,
    /// [`UNBLOCK_TIMEOUT`] or [`UNBLOCK_ERROR`]. Set only while `BLOCKED`
    /// is, both under `unblock_lock`, so a request never outlives the
    /// blocking it was meant for ([`Self::leave_blocked`]).
    unblock: AtomicU8,
    unblock_lock: Mutex<()>,
    /// The connection task's waker while it waits in [`Self::killed`] or
    /// [`Self::interrupted`] (a stale one only costs a spurious poll).
    waker: Mutex<Option<Waker>>,
}

/// The names a client gave itself (CLIENT SETNAME, SETINFO).
#[derive(Default, Clone)]
struct Text {
    name: Option<Bytes>,
    lib_name: Option<Bytes>,
    lib_ver: Option<Bytes>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update replaces a value whole: a poisoned lock guards a
    // consistent value.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ClientHandle {
    /// A handle for connection `id` from `addr` to `laddr`.
    pub fn new(id: u64, addr: String, laddr: String, fd: i64) -> ClientHandle {
        ClientHandle {
            id,
            addr,
            laddr,
            fd,
            connected: Instant::now(),
            last_ms: AtomicU64::new(0),
            cmd: AtomicUsize::new(0),
            db: AtomicU8::new(0),
            resp: AtomicU8::new(2),
            multi: AtomicI64::new(-1),
            watch: AtomicU64::new(0),
            flags: AtomicU32::new(0),
            sub: AtomicU64::new(0),
            psub: AtomicU64::new(0),
            ssub: AtomicU64::new(0),
            text: Mutex::new(Text::default()),
            killed: AtomicBool::new(false),
            unblock: AtomicU8::new(0),
            unblock_lock: Mutex::new(()),
            waker: Mutex::new(None),
        }
    }

    /// Records that a command (statistics slot `slot`) started at `at`.
    pub fn touch(&self, at: Instant, slot: usize) {
        let ms = at.saturating_duration_since(self.connected).as_millis();
        self.last_ms.store(ms as u64, Relaxed);
        self.cmd.store(slot + 1, Relaxed);
    }

    /// Publishes the connection's state after a command.
    pub fn publish(&self, db: u8, resp: u8, multi: Option<usize>, watched: usize) {
        self.db.store(db, Relaxed);
        self.resp.store(resp, Relaxed);
        self.multi.store(multi.map_or(-1, |n| n as i64), Relaxed);
        self.watch.store(watched as u64, Relaxed);
    }

    pub fn set_name(&self, name: Option<Bytes>) {
        lock(&self.text).name = name;
    }

    /// CLIENT SETINFO: `lib_ver` false sets the library name, true its
    /// version (empty: none).
    pub fn set_lib(&self, lib_ver: bool, v: Bytes) {
        let v = (!v.is_empty()).then_some(v);
        let mut t = lock(&self.text);
        if lib_ver {
            t.lib_ver = v;
        } else {
            t.lib_name = v;
        }
    }

    pub fn set_flag(&self, flag: u32, on: bool) {
        if on {
            self.flags.fetch_or(flag, Relaxed);
        } else {
            self.flags.fetch_and(!flag, Relaxed);
        }
    }

    pub fn flags(&self) -> u32 {
        self.flags.load(Relaxed)
    }

    /// Whether the client has subscriptions (pub/sub mode).
    pub fn subscribed(&self) -> bool {
        self.sub.load(Relaxed) + self.psub.load(Relaxed) + self.ssub.load(Relaxed) > 0
    }

    /// Seconds since the client connected.
    pub fn age(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.connected).as_secs()
    }

    /// How long the client has been idle (since its last command started,
    /// or since it connected).
    pub fn idle(&self, now: Instant) -> Duration {
        let last = self.connected + Duration::from_millis(self.last_ms.load(Relaxed));
        now.saturating_duration_since(last)
    }

    /// Asks the connection to close (CLIENT KILL, idle timeout).
    pub fn kill(&self) {
        self.killed.store(true, Release);
        self.wake();
    }

    /// CLIENT UNBLOCK: asks the client, if it is blocked, to answer its
    /// blocking command now (`how`: [`UNBLOCK_TIMEOUT`] or
    /// [`UNBLOCK_ERROR`]); whether it was blocked.
    pub fn request_unblock(&self, how: u8) -> bool {
        let _held = lock(&self.unblock_lock);
        if self.flags() & BLOCKED == 0 {
            return false;
        }
        self.unblock.store(how, Release);
        self.wake();
        true
    }

    /// Completes with the reason once CLIENT UNBLOCK asked this client to
    /// stop waiting (and forgets the request).
    pub async fn unblocked(&self) -> u8 {
        self.wait_until(|| self.unblock.load(Acquire) != 0).await;
        self.unblock.swap(0, AcqRel)
    }

    /// The client no longer waits in a blocking command: clears the
    /// `BLOCKED` flag and any CLIENT UNBLOCK that came too late.
    pub fn leave_blocked(&self) {
        let _held = lock(&self.unblock_lock);
        self.set_flag(BLOCKED, false);
        self.unblock.store(0, Release);
    }

    /// Wakes the connection's task if it waits in [`Self::killed`] or
    /// [`Self::interrupted`], to look at what it waits for again.
    pub fn wake(&self) {
        // Taken under the lock the waiter stores it under: a waiter that
        // stored its waker before is woken; one that stores it after
        // checks its condition after, and sees what was set before this.
        let waker = lock(&self.waker).take();
        if let Some(w) = waker {
            w.wake();
        }
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Acquire)
    }

    /// Keeps `w` to be woken by [`Self::wake`] (the task's waker rarely
    /// changes: no clone then).
    fn register(&self, w: &Waker) {
        let mut slot = lock(&self.waker);
        if !slot.as_ref().is_some_and(|old| old.will_wake(w)) {
            *slot = Some(w.clone());
        }
    }

    /// Completes once `done()` holds, checked after the waker is kept (see
    /// [`Self::wake`]); each wake-up checks it again.
    async fn wait_until(&self, done: impl Fn() -> bool) {
        std::future::poll_fn(|cx| {
            self.register(cx.waker());
            if done() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await
    }

    /// Completes once the client has been killed.
    pub async fn killed(&self) {
        self.wait_until(|| self.is_killed()).await
    }

    /// Completes once the client has been killed or `stop` holds true (the
    /// server stopping: it calls [`Clients::wake_all`] after setting it).
    pub async fn interrupted(&self, stop: &watch::Receiver<bool>) {
        self.wait_until(|| self.is_killed() || *stop.borrow()).await
    }

    /// The client's CLIENT LIST line (without the newline), as Redis 7.2
    /// prints it. `cmd` names a statistics slot. Fields batchkv does not
    /// track are constants: `qbuf`, `qbuf-free`, `argv-mem`, `multi-mem`,
    /// `rbp`, `obl`, `oll`, `omem`, `tot-mem` are 0, `rbs` is the read
    /// buffer's initial size, `events` is `r`, `user` is `default` and
    /// `redir` is -1 (no tracking).
    pub fn info_line(&self, now: Instant, cmd: impl Fn(usize) -> String) -> String {
        let text = lock(&self.text).clone();
        let show = |b: &Option<Bytes>| {
            b.as_ref()
                .map_or(String::new(), |b| String::from_utf8_lossy(b).into_owned())
        };
        let multi = self.multi.load(Relaxed);
        let cmd = match self.cmd.load(Relaxed) {
            0 => "NULL".to_string(),
            n => cmd(n - 1),
        };
        let mut s = String::with_capacity(320);
        let _ = write!(
            s,
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} \
             ssub={} multi={multi} watch={} qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=16384 \
             rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={cmd} user=default redir=-1 resp={} \
             lib-name={} lib-ver={}",
            self.id,
            self.addr,
            self.laddr,
            self.fd,
            show(&text.name),
            self.age(now),
            self.idle(now).as_secs(),
            self.flag_letters(multi >= 0),
            self.db.load(Relaxed),
            self.sub.load(Relaxed),
            self.psub.load(Relaxed),
            self.ssub.load(Relaxed),
            self.watch.load(Relaxed),
            self.resp.load(Relaxed),
            show(&text.lib_name),
            show(&text.lib_ver),
        );
        s
    }

    /// Redis's flag letters (`N`: none).
    fn flag_letters(&self, in_multi: bool) -> String {
        let f = self.flags();
        let mut s = String::new();
        for (on, c) in [
            (f & MONITOR != 0, 'O'),
            (self.subscribed(), 'P'),
            (in_multi, 'x'),
            (f & BLOCKED != 0, 'b'),
            (self.is_killed(), 'A'),
            (f & NO_EVICT != 0, 'e'),
            (f & NO_TOUCH != 0, 'T'),
        ] {
            if on {
                s.push(c);
            }
        }
        if s.is_empty() {
            s.push('N');
        }
        s
    }
}

/// Which connections CLIENT KILL closes (every given condition must hold).
#[derive(Default, Debug)]
pub struct KillFilter {
    pub id: Option<u64>,
    pub addr: Option<String>,
    pub laddr: Option<String>,
    /// `TYPE`: `Some(true)` pub/sub clients only, `Some(false)` the others;
    /// `None` every type. A type no client has (master, replica) is
    /// [`KillFilter::nobody`].
    pub pubsub: Option<bool>,
    pub nobody: bool,
    /// Spare the calling client (`SKIPME`, default yes).
    pub skip_me: bool,
}

impl KillFilter {
    fn matches(&self, c: &ClientHandle, me: u64) -> bool {
        let spared = self.nobody || (self.skip_me && c.id == me);
        !spared
            && self.id.is_none_or(|id| id == c.id)
            && self.addr.as_ref().is_none_or(|a| *a == c.addr)
            && self.laddr.as_ref().is_none_or(|a| *a == c.laddr)
            && self.pubsub.is_none_or(|p| p == c.subscribed())
    }
}

/// Every connected client, by id.
#[derive(Default)]
pub struct Clients {
    map: Mutex<BTreeMap<u64, Arc<ClientHandle>>>,
}

/// A connection's place in the registry; leaves it when dropped (declare
/// it after the socket, so that it drops first).
pub struct Registration<'a> {
    clients: &'a Clients,
    id: u64,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        lock(&self.clients.map).remove(&self.id);
    }
}

impl Clients {
    /// Adds `handle` until the returned registration is dropped.
    pub fn register(&self, handle: Arc<ClientHandle>) -> Registration<'_> {
        let id = handle.id;
        lock(&self.map).insert(id, handle);
        Registration { clients: self, id }
    }

    /// The connected clients, in id (connection) order.
    pub fn all(&self) -> Vec<Arc<ClientHandle>> {
        lock(&self.map).values().cloned().collect()
    }

    /// The client with `id`, if connected.
    pub fn get(&self, id: u64) -> Option<Arc<ClientHandle>> {
        lock(&self.map).get(&id).cloned()
    }

    /// Kills the clients `filter` selects (`me`: the caller's id); returns
    /// how many.
    pub fn kill(&self, filter: &KillFilter, me: u64) -> usize {
        let map = lock(&self.map);
        let mut n = 0;
        for c in map.values().filter(|c| filter.matches(c, me)) {
            c.kill();
            n += 1;
        }
        n
    }

    /// Wakes every client's task ([`ClientHandle::wake`]): at shutdown, so
    /// that each one waiting for input sees the stop.
    pub fn wake_all(&self) {
        for c in lock(&self.map).values() {
            c.wake();
        }
    }

    /// Kills the clients idle for `timeout` or longer, except those
    /// blocked or subscribed (as Redis does); returns how many.
    pub fn close_idle(&self, timeout: Duration) -> usize {
        let now = Instant::now();
        let map = lock(&self.map);
        let mut n = 0;
        for c in map.values() {
            if c.flags() & BLOCKED == 0 && !c.subscribed() && c.idle(now) >= timeout {
                c.kill();
                n += 1;
            }
        }
        n
    }
}

/// The server cron: once a second, samples the command rate
/// (`instantaneous_ops_per_sec`) and, when `timeout` is set, closes the
/// clients idle that long. Returns when the server stops.
pub async fn cron(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        shared
            .cmdstats
            .sample_rate(shared.stats.commands.load(Relaxed));
        let timeout = shared.settings.timeout();
        if timeout > 0 {
            shared.clients_reg.close_idle(Duration::from_secs(timeout));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handle(id: u64) -> Arc<ClientHandle> {
        Arc::new(ClientHandle::new(
            id,
            format!("127.0.0.1:{}", 1000 + id),
            "127.0.0.1:6379".into(),
            8,
        ))
    }

    #[test]
    fn kill_selects_by_every_condition_and_skips_the_caller() {
        let clients = Clients::default();
        let (a, b) = (handle(1), handle(2));
        let _ra = clients.register(a.clone());
        let _rb = clients.register(b.clone());
        let by_addr = KillFilter {
            addr: Some("127.0.0.1:1002".into()),
            skip_me: true,
            ..Default::default()
        };
        assert_eq!(clients.kill(&by_addr, 2), 0, "SKIPME spares the caller");
        assert_eq!(clients.kill(&by_addr, 1), 1);
        assert!(b.is_killed() && !a.is_killed());
        let nobody = KillFilter {
            nobody: true,
            ..Default::default()
        };
        assert_eq!(clients.kill(&nobody, 0), 0);
        drop(_ra);
        assert_eq!(clients.all().len(), 1);
    }

    #[test]
    fn info_line_has_redis_fields_in_order() {
        let h = handle(7);
        h.set_name(Some(Bytes::from("me")));
        h.publish(3, 3, Some(2), 1);
        h.touch(Instant::now(), 0);
        let line = h.info_line(Instant::now(), |_| "get".into());
        let keys: Vec<&str> = line
            .split(' ')
            .map(|kv| kv.split('=').next().unwrap())
            .collect();
        assert_eq!(
            keys.join(" "),
            "id addr laddr fd name age idle flags db sub psub ssub multi watch qbuf qbuf-free \
             argv-mem multi-mem rbs rbp obl oll omem tot-mem events cmd user redir resp lib-name lib-ver"
        );
        assert!(
            line.contains(" name=me ") && line.contains(" db=3 ") && line.contains(" flags=x ")
        );
        assert!(line.contains(" multi=2 watch=1 ") && line.contains(" cmd=get "));
    }

    #[tokio::test]
    async fn killed_completes_after_a_kill_even_if_it_came_first() {
        let h = handle(1);
        h.kill();
        h.killed().await;
        h.killed().await;
    }
}
