//! Keyspace notifications (`notify-keyspace-events`), as Redis 7 publishes
//! them: an event of class `c` named `e` on key `k` of database `d` is
//! published, if the configured flags have class `c`, as
//!
//! ```text
//! PUBLISH __keyspace@<d>__:<k> <e>     (flag K)
//! PUBLISH __keyevent@<d>__:<e> <k>     (flag E)
//! ```
//!
//! Write commands call [`Shared::notify`] after their write, with Redis's
//! event names and only when Redis would (a command that changes nothing
//! publishes nothing; a collection emptied by a removal adds a generic
//! `del`). Three events come from elsewhere:
//! - `new` (flag `n`): [`Shared::write`] finds every top-level key a
//!   write creates and holds its event until the command publishes its
//!   first event on that key (or, at the latest, until the command ends:
//!   [`Shared::flush_held_events`]), so `MSET a 1 b 2` publishes `new a`,
//!   `set a`, `new b`, `set b` as Redis's `dbAdd` does. The same for
//!   `expired` when a write replaces or deletes a key whose expiry passed
//!   (Redis deletes it when the command looks it up).
//! - `expired` (flag `x`): the active-expiry sweeper (`expiry.rs`)
//!   publishes it when it deletes an expired key. Reads treat expired keys
//!   as absent without deleting them, so the event comes within a sweep
//!   tick of the expiry, not at the first access as in Redis.
//! - `evicted` (`e`) and `keymiss` (`m`) are accepted and never published:
//!   there is no eviction, and read misses publish nothing.
//!
//! # Order and transactions
//! Outside a transaction an event is published when the command calls
//! `notify`, after its write is applied: a subscriber that reads the key
//! on receiving the event sees the write. Inside EXEC (and in a group of
//! write commands run as one engine write, `write_group.rs`) events are
//! recorded in the overlay and published, in order, once the write is
//! applied (`tx::defer_publish`); a run that is retried publishes once.
//!
//! Notifications are published on behalf of no connection, so a RESP3
//! connection subscribed to its own events gets them queued like any
//! subscriber's messages: after the reply of the command that caused
//! them, where Redis writes them before it.
//!
//! While any class is enabled, runs of SET-family and read-modify-write
//! string commands go the way of the other write commands' runs (their
//! handlers under an overlay, `write_group.rs`), not the string paths that
//! build the engine write without running the handlers.

use std::cell::RefCell;

use bytes::Bytes;

use crate::config::events::{KEYEVENT, KEYSPACE};
use crate::shared::Shared;

pub use crate::config::events::{EXPIRED, GENERIC, HASH, LIST, NEW, SET, STREAM, STRING, ZSET};

/// The publisher id of notifications: no connection (ids start at 1).
const NO_CONNECTION: u64 = 0;

/// An event to publish: its class, name and stored key.
pub type Event = (u32, &'static str, Vec<u8>);

thread_local! {
    /// Events of this thread's current command held until it publishes
    /// one on the same key ([`Shared::hold_events`]).
    static HELD: RefCell<Vec<Event>> = const { RefCell::new(Vec::new()) };
}

impl Shared {
    /// Whether an event of `class` would be published now.
    pub fn notifies(&self, class: u32) -> bool {
        let flags = self.settings.notify_keyspace_events();
        flags & class != 0 && flags & (KEYSPACE | KEYEVENT) != 0
    }

    /// Publishes event `event` of `class` on the stored key `stored`
    /// (database byte, then the key), if `notify-keyspace-events` enables
    /// it (module docs).
    pub fn notify(&self, class: u32, event: &str, stored: &[u8]) {
        self.publish_held(|k| k == stored);
        if self.notifies(class) {
            self.publish_key_event(event, stored);
        }
    }

    fn publish_key_event(&self, event: &str, stored: &[u8]) {
        let Some((&db, key)) = stored.split_first() else {
            return;
        };
        let flags = self.settings.notify_keyspace_events();
        if flags & KEYSPACE != 0 {
            let mut channel = format!("__keyspace@{db}__:").into_bytes();
            channel.extend_from_slice(key);
            self.publish_event(channel.into(), Bytes::copy_from_slice(event.as_bytes()));
        }
        if flags & KEYEVENT != 0 {
            let channel = format!("__keyevent@{db}__:{event}");
            self.publish_event(channel.into(), Bytes::copy_from_slice(key));
        }
    }

    fn publish_event(&self, channel: Bytes, payload: Bytes) {
        if !crate::tx::defer_publish(&channel, &payload, NO_CONNECTION) {
            self.pubsub.publish(NO_CONNECTION, &channel, &payload);
        }
    }

    /// Publishes `event` of `class` on `stored`, then a generic `del` if
    /// the change `emptied` the collection (which deleted it), as Redis
    /// does after a removal.
    pub fn notify_removal(&self, class: u32, event: &str, stored: &[u8], emptied: bool) {
        self.notify(class, event, stored);
        if emptied {
            self.notify(GENERIC, "del", stored);
        }
    }

    /// Holds `events` (of a write the command just made) until the
    /// command publishes an event on their key (module docs).
    pub fn hold_events(&self, events: Vec<Event>) {
        if !events.is_empty() {
            HELD.with(|h| h.borrow_mut().extend(events));
        }
    }

    /// Publishes the held events of stored key `stored` now (MOVE and
    /// RENAME: Redis adds the destination before it publishes on the
    /// source).
    pub fn publish_held_of(&self, stored: &[u8]) {
        self.publish_held(|k| k == stored);
    }

    /// Publishes every held event: the command is over.
    pub fn flush_held_events(&self) {
        self.publish_held(|_| true);
    }

    fn publish_held(&self, of: impl Fn(&[u8]) -> bool) {
        let due: Vec<Event> = HELD.with(|h| {
            let mut h = h.borrow_mut();
            if h.is_empty() {
                return Vec::new();
            }
            let (due, kept) = std::mem::take(&mut *h).into_iter().partition(|e| of(&e.2));
            *h = kept;
            due
        });
        for (class, event, key) in due {
            if self.notifies(class) {
                self.publish_key_event(event, &key);
            }
        }
    }
}
