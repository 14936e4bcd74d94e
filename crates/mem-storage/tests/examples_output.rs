//! The host demo prints byte counts in human units (`9.00 MiB`, never
//! `9441280`). `cargo test` builds the examples beside the test binaries; a
//! run that did not build them says it skipped.

#[test]
fn the_host_demo_prints_human_units() {
    let Some(profile_dir) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent()?.parent().map(|p| p.to_path_buf()))
    else {
        panic!("the test binary has a profile folder");
    };
    let path = profile_dir
        .join("examples")
        .join(format!("host_demo{}", std::env::consts::EXE_SUFFIX));
    if !path.exists() {
        println!(
            "skipping: the example `host_demo` is not built (`cargo test -p mem-storage` builds it)"
        );
        return;
    }
    let out = std::process::Command::new(path)
        .output()
        .expect("the example runs");
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("pages: 3, bytes allocated: 9.00 MiB"),
        "{stdout}"
    );
    assert!(
        stdout.contains("after dealloc (queued): 9.00 MiB"),
        "{stdout}"
    );
    assert!(stdout.contains("after flush: 0 B"), "{stdout}");
}
