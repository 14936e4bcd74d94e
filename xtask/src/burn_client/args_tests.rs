use super::*;

fn names(path: &str) -> Vec<(&'static str, String)> {
    traced(Path::new(path))
        .into_iter()
        .map(|(run, path)| (run.name, path.display().to_string()))
        .collect()
}

#[test]
fn a_trace_path_without_the_placeholder_records_the_transformers_training_alone() {
    assert_eq!(
        names("/tmp/burn.jsonl"),
        [("lm-train", "/tmp/burn.jsonl".to_string())]
    );
}

#[test]
fn a_trace_path_with_the_placeholder_records_every_run_under_its_name() {
    assert_eq!(
        names("/tmp/burn-{run}.jsonl"),
        [
            ("cnn", "/tmp/burn-cnn.jsonl".to_string()),
            ("lm-train", "/tmp/burn-lm-train.jsonl".to_string()),
            ("lm-infer", "/tmp/burn-lm-infer.jsonl".to_string()),
            ("lstm-train", "/tmp/burn-lstm-train.jsonl".to_string()),
        ]
    );
}

#[test]
fn the_trace_option_takes_its_path_as_given() {
    let args = parse_args(&["--trace".into(), "/tmp/burn-{run}.jsonl".into()]).unwrap();
    assert_eq!(args.trace, Some(PathBuf::from("/tmp/burn-{run}.jsonl")));
}

#[test]
fn the_part_option_picks_the_runs_or_the_scenarios_or_both() {
    let part = |value: &str| {
        parse_args(&["--part".into(), value.into()]).map(|args| (args.runs, args.scenarios))
    };
    assert_eq!(part("runs"), Ok((true, false)));
    assert_eq!(part("scenarios"), Ok((false, true)));
    assert_eq!(part("all"), Ok((true, true)));
    assert!(part("some").is_err());
    let default = parse_args(&[]).unwrap();
    assert!(default.runs && default.scenarios);
}
