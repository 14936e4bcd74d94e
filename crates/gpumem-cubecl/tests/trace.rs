//! `MemoryManagementOptions::trace` (and `GPUMEM_TRACE`) record the
//! reserves and frees as a gpumem trace: the header first, one `alloc` per
//! reserve with a process-unique id, its size, the manager's stream and
//! tag, and each `free` before the next `alloc` that follows it.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use common::*;
use cubecl_server::logging::ServerLogger;
use cubecl_server::memory_management::{Cleanup, MemoryConfiguration, PageUpdate};
use gpumem_cubecl::{MemoryManagement, MemoryManagementOptions};

fn traced(name: &str, path: &PathBuf) -> MemoryManagement<HostStorage> {
    MemoryManagement::from_configuration(
        HostStorage::default(),
        &PROPS,
        MemoryConfiguration::default(),
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::new(name).trace(path),
    )
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("gpumem-cubecl-{}-{name}.jsonl", std::process::id()))
}

/// The field `key` of a trace line, as written (numbers bare, strings quoted).
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(&format!("\"{key}\":"))? + key.len() + 3;
    let rest = &line[start..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Some(&rest[..end])
}

#[test]
fn reserves_and_drops_are_written_as_allocs_and_frees_in_order() {
    let path = temp("order");
    {
        let mut memory = traced("Main GPU Memory", &path);
        let a = memory
            .reserve(1000, PageUpdate::Allow, &mut graph())
            .unwrap();
        let b = memory
            .reserve(2000, PageUpdate::Allow, &mut graph())
            .unwrap();
        drop(a);
        let c = memory
            .reserve(3000, PageUpdate::Allow, &mut graph())
            .unwrap();
        drop((b, c));
        memory.cleanup(Cleanup::Explicit, &mut graph());
    }
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).ok();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], r#"{"format":"gpumem-trace","version":1}"#);
    let ops: Vec<&str> = lines[1..].iter().map(|l| field(l, "op").unwrap()).collect();
    assert_eq!(
        ops[..4],
        ["\"alloc\"", "\"alloc\"", "\"free\"", "\"alloc\""],
        "{text}"
    );
    let ids: Vec<u64> = lines[1..]
        .iter()
        .map(|l| field(l, "id").unwrap().parse().unwrap())
        .collect();
    assert_eq!(ids[2], ids[0], "the first allocation is the one freed");
    assert!(ids[0] != ids[1] && ids[1] != ids[3] && ids[0] != ids[3]);
    let sizes: Vec<&str> = [1, 2, 4]
        .iter()
        .map(|&i| field(lines[i], "size").unwrap())
        .collect();
    assert_eq!(sizes, ["1000", "2000", "3000"]);
    assert_eq!(field(lines[1], "tag"), Some("\"Main GPU Memory/dynamic\""));
    assert_eq!(field(lines[1], "stream"), field(lines[4], "stream"));
    // The later frees, once the handles dropped, name b and c.
    let mut later: Vec<u64> = ids[4..].to_vec();
    later.sort_unstable();
    let mut expected = vec![ids[1], ids[3]];
    expected.sort_unstable();
    assert_eq!(later, expected, "{text}");
}

#[test]
fn two_managers_tracing_to_one_file_are_two_streams_of_it() {
    let path = temp("streams");
    {
        let mut first = traced("one", &path);
        let mut second = traced("two", &path);
        let _a = first.reserve(64, PageUpdate::Allow, &mut graph()).unwrap();
        let _b = second.reserve(64, PageUpdate::Allow, &mut graph()).unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).ok();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(field(lines[1], "tag"), Some("\"one/dynamic\""));
    assert_eq!(field(lines[2], "tag"), Some("\"two/dynamic\""));
    assert_ne!(field(lines[1], "stream"), field(lines[2], "stream"));
    assert_ne!(field(lines[1], "id"), field(lines[2], "id"));
}

#[test]
fn an_unwritable_trace_path_leaves_reserving_as_it_was() {
    let path = PathBuf::from("/nonexistent-dir-gpumem/trace.jsonl");
    let mut memory = traced("test", &path);
    let handle = memory
        .reserve(4096, PageUpdate::Allow, &mut graph())
        .unwrap();
    drop(handle);
    memory
        .reserve(4096, PageUpdate::Allow, &mut graph())
        .unwrap();
}
