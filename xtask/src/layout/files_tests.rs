use super::{FileCircle, Source, file_circles};

/// Circles of an in-memory crate given as (path inside `src/`, text);
/// each circle as its sorted file names.
fn circles(crate_files: &[(&str, &str)]) -> Vec<Vec<String>> {
    found(crate_files).into_iter().map(|c| c.files).collect()
}

fn found(crate_files: &[(&str, &str)]) -> Vec<FileCircle> {
    let sources: Vec<Source> = crate_files
        .iter()
        .map(|(path, code)| Source {
            module: super::super::paths::module_path(std::path::Path::new(path)),
            file: path,
            code,
            test: path.ends_with("_tests.rs"),
        })
        .collect();
    file_circles(&sources)
}

fn files(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn two_siblings_that_name_each_other_are_a_circle_named_by_its_files() {
    let found = found(&[
        ("lib.rs", "mod trace;"),
        ("trace/mod.rs", "mod autograd;\nmod frames;"),
        (
            "trace/autograd.rs",
            "use super::frames::Frame;\npub struct Backward;",
        ),
        (
            "trace/frames.rs",
            "use super::autograd::{self, Backward};\npub struct Frame;",
        ),
    ]);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].module, "trace");
    assert_eq!(
        found[0].files,
        files(&["trace/autograd.rs", "trace/frames.rs"])
    );
    let names: Vec<&str> = found[0].edges.iter().map(|e| e.2.as_str()).collect();
    assert_eq!(
        names,
        ["crate::trace::frames::Frame", "crate::trace::autograd"]
    );
}

#[test]
fn a_longer_cycle_through_crate_paths_is_found_whole() {
    let found = circles(&[
        ("pools/mod.rs", "pub(crate) mod arena;"),
        ("pools/arena/mod.rs", "mod a;\nmod b;\nmod c;"),
        ("pools/arena/a.rs", "use crate::pools::arena::b::B;"),
        (
            "pools/arena/b.rs",
            "fn f() { crate::pools::arena::c::go(); }",
        ),
        (
            "pools/arena/c.rs",
            "use crate::pools::arena::a::A as Alias;",
        ),
    ]);
    assert_eq!(
        found,
        [files(&[
            "pools/arena/a.rs",
            "pools/arena/b.rs",
            "pools/arena/c.rs"
        ])]
    );
}

#[test]
fn a_one_way_chain_is_not_a_circle() {
    let found = circles(&[
        ("config/mod.rs", "mod conf;\nmod keys;\nmod values;"),
        (
            "config/conf.rs",
            "use super::values::parse;\npub use super::keys::KEYS;",
        ),
        ("config/values.rs", "use super::keys::KEYS;"),
        ("config/keys.rs", "pub const KEYS: &[&str] = &[];"),
    ]);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn a_name_is_followed_through_the_folders_reexport_to_the_file_that_defines_it() {
    // `super::Arenas` is defined in state.rs, which names chunks.rs back.
    let found = circles(&[
        (
            "arena/mod.rs",
            "mod chunks;\nmod state;\npub(crate) use state::Arenas;",
        ),
        (
            "arena/state.rs",
            "use super::chunks::MAX;\npub struct Arenas;",
        ),
        (
            "arena/chunks.rs",
            "use super::Arenas;\npub const MAX: u64 = 1;",
        ),
    ]);
    assert_eq!(found, [files(&["arena/chunks.rs", "arena/state.rs"])]);
}

#[test]
fn a_folder_root_naming_its_own_children_closes_no_circle() {
    // mod.rs holds the type its children share and calls into them: its
    // edges down are the folder's front door, as lib.rs's are the crate's.
    let found = circles(&[
        (
            "workload/mod.rs",
            "mod random;\npub struct Spec;\nfn run() { random::generate(); }",
        ),
        (
            "workload/random.rs",
            "use crate::workload::Spec;\npub fn generate() {}",
        ),
    ]);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn a_file_that_holds_only_tests_closes_no_circle() {
    // Tests sit above the code they test: the same two files make a
    // circle when the second is code, and none when it holds only tests.
    let crate_files = [
        ("lib.rs", "mod m;"),
        ("m/mod.rs", "mod a;\nmod c;"),
        ("m/a.rs", "use super::c::fixture;\npub struct A;"),
        ("m/c.rs", "use crate::m::a::A;\npub fn fixture() {}"),
    ];
    let with = |test_file: bool| -> Vec<Vec<String>> {
        let sources: Vec<Source> = crate_files
            .iter()
            .map(|(path, code)| Source {
                module: super::super::paths::module_path(std::path::Path::new(path)),
                file: path,
                code,
                test: test_file && *path == "m/c.rs",
            })
            .collect();
        file_circles(&sources)
            .into_iter()
            .map(|c| c.files)
            .collect()
    };
    assert_eq!(with(false), [files(&["m/a.rs", "m/c.rs"])]);
    assert!(with(true).is_empty());
}

#[test]
fn files_of_different_top_level_modules_are_left_to_the_module_graph() {
    let found = circles(&[
        ("a/x.rs", "use crate::b::y::Y;"),
        ("b/y.rs", "use crate::a::x::X;"),
    ]);
    assert!(found.is_empty(), "{found:?}");
}
