//! Chunks in [`VmTable`]: create, look up, release.
//!
//! A chunk id is the id of its slot in the table's [`Slab`](crate::vm::slab::Slab),
//! so each of these is O(1). The bytes are claimed from the table's
//! [`crate::PhysicalMemory`] before the backend makes the chunk, and kept
//! only once it is recorded, so a refusal anywhere changes nothing.

use crate::error::StorageError;
use crate::physical::ChunkClaim;
use crate::vm::table::{ChunkEntry, VmTable};
use crate::vm::{ChunkId, ChunkKind};

impl VmTable {
    /// Whether a chunk of `bytes` may be created now, and if so its bytes,
    /// claimed: larger than the whole memory is `TooBig`, larger than what
    /// is free now (pages included, when shared) `OutOfMemory`. The claim
    /// goes back on drop unless [`VmTable::add_chunk`] records the chunk.
    pub(crate) fn check_create(&self, bytes: u64) -> Result<ChunkClaim, StorageError> {
        self.granular("bytes", bytes)?;
        if !self.chunks.has_room() {
            return Err(self.no_chunk_slot(bytes));
        }
        ChunkClaim::new(&self.memory, self.backend, bytes)
    }

    /// Record a chunk the backend made with the bytes `claim` holds.
    ///
    /// # Errors
    /// [`StorageError::OutOfMemory`] (the claim given back) when the table
    /// has no slot left — 2^32 - 1 chunks live; `check_create` refuses that
    /// first, so a backend under one lock never sees it.
    pub(crate) fn add_chunk(
        &mut self,
        claim: ChunkClaim,
        handle: u64,
    ) -> Result<ChunkId, StorageError> {
        let entry = ChunkEntry {
            bytes: claim.bytes(),
            handle,
            mapped_at: None,
            kind: ChunkKind::Pooled,
        };
        let id = self
            .chunks
            .insert(entry)
            .map_err(|_| self.no_chunk_slot(entry.bytes))?;
        let bytes = claim.keep();
        let s = &mut self.stats;
        s.chunks_created += 1;
        s.physical_bytes += bytes;
        s.peak_physical_bytes = s.peak_physical_bytes.max(s.physical_bytes);
        Ok(ChunkId(id))
    }

    /// Every chunk slot is live: retryable once one is released.
    fn no_chunk_slot(&self, requested: u64) -> StorageError {
        let info = self.memory.mem_info();
        StorageError::OutOfMemory {
            backend: self.backend,
            refused_by: crate::Refuser::Device,
            requested,
            free: info.free,
            total: info.total,
        }
    }

    pub(crate) fn chunk(&self, id: ChunkId) -> Result<ChunkEntry, StorageError> {
        self.chunks
            .get(id.0)
            .copied()
            .ok_or(StorageError::UnknownChunk {
                backend: self.backend,
                chunk: id,
            })
    }

    /// Mark a chunk just recorded as shareable.
    pub(crate) fn set_kind(&mut self, id: ChunkId, kind: ChunkKind) {
        if let Some(c) = self.chunks.get_mut(id.0) {
            c.kind = kind;
        }
    }

    /// Record a chunk imported from another process: not claimed from this
    /// table's memory, not counted in its physical bytes.
    pub(crate) fn add_imported(
        &mut self,
        bytes: u64,
        handle: u64,
    ) -> Result<ChunkId, StorageError> {
        let entry = ChunkEntry {
            bytes,
            handle,
            mapped_at: None,
            kind: ChunkKind::Imported,
        };
        let id = self
            .chunks
            .insert(entry)
            .map_err(|_| self.no_chunk_slot(bytes))?;
        Ok(ChunkId(id))
    }

    /// The chunk a sharing call is about, if it is of `kind`.
    pub(crate) fn check_kind(
        &self,
        id: ChunkId,
        kind: ChunkKind,
        operation: &'static str,
    ) -> Result<ChunkEntry, StorageError> {
        let c = self.chunk(id)?;
        if c.kind == kind {
            return Ok(c);
        }
        let reason = match kind {
            ChunkKind::Shareable => "it was not created shareable (create_shareable_chunk)",
            ChunkKind::Imported => "it was not imported (release it with release_chunk)",
            ChunkKind::Pooled => "it was imported (release it with release_imported)",
        };
        Err(StorageError::NotShareable {
            chunk: id,
            operation,
            reason,
        })
    }

    /// An imported chunk to release, if it is not mapped; forgotten with
    /// [`VmTable::remove_imported`].
    pub(crate) fn check_release_imported(&self, id: ChunkId) -> Result<ChunkEntry, StorageError> {
        self.check_kind(id, ChunkKind::Imported, "released")?;
        self.check_release_any(id)
    }

    pub(crate) fn remove_imported(&mut self, id: ChunkId) {
        self.chunks.remove(id.0);
    }

    /// The chunk to release, if it is not mapped and is this backend's own.
    pub(crate) fn check_release(&self, id: ChunkId) -> Result<ChunkEntry, StorageError> {
        if self.chunk(id)?.kind == ChunkKind::Imported {
            return self.check_kind(id, ChunkKind::Pooled, "released");
        }
        self.check_release_any(id)
    }

    fn check_release_any(&self, id: ChunkId) -> Result<ChunkEntry, StorageError> {
        let c = self.chunk(id)?;
        match c.mapped_at {
            Some((range, offset)) => Err(StorageError::ChunkMapped {
                chunk: id,
                range,
                offset,
            }),
            None => Ok(c),
        }
    }

    pub(crate) fn remove_chunk(&mut self, id: ChunkId) {
        if let Some(c) = self.chunks.remove(id.0) {
            self.stats.chunks_released += 1;
            self.stats.physical_bytes -= c.bytes;
            self.memory.release(c.bytes);
        }
    }
}
