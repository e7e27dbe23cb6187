//! The bench engine code RocksDB and Speedb share. The speedb crate is a fork
//! of rust-rocksdb: the same API under another crate name. The two cannot be
//! linked into one binary, so the shared code is a macro expanded once per
//! crate, in `rocksdb.rs` or `speedb.rs`.

/// Implements `Cursor` for `$krate::DBRawIterator` and `BenchDb` for
/// `$bench`, a struct with fields `db: $krate::DB`, `wopts: WriteOptions`,
/// `ropts: ReadOptions` and a method `iter_opts(&self) -> ReadOptions` (the
/// read options iterators need, e.g. `total_order_seek` on hash memtables).
macro_rules! rocks_family_engine {
    ($krate:ident, $bench:ident) => {
        impl $crate::bench::engine::Cursor for $krate::DBRawIterator<'_> {
            fn to_first(&mut self) {
                self.seek_to_first();
            }
            fn to_last(&mut self) {
                self.seek_to_last();
            }
            fn seek_to(&mut self, key: &[u8]) {
                self.seek(key);
            }
            fn is_valid(&self) -> bool {
                self.valid()
            }
            fn current_value(&self) -> &[u8] {
                self.value().unwrap_or_default()
            }
            fn step(&mut self, reverse: bool) {
                if reverse {
                    self.prev();
                } else {
                    self.next();
                }
            }
            fn check(&self) -> $crate::bench::engine::BenchResult<()> {
                Ok(self.status()?)
            }
        }

        impl $crate::bench::engine::BenchDb for $bench {
            fn write(
                &self,
                entries: &[$crate::bench::engine::Entry<'_>],
            ) -> $crate::bench::engine::BenchResult<()> {
                let mut b = $krate::WriteBatch::default();
                for (k, v) in entries {
                    match v {
                        Some(v) => b.put(k, v),
                        None => b.delete(k),
                    }
                }
                Ok(self.db.write_opt(b, &self.wopts)?)
            }

            fn get(&self, key: &[u8]) -> $crate::bench::engine::BenchResult<bool> {
                let v = self.db.get_pinned_opt(key, &self.ropts)?;
                Ok(std::hint::black_box(v).is_some())
            }

            fn multi_get(&self, keys: &[&[u8]]) -> $crate::bench::engine::BenchResult<usize> {
                let cf = self
                    .db
                    .cf_handle("default")
                    .ok_or("no default column family")?;
                let mut found = 0;
                for r in
                    self.db
                        .batched_multi_get_cf_opt(cf, keys.iter().copied(), false, &self.ropts)
                {
                    if let Some(v) = r? {
                        std::hint::black_box(&*v);
                        found += 1;
                    }
                }
                Ok(found)
            }

            fn scan(&self, reverse: bool) -> $crate::bench::engine::BenchResult<u64> {
                let mut it = self.db.raw_iterator_opt(self.iter_opts());
                $crate::bench::engine::scan_cursor(&mut it, reverse)
            }

            fn seeker(
                &self,
            ) -> $crate::bench::engine::BenchResult<Box<dyn $crate::bench::engine::Seeker + '_>>
            {
                Ok(Box::new($crate::bench::engine::CursorSeeker(
                    self.db.raw_iterator_opt(self.iter_opts()),
                )))
            }

            fn flush(&self) -> $crate::bench::engine::BenchResult<()> {
                Ok(self.db.flush()?)
            }

            fn compact(&self) -> $crate::bench::engine::BenchResult<u64> {
                self.db.compact_range(None::<&[u8]>, None::<&[u8]>);
                Ok(self
                    .db
                    .property_int_value("rocksdb.live-sst-files-size")?
                    .unwrap_or(0))
            }

            fn stats(&self) -> String {
                match self.db.property_value("rocksdb.stats") {
                    Ok(Some(s)) => s,
                    Ok(None) => "(no rocksdb.stats)".into(),
                    Err(e) => format!("(rocksdb.stats failed: {e})"),
                }
            }
        }
    };
}

pub(super) use rocks_family_engine;
