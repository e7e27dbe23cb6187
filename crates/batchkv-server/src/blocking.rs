//! Clients blocked in BLPOP, BRPOP, BLMOVE, BRPOPLPUSH and BLMPOP (on
//! lists), in BZPOPMIN, BZPOPMAX and BZMPOP (on sorted sets) and in XREAD
//! (on streams).
//!
//! A blocking command's handler is its non-blocking form: when every key
//! it waits on is empty it answers nil, exactly what the command answers
//! inside MULTI, and `commands::execute` then reports
//! [`After::Block`](crate::commands::After). The connection calls
//! [`wait`]: the client is queued on its keys, and the handler runs again
//! each time the client is woken, until it answers something other than
//! nil (served, or an error such as WRONGTYPE), the timeout passes (a null
//! array, as Redis answers a timed-out client), the client disconnects or
//! the server stops.
//!
//! Every write that can make a list non-empty calls [`Blocking::signal`]
//! for its key after its batch is committed: the list pushes, LMOVE's and
//! BLMOVE's destination, RENAME's, COPY's and MOVE's destination; SWAPDB,
//! FLUSHDB and FLUSHALL call [`Blocking::signal_dbs`] for their databases
//! (after their write, `Shared::signal_dbs_after_write`: a blocked
//! XREADGROUP whose stream is gone answers UNBLOCKED). A write that
//! can make a sorted set non-empty (ZADD, ZINCRBY, the Z*STORE
//! destinations) calls [`Blocking::signal_kind`] with [`WaitFor::ZSet`],
//! XADD with [`WaitFor::Stream`].
//!
//! A client waits for one type of value ([`WaitFor`]). As in Redis, a
//! client is not served by a key holding another type: its retry passes
//! over such keys (`commands::lists`, `commands::zsets`) and it stays
//! blocked, and a sorted-set write does not wake list clients (a RENAME or
//! COPY wakes both types: the retry of the other type finds nothing).
//!
//! # Invariants
//! 1. Each stored key has a FIFO queue of the clients waiting on it; a
//!    signal wakes the first of them of each type it names (`signal`:
//!    every type), no other — except stream readers, which a signal wakes
//!    all (reading an entry leaves it for the others, as in Redis).
//! 2. A client that leaves the queues — served, timed out, disconnected —
//!    wakes the new first client of every queue it was in, so a wake-up it
//!    consumed, or one that reached it too late, is passed on to the new
//!    first client of its type (at worst one spurious retry): a wake-up
//!    it took was meant for a client of its type. A woken client that
//!    finds nothing to pop (another client popped first, or the key holds
//!    another type) keeps its place. A stream reader passes nothing on:
//!    each signal reached every reader (invariant 1).
//! 3. No lost wake-up: a client joins its queues before it retries, and a
//!    writer signals after its commit. The SeqCst fences in
//!    [`Blocking::register`] and [`Blocking::signal`] order the registry
//!    count against the engine write and read: either the writer sees the
//!    client (and wakes it), or the client's retry sees the write.
//!
//! So clients blocked on one key are served in the order they blocked,
//! except that a client that is not blocked (a plain LPOP) may take an
//! element before a woken client retries: unlike Redis, a push does not
//! serve blocked clients before the pushing client's next command.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{fence, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::sync::{watch, Notify};
use tokio::time::Instant;

use crate::clients::{ClientHandle, UNBLOCK_ERROR};
use crate::commands::{self, ConnState};
use crate::resp::Reply;
use crate::shared::Shared;

/// The type of value a blocked client waits for: what can serve it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitFor {
    List,
    ZSet,
    Stream,
}

/// The queues of blocked clients, by stored key.
pub struct Blocking {
    /// Registered clients; [`Blocking::signal`] takes no lock while 0.
    waiting: AtomicUsize,
    queues: Mutex<Queues>,
}

#[derive(Default)]
struct Queues {
    next_id: u64,
    by_key: HashMap<Vec<u8>, VecDeque<Waiter>>,
}

/// A client in a key's queue.
struct Waiter {
    id: u64,
    kind: WaitFor,
    notify: Arc<Notify>,
}

/// Wakes the first client in `queue` waiting for `kind`, or, with `None`,
/// the first one of each type.
fn wake_first(queue: &VecDeque<Waiter>, kind: Option<WaitFor>) {
    for k in [WaitFor::List, WaitFor::ZSet] {
        if kind.is_none_or(|want| want == k) {
            if let Some(w) = queue.iter().find(|w| w.kind == k) {
                w.notify.notify_one();
            }
        }
    }
    // A stream read takes nothing away: every reader is served.
    if kind.is_none_or(|want| want == WaitFor::Stream) {
        for w in queue.iter().filter(|w| w.kind == WaitFor::Stream) {
            w.notify.notify_one();
        }
    }
}

fn lock(m: &Mutex<Queues>) -> MutexGuard<'_, Queues> {
    // Every update of the queues is complete before the guard is dropped
    // (no code that can panic runs in between), so a poisoned lock still
    // guards consistent queues.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Default for Blocking {
    fn default() -> Self {
        Blocking::new()
    }
}

