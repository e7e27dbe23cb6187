//! The expected-state oracle: per key, the last acknowledged state, the
//! write in flight, and the acknowledged writes that skipped the WAL and are
//! not yet known to be durable, kept in memory and written through to a file
//! so that it survives a SIGKILL of the stress process (the bytes sit in the
//! OS page cache; a process crash cannot lose them).
//!
//! # File layout (little-endian)
//! ```text
//! header (32 bytes): magic "BKVORCL2" | keys u64 | epoch u64 | reserved u64
//! record i (40 bytes, at 32 + 40·i):
//!   0  acked_version   u32   version of the last acknowledged write (0 = never written)
//!   4  acked_exists    u32   1 if that write was a put, 0 if a delete
//!   8  pending_version u32   version of the write in flight (if pending_flag)
//!   12 pending_flags   u32   bit 0: a write is in flight; bit 1: it is a put
//!   16 pending_batch   u64   batch id of the write in flight (0 = single write)
//!   24 max_version     u32   highest version ever issued for the key
//!   28 durable_version u32   version of the newest write known to be durable
//!   32 window_low      u32   lowest version of the unpersisted window (0 = none)
//!   36 durable_flags   u32   bit 0: the durable write was a put;
//!                            bit 1: the window holds a delete
//! ```
//! A record is written with one `pwrite`, which a SIGKILL cannot tear.
//!
//! # Protocol
//! A writer locks the key ([`Oracle::lock`]), records the pending write
//! ([`KeyGuard::begin`]), issues it, and on acknowledgement records it as
//! acknowledged: [`KeyGuard::commit`] for a write through the WAL, which a
//! SIGKILL cannot lose, [`KeyGuard::commit_unpersisted`] for one that skipped
//! the WAL (`disable_wal`). So after a crash, a key's allowed states are its
//! durable one, any acknowledged WAL-less write after it (the *window*,
//! versions `window_low..=acked_version`: all of them WAL-less, since a
//! write through the WAL moves the durable state to itself and empties the
//! window), and, if marked, the pending one.
//!
//! WAL-less writes become durable (RocksDB's rule) once a `flush()` that
//! started after their acknowledgement returns OK ([`Oracle::persist_upto`],
//! with tickets numbering the acknowledgements), or a clean `close()`
//! returns OK ([`Oracle::persist_all`]). A window lives within one process:
//! its tickets are kept in memory only, and a new process resolves every
//! key ([`KeyGuard::resolve`]) before writing, which empties the windows.
//!
//! A range delete `[lo, hi)` needs nothing of its own here: the worker
//! records it as a delete of each key index in `lo..hi` (begin, then commit
//! or commit_unpersisted, like any write), all under one batch id, so the
//! after-crash rules below (pending, window, all-or-nothing batches) cover
//! it; a WAL-less one puts a delete into each covered key's window.
//!
//! While the database is open and no crash happened, reads must return
//! exactly the acknowledged state ([`KeyState::allows`]); after a crash,
//! anything [`KeyState::allows_after_crash`].
//!
//! # Values
//! A put of version `v` by batch `b` to key `i` stores
//! `"{i:08}.{v:010}.{b:016x}."` followed by a filler whose length and byte
//! derive from `(i, v)`: a value read back names its key, version and batch
//! exactly, and any damage to it is detected.
//!
//! Thread safety: one mutex per key; a thread holding several locks took
//! them in ascending key order.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

const MAGIC: &[u8; 8] = b"BKVORCL2";
const HEADER: u64 = 32;
const RECORD: u64 = 40;

/// One state of a key: version `version`, present (a put) or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ver {
    pub version: u32,
    pub exists: bool,
}

/// The oracle's knowledge of one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyState {
    pub acked: Ver,
    /// The write in flight and its batch id.
    pub pending: Option<(Ver, u64)>,
    pub max_version: u32,
    /// The newest state known to survive a crash (`acked` unless WAL-less
    /// writes followed it).
    pub durable: Ver,
    /// Lowest version of the acknowledged WAL-less writes after `durable`
    /// (up to `acked`), or 0 if there are none.
    pub window_low: u32,
    /// True if one of the window's writes is a delete.
    pub window_has_delete: bool,
}

