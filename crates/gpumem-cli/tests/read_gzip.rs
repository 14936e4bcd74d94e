//! Gzip-compressed traces: read as the plain file would be, recognized by
//! name or by magic bytes, and corrupt or truncated data is a typed
//! [`CliError::Gzip`], never a panic or a misleading parse error.

mod common;

use common::*;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use flate2::Compression;
use flate2::write::GzEncoder;
use gpumem_cli::CliError;
use gpumem_replay::trace::{Event, TraceFormat, read_jsonl, read_trace_file};

const TRACE: &str = r#"{"format":"gpumem-trace","version":1}
{"op":"alloc","id":1,"size":4096}
{"op":"alloc","id":2,"size":1048576,"stream":1}
{"op":"free","id":1}
{"op":"alloc","id":1,"size":512}
{"op":"free","id":2}
{"op":"free","id":1}
"#;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let path = scratch(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn plain_events() -> Vec<Event> {
    read_jsonl(TRACE.as_bytes()).unwrap().events
}

fn assert_gzip_error(path: &Path) -> String {
    match read_trace_file(path, TraceFormat::Auto) {
        Err(err @ CliError::Gzip { .. }) => {
            let message = err.to_string();
            assert!(
                message.contains("cannot decompress") && message.contains("corrupt"),
                "{message}"
            );
            message
        }
        other => panic!(
            "expected a gzip error for {}, got {other:?}",
            path.display()
        ),
    }
}

#[test]
fn a_jsonl_gz_trace_reads_the_same_events_as_the_plain_file() {
    let path = write("small.jsonl.gz", &gzip(TRACE.as_bytes()));
    let trace = read_trace_file(&path, TraceFormat::Auto).unwrap();
    assert_eq!(trace.events, plain_events());
    assert_eq!(trace.stats.records, 7);
    assert_eq!(trace.stats.unknown_frees, 0);
}

#[test]
fn gzip_is_recognized_by_its_magic_bytes_when_the_name_says_nothing() {
    let path = write("no-extension", &gzip(TRACE.as_bytes()));
    let trace = read_trace_file(&path, TraceFormat::Auto).unwrap();
    assert_eq!(trace.events, plain_events());
}

#[test]
fn an_explicit_format_still_decompresses_a_gzip_file() {
    let path = write("explicit.gz", &gzip(TRACE.as_bytes()));
    let trace = read_trace_file(&path, TraceFormat::Jsonl).unwrap();
    assert_eq!(trace.events, plain_events());
}

#[test]
fn a_gzip_file_of_concatenated_members_reads_as_one_trace() {
    let (first, second) = TRACE.split_at(TRACE.find("{\"op\":\"free\"").unwrap());
    let mut bytes = gzip(first.as_bytes());
    bytes.extend(gzip(second.as_bytes()));
    let path = write("members.jsonl.gz", &bytes);
    let trace = read_trace_file(&path, TraceFormat::Auto).unwrap();
    assert_eq!(trace.events, plain_events());
}

#[test]
fn a_gzip_compressed_pytorch_snapshot_reads_like_the_plain_one() {
    let fixture = library_fixture("snapshot.pickle");
    let plain = read_trace_file(&fixture, TraceFormat::Auto).unwrap();
    let path = write(
        "snapshot.pickle.gz",
        &gzip(&std::fs::read(&fixture).unwrap()),
    );
    let packed = read_trace_file(&path, TraceFormat::Auto).unwrap();
    assert_eq!(packed, plain);
}

#[test]
fn a_truncated_gzip_trace_is_a_gzip_error_not_a_panic() {
    let bytes = gzip(TRACE.as_bytes());
    for keep in [1, 2, 10, bytes.len() / 2, bytes.len() - 4, bytes.len() - 1] {
        let path = write(&format!("truncated-{keep}.jsonl.gz"), &bytes[..keep]);
        assert_gzip_error(&path);
    }
}

#[test]
fn a_corrupt_gzip_trace_is_a_gzip_error_even_where_the_garbage_would_parse_first() {
    let bytes = gzip(TRACE.as_bytes());
    // Header (10 bytes) .. trailer (8 bytes): every flipped byte of the
    // deflate data or the checksum must be caught, whatever it decodes to.
    for at in 10..bytes.len() {
        let mut bad = bytes.clone();
        bad[at] ^= 0x55;
        let path = write("flipped.jsonl.gz", &bad);
        assert_gzip_error(&path);
    }
}

#[test]
fn a_gz_name_on_data_that_is_not_gzip_is_a_gzip_error() {
    let path = write("plain.jsonl.gz", TRACE.as_bytes());
    assert_gzip_error(&path);
    let empty = write("empty.jsonl.gz", b"");
    assert_gzip_error(&empty);
}

#[test]
fn the_replay_command_reads_a_gz_trace_and_fails_cleanly_on_a_corrupt_one() {
    let good = write("cli.jsonl.gz", &gzip(TRACE.as_bytes()));
    let out = Command::new(env!("CARGO_BIN_EXE_gpumem"))
        .args(["replay", "--json", good.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ops"], 6);
    assert_eq!(v["peak_live_bytes"], 4096 + 1048576);

    let bytes = gzip(TRACE.as_bytes());
    let bad = write("cli-bad.jsonl.gz", &bytes[..bytes.len() / 2]);
    let out = Command::new(env!("CARGO_BIN_EXE_gpumem"))
        .args(["replay", bad.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot decompress"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn the_shipped_model_traces_read_whole_with_every_free_matched() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".jsonl.gz") {
            continue;
        }
        let trace = read_trace_file(&path, TraceFormat::Auto)
            .unwrap_or_else(|e| panic!("{name} does not read: {e}"));
        let allocs = trace
            .events
            .iter()
            .filter(|e| matches!(e, Event::Alloc { .. }))
            .count();
        assert!(allocs > 10_000, "{name}: only {allocs} allocations");
        assert_eq!(trace.stats.unknown_frees, 0, "{name}: {:?}", trace.stats);
        names.push(name);
    }
    names.sort();
    assert_eq!(
        names,
        [
            "bert-infer.jsonl.gz",
            "burn-lm-train.jsonl.gz",
            "gpt2-generate.jsonl.gz",
            "gpt2-train.jsonl.gz",
            "resnet18-train.jsonl.gz"
        ]
    );
}
