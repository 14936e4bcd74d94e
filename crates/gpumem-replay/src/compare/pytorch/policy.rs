//! The caching allocator's published sizing policy: rounding, which pool a
//! request goes to, how large a new segment is, when a block is split and
//! which cached blocks a request may take.
//!
//! Constants and rules are those of PyTorch's
//! `c10/cuda/CUDACachingAllocator.cpp` (`round_size`,
//! `roundup_power2_next_division`, `get_pool`, `get_allocation_size`,
//! `should_split`, `get_free_block`).

use gpumem::storage::units::MIB;

/// Every block is a multiple of this (`kMinBlockSize`).
pub const MIN_BLOCK: u64 = 512;
/// Requests up to this go to the small pool (`kSmallSize`).
pub const SMALL_SIZE: u64 = MIB;
/// A small pool segment (`kSmallBuffer`).
pub const SMALL_BUFFER: u64 = 2 * MIB;
/// A large pool segment for requests below [`MIN_LARGE_ALLOC`]
/// (`kLargeBuffer`); also the page of an expandable large segment and the
/// slack an oversize block may have (`max_non_split_rounding`'s default).
pub const LARGE_BUFFER: u64 = 20 * MIB;
/// From this size a segment is the request rounded to [`ROUND_LARGE`]
/// (`kMinLargeAlloc`).
pub const MIN_LARGE_ALLOC: u64 = 10 * MIB;
/// Rounding of segments for large requests (`kRoundLarge`).
pub const ROUND_LARGE: u64 = 2 * MIB;

/// The two block pools of a device (per stream, as blocks carry their stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Pool {
    /// Requests of at most 1 MiB, in 2 MiB segments.
    Small,
    /// Everything larger.
    Large,
}

/// The knobs of `PYTORCH_CUDA_ALLOC_CONF` the model honours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Blocks of at least this size are never split and serve only
    /// requests of at least this size (`max_split_size_mb`; default
    /// unlimited).
    pub max_split_size: u64,
    /// Round requests to this many divisions between powers of two
    /// (`roundup_power2_divisions`, one value for every size; 0 or 1: off).
    pub roundup_power2_divisions: u64,
    /// `expandable_segments:True`: one growing segment per stream and pool,
    /// mapped page by page.
    pub expandable: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            max_split_size: u64::MAX,
            roundup_power2_divisions: 0,
            expandable: false,
        }
    }
}

/// `roundup_power2_next_division`: `size` rounded up to the next of
/// `divisions` equal steps between the powers of two around it.
fn next_division(size: u64, divisions: u64) -> u64 {
    if size.is_power_of_two() {
        return size;
    }
    let floor = 1u64 << (63 - size.leading_zeros());
    let step = floor >> (63 - divisions.leading_zeros());
    if step == 0 {
        return floor.saturating_mul(2);
    }
    let down = size & !(step - 1);
    if down == size {
        size
    } else {
        down.saturating_add(step)
    }
}

impl Policy {
    /// The block size a request of `size` bytes takes (`round_size`).
    pub fn round_size(&self, size: u64) -> u64 {
        let divisions = self.roundup_power2_divisions;
        if size < MIN_BLOCK {
            MIN_BLOCK
        } else if divisions > 1 && size > MIN_BLOCK.saturating_mul(divisions) {
            next_division(size, divisions)
        } else {
            size.div_ceil(MIN_BLOCK).saturating_mul(MIN_BLOCK)
        }
    }

    /// The pool of a rounded size (`get_pool`).
    pub fn pool(rounded: u64) -> Pool {
        if rounded <= SMALL_SIZE {
            Pool::Small
        } else {
            Pool::Large
        }
    }

    /// The bytes `cudaMalloc` is asked for when no cached block fits a
    /// rounded request (`get_allocation_size`).
    pub fn segment_size(rounded: u64) -> u64 {
        if rounded <= SMALL_SIZE {
            SMALL_BUFFER
        } else if rounded < MIN_LARGE_ALLOC {
            LARGE_BUFFER
        } else {
            rounded.div_ceil(ROUND_LARGE).saturating_mul(ROUND_LARGE)
        }
    }

    /// The page an expandable segment of `pool` maps at a time.
    pub fn page_size(pool: Pool) -> u64 {
        match pool {
            Pool::Small => SMALL_BUFFER,
            Pool::Large => LARGE_BUFFER,
        }
    }

    /// Whether a free block of `block` bytes in `pool` is split to serve
    /// `rounded` bytes (`should_split`): in the small pool and in
    /// expandable segments when at least 512 B remain, in the large pool
    /// when more than 1 MiB remains and the request is below
    /// `max_split_size`.
    pub fn should_split(&self, pool: Pool, block: u64, rounded: u64) -> bool {
        let remaining = block.saturating_sub(rounded);
        if pool == Pool::Small || self.expandable {
            remaining >= MIN_BLOCK
        } else {
            rounded < self.max_split_size && remaining > SMALL_SIZE
        }
    }

    /// Whether the best-fitting cached block of `block` bytes may serve
    /// `rounded` bytes (`get_free_block`'s oversize rules): a request below
    /// `max_split_size` never takes an oversize block, and an oversize
    /// request takes one only within 20 MiB of its size.
    pub fn may_take(&self, block: u64, rounded: u64) -> bool {
        if rounded < self.max_split_size {
            block < self.max_split_size
        } else {
            block < rounded.saturating_add(LARGE_BUFFER)
        }
    }
}
