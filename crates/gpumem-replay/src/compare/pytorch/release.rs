//! Releasing the cache: the two retries PyTorch makes before it reports
//! out of memory (`release_available_cached_blocks`, then
//! `release_cached_blocks`), the latter also what `torch.cuda.empty_cache()`
//! does on demand.

use gpumem::storage::DriverCall;

use super::caching::CachingAllocator;
use super::policy::Pool;

impl CachingAllocator {
    /// [`CachingAllocator::grow`], and when the device is full PyTorch's
    /// retries: oversize cached blocks of this stream and pool freed until
    /// the request fits (only with `max_split_size` set), then every wholly
    /// free cached segment.
    pub(super) fn grow_retrying(
        &mut self,
        pool: Pool,
        stream: u64,
        rounded: u64,
    ) -> Result<u64, u64> {
        if let Ok(addr) = self.grow(pool, stream, rounded) {
            return Ok(addr);
        }
        self.calls.retries += 1;
        if self.release_oversize(pool, stream, rounded)
            && let Ok(addr) = self.grow(pool, stream, rounded)
        {
            return Ok(addr);
        }
        self.release_cached();
        self.grow(pool, stream, rounded)
    }

    /// Frees cached blocks of at least `max_split_size` on this stream and
    /// pool: the smallest one as large as the request (or `max_split_size`)
    /// if there is one, else the largest ones until that much is freed.
    /// Whether enough was freed. Segments only (expandable segments unmap
    /// on the full release).
    fn release_oversize(&mut self, pool: Pool, stream: u64, rounded: u64) -> bool {
        let max_split = self.policy.max_split_size;
        if max_split == u64::MAX || self.policy.expandable {
            return false;
        }
        let target = rounded.max(max_split);
        let single = self
            .free
            .range((pool, stream, target, 0)..)
            .next()
            .copied()
            .filter(|&(p, s, _, _)| p == pool && s == stream);
        let victims: Vec<(Pool, u64, u64, u64)> = match single {
            Some(key) => vec![key],
            None => {
                let mut total = 0;
                self.free
                    .range((pool, stream, max_split, 0)..(pool, stream, target, 0))
                    .rev()
                    .take_while(|&&(_, _, size, _)| {
                        let more = total < target;
                        total += size;
                        more
                    })
                    .copied()
                    .collect()
            }
        };
        // No wait of its own: each `cudaFree` synchronizes the device
        // (charged per segment in `release_segment`).
        let freed: u64 = victims
            .into_iter()
            .filter(|&(_, _, _, addr)| self.release_segment(addr))
            .map(|(_, _, size, _)| size)
            .sum();
        freed >= target
    }

    /// Releases every cached block that is a whole segment (`cudaFree`),
    /// or with expandable segments unmaps every whole free page wherever it
    /// is (and gives back the address range of a segment left with none),
    /// as `release_cached_blocks` (`torch.cuda.empty_cache()`) does.
    pub fn release_cached(&mut self) {
        if self.policy.expandable {
            // No device-wide wait: each unmap waits for its segment's
            // stream (`ExpandableSegment::unmapHandles`).
            self.unmap_free_pages();
            return;
        }
        // `release_cached_blocks` first waits on the events of blocks used
        // by other streams (`synchronize_and_free_events`); the model
        // records no such uses, so that wait is empty. Each `cudaFree`
        // then synchronizes the device (charged per segment in
        // `release_segment`): a release that frees nothing waits for
        // nothing.
        let free: Vec<u64> = self.free.iter().map(|&(_, _, _, addr)| addr).collect();
        for addr in free {
            self.release_segment(addr);
        }
    }

    /// `cudaFree` of the segment the free block at `addr` is the whole of;
    /// whether it was.
    fn release_segment(&mut self, addr: u64) -> bool {
        let Some(&block) = self.blocks.get(&addr) else {
            return false;
        };
        let whole = block.requested.is_none()
            && self
                .segments
                .get(&block.segment)
                .is_some_and(|s| s.base == addr && s.bytes == block.size);
        if !whole {
            return false;
        }
        self.forget(addr, block);
        self.segments.remove(&block.segment);
        self.reserved -= block.size;
        self.calls.cuda_frees += 1;
        self.meter.charge(DriverCall::DeviceSynchronize, 0);
        self.meter.charge_composed(
            DriverCall::Free,
            block.size,
            &[DriverCall::Unmap, DriverCall::Release],
        );
        true
    }
}
