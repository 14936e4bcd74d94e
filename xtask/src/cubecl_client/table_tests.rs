use super::*;

#[test]
fn counts_read_the_keys_the_patched_runtime_writes_and_reject_a_cut_file() {
    let text = "peak_bytes 268435456\nbuffers_created 7\nbuffers_destroyed 5\nheld_at_exit 64\n";
    assert_eq!(
        Counts::parse(text),
        Some(Counts {
            peak_bytes: 268_435_456,
            buffers_created: 7
        })
    );
    assert_eq!(Counts::parse("peak_bytes 12\n"), None);
}

#[test]
fn a_row_counts_ignored_and_left_out_tests_as_skipped_and_lists_each_reason() {
    let outcome = Outcome::parse(
        "test a ... ok\ntest b ... ignored, slow\ntest c ... FAILED\n\
         test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 1 filtered out; finished in 2.50s\n",
    );
    let row = Row {
        suite: "core".into(),
        engine: "gpumem".into(),
        outcome,
        left_out: vec![Unpassed {
            test: "d".into(),
            reason: Some("asserts CubeCL's pool kinds".into()),
        }],
        counts: Some(Counts {
            peak_bytes: 3 << 20,
            buffers_created: 4,
        }),
        stopped: None,
    };
    assert_eq!(row.skipped(), 2);
    assert!(!row.green());
    let table = render(&[row]);
    assert!(
        table.contains("| core | gpumem | 1 | 1 | 2 | 3.00 MiB | 4 | 2.5 s |"),
        "{table}"
    );
    assert!(table.contains("- failed: core on gpumem: `c`"), "{table}");
    assert!(
        table.contains("- skipped (#[ignore]): core on gpumem: `b`: slow"),
        "{table}"
    );
    assert!(
        table.contains("tests matching `d`: asserts CubeCL's pool kinds"),
        "{table}"
    );
}

fn row(suite: &str, engine: &str, peak_bytes: u64) -> Row {
    Row {
        suite: suite.into(),
        engine: engine.into(),
        outcome: Outcome::default(),
        left_out: Vec::new(),
        counts: Some(Counts {
            peak_bytes,
            buffers_created: 1,
        }),
        stopped: None,
    }
}

#[test]
fn held_more_names_each_suite_where_gpumem_peaked_above_cubecl_and_only_those() {
    let rows = [
        row("graph", "cubecl", 144 << 20),
        row("relocation", "cubecl", 14 << 20),
        row("graph", "gpumem", 136 << 20),
        row("relocation", "gpumem", 24 << 20),
    ];
    assert_eq!(
        held_more(&rows),
        vec![
            "gpumem held more than CubeCL's engine on relocation: 24.00 MiB against 14.00 MiB"
                .to_string()
        ]
    );
    assert_eq!(
        held_more(&rows[..3]),
        vec![
            "gpumem held no more than CubeCL's engine on each of the 1 suites compared".to_string()
        ]
    );
    assert!(held_more(&rows[..2]).is_empty());
}
