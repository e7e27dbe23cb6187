#!/usr/bin/env bash
# Installs the system packages that the optional peer engines of
# `batchkv bench` (features peer-rocksdb, peer-speedb, peer-fjall) need to
# build: the RocksDB and Speedb crates run bindgen, which loads libclang, and
# compile C++ with g++. fjall is pure Rust and needs nothing here.
#
# Debian/Ubuntu only; run as root (or through sudo). Plain
# `cargo build -p batchkv-cli` without features needs none of this.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi

$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends libclang-dev g++ make
