//! PyTorch memory snapshots: the pickle `torch.cuda.memory._snapshot()` returns
//! and `_dump_snapshot()` writes.
//!
//! `device_traces` is read: one list per device of event dicts with
//! `action`, `addr`, `size`, `stream`, `time_us` and `frames`. `alloc`
//! becomes an allocation (its whole stack kept, its first frame of the
//! user's Python code its origin) and `free_completed` its free (that is
//! when the caching allocator may reuse the block; `free_requested` only
//! marks the tensor dead while streams still use it). Segment actions are
//! PyTorch's own reservations: not replayed, but with the snapshot's
//! `segments` list they give what PyTorch reserved after every event, for
//! the side-by-side report. A snapshot with several busy devices needs one
//! named. The rest of the snapshot (allocator settings, annotations, other
//! devices, streams) becomes notes (`pytorch_context.rs`).
//!
//! Memory allocated before recording began (the model's weights, or what
//! fell out of the ring buffer) is allocated first, live from op 0, as
//! `memory_viz` draws it (`pytorch_blocks.rs`); its origin is the block's
//! own stack when the snapshot kept it, else `before recording`.
//!
//! A pickle is not line-oriented, so the file is decoded whole; errors name
//! the device and the 1-based record within it (record 0 is the top level).

use std::io::Read;

use super::event::{Trace, oversized};
use super::pickle::{self, Py};
use super::pytorch_blocks::pre_existing;
use super::pytorch_context::context_notes;
use super::pytorch_frames::FrameCache;
use super::pytorch_segments::{SegmentTotals, held_at_snapshot};
use super::sink::TraceSink;
use crate::error::{ReplayError, Result};

const NAME: &str = "pytorch";

/// The origin of a block live before recording began whose allocation
/// stack the snapshot did not keep.
pub const BEFORE_RECORDING: &str = "before recording";

fn as_u64(value: &Py, field: &str, device: usize, record: u64) -> Result<u64> {
    let err = |message: String| ReplayError::record(NAME, record, message);
    match value {
        Py::Int(v) if *v < 0 => Err(err(format!("device {device}: {field} is negative ({v})"))),
        Py::Int(v) => match u64::try_from(*v) {
            Ok(v) => Ok(v),
            Err(_) if field == "size" => Err(err(oversized(v))),
            Err(_) => Err(err(format!(
                "device {device}: {field} {v} does not fit in 64 bits"
            ))),
        },
        Py::HugeInt(bytes) if field == "size" => Err(err(oversized(format!("of {bytes} bytes")))),
        Py::HugeInt(bytes) => Err(err(format!(
            "device {device}: {field} is an integer of {bytes} bytes, too large for 64 bits"
        ))),
        other => Err(err(format!(
            "device {device}: {field} should be an integer, found {}",
            other.kind()
        ))),
    }
}

fn field<'a>(entry: &'a Py, key: &str, device: usize, record: u64) -> Result<&'a Py> {
    entry.get(key).ok_or_else(|| {
        ReplayError::record(
            NAME,
            record,
            format!("device {device}: event has no {key:?} field"),
        )
    })
}

/// How many leading bytes an unreadable pickle's message shows (in hex).
const PREVIEW_LEN: usize = 8;

/// Why a pickle could not be decoded, without echoing its bytes (in a file
/// that is not a pickle they are arbitrary, terminal escapes included).
fn unreadable(err: &pickle::PickleError, input: &[u8]) -> String {
    let head = &input[..input.len().min(PREVIEW_LEN)];
    let hex: Vec<String> = head.iter().map(|b| format!("{b:02x}")).collect();
    let start = match head.len() {
        0 => "the input is empty".to_string(),
        _ => format!("it starts with {}", hex.join(" ")),
    };
    format!(
        "not a readable pickle: {} at byte {} ({start}; pickles of protocol 2 to 5 start with 80 02 to 80 05)",
        err.reason, err.offset
    )
}

