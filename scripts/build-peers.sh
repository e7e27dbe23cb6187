#!/usr/bin/env bash
# Builds `batchkv` with the peer engines for `batchkv bench --engines=...`,
# every engine compiled for the same CPU:
#   $OUT/batchkv         batchkv + RocksDB + fjall (feature `peers`)
#   $OUT/batchkv-speedb  batchkv + Speedb (feature `peer-speedb`)
# where OUT is $CARGO_TARGET_DIR/peers/release (default target/peers/release),
# a target directory of its own so the plain development build is not
# rebuilt with other flags.
#
# Flags (the same for every engine; what RocksDB's `make db_bench` with
# PORTABLE=0 uses, at the optimisation level of a Cargo release build):
#   Rust (batchkv, fjall):      RUSTFLAGS="-C target-cpu=$TARGET_CPU", opt-level 3
#   C++ (RocksDB, Speedb):      -O3 -DNDEBUG -march=$TARGET_CPU (librocksdb-sys
#                               passes -C target-cpu through; CXXFLAGS adds it
#                               for Speedb), plus -msse4.2/-mavx2/... that their
#                               build scripts derive from the enabled features
# TARGET_CPU defaults to `native`.
#
# Speedb exports the same C symbols as RocksDB, so it is built into its own
# target directory and copied next to the main binary, where
# `--engines=...,speedb` finds it. PEERS=rocksdb (default: rocksdb,speedb)
# skips Speedb.
#
# Needs libclang (bindgen) and g++: run scripts/install-peer-deps.sh first.
# On a 2-core machine each C++ engine takes tens of minutes to compile.
set -euo pipefail
cd "$(dirname "$0")/.."
base="${CARGO_TARGET_DIR:-target}/peers"
cpu="${TARGET_CPU:-native}"
peers="${PEERS:-rocksdb,speedb}"
export RUSTFLAGS="-C target-cpu=$cpu"
export CFLAGS="-march=$cpu"
export CXXFLAGS="-march=$cpu"

timed() {
    local start=$SECONDS
    "$@"
    echo "build took $((SECONDS - start)) s: $*" >&2
}

echo "RUSTFLAGS=$RUSTFLAGS CFLAGS=$CFLAGS CXXFLAGS=$CXXFLAGS" >&2
CARGO_TARGET_DIR="$base" timed cargo build --release -p batchkv-cli --features peers
if [[ ",$peers," == *",speedb,"* ]]; then
    CARGO_TARGET_DIR="$base/speedb" timed cargo build --release -p batchkv-cli --features peer-speedb
    cp "$base/speedb/release/batchkv" "$base/release/batchkv-speedb"
fi
echo "built $base/release/batchkv$([[ ",$peers," == *",speedb,"* ]] && echo " and $base/release/batchkv-speedb")" >&2
