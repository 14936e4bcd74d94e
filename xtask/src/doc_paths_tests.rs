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
    // `place.rs` must not match `arena_place.rs`.
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
