//! Uniform words: the 64-slot words inside a large span, kept as one bit
//! of a summary instead of a word in every column, so that claiming and
//! releasing a span of thousands of slots writes its two end words and
//! one summary bit per 64 inside words, not every column's words.
//!
//! A word is *uniform* (its bit set in `uniform`) in one of two states,
//! told by its bit in `rested`:
//!
//! - *held*: every slot is inside one live slice and touched by no other
//!   (covered bits all set, no counts, not idle);
//! - *rested*: every slot is inside one idle run and one stamp run, and
//!   neither run starts or ends in it (idle, chain and stamp bits all
//!   set, not live).
//!
//! Either way every slot is mapped (the mapped bits stay exact, and
//! `full` summarizes them: a bit per word all mapped). The column words
//! of a uniform word are stale: a step that changes a slot *settles* the
//! words of its span and their neighbours first (writes the state back
//! into the columns), and the readers that may meet a uniform word read
//! through it. The words a span's claim and release leave uniform are
//! only its inside words (`claim_uniform.rs`); a held word turns rested
//! and back by a summary bit. Why not per slot: a 64 GiB slice is 32,768
//! slots, 512 words in each of six columns.

use crate::tables::chunk_map::ChunkMap;
use crate::tables::chunk_map::bits;

/// Inside words a span must have for its release to leave them uniform.
/// A span whose next claim takes only part of them (a buffer grown into
/// a larger one over its hole) settles them again, a fill per column and
/// the summary's steps: more than the columns' words cost, on the
/// `growth` workload, at 30 words and below. 60 words (3,840 slots, an
/// 8 GiB slice of 2 MiB chunks has 62 or 63) keeps that workload's spans
/// out. Tests take 4, so that spans of a few hundred slots meet every
/// path.
#[cfg(not(test))]
pub(super) const UNIFORM_MIN: usize = 60;
#[cfg(test)]
pub(super) const UNIFORM_MIN: usize = 4;

impl ChunkMap {
    /// Whether bit word `w` is uniform (one test while none is).
    #[inline(always)]
    pub(super) fn uniform_at(&self, w: usize) -> bool {
        self.uniform_words != 0 && bits::get(&self.uniform, w as u32)
    }

    /// Whether uniform word `w` is rested (else held).
    #[inline(always)]
    pub(super) fn rested_at(&self, w: usize) -> bool {
        bits::get(&self.rested, w as u32)
    }

    /// Settle the words of slots `first..=last` and the words on either
    /// side (a step on the span may write a link or a stamp there).
    #[inline(always)]
    pub(super) fn settle_around(&mut self, first: u32, last: u32) {
        if self.uniform_words != 0 {
            let lo = (first / 64).saturating_sub(1) as usize;
            self.settle_words(lo, last as usize / 64 + 1);
        }
    }

    /// Settle every uniform word of words `lo..=hi`: each stretch of
    /// words in one state written back by a fill per column (what the
    /// release or claim that left them uniform did not write).
    #[cold]
    #[inline(never)]
    pub(super) fn settle_words(&mut self, lo: usize, hi: usize) {
        let Some(end) = self.covered_bits.len().checked_sub(1) else {
            return;
        };
        let hi = hi.min(end) as u32;
        let mut w = lo as u32;
        while w <= hi && self.uniform_words != 0 {
            let u = bits::next(&self.uniform, true, w, hi);
            if u > hi {
                break;
            }
            let rested = self.rested_at(u as usize);
            // The stretch from `u` in this state: up to the first word not
            // uniform or in the other one.
            let stop = bits::next(&self.uniform, false, u, hi).min(bits::next(
                &self.rested,
                !rested,
                u,
                hi,
            ));
            self.settle_stretch(u as usize, stop as usize, rested);
            w = stop;
        }
    }

    /// Write uniform words `lo..hi`, all in state `rested`, back into the
    /// columns. Their count bits are not written: they were clear when
    /// the words turned uniform and stay so, but for the count a claim of
    /// one slot puts on before it settles its word (`claim.rs`).
    fn settle_stretch(&mut self, lo: usize, hi: usize, rested: bool) {
        let on = match rested {
            true => u64::MAX,
            false => 0,
        };
        self.covered_bits[lo..hi].fill(!on);
        self.idle_bits[lo..hi].fill(on);
        self.chain_bits[lo..hi].fill(on);
        if !rested {
            self.stamp_bits[lo..hi].fill(0);
        }
        bits::clear(&mut self.uniform, lo as u32, hi as u32 - 1);
        bits::clear(&mut self.rested, lo as u32, hi as u32 - 1);
        self.uniform_words -= (hi - lo) as u64;
    }

