//! The chunk slots of one arena page: which granule of the range has a
//! physical chunk, which live slices touch it, and the FIFO of idle
//! ones (mapped, touched by no live slice; the list is `chunk_idle.rs`).
//! Plain data with O(1) steps per slot; `chunks.rs` decides when chunks
//! are mapped, moved or released. Whole slices are counted with
//! [`ChunkMap::claim_span`] / [`ChunkMap::release_span`] a 64-slot word
//! at a time (`chunk_live.rs`: a slot inside a slice carries no count of
//! its own), and a mapped bit per slot lets a span be checked or weighed
//! 64 slots per popcount (`chunk_mapped.rs`).

use mem_storage::ChunkId;

use crate::tables::chunk_bits;

/// A span that holds no slot (`take_idle` keeps nothing back).
#[allow(clippy::reversed_empty_ranges)]
pub(crate) const NONE: std::ops::RangeInclusive<u32> = 1..=0;

/// No slot: the end of the idle list.
pub(crate) const END: u32 = u32::MAX;

/// One granule of an arena page: its chunk. What changes on every claim
/// and release (live counts, idle bits, idle links, stamps) is kept in
/// columns of [`ChunkMap`] instead, so a slice's span is counted and
/// queued by loops over plain arrays the compiler vectorizes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    /// The chunk mapped over it; written only through
    /// [`ChunkMap::set_extent`], which keeps the mapped bits in step.
    pub(crate) chunk: Option<ChunkId>,
    /// The first slot of the chunk mapped here (a chunk may cover several
    /// slots: it was created sized to the run it filled).
    pub(crate) head: u32,
    /// At a chunk's first slot: the slots it covers (mapped and unmapped
    /// whole, never in part).
    pub(crate) len: u32,
}

impl Default for Slot {
    fn default() -> Self {
        Self {
            chunk: None,
            head: END,
            len: 0,
        }
    }
}

/// The chunk slots of one arena page.
#[derive(Debug, Clone)]
pub(crate) struct ChunkMap {
    pub(crate) granularity: u64,
    /// log2 of a power-of-two granularity (every backend's): spans are
    /// shifts, not divisions, on the reserve and free paths.
    shift: Option<u32>,
    /// Grown, doubling, to hold the highest slot touched (ranges are
    /// carved from the low end).
    pub(crate) slots: Vec<Slot>,
    /// Per slot, the live slices counted on it one by one (a slice of
    /// one slot, a lazily counted one, a slice sharing the slot): with
    /// its bit in [`Self::covered_bits`], the live slices touching it.
    /// Read whether a slot is live through [`Self::is_live`].
    pub(crate) live: Vec<u32>,
    /// One bit per slot, set where its `live` count is not zero: a span's
    /// slots left with no live slice are found a word at a time.
    pub(crate) counted_bits: Vec<u64>,
    /// One bit per slot, set where one more live slice touches it than
    /// `live` counts: a slice of several slots sets the bits of the slots
    /// no other slice touches (the ones inside it, in practice) a word at
    /// a time, so claiming and releasing it is O(slots / 64), not a count
    /// written per slot (`chunk_live.rs`).
    pub(crate) covered_bits: Vec<u64>,
    /// One bit per slot, set where it is idle: mapped, touched by no live
    /// slice, and linked in the idle list.
    pub(crate) idle_bits: Vec<u64>,
    /// Per slot, the idle list's older and newer neighbours ([`END`] at
    /// its ends), where [`Self::chain_bits`] does not say them: read them
    /// through [`Self::older_of`] and [`Self::newer_of`], write `newer`
    /// through [`Self::set_newer`]. Stale while the slot is not idle.
    pub(crate) older: Vec<u32>,
    pub(crate) newer: Vec<u32>,
    /// One bit per slot, set where it is idle and its newer neighbour is
    /// the next slot (so that slot's older one is this): a run of slots
    /// queued in slot order is a run of bits, set, found and cleared a
    /// word at a time, with no link written per slot.
    pub(crate) chain_bits: Vec<u64>,
    /// The stream's submit cursor when an idle slot became idle: work
    /// submitted up to it may still touch the slot, so its chunk is
    /// unmapped only once the stream has completed that far
    /// (`stream_order.rs`). Kept once per *stamp run* (slots queued idle
    /// together), at its first slot: read it through
    /// [`Self::stamp_of`] (`chunk_stamps.rs`). Stale while not idle.
    pub(crate) stamp: Vec<u64>,
    /// One bit per slot, set where it is idle and has the stamp of the
    /// slot before it (both queued in one run): a run released whole is
    /// stamped by one store and a word of bits, not a fill per slot.
    pub(crate) stamp_bits: Vec<u64>,
    /// One bit per slot, set where a chunk is mapped: spans are checked
    /// and weighed 64 slots per word.
    pub(crate) mapped_bits: Vec<u64>,
    /// The oldest and newest idle slots ([`END`] when none is idle).
    pub(crate) oldest: u32,
    pub(crate) newest: u32,
    pub(crate) idle_count: u64,
    pub(crate) mapped: u64,
    /// The stream's submit cursor now: the stamp of a slot going idle.
    pub(crate) submitted: u64,
    /// The stream's completed cursor now: a slot stamped at or below it
    /// is touched by no unfinished work.
    pub(crate) completed: u64,
    /// A shed found no chunk that may go among the idle slots it looked
    /// at; set until a slot goes idle or the completed cursor moves, so
    /// reservations do not walk the same partly live chunks again.
    pub(crate) shed_stuck: bool,
}

