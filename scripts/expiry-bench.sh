#!/usr/bin/env bash
# How long `batchkv serve`'s active expiry takes to delete a mass of
# expired keys, and the server CPU it spends meanwhile.
#
#   scripts/expiry-bench.sh [BIN] [N]
#
# Loads N keys `ttl:%012d` with PX 3000 (and, unless MIX=0, N keys
# `key:%012d` without expiry, which sort before them) through
# `redis-cli --pipe`, then polls INFO stats until expired_keys reaches N.
# BIN defaults to this tree's release build, N to 200000; SERVE_ARGS adds
# flags to `batchkv serve` (e.g. "--appendfsync always"). Needs redis-cli.
set -euo pipefail
B=${1:-target/release/batchkv}
N=${2:-200000}
MIX=${MIX:-1}
P=${PORT:-16600}
DIR=$(mktemp -d)
trap 'redis-cli -p $P SHUTDOWN NOSAVE >/dev/null 2>&1 || true; rm -rf "$DIR"' EXIT
"$B" serve --dir "$DIR" --port "$P" ${SERVE_ARGS:-} >/dev/null 2>&1 &
SP=$!
sleep 0.5
awk -v n="$N" -v mix="$MIX" 'BEGIN { for (i = 0; i < n; i++) {
    printf "*5\r\n$3\r\nSET\r\n$16\r\nttl:%012d\r\n$5\r\nvalue\r\n$2\r\nPX\r\n$4\r\n3000\r\n", i
    if (mix) printf "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$5\r\nvalue\r\n", i } }' |
    redis-cli -p "$P" --pipe >/dev/null
cpu() { awk '{ print $14 + $15 }' /proc/$SP/stat; }
t0=$(date +%s.%N); c0=$(cpu)
while :; do
    e=$(redis-cli -p "$P" INFO stats | tr -d '\r' | awk -F: '/^expired_keys/ { print $2 }')
    [ "$e" -ge "$N" ] && break
    sleep 0.2
done
t1=$(date +%s.%N); c1=$(cpu)
echo "$(basename "$B"): $N keys with PX 3000 among $(( N * (1 + MIX) )): all deleted" \
    "$(echo "$t1 - $t0" | bc) s after the load ended; server CPU $(( (c1 - c0) * 10 )) ms"
