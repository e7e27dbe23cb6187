//! The parts of the differential test against redis-server: the RESP
//! client, the redis-server process, comparison modes, and the command
//! tables (one module per data type).

pub mod compare;
pub mod generate;
pub mod redis_process;
pub mod resp;

pub mod geo;
pub mod hashes;
pub mod hll;
pub mod keys;
pub mod lists;
pub mod sets;
pub mod sort;
pub mod streams;
pub mod strings;
pub mod tx;
pub mod zsets;
