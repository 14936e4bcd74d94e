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

use super::event::Trace;
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
        Value::Int(v) => Err(CliError::record(
            NAME,
            record,
            format!("device {device}: {field} {v} does not fit in 64 bits"),
        )),
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

/// Reads `device_traces[device]` of a snapshot pickle. With `device: None`,
/// the first device whose trace is not empty is read.
pub fn read_pytorch(input: impl Read, device: Option<usize>) -> Result<Trace> {
    let options = DeOptions::new()
        .replace_unresolved_globals()
        .replace_recursive_structures();
    let top = serde_pickle::value_from_reader(input, options)
        .map_err(|e| CliError::record(NAME, 0, format!("not a readable pickle: {e}")))?;
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
            _ => sink.skip(),
        }
    }
    Ok(sink.finish())
}
