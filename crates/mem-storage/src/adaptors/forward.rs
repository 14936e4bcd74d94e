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
///   methods listed (any of `backend`, `alignment`, `mem_info`,
///   `holds_memory`, `write`, `read`, `fill`, `copy`, `synchronize`,
///   `stream_wait`), for an adaptor that watches more.
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
    ($field:ident) => {
        $crate::forward_device_resource!(
            $field: backend, alignment, mem_info, holds_memory, write, read, fill, copy,
            synchronize, stream_wait
        );
    };
    ($field:ident : $($method:ident),+ $(,)?) => {
        $( $crate::forward_device_resource!(@one $field $method); )+
    };
    (@one $f:ident backend) => {
        fn backend(&self) -> &'static str {
            self.$f.backend()
        }
    };
    (@one $f:ident alignment) => {
        fn alignment(&self) -> u64 {
            self.$f.alignment()
        }
    };
    (@one $f:ident mem_info) => {
        fn mem_info(&self) -> ::core::result::Result<$crate::MemInfo, $crate::StorageError> {
            self.$f.mem_info()
        }
    };
    (@one $f:ident holds_memory) => {
        fn holds_memory(&self) -> bool {
            self.$f.holds_memory()
        }
    };
    (@one $f:ident write) => {
        fn write(
            &self,
            dst: $crate::DevicePtr,
            data: &[u8],
            stream: $crate::StreamId,
        ) -> ::core::result::Result<(), $crate::StorageError> {
            self.$f.write(dst, data, stream)
        }
    };
    (@one $f:ident read) => {
        fn read(
            &self,
            src: $crate::DevicePtr,
            out: &mut [u8],
            stream: $crate::StreamId,
        ) -> ::core::result::Result<(), $crate::StorageError> {
            self.$f.read(src, out, stream)
        }
    };
    (@one $f:ident fill) => {
        fn fill(
            &self,
            dst: $crate::DevicePtr,
            value: u8,
            bytes: u64,
            stream: $crate::StreamId,
        ) -> ::core::result::Result<(), $crate::StorageError> {
            self.$f.fill(dst, value, bytes, stream)
        }
    };
    (@one $f:ident copy) => {
        fn copy(
            &self,
            src: $crate::DevicePtr,
            dst: $crate::DevicePtr,
            bytes: u64,
            stream: $crate::StreamId,
        ) -> ::core::result::Result<(), $crate::StorageError> {
            self.$f.copy(src, dst, bytes, stream)
        }
    };
    (@one $f:ident synchronize) => {
        fn synchronize(
            &self,
            stream: $crate::StreamId,
        ) -> ::core::result::Result<(), $crate::StorageError> {
            self.$f.synchronize(stream)
        }
    };
    (@one $f:ident stream_wait) => {
        fn stream_wait(
            &self,
            waiter: $crate::StreamId,
            waited: $crate::StreamId,
        ) -> ::core::result::Result<(), $crate::StorageError> {
            self.$f.stream_wait(waiter, waited)
        }
    };
}
