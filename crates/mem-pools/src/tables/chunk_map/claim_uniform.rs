//! A span's claim and release when the words inside it are uniform
//! (`uniform.rs`): a span of thousands of slots freed and reserved again
//! in place, the usual case for a large buffer, writes its two end words
//! and the summary bits of the words between, not a word of each column
//! per 64 slots. The ends are worked as `claim.rs` and `release.rs` work
//! any span's; the idle run that crosses the inside words is unlinked or
//! queued with one splice, its ends in the end words. The same unlink
//! serves a span whose inside words are idle and chained in the columns
//! (`claim.rs`, a hole reused whole below the uniform threshold).

use crate::tables::chunk_map::ChunkMap;
use crate::tables::chunk_map::release_words::FEW_WORDS;

impl ChunkMap {
    /// Count a slice on every slot of `first..=last`, a span over several
    /// bit words whose inside words are all rested: the one idle run that
    /// crosses them unlinked with one splice, the end words' other runs
    /// as `claim.rs` unlinks them, the inside words turned held.
    #[inline(never)]
    pub(super) fn claim_rested(&mut self, first: u32, last: u32) {
        let (fw, lw) = ((first / 64) as usize, (last / 64) as usize);
        // The end words and the words beside them may be written (a
        // link, a stamp): settled. The inside words stay uniform. When
        // they are the only uniform words (one large span reused in place,
        // the usual case), no other word is looked at.
        if self.uniform_words > (lw - fw - 1) as u64 {
            for w in [fw.wrapping_sub(1), fw, lw, lw + 1] {
                if self.uniform_at(w) {
                    self.settle_words(w, w);
                }
            }
        }
        self.unlink_crossing(first, last, true);
        self.set_rested(fw + 1, lw, false);
        self.cover_word(fw, u64::MAX << (first % 64));
        self.cover_word(lw, u64::MAX >> (63 - last % 64));
    }

    /// Take the idle slots of `first..=last`, a span over several bit
    /// words crossed by one idle run, off the idle list: that run with one
    /// splice, its ends read from the end words' chain bits (no search
    /// along it), the end words' other runs as `claim.rs` unlinks them.
    /// Its inside words are all rested (`rested`: left for the caller to
    /// turn held), or all idle and chained in the columns (cleared here).
    #[inline(always)]
    pub(super) fn unlink_crossing(&mut self, first: u32, last: u32, rested: bool) {
        let (fw, lw) = ((first / 64) as usize, (last / 64) as usize);
        debug_assert!(self.chain_bits[fw] >> 63 == 1 && self.idle_bits[lw] & 1 == 1);
        // The crossing run's slots in the first word: the top ones chained
        // to the next; in the last word: up to its first unchained one.
        let top = 64 - (!self.chain_bits[fw]).leading_zeros();
        let ra = first.max(fw as u32 * 64 + top);
        let rb = last.min(lw as u32 * 64 + (!self.chain_bits[lw]).trailing_zeros());
        // Other idle runs in the end words (none where a neighbour shares
        // the end slot, the usual case: no search then).
        let before = u64::MAX << (first % 64) & !(u64::MAX << (ra % 64));
        if self.idle_bits[fw] & before != 0 {
            self.unlink_in_word(first, ra - 1);
        }
        let after = u64::MAX << ((rb + 1) % 64) & u64::MAX >> (63 - last % 64);
        if rb < last && self.idle_bits[lw] & after != 0 {
            self.unlink_in_word(rb + 1, last);
        }
        // Its neighbours read once the end words' other runs are out.
        let (older, newer) = (self.older_of(ra), self.newer_of(rb));
        self.split_stamp_after(rb);
        let head = u64::MAX << (ra % 64);
        let tail = u64::MAX >> (63 - rb % 64);
        for (w, run) in [(fw, head), (lw, tail)] {
            self.idle_bits[w] &= !run;
            self.chain_bits[w] &= !run;
            self.stamp_bits[w] &= !run;
        }
        let inner = fw + 1..lw;
        if !rested && inner.len() > FEW_WORDS {
            self.idle_bits[inner.clone()].fill(0);
            self.chain_bits[inner.clone()].fill(0);
            self.stamp_bits[inner].fill(0);
        } else if !rested {
            let idle = self.idle_bits[inner.clone()].iter_mut();
            let chain = self.chain_bits[inner.clone()].iter_mut();
            let stamp = self.stamp_bits[inner].iter_mut();
            for ((i, c), s) in idle.zip(chain).zip(stamp) {
                (*i, *c, *s) = (0, 0, 0);
            }
        }
        self.idle_count -= u64::from(rb - ra) + 1;
        self.link(older, newer);
    }
}
