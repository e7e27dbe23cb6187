"""Tests of batchkv.Transaction (optimistic transactions) from Python.

unittest style, run by pytest in CI (scripts/python-test.sh) and by
``python -m unittest discover python/tests``.
"""

import os
import shutil
import struct
import tempfile
import threading
import unittest

import batchkv
import gilcheck


def u64(n):
    return struct.pack("<Q", n)


class TxnTestCase(unittest.TestCase):
    """Each test gets a fresh directory and an open database in it."""

    options = {}

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="batchkv-py-txn-")
        self.path = os.path.join(self.dir, "db")
        self.db = batchkv.Db(self.path, **self.options)

    def tearDown(self):
        self.db.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def reopen(self):
        self.db.close()
        self.db = batchkv.Db(self.path, **self.options)


class ContextManager(TxnTestCase):
    def test_normal_exit_commits(self):
        with self.db.transaction() as txn:
            txn.put(b"a", b"1")
            txn[b"b"] = b"2"
            self.assertIsNone(self.db.get(b"a"))  # buffered until commit
            self.assertEqual(txn.pending_writes, 2)
        self.assertTrue(txn.finished)
        self.assertEqual(self.db.multi_get([b"a", b"b"]), [b"1", b"2"])

    def test_exception_rolls_back_and_propagates(self):
        self.db.put(b"a", b"before")
        with self.assertRaises(KeyError):
            with self.db.transaction() as txn:
                txn.put(b"a", b"inside")
                txn.delete(b"zzz")
                raise KeyError("boom")
        self.assertTrue(txn.finished)
        self.assertEqual(self.db.get(b"a"), b"before")
        self.assertIn("rolled back", repr(txn))

    def test_conflict_propagates_from_the_with_statement(self):
        self.db.put(b"k", b"0")
        with self.assertRaises(batchkv.Conflict) as cm:
            with self.db.transaction() as txn:
                txn.put(b"k", b"mine")
                self.db.put(b"k", b"theirs")
        self.assertEqual(cm.exception.key, b"k")
        self.assertEqual(self.db.get(b"k"), b"theirs")
        self.assertTrue(txn.finished)

    def test_commit_inside_the_block_is_left_alone_at_exit(self):
        with self.db.transaction() as txn:
            txn.put(b"x", b"1")
            txn.commit()
        self.assertEqual(self.db.get(b"x"), b"1")

    def test_finished_transaction_refuses_every_call(self):
        txn = self.db.transaction()
        txn.put(b"x", b"1")
        self.assertFalse(txn.finished)
        txn.commit()
        self.assertTrue(txn.finished)
        self.assertIn("committed", repr(txn))
        calls = [
            lambda: txn.get(b"x"), lambda: txn.get_for_update(b"x"),
            lambda: txn.multi_get([b"x"]), lambda: txn.multi_get_for_update([b"x"]),
            lambda: txn.put(b"x", b"2"), lambda: txn.delete(b"x"),
            lambda: txn.merge(b"x", b"2"), lambda: txn.items(), lambda: txn.keys(),
            lambda: txn.values(), lambda: txn.prefix(b"x"), lambda: iter(txn),
            lambda: txn[b"x"], lambda: txn.__setitem__(b"x", b"2"),
            lambda: txn.__delitem__(b"x"), lambda: b"x" in txn,
            txn.set_savepoint, txn.rollback_to_savepoint, txn.rollback, txn.commit,
            lambda: txn.pending_writes, lambda: txn.snapshot,
        ]
        for call in calls:
            with self.assertRaises(batchkv.InvalidArgument) as cm:
                call()
            self.assertIn("finished (committed)", str(cm.exception))

    def test_failed_commit_finishes_the_transaction(self):
        txn = self.db.transaction()
        txn.put(b"k", b"mine")
        self.db.put(b"k", b"theirs")
        with self.assertRaises(batchkv.Conflict):
            txn.commit()
        with self.assertRaises(batchkv.InvalidArgument) as cm:
            txn.get(b"k")
        self.assertIn("failed to commit", str(cm.exception))

    def test_sync_commit_survives_reopen(self):
        with self.db.transaction(sync=True) as txn:
            txn.put(b"durable", b"yes")
        self.reopen()
        self.assertEqual(self.db.get(b"durable"), b"yes")


