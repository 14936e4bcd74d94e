//! Helpers the command's end-to-end tests share: run the binary, a scratch
//! folder per test binary, the library's snapshot fixtures, output as text.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs the `gpumem` binary with `args`.
pub fn gpumem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpumem"))
        .args(args)
        .output()
        .expect("the gpumem binary runs")
}

/// A path named `name` in this test binary's own scratch folder.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "gpumem-{}-{}",
        env!("CARGO_CRATE_NAME"),
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A snapshot of the library's test fixtures
/// (crates/gpumem-replay/tests/fixtures/), which the command replays too.
pub fn library_fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../gpumem-replay/tests/fixtures")
        .join(name)
}

/// Bytes a process wrote, as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The data an HTML report embeds (its `<script id="data">` JSON).
pub fn html_data(page: &std::path::Path) -> serde_json::Value {
    let html = std::fs::read_to_string(page).unwrap();
    let start = html
        .find(r#"<script id="data" type="application/json">"#)
        .expect("the report embeds its data");
    let rest = &html[start..];
    let body = &rest[rest.find('>').unwrap() + 1..rest.find("</script>").unwrap()];
    serde_json::from_str(body).unwrap()
}
