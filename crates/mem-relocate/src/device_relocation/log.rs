//! `RelocationLog`: what the relocations of a device's streams did, as a value.
//!
//! The trait's steps return nothing (a relocation is best effort and the
//! caller's work goes on either way), so what happened is kept here: every
//! attempt, what moved and what went back, what stalled, and the last
//! failure with its numbers.

use mem_pools::{RelocationCopyError, RelocationOutcome};

use crate::error::RelocationError;
use crate::execute::compact::Compaction;
use crate::reason::RelocationReason;

/// Counters over every relocation attempt of a device's streams.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RelocationLog {
    /// Relocations attempted (one per stream memory relocated).
    pub attempts: u64,
    /// Attempts that moved at least one allocation or freed a page.
    pub productive: u64,
    /// Attempts that moved nothing (the trigger then stalls on the shape).
    pub stalled: u64,
    /// Attempts that failed (see `last_error`).
    pub failures: u64,
    /// Allocations moved in all.
    pub moved_slices: u64,
    /// Their capacity bytes.
    pub moved_bytes: u64,
    /// Outdated pages relocations gave back to the storage.
    pub pages_freed: u64,
    /// Their bytes.
    pub bytes_freed: u64,
    /// Bytes leaked by failed waits (never freed, never reused).
    pub leaked_bytes: u64,
    /// Compaction runs that emptied at least one current page.
    pub compactions: u64,
    /// Allocations compactions moved, in all.
    pub compacted_slices: u64,
    /// Their capacity bytes.
    pub compacted_bytes: u64,
    /// Current pages compactions emptied and gave back to the storage.
    pub compacted_pages_freed: u64,
    /// Their bytes.
    pub compacted_bytes_freed: u64,
    /// `finish` calls whose synchronize failed on some stream.
    pub finish_failures: u64,
    /// The reason of the last attempt.
    pub last_reason: Option<RelocationReason>,
    /// The last failure, with its numbers.
    pub last_error: Option<RelocationError>,
}

impl RelocationLog {
    /// Count one compaction run's result (a run that planned nothing is
    /// not counted; a failure counts in `failures` and `last_error`).
    pub fn record_compaction(&mut self, result: &Result<Compaction, RelocationError>) {
        match result {
            Ok(run) => {
                let o = &run.outcome;
                if o.pages_freed > 0 {
                    self.compactions += 1;
                }
                self.compacted_slices += o.moved_slices as u64;
                self.compacted_bytes += o.moved_bytes;
                self.compacted_pages_freed += o.pages_freed as u64;
                self.compacted_bytes_freed += o.bytes_freed;
            }
            Err(err) => self.fail(err),
        }
    }

    fn fail(&mut self, err: &RelocationError) {
        self.failures += 1;
        if let RelocationError::Copy(RelocationCopyError::Wait { leaked_bytes, .. }) = err {
            self.leaked_bytes += leaked_bytes;
        }
        self.last_error = Some(err.clone());
    }

    /// Count one attempt's result.
    pub fn record(
        &mut self,
        reason: RelocationReason,
        result: &Result<RelocationOutcome, RelocationError>,
    ) {
        self.attempts += 1;
        self.last_reason = Some(reason);
        match result {
            Ok(o) => {
                if o.moved_slices > 0 || o.pages_freed > 0 {
                    self.productive += 1;
                } else {
                    self.stalled += 1;
                }
                self.moved_slices += o.moved_slices as u64;
                self.moved_bytes += o.moved_bytes;
                self.pages_freed += o.pages_freed as u64;
                self.bytes_freed += o.bytes_freed;
            }
            Err(err) => self.fail(err),
        }
    }
}

impl RelocationLog {
    /// Add what `other` counted (one operation's log) to this log; its last
    /// reason and failure, when it has them, become the last ones.
    pub fn merge(&mut self, other: RelocationLog) {
        self.attempts += other.attempts;
        self.productive += other.productive;
        self.stalled += other.stalled;
        self.failures += other.failures;
        self.moved_slices += other.moved_slices;
        self.moved_bytes += other.moved_bytes;
        self.pages_freed += other.pages_freed;
        self.bytes_freed += other.bytes_freed;
        self.leaked_bytes += other.leaked_bytes;
        self.compactions += other.compactions;
        self.compacted_slices += other.compacted_slices;
        self.compacted_bytes += other.compacted_bytes;
        self.compacted_pages_freed += other.compacted_pages_freed;
        self.compacted_bytes_freed += other.compacted_bytes_freed;
        self.finish_failures += other.finish_failures;
        if other.last_reason.is_some() {
            self.last_reason = other.last_reason;
        }
        if other.last_error.is_some() {
            self.last_error = other.last_error;
        }
    }
}
