//! `Region`: a range of its own with whole chunks mapped end to end, on
//! either side of a share. Its drop unmaps, releases this process's side of
//! every chunk and frees the range, so neither side can leak a chunk, and
//! nothing else is ever mapped in it.

use std::sync::Arc;

use mem_storage::{ChunkId, DevicePtr, StorageError, VaRange, VirtualMemory};

use crate::stats::sharing::SharingTally;

/// Which side of a share a region is: what its drop releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// The exporter's chunks, created shareable and charged to its budget.
    Exported,
    /// The importer's view of another process's chunks.
    Imported,
}

#[derive(Debug)]
pub(crate) struct Region {
    pub(crate) vm: Arc<dyn VirtualMemory>,
    pub(crate) range: VaRange,
    /// The chunks in address order, each with its size.
    pub(crate) chunks: Vec<(ChunkId, u64)>,
    /// The bytes the user asked for (the rest, up to the range's length, is
    /// granule padding, zero on export).
    pub(crate) len: u64,
    pub(crate) side: Side,
    /// The device's sharing levels, which count this region while it lives.
    tally: Arc<SharingTally>,
}

impl Region {
    /// Reserve a range for `chunks` (sizes in order), take each chunk with
    /// `take` and map it; on any refusal undo what was done.
    pub(crate) fn build(
        vm: Arc<dyn VirtualMemory>,
        sizes: &[u64],
        len: u64,
        side: Side,
        tally: Arc<SharingTally>,
        mut take: impl FnMut(usize, u64) -> Result<ChunkId, StorageError>,
    ) -> Result<Region, StorageError> {
        let total = sizes.iter().sum();
        let range = vm.reserve_range(total)?;
        // Counted from here, so the drop of a region refused part-way
        // (which undoes it) takes out exactly what was put in.
        tally.add(side == Side::Exported, range.len);
        let mut region = Region {
            vm,
            range,
            chunks: Vec::with_capacity(sizes.len()),
            len,
            side,
            tally,
        };
        let mut offset = 0;
        for (i, &bytes) in sizes.iter().enumerate() {
            // A chunk taken but not mapped is released here; a mapped one
            // by the region's drop.
            let chunk = take(i, bytes)?;
            if let Err(e) = region.vm.map(region.range.id, offset, chunk) {
                region.release(chunk);
                return Err(e);
            }
            region.chunks.push((chunk, bytes));
            offset += bytes;
        }
        Ok(region)
    }

    /// The address of the first byte.
    pub(crate) fn base(&self) -> DevicePtr {
        self.range.base
    }

    /// The bytes mapped, padding included.
    pub(crate) fn mapped_len(&self) -> u64 {
        self.range.len
    }

    /// The address `offset` bytes in, if `offset..offset+bytes` lies in the
    /// mapped bytes.
    pub(crate) fn at(&self, offset: u64, bytes: u64) -> Result<DevicePtr, StorageError> {
        match offset.checked_add(bytes) {
            Some(end) if end <= self.range.len => Ok(DevicePtr(self.range.base.0 + offset)),
            _ => Err(StorageError::InvalidArgument {
                parameter: "offset + length",
                value: offset.saturating_add(bytes),
                expected: "at most the shared buffer's mapped length",
            }),
        }
    }

    fn release(&self, chunk: ChunkId) {
        let released = match self.side {
            Side::Exported => self.vm.release_chunk(chunk),
            Side::Imported => self.vm.release_imported(chunk),
        };
        if let Err(err) = released {
            tracing::error!(%err, %chunk, "a shared chunk could not be released; it leaks");
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        self.tally
            .remove(self.side == Side::Exported, self.range.len);
        let mapped: u64 = self.chunks.iter().map(|&(_, b)| b).sum();
        if mapped > 0
            && let Err(err) = self.vm.unmap(self.range.id, 0, mapped)
        {
            // Still mapped: releasing would be refused; leak rather than
            // free memory that may be in use.
            tracing::error!(%err, "a shared buffer could not be unmapped; it leaks");
            return;
        }
        for &(chunk, _) in &self.chunks {
            self.release(chunk);
        }
        if let Err(err) = self.vm.free_range(self.range.id) {
            tracing::error!(%err, "a shared buffer's range could not be freed");
        }
    }
}
