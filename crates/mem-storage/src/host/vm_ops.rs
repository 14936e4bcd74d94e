//! The six lifecycle calls of [`crate::HostVirtualMemory`], each as check
//! against the table, then the system call, then the table update — so a
//! refusal by either the table or the kernel changes nothing.

use crate::error::StorageError;
use crate::host::virtual_memory::{BACKEND, Base, State};
use crate::host::vm_sys as sys;
use crate::vm::{ChunkId, RangeId, VaRange};

impl State {
    pub(crate) fn reserve(&mut self, bytes: u64) -> Result<VaRange, StorageError> {
        self.table.granular("bytes", bytes)?;
        let len = usize::try_from(bytes).map_err(|_| StorageError::NoAddressSpace {
            backend: BACKEND,
            requested: bytes,
        })?;
        let base = sys::reserve(len, self.table.granularity as usize)?;
        let range = self.table.add_range(base.as_ptr() as usize as u64, bytes);
        self.bases.insert(range.base.0, Base(base));
        Ok(range)
    }

    pub(crate) fn free(&mut self, id: RangeId) -> Result<(), StorageError> {
        let range = self.table.check_free(id)?;
        let base = self.ptr(range.base.0, 0)?;
        // SAFETY: the table holds the whole reservation `base..+len`, made by
        // `sys::reserve` and not yet given back; byte access holds this lock,
        // so no reference into it is alive.
        unsafe { sys::release(base, range.len as usize) }?;
        self.table.remove_range(id);
        self.bases.remove(&range.base.0);
        Ok(())
    }

    pub(crate) fn create(&mut self, bytes: u64) -> Result<ChunkId, StorageError> {
        // Dropped (its bytes given back) if growing the file fails.
        let claim = self.table.check_create(bytes)?;
        let offset = self.file_len;
        let end = offset.checked_add(bytes).ok_or(StorageError::Os {
            operation: "growing the chunk memfd",
            errno: rustix::io::Errno::FBIG.raw_os_error(),
        })?;
        sys::set_len(&self.fd, end)?;
        self.file_len = end;
        self.table.add_chunk(claim, offset)
    }

    pub(crate) fn release(&mut self, id: ChunkId) -> Result<(), StorageError> {
        let c = self.table.check_release(id)?;
        match self.own.remove(&id) {
            // A shareable chunk's memfd is closed, not punched: an importer
            // may still hold it, and its pages go back to the OS when the
            // last descriptor and mapping of it are gone.
            Some(fd) => drop(fd),
            None => sys::punch(&self.fd, c.handle, c.bytes)?,
        }
        self.table.remove_chunk(id);
        Ok(())
    }

    pub(crate) fn map(
        &mut self,
        range: RangeId,
        offset: u64,
        chunk: ChunkId,
    ) -> Result<u64, StorageError> {
        let m = self.table.check_map(range, offset, chunk)?;
        let base = self.table.range(range)?.base;
        let at = self.ptr(base, offset)?;
        let fd = self.own.get(&chunk).unwrap_or(&self.fd);
        // SAFETY: the table proved `offset..+bytes` lies inside the live
        // reservation with nothing mapped there; the lock keeps byte access
        // out, so nothing refers to it.
        unsafe { sys::map_chunk(at, m.bytes as usize, fd, m.handle) }?;
        self.table.commit_map(range, m);
        Ok(m.addr)
    }

    pub(crate) fn unmap(
        &mut self,
        range: RangeId,
        offset: u64,
        bytes: u64,
    ) -> Result<Vec<ChunkId>, StorageError> {
        let plan = self.table.check_unmap(range, offset, bytes)?;
        let base = self.table.range(range)?.base;
        let at = self.ptr(base, offset)?;
        // SAFETY: the table proved `offset..+bytes` is inside the live
        // reservation (covered by whole mappings); the lock keeps byte
        // access out, so nothing refers to it.
        unsafe { sys::unmap_chunk(at, bytes as usize) }?;
        Ok(self.table.commit_unmap(&plan, plan.count))
    }
}
