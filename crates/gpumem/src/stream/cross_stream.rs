//! Cross-stream use: the cursor rule and `record_use` (the bodies behind
//! `Stream::bind`, `record_use`, `get_cursor`, `must_wait`, `wait_for`).
//!
//! - **The cursor rule** (CubeCL-compatible `MemoryManagement`).
//!   [`Stream::bind`] stamps an allocation with the number of the operation
//!   it is bound for — the next one submitted. Another stream asks
//!   [`Stream::must_wait`]: if that operation was submitted and has not
//!   completed, it must wait ([`Stream::wait_for`]) before touching it.
//! - **`record_use` (PyTorch's `record_stream`).** A buffer reserved on A and
//!   used by work on B: [`Stream::record_use`] on B makes A hold the memory
//!   after its last handle drops, until B completes every operation it had
//!   submitted when the free was observed. So A never hands the memory to a
//!   new owner while B's kernels may still read it. The holds are kept by
//!   `shared/held.rs`.

use mem_pools::ManagedMemoryHandle;
use mem_storage::{ComputeStorage, DeviceResource};

use crate::error::{GpuMemError, Result};
use crate::shared::{Held, Stream, StreamState, Use};

/// That a stream must wait for operation `op` of stream `stream` before
/// using an allocation (see [`Stream::must_wait`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamWait {
    /// The stream whose work is pending.
    pub stream: usize,
    /// The operation of that stream that must complete first.
    pub op: u64,
}

/// [`Stream::bind`]. A refused bind never ends a hold: the handles passed
/// are dropped like any handle given away, but memory held for another
/// stream's work by [`Stream::record_use`] stays held until that work
/// completes (the engine's `try_bind_keeping` hands the hold's clone back).
/// Uses recorded on `reserved` stay with its memory, now `assigned`'s.
pub(crate) fn bind(
    stream: &Stream,
    reserved: ManagedMemoryHandle,
    assigned: ManagedMemoryHandle,
) -> Result<u64> {
    let stamp = stream.shared().submitted().saturating_add(1);
    let poison = stream.device.config.poison;
    stream.device.run(stream.index, |st| {
        if reserved.binding() == assigned.binding() {
            st.engine.bind(reserved, assigned, stamp)?;
            return Ok(stamp);
        }
        st.engine.get_cursor(reserved.binding())?;
        st.engine.get_cursor(assigned.binding())?;
        // Memory another stream's work uses stays held after the bind
        // takes it from `assigned`: the engine keeps it as a fresh
        // allocation that this stream holds until that work completes.
        let assigned_uses = st.take_uses(&assigned, poison.is_some());
        // Only poisoning needs `assigned`'s old view (taking it maps a
        // lazy page); kept memory is poisoned when its hold ends.
        let old = match (poison, assigned_uses.is_empty()) {
            (Some(_), true) => Some(st.engine.get_storage(assigned.binding())?),
            _ => None,
        };
        // Our hold (a `record_use`) is a holder too, and bind needs the
        // reserved handle to be the only one: pass the hold's clone, and
        // on a refusal take it back — the engine hands both handles back
        // (`try_bind_keeping`), so memory held for another stream's work
        // is never freed by a refused bind.
        let mut held = st.take_held(&reserved);
        let source = match held.as_mut() {
            Some(held) => {
                drop(reserved);
                held.handle.clone()
            }
            None => reserved,
        };
        // `held` keeps a clone only until the bind: the reserved name
        // retires, and a second holder would refuse it.
        let held_uses = held.map(|h| h.uses);
        let bound = if assigned_uses.is_empty() {
            st.engine
                .try_bind(source, assigned.clone(), stamp)
                .map(|()| None)
        } else {
            st.engine.try_bind_keeping(source, assigned.clone(), stamp)
        };
        match bound {
            Ok(kept) => {
                if let Some(kept) = kept {
                    st.hold_kept(kept, assigned_uses, &stream.device.streams);
                }
                let uses = held_uses.unwrap_or_default();
                Ok(finish_bind(st, poison, old, &assigned, uses, stamp))
            }
            Err(refused) => {
                let error = refused.error;
                if let Some(uses) = held_uses {
                    st.held.push(Held {
                        handle: refused.reserved,
                        uses,
                    });
                }
                st.restore_uses(&assigned, assigned_uses);
                Err(error.into())
            }
        }
    })
}

/// [`Stream::record_use`]: `stream` uses `handle`, reserved on its owner.
pub(crate) fn record_use(stream: &Stream, handle: &ManagedMemoryHandle) -> Result<()> {
    let owner = stream.device.owner(handle)?;
    if owner == stream.index {
        return Ok(());
    }
    let mut state = stream.device.streams[owner].lock();
    state.engine.get_cursor(handle.binding())?;
    state.hold(handle, Some(stream.index));
    Ok(())
}

/// After a bind succeeded: poison the memory it freed (if configured) and
/// carry `record_use` holds over to `assigned`. Returns the stamp.
fn finish_bind(
    st: &mut StreamState,
    poison: Option<u8>,
    old: Option<mem_storage::StorageHandle>,
    assigned: &ManagedMemoryHandle,
    uses: Vec<Use>,
    stamp: u64,
) -> u64 {
    if let (Some(byte), Some(old)) = (poison, old)
        && let Err(err) = st.engine.storage().fill(&old, byte)
    {
        // The page may have gone back with the freed memory.
        tracing::debug!(%err, "the memory bind freed was not poisoned");
    }
    st.transfer_uses(assigned, uses);
    stamp
}

/// [`Stream::get_cursor`].
pub(crate) fn get_cursor(stream: &Stream, handle: &ManagedMemoryHandle) -> Result<u64> {
    let owner = stream.device.owner(handle)?;
    let state = stream.device.streams[owner].lock();
    Ok(state.engine.get_cursor(handle.binding())?)
}

/// [`Stream::must_wait`].
pub(crate) fn must_wait(
    stream: &Stream,
    handle: &ManagedMemoryHandle,
) -> Result<Option<StreamWait>> {
    let owner = stream.device.owner(handle)?;
    let stamp = get_cursor(stream, handle)?;
    let other = &stream.device.streams[owner];
    let pending = stamp > 0 && stamp <= other.submitted() && other.completed() < stamp;
    let wait = StreamWait {
        stream: owner,
        op: stamp,
    };
    Ok((owner != stream.index && pending).then_some(wait))
}

/// [`Stream::wait_for`].
pub(crate) fn wait_for(stream: &Stream, wait: StreamWait) -> Result<()> {
    let streams = &stream.device.streams;
    let Some(other) = streams.get(wait.stream) else {
        return Err(GpuMemError::unknown_stream(wait.stream, streams.len()));
    };
    // The budget adaptor does not forward `stream_wait`: the backend does.
    let backend = stream.device.resource.upstream();
    Ok(backend.stream_wait(stream.shared().id, other.id)?)
}
