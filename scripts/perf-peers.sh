#!/usr/bin/env bash
# Reproduces the engine comparison of docs/perf/ (the README's "Performance"
# table takes its memtable rows from it): batchkv vs RocksDB, Speedb and
# fjall, memtable-resident and SST-resident, engines alternating, 3 runs each
# (medians). Compression off on every engine: the reads are served from
# memtables or the block cache, so it would only add noise to the fills.
# Needs the peer binaries from scripts/build-peers.sh.
# Usage: scripts/perf-peers.sh [all|memtable|sst]
set -euo pipefail
part="${1:-all}"
cd "$(dirname "$0")/.."
B="${CARGO_TARGET_DIR:-target}/peers/release/batchkv"
out=docs/perf
common=(--engines=batchkv,rocksdb,speedb,fjall --repeat=3 --num=2000000 --reads=1000000
    --compression_type=none)

# Memtable-resident: a 4 GB write buffer keeps all 2M keys in the memtable.
mem=(--write_buffer_size=4000000000)
if [[ $part == all || $part == memtable ]]; then
"$B" bench "${common[@]}" "${mem[@]}" --batch_size=8 \
    --benchmarks=fillrandom,overwrite,readrandom,multireadrandom,readseq,seekrandom \
    --json=$out/memtable-b8.json --plot=$out/memtable-b8.svg
"$B" bench "${common[@]}" "${mem[@]}" --batch_size=64 \
    --benchmarks=fillrandom,multireadrandom \
    --json=$out/memtable-b64.json --plot=$out/memtable-b64.svg
fi

# SST-resident: 64 MB write buffers, everything compacted, then a readseq to
# warm the 1 GB block cache of every engine.
sst=(--write_buffer_size=67108864 --cache_size=1073741824)
if [[ $part == all || $part == sst ]]; then
"$B" bench "${common[@]}" "${sst[@]}" --batch_size=8 \
    --benchmarks=fillrandom,overwrite,compact,readseq,readrandom,multireadrandom,readseq,seekrandom \
    --json=$out/sst-b8.json --plot=$out/sst-b8.svg
"$B" bench "${common[@]}" "${sst[@]}" --batch_size=64 \
    --benchmarks=fillrandom,compact,readseq,readrandom,multireadrandom \
    --json=$out/sst-b64.json --plot=$out/sst-b64.svg
fi
