//! Pub/Sub: the [`Broker`] shared by all connections (channel and pattern
//! subscriptions → the subscribed connections' queues) and each
//! connection's side of it, its [`Session`]. Nothing is persisted (as in
//! Redis).
//!
//! # Delivery and order
//! PUBLISH runs under the broker's one lock: it queues the message for
//! every connection subscribed to the channel, then once per matching
//! pattern subscription (patterns in byte order), as Redis does. Because
//! every publish holds the lock while it queues, all subscribers see
//! messages in one global order; in particular each publisher's messages
//! arrive in the order it published them.
//!
//! A connection writes its queued messages while it waits for requests or
//! is blocked (`conn.rs`, `blocking.rs`), and before it runs each command,
//! so a message queued before a command (an UNSUBSCRIBE, say) is written
//! before the command's reply, as in Redis. The messages for a RESP3
//! connection publishing to its own subscriptions are not queued: PUBLISH
//! returns them ahead of its count, so they also land inside EXEC's reply
//! where Redis writes them.
//!
//! # Slow subscribers
//! A publisher never waits for a subscriber. Each connection's queue is
//! bounded by [`MAX_QUEUED`] messages and [`MAX_QUEUED_BYTES`] bytes of
//! channel, pattern and payload; a message that does not fit is dropped,
//! the subscriber is marked overflowed and its connection is closed
//! (Redis's `client-output-buffer-limit pubsub` hard limit, 32 MiB by
//! default). A connection's subscriptions are removed when it closes
//! ([`Session`]'s `Drop`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::{BufMut, Bytes, BytesMut};
use tokio::sync::{mpsc, Notify};

use crate::resp::{self, Reply};

/// Most messages queued for one connection.
pub const MAX_QUEUED: usize = 64 * 1024;
/// Most bytes (channel + pattern + payload) queued for one connection.
pub const MAX_QUEUED_BYTES: usize = 32 * 1024 * 1024;

/// What a subscription names: a channel or a glob pattern of channels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Channel = 0,
    Pattern = 1,
}

impl Kind {
    fn subscribed(self) -> &'static str {
        match self {
            Kind::Channel => "subscribe",
            Kind::Pattern => "psubscribe",
        }
    }

    fn unsubscribed(self) -> &'static str {
        match self {
            Kind::Channel => "unsubscribe",
            Kind::Pattern => "punsubscribe",
        }
    }
}

/// A published message on its way to one subscriber.
#[derive(Debug)]
pub struct Message {
    /// The matching pattern, for a pattern subscription (`pmessage`).
    pattern: Option<Bytes>,
    channel: Bytes,
    payload: Bytes,
}

impl Message {
    /// Bytes counted against [`MAX_QUEUED_BYTES`].
    fn size(&self) -> usize {
        self.pattern.as_ref().map_or(0, Bytes::len) + self.channel.len() + self.payload.len()
    }

    /// The message as a push reply (see [`Message::encode`]).
    pub fn to_reply(&self) -> Reply {
        let mut items = vec![Reply::bulk(Bytes::from_static(if self.pattern.is_some() {
            b"pmessage"
        } else {
            b"message"
        }))];
        items.extend(self.pattern.iter().cloned().map(Reply::Bulk));
        items.push(Reply::Bulk(self.channel.clone()));
        items.push(Reply::Bulk(self.payload.clone()));
        Reply::Push(items)
    }

    /// Appends the message as Redis writes it: `message channel payload`
    /// or `pmessage pattern channel payload`, a push (`>`) in RESP3 and an
    /// array in RESP2.
    pub fn encode(&self, proto: u8, out: &mut BytesMut) {
        let tag = if proto >= 3 { b'>' } else { b'*' };
        match &self.pattern {
            None => {
                out.put_slice(&[tag, b'3', b'\r', b'\n']);
                resp::encode_bulk(out, b"message");
            }
            Some(p) => {
                out.put_slice(&[tag, b'4', b'\r', b'\n']);
                resp::encode_bulk(out, b"pmessage");
                resp::encode_bulk(out, p);
            }
        }
        resp::encode_bulk(out, &self.channel);
        resp::encode_bulk(out, &self.payload);
    }
}

/// The broker's handle on one subscribed connection: its queue and its
/// overflow state.
struct Subscriber {
    tx: mpsc::Sender<Message>,
    /// Sum of [`Message::size`] over the queued messages.
    queued_bytes: AtomicUsize,
    /// Set once a message did not fit; the connection then closes.
    overflowed: AtomicBool,
    /// Wakes the connection when `overflowed` is set.
    overflow: Notify,
}

