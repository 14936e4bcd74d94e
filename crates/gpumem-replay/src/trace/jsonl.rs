//! gpumem's own trace format: JSON Lines, one event a line, optional header.
//!
//! ```text
//! {"format":"gpumem-trace","version":1}
//! {"op":"alloc","id":1,"size":4096,"stream":0}
//! {"op":"free","id":1}
//! {"op":"mode","mode":"persistent"}
//! {"op":"cleanup"}
//! ```
//!
//! The reader streams line by line (one line buffer, reused), so memory is the
//! events themselves. Blank lines are allowed, and so is a UTF-8 byte order
//! mark before the first line; everything else must parse. An `alloc` or
//! `free` may carry a `"tag"` (a string naming what the memory is for),
//! `"frames"` (a stack, innermost first: objects with `filename`, `line`,
//! `name` as PyTorch writes them, or strings) and `"time_us"`. An alloc's
//! tag, or else its first frame outside the framework, becomes its origin
//! in memory reports; nothing of them is replayed.

use std::io::{BufRead, Write};

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::event::{Event, Mode, Trace, oversized};
use super::jsonl_messages::{bad_count, describe, oversized_size};
use super::sink::TraceSink;
use super::stacks::Stacks;
use crate::error::{ReplayError, Result};

/// Value of the header's `format` field.
pub const FORMAT_NAME: &str = "gpumem-trace";
/// The only trace version this build reads and writes.
pub const FORMAT_VERSION: u64 = 1;

const NAME: &str = "jsonl";

#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
enum Line {
    Alloc {
        id: u64,
        size: u64,
        #[serde(default)]
        stream: u64,
        #[serde(default)]
        tag: Option<String>,
        #[serde(default)]
        frames: Option<serde_json::Value>,
        #[serde(default)]
        time_us: Option<u64>,
    },
    Free {
        id: u64,
        #[serde(default, rename = "tag")]
        _tag: Option<IgnoredAny>,
        #[serde(default, rename = "frames")]
        _frames: Option<IgnoredAny>,
        #[serde(default)]
        time_us: Option<u64>,
    },
    Mode {
        mode: Mode,
    },
    Cleanup,
}

/// What a `"frames"` value names: a list of frame objects (`filename`/
/// `file`, `line`, `name`/`function`, innermost first) is interned as a
/// stack; a list of strings names its first (taken as written). Anything
/// else names nothing.
enum Named {
    Stack(u32),
    Origin(String),
}

fn frames_named(frames: &serde_json::Value, stacks: &mut Stacks) -> Option<Named> {
    let list = frames.as_array()?;
    if let Some(first) = list.first().and_then(|f| f.as_str()) {
        return Some(Named::Origin(first.to_string()));
    }
    let ids: Vec<u32> = list
        .iter()
        .filter_map(|f| {
            let file = text(f, ["filename", "file"])?;
            let line = f.get("line").and_then(|v| v.as_u64()).unwrap_or(0);
            Some(stacks.intern_frame(file, line, text(f, ["name", "function"]).unwrap_or("?")))
        })
        .collect();
    (!ids.is_empty()).then(|| Named::Stack(stacks.intern_stack(&ids)))
}

/// The first of `keys` that `frame` holds as a string.
fn text<'a>(frame: &'a serde_json::Value, keys: [&str; 2]) -> Option<&'a str> {
    keys.iter()
        .find_map(|k| frame.get(*k).and_then(|v| v.as_str()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    format: String,
    version: u64,
}

fn parse_header(line_no: u64, text: &str) -> Result<bool> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| ReplayError::line(NAME, line_no, describe(&e)))?;
    if value.get("format").is_none() {
        return Ok(false);
    }
    let header: Header = serde_json::from_value(value)
        .map_err(|e| ReplayError::line(NAME, line_no, format!("bad header: {e}")))?;
    if header.format != FORMAT_NAME {
        return Err(ReplayError::line(
            NAME,
            line_no,
            format!(
                "header names format {:?}, expected {FORMAT_NAME:?}",
                header.format
            ),
        ));
    }
    if header.version != FORMAT_VERSION {
        return Err(ReplayError::line(
            NAME,
            line_no,
            format!(
                "trace version {} is not supported; this build reads version {FORMAT_VERSION}",
                header.version
            ),
        ));
    }
    Ok(true)
}