    /// Every word settled (tests read the columns raw).
    #[cfg(test)]
    pub(crate) fn settle_all(&mut self) {
        self.settle_words(0, self.covered_bits.len());
    }

    /// Make words `lo..hi`, none uniform, uniform in state `rested`: their
    /// column words are stale from now on, but their stamp bits, set all
    /// (true of a rested word, and a held one is never read by the search
    /// for a stamp run's head, `stamps.rs`), so that search reads them raw.
    pub(super) fn make_uniform(&mut self, lo: usize, hi: usize, rested: bool) {
        self.stamp_bits[lo..hi].fill(u64::MAX);
        debug_assert!(
            lo < hi && bits::next(&self.uniform, true, lo as u32, hi as u32 - 1) >= hi as u32
        );
        bits::set(&mut self.uniform, lo as u32, hi as u32 - 1);
        self.set_rested(lo, hi, rested);
        self.uniform_words += (hi - lo) as u64;
    }

    /// Turn uniform words `lo..hi` held or rested.
    #[inline]
    pub(super) fn set_rested(&mut self, lo: usize, hi: usize, rested: bool) {
        let value = match rested {
            true => u64::MAX,
            false => 0,
        };
        each_summary_word(lo, hi, |i, mask| {
            let word = &mut self.rested[i];
            *word = *word & !mask | value & mask;
        });
    }

    /// Whether words `lo..hi` (some) are all uniform, all in state `rested`:
    /// one pass over their summary words.
    #[inline]
    pub(super) fn all_uniform(&self, lo: usize, hi: usize, rested: bool) -> bool {
        if self.uniform_words < (hi - lo) as u64 {
            return false;
        }
        let flip = match rested {
            true => u64::MAX,
            false => 0,
        };
        let mut off = 0;
        each_summary_word(lo, hi, |i, mask| {
            off |= (!self.uniform[i] | self.rested[i] ^ flip) & mask;
        });
        off == 0
    }

    /// Whether words `lo..hi` (some) are all mapped, by the summary.
    #[inline]
    pub(super) fn all_full(&self, lo: usize, hi: usize) -> bool {
        let mut off = 0;
        each_summary_word(lo, hi, |i, mask| off |= !self.full[i] & mask);
        off == 0
    }

    /// Bring the summary of mapped words `lo..=hi` in step with their
    /// mapped bits (a chunk mapped or unmapped over them).
    pub(super) fn refresh_full(&mut self, lo: usize, hi: usize) {
        for w in lo..=hi {
            bits::put(&mut self.full, w as u32, self.mapped_bits[w] == u64::MAX);
        }
    }
}

/// Call `f` with each summary word of words `lo..hi` (some) and the bits
/// of it they hold.
#[inline(always)]
fn each_summary_word(lo: usize, hi: usize, mut f: impl FnMut(usize, u64)) {
    let (first, last) = (lo / 64, (hi - 1) / 64);
    let head = u64::MAX << (lo % 64);
    let tail = u64::MAX >> (63 - (hi - 1) % 64);
    if first == last {
        return f(first, head & tail);
    }
    f(first, head);
    for i in first + 1..last {
        f(i, u64::MAX);
    }
    f(last, tail);
}

/// The columns' words read through uniform words (the readers that may
/// meet one: walks of the idle list, checks of a chunk before it goes).
impl ChunkMap {
    /// Word `w` of the live marks (covered or counted).
    #[inline]
    pub(super) fn live_word(&self, w: usize) -> u64 {
        match self.uniform_at(w) {
            true => self.state_word(w, false),
            false => self.counted_bits[w] | self.covered_bits[w],
        }
    }

    /// Word `w` of the idle bits.
    #[inline]
    pub(super) fn idle_word(&self, w: usize) -> u64 {
        match self.uniform_at(w) {
            true => self.state_word(w, true),
            false => self.idle_bits[w],
        }
    }

    /// Word `w` of the stamp bits.
    #[inline]
    pub(super) fn stamp_word(&self, w: usize) -> u64 {
        match self.uniform_at(w) {
            true => self.state_word(w, true),
            false => self.stamp_bits[w],
        }
    }

    /// Uniform word `w`'s bits in a column set where rested (`idle`) or
    /// where held (`!idle`).
    #[inline]
    fn state_word(&self, w: usize, idle: bool) -> u64 {
        match self.rested_at(w) == idle {
            true => u64::MAX,
            false => 0,
        }
    }
}
