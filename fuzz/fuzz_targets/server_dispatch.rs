//! libFuzzer entry point for `batchkv_server::fuzzing::server_dispatch`:
//! one connection's input (raw protocol bytes and requests generated from
//! the command table) through the RESP parser and the command dispatch of
//! an in-process server; fails if any command panicked.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| batchkv_server::fuzzing::server_dispatch(data));