class Reads(TxnTestCase):
    def setUp(self):
        super().setUp()
        for k in [b"a", b"b", b"c", b"d"]:
            self.db.put(k, b"db-" + k)

    def test_own_writes_over_the_snapshot(self):
        txn = self.db.transaction()
        self.db.put(b"a", b"after-begin")  # not visible to the transaction
        self.db.put(b"new", b"after-begin")
        txn.put(b"b", b"txn-b")
        txn.delete(b"c")
        txn.put(b"e", b"txn-e")
        self.assertEqual(txn.get(b"a"), b"db-a")
        self.assertIsNone(txn.get(b"new"))
        self.assertEqual(txn.get(b"b"), b"txn-b")
        self.assertIsNone(txn.get(b"c"))
        self.assertEqual(txn[b"e"], b"txn-e")
        with self.assertRaises(KeyError):
            txn[b"c"]
        self.assertIn(b"d", txn)
        self.assertNotIn(b"c", txn)
        del txn[b"d"]
        self.assertNotIn(b"d", txn)
        self.assertEqual(txn.multi_get([b"e", b"c", b"a", b"zz", b"b", b"new"]),
                         [b"txn-e", None, b"db-a", None, b"txn-b", None])
        self.assertEqual(txn.multi_get([]), [])
        self.assertEqual(txn.multi_get(k for k in [b"a"]), [b"db-a"])
        # The snapshot is usable with Db reads.
        self.assertEqual(self.db.get(b"a", snapshot=txn.snapshot), b"db-a")
        self.assertEqual(self.db.get(b"a"), b"after-begin")
        self.assertGreater(txn.snapshot.sequence, 0)
        self.assertEqual(txn.get_for_update(b"b"), b"txn-b")

    def test_iteration_merges_own_writes(self):
        txn = self.db.transaction()
        txn.put(b"b", b"txn-b")
        txn.delete(b"c")
        txn.put(b"bb", b"txn-bb")
        txn.put(b"p1", b"x")
        txn.put(b"p2", b"y")
        expected = [(b"a", b"db-a"), (b"b", b"txn-b"), (b"bb", b"txn-bb"), (b"d", b"db-d"),
                    (b"p1", b"x"), (b"p2", b"y")]
        self.assertEqual(list(txn.items()), expected)
        self.assertEqual(list(txn.items(reverse=True)), expected[::-1])
        self.assertEqual(list(txn.items(b"b", b"d")), expected[1:3])
        self.assertEqual(list(txn.items(b"b", b"d", reverse=True)), expected[2:0:-1])
        self.assertEqual(list(txn.keys(start=b"bb")), [k for k, _ in expected[2:]])
        self.assertEqual(list(txn.values(end=b"b")), [b"db-a"])
        self.assertEqual(list(txn), [k for k, _ in expected])
        self.assertEqual(list(txn.prefix(b"p")), [(b"p1", b"x"), (b"p2", b"y")])
        self.assertEqual(list(txn.prefix(b"p", reverse=True)), [(b"p2", b"y"), (b"p1", b"x")])

    def test_iterator_sees_writes_made_before_it_only(self):
        txn = self.db.transaction()
        it = txn.keys()
        txn.put(b"aa", b"later")
        self.assertEqual(list(it), [b"a", b"b", b"c", b"d"])
        self.assertEqual(list(txn.keys())[:2], [b"a", b"aa"])

    def test_large_transaction_iterates_in_chunks(self):
        txn = self.db.transaction()
        for i in range(10_000):
            txn.put(b"k%05d" % i, b"%d" % i)
        keys = list(txn.keys(b"k", b"l"))
        self.assertEqual(len(keys), 10_000)
        self.assertEqual(keys[9_999], b"k09999")
        self.assertEqual(next(iter(txn.items(b"k", reverse=True))), (b"k09999", b"9999"))

    def test_keys_must_be_bytes(self):
        txn = self.db.transaction()
        with self.assertRaises(TypeError):
            txn.get("a")
        with self.assertRaises(TypeError):
            txn.put(b"a", "text")
        with self.assertRaises(TypeError):
            txn.multi_get([b"a", 1])
        txn.put(bytearray(b"ba"), memoryview(b"mv"))
        self.assertEqual(txn.get(b"ba"), b"mv")


