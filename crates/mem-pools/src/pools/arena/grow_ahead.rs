//! Growing ahead: while a workload touches memory for the first time, the
//! chunk created at the end of a reservation is rounded up, so the
//! reservations that follow land on mapped slots instead of creating
//! their own chunks.
//!
//! Why: a reservation on empty slots costs a create, a map and a
//! set-access (three priced driver calls) however small it is; a model's
//! first step allocates hundreds of tensors one after another, each on
//! fresh slots. PyTorch's caching allocator takes 20 MiB segments for
//! such requests and expandable segments grow in 20 MiB pages, so they
//! pay one call per 20 MiB where gpumem pays three for every run of
//! fresh granules a tensor lands on. Rounding the
//! last chunk of a run up to a multiple of `arena_grow_ahead` bytes maps
//! the empty slots after it at once; they wait idle, and the next
//! reservations placed there (placement prefers mapped slots) need no
//! call.
//!
//! What it costs: physical memory. At the moment live data peaks, up to
//! one grow-ahead of idle slots sits past the last reservation, so the
//! peak can rise by that much — nothing on a large workload, a visible
//! share on a small one. Four bounds keep it there: it applies only
//! while live bytes are at their peak (a workload reusing memory it
//! already had grows nothing ahead), only after a reservation that ends
//! inside a granule (the next one begins in that granule; a buffer of
//! whole granules — devlog's 16 MiB blocks — shares nothing, and growing
//! ahead after it held devlog at 1.062 × live), never past half the
//! physical memory already held (a 40 MiB model does not get 20 MiB
//! extra), and only over empty slots no slice claims. Off by default:
//! measured on the recorded traces (docs/benchmarks.md, "The frontier
//! of the arena knobs"), 20 MiB beats both PyTorch rows on memory and on
//! every driver cost split on BERT inference and GPT-2 training and
//! generation, but holds more than the default where it is exact (span
//! 1.000 → 1.0015 × live, past expandable segments) and pays more driver
//! time on some serving seeds, which the default must not.

use crate::pools::arena::state::Arenas;
use crate::tables::floor::Tables;

impl Arenas {
    /// Where the chunk created for the empty slots `s..end` of arena page
    /// `page` should end: `end`, or up to one grow-ahead past it (the
    /// chunk's length rounded up to a multiple of `grow_ahead_bytes`)
    /// over empty, unclaimed slots while live bytes are at their peak,
    /// never past half the physical bytes held nor the largest chunk.
    pub(crate) fn grow_ahead_end(&self, t: &mut Tables, page: u32, (s, end): (u32, u32)) -> u32 {
        let live = &t.stats.requested_bytes;
        if self.grow_ahead_bytes == 0 || live.current < live.peak {
            return end;
        }
        let (held_bytes, page_bytes) = (t.stats.reserved_bytes.current, t.pages[page].size);
        let map = t.arena_map(page);
        let g = map.granularity;
        let step = (self.grow_ahead_bytes / g).max(1);
        let len = u64::from(end - s);
        let rounded = len.div_ceil(step).saturating_mul(step);
        let held = held_bytes / 2 / g;
        let largest = (self.max_chunk_bytes / g).max(len);
        let want = rounded
            .min(len + held)
            .min(largest)
            .min((page_bytes / g).saturating_sub(u64::from(s)));
        let Ok(want) = u32::try_from(u64::from(s) + want) else {
            return end;
        };
        if want <= end {
            return end;
        }
        map.slot(want - 1);
        let mut last = end;
        while last < want && map.unmapped_in(last..=last) == 1 && !map.is_live(last) {
            last += 1;
        }
        last
    }
}
