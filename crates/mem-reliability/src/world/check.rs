//! The invariant pass run after every step of a program.
//!
//! With faults disarmed, after draining every drop queue and flushing every
//! storage (retrying frees an injected fault refused):
//! - every allocation with known contents reads back its head and tail, and
//!   a raw-out allocation is still at the address handed out (it never moves);
//! - per stream: live slices and in-use bytes equal the model; in-use ≤
//!   reserved; the statistics, the storage and the usage agree on reserved
//!   bytes; the leaked-bytes statistic equals what failed waits reported;
//!   the capture state and the effective mode equal the model's;
//! - device: what the host holds equals the pools' pages plus the budget
//!   allocations plus frees still pending; the global ledger equals that
//!   plus reservations, within its limit; the local ledger (shared by parent
//!   and overlay) equals reservations plus allocations plus pending frees;
//! - arena worlds: the storages' bytes are their pages plus the chunks the
//!   virtual memory holds, which the global ledger charges too; the arenas'
//!   reserved bytes (every stream) equal the bytes the virtual memory maps,
//!   and no chunk exists unmapped; mapped bytes are exactly the granules
//!   under live arena slices plus the idle chunks the arenas cache; every
//!   granule of a live arena allocation is readable; the arenas' ranges
//!   are the ranges the virtual memory holds.

use mem_pools::MemoryAllocationMode;
use mem_storage::ComputeStorage;

use crate::error::Violation;
use crate::world::World;
use crate::world::model::CapturePhase;
use crate::world::read::read_at;

impl World {
    pub(crate) fn check_all(&mut self, step: usize) -> Result<(), Violation> {
        self.device.disarm();
        self.report_progress();
        for s in 0..self.managers.len() {
            self.drain(s);
            if let Err(e) = self.managers[s].storage().flush() {
                return Err(Violation::UnexpectedError {
                    step,
                    op: format!("flush of stream {s}"),
                    error: e.to_string(),
                });
            }
        }
        self.check_contents(step)?;
        for s in 0..self.managers.len() {
            self.check_stream(step, s)?;
        }
        self.check_ledgers(step)?;
        if self.arenas {
            self.check_arenas(step)?;
        }
        self.reclamation(step)
    }

    fn check_contents(&mut self, step: usize) -> Result<(), Violation> {
        for e in self.model.entries.iter().filter(|e| e.alive()) {
            let manager = &mut self.managers[e.stream];
            let unreachable = |error: String| Violation::Unreachable {
                step,
                entry: e.id,
                error,
            };
            if let Some(c) = &e.contents {
                let mut head = vec![0u8; c.head.len()];
                manager
                    .read(e.binding, &mut head)
                    .map_err(|err| unreachable(err.to_string()))?;
                let mut tail = vec![0u8; c.tail.len()];
                let tail_at = e.size - c.tail.len() as u64;
                read_at(manager, e.binding, tail_at, &mut tail)
                    .map_err(|err| unreachable(err.to_string()))?;
                for (at, expected, found) in [(0, &c.head, &head), (tail_at, &c.tail, &tail)] {
                    if let Some(i) = (0..expected.len()).find(|&i| expected[i] != found[i]) {
                        return Err(Violation::ContentsLost {
                            step,
                            entry: e.id,
                            offset: at + i as u64,
                            expected: expected[i],
                            found: found[i],
                        });
                    }
                }
            }
            for (what, address) in [("raw-out", e.raw), ("graph-pinned", e.pinned_at)] {
                let Some(address) = address else { continue };
                let view = manager
                    .get_storage(e.binding)
                    .map_err(|err| unreachable(err.to_string()))?;
                let now = manager
                    .storage()
                    .get(&view)
                    .map_err(|err| unreachable(err.to_string()))?;
                if now.ptr.0 != address {
                    return Err(Violation::mismatch(
                        step,
                        format!("address of {what} allocation #{}", e.id),
                        address,
                        now.ptr.0,
                    ));
                }
            }
        }
        for &(stream, binding) in &self.model.stale {
            match self.managers[stream].get_storage(binding) {
                Err(mem_pools::IoError::StaleBinding { .. }) => {}
                other => {
                    return Err(Violation::StaleResolved {
                        step,
                        stream,
                        found: format!("{other:?}"),
                    });
                }
            }
        }
        for (i, b) in self.model.blocks.iter().enumerate() {
            let mut out = vec![0u8; b.written.len()];
            if let Err(err) = b.block.read(&mut out) {
                return Err(Violation::Unreachable {
                    step,
                    entry: i as u64,
                    error: format!("budget block: {err}"),
                });
            }
            if let Some(at) = (0..out.len()).find(|&k| out[k] != b.written[k]) {
                return Err(Violation::ContentsLost {
                    step,
                    entry: i as u64,
                    offset: at as u64,
                    expected: b.written[at],
                    found: out[at],
                });
            }
        }
        Ok(())
    }

