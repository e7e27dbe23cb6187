//! libFuzzer entry point for `batchkv::fuzzing::range_del_block` (the body
//! and the properties it checks are documented there).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| batchkv::fuzzing::range_del_block(data));
