#!/usr/bin/env bash
# redis-benchmark against `batchkv serve` (skiplist and sorted_hash memtables,
# batching on and --batch off) and a stock redis-server, in one run.
#
# For each server: load KEYS keys (key:000000000000 ... with VALUE-byte
# values) through `redis-cli --pipe`, then run redis-benchmark for GET, SET
# and MGET of 100 random keys at -c 1/50 and -P 1/10. Prints requests/s
# per server and the ratios the issue asks for:
#   batchkv / redis-server, and batching on / --batch off.
# MGET rows also give keys/s (100 keys per request).
#
# Collection tests (each loads its own data set: COLL collections of COLL
# elements, 12-digit names as redis-benchmark's __rand_int__ makes them,
# and runs with -r COLL so both the key and the elements hit):
#   HGET, HMGET5, HMGET100, HSET       hashes h:N with fields f:N
#   SMISMEMBER100, SADD                sets s:N with members m:N
#   ZMSCORE100, ZADD                   sorted sets z:N with members m:N
#   GEODIST                            two members of z:N (their scores as cells)
#   LPUSH, LPOP                        lists l:N (LPOP after LPUSH refills)
# and reads of one element or a few (their collections loaded the same
# way; lists l:N of elements m:N for the list reads):
#   HEXISTS, HLEN, SISMEMBER, ZSCORE, ZRANK, LINDEX (index 500),
#   LRANGE10 (LRANGE 0 9), ZRANGE10 (ZRANGE 0 9), ZREVRANGE10
#   (ZREVRANGE 0 9), and random picks:
#   SRANDMEMBER, HRANDFIELD, ZRANDMEMBER (one element), ZRANDMEMBER5
#   (ZRANDMEMBER 5 WITHSCORES)
# HyperLogLogs (nothing loaded: run PFADD first, the others read what it
# left): PFADD (an element e:N to p:N), PFCOUNT (one key: mostly its
# cached count), PFCOUNT3 (the union of three, computed each time).
# BITFIELD (INCRBY u8 at bit 100 and GET i16 of b:N, made by the first
# INCRBY) and BITFIELD_RO (two GETs; run BITFIELD first).
# Streams (nothing loaded: run XADD first, the others read what it left):
# XADD (an entry of one VALUE-byte field to x:N, clock ID), XADDTRIM (the
# same with MAXLEN ~ 100: whole nodes trimmed once a stream holds 200), XLEN,
# XRANGE10 (XRANGE x:N - + COUNT 10), XREAD10 (XREAD COUNT 10 STREAMS x:N 0).
# Consumer groups (run XADD first: each stream gets a group g whose
# consumer c was delivered every entry): XREADGROUP10 (c's history, COUNT
# 10: ten pending entries delivered again), XPENDING (the summary).
# String write tests over the KEYS loaded keys (-r KEYS): MSET10 (MSET of
# 10 random keys), INCR (counter:N beside them), APPEND (8 bytes to key:N).
# String and key reads over them: STRLEN, GETRANGE10 (GETRANGE 0 9), GETBIT
# (bit 100), BITCOUNT (the whole value), EXISTS (one key), EXISTS10 (ten),
# TYPE, TTL.
#
# Environment (defaults in brackets):
#   KEYS [1000000]       keys loaded and the -r range of the benchmarks
#   VALUE [100]          value size in bytes
#   SECS_N [200000]      requests per run with -P 10 (and -c 50)
#   N_SLOW [40000]       requests per run with -c 1 -P 1
#   MGET_DIV [10]        MGET runs use N/MGET_DIV requests
#   APPENDFSYNC [everysec]
#   SETTLE [60]          after each load, seconds to wait at most for the
#                        server to go idle (its flushes and compactions)
#   SERVERS ["redis bkv-skiplist bkv-skiplist-nobatch bkv-sorted_hash bkv-sorted_hash-nobatch"]
#                        a batchkv server name may end in @LABEL to run the
#                        binary in $BIN_LABEL instead of this tree's build,
#                        for A/B runs: BIN_base=/tmp/batchkv-old
#                        SERVERS="bkv-skiplist@base bkv-skiplist"
#   BATCHKV_OPTIONS [""] extra engine options for batchkv serve (--options);
#                        BATCHKV_OPTIONS_LABEL, if set, replaces them for the
#                        servers named @LABEL
#   TESTS ["GET MGET100 SET"]  tests to run (a subset for quick re-measurements)
#   COLL [1000]          collections per type, and elements per collection
#   CONNS ["1 50"]       redis-benchmark -c values
#   PIPES ["1 10"]       redis-benchmark -P values
#   REPEAT [1]           runs of the whole server list (alternating A B C A B C);
#                        the table shows medians
#   OUT [/tmp/redis-bench]  work directory (databases, logs, results.csv,
#                        chart.svg)
#   PORT [16379]         port the servers listen on
#
# For batchkv servers with batching on it also prints the keys per
# `multi_get` of each run (INFO read_batched_keys / read_batches, counted
# over that run only; medians in batches.csv), and for every server the
# server's CPU time per request over each run (utime + stime from
# /proc/PID/stat, 10 ms ticks; medians in cpu.csv) and its threads'
# context switches per request (voluntary + involuntary, from
# /proc/PID/task/*/status; medians in switches.csv): a server that parks
# and wakes worker threads per request pays for it in CPU.
set -euo pipefail

