//! Moving bytes through the mapped addresses of [`HostVirtualMemory`].
//!
//! Every access is checked against the mapping table first, under the
//! backend's lock ([`crate::vm::table::VmTable::check_access`]): an address
//! with no chunk mapped is [`StorageError::UnmappedAddress`], never a
//! `SIGSEGV` on the `PROT_NONE` reservation, and no unmap can pull the pages
//! away while the bytes move. A span crossing from one mapped chunk into
//! the next is one contiguous copy: the mappings sit side by side in the
//! same reservation.

use std::ptr::NonNull;

use crate::error::StorageError;
use crate::host::virtual_memory::{HostVirtualMemory, State};
use crate::id::DevicePtr;

impl State {
    /// The pointer to mapped `ptr..ptr+len`, after checking every byte.
    fn mapped(&self, ptr: DevicePtr, len: u64) -> Result<NonNull<u8>, StorageError> {
        let base = self.table.check_access(ptr.0, len)?;
        self.ptr(base, ptr.0 - base)
    }
}

impl HostVirtualMemory {
    pub(crate) fn write_bytes(&self, dst: DevicePtr, data: &[u8]) -> Result<(), StorageError> {
        let state = self.lock();
        let to = state.mapped(dst, data.len() as u64)?;
        // SAFETY: every byte of `to..+len` is mapped readable and writable
        // (checked above; the held lock keeps it so); `data` is a Rust slice,
        // never inside a reservation, so the ranges do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), to.as_ptr(), data.len()) };
        Ok(())
    }

    pub(crate) fn read_bytes(&self, src: DevicePtr, out: &mut [u8]) -> Result<(), StorageError> {
        let state = self.lock();
        let from = state.mapped(src, out.len() as u64)?;
        // SAFETY: every byte of `from..+len` is mapped (checked, kept so by
        // the lock) and initialised (memfd pages read as zero until written);
        // `out` is a distinct Rust slice.
        unsafe { std::ptr::copy_nonoverlapping(from.as_ptr(), out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    pub(crate) fn fill_bytes(
        &self,
        dst: DevicePtr,
        value: u8,
        bytes: u64,
    ) -> Result<(), StorageError> {
        let state = self.lock();
        let to = state.mapped(dst, bytes)?;
        // SAFETY: every byte of `to..+bytes` is mapped writable (checked,
        // kept so by the lock); `bytes` fits in usize as it lies in a range.
        unsafe { std::ptr::write_bytes(to.as_ptr(), value, bytes as usize) };
        Ok(())
    }

    pub(crate) fn copy_bytes(
        &self,
        src: DevicePtr,
        dst: DevicePtr,
        bytes: u64,
    ) -> Result<(), StorageError> {
        let state = self.lock();
        let from = state.mapped(src, bytes)?;
        let to = state.mapped(dst, bytes)?;
        // SAFETY: both spans are fully mapped (checked, kept so by the lock).
        // A chunk is mapped at most once, so distinct addresses are distinct
        // memory and `ptr::copy` (memmove) handles any overlap.
        unsafe { std::ptr::copy(from.as_ptr(), to.as_ptr(), bytes as usize) };
        Ok(())
    }
}
