//! A Redis-protocol server on batchkv (`batchkv serve`).
//!
//! RESP2 and RESP3 (via `HELLO 3`), inline commands, string and keyspace
//! commands, 16 databases as one-byte key prefixes, expiry stored in the
//! value and applied lazily on read. MGET and EXISTS are one `multi_get`;
//! runs of pipelined GET/MGET — from one connection and across
//! connections — are combined into one `multi_get` by the batcher (`batcher.rs`).
//!
//! Files: `resp.rs` (protocol, reply encoding), `errors.rs` (the error
//! texts several places answer), `keyspace.rs` (key and value encoding,
//! globs), `server.rs` (accept loop, WAL sync, shutdown), `shared.rs`
//! (the state connections share, engine access), `conn.rs` (one
//! connection), `batcher.rs` (batched reads), `expiry.rs`
//! (active expiry), `blocking.rs` (clients blocked in BLPOP and friends),
//! `tx.rs` (the mechanism of MULTI/EXEC and WATCH), `ldouble.rs` (80-bit
//! `long double` for INCRBYFLOAT), `pubsub.rs` (Pub/Sub subscriptions and
//! delivery), `clients.rs` (the connection registry and idle timeout),
//! `slowlog.rs`, `security.rs` (protected mode, AUTH checks),
//! `cursors.rs` (SCAN-family cursors), `panics.rs` (the panic boundary
//! around commands), `limits.rs` (the descriptor budget of `maxclients`),
//! `cmdstats.rs` (INFO commandstats), `config/runtime.rs` (CONFIG SET),
//! `marker.rs` (telling a server's database from plain engine data),
//! `write_group.rs` (a pipeline's writes as one engine write),
//! `meta.rs` (collections' stored layout), `hll.rs` (HyperLogLog in
//! Redis's string representation), `geo.rs` (geohash arithmetic), `pqsort.rs` (Redis's partial sort), `keycount.rs` (key counts),
//! `commands/` (the command table — names, arities, flags, key
//! positions, handlers, which reads are batched — and the commands).

mod balance;
mod batcher;
mod blocking;
mod clients;
mod cmdstats;
mod combine;
mod commands;
mod config;
mod conn;
mod cursors;
mod errors;
mod expiry;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
mod geo;
mod groups;
mod hll;
mod keycount;
mod keyspace;
mod ldouble;
mod limits;
pub mod marker;
mod meta;
mod monitor;
mod notify;
mod panics;
mod pqsort;
mod pubsub;
mod ranks;
mod rdb;
mod resp;
mod security;
mod server;
mod shared;
mod slowlog;
mod streams;
mod tx;
mod workers;
mod write_group;

pub use config::{AppendFsync, Config, DebugCommand, ServeArgs};
pub use server::{run, Server};
pub use workers::Schedule;
