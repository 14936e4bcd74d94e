//! Reports in CubeCL's shape (`MemoryPoolsReport`), current the moment a
//! handle drops.
//!
//! gpumem's engine reports its pools in routing order with the persistent
//! pool last; each becomes a `MemoryPoolReport` of the CubeCL kind that
//! means the same: a sliced pool whose pages grow is `Adaptive`, a fixed one
//! `Sliced`, an exclusive one `Exclusive`. gpumem has no dedicated pool
//! (`Dedicated` allocations are served by the dynamic pools), so
//! `dedicated` is an empty `Direct` pool.
//!
//! CubeCL counts an allocation in use while any handle but its pool's own is
//! alive, and reads that on every report. The adapter gives a dropped
//! allocation back to the engine at its next `&mut` call (`sweep`), so a
//! report taken in between subtracts the dropped-but-not-swept entries
//! from their pools itself: `memory_report` is current right after a drop.

use cubecl_server::memory_management::{
    MemoryPoolKind, MemoryPoolReport, MemoryPoolsReport, MemoryUsage,
};
use cubecl_server::storage::ComputeStorage;
use mem_pools::{PoolReport, PoolReportKind};

use crate::state::MemoryManagement;

impl<Storage: ComputeStorage> MemoryManagement<Storage> {
    /// `memory_report`'s body (`management.rs`): the engine's report in
    /// CubeCL's shape, less the dropped entries not yet swept.
    pub(crate) fn cube_report(&self) -> MemoryPoolsReport {
        let report = self.engine.memory_report();
        let mut pools: Vec<MemoryPoolReport> = report
            .pools
            .iter()
            .enumerate()
            .map(|(index, pool)| {
                let growable = self.growable.get(index).copied().unwrap_or(false);
                pool_report(pool, growable)
            })
            .collect();
        for entry in self.entries.iter().filter(|entry| entry.handle.is_free()) {
            if let Some(pool) = pools.get_mut(entry.pool) {
                let usage = &mut pool.usage;
                usage.number_allocs = usage.number_allocs.saturating_sub(1);
                usage.bytes_in_use = usage.bytes_in_use.saturating_sub(entry.size);
                usage.bytes_padding = usage.bytes_padding.saturating_sub(entry.padding);
            }
        }
        let persistent = pools
            .pop()
            .unwrap_or_else(|| empty(MemoryPoolKind::Persistent));
        MemoryPoolsReport {
            dynamic: pools,
            persistent,
            dedicated: empty(MemoryPoolKind::Direct),
        }
    }
}

/// One gpumem pool as CubeCL reports one.
fn pool_report(pool: &PoolReport, growable: bool) -> MemoryPoolReport {
    let kind = match pool.kind {
        PoolReportKind::Sliced {
            page_size,
            outdated_pages,
            ..
        } if growable => MemoryPoolKind::Adaptive {
            page_size,
            outdated_pages: outdated_pages as u64,
        },
        PoolReportKind::Sliced {
            page_size,
            max_slice_size,
            ..
        } => MemoryPoolKind::Sliced {
            page_size,
            max_slice_size,
        },
        PoolReportKind::Exclusive { max_alloc_size } => {
            MemoryPoolKind::Exclusive { max_alloc_size }
        }
        PoolReportKind::Persistent => MemoryPoolKind::Persistent,
        PoolReportKind::Arena {
            range_size,
            max_slice_size,
            ..
        } => MemoryPoolKind::Sliced {
            page_size: range_size,
            max_slice_size,
        },
    };
    MemoryPoolReport {
        kind,
        usage: MemoryUsage {
            number_allocs: pool.slices,
            bytes_in_use: pool.bytes_in_use,
            bytes_padding: pool.bytes_padding,
            bytes_reserved: pool.bytes_reserved,
        },
        pages: pool.pages,
        pages_peak: pool.peak_pages,
        pages_unmapped: pool.pages_unmapped,
        largest_alloc: pool.largest_alloc,
    }
}

/// A pool that holds nothing.
fn empty(kind: MemoryPoolKind) -> MemoryPoolReport {
    MemoryPoolReport {
        kind,
        usage: MemoryUsage::default(),
        pages: 0,
        pages_peak: 0,
        pages_unmapped: 0,
        largest_alloc: 0,
    }
}
