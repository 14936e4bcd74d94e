//! The `gpumem` binary's exit codes and messages at the edges:
//! failed allocations, closed pipes, empty input, file names given to
//! `--config`, fractional device sizes, and how ops and streams are named.

mod common;

use common::*;

use std::io::Read;
use std::process::{Command, Stdio};

fn write(name: &str, bytes: &[u8]) -> String {
    let path = scratch(name);
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_string()
}

fn error_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("gpumem: error"))
        .collect()
}

/// devlog peaks at 128 MiB live; 0.1 GiB (102.4 MiB) cannot hold it.
const TOO_SMALL: &[&str] = &[
    "replay",
    "--workload",
    "devlog",
    "--backend",
    "system",
    "--device-gib",
    "0.1",
];

#[test]
fn a_replay_with_failed_allocations_prints_its_report_then_exits_1_with_a_one_line_summary() {
    let out = gpumem(TOO_SMALL);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stdout.contains("failed allocs"),
        "the report is printed first: {stdout}"
    );
    let errors = error_lines(&stderr);
    assert_eq!(errors.len(), 1, "{stderr}");
    let line = errors[0];
    assert!(
        line.contains(" of ") && line.contains("allocations failed (first: op "),
        "{line}"
    );
    assert!(line.contains("--allow-failures"), "{line}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    // The JSON report is still whole on stdout.
    let out = gpumem(&[TOO_SMALL, &["--json"]].concat());
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let failed = v["failed_allocs"].as_u64().unwrap();
    assert!(failed > 0);
    let line = text(&out.stderr);
    assert!(
        line.starts_with(&format!("gpumem: error: {failed} of ")),
        "{line}"
    );
}

