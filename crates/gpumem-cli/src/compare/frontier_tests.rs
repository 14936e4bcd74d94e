//! `gpumem compare --frontier` in process: the knob sweep in the JSON.

use clap::Parser;

use super::*;
use crate::cli::Cli;
use gpumem_replay::compare::*;

/// Runs the command in process: (result, stdout).
fn command(args: &[&str]) -> (Result<()>, String) {
    let cli = Cli::try_parse_from([&["gpumem", "compare"], args].concat()).unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let result = crate::cli::run(cli, &mut out, &mut err);
    (result, String::from_utf8(out).unwrap())
}

#[test]
fn frontier_adds_the_knob_sweep_to_the_json_and_leaves_it_out_without_the_flag() {
    let args = ["--workload", "devlog", "--scale", "0.1", "--json"];
    let (result, out) = command(&args);
    result.unwrap();
    let plain: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(plain.get("frontier").is_none(), "{out}");

    let (result, out) = command(&[&args[..], &["--frontier"]].concat());
    result.unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let points = v["frontier"]["points"].as_array().unwrap();
    assert_eq!(points.len(), IDLE_SHARES.len() * MAX_CHUNKS_MIB.len());
    let defaults: Vec<_> = points.iter().filter(|p| p["default"] == true).collect();
    assert_eq!(defaults.len(), 1);
    // The default point is the comparison's own gpumem row.
    let gpumem = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["allocator"] == "gpumem")
        .unwrap();
    assert_eq!(defaults[0]["fragmentation"], gpumem["fragmentation"]);
    assert_eq!(v["frontier"]["references"].as_array().unwrap().len(), 2);
}