impl Blocking {
    pub fn new() -> Blocking {
        Blocking {
            waiting: AtomicUsize::new(0),
            queues: Mutex::new(Queues::default()),
        }
    }

    /// Clients blocked right now.
    pub fn blocked_clients(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Wakes the first client of each type waiting on stored key `key`,
    /// if any. Call after committing a write that may have made the list
    /// (or whatever value) at `key` non-empty.
    pub fn signal(&self, key: &[u8]) {
        self.wake(key, None);
    }

    /// Wakes the first client waiting on stored key `key` for a value of
    /// type `kind`, if any. Call after committing a write that may have
    /// made the value of that type at `key` non-empty.
    pub fn signal_kind(&self, key: &[u8], kind: WaitFor) {
        self.wake(key, Some(kind));
    }

    /// Wakes the first client of each type waiting on each key of the
    /// databases `dbs`. Call after committing a write that may have made
    /// any of their values non-empty (SWAPDB).
    pub fn signal_dbs(&self, dbs: &[u8]) {
        // Pairs with the fence in `register` (invariant 3).
        fence(Ordering::SeqCst);
        if self.waiting.load(Ordering::Relaxed) == 0 {
            return;
        }
        let q = lock(&self.queues);
        for (key, queue) in &q.by_key {
            if key.first().is_some_and(|d| dbs.contains(d)) {
                wake_first(queue, None);
            }
        }
    }

    fn wake(&self, key: &[u8], kind: Option<WaitFor>) {
        // Pairs with the fence in `register` (invariant 3).
        fence(Ordering::SeqCst);
        if self.waiting.load(Ordering::Relaxed) == 0 {
            return;
        }
        let q = lock(&self.queues);
        if let Some(queue) = q.by_key.get(key) {
            wake_first(queue, kind);
        }
    }

    /// Queues a client waiting for `kind` on stored keys `keys`
    /// (duplicates allowed) until the returned registration is dropped.
    fn register(&self, mut keys: Vec<Vec<u8>>, kind: WaitFor) -> Registration<'_> {
        keys.sort_unstable();
        keys.dedup();
        let notify = Arc::new(Notify::new());
        let id = {
            let mut q = lock(&self.queues);
            q.next_id += 1;
            let id = q.next_id;
            for k in &keys {
                q.by_key.entry(k.clone()).or_default().push_back(Waiter {
                    id,
                    kind,
                    notify: notify.clone(),
                });
            }
            id
        };
        self.waiting.fetch_add(1, Ordering::SeqCst);
        // Pairs with the fence in `signal`: the caller's next read of the
        // engine happens after it (invariant 3).
        fence(Ordering::SeqCst);
        Registration {
            blocking: self,
            id,
            kind,
            keys,
            notify,
        }
    }
}

/// A client's place in the queues of its keys.
struct Registration<'a> {
    blocking: &'a Blocking,
    id: u64,
    kind: WaitFor,
    keys: Vec<Vec<u8>>,
    notify: Arc<Notify>,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let mut q = lock(&self.blocking.queues);
        for k in &self.keys {
            let Some(d) = q.by_key.get_mut(k) else {
                continue;
            };
            d.retain(|w| w.id != self.id);
            if d.is_empty() {
                q.by_key.remove(k);
            } else if self.kind != WaitFor::Stream {
                // Invariant 2: pass a possibly consumed wake-up on (a
                // stream reader's wake-up reached every other reader).
                wake_first(d, Some(self.kind));
            }
        }
        self.blocking.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What a blocked client waits for.
struct Request {
    /// Stored keys.
    keys: Vec<Vec<u8>>,
    /// `None`: forever.
    timeout: Option<Duration>,
    kind: WaitFor,
    /// What runs each time the client is woken.
    retry: commands::Handler,
}

/// What the blocking command `args` (name included) waits for; `None` if
/// `args` is not a valid blocking command.
fn request(db: u8, args: &[Bytes]) -> Option<Request> {
    if let Some((keys, timeout, retry)) = commands::lists::block_request(db, args) {
        return Some(Request {
            keys,
            timeout,
            kind: WaitFor::List,
            retry,
        });
    }
    if let Some((keys, timeout, retry)) = commands::zsets::block_request(db, args) {
        return Some(Request {
            keys,
            timeout,
            kind: WaitFor::ZSet,
            retry,
        });
    }
    let (keys, timeout, retry) = commands::streams::block_request(db, args)?;
    Some(Request {
        keys,
        timeout,
        kind: WaitFor::Stream,
        retry,
    })
}

/// Sleeps until `deadline`, forever if `None`.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Clears the client's `BLOCKED` flag when [`wait`] returns, however it
/// returns.
struct LeaveBlocked<'a>(&'a ClientHandle);

impl Drop for LeaveBlocked<'_> {
    fn drop(&mut self) {
        self.0.leave_blocked();
    }
}