#[test]
fn allow_failures_replays_an_over_sized_trace_with_exit_0() {
    let out = gpumem(&[TOO_SMALL, &["--json", "--allow-failures"]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["failed_allocs"].as_u64().unwrap() > 0);
    assert!(error_lines(&text(&out.stderr)).is_empty());
}

#[test]
fn device_gib_takes_fractions_and_refuses_zero_and_non_numbers() {
    // 0.125 GiB is exactly devlog's 128 MiB peak on the system baseline.
    let fits = gpumem(&[
        "replay",
        "--workload",
        "devlog",
        "--backend",
        "system",
        "--device-gib",
        "0.125",
        "--json",
    ]);
    assert!(fits.status.success(), "{}", text(&fits.stderr));
    let v: serde_json::Value = serde_json::from_slice(&fits.stdout).unwrap();
    assert_eq!(v["failed_allocs"], 0);
    let big = gpumem(&[
        "replay",
        "--workload",
        "devlog",
        "--device-gib",
        "23.5",
        "--json",
    ]);
    assert!(big.status.success(), "{}", text(&big.stderr));
    for bad in ["0", "0.0000000001", "nan", "inf", "2000000"] {
        let out = gpumem(&["replay", "--workload", "devlog", "--device-gib", bad]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{bad}: {stderr}");
        assert!(stderr.contains("--device-gib"), "{bad}: {stderr}");
    }
    let plan = gpumem(&["plan", "--workload", "devlog", "--device-gib", "1.5"]);
    assert!(plan.status.success(), "{}", text(&plan.stderr));
}

#[test]
fn a_config_value_that_looks_like_a_file_and_is_missing_is_file_not_found() {
    for value in [
        "nonexistent.json",
        "plans/layout.txt",
        "./layout",
        "dir/plan:1",
    ] {
        let out = gpumem(&["replay", "--workload", "devlog", "--config", value]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{value}: {stderr}");
        assert!(
            stderr.contains(&format!("file not found: {value}")),
            "{value}: {stderr}"
        );
        assert!(!stderr.contains("kind:"), "{value}: {stderr}");
    }
    // One word that is neither a file nor a layout: both are said.
    let out = gpumem(&["replay", "--workload", "devlog", "--config", "subslices"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("file not found: subslices; nor is it a layout"),
        "{stderr}"
    );
    // Layouts with `/` in them are still layouts.
    let out = gpumem(&[
        "replay",
        "--workload",
        "devlog",
        "--config",
        "sliced:8MiB/64KiB,exclusive:1GiB",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn a_json_layout_file_holding_an_array_is_a_clear_error() {
    let path = write("array.json", b"[\"sub-slices\"]");
    let out = gpumem(&["replay", "--workload", "devlog", "--config", &path]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("holds a JSON array, not an object with a \"config\" string"),
        "{stderr}"
    );
    assert!(!stderr.contains("variant"), "{stderr}");
}

#[test]
fn layout_files_and_text_traces_may_start_with_a_byte_order_mark() {
    let layout = write(
        "bom-layout.txt",
        b"\xef\xbb\xbfsliced:8MiB/64KiB,exclusive:1GiB\n",
    );
    let plan = write(
        "bom-plan.json",
        b"\xef\xbb\xbf{\"config\":\"sliced:8MiB/64KiB,exclusive:1GiB\"}",
    );
    let jsonl = write(
        "bom.jsonl",
        b"\xef\xbb\xbf{\"format\":\"gpumem-trace\",\"version\":1}\n{\"op\":\"alloc\",\"id\":1,\"size\":8}\n",
    );
    let csv = write(
        "bom.csv",
        b"\xef\xbb\xbfThread,Time,Action,Pointer,Size,Stream\n1,0.1,allocate,0x10,8,0x0\n",
    );
    let undetected = write(
        "bom-trace",
        b"\xef\xbb\xbf{\"op\":\"alloc\",\"id\":1,\"size\":8}\n",
    );
    for args in [
        vec!["replay", "--workload", "devlog", "--config", &layout],
        vec!["replay", "--workload", "devlog", "--config", &plan],
        vec!["replay", &jsonl, "--json"],
        vec!["replay", &csv, "--json"],
        vec!["replay", &undetected, "--json"],
    ] {
        let out = gpumem(&args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    }
}

/// Starts `gpumem args` with its stdout a pipe whose reader is already
/// gone, and returns its status and stderr.
fn into_a_closed_pipe(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpumem"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (child.wait().unwrap().code(), stderr)
}

#[test]
fn output_into_a_closed_pipe_ends_quietly_with_exit_0() {
    for args in [
        &["replay", "--workload", "devlog"][..],
        &["replay", "--workload", "devlog", "--json"],
        &[
            "record",
            "--workload",
            "serving",
            "--scale",
            "0.05",
            "-o",
            "-",
        ],
    ] {
        let (code, stderr) = into_a_closed_pipe(args);
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("error"), "{args:?}: {stderr}");
        assert!(!stderr.to_lowercase().contains("broken pipe"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn record_to_dash_writes_the_trace_to_stdout() {
    let out = gpumem(&[
        "record",
        "--workload",
        "devlog",
        "--scale",
        "0.1",
        "-o",
        "-",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let trace = gpumem_replay::trace::read_jsonl(out.stdout.as_slice()).unwrap();
    assert!(!trace.events.is_empty());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("wrote {} events", trace.events.len())),
        "the note goes to stderr: {stderr}"
    );
    assert!(stderr.contains("to stdout"), "{stderr}");
}

#[test]
fn an_empty_trace_or_a_header_only_csv_replays_with_a_warning_and_exit_0() {
    for (name, bytes) in [
        ("empty.jsonl", &b""[..]),
        ("empty-no-extension", b""),
        ("blank.jsonl", b"\n\n"),
        (
            "header-only.jsonl",
            b"{\"format\":\"gpumem-trace\",\"version\":1}\n",
        ),
        (
            "header-only.csv",
            b"Thread,Time,Action,Pointer,Size,Stream\n",
        ),
        ("empty.pkl", b""),
    ] {
        let path = write(name, bytes);
        let out = gpumem(&["replay", &path, "--json"]);
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{name}: {stderr}");
        assert!(
            stderr.starts_with("warning: ") && stderr.contains("holds no events"),
            "{name}: {stderr}"
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["ops"], 0, "{name}");
    }
}

#[test]
fn ops_and_locations_count_from_1_and_say_what_they_count() {
    // Line 1 header, line 2 an unknown free, line 3 op 1, line 4 op 2 (fails).
    let path = write(
        "counted.jsonl",
        b"{\"format\":\"gpumem-trace\",\"version\":1}\n\
          {\"op\":\"free\",\"id\":9}\n\
          {\"op\":\"alloc\",\"id\":1,\"size\":100}\n\
          {\"op\":\"alloc\",\"id\":2,\"size\":1099511627776}\n",
    );
    let out = gpumem(&["replay", &path, "--backend", "system", "--device-gib", "1"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("(first: id 9 at line 2)"),
        "an unknown free names its line: {stderr}"
    );
    assert!(
        stderr.contains("(first: op 2: 1099511627776 bytes"),
        "a failure names its op, counted from 1: {stderr}"
    );
    assert!(
        text(&out.stdout).contains("first: op 2:"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn stream_ids_print_in_hex_as_cuda_logs_show_them() {
    let path = write(
        "streams.csv",
        b"Thread,Time,Action,Pointer,Size,Stream\n\
          1,0.1,allocate,0x10,4096,0x7f8a38001020\n\
          1,0.2,allocate,0x20,4096,0x0\n",
    );
    let out = gpumem(&["replay", &path]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains("stream 0x7f8a38001020: 1 allocs"),
        "{stdout}"
    );
    assert!(stdout.contains("stream 0x0: 1 allocs"), "{stdout}");
}
