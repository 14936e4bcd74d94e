//! Which chunk slots of an arena page are mapped, asked of the mapped
//! bits a 64-slot word at a time: placement weighs a span by its unmapped
//! slots (`pools/arena/place.rs`), and covering a span finds its runs of
//! unmapped slots (`pools/arena/chunks.rs`), neither slot by slot. The
//! bits themselves are kept by [`ChunkMap::set_extent`].

use crate::tables::chunk_map::ChunkMap;
use crate::tables::chunk_map::bits;
use crate::tables::chunk_map::uniform::UNIFORM_MIN;

impl ChunkMap {
    /// The first slot of `from..=last` that has a chunk (`mapped`) or has
    /// none (`!mapped`), or `last + 1`: a span's runs of unmapped slots
    /// found a mapped-bit word at a time (`chunks.rs`).
    pub(crate) fn next_slot(&self, mapped: bool, from: u32, last: u32) -> u32 {
        bits::next(&self.mapped_bits, mapped, from, last)
    }

    /// Slots of `span` with no chunk (slots past the map's end included).
    #[inline]
    pub(crate) fn unmapped_in(&self, span: std::ops::RangeInclusive<u32>) -> u64 {
        if span.is_empty() {
            return 0;
        }
        let (first, last) = (u64::from(*span.start()), u64::from(*span.end()));
        let word = |w: u64| self.mapped_bits.get(w as usize).copied().unwrap_or(0);
        if first / 64 == last / 64 {
            // Most slices: one word (a slice of up to 64 chunks often is).
            // Its unmapped bits, counted only when there are any: the
            // popcount is a software routine on this target (no POPCNT in
            // the baseline), and a fully mapped span (a reused hole, the
            // steady state) needs none.
            let mask = (u64::MAX << (first % 64)) & (u64::MAX >> (63 - last % 64));
            let holes = !word(first / 64) & mask;
            return match holes {
                0 => 0,
                holes => u64::from(holes.count_ones()),
            };
        }
        // Its unmapped bits, word by word: a word fully mapped (most of a
        // reused hole) costs a compare, no popcount.
        self.unmapped_in_words(first, last)
    }

    /// [`Self::unmapped_in`] of a span over several bit words (out of
    /// line: the one-word case stays inlined into placement).
    ///
    /// The words between the end words are checked fully mapped (a
    /// reused hole, the steady state) by one AND over them, which the
    /// compiler vectorizes, and counted word by word only when not; the
    /// end words are masked once each, and a span fully mapped is told
    /// by one test before any count. (A mask, compare and popcount per
    /// word would make an 8 GiB span's placement cost grow with its 64
    /// words even when all of them are mapped.)
    #[inline(never)]
    fn unmapped_in_words(&self, first: u64, last: u64) -> u64 {
        debug_assert!(first / 64 < last / 64);
        let bits = &self.mapped_bits;
        let words = bits.len();
        // The slots past the map's end.
        let mut unmapped = (last + 1).saturating_sub(first.max(words as u64 * 64));
        let (fw, lw) = ((first / 64) as usize, (last / 64) as usize);
        if fw >= words {
            return unmapped;
        }
        let holes = |word: u64| match word {
            0 => 0,
            holes => u64::from(holes.count_ones()),
        };
        let head = !bits[fw] & u64::MAX << (first % 64);
        let tail = match lw < words {
            true => !bits[lw] & u64::MAX >> (63 - last % 64),
            false => 0,
        };
        let inner = &bits[fw + 1..lw.min(words)];
        // Many words between (a span of thousands of slots): all mapped
        // told by their summary bits, a step per 64 words.
        let all = match inner.len() >= UNIFORM_MIN && lw < words && self.all_full(fw + 1, lw) {
            true => u64::MAX,
            false => inner.iter().fold(u64::MAX, |all, &word| all & word),
        };
        // Fully mapped (a reused hole, the steady state): one test, no
        // popcount (tested one by one, the end words' holes were counted
        // branch-free, a popcount each on every call, mapped or not).
        if head | tail | !all == 0 {
            return unmapped;
        }
        unmapped += holes(head) + holes(tail);
        if all != u64::MAX {
            unmapped += inner.iter().map(|&word| holes(!word)).sum::<u64>();
        }
        unmapped
    }
}
