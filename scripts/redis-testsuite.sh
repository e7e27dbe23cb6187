#!/usr/bin/env bash
# Runs Redis's own test suite (the Tcl units of the redis-server release
# Debian packages) against `batchkv serve`, and optionally against
# redis-server itself, in external-server mode, and prints per unit how
# many tests passed and failed.
#
#   scripts/redis-testsuite.sh                  # batchkv, the default units
#   SERVERS="redis batchkv" scripts/redis-testsuite.sh unit/type/hash unit/multi
#
# Needs tclsh and redis-server (scripts/install-redis.sh); fetches the
# source release matching the installed redis-server from Debian's archive
# (the `.orig.tar.gz` of the package) into CACHE. Nothing of it is kept in
# this repository.
#
# Environment:
#   SERVERS   "batchkv" (default), "redis", or both, in the order to run
#   BIN       the batchkv binary (default target/release/batchkv, built if
#             missing)
#   SERVE_ARGS  more arguments for `batchkv serve` (e.g. "--threads 1")
#   CACHE     where the release is unpacked (default /tmp/redis-testsuite)
#   LOGS      where each unit's output goes (default $CACHE/logs)
#   SKIP      tests to skip, `;`-separated: names, or regexps starting with
#             `/` (e.g. SKIP="/^Keyspace notifications" to run the rest of
#             unit/pubsub: those tests wait for events batchkv does not
#             publish, and the unit times out there)
#   ENCODING  "check" to keep the suite's OBJECT ENCODING assertions; by
#             default they are skipped (--ignore-encoding): batchkv
#             reports the encoding Redis would choose, but the suite's
#             tests also shrink Redis's thresholds with CONFIG SET, which
#             batchkv echoes without effect
#
# The harness is used as released but for one change, made in the unpacked
# copy: before each test file it runs `FUNCTION FLUSH`, which batchkv does
# not have (no scripting), so that call's error is ignored. Tests are run
# with --durable (an exception fails its test, not the unit) and without
# the tags an external server cannot serve (DEBUG, replication, SAVE, ...).
set -euo pipefail

cd "$(dirname "$0")/.."
SERVERS=${SERVERS:-batchkv}
CACHE=${CACHE:-/tmp/redis-testsuite}
LOGS=${LOGS:-$CACHE/logs}
BIN=${BIN:-target/release/batchkv}
PORT_REDIS=${PORT_REDIS:-16801}
PORT_BKV=${PORT_BKV:-16802}
if [[ $# -gt 0 ]]; then
    UNITS=("$@")
else
    UNITS=(unit/type/hash unit/type/set unit/type/zset unit/type/list unit/multi unit/pubsub
        unit/type/incr unit/type/string unit/keyspace unit/expire unit/type/list-2
        unit/type/list-3 unit/type/stream unit/type/stream-cgroups unit/hyperloglog unit/geo
        unit/bitops unit/bitfield unit/sort unit/scan unit/protocol unit/info-command
        unit/slowlog unit/introspection unit/other unit/querybuf)
fi

command -v tclsh >/dev/null || { echo "redis-testsuite: tclsh not found" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "redis-testsuite: redis-server not found (scripts/install-redis.sh)" >&2; exit 1; }
version=$(redis-server --version | sed -n 's/.*v=\([0-9.]*\).*/\1/p')
src=$CACHE/redis-$version
if [[ ! -x $src/runtest ]]; then
    mkdir -p "$CACHE"
    url=http://deb.debian.org/debian/pool/main/r/redis/redis_$version.orig.tar.gz
    echo "redis-testsuite: fetching $url"
    curl -fsSL "$url" | tar xz -C "$CACHE"
    sed -i 's/^    r function flush$/    catch {r function flush}/' "$src/tests/support/server.tcl"
fi
grep -q 'catch {r function flush}' "$src/tests/support/server.tcl" || {
    echo "redis-testsuite: the harness's FUNCTION FLUSH call was not found to patch" >&2
    exit 1
}
mkdir -p "$LOGS"

dir=$(mktemp -d)
PID=
cleanup() {
    if [[ -n $PID ]]; then kill -TERM "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
    rm -rf "$dir"
}
trap cleanup EXIT

start() { # start NAME PORT
    rm -rf "${dir:?}"/*
    case $1 in
    redis) redis-server --port "$2" --dir "$dir" --save "" --appendonly no >"$dir/log" 2>&1 & ;;
    batchkv)
        [[ -x $BIN ]] || cargo build --release -p batchkv-cli
        # shellcheck disable=SC2086
        "$BIN" serve --dir "$dir/db" --port "$2" ${SERVE_ARGS:-} >"$dir/log" 2>&1 &
        ;;
    *) echo "unknown server $1" >&2; exit 1 ;;
    esac
    PID=$!
    for _ in $(seq 1 100); do
        redis-cli -p "$2" PING >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "redis-testsuite: $1 did not start" >&2
    exit 1
}

tags="-needs:debug -needs:repl -needs:save -needs:config-maxmemory -needs:latency"
tags+=" -needs:other-server -needs:reset -needs:pfdebug -needs:load"
encoding=--ignore-encoding
[[ ${ENCODING:-} == check ]] && encoding=
skips=()
IFS=';' read -r -a patterns <<<"${SKIP:-}"
for p in "${patterns[@]}"; do
    [[ -n $p ]] && skips+=(--skiptest "$p")
done
for server in $SERVERS; do
    port=$PORT_BKV
    [[ $server == redis ]] && port=$PORT_REDIS
    start "$server" "$port"
    total_ok=0 total_err=0
    printf '%-28s %6s %6s  (%s)\n' unit passed failed "$server"
    for u in "${UNITS[@]}"; do
        log=$LOGS/$server-${u//\//_}.log
        (cd "$src" && ./runtest --host 127.0.0.1 --port "$port" --single "$u" --timeout 120 \
            --durable $encoding --tags "$tags" "${skips[@]}") >"$log" 2>&1 || true
        # Each test prints one `[ok]: ` or `[err]: ` line as it ends (the
        # summary repeats failures after `*** `); a unit that stopped
        # (timeout, exception outside a test) counts what ran.
        ok=$(grep -c '^\[[^]]*ok[^]]*\]: ' "$log" || true)
        err=$(grep -c '^\[[^]]*\(err\|exception\)[^]]*\]: ' "$log" || true)
        grep -q 'TIMEOUT' "$log" && err="$err+timeout"
        printf '%-28s %6s %6s\n' "$u" "$ok" "$err"
        total_ok=$((total_ok + ok))
        total_err=$((total_err + ${err%%+*}))
    done
    printf '%-28s %6s %6s\n' total "$total_ok" "$total_err"
    kill -TERM "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
    PID=
done
echo "logs: $LOGS"
