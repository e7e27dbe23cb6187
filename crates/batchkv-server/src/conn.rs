//! One client connection: read, parse every complete request in the
//! buffer (a pipeline), execute, write all replies with one write.
//!
//! Runs of consecutive GET/MGET and collection point reads (HGET, HMGET,
//! SISMEMBER, SMISMEMBER, ZSCORE, ZMSCORE) in a pipeline are executed
//! together: with batching on, as one job of the [`Batcher`](crate::batcher)
//! (one `multi_get`, possibly shared with other connections); with
//! `--batch off`, one `get` per key.
//!
//! Pub/Sub messages queued for the connection (`pubsub.rs`) are written
//! while it waits for requests, and before each command runs.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::batcher::{Keys, Shape};
use crate::commands::{self, After, ConnState};
use crate::resp::{self, Reply};
use crate::shared::Shared;

/// Serves one connection until it closes, QUIT, a protocol error, or
/// server shutdown.
pub async fn serve_conn(shared: Arc<Shared>, mut sock: TcpStream, mut stop: watch::Receiver<bool>) {
    let n = shared.clients.fetch_add(1, Ordering::Relaxed) + 1;
    let _count = ClientCount(&shared);
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
    let _registered = shared.clients_reg.register(client.clone());
    let mut st = ConnState {
        id,
        db: 0,
        proto: 2,
        authenticated: !shared.settings.auth_required(),
        name: None,
        tx: Default::default(),
        pubsub: Default::default(),
        client,
    };
    let mut rbuf = BytesMut::with_capacity(16 * 1024);
    let mut wbuf = BytesMut::with_capacity(16 * 1024);
    let mut parser = resp::RequestParser::default();
    loop {
        let mut reqs: Vec<Vec<Bytes>> = Vec::new();
        let mut proto_err = None;
        loop {
            match parser.parse(&mut rbuf, shared.settings.proto_max_bulk_len()) {
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
        let limit = shared.settings.client_query_buffer_limit();
        if proto_err.is_none() && rbuf.len() > limit {
            // What is left is an incomplete request, already too large.
            proto_err = Some(resp::ProtocolError::query_buffer_limit(limit));
        }
        let mut after = run_pipeline(&shared, &mut st, &mut reqs, &mut wbuf).await;
        let blocked = after == After::Block;
        while after == After::Block {
            // `reqs[0]` is the blocked command, the rest of the pipeline
            // follows it; the replies before it go out first.
            if !wbuf.is_empty() {
                if sock.write_all(&wbuf).await.is_err() {
                    return;
                }
                wbuf.clear();
            }
            let client = st.client.clone();
            let waited =
                crate::blocking::wait(&shared, &mut st, &reqs[0], &mut sock, &mut rbuf, &mut stop);
            let reply = tokio::select! {
                r = waited => r,
                _ = client.killed() => None,
            };
            let Some(reply) = reply else {
                return;
            };
            reply.encode(st.proto, &mut wbuf);
            reqs.remove(0);
            after = run_pipeline(&shared, &mut st, &mut reqs, &mut wbuf).await;
        }
        if let Some(e) = &proto_err {
            Reply::Error(format!("ERR {}", e.0)).encode(st.proto, &mut wbuf);
        }
        if !wbuf.is_empty() {
            if sock.write_all(&wbuf).await.is_err() {
                return;
            }
            wbuf.clear();
        }
        match after {
            After::Continue if proto_err.is_none() => {}
            After::Shutdown => {
                shared.request_shutdown();
                return;
            }
            _ => return,
        }
        if *stop.borrow() {
            return;
        }
        if blocked {
            // Requests may have arrived while blocked: parse them first.
            continue;
        }
        tokio::select! {
            r = sock.read_buf(&mut rbuf) => match r {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            },
            _ = stop.changed() => return,
            ok = st.pubsub.recv_into(st.proto, &mut wbuf) => {
                if !ok || !write_pushes(&mut sock, &st, &mut wbuf).await {
                    return;
                }
            }
            // CLIENT KILL, or idle past `timeout` (`clients.rs`).
            _ = st.client.killed() => return,
        }
    }
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

/// Whether `args` is a GET, MGET or collection point read (HGET, HMGET,
/// SISMEMBER, SMISMEMBER, ZSCORE, ZMSCORE) that can join a batched run (never
/// inside MULTI: there it is queued; never in RESP2 with subscriptions:
/// there it is refused).
fn batchable(st: &ConnState, args: &[Bytes]) -> Option<Shape> {
    if !st.authenticated || st.tx.in_multi() || (st.proto == 2 && st.pubsub.is_subscribed()) {
        return None;
    }
    let name = &args[0];
    let is = |n: &[u8]| name.eq_ignore_ascii_case(n);
    // With the arity Redis requires (the normal path answers the error).
    let (single, many) = (args.len() == 3, args.len() >= 3);
    let n = args.len().saturating_sub(2);
    if is(b"get") && args.len() == 2 {
        Some(Shape::Get)
    } else if is(b"mget") && args.len() >= 2 {
        Some(Shape::Mget(args.len() - 1))
    } else if is(b"hget") && single {
        Some(Shape::HGet)
    } else if is(b"hmget") && many {
        Some(Shape::HMget(n))
    } else if is(b"sismember") && single {
        Some(Shape::SIsMember)
    } else if is(b"smismember") && many {
        Some(Shape::SMIsMember(n))
    } else if is(b"zscore") && single {
        Some(Shape::ZScore)
    } else if is(b"zmscore") && many {
        Some(Shape::ZMScore(n))
    } else {
        None
    }
}

/// Executes a pipeline in order, appending the replies to `out`; stops at
/// QUIT or SHUTDOWN, and at a command that blocks, which it leaves first in
/// `reqs` with the requests after it (returning [`After::Block`]).
async fn run_pipeline(
    shared: &Arc<Shared>,
    st: &mut ConnState,
    reqs: &mut Vec<Vec<Bytes>>,
    out: &mut BytesMut,
) -> After {
    let mut i = 0;
    while i < reqs.len() {
        if let Some(batcher) = &shared.batcher {
            // Gather the run of batchable reads starting here.
            let first = i;
            let mut keys = Keys::default();
            let mut shapes = Vec::new();
            while i < reqs.len() {
                let Some(shape) = batchable(st, &reqs[i]) else {
                    break;
                };
                keys.push_args(st.db, shape, &reqs[i][1..]);
                shapes.push(shape);
                i += 1;
            }
            if !shapes.is_empty() {
                let began = std::time::Instant::now();
                // Combining is worth a yield only if other clients exist.
                let combine = shared.clients.load(Ordering::Relaxed) > 1;
                batcher.submit(keys, shapes, st.proto, combine, out).await;
                commands::record_batched(shared, st, &reqs[first..i], began);
                continue;
            }
        }
        // Messages queued before this command (pubsub.rs) precede its reply.
        st.pubsub.drain(st.proto, out);
        let (reply, after) = commands::execute(shared, st, &reqs[i]);
        if after == After::Block {
            reqs.drain(..i);
            return after;
        }
        if after != After::Shutdown {
            // Like Redis, a successful SHUTDOWN closes without a reply.
            reply.encode(st.proto, out);
        }
        if after != After::Continue {
            return after;
        }
        i += 1;
    }
    After::Continue
}
