#!/usr/bin/env bash
# Instructions per request of `batchkv serve`'s collection reads and
# string read-modify-writes, counted by callgrind (noise-free, unlike
# throughput on a shared machine).
#
# For each data type the tests use: start a server under
# `valgrind --tool=callgrind --instr-atstart=no`, load COLL collections of
# COLL elements (or, for INCR and APPEND, KEYS string keys) into its
# memtable (as scripts/redis-bench.sh does; not counted), switch
# instrumentation on, and run each test at -c CONNS for every -P in
# PIPES, dumping the counts after each run (callgrind_control --dump).
# INCR increments counters beside the loaded keys, APPEND appends 8 bytes
# to them (-r KEYS), as in scripts/redis-bench.sh.
# Prints "test -P instructions/request" per run; the dumps stay in OUT
# for callgrind_annotate.
#
# FLUSH=1 counts reads of SST-resident data instead: the collections are
# loaded into a native server (the engine's default 64 MiB write buffer
# unless OPTIONS says otherwise), which is then stopped; the server under
# valgrind reopens the directory, and writable recovery flushes the
# replayed WAL to L0 tables, so every element is in an SST file. Each
# test then runs four times as long uncounted, so that the counted runs
# find the data blocks in the block cache (as a long-running server
# does), and the
# server's files_per_level and block cache counters are printed.
#
# Usage: scripts/redis-callgrind.sh BINARY [LABEL]
# Environment (defaults in brackets):
#   TESTS ["HMGET5 HMGET100 SMISMEMBER100 ZMSCORE100"]; also HGET, HEXISTS,
#         ZRANK, ZRANGE10, ZREVRANGE10, ZADD (new members n:N), SRANDMEMBER, HRANDFIELD,
#         ZRANDMEMBER, ZRANDMEMBER5 (5 WITHSCORES), LINDEX, LRANGE10 (lists
#         l:N loaded with RPUSH),
#         GET, INCR, APPEND
#   COLL [1000]  VALUE [100]  CONNS [50]  PIPES ["1 10"]  KEYS [200000]
#   N_SMALL [20000] requests of HMGET5 (and HGET, GET)   N_BIG [2000] of the 100-element tests
#   N_WRITES [200000] requests of INCR and APPEND
#   BATCH [on]   OUT [/tmp/redis-callgrind]  PORT [16479]
#   FLUSH [0]    1: the data in SST files (above)
#   OPTIONS      engine options (--options) ["write_buffer_size=1GB";
#                with FLUSH=1 none: the server's defaults]
set -euo pipefail

BIN=${1:?usage: $0 BINARY [LABEL]}
LABEL=${2:-$(basename "$BIN")}
TESTS=${TESTS:-"HMGET5 HMGET100 SMISMEMBER100 ZMSCORE100"}
COLL=${COLL:-1000}
VALUE=${VALUE:-100}
CONNS=${CONNS:-50}
PIPES=${PIPES:-"1 10"}
N_SMALL=${N_SMALL:-20000}
N_BIG=${N_BIG:-2000}
KEYS=${KEYS:-200000}
N_WRITES=${N_WRITES:-200000}
BATCH=${BATCH:-on}
OUT=${OUT:-/tmp/redis-callgrind}
PORT=${PORT:-16479}
FLUSH=${FLUSH:-0}
if [[ $FLUSH == 1 ]]; then
    OPTIONS=${OPTIONS-}
else
    OPTIONS=${OPTIONS-write_buffer_size=1GB}
fi
OPTS=()
[[ -n $OPTIONS ]] && OPTS=(--options "$OPTIONS")
mkdir -p "$OUT"
PID=

# Loading and starting under valgrind take longer than natively.
READY_TRIES=3000
# stop_server, wait_ready, load_keys, load_collection, repeat_arg
source "$(dirname "$0")/redis-common.sh"
trap stop_server EXIT

