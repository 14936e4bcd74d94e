//! Where each slice of a sliced page starts: the boundary index that makes
//! `reclaim_extent` on a sliced page O(1) instead of a walk over the page.
//!
//! The page's slices already know their neighbours (`prev` / `next`), which
//! is all split and coalesce need; what they cannot answer is "which slice
//! holds byte `o`" without walking from the head. So every sliced page also
//! keeps one bit per alignment unit, set where a slice starts, with a
//! summary bit per 64-unit word, and a map from start unit to slice node.
//! Split sets a bit, coalesce clears one: O(1) each, no scan, so the free
//! path keeps its cost. The slice holding `o` is the last start at or
//! before it: its own word, then the summary words backwards — at most one
//! per 4096 alignment units of the page (1 for a 1 MiB page at 256-byte
//! alignment, 64 for a 64 MiB one), each a single mask test, independent of
//! how many slices the page holds.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Hashes a start unit with one folded multiply instead of SipHash.
///
/// Split and coalesce each touch the start map, so its hash is on the
/// reserve+drop hot path: SipHash made the map ~13 % of a pair's
/// instructions. The keys are the engine's own offsets (nothing a caller
/// chooses), so flooding resistance buys nothing here; a folded 64×64→128
/// multiply spreads sequential units over every bit hashbrown reads.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct UnitHasher(u64);

impl Hasher for UnitHasher {
    fn finish(&self) -> u64 {
        let wide = u128::from(self.0) * 0x9E37_79B9_7F4A_7C15;
        (wide as u64) ^ ((wide >> 64) as u64)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, unit: u64) {
        self.0 = self.0.rotate_left(32) ^ unit;
    }
}

/// Slice starts of one sliced page, in alignment units.
///
/// The bitmap grows to the highest start set so far rather than the page's
/// size: an arena page is a virtual range of tens of GiB of which only the
/// low end is ever carved, and a full bitmap of it would cost more memory
/// than the slices it indexes.
#[derive(Debug, Clone, Default)]
pub(crate) struct SliceStarts {
    bits: Vec<u64>,
    summary: Vec<u64>,
    /// Alignment units of the page: no start lies at or past it.
    units: u64,
    nodes: HashMap<u64, u32, BuildHasherDefault<UnitHasher>>,
}

impl SliceStarts {
    /// A page of `units` alignment units whose only slice, `head`, starts at 0.
    pub(crate) fn new(units: u64, head: u32) -> Self {
        let mut starts = Self {
            bits: Vec::new(),
            summary: Vec::new(),
            units,
            nodes: HashMap::default(),
        };
        starts.insert(0, head);
        starts
    }

    /// A slice `node` now starts at `unit`.
    #[inline]
    pub(crate) fn insert(&mut self, unit: u64, node: u32) {
        let (w, b) = ((unit / 64) as usize, unit % 64);
        if w >= self.bits.len() && !self.grow_to(unit, w) {
            return;
        }
        if let Some(word) = self.bits.get_mut(w) {
            *word |= 1 << b;
        }
        self.summary[w / 64] |= 1 << (w % 64);
        self.nodes.insert(unit, node);
    }

    /// Grow the bitmap to hold word `w` (a start past the highest so far);
    /// `false` for a unit past the page.
    #[cold]
    fn grow_to(&mut self, unit: u64, w: usize) -> bool {
        if unit >= self.units.max(1) {
            return false;
        }
        self.bits.resize(w + 1, 0);
        self.summary.resize((w + 1).div_ceil(64), 0);
        true
    }

    /// No slice starts at `unit` any more (it was absorbed by its left neighbour).
    pub(crate) fn remove(&mut self, unit: u64) {
        let (w, b) = ((unit / 64) as usize, unit % 64);
        if let Some(word) = self.bits.get_mut(w) {
            *word &= !(1 << b);
            if *word == 0 {
                self.summary[w / 64] &= !(1 << (w % 64));
            }
            self.nodes.remove(&unit);
        }
    }

    /// The slice node that starts at or last before `unit`.
    pub(crate) fn holding(&self, unit: u64) -> Option<u32> {
        if unit >= self.units.max(1) {
            return None;
        }
        let w = (unit / 64) as usize;
        // Past the highest word set, the holder is the last start of all.
        let (w, mask) = match self.bits.len().checked_sub(1)? {
            last if w > last => (last, u64::MAX),
            _ => (w, u64::MAX >> (63 - unit % 64)),
        };
        let word = self.bits[w];
        let below = word & mask;
        let start = if below != 0 {
            w as u64 * 64 + u64::from(63 - below.leading_zeros())
        } else {
            let w = self.prev_word(w)?;
            w as u64 * 64 + u64::from(63 - self.bits[w].leading_zeros())
        };
        self.nodes.get(&start).copied()
    }

    /// The last non-empty word before word `w`.
    fn prev_word(&self, w: usize) -> Option<usize> {
        let (mut s, bit) = (w / 64, w % 64);
        let mut mask = if bit == 0 { 0 } else { u64::MAX >> (64 - bit) };
        loop {
            let found = self.summary[s] & mask;
            if found != 0 {
                return Some(s * 64 + (63 - found.leading_zeros()) as usize);
            }
            s = s.checked_sub(1)?;
            mask = u64::MAX;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slice_holding_a_unit_is_the_last_start_at_or_before_it_across_words() {
        let mut s = SliceStarts::new(10_000, 7);
        assert_eq!(s.holding(0), Some(7));
        assert_eq!(s.holding(9_999), Some(7));
        s.insert(63, 1);
        s.insert(64, 2);
        s.insert(5_000, 3);
        assert_eq!(s.holding(62), Some(7));
        assert_eq!(s.holding(63), Some(1));
        assert_eq!(s.holding(4_999), Some(2));
        assert_eq!(s.holding(5_000), Some(3));
        assert_eq!(s.holding(9_999), Some(3));
        s.remove(5_000);
        s.remove(64);
        assert_eq!(s.holding(9_999), Some(1), "the summary skips emptied words");
        assert_eq!(s.holding(157 * 64), None, "past the last word");
    }

    #[test]
    fn the_unit_hasher_spreads_neighbouring_units_apart() {
        use std::hash::BuildHasher;
        let build = BuildHasherDefault::<UnitHasher>::default();
        let low: std::collections::HashSet<u64> =
            (0..1024u64).map(|u| build.hash_one(u) & 1023).collect();
        let high: std::collections::HashSet<u64> =
            (0..1024u64).map(|u| build.hash_one(u) >> 57).collect();
        assert!(low.len() > 512, "low bits collide: {} distinct", low.len());
        assert_eq!(high.len(), 128, "every top-7-bit tag is used");
    }
}
