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
//! - `new` (flag `n`): [`Shared::write`] publishes it for every top-level
//!   key a write creates, before the command's own event, as Redis's
//!   `dbAdd` does.
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
//! While any class is enabled, SET-family and read-modify-write string
//! commands run one by one rather than combined into engine write groups
//! (`conn.rs`), since the combined paths do not run the command handlers.

use bytes::Bytes;

use crate::config::events::{KEYEVENT, KEYSPACE};
use crate::shared::Shared;

pub use crate::config::events::{
    EXPIRED, GENERIC, HASH, LIST, NEW, SET, STREAM, STRING, ZSET,
};

/// The publisher id of notifications: no connection (ids start at 1).
const NO_CONNECTION: u64 = 0;

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
        if !self.notifies(class) {
            return;
        }
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
}
