use super::*;

fn files(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn broken(doc: &str, text: &str, repo: &[&str]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    check_text(doc, text, &files(repo), &mut seen)
        .1
        .into_iter()
        .map(|b| format!("{} {}", b.place, b.name))
        .collect()
}

#[test]
fn a_file_name_that_is_the_tail_of_a_repository_path_resolves() {
    let repo = ["crates/mem-pools/src/paged/carve.rs"];
    assert!(broken("docs/pools.md", "see `paged/carve.rs` and carve.rs.", &repo).is_empty());
}

#[test]
fn a_file_that_moved_is_reported_with_its_line() {
    let repo = ["crates/mem-storage/src/host/transfer.rs"];
    let text = "intro\nLib tests in `host_transfer.rs` exercise it.\n";
    assert_eq!(
        broken("docs/storage.md", text, &repo),
        ["docs/storage.md:2 host_transfer.rs"]
    );
}

#[test]
fn a_part_of_a_path_is_not_a_tail() {
    // A file's name at the end of a longer name does not resolve it.
    let repo = ["crates/mem-pools/src/arena/place.rs"];
    assert_eq!(
        broken("docs/pools.md", "in `arena_place.rs`", &repo),
        ["docs/pools.md:1 arena_place.rs"]
    );
}

#[test]
fn template_names_and_other_projects_files_are_exempt() {
    let text = "tests beside it in `NAME_tests.rs`; CubeCL's `memory_manage.rs`";
    assert!(broken("CONTRIBUTING.md", text, &[]).is_empty());
}

#[test]
fn a_relative_link_must_reach_a_file_and_web_links_are_not_checked() {
    let repo = ["docs/pools.md", "crates/gpumem/src/lib.rs"];
    let text = "[p](pools.md#free) [g](../crates/gpumem/src/lib.rs) [w](https://x.y/z.md) [gone](relocate.md)";
    assert_eq!(
        broken("docs/cli.md", text, &repo),
        ["docs/cli.md:1 relocate.md"]
    );
}

#[test]
fn a_link_to_a_folder_reaches_it() {
    let repo = ["traces/a.jsonl.gz"];
    assert!(broken("README.md", "[traces](traces/)", &repo).is_empty());
}

fn broken_in_comments(source: &str, text: &str, repo: &[&str]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    check_comments(source, text, &files(repo), &mut seen)
        .1
        .into_iter()
        .map(|b| format!("{} {}", b.place, b.name))
        .collect()
}

#[test]
fn a_stale_name_in_rustdoc_or_a_comment_is_reported_with_its_line() {
    let repo = [
        "crates/mem-storage/src/adaptors/fault/mod.rs",
        "crates/mem-storage/src/adaptors/fault/virtual_memory.rs",
    ];
    let text = "//! Over VirtualMemory (`vm/fault.rs`).\n/// See `fault/virtual_memory.rs`.\nfn f() {\n    // as in arena_place.rs\n}\n";
    assert_eq!(
        broken_in_comments("crates/mem-storage/src/adaptors/fault/mod.rs", text, &repo),
        [
            "crates/mem-storage/src/adaptors/fault/mod.rs:1 vm/fault.rs",
            "crates/mem-storage/src/adaptors/fault/mod.rs:4 arena_place.rs",
        ]
    );
}

#[test]
fn names_in_code_and_strings_are_not_prose() {
    let text = "#[path = \"gone_tests.rs\"]\nmod tests;\nconst F: &str = \"missing.rs\"; // beside the code\n";
    assert!(broken_in_comments("xtask/src/x.rs", text, &[]).is_empty());
}

#[test]
fn globs_templates_and_names_relative_to_the_crate_or_folder_resolve() {
    let repo = ["crates/gpumem/src/config/conf.rs"];
    let text = "//! Tests in `*_tests.rs`, `crates/*/src/lib.rs`; a `NAME_tests.rs` beside\n//! `config/conf.rs`, or just conf.rs, and **conf.rs** in bold.\n";
    assert!(broken_in_comments("crates/gpumem/src/config/mod.rs", text, &repo).is_empty());
}