impl ChunkMap {
    pub(crate) fn new(granularity: u64) -> Self {
        Self {
            granularity,
            shift: granularity
                .is_power_of_two()
                .then(|| granularity.trailing_zeros()),
            slots: Vec::new(),
            live: Vec::new(),
            counted_bits: Vec::new(),
            covered_bits: Vec::new(),
            idle_bits: Vec::new(),
            older: Vec::new(),
            newer: Vec::new(),
            chain_bits: Vec::new(),
            stamp: Vec::new(),
            stamp_bits: Vec::new(),
            mapped_bits: Vec::new(),
            oldest: END,
            newest: END,
            idle_count: 0,
            mapped: 0,
            submitted: 0,
            completed: 0,
            shed_stuck: false,
        }
    }

    /// Slots `offset..offset + bytes` touches (none for an empty slice).
    pub(crate) fn span(&self, offset: u64, bytes: u64) -> std::ops::RangeInclusive<u32> {
        if bytes == 0 {
            return NONE;
        }
        let (first, last) = match self.shift {
            Some(shift) => (offset >> shift, (offset + bytes - 1) >> shift),
            None => (
                offset / self.granularity,
                (offset + bytes - 1) / self.granularity,
            ),
        };
        (first as u32)..=(last as u32)
    }

    #[inline]
    pub(crate) fn slot(&mut self, s: u32) -> &mut Slot {
        self.reach(s);
        &mut self.slots[s as usize]
    }

    /// Grow the slots to hold slot `s`: the check inline, the growth out
    /// of line.
    #[inline]
    pub(crate) fn reach(&mut self, s: u32) {
        if s as usize >= self.slots.len() {
            self.grow(s as usize + 1);
        }
    }

    /// Grow the slots to at least `n`, doubling: a reservation at the
    /// frontier walks its span slot by slot (`chunks.rs`), and growing by
    /// one slot each time was ~0.5 M of training's 20.7 M instructions at
    /// scale 0.2. Slots past the last one touched read as absent ones do:
    /// no chunk, not live, not idle. Whole bit words of slots: a word's
    /// counts are one slice of 64 (`chunk_live.rs`).
    #[cold]
    #[inline(never)]
    fn grow(&mut self, n: usize) {
        let n = n.max(self.slots.len() * 2).next_multiple_of(64);
        self.slots.resize(n, Slot::default());
        self.live.resize(n, 0);
        self.older.resize(n, END);
        self.newer.resize(n, END);
        self.stamp.resize(n, 0);
        for bits in [
            &mut self.counted_bits,
            &mut self.covered_bits,
            &mut self.idle_bits,
            &mut self.chain_bits,
            &mut self.stamp_bits,
            &mut self.mapped_bits,
        ] {
            bits.resize(n.div_ceil(64), 0);
        }
    }

