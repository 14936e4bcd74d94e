//! Mappings in [`VmTable`]: what a map or unmap may touch.
//!
//! Each range's [`Granules`](crate::vm::granules::Granules) table names the
//! chunk over every mapped granule, and each chunk knows where it starts,
//! so a map checks the k granules it covers, and an unmap spanning k
//! chunks takes k lookups: O(1) per chunk, no ordered map. An
//! unmap is checked once and then committed from a plan ([`Unmapping`])
//! that re-walks the span, so neither step allocates but for the ids an
//! unmap answers.

use crate::error::StorageError;
use crate::vm::table::{RangeEntry, VmTable};
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

/// A checked unmap: `offset..end` of `range` is covered exactly by
/// `count` whole mappings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unmapping {
    pub(crate) range: RangeId,
    pub(crate) offset: u64,
    pub(crate) end: u64,
    pub(crate) count: usize,
}

impl VmTable {
    /// The mapping that covers `offset` of `r`, if one starts exactly there.
    pub(crate) fn mapping_at(&self, r: &RangeEntry, offset: u64) -> Option<Mapping> {
        let chunk = r.granules.get(offset >> self.shift)?;
        let c = self.chunk(chunk).ok()?;
        (c.mapped_at == Some((r.id, offset))).then_some(Mapping {
            chunk,
            offset,
            addr: r.base + offset,
            bytes: c.bytes,
            handle: c.handle,
        })
    }

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
        let end = offset
            .checked_add(c.bytes)
            .filter(|&end| end <= r.len)
            .ok_or(StorageError::OutsideRange {
                range,
                offset,
                bytes: c.bytes,
                len: r.len,
            })?;
        // Name the mapping in the way that starts last before `end`.
        if let Some(other) = r.granules.last_in(offset >> self.shift, end >> self.shift) {
            let (_, mapped_offset) = self.chunk(other)?.mapped_at.unwrap_or((range, 0));
            return Err(StorageError::AlreadyMapped {
                range,
                offset,
                bytes: c.bytes,
                mapped_offset,
                mapped_chunk: other,
            });
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
        let shift = self.shift;
        let Ok(r) = self.range_mut(range) else {
            return;
        };
        r.granules
            .insert(m.offset >> shift, m.bytes >> shift, m.chunk);
        r.mappings += 1;
        r.mapped_bytes += m.bytes;
        if let Some(c) = self.chunks.get_mut(m.chunk.0) {
            c.mapped_at = Some((range, m.offset));
        }
        let s = &mut self.stats;
        s.maps += 1;
        s.mapped_bytes += m.bytes;
        s.peak_mapped_bytes = s.peak_mapped_bytes.max(s.mapped_bytes);
    }

    /// Whether `offset..offset+bytes` of `range` is covered exactly by
    /// whole mappings, and by how many.
    pub(crate) fn check_unmap(
        &self,
        range: RangeId,
        offset: u64,
        bytes: u64,
    ) -> Result<Unmapping, StorageError> {
        let r = self.range(range)?;
        self.granular("offset", offset)?;
        self.granular("bytes", bytes)?;
        let end = offset
            .checked_add(bytes)
            .filter(|&end| end <= r.len)
            .ok_or(StorageError::OutsideRange {
                range,
                offset,
                bytes,
                len: r.len,
            })?;
        let (mut at, mut count) = (offset, 0);
        while at < end {
            let m = self.mapping_at(r, at).filter(|m| at + m.bytes <= end);
            let m = m.ok_or(StorageError::NotMapped {
                range,
                offset,
                bytes,
                at,
            })?;
            at += m.bytes;
            count += 1;
        }
        Ok(Unmapping {
            range,
            offset,
            end,
            count,
        })
    }

    /// The mappings a checked unmap removes, in address order.
    pub(crate) fn unmapping(&self, plan: &Unmapping) -> Vec<Mapping> {
        let Ok(r) = self.range(plan.range) else {
            return Vec::new();
        };
        let mut found = Vec::with_capacity(plan.count);
        let mut at = plan.offset;
        while let Some(m) = self.mapping_at(r, at).filter(|_| at < plan.end) {
            found.push(m);
            at += m.bytes;
        }
        found
    }

    /// Remove the first `count` mappings of a checked unmap (all of them,
    /// or those a driver did unmap before failing) and answer their chunks
    /// in address order.
    pub(crate) fn commit_unmap(&mut self, plan: &Unmapping, count: usize) -> Vec<ChunkId> {
        let shift = self.shift;
        let mut removed = Vec::with_capacity(count);
        let mut at = plan.offset;
        while removed.len() < count && at < plan.end {
            let Some(m) = self
                .range(plan.range)
                .ok()
                .and_then(|r| self.mapping_at(r, at))
            else {
                break;
            };
            if let Ok(r) = self.range_mut(plan.range) {
                r.granules.remove(at >> shift, m.bytes >> shift);
                r.mappings -= 1;
                r.mapped_bytes -= m.bytes;
            }
            if let Some(c) = self.chunks.get_mut(m.chunk.0) {
                c.mapped_at = None;
            }
            self.stats.unmaps += 1;
            self.stats.mapped_bytes -= m.bytes;
            removed.push(m.chunk);
            at += m.bytes;
        }
        removed
    }
}
