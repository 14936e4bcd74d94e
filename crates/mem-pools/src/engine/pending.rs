//! Reports that are current the moment a handle drops.
//!
//! A handle's last drop only queues its free (`handles/drop_queue.rs`);
//! the engine frees the slice at its next `&mut self` call. A report read in
//! between (`memory_usage`, `memory_report`, both `&self`) would still count
//! the dropped allocation, which a runtime that reads usage right after a
//! drop (CubeCL's tests do) sees as a leak. So while drops are pending the
//! reports subtract them: the queued cells are walked in place (O(pending
//! drops), nothing taken) and each allocation still live in the slot table
//! is taken off its pool's count, bytes, padding and, where it was the
//! page's last, live pages. A graph's pin handles dropped after the user's
//! handle count too: when the pending pins are an allocation's only holders
//! left, the drain lets them go and frees it (`CellPool::for_each_pending`),
//! so CubeCL's usage read right after dropping `capture_end`'s handles sees
//! it freed. Pages an outdated pool gives back at the drain,
//! and so `bytes_reserved`, change only at the next call, as before.

use std::collections::HashMap;

use mem_storage::ComputeStorage;

use crate::engine::state::MemoryManagement;
use crate::report::usage::MemoryUsage;

impl<S: ComputeStorage> MemoryManagement<S> {
    /// What the allocations dropped since the last drain still count for,
    /// per pool in report order (the persistent pool last); `None` when no
    /// drop is pending (one atomic load).
    pub(crate) fn pending_drops(&self) -> Option<Vec<MemoryUsage>> {
        if !self.cells.has_pending() {
            return None;
        }
        let pools = self.core.pools.len();
        let mut per_pool = vec![MemoryUsage::default(); pools + 1];
        let mut dropped_on_page: HashMap<u32, u32> = HashMap::new();
        self.cells.for_each_pending(|key| {
            // A key that no longer resolves was retired (bind) and frees nothing.
            let Some(slice) = self.core.tables.slots.resolve(key) else {
                return;
            };
            let node = &self.core.tables.slices[slice];
            let page = &self.core.tables.pages[node.page];
            let usage = &mut per_pool[(page.pool as usize).min(pools)];
            usage.number_allocs += 1;
            usage.bytes_in_use += node.requested;
            usage.bytes_padding += node.size - node.requested;
            let dropped = dropped_on_page.entry(node.page).or_default();
            *dropped += 1;
            if *dropped == page.live {
                usage.pages_with_live_data += 1;
            }
        });
        Some(per_pool)
    }
}
