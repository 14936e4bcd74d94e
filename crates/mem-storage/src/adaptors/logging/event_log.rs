//! The event record of [`crate::LoggingResource`] and its two file formats.
//!
//! An event says who (thread), when (ns since the UNIX epoch, monotonic
//! within one log), what (allocate, free, or a failure of either), where
//! (pointer), how much (bytes) and on which stream. That is everything a
//! replayer needs to re-run the allocation program on another resource.
//!
//! Two formats, because two kinds of tools read them:
//! - RMM's logging-adaptor CSV (`Thread,Time,Action,Pointer,Size,Stream`),
//!   read by RMM's replay benchmark and by `gpumem replay`;
//! - the gpumem trace (JSON Lines, docs/design.md "Traces"), which names
//!   allocations by id instead of address so it replays on any device.

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::id::StreamId;

/// What a logged call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// A successful allocation.
    Allocate,
    /// An allocation the resource refused.
    AllocateFailure,
    /// A successful free.
    Free,
    /// A free the resource refused (the bytes stay held).
    FreeFailure,
}

impl Action {
    /// The name in RMM's CSV (`allocate`, `allocate failure`, `free`);
    /// a refused free, which RMM does not log, is `free failure`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allocate => "allocate",
            Action::AllocateFailure => "allocate failure",
            Action::Free => "free",
            Action::FreeFailure => "free failure",
        }
    }
}

/// One logged allocate or free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ResourceEvent {
    /// Small process-unique number of the calling thread (1, 2, … in order
    /// of each thread's first logged call).
    pub thread: u64,
    /// Nanoseconds since the UNIX epoch; never decreases within one log.
    pub time_ns: u64,
    /// What happened.
    pub action: Action,
    /// The address (0 for a failed allocation).
    pub ptr: u64,
    /// Bytes requested or freed.
    pub bytes: u64,
    /// The stream of the call.
    pub stream: StreamId,
    /// The calling thread's tag ([`crate::tag_scope`]) when it allocated.
    pub tag: Option<&'static str>,
}

/// The calling thread's log number (see [`ResourceEvent::thread`]).
pub(crate) fn thread_number() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static NUMBER: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    NUMBER.with(|n| *n)
}

/// RMM's CSV header line (without the newline).
pub const CSV_HEADER: &str = "Thread,Time,Action,Pointer,Size,Stream";

/// Write `events` as RMM logging-adaptor CSV: a header, then one row per
/// event. `Time` is seconds since the UNIX epoch with nine decimals (RMM
/// writes the same column with fewer), `Pointer` is hexadecimal, `Stream`
/// is the gpumem stream number.
pub fn write_csv<W: Write>(events: &[ResourceEvent], mut out: W) -> io::Result<()> {
    writeln!(out, "{CSV_HEADER}")?;
    for e in events {
        writeln!(
            out,
            "{},{}.{:09},{},{:#x},{},{}",
            e.thread,
            e.time_ns / 1_000_000_000,
            e.time_ns % 1_000_000_000,
            e.action.as_str(),
            e.ptr,
            e.bytes,
            e.stream.0
        )?;
    }
    Ok(())
}

/// `text` as the inside of a JSON string.
fn json_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// Write `events` as a gpumem trace (JSON Lines): the header line, then
/// `{"op":"alloc","id":…,"size":…,"stream":…}` (with `"tag":…` when the
/// allocation was tagged) per allocation and
/// `{"op":"free","id":…}` per free.
///
/// Ids count allocations from 1 in log order. Failures are left out (a
/// replay re-runs what happened; a refusal depends on the device), and so is
/// a free of an address this log never saw allocated (it was allocated
/// before logging began). Returns how many such frees were left out.
pub fn write_trace<W: Write>(events: &[ResourceEvent], mut out: W) -> io::Result<u64> {
    writeln!(out, r#"{{"format":"gpumem-trace","version":1}}"#)?;
    let mut ids: HashMap<u64, u64> = HashMap::new();
    let mut next_id = 1u64;
    let mut unmatched = 0;
    for e in events {
        match e.action {
            Action::Allocate => {
                ids.insert(e.ptr, next_id);
                write!(
                    out,
                    r#"{{"op":"alloc","id":{next_id},"size":{},"stream":{}"#,
                    e.bytes, e.stream.0
                )?;
                if let Some(tag) = e.tag {
                    write!(out, r#","tag":"{}""#, json_escape(tag))?;
                }
                writeln!(out, "}}")?;
                next_id += 1;
            }
            Action::Free => match ids.remove(&e.ptr) {
                Some(id) => writeln!(out, r#"{{"op":"free","id":{id}}}"#)?,
                None => unmatched += 1,
            },
            Action::AllocateFailure | Action::FreeFailure => {}
        }
    }
    Ok(unmatched)
}
