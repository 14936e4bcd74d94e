//! `expandable_segments:True`: one segment per (stream, pool) that grows by
//! mapping pages at its end (2 MiB pages for the small pool, 20 MiB for
//! the large), and shrinks by unmapping free pages.
//!
//! As PyTorch's `ExpandableSegment`: each page is its own `cuMemCreate`
//! and `cuMemMap`, a map call ends with one `cuMemSetAccess` over the
//! pages it mapped, and an unmap waits for the stream, then unmaps and
//! releases page by page. A segment's address space is reserved once
//! (`cuMemAddressReserve`).
//!
//! Simplification: the model grows and shrinks a segment at its end only.
//! PyTorch also unmaps free pages in the middle of a segment when the
//! cache is released and maps them again later; the model leaves those
//! mapped, so after a release it may hold more than PyTorch would.

use gpumem::storage::DriverCall;

use super::caching::{Block, CachingAllocator};
use super::policy::{Policy, Pool};

/// Address space reserved per expandable segment (1 TiB: more than any
/// device; PyTorch reserves 1.125 × the device's memory).
const SPAN: u64 = 1 << 40;

impl CachingAllocator {
    /// Maps enough pages at the end of the (stream, pool) segment that its
    /// free tail holds `rounded` bytes; that block's address, out of the
    /// free set. `Err` with the bytes it would have mapped when the device
    /// is full.
    pub(super) fn map_pages(&mut self, pool: Pool, stream: u64, rounded: u64) -> Result<u64, u64> {
        let id = match self.expandable.get(&(stream, pool)) {
            Some(&id) => id,
            None => {
                let (id, _) = self.new_segment(0, SPAN);
                self.expandable.insert((stream, pool), id);
                self.meter.charge(DriverCall::AddressReserve, SPAN);
                id
            }
        };
        let Some(segment) = self.segments.get(&id).copied() else {
            return Err(rounded);
        };
        let end = segment.base + segment.bytes;
        let tail = self
            .blocks
            .range(segment.base..end)
            .next_back()
            .map(|(&a, &b)| (a, b))
            .filter(|(_, b)| b.requested.is_none());
        let have = tail.map_or(0, |(_, b)| b.size);
        let page = Policy::page_size(pool);
        let pages = (rounded - have.min(rounded)).div_ceil(page);
        let bytes = pages * page;
        self.hold(bytes)?;
        if let Some(s) = self.segments.get_mut(&id) {
            s.bytes += bytes;
        }
        self.calls.pages_mapped += pages;
        self.meter.charge_many(DriverCall::Create, pages, bytes);
        self.meter.charge_many(DriverCall::Map, pages, bytes);
        self.meter.charge(DriverCall::SetAccess, bytes);
        let (addr, size) = match tail {
            Some((addr, block)) => {
                self.forget(addr, block);
                (addr, block.size + bytes)
            }
            None => (end, bytes),
        };
        let block = Block {
            segment: id,
            stream,
            pool,
            size,
            requested: None,
        };
        self.blocks.insert(addr, block);
        Ok(addr)
    }

    /// Unmaps every whole free page at the end of each expandable segment.
    pub(super) fn unmap_free_tails(&mut self) {
        let ids: Vec<(u32, Pool)> = self
            .expandable
            .iter()
            .map(|(&(_, p), &id)| (id, p))
            .collect();
        for (id, pool) in ids {
            let Some(segment) = self.segments.get(&id).copied() else {
                continue;
            };
            let end = segment.base + segment.bytes;
            let Some((addr, block)) = self
                .blocks
                .range(segment.base..end)
                .next_back()
                .map(|(&a, &b)| (a, b))
                .filter(|(_, b)| b.requested.is_none())
            else {
                continue;
            };
            let page = Policy::page_size(pool);
            let first_page = segment.base + (addr - segment.base).div_ceil(page) * page;
            if first_page >= end {
                continue;
            }
            let bytes = end - first_page;
            let pages = bytes / page;
            self.forget(addr, block);
            if first_page > addr {
                let kept = Block {
                    size: first_page - addr,
                    ..block
                };
                self.cache(addr, kept);
            }
            if let Some(s) = self.segments.get_mut(&id) {
                s.bytes -= bytes;
            }
            self.reserved -= bytes;
            self.calls.pages_unmapped += pages;
            self.meter.charge(DriverCall::StreamSynchronize, 0);
            self.meter.charge_many(DriverCall::Unmap, pages, bytes);
            self.meter.charge_many(DriverCall::Release, pages, bytes);
        }
    }
}
