use super::*;
use crate::cubecl_client::libtest::Outcome;

fn row(suite: &str, engine: &str, output: &str, stopped: Option<&str>) -> Row {
    Row {
        suite: suite.into(),
        engine: engine.into(),
        outcome: Outcome::parse(output),
        left_out: Vec::new(),
        counts: None,
        stopped: stopped.map(str::to_string),
    }
}

const DONE: &str = "test result: ok. finished in 1.00s\n";

#[test]
fn a_test_that_fails_on_both_engines_does_not_count_against_gpumem() {
    let out = format!("test a ... ok\ntest b ... FAILED\n{DONE}");
    let rows = [
        row("tensor", "cubecl", &out, None),
        row("tensor", "gpumem", &out, None),
    ];
    let verdict = judge(&rows);
    assert!(verdict.against_gpumem.is_empty());
    assert_eq!(verdict.on_both, ["tensor: `b` failed on both engines"]);
    assert_eq!(verdict.compared, 1);
    assert!(verdict.lines()[0].starts_with("oracle: every test that passed on cubecl"));
}

#[test]
fn a_test_that_fails_on_gpumem_alone_is_named_against_gpumem() {
    let rows = [
        row("tensor", "cubecl", &format!("test a ... ok\n{DONE}"), None),
        row(
            "tensor",
            "gpumem",
            &format!("test a ... FAILED\n{DONE}"),
            None,
        ),
    ];
    assert_eq!(
        judge(&rows).against_gpumem,
        ["tensor: `a` failed on gpumem only"]
    );
}

#[test]
fn a_binary_stopped_on_gpumem_alone_is_named_against_gpumem() {
    let rows = [
        row("autodiff", "cubecl", DONE, None),
        row("autodiff", "gpumem", "", Some("killed after 3600 s")),
    ];
    assert_eq!(
        judge(&rows).against_gpumem,
        ["autodiff: stopped on gpumem only: killed after 3600 s"]
    );
}

#[test]
fn a_memory_suite_must_pass_on_gpumem_even_when_it_fails_on_cubecl_too() {
    let out = format!("test a ... FAILED\n{DONE}");
    let rows = [
        row("memory_cleaning", "cubecl", &out, None),
        row("memory_cleaning", "gpumem", &out, None),
    ];
    assert_eq!(
        judge(&rows).against_gpumem,
        ["memory_cleaning: must pass on gpumem: tests failed"]
    );
}

#[test]
fn a_run_on_gpumem_alone_still_holds_the_memory_suites_to_passing() {
    let rows = [row(
        "graph_capture",
        "gpumem",
        "",
        Some("no result line; the binary exited with signal 6"),
    )];
    let verdict = judge(&rows);
    assert_eq!(verdict.compared, 0);
    assert_eq!(verdict.against_gpumem.len(), 1);
}
