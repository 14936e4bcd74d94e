//! Memory a device shares with other processes, counted.
//!
//! Shareable buffers and imports sit outside every pool (chunks of their
//! own, in ranges of their own: docs/sharing.md), so the engine's counters
//! never see them and `reserved_bytes` does not hold them. A device keeps
//! these four levels beside its streams' counters instead, moved by each
//! buffer's construction and drop, and [`Device::stats`](crate::Device::stats)
//! reads them.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Shareable buffers this device made and buffers of other processes it
/// mapped, now: what [`MemoryStats::reserved_bytes`](crate::stats::MemoryStats::reserved_bytes)
/// leaves out. Bytes are mapped bytes, granule padding included.
///
/// Exported bytes are charged to the device's budget (so the budget's
/// ledger can exceed `reserved_bytes` by them); imported bytes are the
/// exporter's, charged there. The device's figure: zero in a stream's
/// statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SharingStats {
    /// Shareable buffers alive ([`Stream::reserve_shareable`](crate::Stream::reserve_shareable)).
    pub exported_buffers: u64,
    /// Their mapped bytes.
    pub exported_bytes: u64,
    /// Imported buffers alive ([`Device::import`](crate::Device::import)).
    pub imported_buffers: u64,
    /// Their mapped bytes.
    pub imported_bytes: u64,
}

/// The device's sharing levels: added to when a buffer is mapped, taken
/// from when it is dropped, read without a lock.
#[derive(Debug, Default)]
pub(crate) struct SharingTally {
    exported: [AtomicU64; 2],
    imported: [AtomicU64; 2],
}

impl SharingTally {
    /// One buffer of `bytes` more (`exported` says which side).
    pub(crate) fn add(&self, exported: bool, bytes: u64) {
        let [buffers, total] = self.side(exported);
        buffers.fetch_add(1, Relaxed);
        total.fetch_add(bytes, Relaxed);
    }

    /// One buffer of `bytes` fewer.
    pub(crate) fn remove(&self, exported: bool, bytes: u64) {
        let [buffers, total] = self.side(exported);
        buffers.fetch_sub(1, Relaxed);
        total.fetch_sub(bytes, Relaxed);
    }

    fn side(&self, exported: bool) -> &[AtomicU64; 2] {
        match exported {
            true => &self.exported,
            false => &self.imported,
        }
    }

    pub(crate) fn read(&self) -> SharingStats {
        SharingStats {
            exported_buffers: self.exported[0].load(Relaxed),
            exported_bytes: self.exported[1].load(Relaxed),
            imported_buffers: self.imported[0].load(Relaxed),
            imported_bytes: self.imported[1].load(Relaxed),
        }
    }
}
