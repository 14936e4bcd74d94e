//! `gpumem replay --config` takes exactly the layouts
//! `GPUMEM_CONF=pools:…` takes, with the same result. (That a replay's
//! numbers are the device's is `crates/gpumem-replay/tests/device.rs`.)

use std::process::{Command, Output};

fn gpumem(args: &[&str], conf: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gpumem"));
    command.args(args).env_remove("GPUMEM_CONF");
    if let Some(conf) = conf {
        command.env("GPUMEM_CONF", conf);
    }
    command.output().expect("the gpumem binary runs")
}

/// The fields of a JSON report that depend on the layout (not on timing).
fn shape(out: &Output) -> serde_json::Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    serde_json::json!([v["peak_reserved_bytes"], v["storage_allocs"], v["pools"]])
}

#[test]
fn config_and_gpumem_conf_accept_the_same_layout_strings_with_the_same_result() {
    let replay = ["replay", "--workload", "devlog", "--scale", "0.2", "--json"];
    for layout in [
        "auto",
        "arenas",
        "sub_slices",
        "sub-slices",
        "exclusive",
        "exclusive-pages",
        "sliced",
        "sliced:8MiB/64KiB,sliced:64MiB/256MiB,exclusive:1GiB",
        "arena:1MiB,arena:64GiB@256MiB",
    ] {
        let flag = gpumem(&[&replay[..], &["--config", layout]].concat(), None);
        let env = gpumem(&replay, Some(&format!("pools:{layout}")));
        assert_eq!(shape(&flag), shape(&env), "{layout}");
    }
    let differs = shape(&gpumem(&replay, Some("pools:exclusive")));
    assert_ne!(
        differs,
        shape(&gpumem(&replay, None)),
        "the variable is read"
    );
    // --config beats the variable, as a flag beats the environment.
    let both = gpumem(
        &[&replay[..], &["--config", "sub_slices"]].concat(),
        Some("pools:exclusive"),
    );
    let flag = gpumem(&[&replay[..], &["--config", "sub_slices"]].concat(), None);
    assert_eq!(shape(&both), shape(&flag));
}

#[test]
fn a_layout_refused_by_config_is_refused_by_gpumem_conf_too() {
    for layout in [
        "sliced:8MiB",
        "pinned:1GiB",
        "sliced:8MiB/1GiB,exclusive:512MiB",
    ] {
        let flag = gpumem(
            &["replay", "--workload", "devlog", "--config", layout],
            None,
        );
        let env = gpumem(
            &["replay", "--workload", "devlog"],
            Some(&format!("pools:{layout}")),
        );
        for out in [&flag, &env] {
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{layout}: {stderr}");
            assert!(stderr.contains("exclusive:MAX"), "{layout}: {stderr}");
            assert!(!stderr.contains("panicked"), "{stderr}");
        }
    }
}