/// Reads a JSON Lines trace. Errors name the 1-based line.
pub fn read_jsonl(mut input: impl BufRead) -> Result<Trace> {
    let mut sink = TraceSink::new(NAME, "line");
    let mut buf = String::new();
    let mut line_no = 0u64;
    let mut seen_content = false;
    loop {
        line_no += 1;
        if !sink.read_line(&mut input, &mut buf, line_no, "trace")? {
            break;
        }
        let mut text = buf.trim();
        if line_no == 1 {
            text = text.trim_start_matches('\u{feff}').trim_start();
        }
        if text.is_empty() {
            continue;
        }
        if !seen_content {
            seen_content = true;
            if parse_header(line_no, text)? {
                continue;
            }
        }
        let line: Line = serde_json::from_str(text).map_err(|e| {
            let message = match (oversized_size(text), bad_count(text)) {
                (Some(digits), _) => oversized(digits),
                (None, Some(message)) => message,
                (None, None) => describe(&e),
            };
            ReplayError::line(NAME, line_no, message)
        })?;
        match line {
            Line::Alloc {
                id,
                size,
                stream,
                tag,
                frames,
                time_us,
            } => {
                sink.alloc(line_no, id, size, stream)?;
                // A tag is the caller's own name for the memory: it wins
                // over a stack.
                match (tag, frames) {
                    (Some(tag), _) => sink.origin(&tag),
                    (None, Some(frames)) => {
                        match frames_named(&frames, sink.origins_mut().stacks_mut()) {
                            Some(Named::Stack(stack)) => sink.stack(stack),
                            Some(Named::Origin(origin)) => sink.origin(&origin),
                            None => {}
                        }
                    }
                    (None, None) => {}
                }
                if let Some(t) = time_us {
                    sink.time(t);
                }
            }
            Line::Free { id, time_us, .. } => {
                sink.free(line_no, id);
                if let Some(t) = time_us {
                    sink.time(t);
                }
            }
            Line::Mode { mode } => sink.mode(mode),
            Line::Cleanup => sink.cleanup(),
        }
    }
    Ok(sink.finish())
}

/// Writes `events` as a JSON Lines trace, header first.
pub fn write_jsonl<'a>(
    out: impl Write,
    events: impl IntoIterator<Item = &'a Event>,
) -> std::io::Result<()> {
    write_lines(out, events.into_iter().map(|e| (e, None)))
}

/// Writes `trace` as a JSON Lines trace, header first, each allocation
/// with its origin as `"tag"` when it has one (what `gpumem record` writes
/// for the built-in workloads).
pub fn write_trace_jsonl(out: impl Write, trace: &Trace) -> std::io::Result<()> {
    let origins = &trace.origins;
    write_lines(
        out,
        trace
            .events
            .iter()
            .enumerate()
            .map(|(i, e)| (e, origins.origin_of(i))),
    )
}

fn write_lines<'a>(
    mut out: impl Write,
    events: impl Iterator<Item = (&'a Event, Option<&'a str>)>,
) -> std::io::Result<()> {
    writeln!(
        out,
        r#"{{"format":"{FORMAT_NAME}","version":{FORMAT_VERSION}}}"#
    )?;
    for (event, tag) in events {
        match *event {
            Event::Alloc { id, size, stream } => {
                write!(
                    out,
                    r#"{{"op":"alloc","id":{id},"size":{size},"stream":{stream}"#
                )?;
                if let Some(tag) = tag {
                    let quoted = serde_json::to_string(tag).map_err(std::io::Error::other)?;
                    write!(out, r#","tag":{quoted}"#)?;
                }
                writeln!(out, "}}")?;
            }
            Event::Free { id } => writeln!(out, r#"{{"op":"free","id":{id}}}"#)?,
            Event::Mode(Mode::Persistent) => {
                writeln!(out, r#"{{"op":"mode","mode":"persistent"}}"#)?
            }
            Event::Mode(Mode::Auto) => writeln!(out, r#"{{"op":"mode","mode":"auto"}}"#)?,
            Event::Cleanup => writeln!(out, r#"{{"op":"cleanup"}}"#)?,
        }
    }
    out.flush()
}
