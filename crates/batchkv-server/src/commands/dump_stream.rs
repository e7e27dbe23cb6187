//! DUMP and RESTORE of a stream: its entries, IDs and consumer groups
//! read into an [`rdb::Stream`], and written back from one
//! (`docs/format/server-keyspace.md` §5b, §5c).

use std::collections::HashMap;

use super::coll::Writer;
use crate::groups::{Consumer, Group, Keys, Nack};
use crate::meta::{self, Meta, StreamIds};
use crate::rdb::{self, Pending, StreamConsumer, StreamGroup};
use crate::resp::Reply;
use crate::shared::Shared;
use crate::streams::{decode_fields, encode_fields, StreamId};

use super::groups::all_groups;

fn corrupt() -> Reply {
    Reply::err(crate::errors::CORRUPT)
}

/// The stream `m` at stored key `key` with its groups, as DUMP writes it.
/// Read at the command's snapshot.
pub(super) fn read(shared: &Shared, key: &[u8], m: &Meta) -> Result<rdb::Stream, Reply> {
    let mut entries = Vec::with_capacity(m.size.min(1 << 16) as usize);
    if m.size > 0 {
        let prefix = meta::element_prefix(key, m.version);
        let lo = [&prefix[..], &m.stream.first.to_key()].concat();
        let hi = meta::prefix_end(&prefix);
        let mut bad = false;
        shared.scan(&lo, &hi, false, true, |k, v| {
            let id = StreamId::from_key(&k[prefix.len()..]);
            match (id, decode_fields(v)) {
                (Some(id), Some(flat)) => {
                    let pairs = flat
                        .chunks(2)
                        .map(|p| (p[0].to_vec(), p[1].to_vec()))
                        .collect();
                    entries.push((id, pairs));
                    true
                }
                _ => {
                    bad = true;
                    false
                }
            }
        })?;
        if bad || entries.len() as u64 != m.size {
            return Err(corrupt());
        }
    }
    let keys = Keys {
        prefix: meta::group_prefix(key, m.version),
    };
    let mut groups = Vec::new();
    for (name, g) in all_groups(shared, key, m)? {
        groups.push(read_group(shared, &keys, name, &g)?);
    }
    Ok(rdb::Stream {
        entries,
        last_id: m.stream.last,
        first_id: m.stream.first,
        max_deleted: m.stream.max_deleted,
        entries_added: m.stream.entries_added,
        groups,
    })
}

/// The group `name` (record `g`): its pending entries in ID order, and
/// its consumers in name order, each with the IDs pending for it.
fn read_group(
    shared: &Shared,
    keys: &Keys,
    name: Vec<u8>,
    g: &Group,
) -> Result<StreamGroup, Reply> {
    let mut owners: HashMap<Vec<u8>, Vec<StreamId>> = HashMap::new();
    let mut pending = Vec::new();
    let mut bad = false;
    let prefix = keys.pending_prefix(&name);
    shared.scan(
        &prefix,
        &meta::prefix_end(&prefix),
        false,
        true,
        |k, v| match (StreamId::from_key(&k[prefix.len()..]), Nack::decode(v)) {
            (Some(id), Some(n)) => {
                pending.push(Pending {
                    id,
                    delivered: n.delivered,
                    count: n.count,
                });
                owners.entry(n.consumer).or_default().push(id);
                true
            }
            _ => {
                bad = true;
                false
            }
        },
    )?;
    let mut consumers = Vec::new();
    let prefix = keys.consumers(&name);
    shared.scan(&prefix, &meta::prefix_end(&prefix), false, true, |k, v| {
        let Some(c) = Consumer::decode(v) else {
            bad = true;
            return false;
        };
        let name = k[prefix.len()..].to_vec();
        let ids = owners.remove(&name).unwrap_or_default();
        consumers.push(StreamConsumer {
            name,
            seen: c.seen,
            pending: ids,
        });
        true
    })?;
    // Every pending entry belongs to a consumer that exists.
    if bad || !owners.is_empty() || pending.len() as u64 != g.pending {
        return Err(corrupt());
    }
    Ok(StreamGroup {
        name,
        last_id: g.last,
        entries_read: g.entries_read,
        pending,
        consumers,
    })
}

/// Fills the new stream in `w` (a fresh version, empty) with `s`: its
/// entries, IDs and groups, all in `w`'s batch. The first ID is the first
/// entry's (the payload's own is not trusted: reads start there). A
/// pending entry no consumer owns is refused (`rdb` refuses it first).
pub(super) fn fill(w: &mut Writer, s: &rdb::Stream) -> Result<(), Reply> {
    for (id, pairs) in &s.entries {
        let flat: Vec<&[u8]> = pairs.iter().flat_map(|(f, v)| [&f[..], &v[..]]).collect();
        let ek = w.element_key(&id.to_key());
        w.batch.put(ek, encode_fields(&flat));
    }
    w.meta.size = s.entries.len() as u64;
    w.meta.stream = StreamIds {
        first: s.entries.first().map_or(StreamId::ZERO, |e| e.0),
        last: s.last_id,
        max_deleted: s.max_deleted,
        entries_added: s.entries_added,
    };
    let keys = Keys {
        prefix: meta::group_prefix(&w.key, w.meta.version),
    };
    for g in &s.groups {
        let rec = Group {
            last: g.last_id,
            entries_read: g.entries_read,
            pending: g.pending.len() as u64,
            consumers: g.consumers.len() as u64,
        };
        w.batch.put(keys.group(&g.name), rec.encode());
        let mut owner: HashMap<StreamId, &[u8]> = HashMap::new();
        for c in &g.consumers {
            let rec = Consumer {
                seen: c.seen,
                pending: c.pending.len() as u64,
            };
            w.batch.put(keys.consumer(&g.name, &c.name), rec.encode());
            for &id in &c.pending {
                w.batch.put(keys.consumer_pending(&g.name, &c.name, id), []);
                owner.insert(id, &c.name);
            }
        }
        for p in &g.pending {
            let Some(consumer) = owner.get(&p.id) else {
                return Err(Reply::err(super::dump::BAD_FORMAT));
            };
            let nack = Nack {
                delivered: p.delivered,
                count: p.count,
                consumer: consumer.to_vec(),
            };
            w.batch.put(keys.pending(&g.name, p.id), nack.encode());
        }
    }
    Ok(())
}
