//! Copy and commit: the second and third steps of a relocation.
//!
//! `copy_relocation` waits for the device, enqueues every copy, and waits
//! for the copies even after an enqueue failed; only a completed copy yields
//! a [`Landed`]. A failed wait quarantines sources and targets (completion
//! unknown: never reuse). `commit_relocation` rewrites each moved
//! allocation's slot to its target, so every handle and binding follows,
//! then frees the emptied outdated pages and flushes the storage.

use mem_storage::{ComputeStorage, StorageHandle, StorageUtilization};

use crate::engine::state::MemoryManagement;
use crate::error::{IoError, RelocationCopyError};
use crate::relocation::{CopyQueue, Landed, RelocationOutcome, RelocationPlan};

impl<S: ComputeStorage> MemoryManagement<S> {
    fn view(&self, slice: u32) -> Option<StorageHandle> {
        let n = &self.core.tables.slices[slice];
        let whole = self.core.tables.pages[n.page].storage?;
        Some(StorageHandle {
            id: whole.id,
            utilization: StorageUtilization {
                offset: n.offset,
                size: n.requested,
            },
        })
    }

    /// `copy_relocation`'s body: wait for the device, enqueue every copy,
    /// wait for the copies (even after an enqueue failed).
    ///
    /// [`RelocationCopyError::Copy`]: nothing moved, targets freed. Inside a
    /// capture window it is refused this way before any device call (the
    /// storage's stream is the capturing one), with `enqueued: 0` and a
    /// [`mem_storage::StorageError::Unsupported`] source.
    /// [`RelocationCopyError::Wait`]: completion unknown — sources and
    /// targets are quarantined (leaked, logged with `tracing::error`).
    pub(crate) fn copy_moves(
        &mut self,
        plan: RelocationPlan,
        queue: &mut dyn CopyQueue<S>,
    ) -> Result<Landed, RelocationCopyError> {
        self.drain();
        let total = plan.moves.len();
        if plan.manager != self.id {
            return Err(RelocationCopyError::Foreign {
                expected: self.id,
                found: plan.manager,
            });
        }
        if self.capture.is_some() {
            // The storage's stream is the one being captured: a synchronize
            // there invalidates the capture, and a commit inside the window
            // moves nothing anyway. Dropping the plan frees its targets.
            drop(plan);
            self.drain();
            return Err(RelocationCopyError::Copy {
                enqueued: 0,
                moves: total,
                source: mem_storage::StorageError::Unsupported {
                    operation: "relocation copy inside a graph capture window (copy after capture_end)",
                    backend: "pool engine",
                },
            });
        }
        let mut copies = Vec::with_capacity(total);
        for m in &plan.moves {
            // A freed source needs no copy; a never-mapped one has no bytes.
            if self.core.tables.slots.resolve(m.source) != Some(m.source_slice) {
                continue;
            }
            let Some(src) = self.view(m.source_slice) else {
                continue;
            };
            let Ok(target) = self.resolve(&m.target.binding()) else {
                continue;
            };
            let page = self.core.tables.slices[target].page;
            let (p, t) = self.core.pool_parts(self.core.tables.pages[page].pool);
            if let Err(err) = p.materialize(t, &mut self.storage, page, true) {
                let source = match err {
                    IoError::Storage(e) => e,
                    other => mem_storage::StorageError::Unsupported {
                        operation: "materialize target",
                        backend: static_name(&other),
                    },
                };
                return Err(RelocationCopyError::Copy {
                    enqueued: 0,
                    moves: total,
                    source,
                });
            }
            if let Some(dst) = self.view(target) {
                copies.push((src, dst));
            }
        }
        if let Err(source) = queue.wait_device(&mut self.storage) {
            return Err(RelocationCopyError::Copy {
                enqueued: 0,
                moves: total,
                source,
            });
        }
        let mut failed = None;
        let mut enqueued = 0;
        for (src, dst) in &copies {
            if let Err(err) = queue.copy(&mut self.storage, src, dst) {
                failed = Some(err);
                break;
            }
            enqueued += 1;
        }
        if let Err(source) = queue.wait_copies(&mut self.storage) {
            let leaked_bytes = self.quarantine(&plan);
            tracing::error!(%source, leaked_bytes, moves = total, "relocation wait failed: sources and targets leaked");
            return Err(RelocationCopyError::Wait {
                moves: total,
                leaked_bytes,
                source,
            });
        }
        match failed {
            Some(source) => Err(RelocationCopyError::Copy {
                enqueued,
                moves: total,
                source,
            }),
            None => Ok(Landed { plan }),
        }
    }

