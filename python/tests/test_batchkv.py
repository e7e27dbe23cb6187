"""Tests of the batchkv Python package.

Written with unittest, so both runners work: ``python -m unittest discover
python/tests`` (nothing to install beyond the package) and ``python -m
pytest python/tests`` (what CI runs, through scripts/python-test.sh).
"""

import os
import shutil
import struct
import tempfile
import threading
import unittest

import batchkv
import gilcheck


class DbTestCase(unittest.TestCase):
    """Each test gets a fresh directory and an open database in it."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="batchkv-py-")
        self.path = os.path.join(self.dir, "db")
        self.db = batchkv.Db(self.path)

    def tearDown(self):
        self.db.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def reopen(self, **options):
        self.db.close()
        self.db = batchkv.Db(self.path, **options)


class RoundTrips(DbTestCase):
    def test_put_get_delete(self):
        self.assertIsNone(self.db.get(b"k"))
        self.db.put(b"k", b"v")
        self.assertEqual(self.db.get(b"k"), b"v")
        self.db.put(b"k", b"v2", sync=True)
        self.assertEqual(self.db.get(b"k"), b"v2")
        self.db.delete(b"k")
        self.assertIsNone(self.db.get(b"k"))
        self.db.delete(b"never-there")  # no error

    def test_mapping_protocol(self):
        self.db[b"a"] = b"1"
        self.assertEqual(self.db[b"a"], b"1")
        self.assertIn(b"a", self.db)
        self.assertNotIn(b"b", self.db)
        with self.assertRaises(KeyError) as cm:
            self.db[b"b"]
        self.assertEqual(cm.exception.args[0], b"b")
        del self.db[b"a"]
        self.assertNotIn(b"a", self.db)
        del self.db[b"a"]  # absent: no error, as in RocksDB

    def test_values_survive_reopen(self):
        for i in range(100):
            self.db.put(b"key%03d" % i, b"value%d" % i)
        self.reopen()
        self.assertEqual(self.db.get(b"key042"), b"value42")
        self.db.flush()
        self.reopen()
        self.assertEqual(self.db.get(b"key099"), b"value99")

    def test_empty_key_and_value(self):
        self.db.put(b"", b"")
        self.assertEqual(self.db.get(b""), b"")

    def test_bytes_like_inputs(self):
        self.db.put(bytearray(b"ba"), memoryview(b"mv-value"))
        self.assertEqual(self.db.get(b"ba"), b"mv-value")
        self.assertEqual(self.db.get(memoryview(b"ba")), b"mv-value")
        self.assertEqual(self.db.get(bytearray(b"ba")), b"mv-value")
        # A slice of a memoryview is its own bytes.
        self.db.put(memoryview(b"xxkeyxx")[2:5], b"sliced")
        self.assertEqual(self.db.get(b"key"), b"sliced")
        self.assertIsInstance(self.db.get(bytearray(b"ba")), bytes)
        self.assertEqual(self.db.multi_get([bytearray(b"ba"), memoryview(b"key")]),
                         [b"mv-value", b"sliced"])

    def test_str_and_other_types_are_type_errors(self):
        with self.assertRaises(TypeError):
            self.db.put("text", b"v")
        with self.assertRaises(TypeError):
            self.db.get(42)
        with self.assertRaises(TypeError):
            self.db.multi_get([b"a", "b"])

    def test_large_values(self):
        big = os.urandom(8 << 20)
        self.db.put(b"big", big)
        self.assertEqual(self.db.get(b"big"), big)
        self.db.flush()
        self.reopen()
        self.assertEqual(self.db.get(b"big"), big)
        self.assertEqual(self.db.multi_get([b"big"])[0], big)

    def test_too_large_key_is_invalid_argument(self):
        with self.assertRaises(batchkv.InvalidArgument):
            self.db.put(b"k" * (64 * 1024 + 1), b"v")


class MultiGet(DbTestCase):
    def test_missing_keys_and_order(self):
        self.db.put(b"a", b"1")
        self.db.put(b"c", b"3")
        self.assertEqual(self.db.multi_get([b"c", b"b", b"a", b"a", b"zz"]),
                         [b"3", None, b"1", b"1", None])
        self.assertEqual(self.db.multi_get([]), [])

    def test_ten_thousand_keys(self):
        batch = batchkv.WriteBatch()
        for i in range(0, 10000, 2):
            batch.put(b"k%05d" % i, b"v%d" % i)
        self.db.write(batch)
        keys = [b"k%05d" % i for i in range(10000)]
        got = self.db.multi_get(keys)
        self.assertEqual(len(got), 10000)
        for i, v in enumerate(got):
            self.assertEqual(v, b"v%d" % i if i % 2 == 0 else None)
        self.db.flush()
        self.assertEqual(self.db.multi_get(keys), got)

    def test_any_iterable_and_snapshot(self):
        self.db.put(b"x", b"old")
        snap = self.db.snapshot()
        self.db.put(b"x", b"new")
        self.assertEqual(self.db.multi_get((k for k in [b"x"])), [b"new"])
        self.assertEqual(self.db.multi_get([b"x"], snapshot=snap), [b"old"])

    def test_multi_get_releases_the_gil(self):
        """While one thread is inside multi_get, another thread runs Python
        code: the GIL is released during the engine call (see gilcheck: a
        handshake, not a timing)."""
        if not gilcheck.gil_is_enabled():
            self.skipTest("free-threaded build: no GIL")
        batch = batchkv.WriteBatch()
        for i in range(100_000):
            batch.put(b"g%06d" % i, b"%d" % i)
        self.db.write(batch)
        keys = [b"g%06d" % i for i in range(100_000)]
        results = []
        self.assertTrue(gilcheck.releases_gil(lambda: results.append(self.db.multi_get(keys))))
        self.assertEqual(results[0][12345], b"12345")
        # The check can fail: a call into C code that keeps the GIL (a
        # sort of 1M ints, longer than the multi_get) is never seen.
        numbers = list(range(1_000_000, 0, -1))
        self.assertFalse(gilcheck.releases_gil(lambda: sorted(numbers)))

    def test_concurrent_calls_from_threads_are_correct(self):
        """Concurrent multi_get calls from several threads all complete
        with correct results."""
        batch = batchkv.WriteBatch()
        for i in range(2000):
            batch.put(b"t%04d" % i, b"%d" % i)
        self.db.write(batch)
        keys = [b"t%04d" % i for i in range(2000)]
        expected = [b"%d" % i for i in range(2000)]
        errors = []

        def reader():
            try:
                for _ in range(20):
                    if self.db.multi_get(keys) != expected:
                        errors.append("wrong result")
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))

        threads = [threading.Thread(target=reader) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])


class Batches(DbTestCase):
    def test_batch_is_atomic_and_ordered(self):
        self.db.put(b"gone", b"x")
        b = batchkv.WriteBatch()
        b.put(b"a", b"1")
        b.put(b"b", b"2")
        b.delete(b"gone")
        b.put(b"a", b"last wins")
        self.assertEqual(len(b), 4)
        self.assertEqual(repr(b), "<batchkv.WriteBatch ops=4>")
        size = b.approximate_size
        self.assertGreater(size, len(b"a1b2gonealast wins"))
        b.put(b"c", b"3")
        self.assertGreater(b.approximate_size, size)
        b.delete(b"c")
        # Nothing is visible before write.
        self.assertIsNone(self.db.get(b"a"))
        self.db.write(b, sync=True)
        self.assertEqual(self.db.get(b"a"), b"last wins")
        self.assertEqual(self.db.get(b"b"), b"2")
        self.assertIsNone(self.db.get(b"gone"))
        self.assertEqual(len(b), 6)  # unchanged, reusable
        b.clear()
        self.assertEqual(len(b), 0)

    def test_failing_batch_writes_nothing(self):
        b = batchkv.WriteBatch()
        b.put(b"ok", b"1")
        b.put(b"k" * (64 * 1024 + 1), b"too long a key")
        with self.assertRaises(batchkv.InvalidArgument):
            self.db.write(b)
        self.assertIsNone(self.db.get(b"ok"))

    def test_snapshot_never_sees_half_a_batch(self):
        """A reader taking snapshots while batches of 50 keys are written
        always sees all 50 keys of a batch at the same generation."""
        keys = [b"atom%02d" % i for i in range(50)]
        stop = threading.Event()
        bad = []

        def writer():
            gen = 0
            while not stop.is_set():
                gen += 1
                b = batchkv.WriteBatch()
                for k in keys:
                    b.put(k, b"%d" % gen)
                self.db.write(b)

        t = threading.Thread(target=writer)
        t.start()
        try:
            for _ in range(200):
                vals = self.db.multi_get(keys)
                if len(set(vals)) != 1:
                    bad.append(vals)
        finally:
            stop.set()
            t.join()
        self.assertEqual(bad, [])

    def test_delete_range(self):
        for i in range(10):
            self.db.put(b"r%d" % i, b"v")
        self.db.delete_range(b"r2", b"r5")
        self.assertEqual(list(self.db.keys()),
                         [b"r0", b"r1", b"r5", b"r6", b"r7", b"r8", b"r9"])
        b = batchkv.WriteBatch()
        b.delete_range(b"r6", b"r9")
        b.put(b"r7", b"back")
        self.db.write(b)
        self.assertEqual(list(self.db.keys()), [b"r0", b"r1", b"r5", b"r7", b"r9"])
        with self.assertRaises(batchkv.InvalidArgument):
            self.db.delete_range(b"z", b"a")

    def test_merge_u64add(self):
        self.reopen(merge_operator="u64add")
        for _ in range(3):
            self.db.merge(b"hits", struct.pack("<Q", 2))
        b = batchkv.WriteBatch()
        b.merge(b"hits", struct.pack("<Q", 10))
        self.db.write(b)
        self.assertEqual(struct.unpack("<Q", self.db.get(b"hits"))[0], 16)

    def test_merge_without_operator_is_invalid_argument_on_read(self):
        self.db.merge(b"m", b"x")
        with self.assertRaises(batchkv.InvalidArgument):
            self.db.get(b"m")


class Iteration(DbTestCase):
    def setUp(self):
        super().setUp()
        self.keys = [b"k%03d" % i for i in range(300)]
        b = batchkv.WriteBatch()
        for k in self.keys:
            b.put(k, b"v" + k)
        self.db.write(b)

    def test_full_both_ways(self):
        self.assertEqual(list(self.db.keys()), self.keys)
        self.assertEqual(list(self.db.keys(reverse=True)), self.keys[::-1])
        self.assertEqual(list(self.db), self.keys)
        self.assertEqual(list(self.db.values()), [b"v" + k for k in self.keys])
        self.assertEqual(list(self.db.items())[:2],
                         [(b"k000", b"vk000"), (b"k001", b"vk001")])

    def test_bounds_both_ways(self):
        # start inclusive, end exclusive, in both directions.
        self.assertEqual(list(self.db.keys(b"k010", b"k015")), self.keys[10:15])
        self.assertEqual(list(self.db.keys(b"k010", b"k015", reverse=True)),
                         self.keys[10:15][::-1])
        self.assertEqual(list(self.db.keys(start=b"k295")), self.keys[295:])
        self.assertEqual(list(self.db.keys(end=b"k003", reverse=True)),
                         [b"k002", b"k001", b"k000"])
        # Bounds between keys.
        self.assertEqual(list(self.db.keys(b"k0105", b"k0125")), [b"k011", b"k012"])
        self.assertEqual(list(self.db.keys(b"x", b"y")), [])

    def test_survives_flush_and_reads_tables(self):
        self.db.flush()
        self.db.put(b"k1000", b"mem")  # one key in the memtable, the rest in an SST
        # b"k1000" sorts right after its prefix b"k100".
        self.assertEqual(list(self.db.keys(start=b"k298")), [b"k298", b"k299"])
        self.assertEqual(list(self.db.keys(b"k099", b"k101")), [b"k099", b"k100", b"k1000"])
        self.assertEqual(len(list(self.db.items())), 301)

    def test_prefix(self):
        self.db.put(b"user:1", b"ada")
        self.db.put(b"user:2", b"grace")
        self.db.put(b"user;", b"not a user")
        self.db.put(b"usex", b"no")
        self.assertEqual(list(self.db.prefix(b"user:")),
                         [(b"user:1", b"ada"), (b"user:2", b"grace")])
        self.assertEqual([k for k, _ in self.db.prefix(b"user:", reverse=True)],
                         [b"user:2", b"user:1"])
        self.db.put(b"\xff\xff", b"top")
        self.assertEqual(list(self.db.prefix(b"\xff")), [(b"\xff\xff", b"top")])

    def test_iterator_does_not_see_later_writes(self):
        it = self.db.keys()
        first = next(it)
        self.db.put(b"k0000", b"new")  # would sort second
        self.db.delete(b"k299")
        rest = list(it)
        self.assertEqual([first] + rest, self.keys)

    def test_iterator_outlives_close(self):
        it = self.db.items()
        self.db.close()
        self.assertEqual(len(list(it)), 300)

    def test_large_range_in_chunks(self):
        b = batchkv.WriteBatch()
        for i in range(20000):
            b.put(b"z%06d" % i, b"x" * 100)
        self.db.write(b)
        got = list(self.db.keys(start=b"z"))
        self.assertEqual(got, [b"z%06d" % i for i in range(20000)])
        got = list(self.db.keys(start=b"z", reverse=True))
        self.assertEqual(got, [b"z%06d" % i for i in reversed(range(20000))])


class Snapshots(DbTestCase):
    def test_isolation(self):
        self.db.put(b"a", b"1")
        self.db.put(b"b", b"1")
        snap = self.db.snapshot()
        self.db.put(b"a", b"2")
        self.db.delete(b"b")
        self.db.put(b"c", b"new")
        self.assertEqual(self.db.get(b"a", snapshot=snap), b"1")
        self.assertEqual(self.db.get(b"b", snapshot=snap), b"1")
        self.assertIsNone(self.db.get(b"c", snapshot=snap))
        self.assertEqual(list(self.db.items(snapshot=snap)), [(b"a", b"1"), (b"b", b"1")])
        self.assertEqual(list(self.db.items()), [(b"a", b"2"), (b"c", b"new")])
        # Still isolated after the newer data is flushed and compacted.
        self.db.flush()
        self.db.compact_range()
        self.assertEqual(self.db.get(b"a", snapshot=snap), b"1")
        self.assertGreater(snap.sequence, 0)
        self.assertEqual(self.db.property("batchkv.num-snapshots"), "1")
        del snap
        self.assertEqual(self.db.property("batchkv.num-snapshots"), "0")


class Lifecycle(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="batchkv-py-")
        self.path = os.path.join(self.dir, "db")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_context_manager_closes_and_releases_lock(self):
        with batchkv.Db(self.path) as db:
            db.put(b"k", b"v")
            with self.assertRaises(batchkv.Locked):
                batchkv.Db(self.path)
        self.assertTrue(db.closed)
        with self.assertRaises(batchkv.Closed):
            db.get(b"k")
        db.close()  # idempotent
        with batchkv.Db(self.path) as db2:  # the lock was released
            self.assertEqual(db2.get(b"k"), b"v")

    def test_context_manager_closes_on_exception(self):
        with self.assertRaises(RuntimeError):
            with batchkv.Db(self.path) as db:
                db.put(b"k", b"v")
                raise RuntimeError("boom")
        self.assertTrue(db.closed)
        with batchkv.Db(self.path) as db2:
            self.assertEqual(db2[b"k"], b"v")

    def test_options(self):
        with batchkv.Db(self.path, write_buffer_size=1 << 20, compression="none",
                        memtable="vector", statistics=False, max_bytes_for_level_multiplier=8.0) as db:
            db.put(b"k", b"v")
            self.assertEqual(db.get(b"k"), b"v")
        with self.assertRaises(batchkv.InvalidArgument):
            batchkv.Db(self.path, no_such_option=1)
        with self.assertRaises(batchkv.InvalidArgument):
            batchkv.Db(self.path, write_buffer_size="lots")
        with self.assertRaises(batchkv.InvalidArgument):
            batchkv.Db(self.path, merge_operator="nope")
        with self.assertRaises(TypeError):
            batchkv.Db(self.path, write_buffer_size=[1])

    def test_create_if_missing_false(self):
        with self.assertRaises(batchkv.Error):
            batchkv.Db(os.path.join(self.dir, "missing"), create_if_missing=False)

    def test_non_empty_foreign_directory_is_invalid_argument(self):
        os.makedirs(self.path)
        with open(os.path.join(self.path, "stranger.txt"), "w") as f:
            f.write("x")
        with self.assertRaises(batchkv.InvalidArgument):
            batchkv.Db(self.path)

    def test_path_like(self):
        import pathlib
        with batchkv.Db(pathlib.Path(self.path)) as db:
            db.put(b"k", b"v")
            self.assertIn("db", str(db.path))

    def test_checkpoint_flush_compact_property(self):
        with batchkv.Db(self.path) as db:
            for i in range(1000):
                db.put(b"c%04d" % i, b"v%d" % i)
            db.flush()
            self.assertEqual(db.property("batchkv.num-files-at-level0"), "1")
            db.compact_range(b"c0000", b"c9999")
            db.compact_range()
            self.assertIsNone(db.property("no-such-property"))
            self.assertEqual(db.property("batchkv.num-files-at-level0"), "0")
            self.assertIn("batchkv stats", db.property("batchkv.stats"))
            cp = os.path.join(self.dir, "cp")
            db.checkpoint(cp)
            db.put(b"after", b"checkpoint")
            db.sync_wal()
        with batchkv.Db(cp) as copy:
            self.assertEqual(copy.get(b"c0500"), b"v500")
            self.assertIsNone(copy.get(b"after"))
        with batchkv.Db(self.path) as db:
            with self.assertRaises(batchkv.Error):
                db.checkpoint(cp)  # exists


class Errors(unittest.TestCase):
    """Each engine error kind reachable from Python raises its own
    subclass of batchkv.Error. ReadOnly (read-only opens), Unsupported (a
    build without ZSTD) and BackgroundError (a failed background write)
    cannot be provoked through this package's API."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="batchkv-py-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_hierarchy(self):
        for name in ["IOError", "Corruption", "InvalidArgument", "Locked", "Closed",
                     "ReadOnly", "MergeFailed", "Unsupported", "BackgroundError", "Conflict"]:
            cls = getattr(batchkv, name)
            self.assertTrue(issubclass(cls, batchkv.Error), name)
            self.assertEqual(cls.__module__, "batchkv", name)
        self.assertTrue(issubclass(batchkv.Error, Exception))
        # Distinct classes: catching one kind does not catch another.
        self.assertFalse(issubclass(batchkv.Conflict, batchkv.InvalidArgument))
        self.assertFalse(issubclass(batchkv.Locked, batchkv.IOError))

    def test_io_error_names_the_path(self):
        blocker = os.path.join(self.dir, "a-file")
        with open(blocker, "w") as f:
            f.write("not a directory")
        with self.assertRaises(batchkv.IOError) as cm:
            batchkv.Db(os.path.join(blocker, "db"))
        self.assertIn("a-file", str(cm.exception))

    def test_merge_failed(self):
        with batchkv.Db(os.path.join(self.dir, "db"), merge_operator="u64add") as db:
            db.merge(b"n", b"abc")  # not an 8-byte counter
            with self.assertRaises(batchkv.MergeFailed) as cm:
                db.get(b"n")
            self.assertIn('key "n"', str(cm.exception))

    def test_conflict_carries_key_and_family(self):
        with batchkv.Db(os.path.join(self.dir, "db")) as db:
            txn = db.transaction()
            txn.get_for_update(b"k")
            db.put(b"k", b"other writer")
            with self.assertRaises(batchkv.Conflict) as cm:
                txn.commit()
            self.assertIsInstance(cm.exception, batchkv.Error)
            self.assertEqual(cm.exception.key, b"k")
            self.assertEqual(cm.exception.cf, "default")
            self.assertIn("transaction conflict", str(cm.exception))

    def test_corruption(self):
        d = tempfile.mkdtemp(prefix="batchkv-py-")
        try:
            path = os.path.join(d, "db")
            with batchkv.Db(path) as db:
                db.put(b"k", b"v" * 1000)
                db.flush()
            ssts = [f for f in os.listdir(path) if f.endswith(".sst")]
            self.assertEqual(len(ssts), 1)
            sst = os.path.join(path, ssts[0])
            with open(sst, "r+b") as f:
                f.seek(10)
                f.write(b"\x00garbage\x00" * 4)
            with self.assertRaises(batchkv.Corruption):
                with batchkv.Db(path) as db:
                    db.get(b"k")
        finally:
            shutil.rmtree(d, ignore_errors=True)


