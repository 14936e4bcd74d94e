//! Which live slices touch an arena page's chunk slots, kept so that a
//! slice of many slots is counted a 64-slot word at a time.
//!
//! Slices are disjoint, so a slot that lies wholly inside a slice is
//! touched by no other: it needs no count, only a bit. A slot's live
//! slices are therefore its `live` count plus its *covered* bit. A span
//! claimed whole sets the covered bits of its slots that no slice touches
//! yet (every slot inside a slice, and its end slots when no neighbour
//! shares them), by word; only the slots already touched (an end slot a
//! neighbour shares) get a count, one by one. Its release clears the
//! covered bits it finds set, by word, and takes a count off the others.
//! Which slot holds which slice's mark does not matter, only the sum: so
//! any mix of claims (whole spans, slot by slot for lazy slices, one-slot
//! spans by count) stays exact, and the slots left with no live slice are
//! the span's bits with neither a covered bit nor a count bit
//! (`counted_bits`, kept in step with the counts).
//!
//! Why: writing every slot's count on each claim and release is a pass
//! over the span each way, so an 8 GiB slice freed and reserved in place
//! paid per slot for what one bit word answers for 64; the numbers are
//! in docs/pools.md.

use crate::tables::chunk_map::ChunkMap;

/// The bits of slots `first..=last` in their bit word `w` (`first` and
/// `last` clipped to it).
#[inline(always)]
pub(crate) fn word_mask(w: u32, first: u32, last: u32) -> u64 {
    let lo = first.max(w * 64) % 64;
    let hi = last.min(w * 64 + 63) % 64;
    u64::MAX >> (63 - hi) & u64::MAX << lo
}

impl ChunkMap {
    /// Whether a live slice touches slot `s` (past the map's end: no).
    #[inline]
    pub(crate) fn is_live(&self, s: u32) -> bool {
        let w = s as usize / 64;
        if self.uniform_at(w) {
            return !self.rested_at(w);
        }
        let marks = |bits: &Vec<u64>| bits.get(w).copied().unwrap_or(0);
        (marks(&self.counted_bits) | marks(&self.covered_bits)) >> (s % 64) & 1 != 0
    }

    /// The live slices touching slot `s` (tests: the model's counts).
    #[cfg(test)]
    pub(crate) fn live_count(&self, s: u32) -> u32 {
        let w = s as usize / 64;
        if self.uniform_at(w) {
            return u32::from(!self.rested_at(w));
        }
        self.live[s as usize]
            + u32::from(crate::tables::chunk_map::bits::get(&self.covered_bits, s))
    }

    /// Whether a live slice touches any slot of `first..=last` (all within
    /// the map): a word at a time.
    pub(crate) fn any_live(&self, first: u32, last: u32) -> bool {
        let marks = |w: u32| self.live_word(w as usize);
        if first / 64 == last / 64 {
            let span = u64::MAX >> (63 - (last - first)) << (first % 64);
            return marks(first / 64) & span != 0;
        }
        (first / 64..=last / 64).any(|w| marks(w) & word_mask(w, first, last) != 0)
    }

    /// How many slots live slices touch.
    pub(crate) fn live_slots(&self) -> u64 {
        let words = 0..self.counted_bits.len();
        words
            .map(|w| u64::from(self.live_word(w).count_ones()))
            .sum()
    }

    /// One count more on slot `s`; `true` when it had none (it may have
    /// been idle then, never otherwise: the caller looks only then).
    #[inline(always)]
    pub(crate) fn count_slot(&mut self, s: u32) -> bool {
        let live = &mut self.live[s as usize];
        *live += 1;
        if *live == 1 {
            let (w, bit) = (s as usize / 64, 1 << (s % 64));
            self.counted_bits[w] |= bit;
            return true;
        }
        false
    }

    /// One live slice less on slot `s` (one touches it): a count, or its
    /// covered bit when it has none (a slice claimed whole and released
    /// in parts: tests); `true` when no live slice touches it any more.
    #[inline(always)]
    pub(crate) fn uncount_slot(&mut self, s: u32) -> bool {
        let live = &mut self.live[s as usize];
        if *live == 0 {
            self.uncover_word(s as usize / 64, 1 << (s % 64));
            return true;
        }
        *live -= 1;
        if *live == 0 {
            let (w, bit) = (s as usize / 64, 1 << (s % 64));
            self.counted_bits[w] &= !bit;
            return self.covered_bits[w] & bit == 0;
        }
        false
    }

    /// Mark one more live slice on the slots `mask` of bit word `w`: a
    /// covered bit where no slice touches the slot yet, else a count.
    #[inline(always)]
    pub(crate) fn cover_word(&mut self, w: usize, mask: u64) {
        let (covered, counted) = (self.covered_bits[w], self.counted_bits[w]);
        let fresh = mask & !covered & !counted;
        self.covered_bits[w] = covered | fresh;
        let mut shared = mask & !fresh;
        if shared != 0 {
            self.counted_bits[w] = counted | shared;
            // The map holds whole words of slots (`grow`).
            let live = &mut self.live[w * 64..][..64];
            while shared != 0 {
                live[shared.trailing_zeros() as usize & 63] += 1;
                shared &= shared - 1;
            }
        }
    }

    /// Take one live slice off the slots `mask` of bit word `w` (each has
    /// one marked): its covered bit where set, else a count. Returns the
    /// slots of `mask` no live slice touches any more.
    #[inline(always)]
    pub(crate) fn uncover_word(&mut self, w: usize, mask: u64) -> u64 {
        let covered = self.covered_bits[w];
        self.covered_bits[w] = covered & !mask;
        let mut counted = mask & !covered;
        if counted != 0 {
            let mut emptied = 0;
            let live = &mut self.live[w * 64..][..64];
            while counted != 0 {
                let b = counted.trailing_zeros() & 63;
                let count = &mut live[b as usize];
                debug_assert!(
                    *count > 0,
                    "slot {} released with no count",
                    w * 64 + b as usize
                );
                *count -= 1;
                emptied |= u64::from(*count == 0) << b;
                counted &= counted - 1;
            }
            self.counted_bits[w] &= !emptied;
        }
        mask & !self.counted_bits[w]
    }
}
