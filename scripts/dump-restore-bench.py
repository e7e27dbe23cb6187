#!/usr/bin/env python3
"""DUMP and RESTORE rates and server CPU of one stream with a consumer group.

Builds `sd`: ENTRIES entries (`field value-N n N`, IDs 1-0, 2-0, ...), a
group `g` whose consumers alice and bob were delivered 300 and 200 of them
(pending). Then ROUNDS times 50 pipelined `DUMP sd`, and ROUNDS times 50
pipelined `RESTORE sd2 0 <payload> REPLACE`, printing requests/s and the
server's CPU per request (utime + stime of PID from /proc). Works against
redis-server and `batchkv serve` alike; run them alternately:

    redis-server --port 16601 --save "" --appendonly yes &
    batchkv serve --dir /tmp/bkv --port 16602 &
    scripts/dump-restore-bench.py 16601 <redis pid> 6
    scripts/dump-restore-bench.py 16602 <batchkv pid> 6

The CPU is the whole process's: on batchkv it includes the flushes and
compactions the RESTOREs cause (a fresh server gives the clean figure).
"""

import os
import socket
import sys
import time


def enc(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def reply(f):
    line = f.readline()
    kind, rest = line[:1], line[1:-2]
    if kind in (b"+", b"-", b":"):
        return line
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        return f.read(n + 2)[:-2]
    if kind == b"*":
        return [reply(f) for _ in range(int(rest))]
    raise ValueError(line)


def cpu_seconds(pid):
    fields = open("/proc/%d/stat" % pid).read().split(")")[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    port, pid, rounds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    entries = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rb")
    cmds = [enc("DEL", "sd")]
    for i in range(1, entries + 1):
        cmds.append(enc("XADD", "sd", "%d-0" % i, "field", "value-%d" % i, "n", str(i)))
    cmds.append(enc("XGROUP", "CREATE", "sd", "g", "0"))
    for consumer, count in (("alice", "300"), ("bob", "200")):
        cmds.append(enc("XREADGROUP", "GROUP", "g", consumer, "COUNT", count, "STREAMS", "sd", ">"))
    s.sendall(b"".join(cmds))
    for _ in cmds:
        reply(f)
    s.sendall(enc("DUMP", "sd"))
    payload = reply(f)
    print("payload bytes", len(payload))
    for what in ("DUMP", "RESTORE"):
        one = enc("DUMP", "sd") if what == "DUMP" else enc("RESTORE", "sd2", "0", payload, "REPLACE")
        batch = one * 50
        c0, t0 = cpu_seconds(pid), time.time()
        for _ in range(rounds):
            s.sendall(batch)
            for _ in range(50):
                r = reply(f)
                if isinstance(r, bytes) and r.startswith(b"-"):
                    raise SystemExit(r.decode())
        elapsed, cpu = time.time() - t0, cpu_seconds(pid) - c0
        n = rounds * 50
        print("%s: %.0f/s, %.2f ms server CPU each" % (what, n / elapsed, cpu * 1000 / n))


if __name__ == "__main__":
    main()