impl Subscriber {
    /// Queues `m` without waiting; if it does not fit, marks the
    /// subscriber overflowed instead.
    fn deliver(&self, m: Message) {
        if self.overflowed.load(Relaxed) {
            return;
        }
        let n = m.size();
        let fits = self.queued_bytes.fetch_add(n, Relaxed) + n <= MAX_QUEUED_BYTES;
        if !fits || self.tx.try_send(m).is_err() {
            self.queued_bytes.fetch_sub(n, Relaxed);
            self.overflowed.store(true, Relaxed);
            self.overflow.notify_one();
        }
    }
}

/// The subscribers of one channel or pattern, by connection id.
type Subs = HashMap<u64, Arc<Subscriber>>;

/// Every live subscription of the server. Shared by all connections
/// (`Shared::pubsub`).
#[derive(Default)]
pub struct Broker {
    /// Indexed by [`Kind`]: channel → subscribers, pattern → subscribers.
    /// Invariant: no entry has an empty [`Subs`].
    maps: Mutex<[BTreeMap<Bytes, Subs>; 2]>,
}

impl Broker {
    fn lock(&self) -> MutexGuard<'_, [BTreeMap<Bytes, Subs>; 2]> {
        // Every update leaves the maps valid, so poisoning is ignored.
        self.maps.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `payload` for every subscriber of `channel` and every
    /// matching pattern subscription, except that the messages for the
    /// publishing connection `publisher` itself are returned (they go
    /// before PUBLISH's reply, inside EXEC's array too, as in Redis).
    /// Returns how many were reached (counting subscribers whose queue
    /// overflowed, as Redis counts clients it then disconnects).
    pub fn publish(&self, publisher: u64, channel: &[u8], payload: &[u8]) -> (usize, Vec<Message>) {
        self.publish_to(publisher, channel, payload, true)
    }

    /// [`Broker::publish`] without delivering to any other connection:
    /// what PUBLISH answers inside EXEC, which delivers the message with
    /// [`Broker::publish`] once the transaction has committed (`tx.rs`).
    pub fn count(&self, publisher: u64, channel: &[u8], payload: &[u8]) -> (usize, Vec<Message>) {
        self.publish_to(publisher, channel, payload, false)
    }

    fn publish_to(
        &self,
        publisher: u64,
        channel: &[u8],
        payload: &[u8],
        deliver: bool,
    ) -> (usize, Vec<Message>) {
        let maps = self.lock();
        let mut own = Vec::new();
        if !maps[Kind::Channel as usize].contains_key(channel)
            && maps[Kind::Pattern as usize].is_empty()
        {
            return (0, own);
        }
        // Copied once, shared by every receiver's message: a slice of the
        // request would keep the publisher's whole read buffer alive.
        let channel = Bytes::copy_from_slice(channel);
        let payload = Bytes::copy_from_slice(payload);
        let mut n = 0;
        let mut send = |id: u64, sub: &Subscriber, pattern: Option<&Bytes>| {
            let m = Message {
                pattern: pattern.cloned(),
                channel: channel.clone(),
                payload: payload.clone(),
            };
            if id == publisher {
                own.push(m);
            } else if deliver {
                sub.deliver(m);
            }
            n += 1;
        };
        if let Some(subs) = maps[Kind::Channel as usize].get(&channel) {
            for (&id, sub) in subs {
                send(id, sub, None);
            }
        }
        for (pat, subs) in &maps[Kind::Pattern as usize] {
            if crate::keyspace::glob_match(pat, &channel) {
                for (&id, sub) in subs {
                    send(id, sub, Some(pat));
                }
            }
        }
        (n, own)
    }

    /// The channels with at least one subscriber that match `pattern`
    /// (all of them without one), in byte order.
    pub fn channels(&self, pattern: Option<&[u8]>) -> Vec<Bytes> {
        let maps = self.lock();
        maps[Kind::Channel as usize]
            .keys()
            .filter(|c| pattern.is_none_or(|p| crate::keyspace::glob_match(p, c)))
            .cloned()
            .collect()
    }

    /// How many connections are subscribed to `channel` (patterns not
    /// counted).
    pub fn numsub(&self, channel: &[u8]) -> usize {
        self.lock()[Kind::Channel as usize]
            .get(channel)
            .map_or(0, HashMap::len)
    }

    /// How many distinct patterns have subscribers (Redis 7's NUMPAT).
    pub fn numpat(&self) -> usize {
        self.lock()[Kind::Pattern as usize].len()
    }

    fn add(&self, kind: Kind, name: &Bytes, id: u64, sub: &Arc<Subscriber>) {
        self.lock()[kind as usize]
            .entry(name.clone())
            .or_default()
            .insert(id, sub.clone());
    }

