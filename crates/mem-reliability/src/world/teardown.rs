//! Teardown: drop everything the user holds and prove nothing is left.

use crate::error::Violation;
use crate::world::model::CapturePhase;
use crate::world::{RunSummary, World};

/// The teardown's step label.
pub const TEARDOWN: usize = usize::MAX;

impl World {
    /// Drop everything the user holds, then prove nothing is left: no live
    /// slice in any manager, no page after an explicit cleanup (bar
    /// quarantined ones), empty ledgers, and — once the managers are gone —
    /// no device allocation outstanding. On an arena world the explicit
    /// cleanups alone must leave the virtual memory idle (no range, no
    /// chunk, no mapping: the engine gave everything back itself, not the
    /// storages' drops), and nothing may be outstanding through it after.
    /// With lazy streams every stream is synchronized first, and no unmap
    /// may have hit an incomplete use.
    pub fn finish(mut self) -> Result<RunSummary, Violation> {
        self.check(TEARDOWN)?;
        self.device.disarm();
        self.model.entries.clear();
        self.model.reservations.clear();
        self.model.blocks.clear();
        for m in [&self.parent, &self.overlay] {
            m.reap_pending_deallocations()
                .map_err(|e| Violation::UnexpectedError {
                    step: TEARDOWN,
                    op: "reap".into(),
                    error: e.to_string(),
                })?;
        }
        // Every stream's work finishes (lazy streams): every idle chunk is
        // ready, and the cleanups below must give everything back.
        self.synchronize_all();
        for s in 0..self.managers.len() {
            let capture = self.model.streams[s].capture;
            let manager = &mut self.managers[s];
            drop(manager.capture_end());
            if capture != CapturePhase::Off {
                self.model.streams[s].capture = CapturePhase::Off;
            }
            manager.cleanup(true);
            let usage = manager.memory_usage();
            if usage.number_allocs != 0 {
                return Err(Violation::mismatch(
                    TEARDOWN,
                    format!("stream {s} live slices after dropping every handle"),
                    0,
                    usage.number_allocs,
                ));
            }
            if !self.model.streams[s].quarantined && usage.bytes_reserved != 0 {
                return Err(Violation::mismatch(
                    TEARDOWN,
                    format!("stream {s} reserved bytes after explicit cleanup"),
                    0,
                    usage.bytes_reserved,
                ));
            }
        }
        self.reclamation(TEARDOWN)?;
        let quarantined = self.model.streams.iter().any(|m| m.quarantined);
        if self.arenas && !quarantined {
            let vs = self.device.vm_stats();
            for (what, found) in [
                ("VM ranges after explicit cleanup", vs.live_ranges()),
                ("VM chunks after explicit cleanup", vs.live_chunks()),
                ("VM mappings after explicit cleanup", vs.live_mappings()),
                (
                    "VM physical bytes after explicit cleanup",
                    vs.physical_bytes,
                ),
            ] {
                if found != 0 {
                    return Err(Violation::mismatch(TEARDOWN, what, 0, found));
                }
            }
        }
        let local = self.parent.allocated_bytes();
        if local != 0 {
            return Err(Violation::mismatch(
                TEARDOWN,
                "local ledger after teardown",
                0,
                local,
            ));
        }
        let summary = self.summary;
        let World {
            device,
            managers,
            parent,
            overlay,
            ..
        } = self;
        drop(managers);
        drop((parent, overlay));
        let report = device.tracking().leak_report();
        if !report.is_empty() {
            return Err(Violation::Leak {
                allocations: report.allocations.len(),
                bytes: report.bytes,
            });
        }
        if let Some(vm) = device.vm_tracking() {
            let report = vm.virtual_leak_report();
            if !report.is_empty() {
                return Err(Violation::Leak {
                    allocations: report.ranges.len() + report.chunks.len(),
                    bytes: report.chunks.iter().map(|c| c.bytes).sum(),
                });
            }
        }
        let global = device.global().charged();
        if global != 0 {
            return Err(Violation::mismatch(
                TEARDOWN,
                "global ledger after teardown",
                0,
                global,
            ));
        }
        Ok(summary)
    }
}
