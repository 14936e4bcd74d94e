//! The release of a span over several 64-slot bit words (`chunk_spans.rs`
//! has the rest): the counts go down in one pass, which also says whether
//! every slot inside the span reached zero. They lie wholly in the slice,
//! so they do unless another count is held on them (a lazily counted
//! slice's); then, with the span mapped, the slots left idle are one run
//! (the ends, which a neighbour may share, left out while still live),
//! queued at once with no mask built per word. Only otherwise are the
//! slots left idle found word by word from the counts.

use crate::tables::chunk_bits;
use crate::tables::chunk_map::{ChunkMap, END};
use crate::tables::chunk_spans::{Queued, drop_counts};

/// The bits, from bit `shift`, of the counts of `live` (at most 64 minus
/// `shift` of them) that are zero: eight at a time (a fold), slot by slot
/// only in the groups of eight where one is not (a word some live slice
/// still touches: usually the one slot a neighbour shares).
#[inline]
pub(super) fn freed_mask(live: &[u32], shift: u32) -> u64 {
    let mut freed = 0;
    for (k, group) in (0..).zip(live.chunks(8)) {
        let at = shift + 8 * k;
        if group.iter().fold(0, |any, &l| any | l) == 0 {
            freed |= u64::MAX >> (64 - group.len()) << at;
        } else {
            for (j, &l) in (0..).zip(group) {
                freed |= u64::from(l == 0) << (at + j);
            }
        }
    }
    freed
}

impl ChunkMap {
    /// [`Self::release_span`] of a span over several bit words.
    #[inline(never)]
    pub(super) fn release_in_words(&mut self, first: u32, last: u32) {
        let live = &mut self.live[first as usize..=last as usize];
        let n = live.len();
        let inner = drop_counts(live);
        let (a, b) = (
            first + u32::from(live[0] != 0),
            last - u32::from(live[n - 1] != 0),
        );
        if inner != 0 || (a <= b && !chunk_bits::all(&self.mapped_bits, a, b)) {
            return self.queue_freed(first, last);
        }
        if a <= b {
            let mut queued = Queued {
                head: END,
                tail: END,
                added: 0,
                stamp: self.submitted,
            };
            self.queue_run(a, b, &mut queued);
            self.splice(&queued);
        }
    }

    /// Queue the mapped slots of `first..=last` whose counts are zero
    /// (just released), run by run, a word at a time: runs that meet at a
    /// word's edge are queued as one.
    #[cold]
    #[inline(never)]
    fn queue_freed(&mut self, first: u32, last: u32) {
        let mut queued = Queued {
            head: END,
            tail: END,
            added: 0,
            stamp: self.submitted,
        };
        // The run of slots left idle not queued yet.
        let mut open: Option<(u32, u32)> = None;
        for w in first / 64..=last / 64 {
            let (lo, hi) = (first.max(w * 64), last.min(w * 64 + 63));
            let live = &self.live[lo as usize..=hi as usize];
            let freed = match live.iter().fold(0, |any, &l| any | l) {
                0 => u64::MAX >> (63 - (hi - lo)) << (lo % 64),
                _ => freed_mask(live, lo % 64),
            };
            let mut bits = freed & self.mapped_bits[w as usize];
            while bits != 0 {
                let a = bits.trailing_zeros();
                let len = (!(bits >> a)).trailing_zeros();
                bits &= !(u64::MAX >> (64 - len) << a);
                let (ra, rb) = (w * 64 + a, w * 64 + a + len - 1);
                open = match open {
                    Some((oa, ob)) if ob + 1 == ra => Some((oa, rb)),
                    Some((oa, ob)) => {
                        self.queue_run(oa, ob, &mut queued);
                        Some((ra, rb))
                    }
                    None => Some((ra, rb)),
                };
            }
        }
        if let Some((oa, ob)) = open {
            self.queue_run(oa, ob, &mut queued);
        }
        self.splice(&queued);
    }
}
