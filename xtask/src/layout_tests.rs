use super::graph::strongly_connected;
use super::paths::{module_path, referenced_modules, root_reexports};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn modules(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn tarjan_finds_a_circle_of_three_and_leaves_a_tail_alone() {
    let nodes = names(&["a", "b", "c", "d"]);
    let edge = |a: &str, b: &str| (a.to_string(), b.to_string());
    let edges = [
        edge("a", "b"),
        edge("b", "c"),
        edge("c", "a"),
        edge("c", "d"),
    ];
    let mut components: Vec<Vec<String>> = strongly_connected(&nodes, &edges)
        .into_iter()
        .map(|mut c| {
            c.sort();
            c
        })
        .collect();
    components.sort();
    assert_eq!(components, [names(&["a", "b", "c"]), names(&["d"])]);
}

#[test]
fn files_map_to_module_paths_with_test_files_under_their_module() {
    assert_eq!(module_path(Path::new("lib.rs")), Vec::<String>::new());
    assert_eq!(module_path(Path::new("a/mod.rs")), names(&["a"]));
    assert_eq!(module_path(Path::new("a/b.rs")), names(&["a", "b"]));
    assert_eq!(module_path(Path::new("a_tests.rs")), names(&["a", "tests"]));
}

#[test]
fn use_trees_code_paths_super_and_root_reexports_are_all_seen() {
    let all = modules(&["a", "b", "c", "d", "e", "f"]);
    let lib = "pub use e::Engine;\npub use crate::f::{Frame, other::Thing};\nmod a;";
    let reexports: BTreeMap<String, String> = root_reexports(lib, &all).into_iter().collect();
    assert_eq!(reexports.get("Engine").map(String::as_str), Some("e"));
    assert_eq!(reexports.get("Thing").map(String::as_str), Some("f"));
    let text = r#"
        //! crate::c in a doc comment is not a path
        use crate::{b::X, Engine};
        use super::super::d::Y;
        fn f<'a>(s: &'a str) -> char { let _ = "crate::c"; 'x' }
        fn g() { crate::Frame::new(); }
        mod tests { use super::*; }
    "#;
    let found = referenced_modules(text, &names(&["a", "inner"]), &all, &reexports);
    // `a` is the file's own module (the inline tests' `super`).
    assert_eq!(found, modules(&["a", "b", "d", "e", "f"]));
}

#[test]
fn the_check_reports_a_long_file_and_a_circle_in_a_scratch_crate() {
    let root = std::env::temp_dir().join(format!("xtask-layout-{}", std::process::id()));
    let src = root.join("crates/demo/src");
    std::fs::create_dir_all(src.join("b")).unwrap();
    std::fs::write(root.join("crates/demo/Cargo.toml"), "").unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\npub use b::B;\n").unwrap();
    std::fs::write(src.join("a.rs"), "use crate::B;\n").unwrap();
    std::fs::write(src.join("b/mod.rs"), "pub struct B;\nmod inner;\n").unwrap();
    std::fs::write(src.join("b/inner.rs"), "use crate::a;\n").unwrap();
    std::fs::write(src.join("a_tests.rs"), "x\n".repeat(400)).unwrap();
    std::fs::write(src.join("long.rs"), "\n".repeat(301)).unwrap();
    let found = super::check_crate(&root, &root.join("crates/demo")).unwrap();
    std::fs::remove_dir_all(&root).unwrap();
    assert_eq!(
        found.long_files,
        [("crates/demo/src/long.rs".to_string(), 301)]
    );
    assert_eq!(found.circles.len(), 1);
    assert_eq!(found.circles[0].modules, names(&["a", "b"]));
    assert_eq!(found.circles[0].edges.len(), 2);
}
