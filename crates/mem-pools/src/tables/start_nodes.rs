//! The slice node of each start unit of a sliced page: a map from unit to
//! node, open addressed, for the start map (`starts.rs`).
//!
//! Split inserts one entry and coalesce removes one, so this map is on the
//! reserve+drop hot path, and a general hash map's insert and remove
//! (hashing, control bytes, growth checks) are a visible share of a
//! reserve+drop pair. Here a key is one word, hashed by one multiply
//! (Fibonacci hashing: the product's top bits), found by linear probing
//! in a table kept at most half full, and removed by shifting the rest of
//! its probe run back (no tombstones, so lookups never slow down as
//! entries come and go): a few loads and compares each. The numbers are
//! in docs/pools.md.

/// An empty entry's key: no start unit is this large (a unit is an offset
/// divided by the alignment, so below 2^64 − 1).
const EMPTY: u64 = u64::MAX;
/// Entries of a new table (a power of two).
const FIRST_CAPACITY: usize = 8;
/// 2^64 / φ, odd: the Fibonacci hashing multiplier.
const FIBONACCI: u64 = 0x9E37_79B9_7F4A_7C15;

/// The slice node of each start unit.
#[derive(Debug, Clone)]
pub(crate) struct StartNodes {
    /// `(unit, node)` per entry; `unit == EMPTY` where none. A power of two
    /// long (or empty before the first insert).
    entries: Vec<(u64, u32)>,
    /// Occupied entries.
    len: usize,
    /// `64 − log2(entries.len())`: the hash's top bits index the table.
    shift: u32,
}

impl Default for StartNodes {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            len: 0,
            shift: 64,
        }
    }
}

impl StartNodes {
    /// The entry a probe for `unit` starts at (the table is not empty).
    #[inline(always)]
    fn home(&self, unit: u64) -> usize {
        (unit.wrapping_mul(FIBONACCI) >> self.shift) as usize
    }

    #[inline(always)]
    fn mask(&self) -> usize {
        self.entries.len() - 1
    }

    /// The slice starting at `unit` is `node` (replacing any earlier one).
    #[inline]
    pub(crate) fn insert(&mut self, unit: u64, node: u32) {
        debug_assert_ne!(unit, EMPTY);
        if 2 * (self.len + 1) > self.entries.len() {
            self.grow();
        }
        let mask = self.mask();
        let mut i = self.home(unit);
        loop {
            let entry = &mut self.entries[i];
            if entry.0 == EMPTY {
                *entry = (unit, node);
                self.len += 1;
                return;
            }
            if entry.0 == unit {
                entry.1 = node;
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /// The node starting at `unit`, if any.
    pub(crate) fn get(&self, unit: u64) -> Option<u32> {
        if self.len == 0 || unit == EMPTY {
            return None;
        }
        let mask = self.mask();
        let mut i = self.home(unit);
        loop {
            let (key, node) = self.entries[i];
            if key == unit {
                return Some(node);
            }
            if key == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// No slice starts at `unit` any more.
    #[inline]
    pub(crate) fn remove(&mut self, unit: u64) {
        if self.len == 0 || unit == EMPTY {
            return;
        }
        let mask = self.mask();
        let mut hole = self.home(unit);
        loop {
            let key = self.entries[hole].0;
            if key == unit {
                break;
            }
            if key == EMPTY {
                return;
            }
            hole = (hole + 1) & mask;
        }
        self.len -= 1;
        // Shift the rest of the probe run back over the hole: an entry moves
        // when the hole lies between its home and where it sits now.
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let (key, node) = self.entries[j];
            if key == EMPTY {
                break;
            }
            let home = self.home(key);
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.entries[hole] = (key, node);
                hole = j;
            }
        }
        self.entries[hole].0 = EMPTY;
    }

    /// Double the table (8 entries at first) and put every entry back.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let capacity = (self.entries.len() * 2).max(FIRST_CAPACITY);
        let old = std::mem::replace(&mut self.entries, vec![(EMPTY, 0); capacity]);
        self.shift = 64 - capacity.trailing_zeros();
        self.len = 0;
        for (unit, node) in old {
            if unit != EMPTY {
                self.insert(unit, node);
            }
        }
    }

    /// Occupied entries (tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
#[path = "start_nodes_tests.rs"]
mod tests;
