//! PyTorch memory snapshots: the pickle `torch.cuda.memory._snapshot()` returns
//! and `_dump_snapshot()` writes.
//!
//! Only `device_traces` is read: one list per device of event dicts with
//! `action`, `addr`, `size` and `stream`. `alloc` becomes an allocation and
//! `free_completed` its free (that is when the caching allocator may reuse the
//! block; `free_requested` only marks the tensor dead while streams still use
//! it). Segment and snapshot actions describe the caching allocator itself,
//! not the program, and are skipped. The history is a ring buffer, so frees of
//! blocks allocated before recording started are normal: they are counted as
//! unknown frees, not errors.
//!
//! A pickle is not line-oriented, so the file is decoded whole; errors name
//! the device and the 1-based record within it (record 0 is the top level).

use std::collections::BTreeMap;
use std::io::Read;

use serde_pickle::{DeOptions, HashableValue, Value};

use super::event::{Trace, oversized};
use super::sink::TraceSink;
use crate::error::{CliError, Result};

const NAME: &str = "pytorch";

type Dict = BTreeMap<HashableValue, Value>;

fn get<'a>(dict: &'a Dict, key: &str) -> Option<&'a Value> {
    dict.get(&HashableValue::String(key.to_string()))
}

fn as_u64(value: &Value, field: &str, device: usize, record: u64) -> Result<u64> {
    match value {
        Value::I64(v) if *v >= 0 => Ok(*v as u64),
        Value::I64(v) => Err(CliError::record(
            NAME,
            record,
            format!("device {device}: {field} is negative ({v})"),
        )),
        // Pickle writes integers of 2^63 and above as longs.
        Value::Int(v) => {
            let text = v.to_string();
            match text.parse::<u64>() {
                Ok(v) => Ok(v),
                Err(_) if text.starts_with('-') => Err(CliError::record(
                    NAME,
                    record,
                    format!("device {device}: {field} is negative ({text})"),
                )),
                Err(_) if field == "size" => Err(CliError::record(NAME, record, oversized(text))),
                Err(_) => Err(CliError::record(
                    NAME,
                    record,
                    format!("device {device}: {field} {text} does not fit in 64 bits"),
                )),
            }
        }
        other => Err(CliError::record(
            NAME,
            record,
            format!(
                "device {device}: {field} should be an integer, found {}",
                kind(other)
            ),
        )),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::None => "None",
        Value::Bool(_) => "a bool",
        Value::I64(_) | Value::Int(_) => "an integer",
        Value::F64(_) => "a float",
        Value::Bytes(_) => "bytes",
        Value::String(_) => "a string",
        Value::List(_) => "a list",
        Value::Tuple(_) => "a tuple",
        Value::Set(_) | Value::FrozenSet(_) => "a set",
        Value::Dict(_) => "a dict",
    }
}

fn field<'a>(entry: &'a Dict, key: &str, device: usize, record: u64) -> Result<&'a Value> {
    get(entry, key).ok_or_else(|| {
        CliError::record(
            NAME,
            record,
            format!("device {device}: event has no {key:?} field"),
        )
    })
}

/// How many leading bytes an unreadable pickle's message shows (in hex).
const PREVIEW_LEN: usize = 8;

/// A reader that keeps the first [`PREVIEW_LEN`] bytes it passes on.
struct Preview<R> {
    inner: R,
    head: Vec<u8>,
}

impl<R: Read> Read for Preview<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let room = PREVIEW_LEN - self.head.len();
        self.head.extend_from_slice(&buf[..n.min(room)]);
        Ok(n)
    }
}

/// Why a pickle could not be decoded, without echoing its bytes: the
/// decoder's own messages quote literals and names from the file, which in
/// a file that is not a pickle are arbitrary bytes.
fn unreadable(err: &serde_pickle::Error, head: &[u8]) -> String {
    use serde_pickle::{Error, ErrorCode};
    let describe = |code: &ErrorCode| match code {
        ErrorCode::Unsupported(op) => format!("unknown opcode 0x{:02x}", *op as u32),
        ErrorCode::InvalidLiteral(_) => "invalid literal".to_string(),
        ErrorCode::InvalidStackTop(what, _) => format!("invalid stack top, expected {what}"),
        ErrorCode::UnsupportedGlobal(..) => "unsupported global reference".to_string(),
        ErrorCode::InvalidValue(_) | ErrorCode::Structure(_) => "unexpected structure".to_string(),
        other => other.to_string(),
    };
    let reason = match err {
        Error::Io(e) => format!("read error: {}", e.kind()),
        Error::Eval(code, offset) => format!("{} at byte {offset}", describe(code)),
        Error::Syntax(code) => describe(code),
    };
    let hex: Vec<String> = head.iter().map(|b| format!("{b:02x}")).collect();
    let start = match head.len() {
        0 => "the input is empty".to_string(),
        _ => format!("it starts with {}", hex.join(" ")),
    };
    format!(
        "not a readable pickle: {reason} ({start}; pickles of protocol 2 to 5 start with 80 02 to 80 05)"
    )
}