KEYS=${KEYS:-1000000}
VALUE=${VALUE:-100}
N_FAST=${SECS_N:-200000}
N_SLOW=${N_SLOW:-40000}
MGET_DIV=${MGET_DIV:-10}
APPENDFSYNC=${APPENDFSYNC:-everysec}
SETTLE=${SETTLE:-60}
SERVERS=${SERVERS:-"redis bkv-skiplist bkv-skiplist-nobatch bkv-sorted_hash bkv-sorted_hash-nobatch"}
BATCHKV_OPTIONS=${BATCHKV_OPTIONS:-}
OUT=${OUT:-/tmp/redis-bench}
PORT=${PORT:-16379}
REPEAT=${REPEAT:-1}
TESTS=${TESTS:-"GET MGET100 SET"}
COLL=${COLL:-1000}
CONNS=${CONNS:-"1 50"}
PIPES=${PIPES:-"1 10"}

cd "$(dirname "$0")/.."
if ! command -v redis-benchmark >/dev/null || ! command -v redis-server >/dev/null; then
    echo "installing redis-tools and redis-server (Debian)" >&2
    apt-get install -y redis-tools redis-server >&2 || {
        apt-get update && apt-get install -y redis-tools redis-server >&2
    }
fi
nice -n 10 cargo build --release -p batchkv-cli >&2
BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/batchkv

mkdir -p "$OUT"
RESULTS=$OUT/results.csv
BATCHES=$OUT/batches-raw.csv
CPU=$OUT/cpu-raw.csv
SWITCHES=$OUT/switches-raw.csv
: >"$RESULTS"
: >"$BATCHES"
: >"$CPU"
: >"$SWITCHES"
TICK_US=$((1000000 / $(getconf CLK_TCK)))
PID=
# stop_server, wait_ready, load_keys, load_collection, repeat_arg
source scripts/redis-common.sh
trap stop_server EXIT

start_server() {
    local name=$1
    rm -rf "$OUT/db-$name"
    mkdir -p "$OUT/db-$name"
    case $name in
    redis)
        redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly yes \
            --appendfsync "$APPENDFSYNC" --dir "$OUT/db-$name" \
            >"$OUT/$name.log" 2>&1 &
        ;;
    bkv-*)
        local rest=${name#bkv-} batch=on bin=$BIN options=$BATCHKV_OPTIONS
        if [[ $rest == *@* ]]; then
            local label=${rest##*@}
            local var=BIN_$label ovar=BATCHKV_OPTIONS_$label
            bin=${!var:?"$name needs \$$var"}
            options=${!ovar-$options}
            rest=${rest%@*}
        fi
        if [[ $rest == *-nobatch ]]; then
            batch=off
            rest=${rest%-nobatch}
        fi
        local opts=()
        [[ -n $options ]] && opts=(--options "$options")
        "$bin" "${opts[@]}" serve --dir "$OUT/db-$name" --port "$PORT" \
            --memtable "$rest" --batch "$batch" --appendfsync "$APPENDFSYNC" \
            >"$OUT/$name.log" 2>&1 &
        ;;
    esac
    PID=$!
    wait_ready
}

# load_for TEST: loads the data TEST reads, once per server start.
LOADED=
load_for() {
    local what
    case $1 in
    GET | MGET100 | SET | MSET10 | INCR | APPEND) what=strings ;;
    STRLEN | GETRANGE10 | GETBIT | BITCOUNT | EXISTS | EXISTS10 | TYPE | TTL) what=strings ;;
    H*) what=hashes ;;
    S*) what=sets ;;
    Z* | GEO*) what=zsets ;;
    LINDEX | LRANGE10) what=lists ;;
    XREADGROUP10 | XPENDING) what=groups ;;
    *) what=none ;;
    esac
    [[ " $LOADED " == *" $what "* ]] && return
    local t0
    t0=$(date +%s)
    case $what in
    strings) load_keys ;;
    hashes) load_collection HSET h ;;
    sets) load_collection SADD s ;;
    zsets) load_collection ZADD z ;;
    lists) load_collection RPUSH l ;;
    groups) load_groups ;;
    none) return ;;
    esac
    LOADED="$LOADED $what"
    echo "  loaded $what in $(($(date +%s) - t0)) s" >&2
    settle
}

