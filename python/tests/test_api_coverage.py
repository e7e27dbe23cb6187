"""Every public method and property of the package's classes, and every
exception class, is used by at least one test file (a method added
without a test fails here)."""

import pathlib
import re
import unittest

import batchkv

HERE = pathlib.Path(__file__).parent


class ApiCoverage(unittest.TestCase):
    def test_every_public_name_is_used_by_a_test(self):
        sources = "\n".join(
            p.read_text()
            for p in sorted(HERE.glob("test_*.py"))
            if p.name != pathlib.Path(__file__).name
        )
        classes = [batchkv.Db, batchkv.Transaction, batchkv.WriteBatch, batchkv.Snapshot,
                   batchkv.ColumnFamily, batchkv.Iterator]
        missing = []
        for cls in classes:
            for name in dir(cls):
                if name.startswith("_"):
                    continue
                if not re.search(r"\.%s\b" % re.escape(name), sources):
                    missing.append("%s.%s" % (cls.__name__, name))
        errors = [n for n in dir(batchkv)
                  if isinstance(getattr(batchkv, n), type)
                  and issubclass(getattr(batchkv, n), BaseException)]
        self.assertGreaterEqual(len(errors), 11)
        for name in errors:
            # By attribute, or by name in the hierarchy test's list.
            if not re.search(r'batchkv\.%s\b|"%s"' % (re.escape(name), re.escape(name)), sources):
                missing.append("batchkv.%s" % name)
        self.assertEqual(missing, [])


if __name__ == "__main__":
    unittest.main()
