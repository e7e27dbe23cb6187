"""Times one multi_get of N keys against a Python loop of N get calls on
the same database (in-memory data, one process). Not a test; prints the
median of 5 runs of each. Usage: python multi_get_vs_get.py [N]"""

import shutil
import statistics
import sys
import tempfile
import time

import batchkv


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    d = tempfile.mkdtemp(prefix="batchkv-bench-")
    try:
        with batchkv.Db(d + "/db") as db:
            batch = batchkv.WriteBatch()
            for i in range(n):
                batch.put(b"key%08d" % i, b"value%08d" % i)
            db.write(batch)
            keys = [b"key%08d" % i for i in range(n)]
            loop, multi = [], []
            for _ in range(5):
                t = time.perf_counter()
                a = [db.get(k) for k in keys]
                loop.append(time.perf_counter() - t)
                t = time.perf_counter()
                b = db.multi_get(keys)
                multi.append(time.perf_counter() - t)
                assert a == b
            ml, mm = statistics.median(loop), statistics.median(multi)
            print(f"{n} keys, median of 5: loop of get {ml * 1e3:.2f} ms "
                  f"({n / ml / 1e6:.2f} M keys/s), multi_get {mm * 1e3:.2f} ms "
                  f"({n / mm / 1e6:.2f} M keys/s), ratio {ml / mm:.1f}x")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