# command_of TEST: the redis-benchmark command line and request count.
command_of() {
    case $1 in
    HGET) echo "$N_SMALL HGET h:__rand_int__ f:__rand_int__" ;;
    HMGET5) echo "$N_SMALL HMGET h:__rand_int__ $(repeat_arg 5 f:__rand_int__ | tr '\n' ' ')" ;;
    HMGET100) echo "$N_BIG HMGET h:__rand_int__ $(repeat_arg 100 f:__rand_int__ | tr '\n' ' ')" ;;
    SMISMEMBER100) echo "$N_BIG SMISMEMBER s:__rand_int__ $(repeat_arg 100 m:__rand_int__ | tr '\n' ' ')" ;;
    ZMSCORE100) echo "$N_BIG ZMSCORE z:__rand_int__ $(repeat_arg 100 m:__rand_int__ | tr '\n' ' ')" ;;
    HEXISTS) echo "$N_SMALL HEXISTS h:__rand_int__ f:__rand_int__" ;;
    ZRANK) echo "$N_BIG ZRANK z:__rand_int__ m:__rand_int__" ;;
    ZRANGE10) echo "$N_SMALL ZRANGE z:__rand_int__ 0 9" ;;
    ZREVRANGE10) echo "$N_SMALL ZREVRANGE z:__rand_int__ 0 9" ;;
    ZADD) echo "$N_SMALL ZADD z:__rand_int__ 7 n:__rand_int__" ;;
    LINDEX) echo "$N_SMALL LINDEX l:__rand_int__ 500" ;;
    LRANGE10) echo "$N_SMALL LRANGE l:__rand_int__ 0 9" ;;
    SRANDMEMBER) echo "$N_BIG SRANDMEMBER s:__rand_int__" ;;
    HRANDFIELD) echo "$N_BIG HRANDFIELD h:__rand_int__" ;;
    ZRANDMEMBER) echo "$N_BIG ZRANDMEMBER z:__rand_int__" ;;
    ZRANDMEMBER5) echo "$N_BIG ZRANDMEMBER z:__rand_int__ 5 WITHSCORES" ;;
    GET) echo "$N_SMALL GET key:__rand_int__" ;;
    INCR) echo "$N_WRITES INCR counter:__rand_int__" ;;
    APPEND) echo "$N_WRITES APPEND key:__rand_int__ 12345678" ;;
    *) echo "unknown test $1" >&2; exit 1 ;;
    esac
}

# engine_info: the INFO batchkv fields that say where the data is.
engine_info() {
    redis-cli -p "$PORT" INFO batchkv | tr -d '\r' |
        grep -E '^(memtable_entries|files_per_level|block_cache_(hits|misses)):' | paste -sd ' '
}

# total_ir FILE: the instruction count of a callgrind dump.
total_ir() {
    awk '/^(summary|totals):/ { print $2; exit }' "$1"
}

# type_of TEST: the data it uses (h, s, z: collections; k: string keys).
type_of() {
    case $1 in
    GET | INCR | APPEND) echo k ;;
    *) echo "${1:0:1}" | tr '[:upper:]' '[:lower:]' ;;
    esac
}

# load_type: loads the data of type $t.
load_type() {
    if [[ $t == k ]]; then load_keys; else load_collection "$cmd" "$prefix"; fi
}

declare -A BY_TYPE=([h]="hashes HSET h" [s]="sets SADD s" [z]="zsets ZADD z" [l]="lists RPUSH l" [k]="strings SET key")
for t in h s z l k; do
    mine=()
    for test in $TESTS; do
        [[ $(type_of "$test") == "$t" ]] && mine+=("$test")
    done
    ((${#mine[@]})) || continue
    read -r type cmd prefix <<<"${BY_TYPE[$t]}"
    range=$COLL
    if [[ $t == k ]]; then range=$KEYS; fi
    run=$OUT/db-$type
    rm -rf "$run" && mkdir -p "$run"
    base=$OUT/$LABEL-$type
    rm -f "$base".*
    serve=(serve --dir "$run" --port "$PORT" --memtable skiplist --batch "$BATCH")
    if [[ $FLUSH == 1 ]]; then
        "$BIN" "${OPTS[@]}" "${serve[@]}" >"$OUT/$LABEL-$type-load.log" 2>&1 &
        PID=$!
        wait_ready
        load_type
        stop_server
    fi
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$base.%p" \
        "$BIN" "${OPTS[@]}" "${serve[@]}" >"$OUT/$LABEL-$type.log" 2>&1 &
    PID=$!
    wait_ready
    [[ $FLUSH == 1 ]] || load_type
    # Every command is slow under valgrind: the slow log would count
    # work that a native run never does.
    redis-cli -p "$PORT" CONFIG SET slowlog-log-slower-than -1 >/dev/null
    if [[ $FLUSH == 1 ]]; then
        for test in "${mine[@]}"; do
            read -r n args <<<"$(command_of "$test")"
            # Four passes of random reads leave few blocks unread
            # (e^-10 of them for HMGET100 with the defaults).
            # shellcheck disable=SC2086
            redis-benchmark -p "$PORT" -c "$CONNS" -P 10 -r "$range" -n "$((4 * n))" -q $args >/dev/null
        done
        echo "$LABEL $type after warm-up: $(engine_info)"
    fi
    callgrind_control -i on "$PID" >/dev/null
    for test in "${mine[@]}"; do
        read -r n args <<<"$(command_of "$test")"
        for p in $PIPES; do
            # shellcheck disable=SC2086
            redis-benchmark -p "$PORT" -c "$CONNS" -P "$p" -r "$range" -n "$n" -q $args >/dev/null
            callgrind_control --dump="$test-P$p" "$PID" >/dev/null
            mv "$base.$PID".* "$base.$test-P$p"
            ir=$(total_ir "$base.$test-P$p")
            printf '%s %s -c %s -P %s: %s instructions/request (%s requests)\n' \
                "$LABEL" "$test" "$CONNS" "$p" "$((ir / n))" "$n"
        done
    done
    callgrind_control -i off "$PID" >/dev/null
    [[ $FLUSH == 1 ]] && echo "$LABEL $type after the runs: $(engine_info)"
    stop_server
done
