//! The text form of a [`ReplayReport`]: what `gpumem replay` prints
//! without `--json`.

use std::fmt;

use super::ReplayReport;
use crate::attribution::LiveAt;
use crate::trace::{BEFORE_RECORDING, PreExisting};
use gpumem::storage::units::format_bytes;

fn ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "n/a (nothing live)".to_string(), |r| format!("{r:.3}"))
}

impl fmt::Display for ReplayReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "replay of {} on backend {}", self.source, self.backend)?;
        writeln!(
            f,
            "  ops                {:>14}   ({} allocs, {} frees)",
            self.ops, self.allocs, self.frees
        )?;
        writeln!(
            f,
            "  peak live          {:>14}",
            format_bytes(self.peak_live_bytes)
        )?;
        writeln!(
            f,
            "  peak reserved      {:>14}",
            format_bytes(self.peak_reserved_bytes)
        )?;
        writeln!(
            f,
            "  final live         {:>14}",
            format_bytes(self.final_live_bytes)
        )?;
        writeln!(
            f,
            "  final reserved     {:>14}",
            format_bytes(self.final_reserved_bytes)
        )?;
        writeln!(
            f,
            "  fragmentation peak {:>14}   (reserved ÷ live; 1.000 is perfect)",
            ratio(self.fragmentation.peak)
        )?;
        writeln!(
            f,
            "  fragmentation end  {:>14}",
            ratio(self.fragmentation.end)
        )?;
        writeln!(f, "  storage allocs     {:>14}", self.storage_allocs)?;
        writeln!(
            f,
            "  replay time        {:>11.3} ms   ({:.1} ns/op)",
            self.wall_ns as f64 / 1e6,
            self.ns_per_op
        )?;
        if let Some(d) = &self.driver {
            writeln!(
                f,
                "  driver (modeled)   {:>11.3} ms   ({:.1} ns/op; host + driver = {:.1} ns/op)",
                d.driver_ns as f64 / 1e6,
                d.driver_ns_per_op,
                d.modeled_ns_per_op
            )?;
            if let Some(h) = &d.halves {
                writeln!(
                    f,
                    "  driver by half     {:>11.3} ms   then {:.3} ms ({} calls, then {})",
                    h.first_half_ns as f64 / 1e6,
                    h.second_half_ns as f64 / 1e6,
                    h.first_half_calls,
                    h.second_half_calls
                )?;
            }
            let calls: Vec<String> = d
                .calls
                .nonzero()
                .map(|(call, t)| format!("{} {}", t.calls, call.driver_function()))
                .collect();
            writeln!(
                f,
                "  driver calls       {:>14}   ({})",
                d.driver_calls,
                calls.join(", ")
            )?;
            let w = &d.waits;
            writeln!(
                f,
                "  device-wide waits  {:>14}   ({}); {} stream waits",
                w.device_waits,
                w.sources(),
                w.stream_waits
            )?;
        }
        if self.unknown_frees > 0 {
            writeln!(
                f,
                "  unknown frees      {:>14}   (frees of ids not live; skipped)",
                self.unknown_frees
            )?;
        }
        if self.failed_allocs > 0 {
            writeln!(f, "  failed allocs      {:>14}", self.failed_allocs)?;
            if let Some(first) = &self.first_failure {
                writeln!(f, "    first: {first}")?;
            }
        }
        if let Some(a) = &self.arenas {
            let c = &a.chunks;
            writeln!(
                f,
                "  arenas             {:>14}   virtual; {} cached at the end (peak reserved is peak physical)",
                format_bytes(c.virtual_bytes),
                format_bytes(c.cached_bytes)
            )?;
            writeln!(
                f,
                "  chunk calls        {:>14}   ({} creates, {} maps, {} unmaps, {} releases; {:.2} per 100 ops)",
                c.driver_calls(),
                c.creates,
                c.maps,
                c.unmaps,
                c.releases,
                a.driver_calls_per_100_ops
            )?;
        }
        if let Some(r) = &self.relocation {
            writeln!(
                f,
                "  relocations        {:>14}   ({} failed; final reserved is after a reclaim)",
                r.relocations, r.failed
            )?;
            let sum = &r.summed;
            writeln!(
                f,
                "  moved              {:>14}   ({} allocations)",
                format_bytes(sum.moved_bytes),
                sum.moved_slices
            )?;
            writeln!(
                f,
                "  pages freed        {:>14}   ({})",
                sum.pages_freed,
                format_bytes(sum.bytes_freed)
            )?;
            if let Some(err) = &r.last_error {
                writeln!(f, "    last failure: {err}")?;
            }
        }
        for s in &self.streams {
            writeln!(
                f,
                "  stream {:#x}: {} allocs, live {} (peak {}), reserved {} (peak {}), {} storage allocs",
                s.stream,
                s.allocs,
                format_bytes(s.final_live_bytes),
                format_bytes(s.peak_live_bytes),
                format_bytes(s.final_reserved_bytes),
                format_bytes(s.peak_reserved_bytes),
                s.storage_allocs
            )?;
        }
        for pool in &self.pools {
            writeln!(
                f,
                "  pool {}: {} pages, in use {} (peak {}), reserved {} (peak {})",
                pool.kind,
                pool.pages,
                format_bytes(pool.bytes_in_use),
                format_bytes(pool.peak_bytes_in_use),
                format_bytes(pool.bytes_reserved),
                format_bytes(pool.peak_bytes_reserved)
            )?;
        }
        if let Some(p) = &self.pre_existing {
            write_pre_existing(f, p)?;
        }
        if let Some(r) = &self.recorded {
            let versus = match r.gpumem_ratio {
                Some(x) => format!(
                    "; gpumem would reserve {} at its peak (×{x:.3} of it) for the same allocations",
                    format_bytes(self.peak_reserved_bytes)
                ),
                None if self.failed_allocs > 0 => format!(
                    "; gpumem refused {} allocations, so its reserved bytes are not comparable",
                    self.failed_allocs
                ),
                None => String::new(),
            };
            writeln!(
                f,
                "  {} reserved {} at its peak (op {}, {} live){versus}",
                r.name,
                format_bytes(r.peak_reserved_bytes),
                r.peak_op,
                format_bytes(r.live_at_peak_bytes)
            )?;
            if r.below_live_events > 0 {
                writeln!(
                    f,
                    "    its recorded reserved bytes are below live at {} events: the snapshot's segment history is incomplete",
                    r.below_live_events
                )?;
            }
        }
        if let Some(a) = &self.attribution {
            write_live(f, "peak live", &a.peak_live)?;
            if let Some(at) = &a.peak_reserved {
                write_live(f, "peak reserved", at)?;
            }
        }
        Ok(())
    }
}

