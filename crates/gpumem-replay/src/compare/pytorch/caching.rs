//! The model's state: segments, the blocks that tile them, and the cached
//! free blocks ordered for best fit.
//!
//! Blocks live in one map by address; a segment's blocks are contiguous,
//! so a block's neighbours are the map's neighbours when they belong to
//! the same segment. Free blocks are also in a set ordered by (pool,
//! stream, size, address): a best fit is the first entry at or above
//! (pool, stream, rounded size), and a block is never handed to another
//! stream. Every operation is O(log n), except releasing the cache, which
//! visits the free blocks once, and mapping pages into an expandable
//! segment, which visits its holes in address order.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use gpumem::storage::{DriverCall, DriverCosts, DriverMeter, DriverTime};

use super::blocks::{Block, Calls, Segment};
use super::error::ModelError;
use super::policy::{Policy, Pool};

/// A modeled PyTorch `CUDACachingAllocator` for one device.
#[derive(Debug)]
pub struct CachingAllocator {
    pub(super) policy: Policy,
    pub(super) capacity: u64,
    pub(super) blocks: BTreeMap<u64, Block>,
    pub(super) free: BTreeSet<(Pool, u64, u64, u64)>,
    /// Addresses of the unmapped blocks of expandable segments.
    pub(super) unmapped: BTreeSet<u64>,
    pub(super) segments: BTreeMap<u32, Segment>,
    /// The expandable segments of each (stream, pool), in address order.
    pub(super) expandable: HashMap<(u64, Pool), Vec<u32>>,
    next_segment: u32,
    next_base: u64,
    pub(super) reserved: u64,
    peak_reserved: u64,
    live: u64,
    pub(super) calls: Calls,
    pub(super) meter: DriverMeter,
}

/// Addresses start here, so no block sits at address 0.
const FIRST_BASE: u64 = 1 << 32;

impl CachingAllocator {
    /// An empty cache on a device of `capacity` bytes, charging driver calls
    /// at `costs`.
    pub fn new(policy: Policy, capacity: u64, costs: DriverCosts) -> Self {
        CachingAllocator {
            policy,
            capacity,
            blocks: BTreeMap::new(),
            free: BTreeSet::new(),
            unmapped: BTreeSet::new(),
            segments: BTreeMap::new(),
            expandable: HashMap::new(),
            next_segment: 0,
            next_base: FIRST_BASE,
            reserved: 0,
            peak_reserved: 0,
            live: 0,
            calls: Calls::default(),
            meter: DriverMeter::new(costs),
        }
    }

    /// Allocates `size` bytes on `stream`; the block's address.
    ///
    /// # Errors
    /// [`ModelError::OutOfMemory`] when no cached block fits and no
    /// segment can be added, even after the cache is released.
    pub fn malloc(&mut self, size: u64, stream: u64) -> Result<u64, ModelError> {
        let rounded = self.policy.round_size(size);
        let pool = Policy::pool(rounded);
        let addr = match self.take_cached(pool, stream, rounded) {
            Some(addr) => addr,
            None => self
                .grow_retrying(pool, stream, rounded)
                .map_err(|needed| ModelError::OutOfMemory {
                    requested: size,
                    segment: needed,
                    reserved: self.reserved,
                    capacity: self.capacity,
                })?,
        };
        self.take(addr, rounded, size)
    }

    /// Returns the block at `addr` to the cache, merged with free neighbours.
    ///
    /// # Errors
    /// [`ModelError::NotAllocated`] when no allocated block starts there.
    pub fn free(&mut self, addr: u64) -> Result<(), ModelError> {
        let block = match self.blocks.get_mut(&addr) {
            Some(b) if b.requested.is_some() => b,
            _ => return Err(ModelError::NotAllocated { addr }),
        };
        self.live -= block.requested.take().unwrap_or(0);
        let mut block = *block;
        let mut start = addr;
        if let Some(next) = self.free_neighbour(addr + block.size, block.segment) {
            self.forget(addr + block.size, next);
            block.size += next.size;
        }
        let before = self.blocks.range(..addr).next_back().map(|(&a, &b)| (a, b));
        if let Some((prev_addr, prev)) = before
            && prev.segment == block.segment
            && prev.requested.is_none()
            && prev.mapped
        {
            self.forget(prev_addr, prev);
            self.blocks.remove(&addr);
            start = prev_addr;
            block.size += prev.size;
        }
        self.cache(start, block);
        Ok(())
    }

    /// Requested bytes allocated now.
    pub fn live_bytes(&self) -> u64 {
        self.live
    }

    /// Bytes held from the device now (`torch.cuda.memory_reserved()`).
    pub fn reserved_bytes(&self) -> u64 {
        self.reserved
    }

    /// The most bytes ever held (`max_memory_reserved()`).
    pub fn peak_reserved_bytes(&self) -> u64 {
        self.peak_reserved
    }

    /// The driver calls made so far.
    pub fn calls(&self) -> Calls {
        self.calls
    }

