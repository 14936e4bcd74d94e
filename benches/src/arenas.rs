//! The arena table: physical memory held against live data, on every
//! built-in workload and every recorded trace, for paged pools, arenas,
//! `offset-allocator`'s extent rounded up to whole chunks (how an
//! expandable segment maps it), and the *floor*.
//!
//! The floor is what no placement over chunks of this size can beat by
//! much: best-fit placement (smallest free block that fits, lowest address
//! among equals) over one unbounded range, every allocation rounded up to
//! the engine's alignment, with a chunk mapped exactly while a live
//! allocation overlaps it. Its peak of mapped chunks is the figure; at
//! 2 MiB chunks it is near 1.00 for large tensors and higher where small
//! allocations scatter over many chunks.
//!
//! Every row but the floor is `gpumem compare`'s (its library,
//! [`gpumem_replay::compare`]): the same compiled program on the simulated
//! 80 GiB device, so the figures mean what they would on a GPU with 2 MiB
//! granularity and match `gpumem compare --against
//! sub_slices,gpumem,offset-allocator`. gpumem's figures are
//! `gpumem::Device`'s: its default (arenas) and the paged default; the
//! chunk-call column is the default row's storage calls (allocations,
//! frees and chunk driver calls) per 100 ops.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use gpumem_replay::compare::{Allocator, compare};
use gpumem_replay::replay::{Op, Program};
use gpumem_replay::trace::{TraceFormat, read_trace_file};
use gpumem_replay::workload::WorkloadSpec;
use mem_storage::DEFAULT_GRANULARITY;

use crate::device_peer::compare_setup;
use crate::fragmentation::{program, workloads};
use crate::{BenchError, DEVICE_BYTES, Result};

/// The engine's alignment on the simulated device.
pub const ALIGNMENT: u64 = 256;

/// One workload's row.
#[derive(Debug, Clone, PartialEq)]
pub struct ArenaRow {
    /// Workload or trace name.
    pub workload: String,
    /// Ops in the program.
    pub ops: u64,
    /// Peak of Σ requested bytes.
    pub peak_live: u64,
    /// `gpumem::Device` on paged pools (`pools:sub_slices`): peak reserved.
    pub paged: u64,
    /// Paged pools: ns per op.
    pub paged_ns: f64,
    /// `gpumem::Device` with its defaults (arenas): peak physical.
    pub arenas: u64,
    /// Arenas: ns per op (the facade's locks and statistics included).
    pub arenas_ns: f64,
    /// Arenas: storage calls (chunk driver calls included) per 100 ops.
    pub calls_per_100: f64,
    /// offset-allocator's heap extent, rounded up to whole chunks.
    pub offset_extent: u64,
    /// The floor (see the module docs).
    pub floor: u64,
}

fn round_up(x: u64, to: u64) -> u64 {
    x.div_ceil(to) * to
}

/// The floor of `program`: peak bytes of chunks of `chunk` bytes that live
/// allocations overlap, under best-fit placement over one unbounded range.
pub fn floor(program: &Program, chunk: u64) -> u64 {
    let mut free_by_size: BTreeSet<(u64, u64)> = BTreeSet::new();
    let mut free_at: BTreeMap<u64, u64> = BTreeMap::new();
    let mut end = 0u64;
    let mut placed: HashMap<u32, (u64, u64)> = HashMap::new();
    let mut refs: HashMap<u64, u32> = HashMap::new();
    let (mut mapped, mut peak) = (0u64, 0u64);
    let span = |offset: u64, size: u64| (offset / chunk)..=((offset + size - 1) / chunk);
    for op in &program.ops {
        match *op {
            Op::Alloc { slot, size, .. } => {
                let size = round_up(size, ALIGNMENT);
                if size == 0 {
                    placed.insert(slot, (0, 0));
                    continue;
                }
                let offset = match free_by_size.range((size, 0)..).next().copied() {
                    Some((block, at)) => {
                        free_by_size.remove(&(block, at));
                        free_at.remove(&at);
                        if block > size {
                            free_by_size.insert((block - size, at + size));
                            free_at.insert(at + size, block - size);
                        }
                        at
                    }
                    None => {
                        end += size;
                        end - size
                    }
                };
                placed.insert(slot, (offset, size));
                for c in span(offset, size) {
                    let r = refs.entry(c).or_insert(0);
                    *r += 1;
                    mapped += u64::from(*r == 1);
                }
                peak = peak.max(mapped);
            }
            Op::Free { slot } => {
                let Some((mut offset, mut size)) = placed.remove(&slot) else {
                    continue;
                };
                if size == 0 {
                    continue;
                }
                for c in span(offset, size) {
                    if let Some(r) = refs.get_mut(&c) {
                        *r -= 1;
                        if *r == 0 {
                            refs.remove(&c);
                            mapped -= 1;
                        }
                    }
                }
                // Coalesce with free neighbours; a block reaching the end
                // shrinks the range instead.
                if let Some((&at, &len)) = free_at.range(..offset).next_back()
                    && at + len == offset
                {
                    free_at.remove(&at);
                    free_by_size.remove(&(len, at));
                    offset = at;
                    size += len;
                }
                if let Some(&len) = free_at.get(&(offset + size)) {
                    free_at.remove(&(offset + size));
                    free_by_size.remove(&(len, offset + size));
                    size += len;
                }
                if offset + size == end {
                    end = offset;
                } else {
                    free_at.insert(offset, size);
                    free_by_size.insert((size, offset));
                }
            }
            Op::Mode(_) | Op::Cleanup => {}
        }
    }
    peak * chunk
}