    /// Mark every source and target of a plan never-reusable.
    fn quarantine(&mut self, plan: &RelocationPlan) -> u64 {
        let mut bytes = 0;
        for m in &plan.moves {
            let target = self.resolve(&m.target.binding()).ok();
            let source = (self.core.tables.slots.resolve(m.source) == Some(m.source_slice))
                .then_some(m.source_slice);
            for slice in [target, source].into_iter().flatten() {
                let n = &mut self.core.tables.slices[slice];
                if !n.quarantined {
                    n.quarantined = true;
                    bytes += n.size;
                    let page = n.page;
                    self.core.tables.pages[page].quarantined += 1;
                }
            }
        }
        self.core.tables.stats.leaked_bytes += bytes;
        bytes
    }

    /// `commit_relocation`'s body: hand every landed allocation to its
    /// target, then free emptied outdated pages (and the current pages a
    /// compaction plan emptied) and flush. A page that gained a raw address
    /// or a pin since planning does not move (all or nothing); an allocation
    /// freed meanwhile is simply not moved. Moves nothing during a capture.
    pub(crate) fn commit_moves(&mut self, landed: Landed) -> Result<RelocationOutcome, IoError> {
        let plan = landed.plan;
        if plan.manager != self.id {
            return Err(IoError::ForeignRelocation {
                expected: self.id,
                found: plan.manager,
            });
        }
        self.drain();
        let mut outcome = RelocationOutcome::default();
        if self.capture.is_some() {
            return Ok(outcome);
        }
        let (frees, freed_bytes) = (
            self.core.tables.stats.segment_count.freed,
            self.core.tables.stats.reserved_bytes.freed,
        );
        for m in &plan.moves {
            if self.core.tables.pages.get(m.page).is_none() || !self.page_movable(m.page) {
                continue;
            }
            if self.core.tables.slots.resolve(m.source) != Some(m.source_slice) {
                continue;
            }
            let Ok(target) = self.resolve(&m.target.binding()) else {
                continue;
            };
            let target_key = m.target.key();
            self.core.tables.slots.release(target_key);
            self.core.tables.slots.repoint(m.source, target);
            let cursor = self.core.tables.cursor(m.source_slice);
            self.core.tables.slices[target].owner = m.source.slot;
            self.core.tables.set_cursor(target, cursor);
            self.core
                .free_slice(&mut self.storage, m.source_slice, true);
            outcome.moved_slices += 1;
            outcome.moved_bytes += m.bytes;
        }
        for &(page, uid) in &plan.compacted {
            let emptied =
                self.core.tables.pages.get(page).is_some_and(|p| {
                    p.uid == uid && !p.outdated && p.live == 0 && p.quarantined == 0
                });
            if emptied {
                self.core.release_page(&mut self.storage, page);
            }
        }
        drop(plan);
        self.drain();
        self.flush();
        outcome.pages_freed = (self.core.tables.stats.segment_count.freed - frees) as usize;
        outcome.bytes_freed = self.core.tables.stats.reserved_bytes.freed - freed_bytes;
        self.epoch += 1;
        Ok(outcome)
    }
}

fn static_name(err: &IoError) -> &'static str {
    match err {
        IoError::CaptureWouldAllocate { .. } => "capture window",
        IoError::IndexExhausted { .. } => "page index",
        _ => "pool engine",
    }
}