    /// Removes connection `id`'s subscriptions of `kind` to `names`.
    fn remove<'a>(&self, kind: Kind, names: impl IntoIterator<Item = &'a Bytes>, id: u64) {
        let mut maps = self.lock();
        let map = &mut maps[kind as usize];
        for name in names {
            if let Some(subs) = map.get_mut(name) {
                subs.remove(&id);
                if subs.is_empty() {
                    map.remove(name);
                }
            }
        }
    }
}

/// A subscribed connection's link to the broker (made at its first
/// subscription, kept until it closes).
struct Link {
    broker: Arc<Broker>,
    id: u64,
    sub: Arc<Subscriber>,
    rx: mpsc::Receiver<Message>,
}

/// One connection's subscriptions and message queue (`ConnState::pubsub`).
#[derive(Default)]
pub struct Session {
    link: Option<Link>,
    /// Indexed by [`Kind`]: subscribed name → when it was subscribed (for
    /// unsubscribing from all in subscription order).
    names: [HashMap<Bytes, u64>; 2],
    next_seq: u64,
}

impl Session {
    /// Channels plus patterns this connection is subscribed to (the count
    /// in every confirmation).
    pub fn count(&self) -> usize {
        self.names[0].len() + self.names[1].len()
    }

    /// Whether the connection has any subscription (RESP2: the restricted
    /// "subscribed" context).
    pub fn is_subscribed(&self) -> bool {
        self.count() > 0
    }

    fn confirm(&self, what: &'static str, name: Option<&Bytes>) -> Reply {
        Reply::Push(vec![
            Reply::bulk(Bytes::from_static(what.as_bytes())),
            name.map_or(Reply::Nil, |n| Reply::Bulk(n.clone())),
            Reply::Int(self.count() as i64),
        ])
    }

    /// SUBSCRIBE / PSUBSCRIBE (connection `id`): one confirmation per name.
    pub fn subscribe(
        &mut self,
        broker: &Arc<Broker>,
        id: u64,
        kind: Kind,
        names: &[Bytes],
    ) -> Reply {
        let sub = self.link(broker, id);
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            if !self.names[kind as usize].contains_key(name) {
                // A copy: a slice of the request would keep the
                // connection's whole read buffer alive.
                let name = Bytes::copy_from_slice(name);
                self.next_seq += 1;
                self.names[kind as usize].insert(name.clone(), self.next_seq);
                broker.add(kind, &name, id, &sub);
            }
            out.push(self.confirm(kind.subscribed(), Some(name)));
        }
        Reply::Frames(out)
    }

    /// UNSUBSCRIBE / PUNSUBSCRIBE: one confirmation per name; with no
    /// names, one per subscription of `kind` in subscription order, or a
    /// single one with a nil name if there is none.
    pub fn unsubscribe(&mut self, kind: Kind, names: &[Bytes]) -> Reply {
        let names: Vec<Bytes> = if names.is_empty() {
            let mut all: Vec<(&Bytes, &u64)> = self.names[kind as usize].iter().collect();
            all.sort_unstable_by_key(|&(_, seq)| *seq);
            all.into_iter().map(|(n, _)| n.clone()).collect()
        } else {
            names.to_vec()
        };
        if names.is_empty() {
            return Reply::Frames(vec![self.confirm(kind.unsubscribed(), None)]);
        }
        let mut out = Vec::with_capacity(names.len());
        for name in &names {
            if self.names[kind as usize].remove(name).is_some() {
                if let Some(l) = &self.link {
                    l.broker.remove(kind, [name], l.id);
                }
            }
            out.push(self.confirm(kind.unsubscribed(), Some(name)));
        }
        Reply::Frames(out)
    }

    /// Removes every subscription without confirmations (RESET, close).
    /// Messages already queued are still delivered.
    pub fn clear(&mut self) {
        if let Some(l) = &self.link {
            l.broker.remove(Kind::Channel, self.names[0].keys(), l.id);
            l.broker.remove(Kind::Pattern, self.names[1].keys(), l.id);
        }
        self.names = Default::default();
    }

    /// This connection's subscriber handle, linking it to `broker` first
    /// if needed.
    fn link(&mut self, broker: &Arc<Broker>, id: u64) -> Arc<Subscriber> {
        let link = self.link.get_or_insert_with(|| {
            let (tx, rx) = mpsc::channel(MAX_QUEUED);
            let sub = Arc::new(Subscriber {
                tx,
                queued_bytes: AtomicUsize::new(0),
                overflowed: AtomicBool::new(false),
                overflow: Notify::new(),
            });
            Link {
                broker: broker.clone(),
                id,
                sub,
                rx,
            }
        });
        link.sub.clone()
    }

    /// Waits until messages are queued for this connection and appends
    /// them all, encoded for `proto`, to `out`. Returns false once the
    /// queue overflowed (the connection must close). Never completes on a
    /// connection that never subscribed. Cancel-safe: nothing is taken
    /// from the queue until the wait is over.
    pub async fn recv_into(&mut self, proto: u8, out: &mut BytesMut) -> bool {
        let Some(link) = &mut self.link else {
            return std::future::pending().await;
        };
        if link.sub.overflowed.load(Relaxed) {
            return false;
        }
        let first = tokio::select! {
            biased;
            () = link.sub.overflow.notified() => return false,
            m = link.rx.recv() => m,
        };
        // `link.sub` keeps a sender alive, so the queue is never closed.
        if let Some(m) = first {
            link.sub.queued_bytes.fetch_sub(m.size(), Relaxed);
            m.encode(proto, out);
        }
        self.drain(proto, out);
        true
    }

    /// Appends every message queued now, encoded for `proto`, to `out`.
    pub fn drain(&mut self, proto: u8, out: &mut BytesMut) {
        let Some(link) = &mut self.link else {
            return;
        };
        while let Ok(m) = link.rx.try_recv() {
            link.sub.queued_bytes.fetch_sub(m.size(), Relaxed);
            m.encode(proto, out);
        }
    }

    /// Completes once the queue has overflowed (to stop a write to a
    /// client that does not read); never on a connection that never
    /// subscribed.
    pub async fn overflowed(&self) {
        match &self.link {
            Some(l) if !l.sub.overflowed.load(Relaxed) => l.sub.overflow.notified().await,
            Some(_) => {}
            None => std::future::pending().await,
        }
    }
}