/// The row of one compiled program: `gpumem compare`'s own rows (the
/// library behind the command: `sub_slices`, the default, and
/// offset-allocator, on the simulated device), with the floor beside them.
pub fn row(name: &str, program: &Program) -> Result<ArenaRow> {
    let setup = compare_setup(DEVICE_BYTES);
    let against = [
        Allocator::SubSlices,
        Allocator::Gpumem,
        Allocator::OffsetAllocator,
    ];
    let table = compare(name, program, &against, &setup)?;
    let [paged, arenas, offset] = &table.rows[..] else {
        return Err(BenchError::Check(format!(
            "{name}: compare returned {} rows for 3 allocators",
            table.rows.len()
        )));
    };
    if arenas.reserved_means != Allocator::Gpumem.reserved_means(true) {
        return Err(BenchError::Check(
            "the default simulated device did not choose arenas".into(),
        ));
    }
    Ok(ArenaRow {
        workload: name.to_string(),
        ops: table.ops,
        peak_live: arenas.peak_live_bytes,
        paged: paged.peak_reserved_bytes,
        paged_ns: paged.ns_per_op,
        arenas: arenas.peak_reserved_bytes,
        arenas_ns: arenas.ns_per_op,
        calls_per_100: arenas.storage_calls as f64 * 100.0 / table.ops.max(1) as f64,
        offset_extent: round_up(offset.peak_reserved_bytes, DEFAULT_GRANULARITY),
        floor: floor(program, DEFAULT_GRANULARITY),
    })
}

/// Rows of every built-in workload (at `spec`) and every `*.jsonl.gz` trace
/// in `traces` (skipped when the folder is missing).
pub fn arena_rows(spec: &WorkloadSpec, traces: &Path) -> Result<Vec<ArenaRow>> {
    let mut rows = Vec::new();
    for &workload in workloads() {
        rows.push(row(workload.name(), &program(workload, spec)?)?);
    }
    let mut files: Vec<_> = std::fs::read_dir(traces)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".jsonl.gz"))
        .collect();
    files.sort();
    for path in files {
        let trace = read_trace_file(&path, TraceFormat::Auto)?;
        let program = Program::compile(&trace.events)?;
        let name = path.file_name().map_or_else(String::new, |n| {
            n.to_string_lossy().replace(".jsonl.gz", "")
        });
        rows.push(row(&name, &program)?);
    }
    Ok(rows)
}

/// The rows as a Markdown table.
pub fn markdown(rows: &[ArenaRow]) -> String {
    let mut out = String::from(
        "| workload | ops | peak live | paged ÷ live | arenas (`Device` default) ÷ live | floor ÷ live | offset extent ÷ live | arenas ÷ floor | storage calls / 100 ops | ns/op paged | ns/op arenas |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let live = r.peak_live.max(1) as f64;
        out.push_str(&format!(
            "| {} | {} | {:.1} MiB | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.1} | {:.0} | {:.0} |\n",
            r.workload,
            r.ops,
            r.peak_live as f64 / (1 << 20) as f64,
            r.paged as f64 / live,
            r.arenas as f64 / live,
            r.floor as f64 / live,
            r.offset_extent as f64 / live,
            r.arenas as f64 / r.floor.max(1) as f64,
            r.calls_per_100,
            r.paged_ns,
            r.arenas_ns,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_maps_a_chunk_only_while_live_data_overlaps_it() {
        let g = DEFAULT_GRANULARITY;
        let program = Program {
            ops: vec![
                Op::Alloc {
                    slot: 0,
                    size: g,
                    stream: 0,
                },
                Op::Alloc {
                    slot: 1,
                    size: 1,
                    stream: 0,
                },
                Op::Free { slot: 0 },
                Op::Alloc {
                    slot: 2,
                    size: g / 2,
                    stream: 0,
                },
            ],
            slots: 3,
            unknown_frees: 0,
            streams: vec![0],
            skipped_events: Vec::new(),
        };
        // Peak: chunk 0 (slot 0) and chunk 1 (slot 1) at once.
        assert_eq!(floor(&program, g), 2 * g);
    }

    #[test]
    fn every_figure_covers_the_live_bytes_on_a_small_run_of_each_workload() {
        let spec = WorkloadSpec {
            scale: 0.05,
            ..WorkloadSpec::default()
        };
        let rows = arena_rows(&spec, Path::new("/nonexistent")).unwrap();
        assert_eq!(rows.len(), workloads().len());
        for r in rows {
            // Chunks under live data hold at least the live bytes; so does
            // any heap extent and any set of pages.
            for held in [r.floor, r.arenas, r.offset_extent, r.paged] {
                assert!(held >= r.peak_live, "{r:?}");
            }
            assert!(r.calls_per_100 > 0.0, "{r:?}");
        }
    }
}