# settle: waits (up to SETTLE seconds) until the server has used at most
# 2 clock ticks of CPU in a second, so that the flushes and compactions a
# load leaves behind neither run during the first test nor count as its
# CPU.
settle() {
    local t0 a b
    t0=$(date +%s)
    a=$(cpu_ticks)
    while (($(date +%s) - t0 < SETTLE)); do
        sleep 1
        b=$(cpu_ticks)
        if ((b - a <= 2)); then
            echo "  settled after $(($(date +%s) - t0)) s" >&2
            return
        fi
        a=$b
    done
    echo "  still busy after $SETTLE s; measuring anyway" >&2
}

# batch_counts: "read_batches read_batched_keys" from INFO (0 0 if absent).
batch_counts() {
    redis-cli -p "$PORT" INFO batchkv | tr -d '\r' | awk -F: '
        $1 == "read_batches" { b = $2 } $1 == "read_batched_keys" { k = $2 }
        END { print b + 0, k + 0 }'
}

# cpu_ticks: the server's user + system CPU time so far, in clock ticks.
cpu_ticks() {
    awk '{ print $14 + $15 }' "/proc/$PID/stat"
}

# context_switches: the server's threads' context switches so far.
context_switches() {
    cat /proc/"$PID"/task/*/status 2>/dev/null |
        awk '/^(voluntary|nonvoluntary)_ctxt_switches:/ { s += $2 } END { print s + 0 }'
}

# bench NAME TEST C P: appends "server,test,c,p,rps" to results.csv
# (and, for batchkv with batching, "server,test,c,p,keys_per_batch" to
# batches-raw.csv)
bench() {
    local server=$1 test=$2 c=$3 p=$4 n b0 k0 b1 k1 t0 t1 s0 s1 reqs
    read -r b0 k0 < <(batch_counts)
    s0=$(context_switches)
    t0=$(cpu_ticks)
    if [[ $c == 1 && $p == 1 ]]; then n=$N_SLOW; else n=$N_FAST; fi
    local args=(-p "$PORT" -c "$c" -P "$p" -r "$KEYS" --csv)
    local rps
    case $test in
    GET | SET)
        rps=$(redis-benchmark "${args[@]}" -n "$n" -d "$VALUE" -t "${test,,}" |
            awk -F'"' 'NR == 2 { print $4 }')
        ;;
    MSET10 | INCR | APPEND | STRLEN | GETRANGE10 | GETBIT | BITCOUNT | EXISTS | EXISTS10 | TYPE | TTL)
        # Over the loaded string keys (-r KEYS): MSET of 10 of them, INCR
        # of counters beside them, APPEND of 8 bytes to them; reads of them.
        local cmd=()
        case $test in
        MSET10) cmd=(MSET); for _ in $(seq 1 10); do cmd+=(key:__rand_int__ "$(head -c "$VALUE" </dev/zero | tr '\0' x)"); done ;;
        INCR) cmd=(INCR counter:__rand_int__) ;;
        APPEND) cmd=(APPEND key:__rand_int__ 12345678) ;;
        STRLEN) cmd=(STRLEN key:__rand_int__) ;;
        GETRANGE10) cmd=(GETRANGE key:__rand_int__ 0 9) ;;
        GETBIT) cmd=(GETBIT key:__rand_int__ 100) ;;
        BITCOUNT) cmd=(BITCOUNT key:__rand_int__) ;;
        EXISTS) cmd=(EXISTS key:__rand_int__) ;;
        EXISTS10) cmd=(EXISTS $(repeat_arg 10 key:__rand_int__)) ;;
        TYPE) cmd=(TYPE key:__rand_int__) ;;
        TTL) cmd=(TTL key:__rand_int__) ;;
        esac
        rps=$(redis-benchmark "${args[@]}" -n "$n" "${cmd[@]}" |
            awk -F'"' 'NR == 2 { print $4 }')
        ;;
    MGET100)
        local mget=(MGET)
        for _ in $(seq 1 100); do mget+=(key:__rand_int__); done
        rps=$(redis-benchmark "${args[@]}" -n $((n / MGET_DIV)) "${mget[@]}" |
            awk -F'"' 'NR == 2 { print $4 }')
        ;;
    *)
        local cmd=() many=1
        case $test in
        HGET) cmd=(HGET h:__rand_int__ f:__rand_int__) ;;
        HMGET5) cmd=(HMGET h:__rand_int__ $(repeat_arg 5 f:__rand_int__)) ;;
        HMGET100) cmd=(HMGET h:__rand_int__ $(repeat_arg 100 f:__rand_int__)) many=$MGET_DIV ;;
        HEXISTS) cmd=(HEXISTS h:__rand_int__ f:__rand_int__) ;;
        HLEN) cmd=(HLEN h:__rand_int__) ;;
        SISMEMBER) cmd=(SISMEMBER s:__rand_int__ m:__rand_int__) ;;
        ZSCORE) cmd=(ZSCORE z:__rand_int__ m:__rand_int__) ;;
        ZRANK) cmd=(ZRANK z:__rand_int__ m:__rand_int__) ;;
        ZRANGE10) cmd=(ZRANGE z:__rand_int__ 0 9) ;;
        ZREVRANGE10) cmd=(ZREVRANGE z:__rand_int__ 0 9) ;;
        LINDEX) cmd=(LINDEX l:__rand_int__ 500) ;;
        LRANGE10) cmd=(LRANGE l:__rand_int__ 0 9) ;;
        SRANDMEMBER) cmd=(SRANDMEMBER s:__rand_int__) ;;
        HRANDFIELD) cmd=(HRANDFIELD h:__rand_int__) ;;
        ZRANDMEMBER) cmd=(ZRANDMEMBER z:__rand_int__) ;;
        ZRANDMEMBER5) cmd=(ZRANDMEMBER z:__rand_int__ 5 WITHSCORES) ;;
        GEODIST) cmd=(GEODIST z:__rand_int__ m:__rand_int__ m:__rand_int__ km) ;;
        HSET) cmd=(HSET h:__rand_int__ f:__rand_int__ "$(head -c "$VALUE" </dev/zero | tr '\0' y)") ;;
        SMISMEMBER100) cmd=(SMISMEMBER s:__rand_int__ $(repeat_arg 100 m:__rand_int__)) many=$MGET_DIV ;;
        SADD) cmd=(SADD s:__rand_int__ n:__rand_int__) ;;
        ZMSCORE100) cmd=(ZMSCORE z:__rand_int__ $(repeat_arg 100 m:__rand_int__)) many=$MGET_DIV ;;
        ZADD) cmd=(ZADD z:__rand_int__ 7 n:__rand_int__) ;;
        LPUSH) cmd=(LPUSH l:__rand_int__ "$(head -c "$VALUE" </dev/zero | tr '\0' y)") ;;
        LPOP) cmd=(LPOP l:__rand_int__) ;;
        PFADD) cmd=(PFADD p:__rand_int__ e:__rand_int__) ;;
        PFCOUNT) cmd=(PFCOUNT p:__rand_int__) ;;
        PFCOUNT3) cmd=(PFCOUNT p:__rand_int__ p:__rand_int__ p:__rand_int__) ;;
        BITFIELD) cmd=(BITFIELD b:__rand_int__ INCRBY u8 100 1 GET i16 40) ;;
        BITFIELD_RO) cmd=(BITFIELD_RO b:__rand_int__ GET u8 100 GET i16 40) ;;
        XADD) cmd=(XADD x:__rand_int__ '*' f "$(head -c "$VALUE" </dev/zero | tr '\0' y)") ;;
        XADDTRIM) cmd=(XADD x:__rand_int__ MAXLEN '~' 100 '*' f "$(head -c "$VALUE" </dev/zero | tr '\0' y)") ;;
        XLEN) cmd=(XLEN x:__rand_int__) ;;
        XRANGE10) cmd=(XRANGE x:__rand_int__ - + COUNT 10) ;;
        XREAD10) cmd=(XREAD COUNT 10 STREAMS x:__rand_int__ 0) ;;
        XREADGROUP10) cmd=(XREADGROUP GROUP g c COUNT 10 STREAMS x:__rand_int__ 0) ;;
        XPENDING) cmd=(XPENDING x:__rand_int__ g) ;;
        *) echo "unknown test $test" >&2; exit 1 ;;
        esac
        args=(-p "$PORT" -c "$c" -P "$p" -r "$COLL" --csv)
        n=$((n / many))
        rps=$(redis-benchmark "${args[@]}" -n "$n" "${cmd[@]}" |
            awk -F'"' 'NR == 2 { print $4 }')
        ;;
    esac
    t1=$(cpu_ticks)
    s1=$(context_switches)
    echo "$server,$test,$c,$p,$rps" >>"$RESULTS"
    if [[ $test == MGET100 ]]; then reqs=$((n / MGET_DIV)); else reqs=$n; fi
    local cpu
    cpu=$(awk -v t=$((t1 - t0)) -v us="$TICK_US" -v r="$reqs" 'BEGIN { printf "%.1f", t * us / r }')
    echo "$server,$test,$c,$p,$cpu" >>"$CPU"
    local csw
    csw=$(awk -v s=$((s1 - s0)) -v r="$reqs" 'BEGIN { printf "%.3f", s / r }')
    echo "$server,$test,$c,$p,$csw" >>"$SWITCHES"
    read -r b1 k1 < <(batch_counts)
    local kpb=
    if ((b1 > b0)); then
        kpb=$(awk -v b=$((b1 - b0)) -v k=$((k1 - k0)) 'BEGIN { printf "%.2f", k / b }')
        echo "$server,$test,$c,$p,$kpb" >>"$BATCHES"
        kpb="  $kpb keys/multi_get"
    fi
    printf '%-26s %-8s -c %-3s -P %-3s %12s req/s  %8s us CPU/req  %6s switches/req%s\n' \
        "$server" "$test" "$c" "$p" "$rps" "$cpu" "$csw" "$kpb" >&2
}

for _ in $(seq 1 "$REPEAT"); do
    for server in $SERVERS; do
        start_server "$server"
        LOADED=
        echo "$server:" >&2
        for test in $TESTS; do
            load_for "$test"
            for c in $CONNS; do
                for p in $PIPES; do
                    bench "$server" "$test" "$c" "$p"
                done
            done
        done
        stop_server
    done
done

# Medians over the repetitions of "server,test,c,p,value" lines.
medians() {
    awk -F, '
{ k = $1 "," $2 "," $3 "," $4; v[k] = v[k] " " $5; if (!(k in seen)) { seen[k] = 1; order[++n] = k } }
END {
    for (i = 1; i <= n; i++) {
        m = split(substr(v[order[i]], 2), a, " ")
        for (x = 2; x <= m; x++) { t = a[x]; y = x - 1; while (y > 0 && a[y] + 0 > t + 0) { a[y + 1] = a[y]; y-- } a[y + 1] = t }
        med = (m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2)
        print order[i] "," med
    }
}' "$1"
}
medians "$RESULTS" >"$OUT/medians.csv"
medians "$BATCHES" >"$OUT/batches.csv"
medians "$CPU" >"$OUT/cpu.csv"
medians "$SWITCHES" >"$OUT/switches.csv"
if [[ -s $OUT/cpu.csv ]]; then
    printf '\nserver CPU per request (us; /proc utime + stime over the run), median of %d\n\n' "$REPEAT"
    printf '| server | test | -c | -P | us/request |\n|---|---|---|---|---|\n'
    awk -F, '{ printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5 }' "$OUT/cpu.csv"
fi
if [[ -s $OUT/switches.csv ]]; then
    printf '\nserver threads'"'"' context switches per request (/proc task status over the run), median of %d\n\n' "$REPEAT"
    printf '| server | test | -c | -P | switches/request |\n|---|---|---|---|---|\n'
    awk -F, '{ printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5 }' "$OUT/switches.csv"
fi
if [[ -s $OUT/batches.csv ]]; then
    printf '\nkeys per multi_get (INFO, per run), median of %d\n\n' "$REPEAT"
    printf '| server | test | -c | -P | keys/multi_get |\n|---|---|---|---|---|\n'
    awk -F, '{ printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5 }' "$OUT/batches.csv"
fi

# Table: one row per (test, c, P), one column per server, then ratios.
awk -F, -v servers="$SERVERS" -v keys="$KEYS" -v repeat="$REPEAT" '
{ rps[$2 "," $3 "," $4, $1] = $5; if (!(($2 "," $3 "," $4) in seen)) { seen[$2 "," $3 "," $4] = 1; order[++n] = $2 "," $3 "," $4 } }
END {
    ns = split(servers, s, " ")
    printf "\nrequests/s, median of %d (MGET100: requests of 100 keys; keys/s = 100x), %d keys\n\n", repeat, keys
    printf "| test | -c | -P |"
    for (j = 1; j <= ns; j++) printf " %s |", s[j]
    hr = 0; for (j = 1; j <= ns; j++) if (s[j] == "redis") hr = 1
    if (hr) for (j = 1; j <= ns; j++) if (s[j] != "redis") printf " %s/redis |", s[j]
    for (j = 1; j <= ns; j++) { nb = s[j] "-nobatch"; for (k = 1; k <= ns; k++) if (s[k] == nb) printf " %s on/off |", s[j] }
    printf "\n|---|---|---|"
    for (j = 1; j <= ns; j++) printf "---|"
    if (hr) for (j = 1; j <= ns; j++) if (s[j] != "redis") printf "---|"
    for (j = 1; j <= ns; j++) { nb = s[j] "-nobatch"; for (k = 1; k <= ns; k++) if (s[k] == nb) printf "---|" }
    printf "\n"
    for (i = 1; i <= n; i++) {
        split(order[i], f, ",")
        printf "| %s | %s | %s |", f[1], f[2], f[3]
        for (j = 1; j <= ns; j++) printf " %.0f |", rps[order[i], s[j]]
        if (hr) for (j = 1; j <= ns; j++) if (s[j] != "redis") {
            r = rps[order[i], "redis"]; printf " %.2f |", (r > 0 ? rps[order[i], s[j]] / r : 0)
        }
        for (j = 1; j <= ns; j++) { nb = s[j] "-nobatch"; for (k = 1; k <= ns; k++) if (s[k] == nb) {
            r = rps[order[i], nb]; printf " %.2f |", (r > 0 ? rps[order[i], s[j]] / r : 0)
        } }
        printf "\n"
    }
}' "$OUT/medians.csv"

# Chart: one group of bars per (test, -c, -P), scaled to its fastest server.
awk -F, -v servers="$SERVERS" -v title="redis-benchmark req/s, $KEYS keys, median of $REPEAT (bars scaled per group)" '
BEGIN { ns = split(servers, s, " "); split("#d62728 #1f77b4 #aec7e8 #2ca02c #98df8a #9467bd #c5b0d5", col, " ") }
{
    row = $2 " -c " $3 " -P " $4
    if (!(row in seen)) { seen[row] = 1; order[++n] = row }
    rps[row, $1] = $5
    if ($5 + 0 > max[row]) max[row] = $5 + 0
}
END {
    bar = 11; gap = 14; left = 150; width = 520
    gh = ns * bar + gap
    h = 40 + ns * 16 + n * gh + 20
    printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"11\">\n", left + width + 110, h
    printf "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
    printf "<text x=\"10\" y=\"18\" font-size=\"13\">%s</text>\n", title
    for (j = 1; j <= ns; j++) {
        y = 30 + (j - 1) * 16
        printf "<rect x=\"10\" y=\"%d\" width=\"12\" height=\"10\" fill=\"%s\"/><text x=\"28\" y=\"%d\">%s</text>\n", y, col[j], y + 9, s[j]
    }
    y0 = 40 + ns * 16
    for (i = 1; i <= n; i++) {
        r = order[i]; y = y0 + (i - 1) * gh
        printf "<text x=\"10\" y=\"%d\">%s</text>\n", y + ns * bar / 2 + 4, r
        for (j = 1; j <= ns; j++) {
            v = rps[r, s[j]] + 0; w = (max[r] > 0 ? v / max[r] * width : 0)
            printf "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>", left, y + (j - 1) * bar, w, bar - 2, col[j]
            printf "<text x=\"%.1f\" y=\"%d\" font-size=\"9\">%.0f</text>\n", left + w + 4, y + (j - 1) * bar + 8, v
        }
    }
    print "</svg>"
}' "$OUT/medians.csv" >"$OUT/chart.svg"
echo "raw results: $RESULTS, medians: $OUT/medians.csv, chart: $OUT/chart.svg" >&2
