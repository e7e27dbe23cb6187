#!/usr/bin/env bash
# Instructions per request of `batchkv serve`'s writes (SET, MSET10, INCR,
# APPEND, HSET, LPUSH), counted by callgrind (noise-free, unlike throughput on a
# shared machine). The read-side twin is scripts/redis-callgrind.sh.
#
# A server per test and -P under `valgrind --tool=callgrind --instr-atstart=no` (only
# the first dump after a server starts is exact); with
# KEYS > 0 it first loads KEYS string keys key:N of VALUE bytes (not
# counted, as scripts/redis-bench.sh does, so APPEND extends values that
# are in SST files with the server's default write buffer). Then for each
# PIPE: switch instrumentation on, run redis-benchmark -c CONNS -P PIPE
# -n N (-r RANGE for the string tests, as scripts/redis-bench.sh runs them
# over its 1M keys, so most keys are new to the key counts' window; -r
# COLL for HSET and LPUSH), dump the counts (callgrind_control --dump),
# switch it off.
# Everything the server does meanwhile is counted: the connections, the
# engine's flushes, compactions and the key counts' window closes.
# Prints "LABEL TEST -c C -P P: I instructions/request" and the INFO
# write-combining counters over the run; the dumps stay in OUT for
# `callgrind_annotate --inclusive=yes OUT/LABEL.TEST-PP`.
#
# Usage: scripts/redis-callgrind-writes.sh BINARY [LABEL]
# Environment (defaults in brackets):
#   TESTS ["SET MSET10 INCR APPEND HSET"]   (also LPUSH; MSET10 is an MSET
#               of 10 random keys, as scripts/redis-bench.sh runs it)
#   CONNS [50]  PIPES ["10"]  N [20000] requests per run
#   KEYS [0]    string keys loaded first
#   RANGE [KEYS, or 1000000 if none]  COLL [1000]  -r of the string and
#               collection tests
#   VALUE [100] value size of SET and of the loaded keys
#   OPTIONS [write_buffer_size=1GB when KEYS=0, else none] engine options
#   OUT [/tmp/redis-callgrind-writes]  PORT [16482]
#   SERVE_ARGS [""] more arguments of `batchkv serve` (e.g. "--threads 1")
set -euo pipefail

BIN=${1:?usage: $0 BINARY [LABEL]}
LABEL=${2:-$(basename "$BIN")}
TESTS=${TESTS:-"SET MSET10 INCR APPEND HSET"}
CONNS=${CONNS:-50}
PIPES=${PIPES:-10}
N=${N:-20000}
KEYS=${KEYS:-0}
VALUE=${VALUE:-100}
if ((KEYS > 0)); then
    RANGE=${RANGE:-$KEYS}
    OPTIONS=${OPTIONS-}
else
    RANGE=${RANGE:-1000000}
    OPTIONS=${OPTIONS-write_buffer_size=1GB}
fi
COLL=${COLL:-1000}
OUT=${OUT:-/tmp/redis-callgrind-writes}
PORT=${PORT:-16482}
read -r -a serve_args <<<"${SERVE_ARGS-}"
mkdir -p "$OUT"
PID=

# Loading and starting under valgrind take longer than natively.
READY_TRIES=3000
# stop_server, wait_ready, load_collection, repeat_arg
source "$(dirname "$0")/redis-common.sh"
trap stop_server EXIT

# args_of TEST: -r and the redis-benchmark command.
args_of() {
    case $1 in
    SET) echo "$RANGE SET key:__rand_int__ $(head -c "$VALUE" </dev/zero | tr '\0' 'x')" ;;
    MSET10)
        local val
        val=$(head -c "$VALUE" </dev/zero | tr '\0' 'x')
        echo "$RANGE MSET$(for _ in $(seq 1 10); do printf ' key:__rand_int__ %s' "$val"; done)"
        ;;
    INCR) echo "$RANGE INCR counter:__rand_int__" ;;
    APPEND) echo "$RANGE APPEND key:__rand_int__ 12345678" ;;
    HSET) echo "$COLL HSET h:__rand_int__ f:__rand_int__ v" ;;
    LPUSH) echo "$COLL LPUSH l:__rand_int__ v" ;;
    *) echo "unknown test $1" >&2; exit 1 ;;
    esac
}

# counters: INFO batchkv's write-combining lines, on one line.
counters() {
    redis-cli -p "$PORT" INFO batchkv | tr -d '\r' | grep -E '^write_batch' | tr '\n' ' '
}

total_ir() {
    awk '/^(summary|totals):/ { print $2; exit }' "$1"
}

opts=()
[[ -n $OPTIONS ]] && opts=(--options "$OPTIONS")
base=$OUT/$LABEL
rm -f "$base".*
for test in $TESTS; do
    read -r range args <<<"$(args_of "$test")"
    for p in $PIPES; do
        # A fresh server per test and -P: only the first dump after a
        # server starts is exact (a later one in the same server gave
        # short, even negative, totals).
        run=$OUT/db-$LABEL
        rm -rf "$run" && mkdir -p "$run"
        valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$base.%p" \
            "$BIN" "${opts[@]}" serve --dir "$run" --port "$PORT" --memtable skiplist "${serve_args[@]}" \
            >"$base.$test-P$p.log" 2>&1 &
        PID=$!
        wait_ready
        if ((KEYS > 0)); then
            val=$(head -c "$VALUE" </dev/zero | tr '\0' 'x')
            awk -v n="$KEYS" -v val="$val" -v vl="$VALUE" 'BEGIN {
                for (i = 0; i < n; i++)
                    printf "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$%d\r\n%s\r\n", i, vl, val
            }' | redis-cli -p "$PORT" --pipe >/dev/null
        fi
        # Every command is slow under valgrind: the slow log would count
        # work that a native run never does.
        redis-cli -p "$PORT" CONFIG SET slowlog-log-slower-than -1 >/dev/null
        before=$(counters)
        callgrind_control -i on "$PID" >/dev/null
        # shellcheck disable=SC2086
        redis-benchmark -p "$PORT" -c "$CONNS" -P "$p" -r "$range" -n "$N" -q $args >/dev/null
        callgrind_control --dump="$test-P$p" "$PID" >/dev/null
        callgrind_control -i off "$PID" >/dev/null
        mv "$base.$PID".* "$base.$test-P$p"
        ir=$(total_ir "$base.$test-P$p")
        printf '%s %s -c %s -P %s: %s instructions/request (%s requests); before: %s after: %s\n' \
            "$LABEL" "$test" "$CONNS" "$p" "$((ir / N))" "$N" "$before" "$(counters)"
        stop_server
        rm -f "$base.$PID"
    done
done
