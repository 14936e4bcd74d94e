use super::*;

const REPORT: &str = "\
run lm-train
engine gpumem
loss 0 40851eb8 4.1600003
loss 1 4084f5c3 4.1549997
loss 2 40849ba6 4.144
steps 3
timed_steps 2
timed_seconds 0.500000
total_seconds 2.000000
params 0123456789abcdef
outputs cbf29ce484222325
";

const COUNTS: &str =
    "peak_bytes 10485760\nbuffers_created 3\nbuffers_destroyed 1\nheld_at_exit 8388608\n";

fn outcome() -> Outcome {
    let mut outcome = parse_report(REPORT, 3).unwrap();
    parse_counts(COUNTS, &mut outcome).unwrap();
    outcome
}

#[test]
fn a_report_and_its_totals_are_read() {
    let o = outcome();
    assert_eq!(o.losses, vec![0x4085_1eb8, 0x4084_f5c3, 0x4084_9ba6]);
    assert_eq!(o.params, "0123456789abcdef");
    assert_eq!(o.outputs, "cbf29ce484222325");
    assert_eq!((o.timed_steps, o.steps_per_second()), (2, 4.0));
    assert_eq!((o.peak_bytes, o.created, o.destroyed), (10 << 20, 3, 1));
}

#[test]
fn a_report_short_of_steps_or_out_of_order_is_refused() {
    assert!(
        parse_report(REPORT, 4)
            .unwrap_err()
            .contains("3 losses, not 4")
    );
    let swapped = REPORT.replace("loss 1 ", "loss 9 ");
    assert!(
        parse_report(&swapped, 3)
            .unwrap_err()
            .contains("out of order")
    );
    let no_params = REPORT.replace("params 0123456789abcdef\n", "");
    assert!(parse_report(&no_params, 3).is_err());
    let mut o = Outcome::default();
    assert!(parse_counts("peak_bytes 1\n", &mut o).is_err());
}

#[test]
fn the_oracle_sees_one_bit_of_one_loss_and_either_checksum() {
    let a = outcome();
    assert_eq!(differs(&a, &a.clone()), None);
    let mut b = a.clone();
    b.losses[2] ^= 1;
    let diff = differs(&a, &b).unwrap();
    assert!(diff.starts_with("step 2's loss"), "{diff}");
    let mut b = a.clone();
    b.losses.pop();
    assert!(differs(&a, &b).unwrap().contains("none"));
    let mut b = a.clone();
    b.params = "0123456789abcdee".into();
    assert!(differs(&a, &b).unwrap().starts_with("final parameters"));
    let mut b = a.clone();
    b.outputs = "0".into();
    assert!(differs(&a, &b).unwrap().starts_with("outputs"));
    // Memory and speed are not results.
    let mut b = a.clone();
    b.peak_bytes += 1;
    b.timed_seconds = 9.0;
    assert_eq!(differs(&a, &b), None);
}
