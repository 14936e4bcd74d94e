//! What a stream holds on other streams' behalf.
//!
//! **Held allocations.** A stream keeps a clone of a handle when it must not
//! be reused yet: another stream recorded a use of it (`record_use`, like
//! PyTorch's `record_stream`), or poisoning is on and its free must be
//! observed. A held allocation is *released* once the user's holders are
//! gone (the clone is the only one left) and every recorded stream's
//! completed counter has passed the value that stream's submitted counter
//! had when the release was first observed — taking it then, rather than at
//! the moment of `record_use`, also covers work submitted after the record
//! and before the free, which is the guarantee `record_stream` gives.
//! Checking costs O(held) per engine call: nothing in normal mode, every
//! live allocation when poisoning.

use mem_pools::ManagedMemoryHandle;
use mem_storage::ComputeStorage;

use super::stream_state::{Held, StreamShared, StreamState, Use};

impl StreamState {
    /// Hold `handle` for a use by `stream` (merged with an existing hold).
    pub(crate) fn hold(&mut self, handle: &ManagedMemoryHandle, stream: Option<usize>) {
        let binding = handle.binding();
        let index = match self.held.iter().position(|h| h.handle.binding() == binding) {
            Some(i) => i,
            None => {
                self.held.push(Held {
                    handle: handle.clone(),
                    uses: Vec::new(),
                });
                self.held.len() - 1
            }
        };
        let entry = &mut self.held[index];
        if let Some(stream) = stream {
            match entry.uses.iter_mut().find(|u| u.stream == stream) {
                // A new use after the free was observed cannot happen (the
                // user still held a handle to record it), so restart the wait.
                Some(u) => u.until = None,
                None => entry.uses.push(Use {
                    stream,
                    until: None,
                }),
            }
        }
    }

    /// Hold a handle just reserved (so held nowhere yet): O(1), no search.
    pub(crate) fn hold_fresh(&mut self, handle: &ManagedMemoryHandle) {
        self.held.push(Held {
            handle: handle.clone(),
            uses: Vec::new(),
        });
    }

    /// Take out the hold on `handle`, if any (its clone with it).
    pub(crate) fn take_held(&mut self, handle: &ManagedMemoryHandle) -> Option<Held> {
        let binding = handle.binding();
        let index = self
            .held
            .iter()
            .position(|h| h.handle.binding() == binding)?;
        Some(self.held.swap_remove(index))
    }

    /// Take the recorded uses of `handle`'s current memory out of its hold,
    /// for a `bind` about to take that memory away (the uses stay with the
    /// memory, see [`Self::hold_kept`]). The hold itself stays only when
    /// `keep_hold` (poisoning observes every free).
    pub(crate) fn take_uses(&mut self, handle: &ManagedMemoryHandle, keep_hold: bool) -> Vec<Use> {
        let binding = handle.binding();
        let Some(index) = self.held.iter().position(|h| h.handle.binding() == binding) else {
            return Vec::new();
        };
        if keep_hold {
            return std::mem::take(&mut self.held[index].uses);
        }
        self.held.swap_remove(index).uses
    }

    /// Give `handle` back the uses [`Self::take_uses`] took (a refused bind).
    pub(crate) fn restore_uses(&mut self, handle: &ManagedMemoryHandle, uses: Vec<Use>) {
        for u in uses {
            self.hold(handle, Some(u.stream));
        }
    }

    /// Hold memory a `bind` took from a handle while other streams' recorded
    /// work may still use it: `kept` is its only holder, so the hold ends
    /// (and the memory is freed) once every recorded stream has completed
    /// what it had submitted when the bind happened (the bind is the free).
    pub(crate) fn hold_kept(
        &mut self,
        kept: ManagedMemoryHandle,
        uses: Vec<Use>,
        streams: &[StreamShared],
    ) {
        let uses = uses
            .into_iter()
            .map(|u| Use {
                stream: u.stream,
                until: streams.get(u.stream).map(StreamShared::submitted),
            })
            .collect();
        self.held.push(Held { handle: kept, uses });
    }

    /// Recorded uses of memory that `bind` handed to `assigned` now guard
    /// `assigned` (the memory is the same; its users' work still runs).
    pub(crate) fn transfer_uses(&mut self, assigned: &ManagedMemoryHandle, uses: Vec<Use>) {
        for u in uses {
            self.hold(assigned, Some(u.stream));
        }
    }

    /// Release every held allocation whose users are gone and whose recorded
    /// streams have completed their work; poison it first when asked.
    /// Nothing held (the common case) costs one comparison.
    #[inline]
    pub(crate) fn settle(&mut self, streams: &[StreamShared], poison: Option<u8>) {
        if !self.held.is_empty() {
            self.settle_held(streams, poison);
        }
    }

    fn settle_held(&mut self, streams: &[StreamShared], poison: Option<u8>) {
        let mut i = 0;
        while i < self.held.len() {
            let entry = &mut self.held[i];
            let mut ready = entry.handle.can_mut();
            if ready {
                for u in &mut entry.uses {
                    let Some(other) = streams.get(u.stream) else {
                        continue;
                    };
                    let until = *u.until.get_or_insert_with(|| other.submitted());
                    ready &= other.completed() >= until;
                }
            }
            if !ready {
                i += 1;
                continue;
            }
            let held = self.held.swap_remove(i);
            if let Some(byte) = poison {
                self.poison(&held.handle, byte);
            }
        }
    }

    /// Fill an allocation about to be freed with `byte`, so its next user
    /// (or a stale reader) sees the pattern instead of the old contents.
    fn poison(&mut self, handle: &ManagedMemoryHandle, byte: u8) {
        // A handle whose memory was handed to another by `bind` no longer
        // resolves: that memory is live elsewhere and must not be filled.
        let Ok(view) = self.engine.get_storage(handle.binding()) else {
            return;
        };
        if let Err(err) = self.engine.storage().fill(&view, byte) {
            tracing::warn!(%err, "poisoning a freed allocation failed; it is freed unpoisoned");
        }
    }

    /// Mark in `wait` (one flag a stream) every stream whose unfinished
    /// recorded work holds an allocation its user has dropped: the streams
    /// the out-of-memory retry waits for so the hold can end.
    pub(crate) fn mark_holding_streams(&self, streams: &[StreamShared], wait: &mut [bool]) {
        let dropped = self.held.iter().filter(|h| h.handle.can_mut());
        for u in dropped.flat_map(|h| &h.uses) {
            let (Some(other), Some(flag)) = (streams.get(u.stream), wait.get_mut(u.stream)) else {
                continue;
            };
            // A use whose end is not fixed yet ends at the stream's cursor
            // now (what `settle_held` would fix it at).
            let until = u.until.unwrap_or_else(|| other.submitted());
            *flag |= other.completed() < until;
        }
    }

    /// Bytes their users have dropped that are still held: waiting for
    /// other streams' recorded work, or for the next call to poison them.
    /// (A hold whose user still has the handle is that user's live memory.)
    pub(crate) fn held_bytes(&self) -> u64 {
        self.held
            .iter()
            .filter(|h| h.handle.can_mut())
            .map(|h| h.handle.size())
            .sum()
    }
}