class Conflicts(TxnTestCase):
    def test_get_for_update_key_written_after_begin(self):
        self.db.put(b"k", b"0")
        txn = self.db.transaction()
        self.assertEqual(txn.get_for_update(b"k"), b"0")
        txn.put(b"other", b"x")
        self.db.put(b"k", b"1")
        with self.assertRaises(batchkv.Conflict) as cm:
            txn.commit()
        self.assertEqual((cm.exception.key, cm.exception.cf), (b"k", "default"))
        self.assertIsNone(self.db.get(b"other"))  # nothing applied

    def test_read_only_transaction_checks_get_for_update_keys(self):
        txn = self.db.transaction()
        txn.get_for_update(b"k")
        self.db.delete(b"k")  # a delete is a write too
        with self.assertRaises(batchkv.Conflict):
            txn.commit()

    def test_multi_get_for_update_tracks_every_key(self):
        self.db.put(b"a", b"1")
        txn = self.db.transaction()
        self.assertEqual(txn.multi_get_for_update([b"a", b"b"]), [b"1", None])
        self.db.put(b"b", b"2")
        with self.assertRaises(batchkv.Conflict) as cm:
            txn.commit()
        self.assertEqual(cm.exception.key, b"b")

    def test_plain_get_is_not_checked(self):
        self.db.put(b"k", b"0")
        txn = self.db.transaction()
        self.assertEqual(txn.get(b"k"), b"0")
        self.assertEqual(txn.multi_get([b"k"]), [b"0"])
        txn.put(b"other", b"x")
        self.db.put(b"k", b"1")
        txn.commit()  # snapshot isolation: write skew through plain reads is allowed
        self.assertEqual(self.db.get(b"other"), b"x")

    def test_writes_before_begin_do_not_conflict(self):
        self.db.put(b"k", b"0")
        txn = self.db.transaction()
        txn.get_for_update(b"k")
        txn.put(b"k", b"1")
        txn.commit()
        self.assertEqual(self.db.get(b"k"), b"1")

    def test_conflict_found_after_flush_and_compaction(self):
        txn = self.db.transaction()
        txn.get_for_update(b"k")
        self.db.put(b"k", b"newer")
        self.db.flush()
        self.db.compact_range()
        with self.assertRaises(batchkv.Conflict):
            txn.commit()

    def test_two_transactions_on_one_key_only_one_commits(self):
        t1, t2 = self.db.transaction(), self.db.transaction()
        for t, v in [(t1, b"one"), (t2, b"two")]:
            t.get_for_update(b"k")
            t.put(b"k", v)
        t1.commit()
        with self.assertRaises(batchkv.Conflict):
            t2.commit()
        self.assertEqual(self.db.get(b"k"), b"one")

    def test_write_skew_is_prevented_for_get_for_update_keys(self):
        """Two on-call doctors: each transaction reads both and takes one
        off call only if the other is on call. One of them must fail."""
        self.db.put(b"alice", b"on")
        self.db.put(b"bob", b"on")
        t1, t2 = self.db.transaction(), self.db.transaction()
        for t, me in [(t1, b"alice"), (t2, b"bob")]:
            on = [v == b"on" for v in (t.get_for_update(b"alice"), t.get_for_update(b"bob"))]
            self.assertEqual(on, [True, True])
            t.put(me, b"off")
        t1.commit()
        with self.assertRaises(batchkv.Conflict):
            t2.commit()
        self.assertEqual(self.db.multi_get([b"alice", b"bob"]), [b"off", b"on"])

    def test_concurrent_transfers_keep_the_total(self):
        accounts = [b"acct%02d" % i for i in range(6)]
        for a in accounts:
            self.db.put(a, b"100")
        conflicts = []
        errors = []

        def transfer(seed):
            try:
                for i in range(60):
                    src = accounts[(seed + i) % len(accounts)]
                    dst = accounts[(seed * 7 + i * 3 + 1) % len(accounts)]
                    if src == dst:
                        continue
                    while True:
                        try:
                            with self.db.transaction() as txn:
                                a, b = txn.multi_get_for_update([src, dst])
                                txn.put(src, b"%d" % (int(a) - 5))
                                txn.put(dst, b"%d" % (int(b) + 5))
                            break
                        except batchkv.Conflict:
                            conflicts.append(seed)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))

        threads = [threading.Thread(target=transfer, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(sum(int(v) for v in self.db.multi_get(accounts)), 600)


class SavepointsAndRollback(TxnTestCase):
    def test_savepoints_nest(self):
        txn = self.db.transaction()
        txn.put(b"a", b"1")
        txn.set_savepoint()
        txn.put(b"b", b"2")
        txn.set_savepoint()
        txn.delete(b"a")
        self.assertEqual(txn.pending_writes, 3)
        txn.rollback_to_savepoint()
        self.assertEqual(txn.multi_get([b"a", b"b"]), [b"1", b"2"])
        txn.rollback_to_savepoint()
        self.assertEqual(txn.multi_get([b"a", b"b"]), [b"1", None])
        with self.assertRaises(batchkv.InvalidArgument) as cm:
            txn.rollback_to_savepoint()
        self.assertIn("no savepoint", str(cm.exception))
        txn.commit()
        self.assertEqual(list(self.db.items()), [(b"a", b"1")])

    def test_rollback_to_savepoint_stops_tracking_later_reads(self):
        txn = self.db.transaction()
        txn.set_savepoint()
        txn.get_for_update(b"k")
        txn.rollback_to_savepoint()
        self.db.put(b"k", b"someone else")
        txn.put(b"mine", b"x")
        txn.commit()  # k is no longer checked
        self.assertEqual(self.db.get(b"mine"), b"x")

    def test_rollback_discards_everything_and_stays_usable(self):
        txn = self.db.transaction()
        txn.get_for_update(b"k")
        txn.put(b"a", b"1")
        txn.set_savepoint()
        txn.rollback()
        self.assertEqual(txn.pending_writes, 0)
        self.assertIsNone(txn.get(b"a"))
        with self.assertRaises(batchkv.InvalidArgument):
            txn.rollback_to_savepoint()  # savepoints are gone too
        self.db.put(b"k", b"someone else")  # no longer tracked
        txn.put(b"b", b"2")
        self.assertFalse(txn.finished)
        txn.commit()
        self.assertEqual(self.db.multi_get([b"a", b"b"]), [None, b"2"])


class Merges(TxnTestCase):
    options = {"merge_operator": "u64add"}

    def test_merges_read_through_the_operator(self):
        self.db.put(b"n", u64(10))
        with self.db.transaction() as txn:
            txn.merge(b"n", u64(5))
            txn.merge(b"fresh", u64(1))
            self.assertEqual(txn.get(b"n"), u64(15))
            self.assertEqual(txn.multi_get([b"n", b"fresh"]), [u64(15), u64(1)])
            self.assertEqual(dict(txn.items()), {b"n": u64(15), b"fresh": u64(1)})
        self.assertEqual(self.db.get(b"n"), u64(15))

    def test_bad_operand_is_merge_failed(self):
        txn = self.db.transaction()
        txn.merge(b"n", b"not8")
        with self.assertRaises(batchkv.MergeFailed):
            txn.get(b"n")


class MergeWithoutOperator(TxnTestCase):
    def test_reading_a_merged_key_is_invalid_argument(self):
        txn = self.db.transaction()
        txn.merge(b"m", b"x")
        with self.assertRaises(batchkv.InvalidArgument):
            txn.get(b"m")
        with self.assertRaises(batchkv.InvalidArgument):
            txn.multi_get([b"m"])


class ColumnFamilies(TxnTestCase):
    def test_reads_writes_and_conflicts_in_a_family(self):
        users = self.db.create_column_family("users")
        self.db.put(b"k", b"db-users", cf=users)
        self.db.put(b"k", b"db-default")
        txn = self.db.transaction()
        txn.put(b"u1", b"ada", cf=users)
        txn.delete(b"k", cf=users)
        self.assertIsNone(txn.get(b"k", cf=users))
        self.assertEqual(txn.get(b"k"), b"db-default")
        self.assertEqual(txn.multi_get([b"u1", b"k"], cf=users), [b"ada", None])
        self.assertEqual(list(txn.items(cf=users)), [(b"u1", b"ada")])
        self.assertEqual(list(txn.keys(cf=users, reverse=True)), [b"u1"])
        self.assertEqual(list(txn.values(cf=users)), [b"ada"])
        self.assertEqual(list(txn.prefix(b"u", cf=users)), [(b"u1", b"ada")])
        self.assertEqual(txn.get_for_update(b"u1", cf=users), b"ada")
        txn.commit()
        self.assertEqual(self.db.get(b"u1", cf=users), b"ada")
        self.assertIsNone(self.db.get(b"k", cf=users))
        self.assertEqual(self.db.get(b"k"), b"db-default")

        txn = self.db.transaction()
        txn.get_for_update(b"u1", cf=users)
        self.db.put(b"u1", b"grace", cf=users)
        with self.assertRaises(batchkv.Conflict) as cm:
            txn.commit()
        self.assertEqual((cm.exception.key, cm.exception.cf), (b"u1", "users"))

    def test_multi_get_for_update_in_a_family(self):
        users = self.db.create_column_family("users")
        self.db.put(b"a", b"1", cf=users)
        txn = self.db.transaction()
        self.assertEqual(txn.multi_get_for_update([b"a", b"b"], cf=users), [b"1", None])
        self.db.put(b"b", b"in default")  # another family: no conflict
        self.db.put(b"b", b"2", cf=users)
        with self.assertRaises(batchkv.Conflict) as cm:
            txn.commit()
        self.assertEqual((cm.exception.key, cm.exception.cf), (b"b", "users"))

    def test_merge_in_a_family(self):
        counters = self.db.create_column_family("counters", merge_operator="u64add")
        with self.db.transaction() as txn:
            txn.merge(b"c", u64(2), cf=counters)
            self.assertEqual(txn.get(b"c", cf=counters), u64(2))
        self.assertEqual(self.db.get(b"c", cf=counters), u64(2))

    def test_dropped_family_is_invalid_argument(self):
        tmp = self.db.create_column_family("tmp")
        txn = self.db.transaction()
        self.db.drop_column_family(tmp)
        with self.assertRaises(batchkv.InvalidArgument):
            txn.put(b"k", b"v", cf=tmp)


class Lifecycle(TxnTestCase):
    def test_closed_database(self):
        txn = self.db.transaction()
        txn.put(b"k", b"v")
        self.db.close()
        with self.assertRaises(batchkv.Closed):
            self.db.transaction()
        with self.assertRaises(batchkv.Closed):
            txn.commit()
        self.db = batchkv.Db(self.path)  # for tearDown

    def test_repr(self):
        txn = self.db.transaction()
        txn.put(b"k", b"v")
        self.assertRegex(repr(txn), r"<batchkv.Transaction sequence=\d+ pending_writes=1>")
        txn.rollback()
        with txn:
            pass
        self.assertEqual(repr(txn), "<batchkv.Transaction committed>")


class Gil(TxnTestCase):
    def test_multi_get_releases_the_gil(self):
        if not gilcheck.gil_is_enabled():
            self.skipTest("free-threaded build: no GIL")
        batch = batchkv.WriteBatch()
        for i in range(100_000):
            batch.put(b"g%06d" % i, b"%d" % i)
        self.db.write(batch)
        keys = [b"g%06d" % i for i in range(100_000)]
        txn = self.db.transaction()
        txn.put(b"g000007", b"own")
        results = []
        self.assertTrue(gilcheck.releases_gil(lambda: results.append(txn.multi_get(keys))))
        self.assertEqual(results[0][7], b"own")
        self.assertEqual(results[0][99_999], b"99999")


if __name__ == "__main__":
    unittest.main()
