//! The expected-state oracle: per key, the last acknowledged state and the
//! write in flight, kept in memory and written through to a file so that it
//! survives a SIGKILL of the stress process (the bytes sit in the OS page
//! cache; a process crash cannot lose them).
//!
//! # File layout (little-endian)
//! ```text
//! header (32 bytes): magic "BKVORCL1" | keys u64 | epoch u64 | reserved u64
//! record i (32 bytes, at 32 + 32·i):
//!   0  acked_version   u32   version of the last acknowledged write (0 = never written)
//!   4  acked_exists    u32   1 if that write was a put, 0 if a delete
//!   8  pending_version u32   version of the write in flight (if pending_flag)
//!   12 pending_flags   u32   bit 0: a write is in flight; bit 1: it is a put
//!   16 pending_batch   u64   batch id of the write in flight (0 = single write)
//!   24 max_version     u32   highest version ever issued for the key
//!   28 reserved        u32
//! ```
//! A record is written with one `pwrite`, which a SIGKILL cannot tear.
//!
//! # Protocol
//! A writer locks the key ([`Oracle::lock`]), records the pending write
//! ([`KeyGuard::begin`]), issues it, and on acknowledgement records it as
//! acknowledged ([`KeyGuard::commit`]). So after a crash, a key's allowed
//! states are its acknowledged one and, if marked, the pending one.
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

const MAGIC: &[u8; 8] = b"BKVORCL1";
const HEADER: u64 = 32;
const RECORD: u64 = 32;

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
        }
    }

    /// True if `obs` is one of the states this key may be in.
    pub fn allows(&self, obs: &Observed) -> bool {
        obs.matches(self.acked) || self.pending.is_some_and(|(p, _)| obs.matches(p))
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
        match self.pending {
            None => show(self.acked),
            Some((p, b)) => format!("{} or pending {} (batch {b:#x})", show(self.acked), show(p)),
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
    keys: Vec<Mutex<KeyState>>,
    epoch: u64,
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
            .map(|r| Mutex::new(KeyState::decode(r)))
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
            state: self.keys[i as usize]
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        }
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
    state: MutexGuard<'a, KeyState>,
}

impl KeyGuard<'_> {
    pub fn state(&self) -> KeyState {
        *self.state
    }

    /// Marks a write of this key as in flight; returns its version.
    pub fn begin(&mut self, exists: bool, batch: u64) -> OracleResult<u32> {
        let version = self.state.max_version + 1;
        self.state.max_version = version;
        self.state.pending = Some((Ver { version, exists }, batch));
        self.oracle.store(self.index, &self.state).map(|()| version)
    }

    /// The write in flight was acknowledged.
    pub fn commit(&mut self) -> OracleResult<()> {
        if let Some((v, _)) = self.state.pending.take() {
            self.state.acked = v;
        }
        self.oracle.store(self.index, &self.state)
    }

    /// After a crash: the key was found in state `obs` (which the caller
    /// checked is allowed); make it the acknowledged state.
    pub fn resolve(&mut self, obs: &Observed) -> OracleResult<()> {
        if let Some((p, _)) = self.state.pending.take() {
            // Prefer the pending state when both match (two deletions).
            if obs.matches(p) {
                self.state.acked = p;
            }
            self.oracle.store(self.index, &self.state)?;
        }
        Ok(())
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
        };
        assert_eq!(KeyState::decode(&st.encode()), st);
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
