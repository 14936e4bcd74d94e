//! A refused bind that gives both handles back unchanged.

use super::IoError;
use crate::handles::handle_cell::ManagedMemoryHandle;

/// A refused [`crate::MemoryManagement::try_bind`]: why, and both handles back,
/// exactly as they were passed (the engine changed nothing).
///
/// Converts into its [`IoError`] (`?` in a function returning `IoError`),
/// which drops the handles — the behaviour of plain `bind`.
///
/// # The checks (`bind`, `try_bind`, `try_bind_keeping`, `bind_would_refuse`)
/// Both must be live handles of this manager, else a foreign or stale
/// binding error; `reserved` must have no other holder (a clone, a graph's
/// pin handle: they would be left naming no memory), else
/// [`IoError::SharedReserved`] — a graph pinning the reserved memory counts
/// as a holder even when its pin handle is the one passed, since the pin is
/// keyed by the reserved name that bind retires; `assigned`'s memory must
/// not be pinned by a captured graph (a pin lasts while the graph holds any
/// clone of its pin handle; freeing the memory would hand graph memory to
/// the next reservation), else [`IoError::AssignedPinned`]. A
/// [`crate::RawPin`] counts as a graph pin on either side (it names the
/// slot bind would retire or free). The owner's `get_resource` flag refuses
/// nothing: on `reserved` it stays with the memory, on `assigned` it ends
/// with the freed memory. `try_bind_keeping` is also refused with
/// [`IoError::IndexExhausted`] when no slot is left for the kept memory.
/// Binding a handle to itself only stamps the cursor.
///
/// Plain `bind` drops both handles on a refusal (they were moved in): each
/// loses the holder that was passed. If that was `reserved`'s last holder
/// — the usual case, a fresh reservation — its memory is freed at the
/// engine's next call, even when another stream still uses that memory
/// through a raw address or a cursor wait; the same for `assigned`. To keep
/// the handles, call `try_bind`, or ask `bind_would_refuse` first: pass it
/// exactly what `bind` will be given (a clone kept aside is a holder and
/// makes the answer `SharedReserved`); its answer holds until the engine or
/// the handles change.
#[derive(Debug, thiserror::Error)]
#[error("bind refused: {error}")]
pub struct BindRefused {
    /// Why the bind was refused.
    #[source]
    pub error: IoError,
    /// The `reserved` handle, still naming its memory.
    pub reserved: ManagedMemoryHandle,
    /// The `assigned` handle, still naming its memory.
    pub assigned: ManagedMemoryHandle,
}

impl BindRefused {
    /// The two handles, `(reserved, assigned)`, for the caller to keep.
    pub fn into_handles(self) -> (ManagedMemoryHandle, ManagedMemoryHandle) {
        (self.reserved, self.assigned)
    }
}

impl From<BindRefused> for IoError {
    fn from(refused: BindRefused) -> Self {
        refused.error
    }
}
