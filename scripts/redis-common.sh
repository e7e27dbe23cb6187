# Shell functions shared by scripts/redis-bench.sh and
# scripts/redis-callgrind.sh (sourced, not run). They use PORT (the
# server's port), PID (the server's process, empty when none), KEYS
# (string keys to load), COLL and VALUE (collections to load, their size
# and value length), and
# READY_TRIES (tenths of a second to wait for a server, default 100).

# stop_server: stops the server in PID gracefully (SIGTERM) and waits.
stop_server() {
    if [[ -n $PID ]]; then
        kill -TERM "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
        PID=
    fi
}

# wait_ready: waits until the server on PORT answers PING.
wait_ready() {
    for _ in $(seq 1 "${READY_TRIES:-100}"); do
        if redis-cli -p "$PORT" PING >/dev/null 2>&1; then return 0; fi
        sleep 0.1
    done
    echo "server on port $PORT did not start" >&2
    exit 1
}

# load_keys: KEYS string keys key:N with VALUE-byte values.
load_keys() {
    local val
    val=$(head -c "$VALUE" </dev/zero | tr '\0' 'x')
    awk -v n="$KEYS" -v val="$val" -v vl="$VALUE" 'BEGIN {
        for (i = 0; i < n; i++)
            printf "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$%d\r\n%s\r\n", i, vl, val
    }' | redis-cli -p "$PORT" --pipe >/dev/null
}

# load_collection CMD PREFIX: COLL collections PREFIX:N, each with COLL
# elements m:N / f:N (hashes: VALUE-byte values; sorted sets: score N;
# lists (RPUSH): m:0 first).
load_collection() {
    local cmd=$1 prefix=$2 val
    val=$(head -c "$VALUE" </dev/zero | tr '\0' 'x')
    awk -v n="$COLL" -v cmd="$cmd" -v p="$prefix" -v val="$val" -v vl="$VALUE" 'BEGIN {
        per = (cmd == "SADD" || cmd == "RPUSH") ? 1 : 2
        for (i = 0; i < n; i++) {
            printf "*%d\r\n$%d\r\n%s\r\n$%d\r\n%s:%012d\r\n", 2 + per * n, length(cmd), cmd, length(p) + 13, p, i
            for (j = 0; j < n; j++) {
                if (cmd == "HSET") printf "$14\r\nf:%012d\r\n$%d\r\n%s\r\n", j, vl, val
                else if (cmd == "SADD" || cmd == "RPUSH") printf "$14\r\nm:%012d\r\n", j
                else printf "$%d\r\n%d\r\n$14\r\nm:%012d\r\n", length(j ""), j, j
            }
        }
    }' | redis-cli -p "$PORT" --pipe >/dev/null
}

# load_groups: a consumer group g on each stream x:N (N < COLL, made
# empty where XADD did not), and every entry delivered to consumer c, so
# that each is pending: what XREADGROUP's history reads and XPENDING see.
load_groups() {
    awk -v n="$COLL" 'BEGIN {
        for (i = 0; i < n; i++) {
            printf "*6\r\n$6\r\nXGROUP\r\n$6\r\nCREATE\r\n$14\r\nx:%012d\r\n$1\r\ng\r\n$1\r\n0\r\n$8\r\nMKSTREAM\r\n", i
            printf "*7\r\n$10\r\nXREADGROUP\r\n$5\r\nGROUP\r\n$1\r\ng\r\n$1\r\nc\r\n$7\r\nSTREAMS\r\n$14\r\nx:%012d\r\n$1\r\n>\r\n", i
        }
    }' | redis-cli -p "$PORT" --pipe >/dev/null
}

# repeat_arg N WORD: N copies of WORD.
repeat_arg() {
    for _ in $(seq 1 "$1"); do printf '%s\n' "$2"; done
}
