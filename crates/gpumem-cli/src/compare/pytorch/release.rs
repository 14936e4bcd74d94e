//! Releasing the cache: what PyTorch's `release_cached_blocks` does on an
//! out-of-memory retry and `torch.cuda.empty_cache()` does on demand.

use gpumem::storage::DriverCall;

use super::caching::{Block, CachingAllocator};

impl CachingAllocator {
    /// Releases every cached block that is a whole segment (`cudaFree`),
    /// and every free whole page at the end of an expandable segment, as
    /// `release_cached_blocks` (`torch.cuda.empty_cache()`) does.
    pub fn release_cached(&mut self) {
        self.meter.charge(DriverCall::DeviceSynchronize, 0);
        if self.policy.expandable {
            self.unmap_free_tails();
            return;
        }
        let whole: Vec<(u64, Block)> = self
            .free
            .iter()
            .filter_map(|&(_, _, _, addr)| Some((addr, *self.blocks.get(&addr)?)))
            .filter(|(addr, b)| {
                self.segments
                    .get(&b.segment)
                    .is_some_and(|s| s.base == *addr && s.bytes == b.size)
            })
            .collect();
        for (addr, block) in whole {
            self.forget(addr, block);
            self.segments.remove(&block.segment);
            self.reserved -= block.size;
            self.calls.cuda_frees += 1;
            self.meter.charge(DriverCall::DeviceSynchronize, 0);
            self.meter.charge(DriverCall::Free, block.size);
        }
    }
}
