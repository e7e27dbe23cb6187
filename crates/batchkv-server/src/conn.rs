//! One client connection: read, parse every complete request in the
//! buffer (a pipeline), execute the requests in order, write the replies.
//!
//! Runs of consecutive GET/MGET and collection point reads (HGET, HMGET,
//! SISMEMBER, SMISMEMBER, ZSCORE, ZMSCORE) in a pipeline are executed
//! together: with batching on, as one job of the [`Batcher`](crate::batcher)
//! (one `multi_get`, possibly shared with other connections); with
//! `--batch off`, one `get` per key.
//!
//! Pub/Sub messages queued for the connection (`pubsub.rs`) are written
//! while it waits for requests, and before each command runs.
//!
//! # Memory a client controls
//! - Replies: once more than [`OUTPUT_CHUNK`] bytes of replies are
//!   pending, they are written before the next command runs, and the
//!   connection waits until the socket has taken all of them
//!   (back-pressure: a client that does not read stops its own pipeline,
//!   and nothing more is read from it meanwhile). A batched run of reads
//!   is cut where its reply reaches that size (`batcher.rs`). So
//!   a connection holds at most [`OUTPUT_CHUNK`] bytes of replies plus one
//!   command's reply. `client-output-buffer-limit normal HARD SOFT
//!   SECONDS` (Redis's setting; `0 0 0` by default) closes a client whose
//!   pending output, not counting its first [`REPLY_STATIC_BYTES`] (Redis
//!   counts its reply list, not its 16 KiB buffer), reaches HARD bytes, or
//!   stays at SOFT bytes or more for longer than SECONDS; the replies not
//!   yet written are dropped, as in Redis.
//! - Requests: a connection's unfinished request is bounded by
//!   `client-query-buffer-limit`, and the unfinished requests of all
//!   connections together by `--max-pending-query-bytes`
//!   ([`Stats::pending_query_bytes`]): a connection whose read would take
//!   the total past it gets an error and is closed. (What a client blocked in
//!   BLPOP and friends sends meanwhile counts once it is unblocked.)
//! - Buffers grown past [`BUF_KEEP`] bytes for a large request or reply
//!   are given back once it is done, so an idle connection does not keep
//!   that memory.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::batcher::{Keys, ReplyLimits, Shape};
use crate::commands::{self, After, ConnState};
use crate::resp::{self, ProtocolError, Reply};
use crate::shared::{Shared, Stats};
use crate::workers::Placement;

/// Pending reply bytes past which replies are written before the next
/// command runs (Redis writes its replies in 16 KiB chunks; a larger chunk
/// keeps the number of writes of a pipeline of small replies low).
pub const OUTPUT_CHUNK: usize = 64 * 1024;
/// Initial capacity of a connection's read and write buffers.
const BUF_INITIAL: usize = 16 * 1024;
/// Capacity a buffer may keep between requests; one that grew past it is
/// replaced by a new one of [`BUF_INITIAL`] once it is done with.
const BUF_KEEP: usize = 64 * 1024;
/// Pending output not counted against `client-output-buffer-limit`
/// (Redis's per-client reply buffer, `PROTO_REPLY_CHUNK_BYTES`).
const REPLY_STATIC_BYTES: usize = 16 * 1024;
/// Requests of a pipeline whose list a connection keeps allocated.
const PIPELINE_KEPT: usize = 1024;
/// Reply bytes per key a connection expects of its first batched run.
const FIRST_BYTES_PER_KEY: usize = 128;
/// The least reply bytes per key a connection expects (a nil is 5).
const MIN_BYTES_PER_KEY: usize = 5;
/// Entries a batched run's keys have room for before they grow (32 bytes
/// each): one allocation per run rather than one per doubling.
const BATCH_KEYS_HINT: usize = 24;

