//! The sharing calls of [`crate::HostVirtualMemory`]: a shareable chunk is
//! a memfd of its own, its export a duplicate of that descriptor, and an
//! import maps the descriptor another process sent. As in `vm_ops.rs`,
//! each checks against the table, then makes its system call, then
//! records, so a refusal changes nothing.

use std::os::fd::OwnedFd;

use crate::error::StorageError;
use crate::host::virtual_memory::State;
use crate::host::vm_sys as sys;
use crate::vm::{ChunkId, ChunkKind};

impl State {
    pub(crate) fn create_shareable(&mut self, bytes: u64) -> Result<ChunkId, StorageError> {
        // Dropped (its bytes given back) if the memfd cannot be made.
        let claim = self.table.check_create(bytes)?;
        let fd = sys::sealed_memfd(bytes)?;
        let id = self.table.add_chunk(claim, 0)?;
        self.table.set_kind(id, ChunkKind::Shareable);
        self.own.insert(id, fd);
        Ok(id)
    }

    pub(crate) fn export(&mut self, id: ChunkId) -> Result<OwnedFd, StorageError> {
        self.table
            .check_kind(id, ChunkKind::Shareable, "exported")?;
        let fd = self.own.get(&id).ok_or(StorageError::UnknownChunk {
            backend: crate::host::virtual_memory::BACKEND,
            chunk: id,
        })?;
        sys::duplicate(fd)
    }

    pub(crate) fn import(&mut self, fd: OwnedFd, bytes: u64) -> Result<ChunkId, StorageError> {
        self.table.granular("bytes", bytes)?;
        sys::check_memfd(&fd, bytes)?;
        let id = self.table.add_imported(bytes, 0)?;
        self.own.insert(id, fd);
        Ok(id)
    }

    pub(crate) fn release_imported(&mut self, id: ChunkId) -> Result<(), StorageError> {
        self.table.check_release_imported(id)?;
        // The importer's side only: the exporter's memfd keeps its bytes.
        self.own.remove(&id);
        self.table.remove_imported(id);
        Ok(())
    }
}
