//! `Stream`: one stream of a device, with its own pools and operation counter.
//!
//! A runtime submits work to a stream in order; gpumem does not launch
//! anything, it only needs to know *how far* each stream got. Each stream
//! counts operations: [`Stream::submit`] adds one (call it per launch-like
//! operation), and [`Stream::complete_through`] / [`Stream::synchronize`]
//! say which have finished. That is all the cross-stream rules need:
//!
//! - **The cursor rule (seed 000).** [`Stream::bind`] stamps an allocation
//!   with the number of the operation it is bound for — the next one
//!   submitted. Another stream asks [`Stream::must_wait`]: if that operation
//!   was submitted and has not completed, it must wait ([`Stream::wait_for`])
//!   before touching the memory.
//! - **`record_use` (PyTorch's `record_stream`).** A buffer reserved on A and
//!   used by work on B: [`Stream::record_use`] on B makes A hold the memory
//!   after its last handle drops, until B completes every operation it had
//!   submitted when the free was observed. So A never hands the memory to a
//!   new owner while B's kernels may still read it.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use mem_pools::{IoError, ManagedMemoryHandle, MemoryAllocationMode, MemoryReport};
use mem_storage::{ComputeStorage, DeviceResource, StorageHandle, StreamId};

use crate::backend::StreamMemory;
use crate::device::{Device, DeviceShared};
use crate::error::{GpuMemError, Result};
use crate::stats::MemoryStats;
use crate::stream_state::StreamShared;

/// That a stream must wait for operation `op` of stream `stream` before
/// using an allocation (see [`Stream::must_wait`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamWait {
    /// The stream whose work is pending.
    pub stream: usize,
    /// The operation of that stream that must complete first.
    pub op: u64,
}

/// One stream of a [`Device`]. Cheap to clone; `Send + Sync`.
#[derive(Debug, Clone)]
pub struct Stream {
    pub(crate) device: Arc<DeviceShared>,
    pub(crate) index: usize,
}

impl Stream {
    pub(crate) fn new(device: Arc<DeviceShared>, index: usize) -> Self {
        Self { device, index }
    }

    pub(crate) fn shared(&self) -> &StreamShared {
        &self.device.streams[self.index]
    }

    /// This stream's index on its device (0 is the default stream).
    pub fn index(&self) -> usize {
        self.index
    }

    /// This stream's id in the device's resource.
    pub fn id(&self) -> StreamId {
        self.shared().id
    }

    /// The device this stream belongs to.
    pub fn device(&self) -> Device {
        Device {
            shared: self.device.clone(),
        }
    }

