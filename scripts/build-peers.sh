#!/usr/bin/env bash
# Builds `batchkv` with the peer engines for `batchkv bench --engines=...`:
#   target/release/batchkv         batchkv + RocksDB + fjall (feature `peers`)
#   target/release/batchkv-speedb  batchkv + Speedb (feature `peer-speedb`)
# Speedb exports the same C symbols as RocksDB, so it is built into its own
# target directory (target/peer-speedb) and copied next to the main binary,
# where `--engines=...,speedb` finds it.
#
# Needs libclang (bindgen) and g++: run scripts/install-peer-deps.sh first.
# On a 2-core machine each C++ engine takes tens of minutes to compile.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"

timed() {
    local start=$SECONDS
    "$@"
    echo "build took $((SECONDS - start)) s: $*" >&2
}

timed cargo build --release -p batchkv-cli --features peers
CARGO_TARGET_DIR="$target/peer-speedb" timed cargo build --release -p batchkv-cli --features peer-speedb
cp "$target/peer-speedb/release/batchkv" "$target/release/batchkv-speedb"
echo "built $target/release/batchkv and $target/release/batchkv-speedb" >&2
