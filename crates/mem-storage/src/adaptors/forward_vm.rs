//! What every virtual-memory adaptor shares: forwarding the calls it does
//! not watch.
//!
//! An adaptor over a [`crate::VirtualMemory`] (logging, statistics,
//! tracking, driver cost, a budget, a checker) watches some lifecycle calls
//! (reserve, free, create, release, map, unmap) and hands everything else —
//! queries and byte access — to the memory it wraps. Writing the forwards
//! once keeps each adaptor's file to what it watches and guarantees none
//! calls the wrong method. Fault injection gates byte access too, so it
//! writes its own.

/// Expands, inside `impl VirtualMemory for Adaptor<V>`, to methods of
/// [`VirtualMemory`](crate::VirtualMemory) forwarded to the field
/// `self.FIELD`, unchanged.
///
/// - `forward_virtual_memory!(inner)`: every method except the six
///   lifecycle calls (`reserve_range`, `free_range`, `create_chunk`,
///   `release_chunk`, `map`, `unmap`), which an adaptor that watches them
///   writes itself; the sharing calls (`create_shareable_chunk`,
///   `share_granularity`, `export_chunk`, `import_chunk`,
///   `release_imported`) are forwarded too.
/// - `forward_virtual_memory!(inner: granularity, map, vm_stats)`: the
///   methods listed (any method of the trait), for an adaptor that watches
///   others.
/// - `*` in place of the field forwards to `**self`, for a pointer to a
///   virtual memory (mem-storage's own `Arc`, `Box` and `&` impls).
///
/// ```
/// use mem_storage::{ChunkId, SimulatedVirtualMemory, StorageError, VirtualMemory};
///
/// /// Counts chunk creations; everything else goes to the memory inside.
/// #[derive(Debug)]
/// struct Counting<V> {
///     inner: V,
///     creates: std::sync::atomic::AtomicU64,
/// }
///
/// impl<V: VirtualMemory> VirtualMemory for Counting<V> {
///     fn create_chunk(&self, bytes: u64) -> Result<ChunkId, StorageError> {
///         self.creates.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
///         self.inner.create_chunk(bytes)
///     }
///     mem_storage::forward_virtual_memory!(
///         inner: reserve_range, free_range, release_chunk, map, unmap
///     );
///     mem_storage::forward_virtual_memory!(inner);
/// }
///
/// let vm = Counting { inner: SimulatedVirtualMemory::new(1 << 30), creates: Default::default() };
/// let chunk = vm.create_chunk(vm.granularity()).unwrap();
/// assert_eq!(vm.chunk_bytes(chunk).unwrap(), vm.granularity());
/// assert_eq!(vm.creates.load(std::sync::atomic::Ordering::Relaxed), 1);
/// vm.release_chunk(chunk).unwrap();
/// ```
#[macro_export]
macro_rules! forward_virtual_memory {
    ($field:tt) => {
        $crate::forward_virtual_memory!(
            $field: backend, granularity, holds_memory, range_info, chunk_bytes, physical_info,
            vm_stats, write_mapped, read_mapped, fill_mapped, copy_mapped,
            create_shareable_chunk, share_granularity, export_chunk, import_chunk,
            release_imported
        );
    };
    ($field:tt : $($method:ident),+ $(,)?) => {
        $( $crate::forward_virtual_memory!(@one $field $method); )+
    };
    (@one $f:tt backend) => {
        $crate::__forward_fn!($f backend() -> &'static str);
    };
    (@one $f:tt granularity) => {
        $crate::__forward_fn!($f granularity() -> u64);
    };
    (@one $f:tt holds_memory) => {
        $crate::__forward_fn!($f holds_memory() -> bool);
    };
    (@one $f:tt reserve_range) => {
        $crate::__forward_fn!($f reserve_range(
            bytes: u64
        ) -> ::core::result::Result<$crate::VaRange, $crate::StorageError>);
    };
    (@one $f:tt free_range) => {
        $crate::__forward_fn!($f free_range(
            range: $crate::RangeId
        ) -> ::core::result::Result<(), $crate::StorageError>);
    };
    (@one $f:tt range_info) => {
        $crate::__forward_fn!($f range_info(
            range: $crate::RangeId
        ) -> ::core::result::Result<$crate::VaRange, $crate::StorageError>);
    };
    (@one $f:tt create_chunk) => {
        $crate::__forward_fn!($f create_chunk(
            bytes: u64
        ) -> ::core::result::Result<$crate::ChunkId, $crate::StorageError>);
    };
    (@one $f:tt release_chunk) => {
        $crate::__forward_fn!($f release_chunk(
            chunk: $crate::ChunkId
        ) -> ::core::result::Result<(), $crate::StorageError>);
    };
    (@one $f:tt chunk_bytes) => {
        $crate::__forward_fn!($f chunk_bytes(
            chunk: $crate::ChunkId
        ) -> ::core::result::Result<u64, $crate::StorageError>);
    };
    (@one $f:tt map) => {
        $crate::__forward_fn!($f map(
            range: $crate::RangeId, offset: u64, chunk: $crate::ChunkId
        ) -> ::core::result::Result<$crate::DevicePtr, $crate::StorageError>);
    };
    (@one $f:tt unmap) => {
        $crate::__forward_fn!($f unmap(
            range: $crate::RangeId, offset: u64, bytes: u64
        ) -> ::core::result::Result<::std::vec::Vec<$crate::ChunkId>, $crate::StorageError>);
    };
    (@one $f:tt physical_info) => {
        $crate::__forward_fn!($f physical_info(

        ) -> ::core::result::Result<$crate::MemInfo, $crate::StorageError>);
    };
    (@one $f:tt vm_stats) => {
        $crate::__forward_fn!($f vm_stats() -> $crate::VirtualMemoryStats);
    };
    (@one $f:tt write_mapped) => {
        $crate::__forward_fn!($f write_mapped(
            dst: $crate::DevicePtr, data: &[u8]
        ) -> ::core::result::Result<(), $crate::StorageError>);
    };
    (@one $f:tt read_mapped) => {
        $crate::__forward_fn!($f read_mapped(
            src: $crate::DevicePtr, out: &mut [u8]
        ) -> ::core::result::Result<(), $crate::StorageError>);
    };
    (@one $f:tt fill_mapped) => {
        $crate::__forward_fn!($f fill_mapped(
            dst: $crate::DevicePtr, value: u8, bytes: u64
        ) -> ::core::result::Result<(), $crate::StorageError>);
    };
    (@one $f:tt create_shareable_chunk) => {
        $crate::__forward_fn!($f create_shareable_chunk(
            bytes: u64, handles: $crate::ShareHandles
        ) -> ::core::result::Result<($crate::ChunkId, $crate::ShareHandles), $crate::StorageError>);
    };
    (@one $f:tt share_granularity) => {
        $crate::__forward_fn!($f share_granularity(handles: $crate::ShareHandles) -> u64);
    };
    (@one $f:tt export_chunk) => {
        #[cfg(unix)]
        $crate::__forward_fn!($f export_chunk(
            chunk: $crate::ChunkId
        ) -> ::core::result::Result<::std::os::fd::OwnedFd, $crate::StorageError>);
    };
    (@one $f:tt import_chunk) => {
        #[cfg(unix)]
        $crate::__forward_fn!($f import_chunk(
            handle: ::std::os::fd::OwnedFd, bytes: u64
        ) -> ::core::result::Result<$crate::ChunkId, $crate::StorageError>);
    };
    (@one $f:tt release_imported) => {
        $crate::__forward_fn!($f release_imported(
            chunk: $crate::ChunkId
        ) -> ::core::result::Result<(), $crate::StorageError>);
    };
    (@one $f:tt copy_mapped) => {
        $crate::__forward_fn!($f copy_mapped(
            src: $crate::DevicePtr, dst: $crate::DevicePtr, bytes: u64
        ) -> ::core::result::Result<(), $crate::StorageError>);
    };
}
