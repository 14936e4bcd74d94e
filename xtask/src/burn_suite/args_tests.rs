use super::*;

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

#[test]
fn only_takes_every_name_up_to_the_next_flag() {
    let args = parse_args(&strings(&[
        "--only",
        "graph_capture",
        "memory_cleaning",
        "--engine",
        "gpumem",
    ]))
    .unwrap();
    assert_eq!(args.only, ["graph_capture", "memory_cleaning"]);
    assert_eq!(args.engines, [Engine::Gpumem]);
    assert!(parse_args(&strings(&["--only"])).is_err());
    assert!(parse_args(&strings(&["--only", "--engine", "both"])).is_err());
}

#[test]
fn the_memory_suites_run_first_and_an_unknown_name_is_refused() {
    let all = strings(&["autodiff", "graph_capture", "memory_cleaning", "tensor"]);
    assert_eq!(
        order(all.clone(), &[]).unwrap(),
        ["graph_capture", "memory_cleaning", "autodiff", "tensor"]
    );
    assert_eq!(
        order(all.clone(), &strings(&["tensor", "memory_cleaning"])).unwrap(),
        ["memory_cleaning", "tensor"]
    );
    let err = order(all, &strings(&["tensors"])).unwrap_err();
    assert!(err.contains("--only tensors"), "{err}");
}

#[test]
fn a_given_burn_src_wins_over_the_default_location() {
    let root = Path::new("/repo");
    assert_eq!(
        burn_src(root, Some(PathBuf::from("/elsewhere/burn"))),
        PathBuf::from("/elsewhere/burn")
    );
}