/// Serves one connection until it closes, QUIT, a protocol error, a
/// limit, or server shutdown: here, or with a `placement` (connections
/// spread over threads) on its thread's runtime
/// ([`serve_on_its_thread`]).
pub async fn serve_conn(
    shared: Arc<Shared>,
    mut sock: TcpStream,
    stop: watch::Receiver<bool>,
    placement: Option<Placement>,
) {
    let n = shared.clients.fetch_add(1, Ordering::Relaxed) + 1;
    let count = ClientCount(&shared);
    if n > shared.settings.maxclients() {
        shared
            .stats
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
        let _ = sock
            .write_all(b"-ERR max number of clients reached\r\n")
            .await;
        return;
    }
    let id = shared.next_client_id();
    let client = Arc::new(crate::clients::ClientHandle::new(
        id,
        sock.peer_addr()
            .map_or_else(|_| "?:0".into(), |a| a.to_string()),
        sock.local_addr()
            .map_or_else(|_| "?:0".into(), |a| a.to_string()),
        std::os::fd::AsRawFd::as_raw_fd(&sock).into(),
    ));
    let registered = shared.clients_reg.register(client.clone());
    let st = ConnState {
        id,
        db: 0,
        proto: 2,
        authenticated: !shared.settings.auth_required(),
        name: None,
        tx: Default::default(),
        pubsub: Default::default(),
        client,
        block_args: None,
        reply: Default::default(),
        monitor: None,
    };
    let mut conn = Conn {
        pending_query: PendingQuery {
            stats: shared.stats.clone(),
            mine: 0,
        },
        shared: shared.clone(),
        sock,
        stop,
        st,
        rbuf: BytesMut::with_capacity(BUF_INITIAL),
        out: BytesMut::with_capacity(BUF_INITIAL),
        over_soft_since: None,
        bytes_per_key: FIRST_BYTES_PER_KEY,
        batched_slots: Vec::new(),
        placement,
    };
    let conn = if conn.placement.is_some() {
        serve_on_its_thread(conn).await
    } else {
        conn.serve().await;
        Some(conn)
    };
    // Unregistered and uncounted before the socket closes: a client that
    // sees the close finds the server no longer counting it.
    drop(registered);
    drop(count);
    drop(conn);
}

/// Serves `conn` as a task of its placement's thread (the pinned and
/// adaptive schedules, `workers.rs`) while this task, on the accept
/// loop's runtime, waits for it: to move it to the thread it asks for
/// (its socket leaves one runtime's reactor for the other's), or to get it
/// back when it is done (`None` if its socket could not move or its task
/// ended without it: it is closed already). Aborting this task aborts the
/// connection's.
async fn serve_on_its_thread(mut conn: Conn) -> Option<Conn> {
    /// Aborts the connection's task if this one is aborted (shutdown).
    struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);
    impl<T> Drop for AbortOnDrop<T> {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    loop {
        let (sock, bare) = conn.swap_sock(());
        let sock = sock.into_std().ok()?;
        let (_, moving) = bare.swap_sock(sock);
        let handle = moving.placement.as_ref().map(|p| p.handle().clone())?;
        let mut task = AbortOnDrop(handle.spawn(async move {
            let (sock, bare) = moving.swap_sock(());
            let sock = TcpStream::from_std(sock).ok()?;
            let (_, mut conn) = bare.swap_sock(sock);
            let served = conn.serve().await;
            Some((conn, served))
        }));
        match (&mut task.0).await {
            Ok(Some((c, Served::Moved(to)))) => {
                conn = c;
                (conn.shared.stats.connection_moves).fetch_add(1, Ordering::Relaxed);
                if let Some(p) = conn.placement.as_mut() {
                    p.moved_to(to);
                }
            }
            Ok(Some((c, Served::Closed))) => return Some(c),
            Ok(None) | Err(_) => return None,
        }
    }
}

/// How [`Conn::serve`] ended.
enum Served {
    /// The connection is done: close it.
    Closed,
    /// Between requests, it should move to this thread (adaptive schedule).
    Moved(usize),
}

