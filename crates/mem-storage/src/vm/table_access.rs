//! Addresses in [`VmTable`]: whether a span is backed by mapped chunks
//! (the check before every byte access), and every mapping at once (for a
//! backend's drop).
//!
//! The range an address lies in is found in the ordered map of range
//! bases; from there each granule names its chunk, and each chunk where
//! its mapping ends, so an access spanning k chunks takes k lookups.

use crate::error::StorageError;
use crate::vm::table::VmTable;
use crate::vm::table_map::Mapping;

impl VmTable {
    /// Check that every byte of `ptr..ptr+len` is mapped. Returns the base
    /// of the range it lies in. A 0-byte access needs only lie inside (or
    /// at the end of) a reserved range.
    pub(crate) fn check_access(&self, ptr: u64, len: u64) -> Result<u64, StorageError> {
        let unmapped = |first: u64| StorageError::UnmappedAddress {
            backend: self.backend,
            ptr,
            bytes: len,
            first_unmapped: first,
        };
        let (&base, id) = self
            .by_base
            .range(..=ptr)
            .next_back()
            .ok_or(unmapped(ptr))?;
        let r = self.range(*id)?;
        let start = ptr - base;
        // Past the end of the address space is past every mapping: walk to
        // the first unmapped byte all the same, to name it.
        let end = start.saturating_add(len);
        if start > r.len {
            return Err(unmapped(ptr));
        }
        if len == 0 {
            return Ok(base);
        }
        // The end of the mapping holding each granule, from `start` on.
        let mapped_end = |at: u64| -> Option<u64> {
            let c = self.chunk(r.granules.get(at >> self.shift)?).ok()?;
            let (_, from) = c.mapped_at?;
            Some(from + c.bytes)
        };
        let mut at = mapped_end(start).ok_or(unmapped(ptr))?;
        while at < end {
            at = mapped_end(at).ok_or(unmapped(base + at))?;
        }
        Ok(base)
    }

    /// Every mapping of every range (for a backend's `Drop`).
    pub(crate) fn all_mappings(&self) -> Vec<Mapping> {
        let mut all = Vec::new();
        for r in &self.ranges {
            for (granule, _) in r.granules.starts() {
                all.extend(self.mapping_at(r, granule << self.shift));
            }
        }
        all
    }
}