    /// Record one launch-like operation; returns its number (1, 2, ...).
    pub fn submit(&self) -> u64 {
        self.shared().submitted.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Operations submitted so far (the stream's operation counter).
    pub fn cursor(&self) -> u64 {
        self.shared().submitted()
    }

    /// Operations known to be complete.
    pub fn completed(&self) -> u64 {
        self.shared().completed()
    }

    /// Declare that operations up to `op` have completed (a runtime calls
    /// this when its event for `op` fires). Never moves backwards.
    ///
    /// # Errors
    /// [`GpuMemError::CompletionAhead`] for an operation not yet submitted.
    pub fn complete_through(&self, op: u64) -> Result<()> {
        let submitted = self.cursor();
        if op > submitted {
            return Err(GpuMemError::CompletionAhead {
                stream: self.index,
                op,
                submitted,
            });
        }
        self.shared().completed.fetch_max(op, Ordering::AcqRel);
        Ok(())
    }

    /// Wait for all of this stream's work, then mark every operation complete.
    pub fn synchronize(&self) -> Result<()> {
        self.device
            .run(self.index, |st| st.engine.storage().synchronize())?;
        self.shared().mark_all_complete();
        Ok(())
    }

    /// Hand `reserved`'s memory to `assigned` and stamp it with the number
    /// of the next operation this stream submits (bind, then launch).
    /// Returns the stamp. See mem-pools' `bind` for what moves where.
    ///
    /// # Errors
    /// A stale handle or one of another stream ([`mem_pools::IoError`]).
    pub fn bind(
        &self,
        reserved: ManagedMemoryHandle,
        assigned: ManagedMemoryHandle,
    ) -> Result<u64> {
        let stamp = self.cursor() + 1;
        let poison = self.device.config.poison;
        self.device.run(self.index, |st| {
            if reserved.binding() == assigned.binding() {
                st.engine.bind(reserved, assigned, stamp)?;
                return Ok(stamp);
            }
            st.engine.get_cursor(reserved.binding())?;
            st.engine.get_cursor(assigned.binding())?;
            // Only poisoning needs `assigned`'s old view (taking it maps a
            // lazy page).
            let old = match poison {
                Some(_) => Some(st.engine.get_storage(assigned.binding())?),
                None => None,
            };
            let (reserved, uses) = match st.take_held(&reserved) {
                None => (reserved, Vec::new()),
                Some(held) => {
                    // Our hold is a holder too, and bind needs the reserved
                    // handle to be the only one: pass the hold's clone.
                    drop(reserved);
                    let priming = st.engine.capture_state().priming;
                    if !held.handle.can_mut() && !priming {
                        st.held.push(held);
                        return Err(IoError::SharedReserved { holders: 2 }.into());
                    }
                    (held.handle, held.uses)
                }
            };
            st.engine.bind(reserved, assigned.clone(), stamp)?;
            if let (Some(byte), Some(old)) = (poison, old)
                && let Err(err) = st.engine.storage().fill(&old, byte)
            {
                // The page may have gone back with the freed memory.
                tracing::debug!(%err, "the memory bind freed was not poisoned");
            }
            st.transfer_uses(&assigned, uses);
            Ok(stamp)
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
            return Err(GpuMemError::UnknownStream {
                index: wait.stream,
                streams: self.device.streams.len(),
            });
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

    /// Bytes this stream holds for other streams' recorded use (and, when
    /// poisoning, for observing frees).
    pub fn held_bytes(&self) -> u64 {
        self.shared().lock().held_bytes()
    }

    /// The storage view of `handle`'s memory (page id, offset, size): what a
    /// graph recorder or a copy names. It follows relocation only while the
    /// allocation is not moved; take a fresh one after a relocation.
    pub fn view(&self, handle: &ManagedMemoryHandle) -> Result<StorageHandle> {
        let owner = self.device.owner(handle)?;
        Ok(self
            .device
            .run(owner, |st| st.engine.get_storage(handle.binding()))?)
    }

    /// Write `data` at the start of `handle`'s memory (on its own stream).
    pub fn write(&self, handle: &ManagedMemoryHandle, data: &[u8]) -> Result<()> {
        let owner = self.device.owner(handle)?;
        self.device
            .run(owner, |st| st.engine.write(handle.binding(), data))?;
        Ok(())
    }

    /// Read the first `out.len()` bytes of `handle`'s memory.
    pub fn read(&self, handle: &ManagedMemoryHandle, out: &mut [u8]) -> Result<()> {
        let owner = self.device.owner(handle)?;
        self.device
            .run(owner, |st| st.engine.read(handle.binding(), out))?;
        Ok(())
    }

    /// Open (`Persistent`) or close (`Auto`) a persistent-allocation window.
    pub fn mode(&self, mode: MemoryAllocationMode) {
        self.device.run(self.index, |st| st.engine.mode(mode));
    }

    /// Give back every page this stream holds that nothing uses (frees
    /// processed, held allocations released first). Gives nothing back while
    /// any stream records a graph.
    pub fn cleanup(&self) {
        let device = &self.device;
        device.run(self.index, |st| device.cleanup(st));
    }

    /// Run `f` on this stream's pool engine: everything seed 000 offers
    /// (`get_resource`, `release_raw`, `install_pools`, ...), with the
    /// stream's statistics kept current.
    pub fn with_memory<T>(&self, f: impl FnOnce(&mut StreamMemory) -> T) -> T {
        self.device.run(self.index, |st| f(&mut st.engine))
    }

    /// This stream's statistics.
    pub fn stats(&self) -> MemoryStats {
        self.shared().lock().stats
    }

    /// Lower this stream's peaks to their current levels.
    pub fn reset_peak_stats(&self) {
        self.shared().lock().stats.reset_peaks();
    }

    /// The per-pool report of this stream's engine.
    pub fn memory_report(&self) -> MemoryReport {
        self.shared().lock().engine.memory_report()
    }
}
