//! `expandable_segments:True`: one segment per (stream, pool), a large
//! reserved address range whose pages (2 MiB for the small pool, 20 MiB
//! for the large) are mapped when a request needs them and unmapped when
//! the cache is released.
//!
//! As PyTorch's `ExpandableSegment`: the address space the segment has not
//! mapped is held as unmapped blocks beside the mapped ones; growing maps
//! the pages of the lowest-addressed run of free and unmapped blocks that
//! can hold the request; releasing unmaps every whole free page, wherever
//! it is. Each page is its own `cuMemCreate` and `cuMemMap`, a map ends
//! with one `cuMemSetAccess` over its pages, and an unmap waits for the
//! stream, then unmaps and releases page by page. A segment's address
//! space is reserved once (`cuMemAddressReserve`).

use gpumem::storage::DriverCall;

use super::blocks::Block;
use super::caching::CachingAllocator;
use super::policy::{Policy, Pool};

/// Address space reserved per expandable segment (1 TiB: more than any
/// device; PyTorch reserves 1.125 × the device's memory).
const SPAN: u64 = 1 << 40;

impl CachingAllocator {
    /// Maps the pages a run of free and unmapped blocks of the (stream,
    /// pool) segment needs to hold `rounded` bytes as one free block; that
    /// block's address, out of the free set. `Err` with the bytes it would
    /// have mapped when the device is full.
    pub(super) fn map_pages(&mut self, pool: Pool, stream: u64, rounded: u64) -> Result<u64, u64> {
        let id = self.expandable_segment(pool, stream);
        let page = Policy::page_size(pool);
        let (start, plan) = self.find_run(id, rounded, page).ok_or(rounded)?;
        let bytes: u64 = plan.iter().map(|&(_, len)| len).sum();
        self.hold(bytes)?;
        let pages = bytes / page;
        for (addr, len) in plan {
            let Some(hole) = self.take_unmapped(addr) else {
                continue;
            };
            let mapped = Block {
                size: len,
                mapped: true,
                ..hole
            };
            self.blocks.insert(addr, mapped);
            if len < hole.size {
                self.put_unmapped(addr + len, hole.size - len, hole);
            }
        }
        if let Some(s) = self.segments.get_mut(&id) {
            s.bytes += bytes;
        }
        self.calls.pages_mapped += pages;
        self.meter.charge_many(DriverCall::Create, pages, bytes);
        self.meter.charge_many(DriverCall::Map, pages, bytes);
        self.meter.charge(DriverCall::SetAccess, bytes);
        // One free block from `start` over everything mapped after it.
        let Some(mut block) = self.blocks.get(&start).copied() else {
            return Err(rounded);
        };
        self.free
            .remove(&(block.pool, block.stream, block.size, start));
        while let Some(&next) = self.blocks.get(&(start + block.size)) {
            if next.segment != id || !next.mapped || next.requested.is_some() {
                break;
            }
            self.forget(start + block.size, next);
            block.size += next.size;
        }
        self.blocks.insert(start, block);
        Ok(start)
    }

    /// The (stream, pool) segment, reserved (all of it unmapped) on first use.
    fn expandable_segment(&mut self, pool: Pool, stream: u64) -> u32 {
        if let Some(&id) = self.expandable.get(&(stream, pool)) {
            return id;
        }
        let (id, base) = self.new_segment(0, SPAN);
        self.expandable.insert((stream, pool), id);
        self.meter.charge(DriverCall::AddressReserve, SPAN);
        let hole = Block {
            segment: id,
            stream,
            pool,
            size: SPAN,
            requested: None,
            mapped: false,
        };
        self.put_unmapped(base, SPAN, hole);
        id
    }

    /// The first run (by address) of free and unmapped blocks of segment
    /// `id` that starts at or just before an unmapped block and holds
    /// `rounded` bytes: its start and the (address, bytes) to map in each
    /// unmapped block of it, whole pages.
    fn find_run(&self, id: u32, rounded: u64, page: u64) -> Option<(u64, Vec<(u64, u64)>)> {
        let base = self.segments.get(&id)?.base;
        for &hole in self.unmapped.range(base..base.saturating_add(SPAN)) {
            let start = match self.blocks.range(..hole).next_back() {
                Some((&a, b)) if b.segment == id && b.mapped && b.requested.is_none() => a,
                _ => hole,
            };
            let (mut have, mut plan, mut at) = (0u64, Vec::new(), start);
            while have < rounded {
                let Some(b) = self.blocks.get(&at).filter(|b| b.segment == id) else {
                    break;
                };
                if b.requested.is_some() {
                    break;
                }
                let take = if b.mapped {
                    b.size
                } else {
                    (rounded - have)
                        .div_ceil(page)
                        .saturating_mul(page)
                        .min(b.size)
                };
                if !b.mapped {
                    plan.push((at, take));
                }
                have += take;
                at += b.size;
            }
            if have >= rounded {
                return Some((start, plan));
            }
        }
        None
    }

    /// Unmaps every whole free page of every expandable segment.
    pub(super) fn unmap_free_pages(&mut self) {
        let free: Vec<(Pool, u64, u64, u64)> = self.free.iter().copied().collect();
        for (pool, _, size, addr) in free {
            let Some(&block) = self.blocks.get(&addr) else {
                continue;
            };
            let Some(base) = self.segments.get(&block.segment).map(|s| s.base) else {
                continue;
            };
            let page = Policy::page_size(pool);
            let first = base + (addr - base).div_ceil(page) * page;
            let end = base + (addr + size - base) / page * page;
            if first >= end {
                continue;
            }
            self.forget(addr, block);
            if first > addr {
                self.cache(
                    addr,
                    Block {
                        size: first - addr,
                        ..block
                    },
                );
            }
            if addr + size > end {
                self.cache(
                    end,
                    Block {
                        size: addr + size - end,
                        ..block
                    },
                );
            }
            self.put_unmapped(first, end - first, block);
            let (bytes, pages) = (end - first, (end - first) / page);
            if let Some(s) = self.segments.get_mut(&block.segment) {
                s.bytes -= bytes;
            }
            self.reserved -= bytes;
            self.calls.pages_unmapped += pages;
            self.meter.charge(DriverCall::StreamSynchronize, 0);
            self.meter.charge_many(DriverCall::Unmap, pages, bytes);
            self.meter.charge_many(DriverCall::Release, pages, bytes);
        }
    }

    /// Records `size` unmapped bytes at `addr` (of `like`'s segment),
    /// merged with unmapped neighbours.
    fn put_unmapped(&mut self, mut addr: u64, mut size: u64, like: Block) {
        let segment = like.segment;
        if let Some((&a, &b)) = self.blocks.range(..addr).next_back()
            && b.segment == segment
            && !b.mapped
            && a + b.size == addr
        {
            self.take_unmapped(a);
            (addr, size) = (a, size + b.size);
        }
        if let Some(&b) = self.blocks.get(&(addr + size))
            && b.segment == segment
            && !b.mapped
        {
            self.take_unmapped(addr + size);
            size += b.size;
        }
        let hole = Block {
            size,
            requested: None,
            mapped: false,
            ..like
        };
        self.blocks.insert(addr, hole);
        self.unmapped.insert(addr);
    }

    /// Removes the unmapped block at `addr`.
    fn take_unmapped(&mut self, addr: u64) -> Option<Block> {
        self.unmapped.remove(&addr);
        self.blocks.remove(&addr).filter(|b| !b.mapped)
    }
}
