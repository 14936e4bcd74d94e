//! Element types a typed allocation may hold, and allocation tags.

/// A plain-old-data element type: every bit pattern is a valid value and
/// the type has no padding, so a slice of it can be viewed as bytes and
/// filled from bytes copied back from a device.
///
/// # Safety
/// Implement only for types with no padding bytes and for which every bit
/// pattern of `size_of::<Self>()` bytes is a valid value.
pub unsafe trait DeviceElement: Copy + Send + Sync + 'static {}

macro_rules! device_elements {
    ($($t:ty),*) => {$(
        // SAFETY: primitive integers and floats have no padding and accept
        // every bit pattern.
        unsafe impl DeviceElement for $t {}
    )*};
}
device_elements!(
    u8, i8, u16, i16, u32, i32, u64, i64, u128, i128, usize, isize, f32, f64
);

/// View elements as their bytes.
pub(crate) fn as_bytes<T: DeviceElement>(items: &[T]) -> &[u8] {
    // SAFETY: `T: DeviceElement` has no padding, so every byte of the slice
    // is initialised; the byte length is exactly the slice's size in memory
    // and `u8` has alignment 1.
    unsafe { std::slice::from_raw_parts(items.as_ptr().cast::<u8>(), std::mem::size_of_val(items)) }
}

/// View elements as mutable bytes.
pub(crate) fn as_bytes_mut<T: DeviceElement>(items: &mut [T]) -> &mut [u8] {
    // SAFETY: as in `as_bytes`; additionally every bit pattern written
    // through the byte view is a valid `T` (the `DeviceElement` contract),
    // and the exclusive borrow is carried over to the returned slice.
    unsafe {
        std::slice::from_raw_parts_mut(
            items.as_mut_ptr().cast::<u8>(),
            std::mem::size_of_val(items),
        )
    }
}

/// What a raw allocation is for: carried by the block and logged with it, so
/// a memory report or trace can attribute bytes to a purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AllocTag(&'static str);

impl AllocTag {
    /// Scratch space for one operation.
    pub const SCRATCH: AllocTag = AllocTag("scratch");
    /// A long-lived arena carved by its owner.
    pub const ARENA: AllocTag = AllocTag("arena");
    /// A staging buffer for host transfers.
    pub const STAGING: AllocTag = AllocTag("staging");
    /// A library workspace (cuBLAS, cuDNN, …).
    pub const WORKSPACE: AllocTag = AllocTag("workspace");

    /// A tag with a caller-chosen name.
    pub const fn new(name: &'static str) -> Self {
        Self(name)
    }

    /// The tag's name.
    pub fn name(&self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for AllocTag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}