impl KeyState {
    fn encode(&self) -> [u8; RECORD as usize] {
        let mut r = [0u8; RECORD as usize];
        r[0..4].copy_from_slice(&self.acked.version.to_le_bytes());
        r[4..8].copy_from_slice(&u32::from(self.acked.exists).to_le_bytes());
        if let Some((v, batch)) = self.pending {
            r[8..12].copy_from_slice(&v.version.to_le_bytes());
            let flags = 1 | (u32::from(v.exists) << 1);
            r[12..16].copy_from_slice(&flags.to_le_bytes());
            r[16..24].copy_from_slice(&batch.to_le_bytes());
        }
        r[24..28].copy_from_slice(&self.max_version.to_le_bytes());
        r[28..32].copy_from_slice(&self.durable.version.to_le_bytes());
        r[32..36].copy_from_slice(&self.window_low.to_le_bytes());
        let flags = u32::from(self.durable.exists) | (u32::from(self.window_has_delete) << 1);
        r[36..40].copy_from_slice(&flags.to_le_bytes());
        r
    }

    fn decode(r: &[u8]) -> KeyState {
        let u32_at = |o: usize| u32::from_le_bytes([r[o], r[o + 1], r[o + 2], r[o + 3]]);
        let flags = u32_at(12);
        let mut batch = [0u8; 8];
        batch.copy_from_slice(&r[16..24]);
        KeyState {
            acked: Ver {
                version: u32_at(0),
                exists: u32_at(4) != 0,
            },
            pending: (flags & 1 != 0).then(|| {
                (
                    Ver {
                        version: u32_at(8),
                        exists: flags & 2 != 0,
                    },
                    u64::from_le_bytes(batch),
                )
            }),
            max_version: u32_at(24),
            durable: Ver {
                version: u32_at(28),
                exists: u32_at(36) & 1 != 0,
            },
            window_low: u32_at(32),
            window_has_delete: u32_at(36) & 2 != 0,
        }
    }

    /// True if `obs` is one of the states this key may be in while the
    /// database is open: the acknowledged one, or the one in flight.
    pub fn allows(&self, obs: &Observed) -> bool {
        obs.matches(self.acked) || self.pending.is_some_and(|(p, _)| obs.matches(p))
    }

    /// True if `obs` is the durable state or one of the window's (the
    /// states an acknowledged history may show after a crash).
    pub fn allows_settled(&self, obs: &Observed) -> bool {
        if obs.matches(self.durable) {
            return true;
        }
        if self.window_low == 0 {
            return false;
        }
        match obs {
            Observed::Absent => self.window_has_delete,
            Observed::Value { version, .. } => {
                (self.window_low..=self.acked.version).contains(version)
            }
            Observed::Garbage(_) => false,
        }
    }

    /// True if `obs` is one of the states this key may be in after a crash.
    pub fn allows_after_crash(&self, obs: &Observed) -> bool {
        self.allows_settled(obs) || self.pending.is_some_and(|(p, _)| obs.matches(p))
    }

    /// The allowed states, for messages.
    pub fn describe(&self) -> String {
        let show = |v: Ver| {
            if v.exists {
                format!("version {}", v.version)
            } else if v.version == 0 {
                "absent (never written)".to_string()
            } else {
                format!("absent (deleted at version {})", v.version)
            }
        };
        let mut text = show(self.acked);
        if self.window_low != 0 {
            text = format!(
                "{text} (WAL-less since version {}{}; durable: {})",
                self.window_low,
                if self.window_has_delete {
                    ", deletes among them"
                } else {
                    ""
                },
                show(self.durable)
            );
        }
        match self.pending {
            None => text,
            Some((p, b)) => format!("{text} or pending {} (batch {b:#x})", show(p)),
        }
    }
}

/// What a read returned for a key, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    Absent,
    Value {
        version: u32,
        batch: u64,
    },
    /// Bytes that no write of this key could have stored.
    Garbage(String),
}

impl Observed {
    pub fn parse(key: u64, value: Option<&[u8]>) -> Observed {
        let Some(v) = value else {
            return Observed::Absent;
        };
        let garbage = || Observed::Garbage(String::from_utf8_lossy(v).into_owned());
        let Ok(text) = std::str::from_utf8(v) else {
            return garbage();
        };
        let mut parts = text.splitn(4, '.');
        let (Some(k), Some(ver), Some(batch), Some(filler)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return garbage();
        };
        let (Ok(k), Ok(version), Ok(batch)) = (
            k.parse::<u64>(),
            ver.parse::<u32>(),
            u64::from_str_radix(batch, 16),
        ) else {
            return garbage();
        };
        if k != key || value_bytes(key, version, batch) != v {
            return garbage();
        }
        let _ = filler;
        Observed::Value { version, batch }
    }

