//! Reserving with one retry, and the out-of-memory report.
//!
//! Like PyTorch's allocator (free cached blocks, retry, then raise), a
//! reservation that the device or its budget refuses first gives memory
//! back across the whole device — releases held allocations whose streams
//! finished, moves live data off outdated pages into room already held,
//! returns every empty page of every stream — and tries once more. Only then
//! is it an error, and the error is a report: what was asked, what the
//! device and budget hold, how much is reserved but free and in what shape,
//! who refused, and what to try — the numbers PyTorch's message lacks
//! (largest free block, per-stream holds, outdated pages pinned, the
//! budget's own limit).

use std::fmt;

use crate::units::format_bytes;

pub use mem_storage::Refuser;

/// Everything known when a reservation fails for lack of memory.
#[derive(Debug, Clone, PartialEq)]
pub struct OutOfMemoryReport {
    /// Bytes asked for.
    pub requested: u64,
    /// The stream that asked.
    pub stream: usize,
    /// The device's name.
    pub device: String,
    /// Total bytes of the device.
    pub device_total: u64,
    /// Free bytes of the device (after the retry).
    pub device_free: u64,
    /// The budget's limit (`None` when unlimited).
    pub budget_limit: Option<u64>,
    /// Bytes charged to the budget.
    pub budget_charged: u64,
    /// Who refused.
    pub refused_by: Refuser,
    /// Bytes of live slices on every stream.
    pub allocated: u64,
    /// Bytes of pages held by every stream.
    pub reserved: u64,
    /// `reserved − allocated`: held by gpumem but free.
    pub reserved_unallocated: u64,
    /// The largest free slice of the stream that asked. On arenas, whose
    /// free address range is far larger than memory, it is capped by what
    /// a slice could map: the device's (and the budget's) free bytes plus
    /// the stream's idle cached chunks.
    pub largest_free_block: u64,
    /// Bytes dropped by their users but still held for other streams'
    /// recorded use (`record_use`) after the retry — non-zero only when
    /// finishing those streams' work failed.
    pub held_for_streams: u64,
    /// Live bytes left on outdated pages that relocation could not move
    /// (pinned by a graph or a raw address).
    pub outdated_pinned_bytes: u64,
    /// A stream was recording, so nothing could be relocated.
    pub recording: Option<usize>,
}

impl OutOfMemoryReport {
    /// What to try, from the numbers.
    pub fn hint(&self) -> String {
        let mut hints = Vec::new();
        if self.refused_by == Refuser::DeviceBudget && self.device_free >= self.requested {
            hints.push("the device has room but the budget does not: raise it (GPUMEM_CONF=budget:…) or lower the batch".to_string());
        }
        if self.held_for_streams > 0 {
            hints.push(format!(
                "{} are held for other streams' recorded work, which could not be finished: check those streams",
                format_bytes(self.held_for_streams)
            ));
        }
        if self.outdated_pinned_bytes > 0 {
            hints.push(format!(
                "{} on outdated pages cannot move: release raw addresses (release_raw) or drop captured graphs, then reclaim",
                format_bytes(self.outdated_pinned_bytes)
            ));
        }
        if let Some(stream) = self.recording {
            hints.push(format!("stream {stream} is recording a graph, so nothing was relocated: end the capture and retry"));
        }
        if self.reserved_unallocated >= self.requested {
            hints.push(format!(
                "{} are reserved but free in pieces of at most {}: fragmentation — use larger pages (pools:sliced with a larger page_size, or max_page) or free buffers of other streams",
                format_bytes(self.reserved_unallocated),
                format_bytes(self.largest_free_block)
            ));
        }
        if hints.is_empty() {
            hints.push("live data fills the memory: free buffers, lower the batch size, or use a larger device".into());
        }
        hints.join("; ")
    }
}

impl fmt::Display for OutOfMemoryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = format_bytes;
        write!(
            f,
            "gpumem out of memory on {} (stream {}). Tried to allocate {}. The device has a total capacity of {} of which {} is free. ",
            self.device,
            self.stream,
            b(self.requested),
            b(self.device_total),
            b(self.device_free)
        )?;
        if let Some(limit) = self.budget_limit {
            write!(
                f,
                "The device budget allows {} ({} charged). ",
                b(limit),
                b(self.budget_charged)
            )?;
        }
        write!(
            f,
            "Of the memory gpumem holds, {} is allocated and {} is reserved but unallocated (largest free block on this stream: {}). ",
            b(self.allocated),
            b(self.reserved_unallocated),
            b(self.largest_free_block)
        )?;
        let who = self.refused_by;
        write!(
            f,
            "Refused by {who} after cleanup and reclaim were tried once. Hint: {}.",
            self.hint()
        )
    }
}
