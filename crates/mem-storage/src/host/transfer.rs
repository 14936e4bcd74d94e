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

/// Small enough for miri (`cargo xtask miri` runs this crate's lib tests):
/// every unsafe path of the host backend once.
#[cfg(test)]
mod tests {
    use crate::{DevicePtr, DeviceResource, HostResource, StorageError, StreamId};

    const S: StreamId = StreamId::DEFAULT;

    #[test]
    fn bytes_round_trip_and_an_overlapping_copy_moves_like_memmove() {
        let host = HostResource::with_capacity(1 << 16);
        let p = host.allocate(64, S).unwrap();
        let data: Vec<u8> = (0..64).collect();
        host.write(p, &data, S).unwrap();
        host.copy(p, DevicePtr(p.0 + 8), 32, S).unwrap();
        let mut back = [0u8; 64];
        host.read(p, &mut back, S).unwrap();
        let mut expected = data.clone();
        expected.copy_within(0..32, 8);
        assert_eq!(back.to_vec(), expected);
        host.fill(DevicePtr(p.0 + 60), 0xFF, 4, S).unwrap();
        host.read(DevicePtr(p.0 + 56), &mut back[..8], S).unwrap();
        assert_eq!(back[4..8], [0xFF; 4]);
        host.deallocate(p, 64, S).unwrap();
    }

    #[test]
    fn a_range_past_its_block_is_refused_before_memory_is_touched() {
        let host = HostResource::with_capacity(1 << 16);
        let p = host.allocate(16, S).unwrap();
        let q = host.allocate(16, S).unwrap();
        let refused = host.write(p, &[1; 17], S).unwrap_err();
        assert!(matches!(
            refused,
            StorageError::UnknownPointer { bytes: 17, .. }
        ));
        let mut back = [9u8; 16];
        host.read(q, &mut back, S).unwrap();
        assert_eq!(
            back, [0; 16],
            "fresh memory is zeroed and the neighbour untouched"
        );
        host.deallocate(p, 16, S).unwrap();
        assert!(
            host.read(p, &mut back, S).is_err(),
            "a freed block cannot be read"
        );
        host.deallocate(q, 16, S).unwrap();
    }

    #[test]
    fn dropping_the_resource_frees_live_blocks() {
        let host = HostResource::with_capacity(1 << 16);
        for size in [0, 1, 300] {
            host.allocate(size, S).unwrap();
        }
        assert_eq!(host.live_allocations(), 3);
        drop(host); // miri reports a leak if any block is not freed here
    }
}
