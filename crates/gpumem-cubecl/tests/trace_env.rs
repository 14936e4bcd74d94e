//! `GPUMEM_TRACE=path` traces every manager built while it is set, without
//! any change to CubeCL's options (its own test binary: it sets the
//! process environment).

mod common;

use common::*;
use cubecl_server::memory_management::PageUpdate;

#[test]
fn gpumem_trace_in_the_environment_traces_a_manager_built_with_cubecl_s_options() {
    let path = std::env::temp_dir().join(format!("gpumem-cubecl-env-{}.jsonl", std::process::id()));
    // SAFETY: the only test of this binary, so no other thread reads the
    // environment while it is written.
    unsafe { std::env::set_var("GPUMEM_TRACE", &path) };
    {
        let mut memory = adaptive();
        memory
            .reserve(256, PageUpdate::Allow, &mut graph())
            .unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).ok();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], r#"{"format":"gpumem-trace","version":1}"#);
    assert!(
        lines[1].starts_with(r#"{"op":"alloc","id":"#)
            && lines[1].ends_with(r#","size":256,"stream":0,"tag":"test/dynamic"}"#),
        "{text}"
    );
}