    /// True if this is what state `v` reads as.
    pub fn matches(&self, v: Ver) -> bool {
        match self {
            Observed::Absent => !v.exists,
            Observed::Value { version, .. } => v.exists && *version == v.version,
            Observed::Garbage(_) => false,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Observed::Absent => "absent".to_string(),
            Observed::Value { version, batch } => format!("version {version} (batch {batch:#x})"),
            Observed::Garbage(s) => format!("garbage {s:?}"),
        }
    }
}

/// The value a put of `version` by `batch` stores under key `key`.
pub fn value_bytes(key: u64, version: u32, batch: u64) -> Vec<u8> {
    let mut v = format!("{key:08}.{version:010}.{batch:016x}.").into_bytes();
    let len = ((key.wrapping_mul(31) + u64::from(version).wrapping_mul(17)) % 120) as usize;
    v.extend(std::iter::repeat_n(b'a' + (version % 26) as u8, len));
    v
}

/// The user key of key index `i`.
pub fn key_bytes(i: u64) -> Vec<u8> {
    format!("k{i:08}").into_bytes()
}

/// The key index of a user key, if it is one.
pub fn key_index(key: &[u8]) -> Option<u64> {
    std::str::from_utf8(key.strip_prefix(b"k")?)
        .ok()?
        .parse()
        .ok()
}

pub type OracleResult<T> = Result<T, String>;

/// The expected state of every key (see the module documentation).
pub struct Oracle {
    file: File,
    keys: Vec<Mutex<KeyEntry>>,
    epoch: u64,
}

/// One key: its recorded state and, in memory only, the window's writes
/// as (acknowledgement ticket, state), oldest first.
struct KeyEntry {
    state: KeyState,
    unpersisted: Vec<(u64, Ver)>,
}

impl Oracle {
    /// Opens the oracle at `path`, creating it for `keys` keys if missing.
    /// Each open starts a new epoch (batch ids are unique across runs).
    pub fn open(path: &Path, keys: u64) -> OracleResult<Oracle> {
        let err = |what: &str, e: std::io::Error| format!("{what} {}: {e}", path.display());
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| err("opening", e))?;
        let len = file.metadata().map_err(|e| err("reading", e))?.len();
        let mut header = [0u8; HEADER as usize];
        let epoch = if len == 0 {
            header[..8].copy_from_slice(MAGIC);
            header[8..16].copy_from_slice(&keys.to_le_bytes());
            file.set_len(HEADER + RECORD * keys)
                .map_err(|e| err("sizing", e))?;
            1
        } else {
            file.read_exact_at(&mut header, 0)
                .map_err(|e| err("reading", e))?;
            let stored = u64::from_le_bytes(header[8..16].try_into().map_err(|_| "header")?);
            if &header[..8] != MAGIC || len != HEADER + RECORD * stored {
                return Err(format!("{} is not an expected-state file", path.display()));
            }
            if stored != keys {
                return Err(format!(
                    "{} was made for --keys {stored}, not {keys}",
                    path.display()
                ));
            }
            u64::from_le_bytes(header[16..24].try_into().map_err(|_| "header")?) + 1
        };
        header[16..24].copy_from_slice(&epoch.to_le_bytes());
        file.write_all_at(&header, 0)
            .map_err(|e| err("writing", e))?;
        let mut data = vec![0u8; (RECORD * keys) as usize];
        file.read_exact_at(&mut data, HEADER)
            .map_err(|e| err("reading", e))?;
        let keys = data
            .chunks_exact(RECORD as usize)
            .map(|r| {
                Mutex::new(KeyEntry {
                    state: KeyState::decode(r),
                    unpersisted: Vec::new(),
                })
            })
            .collect();
        Ok(Oracle { file, keys, epoch })
    }

    pub fn num_keys(&self) -> u64 {
        self.keys.len() as u64
    }

    /// Batch ids of this run start at `epoch << 32` (0 is "no batch").
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Locks key `i`. Take several locks in ascending key order only.
    pub fn lock(&self, i: u64) -> KeyGuard<'_> {
        KeyGuard {
            oracle: self,
            index: i,
            entry: self.keys[i as usize]
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        }
    }

    /// WAL-less writes acknowledged with a ticket up to `ticket` are
    /// durable (a flush that started after them returned OK).
    pub fn persist_upto(&self, ticket: u64) -> OracleResult<()> {
        for i in 0..self.num_keys() {
            let mut g = self.lock(i);
            let done = g.entry.unpersisted.partition_point(|&(t, _)| t <= ticket);
            if done > 0 {
                let (_, newest) = g.entry.unpersisted[done - 1];
                g.entry.unpersisted.drain(..done);
                g.entry.state.durable = newest;
                g.reset_window()?;
            }
        }
        Ok(())
    }

    /// Every acknowledged write is durable (the database closed cleanly).
    pub fn persist_all(&self) -> OracleResult<()> {
        for i in 0..self.num_keys() {
            let mut g = self.lock(i);
            if g.entry.state.durable != g.entry.state.acked || g.entry.state.window_low != 0 {
                g.entry.unpersisted.clear();
                g.entry.state.durable = g.entry.state.acked;
                g.reset_window()?;
            }
        }
        Ok(())
    }

    fn store(&self, i: u64, st: &KeyState) -> OracleResult<()> {
        self.file
            .write_all_at(&st.encode(), HEADER + RECORD * i)
            .map_err(|e| format!("writing the expected state of key {i}: {e}"))
    }
}

