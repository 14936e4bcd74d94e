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
///   writes itself.
/// - `forward_virtual_memory!(inner: granularity, map, vm_stats)`: the
///   methods listed (any method of the trait), for an adaptor that watches
///   others.
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
    ($field:ident) => {
        $crate::forward_virtual_memory!(
            $field: backend, granularity, holds_memory, range_info, chunk_bytes, physical_info,
            vm_stats, write_mapped, read_mapped, fill_mapped, copy_mapped
        );
    };
    ($field:ident : $($method:ident),+ $(,)?) => {
        $( $crate::forward_virtual_memory!(@one $field $method); )+
    };
    (@one $f:ident backend) => {
        fn backend(&self) -> &'static str {
            self.$f.backend()
        }
    };
    (@one $f:ident granularity) => {
        fn granularity(&self) -> u64 {
            self.$f.granularity()
        }
    };
    (@one $f:ident holds_memory) => {
        fn holds_memory(&self) -> bool {
            self.$f.holds_memory()
        }
    };
    (@one $f:ident reserve_range) => {
        fn reserve_range(
            &self,
            bytes: u64,
        ) -> ::core::result::Result<$crate::VaRange, $crate::StorageError> {
            self.$f.reserve_range(bytes)
        }
    };
    (@one $f:ident free_range) => {
        fn free_range(
            &self,
            range: $crate::RangeId,
        ) -> ::core::result::Result<(), $crate::StorageError> {
            self.$f.free_range(range)
        }
    };
    (@one $f:ident range_info) => {
        fn range_info(
            &self,
            range: $crate::RangeId,
        ) -> ::core::result::Result<$crate::VaRange, $crate::StorageError> {
            self.$f.range_info(range)
        }
    };
    (@one $f:ident create_chunk) => {
        fn create_chunk(
            &self,
            bytes: u64,
        ) -> ::core::result::Result<$crate::ChunkId, $crate::StorageError> {
            self.$f.create_chunk(bytes)
        }
    };
    (@one $f:ident release_chunk) => {
        fn release_chunk(
            &self,
            chunk: $crate::ChunkId,
        ) -> ::core::result::Result<(), $crate::StorageError> {
            self.$f.release_chunk(chunk)
        }
    };
    (@one $f:ident chunk_bytes) => {
        fn chunk_bytes(
            &self,
            chunk: $crate::ChunkId,
        ) -> ::core::result::Result<u64, $crate::StorageError> {
            self.$f.chunk_bytes(chunk)
        }
    };
    (@one $f:ident map) => {
        fn map(
            &self,
            range: $crate::RangeId,
            offset: u64,
            chunk: $crate::ChunkId,
        ) -> ::core::result::Result<$crate::DevicePtr, $crate::StorageError> {
            self.$f.map(range, offset, chunk)
        }
    };
    (@one $f:ident unmap) => {
        fn unmap(
            &self,
            range: $crate::RangeId,
            offset: u64,
            bytes: u64,
        ) -> ::core::result::Result<::std::vec::Vec<$crate::ChunkId>, $crate::StorageError> {
            self.$f.unmap(range, offset, bytes)
        }
    };
    (@one $f:ident physical_info) => {
        fn physical_info(&self) -> ::core::result::Result<$crate::MemInfo, $crate::StorageError> {
            self.$f.physical_info()
        }
    };
    (@one $f:ident vm_stats) => {
        fn vm_stats(&self) -> $crate::VirtualMemoryStats {
            self.$f.vm_stats()
        }
    };
    (@one $f:ident write_mapped) => {
        fn write_mapped(
            &self,
            dst: $crate::DevicePtr,
            data: &[u8],
        ) -> ::core::result::Result<(), $crate::StorageError> {
            self.$f.write_mapped(dst, data)
        }
    };
    (@one $f:ident read_mapped) => {
        fn read_mapped(
            &self,
            src: $crate::DevicePtr,
            out: &mut [u8],
        ) -> ::core::result::Result<(), $crate::StorageError> {
            self.$f.read_mapped(src, out)
        }
    };
    (@one $f:ident fill_mapped) => {
        fn fill_mapped(
            &self,
            dst: $crate::DevicePtr,
            value: u8,
            bytes: u64,
        ) -> ::core::result::Result<(), $crate::StorageError> {
            self.$f.fill_mapped(dst, value, bytes)
        }
    };
    (@one $f:ident copy_mapped) => {
        fn copy_mapped(
            &self,
            src: $crate::DevicePtr,
            dst: $crate::DevicePtr,
            bytes: u64,
        ) -> ::core::result::Result<(), $crate::StorageError> {
            self.$f.copy_mapped(src, dst, bytes)
        }
    };
}
