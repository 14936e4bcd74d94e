//! What the logging, statistics and tracking adaptors forward untouched
//! when they wrap a [`crate::VirtualMemory`].
//!
//! Those adaptors watch the lifecycle calls (reserve, free, create, release,
//! map, unmap) and hand queries and byte access to the backend they wrap.
//! Writing the forwards once keeps each adaptor's file to what it watches
//! and guarantees none forgets one (there are no trait defaults to fall
//! back on silently, but a hand-written forward could call the wrong
//! method). Fault injection gates byte access too, so it writes its own.

/// Expands, inside `impl VirtualMemory for Adaptor<V>`, to every method
/// except the six lifecycle calls, forwarded to `self.inner()`.
macro_rules! forward_vm_to_inner {
    () => {
        fn backend(&self) -> &'static str {
            self.inner().backend()
        }
        fn granularity(&self) -> u64 {
            self.inner().granularity()
        }
        fn holds_memory(&self) -> bool {
            self.inner().holds_memory()
        }
        fn range_info(
            &self,
            range: $crate::RangeId,
        ) -> Result<$crate::VaRange, $crate::StorageError> {
            self.inner().range_info(range)
        }
        fn chunk_bytes(&self, chunk: $crate::ChunkId) -> Result<u64, $crate::StorageError> {
            self.inner().chunk_bytes(chunk)
        }
        fn physical_info(&self) -> Result<$crate::MemInfo, $crate::StorageError> {
            self.inner().physical_info()
        }
        fn vm_stats(&self) -> $crate::VirtualMemoryStats {
            self.inner().vm_stats()
        }
        fn write_mapped(
            &self,
            dst: $crate::DevicePtr,
            data: &[u8],
        ) -> Result<(), $crate::StorageError> {
            self.inner().write_mapped(dst, data)
        }
        fn read_mapped(
            &self,
            src: $crate::DevicePtr,
            out: &mut [u8],
        ) -> Result<(), $crate::StorageError> {
            self.inner().read_mapped(src, out)
        }
        fn fill_mapped(
            &self,
            dst: $crate::DevicePtr,
            value: u8,
            bytes: u64,
        ) -> Result<(), $crate::StorageError> {
            self.inner().fill_mapped(dst, value, bytes)
        }
        fn copy_mapped(
            &self,
            src: $crate::DevicePtr,
            dst: $crate::DevicePtr,
            bytes: u64,
        ) -> Result<(), $crate::StorageError> {
            self.inner().copy_mapped(src, dst, bytes)
        }
    };
}

pub(crate) use forward_vm_to_inner;
