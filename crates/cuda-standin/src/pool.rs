//! The one physical capacity: pages (`cuMemAlloc`), the default pool's
//! reservation (`cuMemAllocAsync`) and chunks (`cuMemCreate`) draw on it
//! together, as on a GPU. A request that does not fit first makes the pool
//! give back what it caches (the driver does), then is out of memory.

use crate::memory::{AllocKind, MemState, Refusal};
use crate::types::OUT_OF_MEMORY;

impl MemState {
    /// Bytes of physical memory held: pages, the pool's reservation, chunks.
    pub fn in_use(&self) -> u64 {
        self.sync_bytes + self.pool.reserved + self.handle_bytes
    }
    /// `(free, total)` as `cuMemGetInfo` reports them.
    pub fn info(&self) -> (u64, u64) {
        (self.total.saturating_sub(self.in_use()), self.total)
    }
    /// Claim `bytes` of physical memory for `kind`, trimming the pool's
    /// cache first when the device is full (as the driver does).
    pub(crate) fn claim(&mut self, bytes: u64, kind: AllocKind) -> Result<(), Refusal> {
        let oom = |s: &Self| {
            let (free, total) = s.info();
            (
                OUT_OF_MEMORY,
                format!("{bytes} B asked, {free} of {total} B free"),
            )
        };
        if kind == AllocKind::Pool {
            let reserved = self.pool.reserved.max(self.pool.used + bytes);
            if self.in_use() - self.pool.reserved + reserved > self.total {
                self.pool.reserved = self.pool.used;
                if self.in_use() + bytes > self.total {
                    return Err(oom(self));
                }
            }
            let p = &mut self.pool;
            p.used += bytes;
            p.reserved = p.reserved.max(p.used);
            p.used_high = p.used_high.max(p.used);
            p.reserved_high = p.reserved_high.max(p.reserved);
            return Ok(());
        }
        if self.in_use() + bytes > self.total {
            self.pool.reserved = self.pool.used;
            if self.in_use() + bytes > self.total {
                return Err(oom(self));
            }
        }
        match kind {
            AllocKind::Sync | AllocKind::Graph => self.sync_bytes += bytes,
            AllocKind::Pool => unreachable!("handled above"),
        }
        Ok(())
    }
    pub(crate) fn unclaim(&mut self, span: u64, kind: AllocKind) {
        match kind {
            AllocKind::Sync | AllocKind::Graph => self.sync_bytes -= span,
            AllocKind::Pool => self.pool.used -= span,
        }
    }
    /// At a synchronization point the pool gives back what it caches above
    /// its release threshold (the driver's default threshold is 0).
    pub fn release_pool_cache(&mut self) {
        let p = &mut self.pool;
        if p.reserved > p.threshold {
            p.reserved = p.used.max(p.threshold);
        }
    }
}
