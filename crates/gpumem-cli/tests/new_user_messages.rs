//! Messages a new user met on a fresh clone: each
//! names what refused and what was meant.

mod common;

use common::*;

fn stderr_of(args: &[&str], conf: Option<&str>) -> (bool, String) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_gpumem"));
    command.args(args).env_remove("GPUMEM_CONF");
    if let Some(conf) = conf {
        command.env("GPUMEM_CONF", conf);
    }
    let out = command.output().expect("the gpumem binary runs");
    (out.status.success(), text(&out.stderr))
}

#[test]
fn a_tiny_budget_is_named_as_the_limit_that_refused() {
    let args = ["replay", "--workload", "training", "--scale", "0.01"];
    let (ok, err) = stderr_of(&args, Some("budget:1KiB"));
    assert!(!ok);
    assert!(err.contains("no pool accepts"), "{err}");
    assert!(
        err.contains("the limit that refused is the device budget (GPUMEM_CONF budget)"),
        "{err}"
    );
    assert!(err.contains("1.00 KiB"), "{err}");
    let (ok, err) = stderr_of(&args, None);
    assert!(ok, "{err}");
}

#[test]
fn a_negative_device_size_is_refused_as_a_size_not_read_as_a_flag() {
    for command in ["replay", "compare", "plan"] {
        let (ok, err) = stderr_of(
            &[command, "--workload", "devlog", "--device-gib", "-1"],
            None,
        );
        assert!(!ok);
        assert!(
            err.contains("invalid --device-gib -1: must be a size in GiB above 0"),
            "{command}: {err}"
        );
        assert!(!err.contains("unexpected argument"), "{err}");
    }
}

#[test]
fn a_layout_name_one_letter_off_gets_did_you_mean() {
    let (ok, err) = stderr_of(
        &["replay", "--workload", "devlog", "--config", "sub_slice"],
        None,
    );
    assert!(!ok);
    assert!(err.contains("did you mean `sub_slices`?"), "{err}");
    assert!(err.len() < 200, "{} characters: {err}", err.len());
    let (_, err) = stderr_of(
        &["replay", "--workload", "devlog", "--config", "Arena"],
        None,
    );
    assert!(err.contains("did you mean `arenas`?"), "{err}");
}

#[test]
fn a_negative_size_in_a_trace_names_the_field() {
    let path = scratch("negative_size.jsonl");
    std::fs::write(&path, "{\"op\":\"alloc\",\"id\":1,\"size\":-4096}\n").unwrap();
    let (ok, err) = stderr_of(&["replay", path.to_str().unwrap()], None);
    assert!(!ok);
    assert!(
        err.contains("jsonl line 1: field `size` is -4096, not a whole number of bytes"),
        "{err}"
    );
    std::fs::write(&path, "{\"op\":\"free\",\"id\":\"seven\"}\n").unwrap();
    let (_, err) = stderr_of(&["replay", path.to_str().unwrap()], None);
    assert!(err.contains("field `id` is \"seven\""), "{err}");
}
