use super::graph::strongly_connected;
use super::paths::{absolute_paths, module_path, referenced_modules, root_reexports};
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
fn a_use_binds_its_last_segment_its_alias_or_its_folded_self() {
    let known: BTreeSet<Vec<String>> = [names(&["t"]), names(&["t", "event"])].into();
    let text = "use super::frames::{self, Frame as F, Group as _};\npub use event::Trace;\n";
    let found: Vec<(String, Option<String>)> = absolute_paths(text, &names(&["t"]), &known)
        .into_iter()
        .map(|n| (n.path.join("::"), n.binds))
        .collect();
    let some = |s: &str| Some(s.to_string());
    assert_eq!(
        found,
        [
            ("frames".to_string(), some("frames")),
            ("frames::Frame".to_string(), some("F")),
            ("frames::Group".to_string(), None),
            ("t::event::Trace".to_string(), some("Trace")),
        ]
    );
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
    std::fs::write(src.join("long.rs"), "x\n".repeat(301)).unwrap();
    std::fs::write(src.join("short.rs"), "x\n\n// why\n".repeat(300)).unwrap();
    let found = super::check_crate(&root, &root.join("crates/demo")).unwrap();
    std::fs::remove_dir_all(&root).unwrap();
    assert_eq!(
        found.long_files,
        [("crates/demo/src/long.rs".to_string(), 301)]
    );
    assert_eq!(found.circles.len(), 1);
    assert_eq!(found.circles[0].modules, names(&["a", "b"]));
    assert_eq!(found.circles[0].edges.len(), 2);
    assert!(found.file_circles.is_empty());
}

#[test]
fn a_file_circle_is_reported_but_a_tests_import_closes_none() {
    let root = std::env::temp_dir().join(format!("xtask-files-{}", std::process::id()));
    let src = root.join("crates/demo/src");
    std::fs::create_dir_all(src.join("p")).unwrap();
    std::fs::write(root.join("crates/demo/Cargo.toml"), "").unwrap();
    std::fs::write(src.join("lib.rs"), "mod p;\n").unwrap();
    std::fs::write(src.join("p/mod.rs"), "mod a;\nmod b;\nmod c;\n").unwrap();
    // a → b → a; c → a, and back from c only in tests.
    std::fs::write(src.join("p/a.rs"), "use super::b::B;\npub struct A;\n").unwrap();
    let b = "pub struct B;\nfn f() { crate::p::a::A; }\n#[cfg(test)]\nmod tests {\n    use crate::p::c::C;\n}\n";
    std::fs::write(src.join("p/b.rs"), b).unwrap();
    std::fs::write(src.join("p/c.rs"), "use super::a::A;\npub struct C;\n").unwrap();
    std::fs::write(src.join("p/c_tests.rs"), "use crate::p::b::B;\n").unwrap();
    let found = super::check_crate(&root, &root.join("crates/demo")).unwrap();
    std::fs::remove_dir_all(&root).unwrap();
    assert!(found.circles.is_empty());
    assert_eq!(found.file_circles.len(), 1);
    let circle = &found.file_circles[0];
    assert_eq!(circle.module, "p");
    assert_eq!(
        circle.files,
        ["crates/demo/src/p/a.rs", "crates/demo/src/p/b.rs"]
    );
    let edges: Vec<(&str, &str, &str)> = circle
        .edges
        .iter()
        .map(|(a, b, name)| (a.as_str(), b.as_str(), name.as_str()))
        .collect();
    assert_eq!(
        edges,
        [
            (
                "crates/demo/src/p/a.rs",
                "crates/demo/src/p/b.rs",
                "crate::p::b::B"
            ),
            (
                "crates/demo/src/p/b.rs",
                "crates/demo/src/p/a.rs",
                "crate::p::a::A"
            ),
        ]
    );
}

#[test]
fn an_inline_test_module_is_left_out_of_the_import_graph() {
    let text = "use crate::a::X;\n\n#[cfg(test)]\nmod tests {\n    use crate::b::Y;\n}\n";
    assert_eq!(super::without_inline_tests(text), "use crate::a::X;\n\n");
    let gated = "#[cfg(test)]\nuse crate::c::Z;\nuse crate::d::W;\n";
    assert_eq!(super::without_inline_tests(gated), gated);
}

#[test]
fn only_lines_of_code_count_toward_a_files_length() {
    let text = "//! Module docs.\n/// An item's docs.\n///\n/// ```\n/// example();\n/// ```\nfn item() {}\n\n    // a plain comment\n/* a block\n   comment */\nlet s = \"// not a comment\"; // but this is\n";
    assert_eq!(super::counted_lines(text), 2);
}
