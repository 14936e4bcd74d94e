//! What every adaptor shares: forwarding the calls it does not watch.
//!
//! An adaptor (logging, statistics, tracking) watches allocate and free and
//! hands everything else — byte movement, queries, stream ordering — to the
//! resource it wraps, unchanged. Writing those forwards once, here, keeps
//! the adaptors to the one idea each holds and guarantees none forgets a
//! method (a forgotten one would silently fall back to the trait default,
//! for example "unsupported" writes on a host stack).

/// Expands, inside `impl DeviceResource for Adaptor<R>`, to every method
/// except `allocate` and `deallocate`, forwarded to `self.inner`.
macro_rules! forward_to_inner {
    () => {
        fn backend(&self) -> &'static str {
            self.inner.backend()
        }
        fn alignment(&self) -> u64 {
            self.inner.alignment()
        }
        fn mem_info(&self) -> Result<$crate::MemInfo, $crate::StorageError> {
            self.inner.mem_info()
        }
        fn holds_memory(&self) -> bool {
            self.inner.holds_memory()
        }
        fn write(
            &self,
            dst: $crate::DevicePtr,
            data: &[u8],
            stream: $crate::StreamId,
        ) -> Result<(), $crate::StorageError> {
            self.inner.write(dst, data, stream)
        }
        fn read(
            &self,
            src: $crate::DevicePtr,
            out: &mut [u8],
            stream: $crate::StreamId,
        ) -> Result<(), $crate::StorageError> {
            self.inner.read(src, out, stream)
        }
        fn fill(
            &self,
            dst: $crate::DevicePtr,
            value: u8,
            bytes: u64,
            stream: $crate::StreamId,
        ) -> Result<(), $crate::StorageError> {
            self.inner.fill(dst, value, bytes, stream)
        }
        fn copy(
            &self,
            src: $crate::DevicePtr,
            dst: $crate::DevicePtr,
            bytes: u64,
            stream: $crate::StreamId,
        ) -> Result<(), $crate::StorageError> {
            self.inner.copy(src, dst, bytes, stream)
        }
        fn synchronize(&self, stream: $crate::StreamId) -> Result<(), $crate::StorageError> {
            self.inner.synchronize(stream)
        }
        fn stream_wait(
            &self,
            waiter: $crate::StreamId,
            waited: $crate::StreamId,
        ) -> Result<(), $crate::StorageError> {
            self.inner.stream_wait(waiter, waited)
        }
    };
}

pub(crate) use forward_to_inner;
