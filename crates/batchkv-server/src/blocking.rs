//! Clients blocked in BLPOP, BRPOP, BLMOVE, BRPOPLPUSH and BLMPOP.
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
//! BLMOVE's destination, RENAME's and COPY's destination.
//!
//! # Invariants
//! 1. Each stored key has a FIFO queue of the clients waiting on it; a
//!    signal wakes the first of them only.
//! 2. A client that leaves the queues — served, timed out, disconnected —
//!    wakes the new first client of every queue it was in, so a wake-up it
//!    consumed, or one that reached it too late, is passed on (at worst
//!    one spurious retry). A woken client that finds its lists empty
//!    (another client popped first) keeps its place.
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

use bytes::{Bytes, BytesMut};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::sync::{watch, Notify};
use tokio::time::Instant;

use crate::commands::{self, ConnState};
use crate::resp::Reply;
use crate::shared::Shared;

/// The queues of blocked clients, by stored key.
pub struct Blocking {
    /// Registered clients; [`Blocking::signal`] takes no lock while 0.
    waiting: AtomicUsize,
    queues: Mutex<Queues>,
}

#[derive(Default)]
struct Queues {
    next_id: u64,
    by_key: HashMap<Vec<u8>, VecDeque<(u64, Arc<Notify>)>>,
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

    /// Wakes the first client waiting on stored key `key`, if any. Call
    /// after committing a write that may have made the list at `key`
    /// non-empty.
    pub fn signal(&self, key: &[u8]) {
        // Pairs with the fence in `register` (invariant 3).
        fence(Ordering::SeqCst);
        if self.waiting.load(Ordering::Relaxed) == 0 {
            return;
        }
        let q = lock(&self.queues);
        if let Some((_, n)) = q.by_key.get(key).and_then(VecDeque::front) {
            n.notify_one();
        }
    }

    /// Queues a client on stored keys `keys` (duplicates allowed) until
    /// the returned registration is dropped.
    fn register(&self, mut keys: Vec<Vec<u8>>) -> Registration<'_> {
        keys.sort_unstable();
        keys.dedup();
        let notify = Arc::new(Notify::new());
        let id = {
            let mut q = lock(&self.queues);
            q.next_id += 1;
            let id = q.next_id;
            for k in &keys {
                q.by_key
                    .entry(k.clone())
                    .or_default()
                    .push_back((id, notify.clone()));
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
            keys,
            notify,
        }
    }
}

/// A client's place in the queues of its keys.
struct Registration<'a> {
    blocking: &'a Blocking,
    id: u64,
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
            d.retain(|(id, _)| *id != self.id);
            match d.front() {
                // Invariant 2: pass a possibly consumed wake-up on.
                Some((_, n)) => n.notify_one(),
                None => {
                    q.by_key.remove(k);
                }
            }
        }
        self.blocking.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Sleeps until `deadline`, forever if `None`.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
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
/// limit; they run after the reply.
pub async fn wait(
    shared: &Shared,
    st: &mut ConnState,
    args: &[Bytes],
    sock: &mut TcpStream,
    rbuf: &mut BytesMut,
    stop: &mut watch::Receiver<bool>,
) -> Option<Reply> {
    let handler = commands::lookup(&args[0])?.handler;
    let Some((keys, timeout)) = commands::lists::block_request(st.db, args) else {
        // Not a blocking command after all: answer as it does.
        return Some(handler(shared, st, &args[1..]));
    };
    let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
    let reg = shared.blocking.register(keys);
    let limit = shared.settings.client_query_buffer_limit();
    loop {
        let reply = handler(shared, st, &args[1..]);
        if !matches!(reply, Reply::Nil | Reply::NilArray) {
            return Some(reply);
        }
        loop {
            if *stop.borrow() {
                return None;
            }
            tokio::select! {
                _ = reg.notify.notified() => break,
                _ = until(deadline) => return Some(Reply::NilArray),
                _ = stop.changed() => return None,
                r = sock.read_buf(rbuf), if rbuf.len() <= limit => match r {
                    Ok(0) | Err(_) => return None,
                    Ok(_) => {}
                },
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
        let first = b.register(vec![b"k".to_vec()]);
        let second = b.register(vec![b"k".to_vec(), b"j".to_vec()]);
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
}