/// The blocks live before recording began: how many, how much, and
/// where they came from.
fn write_pre_existing(f: &mut fmt::Formatter<'_>, p: &PreExisting) -> fmt::Result {
    if p.blocks > 0 {
        let (blocks, ops) = match p.blocks {
            1 => ("1 block".to_string(), "op 1 allocates it".to_string()),
            n => (format!("{n} blocks"), format!("ops 1–{n} allocate them")),
        };
        writeln!(
            f,
            "  pre-existing       {:>14}   in {blocks} live before recording began ({ops}, from op 0)",
            format_bytes(p.bytes)
        )?;
        writeln!(
            f,
            "    {} still allocated at the snapshot ({}), {} freed during the trace ({}); \
             {} with their allocation stack, {} \"{BEFORE_RECORDING}\"",
            p.active_blocks,
            format_bytes(p.active_bytes),
            p.freed_blocks,
            format_bytes(p.freed_bytes),
            p.with_frames,
            p.blocks - p.with_frames
        )?;
    }
    if p.contradicted > 0 {
        writeln!(
            f,
            "    {} allocated blocks of the snapshot left out: the trace freed their address and never allocated it again",
            p.contradicted
        )?;
    }
    Ok(())
}

/// The allocations live at one moment, a line per origin.
fn write_live(f: &mut fmt::Formatter<'_>, moment: &str, at: &LiveAt) -> fmt::Result {
    writeln!(
        f,
        "  live at {moment} (op {}): {} in {} allocations",
        at.op,
        format_bytes(at.live_bytes),
        at.live_count
    )?;
    for h in at.holders.iter().chain(&at.rest) {
        writeln!(
            f,
            "    {:>12} {:>7}×  {}",
            format_bytes(h.bytes),
            h.count,
            h.origin
        )?;
    }
    if let Some(b) = &at.backward {
        write!(f, "{b}")?;
    }
    Ok(())
}
