//! What every adaptor shares: forwarding the calls it does not watch.
//!
//! An adaptor (logging, statistics, tracking, driver cost, a budget) watches
//! some calls and hands everything else — byte movement, queries, stream
//! ordering — to the resource it wraps, unchanged. Writing those forwards
//! once, here, keeps the adaptors to the one idea each holds and guarantees
//! none forgets a method (a forgotten one would silently fall back to the
//! trait default, for example "unsupported" writes on a host stack, or a
//! no-op `stream_wait` that drops cross-stream ordering on CUDA).

/// Expands, inside `impl DeviceResource for Adaptor<R>`, to methods of
/// [`DeviceResource`](crate::DeviceResource) forwarded to the field
/// `self.FIELD`, unchanged.
///
/// - `forward_device_resource!(inner)`: every method except `allocate` and
///   `deallocate` (what an adaptor that watches allocation writes itself).
/// - `forward_device_resource!(inner: backend, alignment, write)`: the
///   methods listed (any method of the trait), for an adaptor that watches
///   more.
/// - `*` in place of the field forwards to `**self`, for a pointer to a
///   resource (mem-storage's own `Arc`, `Box` and `&` impls).
///
/// ```
/// use mem_storage::{DevicePtr, DeviceResource, HostResource, StorageError, StreamId};
///
/// /// Counts allocations; everything else goes to the resource inside.
/// #[derive(Debug)]
/// struct Counting<R> {
///     inner: R,
///     allocs: std::sync::atomic::AtomicU64,
/// }
///
/// impl<R: DeviceResource> DeviceResource for Counting<R> {
///     fn allocate(&self, bytes: u64, stream: StreamId) -> Result<DevicePtr, StorageError> {
///         self.allocs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
///         self.inner.allocate(bytes, stream)
///     }
///     fn deallocate(&self, ptr: DevicePtr, bytes: u64, stream: StreamId) -> Result<(), StorageError> {
///         self.inner.deallocate(ptr, bytes, stream)
///     }
///     mem_storage::forward_device_resource!(inner);
/// }
///
/// let counting = Counting { inner: HostResource::with_capacity(1 << 20), allocs: Default::default() };
/// let ptr = counting.allocate(256, StreamId::DEFAULT).unwrap();
/// assert_eq!(counting.backend(), HostResource::with_capacity(1 << 20).backend());
/// counting.deallocate(ptr, 256, StreamId::DEFAULT).unwrap();
/// ```
#[macro_export]
macro_rules! forward_device_resource {
    ($field:tt) => {
        $crate::forward_device_resource!(
            $field: backend, alignment, mem_info, holds_memory, write, read, fill, copy,
            synchronize, stream_wait
        );
    };
    ($field:tt : $($method:ident),+ $(,)?) => {
        $( $crate::forward_device_resource!(@one $field $method); )+
    };
    (@one $f:tt backend) => {
        $crate::__forward_fn!($f backend() -> &'static str);
    };
    (@one $f:tt allocate) => {
        $crate::__forward_fn!($f allocate(
            bytes: u64, stream: $crate::StreamId
        ) -> ::core::result::Result<$crate::DevicePtr, $crate::StorageError>);
    };
    (@one $f:tt deallocate) => {
        $crate::__forward_fn!($f deallocate(
            ptr: $crate::DevicePtr, bytes: u64, stream: $crate::StreamId
        ) -> ::core::result::Result<(), $crate::StorageError>);
    };
    (@one $f:tt alignment) => {
        $crate::__forward_fn!($f alignment() -> u64);
    };
    (@one $f:tt mem_info) => {
        $crate::__forward_fn!($f mem_info(

        ) -> ::core::result::Result<$crate::MemInfo, $crate::StorageError>);
    };
    (@one $f:tt holds_memory) => {
        $crate::__forward_fn!($f holds_memory() -> bool);
    };
    (@one $f:tt write) => {
        $crate::__forward_fn!($f write(
            dst: $crate::DevicePtr, data: &[u8], stream: $crate::StreamId
        ) -> ::core::result::Result<(), $crate::StorageError>);
    };
    (@one $f:tt read) => {
        $crate::__forward_fn!($f read(
            src: $crate::DevicePtr, out: &mut [u8], stream: $crate::StreamId
        ) -> ::core::result::Result<(), $crate::StorageError>);
    };
    (@one $f:tt fill) => {
        $crate::__forward_fn!($f fill(
            dst: $crate::DevicePtr, value: u8, bytes: u64, stream: $crate::StreamId
        ) -> ::core::result::Result<(), $crate::StorageError>);
    };
    (@one $f:tt copy) => {
        $crate::__forward_fn!($f copy(
            src: $crate::DevicePtr, dst: $crate::DevicePtr, bytes: u64, stream: $crate::StreamId
        ) -> ::core::result::Result<(), $crate::StorageError>);
    };
    (@one $f:tt synchronize) => {
        $crate::__forward_fn!($f synchronize(
            stream: $crate::StreamId
        ) -> ::core::result::Result<(), $crate::StorageError>);
    };
    (@one $f:tt stream_wait) => {
        $crate::__forward_fn!($f stream_wait(
            waiter: $crate::StreamId, waited: $crate::StreamId
        ) -> ::core::result::Result<(), $crate::StorageError>);
    };
}

/// One forwarding method of
/// [`forward_device_resource!`](crate::forward_device_resource) and
/// [`forward_virtual_memory!`](crate::forward_virtual_memory): `fn NAME(&self,
/// ARGS) -> RET` calling the same method on `self.FIELD`, or on `**self`
/// for `*`.
#[doc(hidden)]
#[macro_export]
macro_rules! __forward_fn {
    (* $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        fn $name(&self, $($arg: $ty),*) -> $ret {
            (**self).$name($($arg),*)
        }
    };
    ($f:ident $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        fn $name(&self, $($arg: $ty),*) -> $ret {
            self.$f.$name($($arg),*)
        }
    };
}
