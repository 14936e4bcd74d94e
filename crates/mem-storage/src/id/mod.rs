//! Plain identifiers: pages, streams, device addresses, and views.
//!
//! Ids are never reused within one storage, so an id that outlived its page
//! is detected as stale instead of silently naming a newer page.

use std::fmt;

pub(crate) mod hash;
mod virtual_memory;

pub use virtual_memory::{ChunkId, RangeId, VaRange, VirtualMemoryStats};

/// Identifies one page (one device allocation) within a storage.
///
/// Issued from a 64-bit counter that never wraps in practice (one id per
/// nanosecond would take 584 years) and never reuses a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StorageId(pub u64);

impl fmt::Display for StorageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Identifies a stream of a resource. Stream 0 is the default stream; the
/// host and simulated backends complete work in call order and accept any id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamId(pub u64);

impl StreamId {
    /// The default stream.
    pub const DEFAULT: StreamId = StreamId(0);
}

/// A device address. On the host backend it is a real host address; on the
/// simulated backend a made-up one; on CUDA a `CUdeviceptr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DevicePtr(pub u64);

impl DevicePtr {
    /// The address `bytes` further on, or `None` on overflow.
    pub fn checked_add(self, bytes: u64) -> Option<DevicePtr> {
        self.0.checked_add(bytes).map(DevicePtr)
    }
}

impl fmt::Display for DevicePtr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// Which bytes of a page a handle covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StorageUtilization {
    /// First byte, relative to the start of the page.
    pub offset: u64,
    /// Number of bytes.
    pub size: u64,
}

impl StorageUtilization {
    /// One past the last byte, or `None` on overflow.
    pub fn end(&self) -> Option<u64> {
        self.offset.checked_add(self.size)
    }
}

/// A view of part of one page: the page's id and the bytes covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StorageHandle {
    /// The page.
    pub id: StorageId,
    /// The bytes of the page this handle covers.
    pub utilization: StorageUtilization,
}

impl StorageHandle {
    /// A view of the whole of a fresh page.
    pub fn whole(id: StorageId, size: u64) -> Self {
        Self {
            id,
            utilization: StorageUtilization { offset: 0, size },
        }
    }

    /// First byte, relative to the page.
    pub fn offset(&self) -> u64 {
        self.utilization.offset
    }

    /// Number of bytes covered.
    pub fn size(&self) -> u64 {
        self.utilization.size
    }

    /// A narrower view `start..end` relative to this one (`None` = keep that
    /// end). `None` when the range is inverted or runs past this view.
    pub fn narrow(&self, start: Option<u64>, end: Option<u64>) -> Option<StorageHandle> {
        let size = self.size();
        let start = start.unwrap_or(0);
        let end = end.unwrap_or(size);
        if start > end || end > size {
            return None;
        }
        Some(StorageHandle {
            id: self.id,
            utilization: StorageUtilization {
                offset: self.offset().checked_add(start)?,
                size: end - start,
            },
        })
    }
}