/// Writes the Pub/Sub messages `recv_into` put in `out`; false if the
/// connection must close: the write failed, or the subscriber's queue
/// overflowed while the client was not reading (`pubsub.rs`).
pub(crate) async fn write_pushes(sock: &mut TcpStream, st: &ConnState, out: &mut BytesMut) -> bool {
    let ok = tokio::select! {
        r = sock.write_all(out) => r.is_ok(),
        () = st.pubsub.overflowed() => false,
    };
    out.clear();
    ok
}

struct ClientCount<'a>(&'a Shared);

impl Drop for ClientCount<'_> {
    fn drop(&mut self) {
        self.0.clients.fetch_sub(1, Ordering::Relaxed);
    }
}

/// This connection's share of [`Stats::pending_query_bytes`], given back
/// when the connection ends.
struct PendingQuery {
    stats: Arc<Stats>,
    mine: usize,
}

impl PendingQuery {
    /// Sets this connection's share to `held` bytes, unless that grows it
    /// and would take the total of all connections past `cap`: then the
    /// growth is not counted, the share is given back (the connection is
    /// closing), and the total it would have reached is returned. Checked
    /// and added in one atomic step, so of connections growing at once
    /// only those whose growth does not fit are refused.
    fn update(&mut self, held: usize, cap: usize) -> Result<(), usize> {
        let total = &self.stats.pending_query_bytes;
        if held <= self.mine {
            // Shrinking (or, usually, nothing unfinished before or after:
            // no write to the shared counter).
            if held < self.mine {
                total.fetch_sub(self.mine - held, Ordering::Relaxed);
                self.mine = held;
            }
            return Ok(());
        }
        let add = held - self.mine;
        let fits = |t: usize| t.checked_add(add).filter(|&n| n <= cap);
        match total.fetch_update(Ordering::Relaxed, Ordering::Relaxed, fits) {
            Ok(_) => {
                self.mine = held;
                Ok(())
            }
            Err(t) => {
                total.fetch_sub(self.mine, Ordering::Relaxed);
                self.mine = 0;
                Err(t.saturating_add(add))
            }
        }
    }
}

impl Drop for PendingQuery {
    fn drop(&mut self) {
        self.stats
            .pending_query_bytes
            .fetch_sub(self.mine, Ordering::Relaxed);
    }
}

/// Sleeps until `deadline`, forever if `None`.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// A connection being served (`S`: its socket; another type while it
/// moves between threads, [`Conn::swap_sock`]).
struct Conn<S = TcpStream> {
    shared: Arc<Shared>,
    sock: S,
    stop: watch::Receiver<bool>,
    st: ConnState,
    /// Received bytes not yet parsed into requests: at most an unfinished
    /// request between pipelines.
    rbuf: BytesMut,
    /// Replies not yet written.
    out: BytesMut,
    /// Since when the pending output has been at the soft limit or over
    /// (`None`: under it).
    over_soft_since: Option<Instant>,
    /// Reply bytes per key of the last batched run: how many keys the
    /// next run may take to stay near [`OUTPUT_CHUNK`].
    bytes_per_key: usize,
    /// The statistics slots of the batched run being answered (kept
    /// allocated between runs).
    batched_slots: Vec<usize>,
    pending_query: PendingQuery,
    /// Its thread under the pinned and adaptive schedules (`None`: it
    /// runs where the accept loop spawned it).
    placement: Option<Placement>,
}

impl<S> Conn<S> {
    /// This connection with socket `sock` in place of its own, which is
    /// returned.
    fn swap_sock<T>(self, sock: T) -> (S, Conn<T>) {
        let Conn {
            shared,
            sock: old,
            stop,
            st,
            rbuf,
            out,
            over_soft_since,
            bytes_per_key,
            batched_slots,
            pending_query,
            placement,
        } = self;
        let conn = Conn {
            shared,
            sock,
            stop,
            st,
            rbuf,
            out,
            over_soft_since,
            bytes_per_key,
            batched_slots,
            pending_query,
            placement,
        };
        (old, conn)
    }
}

