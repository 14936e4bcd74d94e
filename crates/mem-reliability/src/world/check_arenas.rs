//! The arena half of the invariant pass (`check.rs` runs it last, on
//! arena worlds): the storages' bytes are their pages plus the chunks the
//! virtual memory holds; the arenas' reserved bytes equal what the virtual
//! memory maps; mapped bytes are the granules under live arena slices plus
//! the idle chunks the arenas cache; every granule of a live arena
//! allocation is readable; the arenas' ranges are the ranges the virtual
//! memory holds.

use std::collections::HashSet;

use mem_pools::PoolReportKind;
use mem_storage::{ComputeStorage, RangeId, VirtualMemory};

use crate::error::Violation;
use crate::world::read::read_at;
use crate::world::{World, props};

impl World {
    /// The arena invariants (see the module docs).
    pub(super) fn check_arenas(&mut self, step: usize) -> Result<(), Violation> {
        let vs = self.device.vm_stats();
        let g = self.device.vm_tracking().map_or(1, |vm| vm.granularity());
        // The virtual memory's live ranges: an allocation inside one is an
        // arena slice.
        let ranges: Vec<(u64, u64)> = self.device.vm_tracking().map_or(Vec::new(), |vm| {
            (1..=vs.ranges_reserved)
                .filter_map(|id| vm.range_info(RangeId(id)).ok())
                .map(|r| (r.base.0, r.base.0 + r.len))
                .collect()
        });
        let (mut arena_reserved, mut cached, mut virtual_bytes) = (0, 0, 0);
        let mut quarantined = false;
        // Chunks the storages hold beyond what the engines reserve: those
        // whose release was refused during a capture (see `check_stream`).
        let mut unreleased = 0;
        for (s, manager) in self.managers.iter_mut().enumerate() {
            quarantined |= self.model.streams[s].quarantined;
            let reserved = manager.memory_usage().bytes_reserved;
            unreleased += manager.storage().bytes_allocated().saturating_sub(reserved);
            for pool in manager.memory_report().pools {
                if let PoolReportKind::Arena { cached_bytes, .. } = pool.kind {
                    arena_reserved += pool.bytes_reserved;
                    cached += cached_bytes;
                }
            }
            virtual_bytes += manager.stats().chunks.virtual_bytes;
        }
        // Granules under live arena slices, and each one readable.
        let mut touched = HashSet::new();
        for e in self.model.entries.iter().filter(|e| e.alive()) {
            let manager = &mut self.managers[e.stream];
            let unreachable = |error: String| Violation::Unreachable {
                step,
                entry: e.id,
                error,
            };
            let view = manager
                .get_storage(e.binding)
                .map_err(|err| unreachable(err.to_string()))?;
            let ptr = manager
                .storage()
                .get(&view)
                .map_err(|err| unreachable(err.to_string()))?
                .ptr
                .0;
            if !ranges.iter().any(|&(lo, hi)| lo <= ptr && ptr < hi) {
                continue;
            }
            let cap = e.size.max(1).next_multiple_of(props().alignment);
            let (first, last) = (view.offset() / g, (view.offset() + cap - 1) / g);
            for granule in first..=last {
                touched.insert((e.stream, view.id, granule));
                // One byte in the granule, inside the allocation.
                let at = (granule * g).max(view.offset()) - view.offset();
                if at < e.size {
                    let mut byte = [0u8];
                    read_at(manager, e.binding, at, &mut byte)
                        .map_err(|err| unreachable(format!("granule {granule}: {err}")))?;
                }
            }
        }
        let touched = touched.len() as u64 * g;
        let mut equal = vec![
            (
                "arena reserved bytes = VM mapped bytes",
                arena_reserved,
                vs.mapped_bytes,
            ),
            (
                "VM chunks = VM mapped bytes + chunks whose release waits for a capture's end",
                vs.mapped_bytes + unreleased,
                vs.physical_bytes,
            ),
            ("arena ranges = VM ranges", vs.virtual_bytes, virtual_bytes),
        ];
        if !quarantined {
            equal.push((
                "VM mapped bytes = granules under live arena slices + idle chunks",
                touched + cached,
                vs.mapped_bytes,
            ));
        }
        for (what, expected, found) in equal {
            if expected != found {
                return Err(Violation::mismatch(step, what, expected, found));
            }
        }
        Ok(())
    }
}
