use super::*;

/// What `cargo test -- --show-output` prints for one binary.
const OUTPUT: &str = "\
running 4 tests
test cuda::round_trip ... ok
test cuda::streams ... ok
test host_works ... ok
test cuda::device_part ... ok

successes:

---- cuda::round_trip stdout ----
skipping: the CUDA driver library (libcuda) is not present on this machine

---- cuda::streams stdout ----
skipping: the CUDA driver library (libcuda) is not present on this machine
skipping: the CUDA driver library (libcuda) is not present on this machine

---- host_works stdout ----
allocated 4 pages

---- cuda::device_part stdout ----
skipping the device part: no libcuda on this machine


successes:
cuda::device_part
cuda::round_trip
cuda::streams
host_works

test result: ok. 4 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.26s

running 1 test
test no_driver ... ok

successes:

---- no_driver stdout ----
skipping: no CUDA driver on this machine


successes:
no_driver

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
";

fn scan(text: &str) -> (Scanner, Vec<&str>) {
    let mut scanner = Scanner::default();
    let kept = text.lines().filter(|l| scanner.line(l)).collect();
    (scanner, kept)
}

#[test]
fn skipping_lines_in_the_successes_blocks_count_each_test_once_with_its_reason() {
    let (scanner, _) = scan(OUTPUT);
    let libcuda = "the CUDA driver library (libcuda) is not present on this machine";
    let found: Vec<(&str, &str, bool)> = scanner
        .skips
        .iter()
        .map(|s| (s.test.as_str(), s.reason.as_str(), s.partial))
        .collect();
    assert_eq!(
        found,
        [
            ("cuda::round_trip", libcuda, false),
            ("cuda::streams", libcuda, false),
            (
                "cuda::device_part",
                "skipping the device part: no libcuda on this machine",
                true
            ),
            ("no_driver", "no CUDA driver on this machine", false),
        ]
    );
}

#[test]
fn the_log_keeps_what_it_showed_without_show_output() {
    let (_, kept) = scan(OUTPUT);
    assert!(kept.contains(&"test cuda::round_trip ... ok"));
    assert!(
        kept.iter()
            .any(|l| l.starts_with("test result: ok. 4 passed"))
    );
    assert!(
        kept.iter()
            .any(|l| l.starts_with("test result: ok. 1 passed"))
    );
    assert!(!kept.iter().any(|l| l.contains("skipping")), "{kept:?}");
    assert!(!kept.iter().any(|l| l.contains("successes")), "{kept:?}");
    assert!(!kept.contains(&"allocated 4 pages"));
}

#[test]
fn a_failing_test_output_is_still_shown_and_not_counted() {
    let text = "\
running 1 test
test gpu ... FAILED

successes:

successes:

failures:

---- gpu stdout ----
skipping: not really

failures:
gpu

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
";
    let (scanner, kept) = scan(text);
    assert!(scanner.skips.is_empty());
    assert!(kept.contains(&"skipping: not really"));
    assert!(kept.contains(&"---- gpu stdout ----"));
}

#[test]
fn the_summary_says_how_many_skipped_and_why_most_frequent_first() {
    let (scanner, _) = scan(OUTPUT);
    let lines = summary(&scanner.skips);
    assert_eq!(
        lines[0],
        "skipped tests: 3 (cargo test counts them as passed), and 1 ran with a part skipped"
    );
    assert!(
        lines[1].starts_with("    2 × the CUDA driver library")
            && lines[1].ends_with("(cuda::round_trip, cuda::streams)"),
        "{lines:?}"
    );
    assert_eq!(
        lines[2],
        "    1 × no CUDA driver on this machine (no_driver)"
    );
    assert_eq!(
        lines[3],
        "    1 × skipping the device part: no libcuda on this machine (cuda::device_part)"
    );
    assert_eq!(
        summary(&[]),
        ["skipped tests: none (every GPU test ran)".to_string()]
    );
}

#[test]
fn colour_codes_do_not_hide_a_header() {
    assert_eq!(
        strip_ansi("\u{1b}[32mtest result:\u{1b}[0m ok"),
        "test result: ok"
    );
}

#[test]
fn the_passed_counts_of_every_binary_are_summed() {
    let (scanner, _) = scan(OUTPUT);
    assert_eq!(scanner.passed, 5, "4 in the first binary, 1 in the second");
}