/// A locked key of the oracle.
pub struct KeyGuard<'a> {
    oracle: &'a Oracle,
    pub index: u64,
    entry: MutexGuard<'a, KeyEntry>,
}

impl KeyGuard<'_> {
    pub fn state(&self) -> KeyState {
        self.entry.state
    }

    /// Marks a write of this key as in flight; returns its version.
    pub fn begin(&mut self, exists: bool, batch: u64) -> OracleResult<u32> {
        let st = &mut self.entry.state;
        let version = st.max_version + 1;
        st.max_version = version;
        st.pending = Some((Ver { version, exists }, batch));
        self.oracle.store(self.index, st).map(|()| version)
    }

    /// The write in flight, through the WAL, was acknowledged: it is
    /// durable, and so is everything before it.
    pub fn commit(&mut self) -> OracleResult<()> {
        if let Some((v, _)) = self.entry.state.pending.take() {
            self.entry.state.acked = v;
            self.entry.state.durable = v;
            self.entry.unpersisted.clear();
        }
        self.reset_window()
    }

    /// The write in flight, which skipped the WAL, was acknowledged as
    /// number `ticket` (tickets grow with acknowledgement order): a crash
    /// may lose it until [`Oracle::persist_upto`] `ticket` or
    /// [`Oracle::persist_all`].
    pub fn commit_unpersisted(&mut self, ticket: u64) -> OracleResult<()> {
        if let Some((v, _)) = self.entry.state.pending.take() {
            self.entry.state.acked = v;
            self.entry.unpersisted.push((ticket, v));
        }
        self.reset_window()
    }

    /// Recomputes the window from the in-memory writes and stores the key.
    fn reset_window(&mut self) -> OracleResult<()> {
        let e = &mut *self.entry;
        debug_assert!(e
            .unpersisted
            .windows(2)
            .all(|w| w[0].1.version < w[1].1.version));
        e.state.window_low = e.unpersisted.first().map_or(0, |(_, v)| v.version);
        e.state.window_has_delete = e.unpersisted.iter().any(|(_, v)| !v.exists);
        self.oracle.store(self.index, &e.state)
    }

    /// After a crash: the key was found in state `obs` (which the caller
    /// checked [`KeyState::allows_after_crash`]); make it the acknowledged
    /// and durable state.
    pub fn resolve(&mut self, obs: &Observed) -> OracleResult<()> {
        let st = self.entry.state;
        let found = match (obs, st.pending) {
            // Prefer the pending state when both match (two deletions).
            (_, Some((p, _))) if obs.matches(p) => p,
            (_, _) if obs.matches(st.acked) => st.acked,
            (Observed::Value { version, .. }, _) => Ver {
                version: *version,
                exists: true,
            },
            // Absent: the durable state, or some delete in the window.
            (_, _) if obs.matches(st.durable) => st.durable,
            (_, _) => Ver {
                version: st.acked.version,
                exists: false,
            },
        };
        if st.pending.is_none() && st.window_low == 0 && found == st.acked && st.durable == found {
            return Ok(());
        }
        let e = &mut *self.entry;
        e.state.pending = None;
        e.state.acked = found;
        e.state.durable = found;
        e.unpersisted.clear();
        self.reset_window()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let st = KeyState {
            acked: Ver {
                version: 7,
                exists: true,
            },
            pending: Some((
                Ver {
                    version: 9,
                    exists: false,
                },
                0x1234_5678_9abc,
            )),
            max_version: 9,
            durable: Ver {
                version: 5,
                exists: true,
            },
            window_low: 6,
            window_has_delete: true,
        };
        assert_eq!(KeyState::decode(&st.encode()), st);
    }

    fn put(version: u32) -> Observed {
        Observed::Value { version, batch: 0 }
    }

    /// WAL-less writes may be lost by a crash until a flush that started
    /// after them (or a clean close) persists them; a WAL write persists
    /// everything before it.
    #[test]
    fn wal_less_writes_are_durable_only_once_persisted() {
        let dir = tempfile::tempdir().unwrap();
        let o = Oracle::open(&dir.path().join("expected"), 4).unwrap();
        let write = |i: u64, exists: bool, ticket: Option<u64>| {
            let mut g = o.lock(i);
            g.begin(exists, 0).unwrap();
            match ticket {
                Some(t) => g.commit_unpersisted(t).unwrap(),
                None => g.commit().unwrap(),
            }
        };
        write(0, true, None); // v1 durable
        write(0, true, Some(1)); // v2
        write(0, false, Some(2)); // v3 delete
        write(0, true, Some(3)); // v4
        let st = o.lock(0).state();
        for ok in [put(1), put(2), Observed::Absent, put(4)] {
            assert!(st.allows_after_crash(&ok), "{ok:?}: {}", st.describe());
        }
        assert!(!st.allows_after_crash(&put(5)));
        // While open, only the acknowledged state.
        assert!(st.allows(&put(4)) && !st.allows(&put(2)));

        // A flush that started after ticket 2: v3 (the delete) is durable.
        o.persist_upto(2).unwrap();
        let st = o.lock(0).state();
        assert!(!st.allows_after_crash(&put(1)) && !st.allows_after_crash(&put(2)));
        assert!(st.allows_after_crash(&Observed::Absent) && st.allows_after_crash(&put(4)));

        // A WAL write empties the window.
        write(0, true, None); // v5
        let st = o.lock(0).state();
        assert!(st.allows_after_crash(&put(5)) && !st.allows_after_crash(&put(4)));

        // A resolved crash empties it too; a lost version stays out.
        write(1, true, None); // v1
        write(1, true, Some(4)); // v2, lost by the "crash"
        let mut g = o.lock(1);
        g.resolve(&put(1)).unwrap();
        assert_eq!(g.state().window_low, 0);
        drop(g);
        write(1, true, Some(5)); // v3
        let st = o.lock(1).state();
        assert!(!st.allows_after_crash(&put(2)), "{}", st.describe());
        assert!(st.allows_after_crash(&put(1)) && st.allows_after_crash(&put(3)));

        // A clean close persists everything.
        o.persist_all().unwrap();
        let st = o.lock(1).state();
        assert!(!st.allows_after_crash(&put(1)) && st.allows_after_crash(&put(3)));
    }

    #[test]
    fn values_name_key_version_and_batch_exactly() {
        let v = value_bytes(42, 3, 0xabc);
        assert_eq!(
            Observed::parse(42, Some(&v)),
            Observed::Value {
                version: 3,
                batch: 0xabc
            }
        );
        assert!(matches!(
            Observed::parse(43, Some(&v)),
            Observed::Garbage(_)
        ));
        let mut bad = v.clone();
        bad.push(b'z');
        assert!(matches!(
            Observed::parse(42, Some(&bad)),
            Observed::Garbage(_)
        ));
        assert_eq!(key_index(&key_bytes(77)), Some(77));
    }

    #[test]
    fn state_survives_reopen_and_allows_old_or_pending() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("expected");
        {
            let o = Oracle::open(&path, 10).unwrap();
            let mut g = o.lock(3);
            g.begin(true, 0).unwrap();
            g.commit().unwrap();
            g.begin(false, 5).unwrap();
            // "crash" with the delete in flight
        }
        let o = Oracle::open(&path, 10).unwrap();
        assert_eq!(o.epoch(), 2);
        let st = o.lock(3).state();
        let old = Observed::Value {
            version: 1,
            batch: 0,
        };
        assert!(st.allows(&old));
        assert!(st.allows(&Observed::Absent));
        assert!(!st.allows(&Observed::Value {
            version: 2,
            batch: 5
        }));
        assert!(Oracle::open(&path, 11).is_err());
    }
}
