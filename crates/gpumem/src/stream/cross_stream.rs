//! Cross-stream use: the cursor rule and `record_use`.
//!
//! - **The cursor rule** (CubeCL-compatible `MemoryManagement`). [`Stream::bind`] stamps an allocation
//!   with the number of the operation it is bound for — the next one
//!   submitted. Another stream asks [`Stream::must_wait`]: if that operation
//!   was submitted and has not completed, it must wait ([`Stream::wait_for`])
//!   before touching the memory.
//! - **`record_use` (PyTorch's `record_stream`).** A buffer reserved on A and
//!   used by work on B: [`Stream::record_use`] on B makes A hold the memory
//!   after its last handle drops, until B completes every operation it had
//!   submitted when the free was observed. So A never hands the memory to a
//!   new owner while B's kernels may still read it.

use mem_pools::ManagedMemoryHandle;
use mem_storage::{ComputeStorage, DeviceResource};

use crate::error::{GpuMemError, Result};
use crate::stream::Stream;

/// That a stream must wait for operation `op` of stream `stream` before
/// using an allocation (see [`Stream::must_wait`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamWait {
    /// The stream whose work is pending.
    pub stream: usize,
    /// The operation of that stream that must complete first.
    pub op: u64,
}

impl Stream {
    /// Hand `reserved`'s memory to `assigned` and stamp it with the number
    /// of the next operation this stream submits (bind, then launch).
    /// Returns the stamp. See mem-pools' `bind` for what moves where.
    ///
    /// # Errors
    /// A stale handle or one of another stream ([`mem_pools::IoError`]);
    /// `IoError::SharedReserved` when `reserved` has another holder (a
    /// clone, a graph's pin; a `record_use` hold is not counted: the bind
    /// carries it over to `assigned`);
    /// `IoError::AssignedPinned` when a captured graph pins `assigned`'s
    /// memory.
    ///
    /// **Memory another stream's work uses is never freed by a bind.** If
    /// a stream recorded a use of `assigned`'s previous memory
    /// ([`Stream::record_use`]), this stream keeps that memory (it shows in
    /// [`Stream::held_bytes`]) until every such stream completes the work it
    /// had submitted at the bind; only then is it freed. Uses recorded on
    /// `reserved` stay with its memory, now `assigned`'s.
    ///
    /// **A refused bind changes nothing in the engine and never ends a
    /// hold.** The handles passed are dropped like any handle given away,
    /// but memory held for another stream's work by [`Stream::record_use`]
    /// stays held until that work completes (the engine's `try_bind` hands
    /// the hold's clone back). Without such a hold, a `reserved` that was
    /// its memory's last holder frees that memory, as dropping it would.
    pub fn bind(
        &self,
        reserved: ManagedMemoryHandle,
        assigned: ManagedMemoryHandle,
    ) -> Result<u64> {
        let stamp = self.cursor().saturating_add(1);
        let poison = self.device.config.poison;
        self.device.run(self.index, |st| {
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
                        st.hold_kept(kept, assigned_uses, &self.device.streams);
                    }
                    let uses = held_uses.unwrap_or_default();
                    Ok(finish_bind(st, poison, old, &assigned, uses, stamp))
                }
                Err(refused) => {
                    let error = refused.error;
                    if let Some(uses) = held_uses {
                        st.held.push(crate::stream_state::Held {
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

    /// Stamp `handle` for the next operation without moving memory
    /// (`bind` of a handle to itself).
    pub fn stamp(&self, handle: &ManagedMemoryHandle) -> Result<u64> {
        self.bind(handle.clone(), handle.clone())
    }

    /// The stamp of `handle`'s last `bind` (0 if never bound), read on the
    /// stream that reserved it.
    pub fn get_cursor(&self, handle: &ManagedMemoryHandle) -> Result<u64> {
        let owner = self.device.owner(handle)?;
        let state = self.device.streams[owner].lock();
        Ok(state.engine.get_cursor(handle.binding())?)
    }

    /// Whether this stream must wait before using `handle`: `Some` when the
    /// operation it was last bound for, on the stream that owns it, has been
    /// submitted and is not known complete. `None` on its own stream (work
    /// on one stream runs in order).
    pub fn must_wait(&self, handle: &ManagedMemoryHandle) -> Result<Option<StreamWait>> {
        let owner = self.device.owner(handle)?;
        let stamp = self.get_cursor(handle)?;
        let other = &self.device.streams[owner];
        let pending = stamp > 0 && stamp <= other.submitted() && other.completed() < stamp;
        Ok((owner != self.index && pending).then_some(StreamWait {
            stream: owner,
            op: stamp,
        }))
    }

    /// Order this stream's later work after `wait`'s stream's work (CUDA: an
    /// event recorded there, waited here). On in-order backends (host,
    /// simulated) work completes at the call, so there is nothing to order.
    pub fn wait_for(&self, wait: StreamWait) -> Result<()> {
        let Some(other) = self.device.streams.get(wait.stream) else {
            return Err(GpuMemError::unknown_stream(
                wait.stream,
                self.device.streams.len(),
            ));
        };
        // The budget adaptor does not forward `stream_wait`; the backend
        // below it is what owns the streams.
        Ok(self
            .device
            .resource
            .upstream()
            .stream_wait(self.id(), other.id)?)
    }

    /// Record that work on this stream uses `handle` (reserved on another
    /// stream of the device), like PyTorch's `record_stream`: its memory is
    /// not reused until this stream completes the work it has submitted
    /// when the handle's last holder is dropped. No-op on its own stream.
    pub fn record_use(&self, handle: &ManagedMemoryHandle) -> Result<()> {
        let owner = self.device.owner(handle)?;
        if owner == self.index {
            return Ok(());
        }
        let mut state = self.device.streams[owner].lock();
        state.engine.get_cursor(handle.binding())?;
        state.hold(handle, Some(self.index));
        Ok(())
    }
}

/// After a bind succeeded: poison the memory it freed (if configured) and
/// carry `record_use` holds over to `assigned`. Returns the stamp.
fn finish_bind(
    st: &mut crate::stream_state::StreamState,
    poison: Option<u8>,
    old: Option<mem_storage::StorageHandle>,
    assigned: &ManagedMemoryHandle,
    uses: Vec<crate::stream_state::Use>,
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