class ColumnFamilies(DbTestCase):
    def test_create_use_drop(self):
        users = self.db.create_column_family("users", memtable="vector")
        self.assertEqual(users.name, "users")
        self.assertEqual(self.db.column_families(), ["default", "users"])
        self.db.put(b"k", b"in users", cf=users)
        self.db.put(b"k", b"in default")
        self.assertEqual(self.db.get(b"k", cf=users), b"in users")
        self.assertEqual(self.db.get(b"k"), b"in default")
        b = batchkv.WriteBatch()
        b.put(b"bob", b"2", cf=users)
        b.put(b"x", b"default")
        self.db.write(b)
        self.assertEqual(self.db.multi_get([b"bob", b"k", b"no"], cf=users),
                         [b"2", b"in users", None])
        self.assertEqual(list(self.db.keys(cf=users)), [b"bob", b"k"])
        self.db.flush(cf=users)
        self.db.compact_range(cf=users)
        self.assertEqual(self.db.property("batchkv.estimate-num-keys", cf=users), "2")
        self.db.delete(b"bob", cf=users)
        self.assertIsNone(self.db.get(b"bob", cf=users))
        with self.assertRaises(batchkv.InvalidArgument):
            self.db.create_column_family("users")
        self.reopen()
        users = self.db.get_column_family("users")
        self.assertIsNotNone(users)
        self.assertIsNone(self.db.get_column_family("nope"))
        self.assertEqual(self.db.get(b"k", cf=users), b"in users")
        self.db.drop_column_family(users)
        self.assertEqual(self.db.column_families(), ["default"])
        with self.assertRaises(batchkv.InvalidArgument):
            self.db.get(b"k", cf=users)
        self.db.create_column_family("tmp")
        self.db.drop_column_family("tmp")
        with self.assertRaises(batchkv.InvalidArgument):
            self.db.drop_column_family("default")


