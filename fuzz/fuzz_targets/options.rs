//! libFuzzer entry point for `batchkv::fuzzing::options` (the body and the
//! properties it checks are documented there).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| batchkv::fuzzing::options(data));