impl Conn {
    /// The request loop: parse, execute, write, read.
    async fn serve(&mut self) -> Served {
        let mut parser = resp::RequestParser::default();
        // The pipeline being run; its allocation is kept between reads.
        let mut reqs: Vec<Vec<Bytes>> = Vec::new();
        loop {
            let mut proto_err = None;
            let before = self.rbuf.len();
            loop {
                let max_bulk = self.shared.settings.proto_max_bulk_len();
                match parser.parse(&mut self.rbuf, max_bulk) {
                    Ok(Some(args)) => {
                        if !args.is_empty() {
                            reqs.push(args);
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        proto_err = Some(e);
                        break;
                    }
                }
            }
            let consumed = before - self.rbuf.len();
            if proto_err.is_none() {
                proto_err = self.check_query_limits();
            }
            let Some(mut after) = self.run_pipeline(&mut reqs).await else {
                return Served::Closed;
            };
            let blocked = after == After::Block;
            while after == After::Block {
                // `reqs[0]` is the blocked command, the rest of the
                // pipeline follows it; the replies before it go out first.
                if !self.flush().await {
                    return Served::Closed;
                }
                let client = self.st.client.clone();
                let waited = crate::blocking::wait(
                    &self.shared,
                    &mut self.st,
                    &reqs[0],
                    &mut self.sock,
                    &mut self.rbuf,
                    &mut self.stop,
                );
                let reply = tokio::select! {
                    r = waited => r,
                    _ = client.killed() => None,
                };
                let Some(reply) = reply else {
                    return Served::Closed;
                };
                if self.st.reply.after_command(|| false) {
                    reply.encode(self.st.proto, &mut self.out);
                }
                reqs.remove(0);
                after = match self.run_pipeline(&mut reqs).await {
                    Some(a) => a,
                    None => return Served::Closed,
                };
            }
            // The requests' bytes are no longer referenced.
            reqs.clear();
            if reqs.capacity() > PIPELINE_KEPT {
                reqs = Vec::new();
            }
            if let Some(e) = &proto_err {
                Reply::Error(format!("ERR {}", e.0)).encode(self.st.proto, &mut self.out);
            }
            if !self.flush().await {
                return Served::Closed;
            }
            self.release_read_buffer(consumed);
            match after {
                After::Continue if proto_err.is_none() => {}
                After::Shutdown => {
                    self.shared.request_shutdown();
                    return Served::Closed;
                }
                _ => return Served::Closed,
            }
            if *self.stop.borrow() {
                return Served::Closed;
            }
            if blocked {
                // Requests may have arrived while blocked: parse them first.
                continue;
            }
            // Between requests, nothing pending: the connection can move.
            if let Some(to) = self.placement.as_mut().and_then(Placement::check) {
                return Served::Moved(to);
            }
            let pushed = tokio::select! {
                r = self.sock.read_buf(&mut self.rbuf) => match r {
                    Ok(0) | Err(_) => return Served::Closed,
                    Ok(_) => false,
                },
                ok = self.st.pubsub.recv_into(self.st.proto, &mut self.out) => {
                    if !ok {
                        return Served::Closed;
                    }
                    true
                }
                line = monitor_line(&mut self.st.monitor) => {
                    let (Some(line), Some(m)) = (line, &mut self.st.monitor) else {
                        // Dropped for falling behind (`monitor.rs`).
                        return Served::Closed;
                    };
                    self.out.extend_from_slice(&line);
                    m.drain(&mut self.out);
                    true
                }
                // CLIENT KILL, idle past `timeout` (`clients.rs`), or the
                // server stopping.
                _ = self.st.client.interrupted(&self.stop) => return Served::Closed,
            };
            if pushed && !self.flush().await {
                return Served::Closed;
            }
        }
    }

    /// The error closing the connection if its unfinished request is over
    /// `client-query-buffer-limit`, or if it grew and took the unfinished
    /// requests of all connections past `--max-pending-query-bytes`.
    fn check_query_limits(&mut self) -> Option<ProtocolError> {
        // What is left in the buffer is one incomplete request.
        let held = self.rbuf.len();
        let limit = self.shared.settings.client_query_buffer_limit();
        if held > limit {
            return Some(ProtocolError::query_buffer_limit(limit));
        }
        let cap = self.shared.cfg.max_pending_query_bytes;
        let total = self.pending_query.update(held, cap).err()?;
        log::warn!(
            "batchkv serve: closing client id={} addr={}: unfinished requests of all clients \
             would reach {total} bytes (--max-pending-query-bytes {cap})",
            self.st.id,
            self.st.client.addr
        );
        Some(ProtocolError(format!(
            "Protocol error: unfinished requests of all clients exceed \
             max-pending-query-bytes ({cap} bytes)"
        )))
    }

    /// Executes a pipeline in order, appending the replies to the output
    /// and writing it whenever it passes [`OUTPUT_CHUNK`]; stops at QUIT or
    /// SHUTDOWN, and at a command that blocks, which it leaves first in
    /// `reqs` with the requests after it (returning [`After::Block`]).
    /// `None`: the connection must close now, its pending replies unsent
    /// (a write failed, or the client went over its output limits).
    async fn run_pipeline(&mut self, reqs: &mut Vec<Vec<Bytes>>) -> Option<After> {
        let mut i = 0;
        while i < reqs.len() {
            if self.out.len() >= OUTPUT_CHUNK && !self.flush().await {
                return None;
            }
            if let Some(done) = self.run_batched(&reqs[i..]).await? {
                i += done;
                continue;
            }
            if let Some(done) = self.run_write_group(&reqs[i..]).await? {
                if !self.output_ok(self.out.len()) {
                    return None;
                }
                i += done;
                continue;
            }
            // Messages queued before this command (pubsub.rs) precede its
            // reply.
            self.st.pubsub.drain(self.st.proto, &mut self.out);
            let (reply, after) = commands::execute(&self.shared, &mut self.st, &reqs[i]);
            if after == After::Block {
                reqs.drain(..i);
                return Some(after);
            }
            let name = &reqs[i][0];
            let send = self.st.reply.after_command(|| confirms_subscriptions(name));
            if send && after != After::Shutdown {
                // Like Redis, a successful SHUTDOWN closes without a reply.
                reply.encode(self.st.proto, &mut self.out);
            }
            drop(reply);
            if !self.output_ok(self.out.len()) {
                return None;
            }
            if after != After::Continue {
                return Some(after);
            }
            i += 1;
        }
        Some(After::Continue)
    }

    /// Runs the batchable reads (see [`batchable`]) at the start of `reqs`
    /// as one batcher job, as many as are expected to fit [`OUTPUT_CHUNK`]
    /// (at least one; a command counts its [`Shape::keys`] entries: a
    /// collection read's key and fields); returns how many were answered — `Some(None)` if `reqs` does
    /// not start with one (or batching is off), `None` if the connection
    /// must close (output limit).
    async fn run_batched(&mut self, reqs: &[Vec<Bytes>]) -> Option<Option<usize>> {
        let Some(batcher) = &self.shared.batcher else {
            return Some(None);
        };
        let budget = (OUTPUT_CHUNK / self.bytes_per_key).max(1);
        // Room for a pipeline of short reads (10 GETs or LRANGEs, a HMGET
        // of 20 fields) without growing the buffers command by command.
        let mut keys = Keys::with_capacity(BATCH_KEYS_HINT, 32 * BATCH_KEYS_HINT);
        let mut shapes = Vec::with_capacity(16);
        let mut slots = std::mem::take(&mut self.batched_slots);
        slots.clear();
        let mut n = 0;
        for args in reqs {
            let Some((slot, shape)) = batchable(&self.st, args) else {
                break;
            };
            if !shapes.is_empty() && n + shape.keys() > budget {
                break;
            }
            keys.push_args(self.st.db, shape, &args[1..]);
            n += shape.keys();
            shapes.push(shape);
            slots.push(slot);
        }
        if shapes.is_empty() {
            return Some(None);
        }
        let began = std::time::Instant::now();
        // Combining is worth a yield only if other clients exist.
        let combine = self.shared.clients.load(Ordering::Relaxed) > 1;
        let limits = self.reply_limits();
        let start = self.out.len();
        let helper = self
            .placement
            .as_ref()
            .and_then(|p| p.helper(batcher.expected_ns(n)));
        let answered = match helper {
            Some(handle) => {
                // An idle thread runs the job while this one serves its
                // other connections. The output buffer goes along (nothing
                // else writes to it while the connection waits) and comes
                // back with the replies appended.
                (self.shared.stats.helped_reads).fetch_add(1, Ordering::Relaxed);
                let (batcher, proto) = (batcher.clone(), self.st.proto);
                let mut out = std::mem::take(&mut self.out);
                let task = handle.spawn(async move {
                    let answered = batcher
                        .submit_reads(keys, shapes, proto, combine, limits, &mut out)
                        .await;
                    (answered, out)
                });
                // Its runtime ended (shutdown): so does the connection.
                let answered;
                (answered, self.out) = task.await.ok()?;
                answered
            }
            None => {
                batcher
                    .submit_reads(keys, shapes, self.st.proto, combine, limits, &mut self.out)
                    .await
            }
        };
        if answered.aborted || answered.commands == 0 {
            // Over the hard limit mid-reply (or, never expected, nothing
            // answered): what was encoded must not be sent.
            self.log_output_limit(self.out.len());
            return None;
        }
        let done = answered.commands;
        commands::record_grouped(&self.shared, &self.st, &reqs[..done], &slots, began, |_| {
            None
        });
        self.batched_slots = slots;
        self.bytes_per_key = ((self.out.len() - start) / answered.keys).max(MIN_BYTES_PER_KEY);
        if !self.output_ok(self.out.len()) {
            return None;
        }
        Some(Some(done))
    }

    /// Runs the write commands at the start of `reqs` as one engine write
    /// (`write_group.rs`; blind string writes possibly combined with other
    /// connections'); how many were answered — `Some(None)` if `reqs` does
    /// not start with a group (or batching is off), `None` if the
    /// connection must close (its write was never executed).
    async fn run_write_group(&mut self, reqs: &[Vec<Bytes>]) -> Option<Option<usize>> {
        use crate::write_group::{self, Commands, Group, Strings, Updates};
        let (Some(writes), Some(updates)) = (&self.shared.writes, &self.shared.updates) else {
            return Some(None);
        };
        // The string paths run no command handler, so they publish no
        // keyspace notifications (`notify.rs`).
        let string_paths = self.shared.settings.notify_keyspace_events() == 0;
        let Some(group) = write_group::find(&self.st, reqs, string_paths) else {
            return Some(None);
        };
        self.st.pubsub.drain(self.st.proto, &mut self.out);
        match group {
            Group::Strings(slots) => {
                let n = slots.len();
                let began = std::time::Instant::now();
                let run = Strings::new(&self.st, &reqs[..n]);
                // Combining is worth a yield only if other clients exist.
                let combine = self.shared.clients.load(Ordering::Relaxed) > 1;
                let written = writes.submit(run, combine, &mut self.out).await;
                if written.commands != n {
                    // Never expected: its leader vanished without a reply.
                    return None;
                }
                let error = written.error.as_deref();
                let reqs = &reqs[..n];
                commands::record_grouped(&self.shared, &self.st, reqs, &slots, began, |_| error);
                Some(Some(n))
            }
            Group::StringUpdates(slots) => {
                let n = slots.len();
                let combine = self.shared.clients.load(Ordering::Relaxed) > 1;
                if n == 1 && !combine {
                    // Nothing to combine with: a lone command is cheaper on
                    // the normal path (a point read, no batch to build).
                    return Some(None);
                }
                let began = std::time::Instant::now();
                let run = Updates::new(&self.st, &reqs[..n]);
                let updated = updates.submit(run, combine, &mut self.out).await;
                if updated.commands != n {
                    // Never expected: its leader vanished without a reply.
                    return None;
                }
                let error_of = |i: usize| {
                    let at = updated.errors.binary_search_by_key(&i, |(at, _)| *at);
                    at.ok().map(|at| updated.errors[at].1.as_str())
                };
                let reqs = &reqs[..n];
                commands::record_grouped(&self.shared, &self.st, reqs, &slots, began, error_of);
                Some(Some(n))
            }
            Group::Commands(specs) => {
                let cmds: Vec<_> = specs
                    .into_iter()
                    .zip(reqs)
                    .map(|(spec, args)| (spec, args.as_slice()))
                    .collect();
                // A subscriber's runs are not combined: its messages stay
                // in order with its replies.
                let combine = self.shared.clients.load(Ordering::Relaxed) > 1
                    && !self.st.pubsub.is_subscribed();
                let runs = self.shared.command_runs.as_ref().filter(|_| combine);
                if cmds.len() == 1 && !runs.is_some_and(|r| r.takes_single()) {
                    // Not to be combined, one command is cheaper on the
                    // normal path.
                    return Some(None);
                }
                if let Some(runs) = runs {
                    let run = Commands::new(&self.st, &cmds);
                    let answered = runs.submit(run, combine, &mut self.out).await;
                    if answered != cmds.len() {
                        // Never expected: its leader vanished without a
                        // reply.
                        return None;
                    }
                    commands::after_group(&self.st, &cmds);
                    return Some(Some(cmds.len()));
                }
                let replies = commands::run_group(&self.shared, &mut self.st, &cmds);
                for r in &replies {
                    r.encode(self.st.proto, &mut self.out);
                }
                Some(Some(replies.len()))
            }
        }
    }

    /// How much of a batcher job's reply to produce, given the output
    /// already pending: up to [`OUTPUT_CHUNK`] in all, and nothing past
    /// the output hard limit.
    fn reply_limits(&self) -> ReplyLimits {
        let pending = self.out.len();
        let hard = self.shared.settings.output_limits().hard;
        let abort_at = match usize::try_from(hard) {
            Ok(0) | Err(_) => usize::MAX,
            Ok(h) => h.saturating_add(REPLY_STATIC_BYTES).saturating_sub(pending),
        };
        ReplyLimits {
            split_at: OUTPUT_CHUNK.saturating_sub(pending).max(1),
            abort_at,
        }
    }

    /// Whether `pending` bytes of output are within the client's output
    /// buffer limits (the soft limit's clock starts here when it is first
    /// reached); logs why not. A subscriber is not a normal client: its
    /// messages are bounded by its queue (`pubsub.rs`, Redis's `pubsub`
    /// class hard limit).
    fn output_ok(&mut self, pending: usize) -> bool {
        if self.st.pubsub.is_subscribed() {
            self.over_soft_since = None;
            return true;
        }
        let limits = self.shared.settings.output_limits();
        let used = pending.saturating_sub(REPLY_STATIC_BYTES) as u64;
        let over_hard = limits.hard > 0 && used >= limits.hard;
        let over_soft = limits.soft > 0 && used >= limits.soft;
        if !over_soft {
            self.over_soft_since = None;
        }
        let soft_expired = over_soft && {
            let since = *self.over_soft_since.get_or_insert_with(Instant::now);
            since.elapsed() > Duration::from_secs(limits.soft_seconds)
        };
        if over_hard || soft_expired {
            self.log_output_limit(pending);
            return false;
        }
        true
    }

    fn log_output_limit(&self, pending: usize) {
        log::warn!(
            "batchkv serve: closing client id={} addr={} for overcoming of output buffer \
             limits ({pending} bytes pending)",
            self.st.id,
            self.st.client.addr
        );
    }

    /// When the soft limit, reached at `over_soft_since`, expires.
    fn soft_deadline(&self) -> Option<Instant> {
        let since = self.over_soft_since?;
        let secs = self.shared.settings.output_limits().soft_seconds;
        since.checked_add(Duration::from_secs(secs) + Duration::from_millis(1))
    }

    /// Writes all pending output, waiting until the socket has taken it,
    /// then gives back a buffer grown past [`BUF_KEEP`]. False: the
    /// connection must close (the write failed, the client was killed, its
    /// Pub/Sub queue overflowed, or it stayed over its output limits).
    async fn flush(&mut self) -> bool {
        if self.out.is_empty() {
            return true;
        }
        // Usually the socket takes everything at once.
        let mut written = match self.sock.try_write(&self.out) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
            Err(_) => return false,
        };
        let mut ok = true;
        while written < self.out.len() {
            if !self.output_ok(self.out.len() - written) {
                ok = false;
                break;
            }
            let deadline = self.soft_deadline();
            let step = tokio::select! {
                r = self.sock.write(&self.out[written..]) => match r {
                    Ok(n) if n > 0 => Some(n),
                    _ => None,
                },
                _ = self.st.client.killed() => None,
                () = self.st.pubsub.overflowed() => None,
                // Check the soft limit's time again.
                () = until(deadline) => Some(0),
            };
            match step {
                Some(n) => written += n,
                None => {
                    ok = false;
                    break;
                }
            }
        }
        self.out.clear();
        self.over_soft_since = None;
        if self.out.capacity() > BUF_KEEP {
            self.out = BytesMut::with_capacity(BUF_INITIAL);
        }
        ok
    }