class Secondary(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="batchkv-py-sec-")
        self.primary_path = os.path.join(self.dir, "primary")
        self.secondary_path = os.path.join(self.dir, "secondary")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_follows_the_primary(self):
        with batchkv.Db(self.primary_path) as primary:
            primary.put(b"a", b"1")
            primary.flush()
            primary.put(b"b", b"2")
            sec = batchkv.Db.open_as_secondary(self.primary_path, self.secondary_path,
                                               block_cache_size=1 << 20)
            with sec:
                self.assertEqual(sec.multi_get([b"a", b"b", b"c"]), [b"1", b"2", None])
                self.assertEqual(sec.path, primary.path)
                items = sec.items()
                primary.put(b"c", b"3")
                primary.delete(b"a")
                self.assertIsNone(sec.get(b"c"))  # not caught up yet
                sec.try_catch_up_with_primary()
                self.assertEqual(sec.get(b"c"), b"3")
                self.assertIsNone(sec.get(b"a"))
                # An iterator begun before the catch-up keeps its view.
                self.assertEqual(list(items), [(b"a", b"1"), (b"b", b"2")])
                # A family the primary creates appears at a catch-up.
                users = primary.create_column_family("users")
                primary.put(b"u", b"ada", cf=users)
                sec.try_catch_up_with_primary()
                self.assertEqual(sec.get(b"u", cf=sec.get_column_family("users")), b"ada")
                with self.assertRaises(batchkv.ReadOnly):
                    sec.put(b"x", b"y")
                with self.assertRaises(batchkv.ReadOnly):
                    sec.flush()
            self.assertTrue(sec.closed)
            # The primary is unaffected and still writable.
            primary.put(b"d", b"4")
            self.assertEqual(primary.get(b"c"), b"3")

    def test_errors(self):
        with self.assertRaises(batchkv.InvalidArgument):  # no database there
            batchkv.Db.open_as_secondary(self.primary_path, self.secondary_path)
        with batchkv.Db(self.primary_path) as primary:
            with self.assertRaises(batchkv.InvalidArgument):  # not a secondary
                primary.try_catch_up_with_primary()
            with self.assertRaises(batchkv.InvalidArgument):  # its own directory
                batchkv.Db.open_as_secondary(self.primary_path, self.primary_path)
            with self.assertRaises(batchkv.InvalidArgument):  # a bad option
                batchkv.Db.open_as_secondary(self.primary_path, self.secondary_path,
                                             no_such_option=1)
            sec = batchkv.Db.open_as_secondary(self.primary_path, self.secondary_path)
            with self.assertRaises(batchkv.Locked):  # one secondary per directory
                batchkv.Db.open_as_secondary(self.primary_path, self.secondary_path)
            sec.close()
            with self.assertRaises(batchkv.Closed):
                sec.try_catch_up_with_primary()


if __name__ == "__main__":
    unittest.main()
