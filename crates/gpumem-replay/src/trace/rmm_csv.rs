//! RMM's `logging_resource_adaptor` CSV: `Thread,Time,Action,Pointer,Size,Stream`.
//!
//! A header may list the columns in another order (they are mapped by
//! name). Actions are `allocate`, `free` (older logs and docs also say
//! `deallocate`) and `allocate failure`. Pointers become ids: an address
//! names an allocation until it is freed, exactly as in gpumem's model.
//! Threads are not replayed (RMM's replay benchmark uses them only to
//! interleave threads, which a single-threaded replay already does in
//! global log order); times are kept, in µs from the first line, for
//! `--x time` (`HH:MM:SS.ffffff` as RMM writes, or seconds since the epoch
//! as gpumem's logging adaptor writes; a time that reads as neither is
//! left out, not an error). Failed allocations of the recorded run are counted and
//! not replayed: they held no memory; neither are `free failure` lines
//! (written by gpumem's own logging adaptor), which changed nothing.

use std::io::BufRead;

use super::event::{Trace, oversized};
use super::sink::TraceSink;
use crate::error::{ReplayError, Result};

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
        if what == "size" && !field.is_empty() && field.bytes().all(|b| b.is_ascii_digit()) {
            return ReplayError::line(NAME, line, oversized(field));
        }
        let hint = if field.starts_with('-') {
            " (negative values are not allowed)"
        } else {
            ""
        };
        ReplayError::line(
            NAME,
            line,
            format!("{what} {field:?} is not a non-negative integer or 0x-hex number that fits in 64 bits{hint}"),
        )
    })
}

/// Where the fields of a line sit: RMM's order unless a header says otherwise.
struct Columns {
    /// Fields on every line.
    count: usize,
    action: usize,
    pointer: usize,
    size: usize,
    /// Without a `Stream` column every event is on stream 0.
    stream: Option<usize>,
    /// Without a `Time` column the trace has no times.
    time: Option<usize>,
    /// The column names, for messages.
    names: String,
}

impl Columns {
    /// `Thread,Time,Action,Pointer,Size,Stream`: what RMM writes.
    fn rmm() -> Self {
        Columns {
            count: COLUMNS,
            action: 2,
            pointer: 3,
            size: 4,
            stream: Some(5),
            time: Some(1),
            names: RMM_HEADER.to_string(),
        }
    }

    /// The columns a header names, in any order (names in any case; columns
    /// other than Thread, Time, Action, Pointer, Size and Stream are read
    /// past). Action, Pointer and Size are required.
    fn from_header(fields: &[&str], line: u64) -> Result<Self> {
        let find = |name: &str| -> Result<Option<usize>> {
            let mut at = fields
                .iter()
                .enumerate()
                .filter(|(_, f)| f.eq_ignore_ascii_case(name));
            match (at.next(), at.next()) {
                (Some((i, _)), None) => Ok(Some(i)),
                (None, _) => Ok(None),
                (Some(_), Some(_)) => Err(ReplayError::line(
                    NAME,
                    line,
                    format!("header names the {name} column twice"),
                )),
            }
        };
        let require = |name: &str| -> Result<usize> {
            find(name)?.ok_or_else(|| {
                ReplayError::line(
                    NAME,
                    line,
                    format!(
                        "header {:?} has no {name} column; expected the columns \
                         {RMM_HEADER} (in any order)",
                        fields.join(",")
                    ),
                )
            })
        };
        Ok(Columns {
            count: fields.len(),
            action: require("Action")?,
            pointer: require("Pointer")?,
            size: require("Size")?,
            stream: find("Stream")?,
            time: find("Time")?,
            names: fields.join(","),
        })
    }
}

/// A `Time` field in µs: `HH:MM:SS.ffffff` (time of day) or seconds with
/// a fraction (since the epoch); `None` for anything else.
fn parse_time_us(field: &str) -> Option<u64> {
    let (whole, frac) = field.split_once('.').unwrap_or((field, ""));
    let micros: u64 = match frac.len() {
        0 => 0,
        n if frac.bytes().all(|b| b.is_ascii_digit()) => {
            let digits = &frac[..n.min(6)];
            digits.parse::<u64>().ok()? * 10u64.pow(6 - digits.len() as u32)
        }
        _ => return None,
    };
    let seconds = match whole.split(':').collect::<Vec<_>>().as_slice() {
        [h, m, s] => {
            h.parse::<u64>().ok()? * 3600 + m.parse::<u64>().ok()? * 60 + s.parse::<u64>().ok()?
        }
        [s] => s.parse::<u64>().ok()?,
        _ => return None,
    };
    seconds.checked_mul(1_000_000)?.checked_add(micros)
}

