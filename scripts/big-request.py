#!/usr/bin/env python3
"""Server CPU for one large request that arrives slowly.

Sends `MGET key:000000000000 ... ` of NKEYS keys to a running
`batchkv serve` in CHUNK-byte pieces, 1 ms apart (a slow client), reads the
whole reply, and prints the server's CPU time over it (utime + stime from
/proc/PID/stat). Use an empty database: every key is absent, so the reply
is NKEYS nils and the figure is parsing and lookup, not value copying.

    batchkv serve --dir /tmp/empty --port 16500 &
    scripts/big-request.py 16500 $! 500000 16384
"""
import socket
import sys
import time

port, pid, n, chunk = (int(a) for a in sys.argv[1:5])
parts = [b"*%d\r\n$4\r\nMGET\r\n" % (n + 1)]
for i in range(n):
    k = b"key:%012d" % i
    parts.append(b"$%d\r\n%s\r\n" % (len(k), k))
req = b"".join(parts)


def cpu_ms():
    fields = open(f"/proc/{pid}/stat").read().split(")")[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 // 100  # 100 Hz ticks


s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
c0, t0 = cpu_ms(), time.perf_counter()
for i in range(0, len(req), chunk):
    s.sendall(req[i : i + chunk])
    time.sleep(0.001)
reply, lines = bytearray(), 0
while lines < n + 1:  # "*N" and N nils, one line each
    d = s.recv(1 << 20)
    if not d:
        sys.exit("connection closed before the whole reply")
    lines += d.count(b"\n")
print(
    f"MGET {n} keys ({len(req) / 1e6:.1f} MB) in {-(-len(req) // chunk)} pieces of {chunk} B: "
    f"server CPU {cpu_ms() - c0} ms, wall {time.perf_counter() - t0:.2f} s"
)
