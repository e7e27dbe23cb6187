//! A simulated last-level cache for the counting pass: which of the lines
//! a lookup reads would have to come from memory. Set-associative with LRU
//! replacement in each set; the real cache is shared with everything else
//! the machine runs, so the count is a lower bound on the misses.

/// Line addresses (address / 64) cached, per set most recent first.
pub struct LineCache {
    ways: usize,
    sets: Vec<u64>,
    /// Lines in each set so far (≤ ways).
    filled: Vec<u8>,
}

impl LineCache {
    /// A cache of `bytes` in 64-byte lines, `ways`-way set-associative.
    pub fn new(bytes: usize, ways: usize) -> LineCache {
        let ways = ways.clamp(1, 255);
        let sets = (bytes / 64 / ways).max(1);
        LineCache {
            ways,
            sets: vec![0; sets * ways],
            filled: vec![0; sets],
        }
    }

    /// The machine's last-level cache (Linux sysfs), else 32 MiB 16-way.
    pub fn last_level() -> LineCache {
        let read = |leaf: &str| {
            std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu0/cache/index3/{leaf}"))
                .ok()
        };
        let bytes = read("size").and_then(|s| {
            let s = s.trim();
            let (n, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
            let n: usize = n.parse().ok()?;
            Some(match unit {
                "K" => n << 10,
                "M" => n << 20,
                _ => n,
            })
        });
        let ways = read("ways_of_associativity").and_then(|s| s.trim().parse().ok());
        LineCache::new(bytes.unwrap_or(32 << 20), ways.unwrap_or(16))
    }

    /// Reads `line`; true on a miss.
    pub fn access(&mut self, line: usize) -> bool {
        let line = line as u64;
        let set = (line % self.filled.len() as u64) as usize;
        let ways = &mut self.sets[set * self.ways..][..self.ways];
        let filled = usize::from(self.filled[set]);
        let (hit, end) = match ways[..filled].iter().position(|&l| l == line) {
            Some(i) => (true, i),
            None if filled < self.ways => {
                self.filled[set] += 1;
                (false, filled)
            }
            None => (false, self.ways - 1),
        };
        // Move (or insert) to the front; the last way falls out when full.
        ways.copy_within(0..end, 1);
        ways[0] = line;
        !hit
    }
}

#[cfg(test)]
mod tests {
    use super::LineCache;

    #[test]
    fn lru_within_a_set() {
        // One set of two ways.
        let mut c = LineCache::new(128, 2);
        assert!(c.access(1));
        assert!(c.access(2));
        assert!(!c.access(1), "1 and 2 fit");
        assert!(c.access(3), "evicts 2, the least recent");
        assert!(!c.access(1));
        assert!(c.access(2));
    }
}
