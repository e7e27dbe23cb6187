#!/usr/bin/env bash
# GEO and SORT request rates and server CPU per request, redis-server
# against `batchkv serve` (this tree's release build), alternated, three
# rounds: 10,000 members placed at random in Sicily (GEOADD g lon lat mN)
# and a list of 100 random integers, then redis-benchmark -c 50 -P 1|10
# -n 50000 of GEOSEARCH (radius, COUNT 10; box), GEOPOS of 3, GEODIST and
# SORT ... LIMIT 0 10. Prints CSV: round,server,test,P,req/s,CPU us/req
# (docs/perf/history/2026-12-01-new-types-vs-redis.md).
# Environment: BIN [target/release/batchkv], PORT [16520], ROUNDS [3].
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/batchkv}
PORT=${PORT:-16520}
ROUNDS=${ROUNDS:-3}
DB=$(mktemp -d)
trap 'rm -rf "$DB"' EXIT
TICK_US=$((1000000 / $(getconf CLK_TCK)))
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
load() {
  python3 - <<'PY' | redis-cli -p $PORT --pipe >/dev/null
import random
random.seed(1)
def cmd(*a):
    out="*%d\r\n"%len(a)
    for x in a:
        x=str(x); out+="$%d\r\n%s\r\n"%(len(x.encode()),x)
    return out
s=[]
for i in range(10000):
    s.append(cmd("GEOADD","g",round(random.uniform(12,16),6),round(random.uniform(36.5,39),6),"m%d"%i))
s.append(cmd("RPUSH","l",*[random.randint(0,100000) for _ in range(100)]))
print("".join(s),end="")
PY
}
for round in $(seq 1 "$ROUNDS"); do
for server in redis bkv; do
  rm -rf "$DB/db"; mkdir -p "$DB/db"
  if [[ $server == redis ]]; then
    redis-server --port $PORT --save "" --appendonly yes --appendfsync everysec --dir "$DB/db" >/dev/null 2>&1 & pid=$!
  else
    $BIN serve --dir "$DB/db" --port $PORT --appendfsync everysec >/dev/null 2>&1 & pid=$!
  fi
  for _ in $(seq 50); do redis-cli -p $PORT ping >/dev/null 2>&1 && break; sleep 0.1; done
  load
  for t in "GEOSEARCH10:GEOSEARCH g FROMLONLAT 14 37.7 BYRADIUS 10 km ASC COUNT 10" "GEOSEARCHBOX:GEOSEARCH g FROMMEMBER m1 BYBOX 20 20 km" "GEOPOS3:GEOPOS g m1 m2 m3" "GEODIST:GEODIST g m1 m2 km" "SORT100:SORT l LIMIT 0 10"; do
    name=${t%%:*}; c=${t#*:}
    for p in 1 10; do
      t0=$(cpu $pid)
      rps=$(redis-benchmark -p $PORT -c 50 -P $p -n 50000 --csv $c | awk -F'"' 'NR==2{print $4}')
      t1=$(cpu $pid)
      echo "$round,$server,$name,$p,$rps,$(awk -v t=$((t1-t0)) -v us=$TICK_US 'BEGIN{printf "%.1f", t*us/50000}')"
    done
  done
  redis-cli -p $PORT shutdown nosave >/dev/null 2>&1 || kill $pid; wait $pid 2>/dev/null || true
done
done
