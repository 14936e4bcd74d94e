//! Each device's one physical capacity: pages (`cuMemAlloc`), the default
//! pool's reservation (`cuMemAllocAsync`) and chunks (`cuMemCreate`) draw
//! on it together, as on a GPU. A request that does not fit first makes
//! the pool give back what it caches (the driver does), then is out of
//! memory.

use crate::memory::{AllocKind, Capacity, MemState, Refusal};
use crate::types::OUT_OF_MEMORY;

impl Capacity {
    /// Bytes of physical memory held: pages, the pool's reservation, chunks.
    pub fn in_use(&self) -> u64 {
        self.sync_bytes + self.pool.reserved + self.handle_bytes
    }
    /// `(free, total)` as `cuMemGetInfo` reports them.
    pub fn info(&self) -> (u64, u64) {
        (self.total.saturating_sub(self.in_use()), self.total)
    }
    fn oom(&self, bytes: u64) -> Refusal {
        let (free, total) = self.info();
        (
            OUT_OF_MEMORY,
            format!("{bytes} B asked, {free} of {total} B free"),
        )
    }
    /// Room for `bytes` more outside the pool, trimming the pool's cache
    /// first when the device is full (as the driver does).
    pub(crate) fn room(&mut self, bytes: u64) -> Result<(), Refusal> {
        if self.in_use() + bytes > self.total {
            self.pool.reserved = self.pool.used;
            if self.in_use() + bytes > self.total {
                return Err(self.oom(bytes));
            }
        }
        Ok(())
    }
}

impl MemState {
    /// Claim `bytes` of device `dev`'s physical memory for `kind`.
    pub(crate) fn claim(&mut self, bytes: u64, kind: AllocKind, dev: usize) -> Result<(), Refusal> {
        let c = &mut self.devices[dev];
        if kind == AllocKind::Pool {
            let reserved = c.pool.reserved.max(c.pool.used + bytes);
            if c.in_use() - c.pool.reserved + reserved > c.total {
                c.pool.reserved = c.pool.used;
                if c.in_use() + bytes > c.total {
                    return Err(c.oom(bytes));
                }
            }
            let p = &mut c.pool;
            p.used += bytes;
            p.reserved = p.reserved.max(p.used);
            p.used_high = p.used_high.max(p.used);
            p.reserved_high = p.reserved_high.max(p.reserved);
            return Ok(());
        }
        c.room(bytes)?;
        c.sync_bytes += bytes;
        Ok(())
    }
    pub(crate) fn unclaim(&mut self, span: u64, kind: AllocKind, dev: usize) {
        let c = &mut self.devices[dev];
        match kind {
            AllocKind::Sync | AllocKind::Graph => c.sync_bytes -= span,
            AllocKind::Pool => c.pool.used -= span,
        }
    }
    /// At a synchronization point the pools give back what they cache
    /// above their release threshold (the driver's default threshold is 0).
    pub fn release_pool_cache(&mut self) {
        for c in &mut self.devices {
            let p = &mut c.pool;
            if p.reserved > p.threshold {
                p.reserved = p.used.max(p.threshold);
            }
        }
    }
}
