"""Point reads from Python: batchkv against rocksdict (RocksDB's Python
binding) on the same data, in one process.

Both databases get the same keys and values (16-byte keys, 100-byte random
values) and the same settings where both have them: no compression, a
32 MiB block cache, 10-bit bloom filters, 64 MiB write buffers. Two states
are measured: "memtable" (loaded, nothing flushed) and "sst" (flushed and
compacted to one level, then read once so the block cache is warm). For
each, the same random existing keys are read two ways:

- multi_get: batches of 100 keys, one call per batch (``Db.multi_get`` /
  ``Rdict.get(list)``);
- get: one call per key (``Db.get`` / ``Rdict.get``).

Each measurement runs ``--rounds`` times, the two engines alternating
(A B, then B A, ...); printed are keys/s per run and the median.

Not a test. Needs ``pip install ./python rocksdict``. Usage:
    python python/bench/vs_rocksdict.py [--keys N] [--lookups N] [--rounds N]
"""

import argparse
import random
import shutil
import statistics
import tempfile
import time

import batchkv
import rocksdict

BATCH = 100
VALUE_SIZE = 100
CACHE = 32 << 20
WRITE_BUFFER = 64 << 20


def key(i):
    return b"key%013d" % i


def open_batchkv(path):
    return batchkv.Db(path, compression="none", block_cache_size=CACHE,
                      bloom_bits_per_key=10, write_buffer_size=WRITE_BUFFER)


def open_rocksdict(path):
    opts = rocksdict.Options(raw_mode=True)
    table = rocksdict.BlockBasedOptions()
    table.set_block_cache(rocksdict.Cache(CACHE))
    table.set_bloom_filter(10, False)
    opts.set_block_based_table_factory(table)
    opts.set_compression_type(rocksdict.DBCompressionType.none())
    opts.set_write_buffer_size(WRITE_BUFFER)
    return rocksdict.Rdict(path, opts)


def load(n, bkv, rdb):
    rng = random.Random(1)
    for start in range(0, n, 10_000):
        b1 = batchkv.WriteBatch()
        b2 = rocksdict.WriteBatch(raw_mode=True)
        for i in range(start, min(n, start + 10_000)):
            v = rng.randbytes(VALUE_SIZE)
            b1.put(key(i), v)
            b2.put(key(i), v)
        bkv.write(b1)
        rdb.write(b2)


def timed(call, args):
    """Seconds taken by ``call(a)`` for every ``a`` in ``args``."""
    t = time.perf_counter()
    for a in args:
        call(a)
    return time.perf_counter() - t


def measure(state, engines, n_keys, lookups, rounds, rng):
    """``engines``: (name, multi_get function, get function) pairs."""
    keys = [key(rng.randrange(n_keys)) for _ in range(lookups)]
    batches = [keys[i:i + BATCH] for i in range(0, len(keys), BATCH)]
    (n1, multi1, _), (n2, multi2, _) = engines
    assert multi1(batches[0]) == multi2(batches[0]), "the engines disagree"
    for op, idx, args in [("multi_get", 1, batches), ("get", 2, keys)]:
        samples = {e[0]: [] for e in engines}
        for r in range(rounds):
            for e in engines if r % 2 == 0 else engines[::-1]:
                samples[e[0]].append(len(keys) / timed(e[idx], args))
        med = {name: statistics.median(s) for name, s in samples.items()}
        for name, s in samples.items():
            runs = " ".join("%.0f" % x for x in s)
            print("%-8s %-9s %-9s median %10.0f keys/s   (runs: %s)"
                  % (state, op, name, med[name], runs))
        print("%-8s %-9s batchkv/rocksdict %.2fx" % (state, op, med[n1] / med[n2]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=200_000)
    ap.add_argument("--lookups", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="batchkv-vs-rocksdict-")
    try:
        bkv = open_batchkv(d + "/batchkv")
        rdb = open_rocksdict(d + "/rocksdict")
        load(args.keys, bkv, rdb)
        # Rdict.get takes a key or a list of keys (its multi-get).
        engines = [("batchkv", bkv.multi_get, bkv.get), ("rocksdict", rdb.get, rdb.get)]
        rng = random.Random(2)
        print("%d keys, %d-byte values; %d lookups per run (multi_get: batches of %d); "
              "batchkv %s, rocksdict %s" % (args.keys, VALUE_SIZE, args.lookups, BATCH,
                                            batchkv.__version__, rocksdict_version()))
        measure("memtable", engines, args.keys, args.lookups, args.rounds, rng)
        bkv.flush()
        bkv.compact_range()
        rdb.flush()
        rdb.compact_range(None, None)
        everything = [key(i) for i in range(args.keys)]
        for _, _, get in engines:  # warm the block caches
            timed(get, everything)
        measure("sst", engines, args.keys, args.lookups, args.rounds, rng)
        bkv.close()
        rdb.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def rocksdict_version():
    try:
        from importlib.metadata import version
        return version("rocksdict")
    except Exception:  # noqa: BLE001 - only for the header line
        return "?"


if __name__ == "__main__":
    main()
