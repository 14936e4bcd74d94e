//! RMM's `logging_resource_adaptor` CSV: `Thread,Time,Action,Pointer,Size,Stream`.
//!
//! Actions are `allocate`, `free` (older logs and docs also say
//! `deallocate`) and `allocate failure`. Pointers become ids: an address
//! names an allocation until it is freed, exactly as in gpumem's model.
//! Threads and times are not replayed (RMM's replay benchmark uses them only
//! to interleave threads, which a single-threaded replay already does in
//! global log order). Failed allocations of the recorded run are counted and
//! not replayed: they held no memory; neither are `free failure` lines
//! (written by gpumem's own logging adaptor), which changed nothing.

use std::io::BufRead;

use super::event::Trace;
use super::sink::TraceSink;
use crate::error::{CliError, Result};

const NAME: &str = "rmm-csv";
const COLUMNS: usize = 6;

/// Parses a pointer or integer field: `0x…` hex, decimal, or a null spelling.
fn parse_number(field: &str, what: &str, line: u64) -> Result<u64> {
    let field = field.trim();
    let parsed = if let Some(hex) = field
        .strip_prefix("0x")
        .or_else(|| field.strip_prefix("0X"))
    {
        u64::from_str_radix(hex, 16)
    } else if matches!(field, "(nil)" | "nullptr" | "NULL" | "null") {
        Ok(0)
    } else {
        field.parse::<u64>()
    };
    parsed.map_err(|_| {
        let hint = if field.starts_with('-') {
            " (negative values are not allowed)"
        } else {
            ""
        };
        CliError::line(
            NAME,
            line,
            format!("{what} {field:?} is not a non-negative integer or 0x-hex number that fits in 64 bits{hint}"),
        )
    })
}

/// Reads an RMM logging-adaptor CSV log. Errors name the 1-based line.
pub fn read_rmm_csv(mut input: impl BufRead) -> Result<Trace> {
    let mut sink = TraceSink::new(NAME, "line");
    let mut buf = String::new();
    let mut line_no = 0u64;
    let mut seen_content = false;
    loop {
        line_no += 1;
        if !sink.read_line(&mut input, &mut buf, line_no, "CSV")? {
            break;
        }
        let text = buf.trim().trim_start_matches('\u{feff}');
        if text.is_empty() {
            continue;
        }
        let fields: Vec<&str> = text.split(',').map(str::trim).collect();
        if !seen_content {
            seen_content = true;
            if fields[0].eq_ignore_ascii_case("thread") {
                if fields.len() != COLUMNS {
                    return Err(CliError::line(
                        NAME,
                        line_no,
                        format!(
                            "header has {} columns, expected Thread,Time,Action,Pointer,Size,Stream",
                            fields.len()
                        ),
                    ));
                }
                continue;
            }
        }
        if fields.len() != COLUMNS {
            return Err(CliError::line(
                NAME,
                line_no,
                format!(
                    "expected {COLUMNS} columns (Thread,Time,Action,Pointer,Size,Stream), found {}; \
                     the line may be truncated",
                    fields.len()
                ),
            ));
        }
        let action = fields[2];
        match action {
            "allocate" => {
                let id = parse_number(fields[3], "pointer", line_no)?;
                let size = parse_number(fields[4], "size", line_no)?;
                let stream = parse_number(fields[5], "stream", line_no)?;
                sink.alloc(line_no, id, size, stream)?;
            }
            "free" | "deallocate" => {
                let id = parse_number(fields[3], "pointer", line_no)?;
                sink.free(line_no, id);
            }
            "allocate failure" => {
                parse_number(fields[4], "size", line_no)?;
                sink.source_failed_alloc();
            }
            // A free the upstream refused changed nothing; gpumem's own
            // logging adaptor writes these.
            "free failure" => sink.skip(),
            other => {
                return Err(CliError::line(
                    NAME,
                    line_no,
                    format!(
                        "unknown action {other:?}; expected allocate, free, allocate failure or free failure"
                    ),
                ));
            }
        }
    }
    Ok(sink.finish())
}