    /// Replaces a read buffer that grew past [`BUF_KEEP`], or whose
    /// allocation held requests of more than that (`consumed` bytes were
    /// parsed out of it this round), keeping the unfinished request it
    /// holds if that is small; the requests themselves must be dropped.
    fn release_read_buffer(&mut self, consumed: usize) {
        if (consumed > BUF_KEEP || self.rbuf.capacity() > BUF_KEEP) && self.rbuf.len() <= BUF_KEEP {
            let mut fresh = BytesMut::with_capacity(BUF_INITIAL.max(self.rbuf.len()));
            fresh.extend_from_slice(&self.rbuf);
            self.rbuf = fresh;
        }
    }
}

/// The statistics slot and shape of `args` if it is a read that can join
/// a batched run (GET, MGET and the collection point reads: the command
/// table's [`batch`](commands::CommandSpec::batch) entries) with the arity
/// Redis requires; never inside MULTI (there it is queued), never in RESP2
/// with subscriptions (there it is refused).
/// The next MONITOR line for a monitoring connection; never completes for
/// another.
async fn monitor_line(sub: &mut Option<crate::monitor::Subscription>) -> Option<Bytes> {
    match sub {
        Some(s) => s.recv().await,
        None => std::future::pending().await,
    }
}

/// Whether a command's reply is Pub/Sub's subscription confirmations,
/// which Redis pushes whatever CLIENT REPLY says.
fn confirms_subscriptions(name: &[u8]) -> bool {
    [
        &b"subscribe"[..],
        b"unsubscribe",
        b"psubscribe",
        b"punsubscribe",
    ]
    .iter()
    .any(|n| name.eq_ignore_ascii_case(n))
}

fn batchable(st: &ConnState, args: &[Bytes]) -> Option<(usize, Shape)> {
    if !st.groups_commands() {
        return None;
    }
    commands::batch_shape(args)
}