    fn check_stream(&mut self, step: usize, s: usize) -> Result<(), Violation> {
        let (count, bytes) = self.model.usage(s);
        let model = self.model.streams[s];
        let leaked = self.leaked[s];
        let manager = &mut self.managers[s];
        let usage = manager.memory_usage();
        let stats = manager.stats();
        let held = manager.storage().bytes_allocated();
        let state = manager.capture_state();
        let equal = [
            ("number_allocs", count, usage.number_allocs),
            ("bytes_in_use", bytes, usage.bytes_in_use),
            (
                "stats reserved = usage reserved",
                usage.bytes_reserved,
                stats.reserved_bytes.current,
            ),
            (
                // A lazy stream's unmapped pages are reserved but not held;
                // while an arena world's stream captures, chunks whose
                // release was refused are held but no longer reserved
                // (their release is retried once the capture ends).
                "storage bytes = usage reserved",
                usage.bytes_reserved,
                match (
                    model.lazy,
                    self.arenas && model.capture != CapturePhase::Off,
                ) {
                    (true, true) => usage.bytes_reserved,
                    (true, false) => held.max(usage.bytes_reserved),
                    (false, true) => held.min(usage.bytes_reserved),
                    (false, false) => held,
                },
            ),
            (
                "stats requested = in use",
                bytes,
                stats.requested_bytes.current,
            ),
            ("leaked_bytes", leaked, stats.leaked_bytes),
            (
                "capture active",
                u64::from(model.capture != CapturePhase::Off),
                u64::from(state.active),
            ),
            (
                "capture priming",
                u64::from(model.capture == CapturePhase::Priming),
                u64::from(state.priming),
            ),
            (
                "effective mode persistent",
                u64::from(model.persistent()),
                u64::from(manager.effective_mode() == MemoryAllocationMode::Persistent),
            ),
        ];
        for (what, expected, found) in equal {
            if expected != found {
                return Err(Violation::mismatch(
                    step,
                    format!("stream {s} {what}"),
                    expected,
                    found,
                ));
            }
        }
        let capturing_arenas = self.arenas && model.capture != CapturePhase::Off;
        if model.lazy && !capturing_arenas && held > usage.bytes_reserved {
            return Err(Violation::mismatch(
                step,
                format!("stream {s} storage bytes ≤ reserved (lazy)"),
                usage.bytes_reserved,
                held,
            ));
        }
        if usage.bytes_in_use > usage.bytes_reserved {
            return Err(Violation::mismatch(
                step,
                format!("stream {s} in use ≤ reserved"),
                usage.bytes_reserved,
                usage.bytes_in_use,
            ));
        }
        Ok(())
    }

    fn check_ledgers(&mut self, step: usize) -> Result<(), Violation> {
        let pages: u64 = self
            .managers
            .iter_mut()
            .map(|m| m.storage().bytes_allocated())
            .sum();
        let runtimes =
            [&self.parent, &self.overlay].map(|m| m.runtime().map_or(0, |r| r.pending_bytes()));
        let pending: u64 = runtimes.iter().sum();
        let blocks: u64 = self.model.blocks.iter().map(|b| b.block.bytes()).sum();
        let reservations = self.model.reserved_bytes();
        let outstanding = self.device.tracking().outstanding_bytes();
        // Chunks of the virtual memory (zero without): the storages count
        // them in their bytes, the global ledger charges them.
        let chunks = self.device.vm_stats().physical_bytes;
        let global = self.device.global().charged();
        let local = self.parent.allocated_bytes();
        let equal = [
            (
                "host outstanding + chunks = pages + chunks + blocks + pending frees",
                pages + blocks + pending,
                outstanding + chunks,
            ),
            (
                "global ledger = host outstanding + chunks + reservations",
                outstanding + chunks + reservations,
                global,
            ),
            (
                "local ledger = reservations + blocks + pending frees",
                reservations + blocks + pending,
                local,
            ),
            (
                "overlay ledger = parent ledger",
                local,
                self.overlay.allocated_bytes(),
            ),
        ];
        for (what, expected, found) in equal {
            if expected != found {
                return Err(Violation::mismatch(step, what, expected, found));
            }
        }
        for (what, limit, found) in [
            ("global ≤ limit", self.limits.global, global),
            ("local ≤ limit", self.limits.local, local),
        ] {
            if found > limit {
                return Err(Violation::mismatch(step, what, limit, found));
            }
        }
        Ok(())
    }
}
