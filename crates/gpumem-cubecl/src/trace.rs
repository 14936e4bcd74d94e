//! Recording what the engine was asked to do as a gpumem trace
//! (`GPUMEM_TRACE=path`, or [`MemoryManagementOptions::trace`](crate::MemoryManagementOptions::trace)),
//! for `gpumem replay` / `gpumem compare` on a CubeCL program's own
//! allocations.
//!
//! Every manager of the process tracing to one path writes to one shared
//! writer (a `Mutex`, the file opened once, the header line first); each
//! manager is its own `stream`, numbered in creation order. Allocation ids
//! are unique across the process. A write error is logged once and stops
//! that file's tracing: it never fails an allocation.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// The environment variable naming the trace file.
pub(crate) const TRACE_VAR: &str = "GPUMEM_TRACE";

/// Lines written between flushes.
const FLUSH_EVERY: u64 = 256;

/// The first line of every trace.
const HEADER: &str = r#"{"format":"gpumem-trace","version":1}"#;

/// Allocation ids, unique across the process (0 is "not traced").
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The open trace files, by path: managers built while one is open share it.
static SINKS: OnceLock<Mutex<HashMap<PathBuf, Weak<Sink>>>> = OnceLock::new();

/// One trace file.
struct Sink {
    path: PathBuf,
    out: Mutex<SinkState>,
    next_stream: AtomicU64,
}

struct SinkState {
    /// `None` once a write failed: tracing to this file stopped.
    writer: Option<BufWriter<File>>,
    lines: u64,
}

impl Sink {
    fn open(path: &Path) -> Option<Arc<Sink>> {
        let sinks = SINKS.get_or_init(Default::default);
        let mut sinks = sinks.lock().unwrap_or_else(|poison| poison.into_inner());
        if let Some(sink) = sinks.get(path).and_then(Weak::upgrade) {
            return Some(sink);
        }
        let mut writer = match File::create(path) {
            Ok(file) => BufWriter::new(file),
            Err(error) => {
                log::warn!("gpumem trace: cannot create {}: {error}", path.display());
                return None;
            }
        };
        if let Err(error) = writeln!(writer, "{HEADER}") {
            log::warn!("gpumem trace: cannot write {}: {error}", path.display());
            return None;
        }
        let sink = Arc::new(Sink {
            path: path.to_path_buf(),
            out: Mutex::new(SinkState {
                writer: Some(writer),
                lines: 1,
            }),
            next_stream: AtomicU64::new(0),
        });
        sinks.insert(path.to_path_buf(), Arc::downgrade(&sink));
        Some(sink)
    }

    /// Write one line (without its newline); on error, log once and stop.
    fn line(&self, line: std::fmt::Arguments<'_>) {
        let mut state = self.out.lock().unwrap_or_else(|poison| poison.into_inner());
        let Some(writer) = state.writer.as_mut() else {
            return;
        };
        let mut result = writer
            .write_fmt(line)
            .and_then(|()| writer.write_all(b"\n"));
        state.lines += 1;
        if result.is_ok() && state.lines.is_multiple_of(FLUSH_EVERY) {
            result = state.writer.as_mut().map_or(Ok(()), Write::flush);
        }
        if let Err(error) = result {
            self.fail(&mut state, &error);
        }
    }

    fn flush(&self) {
        let mut state = self.out.lock().unwrap_or_else(|poison| poison.into_inner());
        if let Some(Err(error)) = state.writer.as_mut().map(Write::flush) {
            self.fail(&mut state, &error);
        }
    }

    fn fail(&self, state: &mut SinkState, error: &std::io::Error) {
        log::error!(
            "gpumem trace: writing {} failed ({error}); tracing stopped",
            self.path.display()
        );
        state.writer = None;
    }
}

/// One manager's view of its trace file.
pub(crate) struct Tracer {
    sink: Arc<Sink>,
    stream: u64,
    /// `"<name>/dynamic"` and `"<name>/persistent"`, JSON-quoted.
    tag_dynamic: String,
    tag_persistent: String,
}

impl Tracer {
    /// The tracer for a manager named `name`: to `path` if given, else to
    /// `GPUMEM_TRACE` if set; `None` when neither, or the file cannot be
    /// created (logged).
    pub(crate) fn new(name: &str, path: Option<&Path>) -> Option<Tracer> {
        let from_env = std::env::var_os(TRACE_VAR).filter(|path| !path.is_empty());
        let path = path
            .map(Path::to_path_buf)
            .or(from_env.map(PathBuf::from))?;
        let sink = Sink::open(&path)?;
        let stream = sink.next_stream.fetch_add(1, Ordering::Relaxed);
        Some(Tracer {
            sink,
            stream,
            tag_dynamic: quote(&format!("{name}/dynamic")),
            tag_persistent: quote(&format!("{name}/persistent")),
        })
    }

    /// Record an allocation of `size` bytes; returns its id.
    pub(crate) fn alloc(&self, size: u64, persistent: bool) -> u64 {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let tag = if persistent {
            &self.tag_persistent
        } else {
            &self.tag_dynamic
        };
        let stream = self.stream;
        self.sink.line(format_args!(
            r#"{{"op":"alloc","id":{id},"size":{size},"stream":{stream},"tag":{tag}}}"#
        ));
        id
    }

    /// Record that allocation `id` was given back.
    pub(crate) fn free(&self, id: u64) {
        self.sink.line(format_args!(r#"{{"op":"free","id":{id}}}"#));
    }

    /// Record a change of mode.
    pub(crate) fn mode(&self, persistent: bool) {
        let mode = if persistent { "persistent" } else { "auto" };
        self.sink
            .line(format_args!(r#"{{"op":"mode","mode":"{mode}"}}"#));
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.sink.flush();
    }
}

/// `text` as a JSON string.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
