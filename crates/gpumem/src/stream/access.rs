//! Reaching a handle's memory, with the same out-of-memory handling as
//! reserving.
//!
//! With lazy pages (and in a lazy arena) a reservation only counts memory;
//! the page is allocated, or the arena's chunks are mapped, at the first
//! dereference — `Stream::view`, `read`, `write`, `device_ptr`. That is
//! where the device or its budget can refuse, so an access gets what
//! `Stream::reserve` gets (`reserve.rs`, mem-relocate's `ReserveRetry`): on an out-of-memory refusal every
//! stream's cached memory is given back and the access is tried once more;
//! a second refusal is [`GpuMemError::OutOfMemory`] with the
//! [`crate::OutOfMemoryReport`] (whose `requested` is the bytes the storage
//! was asked for: the page, or the chunks under the buffer). Any other
//! error (a stale handle, a range past the buffer) is returned as is.

use std::sync::atomic::Ordering;

use mem_pools::IoError;
use mem_relocate::{ReserveRetry, RetryStep};
use mem_storage::StorageError;

use crate::error::{GpuMemError, Result};
use crate::stream::Stream;
use crate::stream_state::StreamState;

impl Stream {
    /// Run `f` on the engine of stream `owner` (the stream that owns the
    /// memory `f` reaches); on an out-of-memory refusal free every stream's
    /// cached memory and run it once more, then report.
    pub(crate) fn access<T>(
        &self,
        owner: usize,
        mut f: impl FnMut(&mut StreamState) -> Result<T, IoError>,
    ) -> Result<T> {
        let mut retry = ReserveRetry::new();
        loop {
            let err = match self.device.run(owner, &mut f) {
                Ok(value) => return Ok(value),
                Err(err) => err,
            };
            match (retry.next(&err), err) {
                (RetryStep::FreeCachedMemory, err) => {
                    tracing::debug!(%err, stream = owner, "first touch refused; freeing cached memory and retrying");
                    self.device.retries.fetch_add(1, Ordering::Relaxed);
                    self.device.streams[owner].lock().tally.num_alloc_retries += 1;
                    self.device.free_cached_memory();
                }
                (
                    RetryStep::GiveUp,
                    IoError::Storage(cause @ StorageError::OutOfMemory { requested, .. }),
                ) => {
                    self.device.ooms.fetch_add(1, Ordering::Relaxed);
                    self.device.streams[owner].lock().tally.num_ooms += 1;
                    let report = self.device.oom_report(owner, requested, &cause);
                    tracing::warn!(target: "gpumem", "{report}");
                    return Err(GpuMemError::OutOfMemory(Box::new(report)));
                }
                // An access never grows a pool, so it never runs out of
                // page sizes; anything but memory is returned as is.
                (_, err) => return Err(err.into()),
            }
        }
    }
}
