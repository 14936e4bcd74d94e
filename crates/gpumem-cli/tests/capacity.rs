//! A replay on a device of N bytes never reports more than N reserved:
//! pages (the persistent pool) and arena chunks share the simulated
//! device's one physical capacity, as they share a GPU's. Before they did,
//! this replay peaked at 31.99 GiB reserved on a 16 GiB device.

use gpumem::storage::units::GIB;
use std::process::Command;

#[test]
fn the_training_replay_on_a_16_gib_device_reports_peak_reserved_within_16_gib() {
    let out = Command::new(env!("CARGO_BIN_EXE_gpumem"))
        .args(["replay", "--workload", "training", "--scale", "0.05"])
        .args(["--device-gib", "16", "--allow-failures", "--json"])
        .output()
        .expect("the gpumem binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let number = |key: &str| v[key].as_u64().unwrap_or_else(|| panic!("{key} in {v}"));
    let (reserved, live) = (number("peak_reserved_bytes"), number("peak_live_bytes"));
    assert!(reserved <= 16 * GIB, "peak reserved {reserved} B on 16 GiB");
    assert!(
        live <= reserved,
        "peak live {live} B, reserved {reserved} B"
    );
    // The device fills (the replay is sized past it), so the cap is what binds.
    assert!(number("failed_allocs") > 0);
    assert!(reserved > 15 * GIB, "{reserved}");
}
