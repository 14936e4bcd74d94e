use super::*;

const RUN: &str = "\
running 5 tests
test assign::test_assign ... ok
test graph::capture_replays ... FAILED
test oom::huge ... ignored
test oom::huger ... ignored, needs 64 GiB
some output a test printed, test x ... ok inside it
test slice::test_slice ... ok

failures:
    graph::capture_replays

test result: FAILED. 2 passed; 1 failed; 2 ignored; 0 measured; 3 filtered out; finished in 5.01s
";

#[test]
fn a_run_counts_passed_failed_and_ignored_tests_with_their_reasons() {
    let outcome = Outcome::parse(RUN);
    assert_eq!(outcome.passed, 2);
    assert_eq!(
        outcome.failed,
        vec![Unpassed {
            test: "graph::capture_replays".into(),
            reason: None
        }]
    );
    assert_eq!(outcome.ignored.len(), 2);
    assert_eq!(outcome.ignored[0].reason, None);
    assert_eq!(outcome.ignored[1].reason.as_deref(), Some("needs 64 GiB"));
    assert_eq!(outcome.filtered, 3);
    assert_eq!(outcome.seconds, Some(5.01));
    assert!(outcome.finished);
}

#[test]
fn a_run_cut_short_has_no_result_line_and_no_time() {
    let outcome = Outcome::parse("running 2 tests\ntest a ... ok\n");
    assert_eq!(outcome.passed, 1);
    assert!(!outcome.finished);
    assert_eq!(outcome.seconds, None);
}

#[test]
fn an_empty_binary_finishes_with_nothing_run() {
    let outcome = Outcome::parse(
        "running 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n",
    );
    assert_eq!(outcome.passed, 0);
    assert!(outcome.failed.is_empty() && outcome.ignored.is_empty());
    assert!(outcome.finished);
    assert_eq!(outcome.seconds, Some(0.0));
}