    /// Their modeled time.
    pub fn driver_time(&self) -> DriverTime {
        self.meter.snapshot()
    }

    /// The best-fitting cached block of this stream and pool, taken out of
    /// the free set (`get_free_block`).
    ///
    /// With expandable segments a free block before unmapped space can
    /// grow by mapping pages, so, as PyTorch does, a block counts as its
    /// size plus that space, and a request moves on to the next larger
    /// block while that one counts for less.
    fn take_cached(&mut self, pool: Pool, stream: u64, rounded: u64) -> Option<u64> {
        let mut fits = self
            .free
            .range((pool, stream, rounded, 0)..)
            .take_while(|&&(p, s, _, _)| p == pool && s == stream);
        let mut key = *fits.next()?;
        if self.policy.expandable {
            for &next in fits {
                if self.growable_size(next) >= self.growable_size(key) {
                    break;
                }
                key = next;
            }
        }
        if !self.policy.may_take(key.2, rounded) {
            return None;
        }
        self.free.remove(&key);
        Some(key.3)
    }

    /// A free block's size plus the unmapped space right after it.
    fn growable_size(&self, (_, _, size, addr): (Pool, u64, u64, u64)) -> u64 {
        let segment = self.blocks.get(&addr).map(|b| b.segment);
        let after =
            (self.blocks.get(&(addr + size))).filter(|b| !b.mapped && Some(b.segment) == segment);
        size.saturating_add(after.map_or(0, |b| b.size))
    }

    /// A new segment (or, expandable, newly mapped pages) holding a free
    /// block of at least `rounded` bytes, out of the free set; `Err` with
    /// the bytes it would have needed when the device is full.
    pub(super) fn grow(&mut self, pool: Pool, stream: u64, rounded: u64) -> Result<u64, u64> {
        if self.policy.expandable {
            return self.map_pages(pool, stream, rounded);
        }
        let bytes = Policy::segment_size(rounded);
        self.hold(bytes)?;
        let (segment, base) = self.new_segment(bytes, bytes);
        self.calls.cuda_mallocs += 1;
        // cuMemAlloc priced as its parts, so an override of `create` (or a
        // split) moves it as it moves the expandable row's cuMemCreate.
        self.meter.charge_composed(
            DriverCall::Alloc,
            bytes,
            &[DriverCall::Create, DriverCall::Map, DriverCall::SetAccess],
        );
        let block = Block {
            segment,
            stream,
            pool,
            size: bytes,
            requested: None,
            mapped: true,
        };
        self.blocks.insert(base, block);
        Ok(base)
    }

    /// Counts `bytes` more held, or refuses past the device's capacity.
    pub(super) fn hold(&mut self, bytes: u64) -> Result<(), u64> {
        match self.reserved.checked_add(bytes) {
            Some(total) if total <= self.capacity => {
                self.reserved = total;
                self.peak_reserved = self.peak_reserved.max(total);
                Ok(())
            }
            _ => Err(bytes),
        }
    }

    /// A segment of `held` bytes at a fresh base spanning `span` bytes of
    /// address space; its id and base.
    pub(super) fn new_segment(&mut self, held: u64, span: u64) -> (u32, u64) {
        let (id, base) = (self.next_segment, self.next_base);
        self.next_base = self.next_base.saturating_add(span);
        self.segments.insert(
            id,
            Segment {
                base,
                bytes: held,
                span,
            },
        );
        self.next_segment += 1;
        (id, base)
    }

    /// Allocates the free block at `addr` (out of the free set) for
    /// `rounded` bytes, splitting off the rest when the policy says so.
    fn take(&mut self, addr: u64, rounded: u64, requested: u64) -> Result<u64, ModelError> {
        let block = self
            .blocks
            .get_mut(&addr)
            .ok_or(ModelError::NotAllocated { addr })?;
        let rest = *block;
        if self.policy.should_split(block.pool, block.size, rounded) {
            block.size = rounded;
            let rest = Block {
                size: rest.size - rounded,
                ..rest
            };
            self.cache(addr + rounded, rest);
        }
        if let Some(block) = self.blocks.get_mut(&addr) {
            block.requested = Some(requested);
        }
        self.live += requested;
        Ok(addr)
    }

    /// The free block at `addr` when it belongs to `segment`.
    fn free_neighbour(&self, addr: u64, segment: u32) -> Option<Block> {
        let b = self.blocks.get(&addr)?;
        (b.segment == segment && b.requested.is_none() && b.mapped).then_some(*b)
    }

    /// Puts `block` at `addr` into the block map and the free set.
    pub(super) fn cache(&mut self, addr: u64, block: Block) {
        self.free
            .insert((block.pool, block.stream, block.size, addr));
        self.blocks.insert(addr, block);
    }

    /// Takes the free `block` at `addr` out of the block map and free set.
    pub(super) fn forget(&mut self, addr: u64, block: Block) {
        self.free
            .remove(&(block.pool, block.stream, block.size, addr));
        self.blocks.remove(&addr);
    }
}