/// RMM's header.
const RMM_HEADER: &str = "Thread,Time,Action,Pointer,Size,Stream";

/// Whether a first line is a header: it names an `Action` column (a log
/// line's action is `allocate`, `free`, …, never `Action`).
fn is_header(fields: &[&str]) -> bool {
    fields.iter().any(|f| f.eq_ignore_ascii_case("action"))
        || fields
            .first()
            .is_some_and(|f| f.eq_ignore_ascii_case("thread"))
}

/// Reads an RMM logging-adaptor CSV log. Errors name the 1-based line.
/// A header, if present, decides the column order.
pub fn read_rmm_csv(mut input: impl BufRead) -> Result<Trace> {
    let mut sink = TraceSink::new(NAME, "line");
    let mut buf = String::new();
    let mut line_no = 0u64;
    let mut columns: Option<Columns> = None;
    let mut first_time: Option<u64> = None;
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
        let columns = match &columns {
            Some(columns) => columns,
            None if is_header(&fields) => {
                columns = Some(Columns::from_header(&fields, line_no)?);
                continue;
            }
            None => columns.insert(Columns::rmm()),
        };
        if fields.len() != columns.count {
            return Err(ReplayError::line(
                NAME,
                line_no,
                format!(
                    "expected {} columns ({}), found {}; the line may be truncated",
                    columns.count,
                    columns.names,
                    fields.len()
                ),
            ));
        }
        let action = fields[columns.action];
        let before = sink.len();
        match action {
            "allocate" => {
                let id = parse_number(fields[columns.pointer], "pointer", line_no)?;
                let size = parse_number(fields[columns.size], "size", line_no)?;
                let stream = match columns.stream {
                    Some(at) => parse_number(fields[at], "stream", line_no)?,
                    None => 0,
                };
                sink.alloc(line_no, id, size, stream)?;
            }
            "free" | "deallocate" => {
                let id = parse_number(fields[columns.pointer], "pointer", line_no)?;
                sink.free(line_no, id);
            }
            "allocate failure" => {
                parse_number(fields[columns.size], "size", line_no)?;
                sink.source_failed_alloc();
            }
            // A free the upstream refused changed nothing; gpumem's own
            // logging adaptor writes these.
            "free failure" => sink.skip(),
            other => {
                return Err(ReplayError::line(
                    NAME,
                    line_no,
                    format!(
                        "unknown action {other:?}; expected allocate, free, allocate failure or free failure"
                    ),
                ));
            }
        }
        if sink.len() > before
            && let Some(t) = columns.time.and_then(|at| parse_time_us(fields[at]))
        {
            let base = *first_time.get_or_insert(t);
            sink.time(t.saturating_sub(base));
        }
    }
    Ok(sink.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmm_and_epoch_times_read_as_microseconds_and_others_as_none() {
        assert_eq!(parse_time_us("12:00:01.000250"), Some(43_201_000_250));
        assert_eq!(
            parse_time_us("1700000000.123456789"),
            Some(1_700_000_000_123_456)
        );
        assert_eq!(parse_time_us("5"), Some(5_000_000));
        assert_eq!(parse_time_us("noon"), None);
        assert_eq!(parse_time_us("1.2e3"), None);
    }

    #[test]
    fn times_count_from_the_first_line() {
        let csv = "Thread,Time,Action,Pointer,Size,Stream\n\
                   1,12:00:00.000100,allocate,0x10,8,0\n\
                   1,12:00:00.000350,free,0x10,8,0\n";
        let t = read_rmm_csv(csv.as_bytes()).unwrap();
        assert_eq!(
            (t.origins.time_us(0), t.origins.time_us(1)),
            (Some(0), Some(250))
        );
    }
}