    /// Put `chunk` under the `len` slots from `first` (`None`: the chunk
    /// that covered them was unmapped), keeping the mapped bits and the
    /// mapped count in step.
    pub(crate) fn set_extent(&mut self, first: u32, len: u32, chunk: Option<ChunkId>) {
        debug_assert!(len > 0);
        let last = first + (len - 1);
        self.reach(last);
        for slot in &mut self.slots[first as usize..=last as usize] {
            slot.chunk = chunk;
            slot.head = if chunk.is_some() { first } else { END };
        }
        self.slots[first as usize].len = if chunk.is_some() { len } else { 0 };
        match chunk {
            Some(_) => {
                chunk_bits::set(&mut self.mapped_bits, first, last);
                self.mapped += u64::from(len);
            }
            None => {
                chunk_bits::clear(&mut self.mapped_bits, first, last);
                self.mapped -= u64::from(len);
            }
        }
    }

    /// The chunk over mapped slot `s`: its first slot and how many it covers.
    pub(crate) fn extent(&self, s: u32) -> (u32, u32) {
        let head = self.slots[s as usize].head;
        (head, self.slots[head as usize].len)
    }

    /// Whether the chunk at `head` covering `len` slots may be unmapped
    /// whole: no live slice touches any of its slots, and the stream has
    /// completed the work it had submitted when each went idle (checked
    /// against the cursors, without waiting). One word of marks and a
    /// compare per stamp run for a chunk within one bit word (most);
    /// O(len / 64 + stamp runs) for a larger one.
    pub(crate) fn extent_ready(&self, head: u32, len: u32) -> bool {
        let (w, bit) = (head as usize / 64, head % 64);
        let last = head + (len - 1);
        if last / 64 != head / 64 {
            return !self.any_live(head, last) && self.stamps_done(head, last);
        }
        // Within one word (the chunks of small and mid-sized slices): the
        // live marks in one mask, then one compare per stamp run.
        let span = u64::MAX >> (63 - (len - 1)) << bit;
        if (self.counted_bits[w] | self.covered_bits[w]) & span != 0 {
            return false;
        }
        let first = match self.stamp_bits[w] >> bit & 1 {
            0 => self.stamp[head as usize],
            _ => self.stamp_of(head),
        };
        let heads = !self.stamp_bits[w] & span & !(1 << bit);
        first <= self.completed && !self.heads_pending(w as u32, heads)
    }

    /// Count one more live slice on slot `s` (no longer idle; lazily
    /// counted slices' slots may be unmapped).
    pub(crate) fn claim_slot(&mut self, s: u32) {
        self.reach(s);
        if self.count_slot(s) && self.is_idle(s) {
            self.unqueue(s);
        }
    }

    /// One live slice less on slot `s` (counted, so it exists); idle when
    /// none is left. The step [`ChunkMap::release_span`] batches (tests).
    #[cfg(test)]
    fn release_slot(&mut self, s: u32) {
        if self.uncount_slot(s) && self.slots[s as usize].chunk.is_some() {
            self.queue_idle(s);
        }
    }

    /// Count a slice on every slot of `span` if all are mapped; `false`,
    /// changing nothing (the idle order included), when one is not. Two
    /// tight passes over the slots, no growth check per slot.
    pub(crate) fn claim_span(&mut self, span: std::ops::RangeInclusive<u32>) -> bool {
        if span.is_empty() {
            return true;
        }
        if self.unmapped_in(span.clone()) > 0 {
            return false;
        }
        self.claim_mapped_span(span);
        true
    }
}

#[cfg(test)]
#[path = "chunk_map_tests.rs"]
mod tests;
