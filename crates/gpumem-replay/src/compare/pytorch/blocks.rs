//! The model's plain data: a block of a segment, a segment, and the
//! driver calls counted by what PyTorch calls them.

use super::policy::Pool;

/// One block of a segment: allocated, or cached free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Block {
    pub(super) segment: u32,
    pub(super) stream: u64,
    pub(super) pool: Pool,
    pub(super) size: u64,
    /// Requested bytes while allocated; `None` while cached free.
    pub(super) requested: Option<u64>,
    /// Backed by device memory: always, except the unmapped address space
    /// of an expandable segment.
    pub(super) mapped: bool,
}

/// One segment: a `cudaMalloc`, or an expandable segment's address range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Segment {
    pub(super) base: u64,
    /// Bytes held from the device (mapped bytes, for an expandable one).
    pub(super) bytes: u64,
    /// Address space it spans: its bytes, or an expandable segment's
    /// whole reservation.
    pub(super) span: u64,
}

/// One run of mapped pages of an expandable segment: what a PyTorch
/// snapshot lists as one segment (`torch.cuda.memory._snapshot()`
/// reports each contiguous mapped range of an expandable segment apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MappedRange {
    /// The stream the segment belongs to.
    pub stream: u64,
    /// Its pool.
    pub pool: Pool,
    /// Where the range starts, from the start of the segment's reservation.
    pub offset: u64,
    /// Its mapped bytes.
    pub bytes: u64,
}

/// Driver calls the model made, by what PyTorch calls them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Calls {
    /// `cudaMalloc` of a segment.
    pub cuda_mallocs: u64,
    /// `cudaFree` of a segment (only when the cache is released).
    pub cuda_frees: u64,
    /// Pages created and mapped into expandable segments.
    pub pages_mapped: u64,
    /// Pages unmapped and released from expandable segments.
    pub pages_unmapped: u64,
    /// Runs of pages mapped at once: PyTorch's `segment_map` trace events
    /// (one per unmapped block a request maps into).
    pub segment_maps: u64,
    /// Runs of pages unmapped at once: PyTorch's `segment_unmap` trace
    /// events (one per free block with whole pages when the cache is
    /// released).
    pub segment_unmaps: u64,
    /// Out-of-memory retries: the cache released and the request retried.
    pub retries: u64,
}
