//! The chunk slots of one arena page: which granule of the range has a
//! physical chunk, which live slices touch it, and the FIFO of idle ones
//! (mapped, touched by no live slice). Plain data with O(1) steps per
//! slot, or per 64-slot word where a whole slice is counted;
//! `pools/arena/chunks.rs` decides when chunks are mapped, moved or
//! released. This file holds the type and its growth; each file beside it
//! answers one question:
//!
//! - `extents.rs`: which chunk is under a slot, and may it be unmapped?
//! - `mapped.rs`: which slots of a span are mapped (a popcount per word)?
//! - `claim.rs`: is this span mapped? then claim it for a live slice.
//! - `release.rs`, `release_words.rs`: a slice freed, which slots go idle?
//! - `live.rs`: how many live slices touch a slot?
//! - `idle.rs`: the idle FIFO (queue, unqueue, the oldest to shed).
//! - `stamps.rs`: has the stream finished the work an idle slot saw?
//! - `uniform.rs`, `claim_uniform.rs`: the words inside a large span
//!   kept as a summary bit (held or rested), not a word per column.
//! - `bits.rs`: the bit-word helpers the columns share.

mod bits;
mod claim;
mod claim_uniform;
mod extents;
mod idle;
mod live;
mod mapped;
mod release;
mod release_words;
mod stamps;
mod uniform;

use mem_storage::ChunkId;

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
    /// written per slot (`live.rs`).
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
    /// [`Self::stamp_of`] (`stamps.rs`). Stale while not idle.
    pub(crate) stamp: Vec<u64>,
    /// One bit per slot, set where it is idle and has the stamp of the
    /// slot before it (both queued in one run): a run released whole is
    /// stamped by one store and a word of bits, not a fill per slot.
    pub(crate) stamp_bits: Vec<u64>,
    /// One bit per slot, set where a chunk is mapped: spans are checked
    /// and weighed 64 slots per word.
    pub(crate) mapped_bits: Vec<u64>,
    /// One bit per bit word, set where the word is *uniform*: its slots
    /// are all held by one live slice or all rested inside one idle run,
    /// as its bit in [`Self::rested`] says, and its words in the columns
    /// above (but the mapped bits) are stale (`uniform.rs`).
    pub(crate) uniform: Vec<u64>,
    pub(crate) rested: Vec<u64>,
    /// How many words are uniform: while none is, a step checks nothing.
    pub(crate) uniform_words: u64,
    /// One bit per bit word, set where every slot of it is mapped: a span
    /// of thousands of slots is weighed by its summary words.
    pub(crate) full: Vec<u64>,
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
            uniform: Vec::new(),
            rested: Vec::new(),
            uniform_words: 0,
            full: Vec::new(),
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
    /// frontier reaches its span's slots one by one (`chunks.rs`), and
    /// growing by one slot each time would resize the vector per slot.
    /// Slots past the last one touched read as absent ones do:
    /// no chunk, not live, not idle. Whole bit words of slots: a word's
    /// counts are one slice of 64 (`live.rs`).
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
        for summary in [&mut self.uniform, &mut self.rested, &mut self.full] {
            summary.resize(n.div_ceil(64).div_ceil(64), 0);
        }
    }
}

#[cfg(test)]
mod tests;
