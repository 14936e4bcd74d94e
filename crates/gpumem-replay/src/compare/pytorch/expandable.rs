//! `expandable_segments:True`: segments per (stream, pool), each a large
//! reserved address range whose pages (2 MiB for the small pool, 20 MiB
//! for the large) are mapped when a request needs them and unmapped when
//! the cache is released.
//!
//! As PyTorch's `ExpandableSegment` and `find_expandable_block`: a segment
//! reserves 1⅛ × the device's memory of address space; the address space
//! it has not mapped is held as unmapped blocks beside the mapped ones;
//! growing maps the pages of the lowest-addressed run of free and
//! unmapped blocks of the stream and pool that can hold the request, and
//! only when no segment has one is a new segment reserved; releasing
//! unmaps every whole free page, wherever it is, and a segment left with
//! no page mapped gives its address range back. Each page is its own
//! `cuMemCreate` and `cuMemMap`, each unmapped block mapped into ends with
//! one `cuMemSetAccess` over its pages, and each free block unmapped waits
//! for the stream, then unmaps and releases page by page.

use gpumem::storage::DriverCall;

use super::blocks::{Block, MappedRange};
use super::caching::CachingAllocator;
use super::policy::{Policy, Pool};

impl CachingAllocator {
    /// Maps the pages a run of free and unmapped blocks of the (stream,
    /// pool) segments needs to hold `rounded` bytes as one free block; that
    /// block's address, out of the free set. `Err` with the bytes it would
    /// have mapped when the device is full.
    pub(super) fn map_pages(&mut self, pool: Pool, stream: u64, rounded: u64) -> Result<u64, u64> {
        let page = Policy::page_size(pool);
        let ids = self
            .expandable
            .get(&(stream, pool))
            .cloned()
            .unwrap_or_default();
        let found = ids
            .iter()
            .find_map(|&id| self.find_run(id, rounded, page).map(|run| (id, run)));
        let (id, (start, plan)) = match found {
            Some(found) => found,
            None => {
                let id = self.reserve_segment(pool, stream);
                (id, self.find_run(id, rounded, page).ok_or(rounded)?)
            }
        };
        let bytes: u64 = plan.iter().map(|&(_, len)| len).sum();
        self.hold(bytes)?;
        for &(addr, len) in &plan {
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
            // `map_block`: its pages created and mapped, then one access
            // call over them (a `segment_map` event).
            self.meter.charge_many(DriverCall::Create, len / page, len);
            self.meter.charge_many(DriverCall::Map, len / page, len);
            self.meter.charge(DriverCall::SetAccess, len);
        }
        if let Some(s) = self.segments.get_mut(&id) {
            s.bytes += bytes;
        }
        self.calls.pages_mapped += bytes / page;
        self.calls.segment_maps += plan.len() as u64;
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

    /// A new segment of the (stream, pool), all of it unmapped: 1⅛ × the
    /// device's memory of address space, whole pages, as PyTorch reserves.
    fn reserve_segment(&mut self, pool: Pool, stream: u64) -> u32 {
        let page = Policy::page_size(pool);
        let span = (self.capacity.saturating_add(self.capacity / 8))
            .div_ceil(page)
            .max(1)
            .saturating_mul(page);
        let (id, base) = self.new_segment(0, span);
        self.expandable.entry((stream, pool)).or_default().push(id);
        self.meter.charge(DriverCall::AddressReserve, span);
        let hole = Block {
            segment: id,
            stream,
            pool,
            size: span,
            requested: None,
            mapped: false,
        };
        self.put_unmapped(base, span, hole);
        id
    }

    /// The first run (by address) of free and unmapped blocks of segment
    /// `id` that starts at or just before an unmapped block and holds
    /// `rounded` bytes: its start and the (address, bytes) to map in each
    /// unmapped block of it, whole pages.
    fn find_run(&self, id: u32, rounded: u64, page: u64) -> Option<(u64, Vec<(u64, u64)>)> {
        let segment = self.segments.get(&id)?;
        let end = segment.base.saturating_add(segment.span);
        for &hole in self.unmapped.range(segment.base..end) {
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

    /// Unmaps every whole free page of every expandable segment, then
    /// gives back the address range of each segment left with none mapped
    /// (`release_blocks`: `unmap_block`, then `release_expandable_segment`).
    pub(super) fn unmap_free_pages(&mut self) {
        let free: Vec<(Pool, u64, u64, u64)> = self.free.iter().copied().collect();
        let mut emptied = Vec::new();
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
                if s.bytes == 0 {
                    emptied.push(block.segment);
                }
            }
            self.reserved -= bytes;
            self.calls.pages_unmapped += pages;
            self.calls.segment_unmaps += 1;
            self.meter.charge(DriverCall::StreamSynchronize, 0);
            self.meter.charge_many(DriverCall::Unmap, pages, bytes);
            self.meter.charge_many(DriverCall::Release, pages, bytes);
        }
        for id in emptied {
            self.release_expandable_segment(id);
        }
    }

    /// `cuMemAddressFree` of segment `id`, which has no page mapped: its
    /// one unmapped block goes, and the next request of its stream and
    /// pool that finds no room reserves a new segment.
    fn release_expandable_segment(&mut self, id: u32) {
        let Some(segment) = self.segments.remove(&id) else {
            return;
        };
        if let Some(hole) = self.take_unmapped(segment.base)
            && let Some(ids) = self.expandable.get_mut(&(hole.stream, hole.pool))
        {
            ids.retain(|&other| other != id);
        }
        self.meter.charge(DriverCall::AddressFree, segment.span);
    }

    /// The mapped runs of every expandable segment, by segment and address:
    /// what a snapshot's `segments` list shows of them.
    pub fn mapped_ranges(&self) -> Vec<MappedRange> {
        let mut ranges = Vec::new();
        for segment in self.segments.values() {
            let end = segment.base.saturating_add(segment.span);
            let mut run: Option<MappedRange> = None;
            for (&addr, block) in self.blocks.range(segment.base..end) {
                if !block.mapped {
                    ranges.extend(run.take());
                    continue;
                }
                let last = run.get_or_insert(MappedRange {
                    stream: block.stream,
                    pool: block.pool,
                    offset: addr - segment.base,
                    bytes: 0,
                });
                last.bytes += block.size;
            }
            ranges.extend(run);
        }
        ranges
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
