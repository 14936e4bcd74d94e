//! `Stream::reserve`: the engine's reservation, with `auto_relocate`'s
//! relocation before it and the one out-of-memory retry
//! (`out_of_memory.rs`) after a refusal, both kept off the common path.

use mem_pools::{IoError, ManagedMemoryHandle};

use super::out_of_memory::{Attempt, retry};
use crate::error::Result;
use crate::relocation;
use crate::shared::{Stream, StreamState};

/// Reserve `size` bytes on `stream`; see [`Stream::reserve`]. Inlined into
/// it, and with it into the caller: the lock, the engine's call and the
/// statistics' sample then sit in the caller's frame.
#[inline]
pub(crate) fn reserve(stream: &Stream, size: u64) -> Result<ManagedMemoryHandle> {
    if stream.device.config.auto_relocate {
        relocate_before_reserve(stream);
    }
    match try_reserve(stream, size) {
        Ok(handle) => Ok(handle),
        Err(first) => retry_reserve(stream, size, *first),
    }
}

/// The out-of-memory retry after a refused reservation, off the common path.
#[cold]
#[inline(never)]
fn retry_reserve(stream: &Stream, size: u64, first: IoError) -> Result<ManagedMemoryHandle> {
    retry(stream, stream.index, Attempt::Reserve(size), first, || {
        try_reserve(stream, size).map_err(|err| *err)
    })
}

/// One reservation on the stream's engine (held when poisoning, so its
/// free is observed). Inlined into `reserve`: one frame less per call.
///
/// The error comes boxed: a reservation's result is then two words, which
/// travel back through the stream's lock in registers instead of being
/// copied out whole (an `IoError` is seven words) on every success.
#[inline]
fn try_reserve(stream: &Stream, size: u64) -> Result<ManagedMemoryHandle, Box<IoError>> {
    let poison = stream.device.config.poison.is_some();
    // Always inlined, like `run`: the whole reservation (the engine's drain
    // of dropped handles included) is then one frame. Left to the inliner,
    // this closure, too big for its own choice, stayed a call of its own.
    stream.device.run(
        stream.index,
        #[inline(always)]
        |st: &mut StreamState| {
            let handle = st.engine.reserve(size).map_err(Box::new)?;
            if poison {
                st.hold_fresh(&handle);
            }
            Ok(handle)
        },
    )
}

/// `auto_relocate`: what the trigger asks for, before a reservation.
#[cold]
#[inline(never)]
fn relocate_before_reserve(stream: &Stream) {
    if let Err(err) = relocation::relocate_when_wanted(&stream.device, stream.index) {
        tracing::warn!(%err, stream = stream.index, "automatic relocation failed");
    }
}
