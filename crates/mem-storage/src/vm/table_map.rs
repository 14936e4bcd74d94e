//! Mappings in [`VmTable`]: what a map or unmap may touch, and whether an
//! address range is backed by mapped chunks.
//!
//! Mappings of one range never overlap and are keyed by offset, so each
//! check is a few ordered-map lookups: O(log n) for a map, O(k log n) for
//! an unmap or an access spanning k chunks.

use crate::error::StorageError;
use crate::vm::table::VmTable;
use crate::vm::{ChunkId, RangeId};

/// One mapping a backend makes or removes: where, how much, and the
/// backend handle of the chunk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mapping {
    pub(crate) chunk: ChunkId,
    /// Offset in the range.
    pub(crate) offset: u64,
    /// Absolute address (range base + offset).
    pub(crate) addr: u64,
    pub(crate) bytes: u64,
    pub(crate) handle: u64,
}

impl VmTable {
    /// What mapping `chunk` at `offset` of `range` means, if allowed.
    pub(crate) fn check_map(
        &self,
        range: RangeId,
        offset: u64,
        chunk: ChunkId,
    ) -> Result<Mapping, StorageError> {
        let r = self.range(range)?;
        let c = self.chunk(chunk)?;
        if let Some((at_range, at_offset)) = c.mapped_at {
            return Err(StorageError::ChunkMapped {
                chunk,
                range: at_range,
                offset: at_offset,
            });
        }
        self.granular("offset", offset)?;
        let outside = StorageError::OutsideRange {
            range,
            offset,
            bytes: c.bytes,
            len: r.len,
        };
        let end = offset.checked_add(c.bytes).ok_or(outside.clone())?;
        if end > r.len {
            return Err(outside);
        }
        // Only the last mapping starting before `end` can reach into it.
        if let Some((&at, &other)) = r.mapped.range(..end).next_back() {
            let other_end = at + self.chunk(other)?.bytes;
            if other_end > offset {
                return Err(StorageError::AlreadyMapped {
                    range,
                    offset,
                    bytes: c.bytes,
                    mapped_offset: at,
                    mapped_chunk: other,
                });
            }
        }
        Ok(Mapping {
            chunk,
            offset,
            addr: r.base + offset,
            bytes: c.bytes,
            handle: c.handle,
        })
    }

    pub(crate) fn commit_map(&mut self, range: RangeId, m: Mapping) {
        let (Some(r), Some(c)) = (self.ranges.get_mut(&range), self.chunks.get_mut(&m.chunk))
        else {
            return;
        };
        r.mapped.insert(m.offset, m.chunk);
        r.mapped_bytes += m.bytes;
        c.mapped_at = Some((range, m.offset));
        let s = &mut self.stats;
        s.maps += 1;
        s.mapped_bytes += m.bytes;
        s.peak_mapped_bytes = s.peak_mapped_bytes.max(s.mapped_bytes);
    }

    /// The whole mappings covering `offset..offset+bytes` of `range`
    /// exactly, in address order.
    pub(crate) fn check_unmap(
        &self,
        range: RangeId,
        offset: u64,
        bytes: u64,
    ) -> Result<Vec<Mapping>, StorageError> {
        let r = self.range(range)?;
        self.granular("offset", offset)?;
        self.granular("bytes", bytes)?;
        let outside = StorageError::OutsideRange {
            range,
            offset,
            bytes,
            len: r.len,
        };
        let end = offset.checked_add(bytes).ok_or(outside.clone())?;
        if end > r.len {
            return Err(outside);
        }
        let mut found = Vec::new();
        let mut at = offset;
        while at < end {
            let not_mapped = StorageError::NotMapped {
                range,
                offset,
                bytes,
                at,
            };
            let chunk = *r.mapped.get(&at).ok_or(not_mapped.clone())?;
            let c = self.chunk(chunk)?;
            if at + c.bytes > end {
                return Err(not_mapped);
            }
            found.push(Mapping {
                chunk,
                offset: at,
                addr: r.base + at,
                bytes: c.bytes,
                handle: c.handle,
            });
            at += c.bytes;
        }
        Ok(found)
    }

    pub(crate) fn commit_unmap(&mut self, range: RangeId, removed: &[Mapping]) {
        for m in removed {
            let Some(r) = self.ranges.get_mut(&range) else {
                return;
            };
            if r.mapped.remove(&m.offset).is_none() {
                continue;
            }
            r.mapped_bytes -= m.bytes;
            if let Some(c) = self.chunks.get_mut(&m.chunk) {
                c.mapped_at = None;
            }
            self.stats.unmaps += 1;
            self.stats.mapped_bytes -= m.bytes;
        }
    }

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
        // The mapping holding `start`, then each one that follows it.
        let mut at = match r.mapped.range(..=start).next_back() {
            Some((&o, &c)) if o + self.chunk(c)?.bytes > start => o + self.chunk(c)?.bytes,
            _ => return Err(unmapped(ptr)),
        };
        while at < end {
            let chunk = *r.mapped.get(&at).ok_or(unmapped(base + at))?;
            at += self.chunk(chunk)?.bytes;
        }
        Ok(base)
    }

    /// Every mapping of every range (for a backend's `Drop`).
    pub(crate) fn all_mappings(&self) -> Vec<Mapping> {
        let mut all = Vec::new();
        for r in self.ranges.values() {
            for (&offset, &chunk) in &r.mapped {
                if let Some(c) = self.chunks.get(&chunk) {
                    all.push(Mapping {
                        chunk,
                        offset,
                        addr: r.base + offset,
                        bytes: c.bytes,
                        handle: c.handle,
                    });
                }
            }
        }
        all
    }
}
