//! Reading an allocation's bytes back, for the invariant checks.

use mem_pools::IoError;
use mem_storage::ComputeStorage;

/// Read `len` bytes at `offset` of an entry's view.
pub(super) fn read_at<S: ComputeStorage>(
    manager: &mut mem_pools::MemoryManagement<S>,
    binding: mem_pools::ManagedMemoryBinding,
    offset: u64,
    out: &mut [u8],
) -> Result<(), IoError> {
    let view = manager.get_storage(binding)?;
    let narrowed = view
        .narrow(Some(offset), Some(offset + out.len() as u64))
        .ok_or(IoError::OutOfBounds {
            start: offset,
            end: offset + out.len() as u64,
            size: view.size(),
        })?;
    Ok(manager.storage().read(&narrowed, out)?)
}
