//! Moving bytes in host memory, between checked ranges.
//!
//! Every access resolves its range to one live block under the resource's
//! lock first ([`State::locate`]), so a stale or overrunning range is
//! [`StorageError::UnknownPointer`] instead of undefined behaviour, and the
//! block cannot be freed while its bytes are being moved. Host work
//! completes in call order, so streams play no part here.

use crate::error::StorageError;
use crate::host::{BACKEND, Block, HostResource, State};
use crate::id::DevicePtr;

impl State {
    /// The block holding `ptr..ptr+len`, with the offset of `ptr` inside it.
    pub(crate) fn locate(&self, ptr: DevicePtr, len: u64) -> Result<(&Block, usize), StorageError> {
        let unknown = StorageError::UnknownPointer {
            backend: BACKEND,
            ptr: ptr.0,
            bytes: len,
        };
        let (&base, block) = self
            .blocks
            .range(..=ptr.0)
            .next_back()
            .ok_or(unknown.clone())?;
        let offset = ptr.0 - base;
        let end = offset.checked_add(len).ok_or(unknown.clone())?;
        if end > block.bytes {
            return Err(unknown);
        }
        Ok((block, offset as usize))
    }
}

impl HostResource {
    pub(crate) fn write_bytes(&self, dst: DevicePtr, data: &[u8]) -> Result<(), StorageError> {
        let state = self.lock();
        let (block, offset) = state.locate(dst, data.len() as u64)?;
        // SAFETY: `locate` proved `offset..offset+len` lies inside the live
        // block, which the held lock keeps alive and unaliased; `data` is a
        // separate Rust slice, so the ranges cannot overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                block.base.as_ptr().add(offset),
                data.len(),
            )
        };
        Ok(())
    }

    pub(crate) fn read_bytes(&self, src: DevicePtr, out: &mut [u8]) -> Result<(), StorageError> {
        let state = self.lock();
        let (block, offset) = state.locate(src, out.len() as u64)?;
        // SAFETY: the range is inside the live, zero-initialised block (see
        // `locate`), kept alive by the lock; `out` is a distinct Rust slice.
        unsafe {
            std::ptr::copy_nonoverlapping(
                block.base.as_ptr().add(offset),
                out.as_mut_ptr(),
                out.len(),
            )
        };
        Ok(())
    }

    pub(crate) fn fill_bytes(
        &self,
        dst: DevicePtr,
        value: u8,
        bytes: u64,
    ) -> Result<(), StorageError> {
        let state = self.lock();
        let (block, offset) = state.locate(dst, bytes)?;
        // SAFETY: the range is inside the live block, kept alive by the lock.
        unsafe { std::ptr::write_bytes(block.base.as_ptr().add(offset), value, bytes as usize) };
        Ok(())
    }

    pub(crate) fn copy_bytes(
        &self,
        src: DevicePtr,
        dst: DevicePtr,
        bytes: u64,
    ) -> Result<(), StorageError> {
        let state = self.lock();
        let (from, from_off) = state.locate(src, bytes)?;
        let (to, to_off) = state.locate(dst, bytes)?;
        // SAFETY: both ranges lie inside live blocks kept alive by the lock;
        // `ptr::copy` permits the ranges to overlap (a move within one page).
        unsafe {
            std::ptr::copy(
                from.base.as_ptr().add(from_off),
                to.base.as_ptr().add(to_off),
                bytes as usize,
            )
        };
        Ok(())
    }
}
