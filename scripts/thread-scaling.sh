#!/usr/bin/env bash
# Thread scaling of the SST-resident reads (issue 14 item 5): how much
# throughput each engine gains from 1 to N reading threads.
#
# Measuring 1 and 2 threads in two separate `bench --engines` invocations
# compares two different stretches of a shared machine's noise. Here every
# repetition runs each (threads, engine) pair back to back on one database
# per engine (filled and compacted once), so the scaling is a *paired* ratio:
# T-thread over 1-thread throughput within the same repetition. Prints per
# engine and thread count the median ops/s, CPU µs per operation and cores
# used (CPU seconds / wall seconds), then the median paired scaling.
#
# Usage: scripts/thread-scaling.sh            (needs scripts/build-peers.sh)
# Environment: ENGINES (default batchkv,rocksdb), THREADS ("1 2"), REPEAT (5),
# NUM (2000000), READS (1000000 per thread), BATCH (64), BKV (the binary).
set -euo pipefail
cd "$(dirname "$0")/.."
BKV="${BKV:-${CARGO_TARGET_DIR:-target}/peers/release/batchkv}"
ENGINES="${ENGINES:-batchkv,rocksdb}"
THREADS="${THREADS:-1 2}"
REPEAT="${REPEAT:-5}"
NUM="${NUM:-2000000}"
READS="${READS:-1000000}"
BATCH="${BATCH:-64}"
common=(--num="$NUM" --reads="$READS" --compression_type=none --write_buffer_size=67108864
    --cache_size=1073741824 --batch_size="$BATCH")

work="$(mktemp -d /tmp/thread-scaling.XXXXXX)"
trap 'rm -rf "$work"' EXIT
IFS=, read -r -a engines <<<"$ENGINES"

for e in "${engines[@]}"; do
    echo "== $e: fillrandom, compact" >&2
    "$BKV" bench --engine="$e" --db="$work/$e" "${common[@]}" \
        --benchmarks=fillrandom,compact >"$work/$e.fill.log"
done

# One line per measured benchmark: rep engine threads name ops_per_sec cpu_us_per_op
results="$work/results"
: >"$results"
for rep in $(seq 1 "$REPEAT"); do
    for t in $THREADS; do
        for e in "${engines[@]}"; do
            echo "== repetition $rep, $e, $t thread(s) (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
            # readseq warms this process's block cache; it is not reported.
            "$BKV" bench --engine="$e" --db="$work/$e" --use_existing_db "${common[@]}" \
                --threads="$t" --benchmarks=readseq,readrandom,multireadrandom |
                awk -v rep="$rep" -v e="$e" -v t="$t" '
                    /^(readrandom|multireadrandom) +:/ {
                        ops = ""; cpu = ""
                        for (i = 1; i <= NF; i++) {
                            if ($i == "ops/sec") ops = $(i - 1)
                            if ($i == "[cpu") cpu = $(i + 1)
                        }
                        print rep, e, t, $1, ops, cpu
                    }' >>"$results"
        done
    done
done

awk -v threads="$THREADS" '
    function median(list,    n, a, i, j, x) {
        n = split(list, a, " ")
        for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    {
        rep = $1; e = $2; t = $3; name = $4; ops = $5; cpu = $6
        k = name SUBSEP e SUBSEP t
        opsl[k] = opsl[k] " " ops; cpul[k] = cpul[k] " " cpu
        # cores used = CPU seconds / wall seconds = (cpu µs/op) × (ops/s) / 1e6
        coresl[k] = coresl[k] " " cpu * ops / 1e6
        byrep[rep, name, e, t] = ops
        names[name] = 1; engs[e] = 1; reps[rep] = 1
    }
    END {
        nt = split(threads, ts, " ")
        printf "%-16s %-8s %7s %12s %12s %10s %18s\n", "benchmark", "engine", "threads", "ops/s", "cpu µs/op", "cores", "scaling (paired)"
        for (name in names) for (e in engs) for (i = 1; i <= nt; i++) {
            t = ts[i]; k = name SUBSEP e SUBSEP t
            sc = ""
            for (rep in reps) if ((rep, name, e, ts[1]) in byrep && (rep, name, e, t) in byrep)
                sc = sc " " byrep[rep, name, e, t] / byrep[rep, name, e, ts[1]]
            printf "%-16s %-8s %7s %12.0f %12.3f %10.2f %18.2f\n", name, e, t, median(opsl[k]), median(cpul[k]), median(coresl[k]), median(sc)
        }
    }' "$results" | sort -k1,1 -k2,2 -k3,3n
echo "raw: one line per run (repetition engine threads benchmark ops/s cpu-µs/op)" >&2
cat "$results" >&2