/// Waits until the blocking command `args` (name included), whose handler
/// just answered nil on this connection, can be served, and returns its
/// reply: the handler's first non-nil answer, or a null array once the
/// timeout passes. `None`: the client disconnected or the server is
/// stopping (the connection closes).
///
/// While it waits, further requests from the client are read into `rbuf`
/// (as Redis buffers a blocked client's input), up to the query buffer
/// limit; they run after the reply. Pub/Sub messages for the connection
/// (a RESP3 subscriber) are written meanwhile, as Redis does.
pub async fn wait(
    shared: &Shared,
    st: &mut ConnState,
    args: &[Bytes],
    sock: &mut TcpStream,
    rbuf: &mut BytesMut,
    stop: &mut watch::Receiver<bool>,
) -> Option<Reply> {
    let handler = commands::lookup(&args[0])?.handler;
    // XREAD's `$` IDs as its run resolved them (`commands::streams`); the
    // slow log shows the command as sent.
    let sent = args;
    let resolved = st.block_args.take();
    let args = resolved.as_deref().unwrap_or(args);
    let Some(req) = request(st.db, args) else {
        // Not a blocking command after all: answer as it does.
        return Some(handler(shared, st, &args[1..]));
    };
    let handler = req.retry;
    let deadline = req.timeout.and_then(|t| Instant::now().checked_add(t));
    let reg = shared.blocking.register(req.keys, req.kind);
    let limit = shared.settings.client_query_buffer_limit();
    let mut pushes = BytesMut::new();
    let client = st.client.clone();
    let _leave = LeaveBlocked(&client);
    loop {
        let began = std::time::Instant::now();
        let reply = handler(shared, st, &args[1..]);
        if !matches!(reply, Reply::Nil | Reply::NilArray) {
            commands::record_unblocked(shared, st, sent, &reply, began.elapsed());
            return Some(reply);
        }
        loop {
            if *stop.borrow() {
                return None;
            }
            tokio::select! {
                _ = reg.notify.notified() => break,
                _ = until(deadline) => {
                    let reply = Reply::NilArray;
                    commands::record_unblocked(shared, st, sent, &reply, Duration::ZERO);
                    return Some(reply);
                }
                how = client.unblocked() => {
                    let reply = if how == UNBLOCK_ERROR {
                        Reply::err("UNBLOCKED client unblocked via CLIENT UNBLOCK")
                    } else {
                        Reply::NilArray
                    };
                    commands::record_unblocked(shared, st, sent, &reply, Duration::ZERO);
                    return Some(reply);
                }
                _ = stop.changed() => return None,
                r = sock.read_buf(rbuf), if rbuf.len() <= limit => match r {
                    Ok(0) | Err(_) => return None,
                    Ok(_) => {}
                },
                ok = st.pubsub.recv_into(st.proto, &mut pushes) => {
                    if !ok || !crate::conn::write_pushes(sock, st, &mut pushes).await {
                        return None;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_signal_wakes_the_first_client_and_leaving_passes_it_on() {
        let b = Blocking::new();
        let first = b.register(vec![b"k".to_vec()], WaitFor::List);
        let second = b.register(vec![b"k".to_vec(), b"j".to_vec()], WaitFor::List);
        assert_eq!(b.blocked_clients(), 2);
        b.signal(b"k");
        // The first client has a wake-up stored; the second has none.
        first.notify.notified().await;
        let none = tokio::time::timeout(
            std::time::Duration::from_millis(20),
            second.notify.notified(),
        )
        .await;
        assert!(none.is_err());
        b.signal(b"k");
        drop(first);
        second.notify.notified().await;
        drop(second);
        assert_eq!(b.blocked_clients(), 0);
        assert!(lock(&b.queues).by_key.is_empty());
    }

    /// Whether `reg` has a wake-up stored (waits briefly for one).
    async fn woken(reg: &Registration<'_>) -> bool {
        tokio::time::timeout(Duration::from_millis(20), reg.notify.notified())
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn a_database_signal_wakes_the_keys_of_that_database() {
        let b = Blocking::new();
        let in1 = b.register(vec![b"\x01k".to_vec()], WaitFor::List);
        let in1z = b.register(vec![b"\x01j".to_vec()], WaitFor::ZSet);
        let in2 = b.register(vec![b"\x02k".to_vec()], WaitFor::List);
        b.signal_dbs(&[0, 1]);
        assert!(woken(&in1).await && woken(&in1z).await);
        assert!(!woken(&in2).await);
    }

    #[tokio::test]
    async fn a_typed_signal_wakes_the_first_client_of_its_type_only() {
        let b = Blocking::new();
        let list = b.register(vec![b"k".to_vec()], WaitFor::List);
        let zset = b.register(vec![b"k".to_vec()], WaitFor::ZSet);
        let zset2 = b.register(vec![b"k".to_vec()], WaitFor::ZSet);
        b.signal_kind(b"k", WaitFor::ZSet);
        assert!(woken(&zset).await);
        assert!(!woken(&list).await && !woken(&zset2).await);
        // An untyped signal wakes the first client of each type.
        b.signal(b"k");
        assert!(woken(&list).await && woken(&zset).await);
        assert!(!woken(&zset2).await);
        // A leaving client passes a wake-up to the new first of its type.
        drop(zset);
        assert!(woken(&zset2).await);
        assert!(!woken(&list).await);
    }
}