impl Drop for Session {
    /// Removes the connection's subscriptions from the broker.
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subscriber(capacity: usize) -> (Arc<Subscriber>, mpsc::Receiver<Message>) {
        let (tx, rx) = mpsc::channel(capacity);
        let sub = Arc::new(Subscriber {
            tx,
            queued_bytes: AtomicUsize::new(0),
            overflowed: AtomicBool::new(false),
            overflow: Notify::new(),
        });
        (sub, rx)
    }

    fn msg(payload: Bytes) -> Message {
        Message {
            pattern: None,
            channel: Bytes::from_static(b"c"),
            payload,
        }
    }

    #[test]
    fn a_full_queue_overflows_instead_of_growing() {
        let (sub, mut rx) = subscriber(2);
        for _ in 0..3 {
            sub.deliver(msg(Bytes::from_static(b"p")));
        }
        assert!(sub.overflowed.load(Relaxed));
        assert_eq!(sub.queued_bytes.load(Relaxed), 4, "two messages queued");
        assert!(rx.try_recv().is_ok() && rx.try_recv().is_ok());
        assert!(rx.try_recv().is_err());
        // Nothing more is queued once overflowed.
        sub.deliver(msg(Bytes::from_static(b"p")));
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn too_many_queued_bytes_overflow() {
        let (sub, mut rx) = subscriber(16);
        sub.deliver(msg(Bytes::from(vec![0; MAX_QUEUED_BYTES / 2])));
        assert!(!sub.overflowed.load(Relaxed));
        sub.deliver(msg(Bytes::from(vec![0; MAX_QUEUED_BYTES / 2])));
        assert!(sub.overflowed.load(Relaxed));
        assert!(rx.try_recv().is_ok());
        assert!(rx.try_recv().is_err(), "the second message was dropped");
    }

    #[test]
    fn dropping_a_session_removes_its_subscriptions() {
        let broker = Arc::new(Broker::default());
        let names = [Bytes::from_static(b"a"), Bytes::from_static(b"b")];
        let mut s1 = Session::default();
        let mut s2 = Session::default();
        s1.subscribe(&broker, 1, Kind::Channel, &names);
        s1.subscribe(&broker, 1, Kind::Pattern, &names[..1]);
        s2.subscribe(&broker, 2, Kind::Channel, &names[..1]);
        assert_eq!((broker.numsub(b"a"), broker.numsub(b"b")), (2, 1));
        // Publisher 1 gets its own two messages back, not queued.
        let (n, own) = broker.publish(1, b"a", b"x");
        assert_eq!((n, own.len()), (3, 2));
        drop(s1);
        assert_eq!((broker.numsub(b"a"), broker.numsub(b"b")), (1, 0));
        assert_eq!(broker.numpat(), 0);
        assert_eq!(broker.channels(None), vec![Bytes::from_static(b"a")]);
        assert_eq!(broker.publish(3, b"a", b"x").0, 1);
        let mut out = BytesMut::new();
        s2.drain(2, &mut out);
        assert_eq!(
            &out[..],
            b"*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$1\r\nx\r\n".repeat(2)
        );
    }
}