/// Reads `device_traces[device]` of a snapshot pickle. With `device: None`,
/// the first device whose trace is not empty is read.
pub fn read_pytorch(input: impl Read, device: Option<usize>) -> Result<Trace> {
    let options = DeOptions::new()
        .replace_unresolved_globals()
        .replace_recursive_structures();
    let mut input = Preview {
        inner: input,
        head: Vec::with_capacity(PREVIEW_LEN),
    };
    let top = serde_pickle::value_from_reader(&mut input, options)
        .map_err(|e| CliError::record(NAME, 0, unreadable(&e, &input.head)))?;
    let Value::Dict(top) = top else {
        return Err(CliError::record(
            NAME,
            0,
            format!("snapshot should be a dict, found {}", kind(&top)),
        ));
    };
    let Some(Value::List(devices)) = get(&top, "device_traces") else {
        return Err(CliError::record(
            NAME,
            0,
            "snapshot has no device_traces list; record it with \
             torch.cuda.memory._record_memory_history() before torch.cuda.memory._snapshot()",
        ));
    };
    let chosen = match device {
        Some(d) if d < devices.len() => d,
        Some(d) => {
            return Err(CliError::record(
                NAME,
                0,
                format!(
                    "device {d} requested but the snapshot has {} device traces",
                    devices.len()
                ),
            ));
        }
        None => devices
            .iter()
            .position(|t| matches!(t, Value::List(events) if !events.is_empty()))
            .ok_or_else(|| {
                CliError::record(
                    NAME,
                    0,
                    "every device trace is empty; call torch.cuda.memory._record_memory_history() \
                     before the workload runs",
                )
            })?,
    };
    let Value::List(events) = &devices[chosen] else {
        return Err(CliError::record(
            NAME,
            0,
            format!(
                "device_traces[{chosen}] should be a list, found {}",
                kind(&devices[chosen])
            ),
        ));
    };
    let mut sink = TraceSink::new(NAME, "record");
    for (index, entry) in events.iter().enumerate() {
        let record = index as u64 + 1;
        sink.count_record();
        let Value::Dict(entry) = entry else {
            return Err(CliError::record(
                NAME,
                record,
                format!(
                    "device {chosen}: event should be a dict, found {}",
                    kind(entry)
                ),
            ));
        };
        let action = match field(entry, "action", chosen, record)? {
            Value::String(s) => s.as_str(),
            other => {
                return Err(CliError::record(
                    NAME,
                    record,
                    format!(
                        "device {chosen}: action should be a string, found {}",
                        kind(other)
                    ),
                ));
            }
        };
        match action {
            "alloc" => {
                let addr = as_u64(
                    field(entry, "addr", chosen, record)?,
                    "addr",
                    chosen,
                    record,
                )?;
                let size = as_u64(
                    field(entry, "size", chosen, record)?,
                    "size",
                    chosen,
                    record,
                )?;
                let stream = match get(entry, "stream") {
                    Some(v) => as_u64(v, "stream", chosen, record)?,
                    None => 0,
                };
                sink.alloc(record, addr, size, stream)?;
            }
            "free_completed" => {
                let addr = as_u64(
                    field(entry, "addr", chosen, record)?,
                    "addr",
                    chosen,
                    record,
                )?;
                sink.free(record, addr);
            }
            // The caching allocator's own events: nothing the program did.
            "free_requested" | "segment_alloc" | "segment_free" | "segment_map"
            | "segment_unmap" | "snapshot" | "oom" => sink.skip(),
            unknown => sink.skip_unknown_action(unknown),
        }
    }
    Ok(sink.finish())
}