/// Reads `device_traces[device]` of a snapshot pickle. With `device: None`,
/// the first device whose trace is not empty is read.
pub fn read_pytorch(mut input: impl Read, device: Option<usize>) -> Result<Trace> {
    let mut bytes = Vec::new();
    input.read_to_end(&mut bytes).map_err(|e| ReplayError::Io {
        what: "PyTorch snapshot".to_string(),
        source: e,
    })?;
    let top =
        pickle::decode(&bytes).map_err(|e| ReplayError::record(NAME, 0, unreadable(&e, &bytes)))?;
    drop(bytes);
    let Py::Dict(_) = top else {
        return Err(ReplayError::record(
            NAME,
            0,
            format!("snapshot should be a dict, found {}", top.kind()),
        ));
    };
    let Some(Py::List(devices)) = top.get("device_traces") else {
        return Err(ReplayError::record(
            NAME,
            0,
            "snapshot has no device_traces list; record it with \
             torch.cuda.memory._record_memory_history() before torch.cuda.memory._snapshot()",
        ));
    };
    let chosen = match device {
        Some(d) if d < devices.len() => d,
        Some(d) => {
            return Err(ReplayError::record(
                NAME,
                0,
                format!(
                    "device {d} requested but the snapshot has {} device traces",
                    devices.len()
                ),
            ));
        }
        None => only_device(devices)?,
    };
    let Py::List(events) = &devices[chosen] else {
        return Err(ReplayError::record(
            NAME,
            0,
            format!(
                "device_traces[{chosen}] should be a list, found {}",
                devices[chosen].kind()
            ),
        ));
    };
    let mut sink = TraceSink::new(NAME, "record");
    sink.device(chosen);
    context_notes(&top, devices, chosen)
        .into_iter()
        .for_each(|note| sink.note(note));
    let mut segments = SegmentTotals::default();
    let mut cache = FrameCache::default();
    let (blocks, mut found) = pre_existing(events, &top, chosen);
    for block in &blocks {
        // Record 0: the snapshot as a whole (its `segments` list or the
        // history taken together) is the evidence.
        sink.alloc(0, block.addr, block.size, block.stream)?;
        let stack = block
            .frames
            .and_then(|f| cache.stack(f, sink.origins_mut().stacks_mut()));
        match stack {
            Some(stack) => {
                sink.stack(stack);
                found.with_frames += 1;
            }
            None => sink.origin(BEFORE_RECORDING),
        }
        segments.after_event();
    }
    if found.blocks > 0 || found.contradicted > 0 {
        sink.pre_existing(found);
    }
    for (index, entry) in events.iter().enumerate() {
        let record = index as u64 + 1;
        sink.count_record();
        let Py::Dict(_) = entry else {
            return Err(ReplayError::record(
                NAME,
                record,
                format!(
                    "device {chosen}: event should be a dict, found {}",
                    entry.kind()
                ),
            ));
        };
        let action = match field(entry, "action", chosen, record)? {
            Py::Str(s) => &**s,
            other => {
                return Err(ReplayError::record(
                    NAME,
                    record,
                    format!(
                        "device {chosen}: action should be a string, found {}",
                        other.kind()
                    ),
                ));
            }
        };
        let number = |key: &str| as_u64(field(entry, key, chosen, record)?, key, chosen, record);
        let before = sink.len();
        match action {
            "alloc" => {
                let (addr, size) = (number("addr")?, number("size")?);
                let stream = match entry.get("stream") {
                    Some(v) => as_u64(v, "stream", chosen, record)?,
                    None => 0,
                };
                sink.alloc(record, addr, size, stream)?;
                let stack = cache.stack_of_entry(entry, sink.origins_mut().stacks_mut());
                if let Some(stack) = stack {
                    sink.stack(stack);
                }
            }
            "free_completed" => sink.free(record, number("addr")?),
            // The caching allocator's own memory: what PyTorch reserved.
            "segment_alloc" | "segment_map" => {
                segments.change(number("size")? as i128);
                sink.skip_kind(if action == "segment_map" {
                    "segment_map"
                } else {
                    "segment_alloc"
                });
            }
            "segment_free" | "segment_unmap" => {
                segments.change(-(number("size")? as i128));
                sink.skip_kind(if action == "segment_unmap" {
                    "segment_unmap"
                } else {
                    "segment_free"
                });
            }
            // Nothing the program did, nothing PyTorch reserved.
            "free_requested" => sink.skip_kind("free_requested"),
            "snapshot" => sink.skip_kind("snapshot"),
            "oom" => sink.skip_kind("oom"),
            unknown => sink.skip_unknown_action(unknown),
        }
        if sink.len() > before {
            if let Some(Py::Int(t)) = entry.get("time_us") {
                sink.time(u64::try_from(*t).unwrap_or(0));
            }
            segments.after_event();
        }
    }
    if let Some(reserved) = segments.reserved(held_at_snapshot(&top, chosen)) {
        sink.origins_mut().set_source_reserved("PyTorch", reserved);
    }
    Ok(sink.finish())
}

/// Why a reader skips records of `kind` (what a note about them says).
pub fn why_skipped(kind: &str) -> &'static str {
    match kind {
        "free_requested" => "the block is freed at its free_completed, when PyTorch may reuse it",
        "segment_alloc" | "segment_free" | "segment_map" | "segment_unmap" => {
            "PyTorch's own reservations: its reserved line beside gpumem's"
        }
        "oom" => "PyTorch ran out of memory here; the replay goes on",
        "snapshot" => "a marker where a snapshot was taken",
        _ => "nothing to replay",
    }
}

/// With no device asked for: the one device whose trace is not empty; a
/// snapshot with several is refused, naming them, since replaying device 0
/// silently would report on memory the user may not have meant.
fn only_device(devices: &[Py]) -> Result<usize> {
    let busy: Vec<(usize, usize)> = devices
        .iter()
        .enumerate()
        .filter_map(|(d, t)| match t {
            Py::List(events) if !events.is_empty() => Some((d, events.len())),
            _ => None,
        })
        .collect();
    match busy.as_slice() {
        [] => Err(ReplayError::record(
            NAME,
            0,
            "every device trace is empty; call torch.cuda.memory._record_memory_history() \
             before the workload runs",
        )),
        [(d, _)] => Ok(*d),
        several => {
            let list: Vec<String> = several
                .iter()
                .map(|(d, n)| format!("device {d} ({n} events)"))
                .collect();
            Err(ReplayError::record(
                NAME,
                0,
                format!(
                    "the snapshot traces {}; choose one with --device N",
                    list.join(", ")
                ),
            ))
        }
    }
}
