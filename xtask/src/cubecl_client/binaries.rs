//! Building the scratch workspace's test binaries, and finding them.
//!
//! One `cargo test --workspace --no-run` per engine builds every binary
//! with the same features (per-package builds would resolve features per
//! package and compile much of the tree twice); cargo's JSON messages say
//! where each binary is, and the suites run them directly.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::Stdio;

use super::engine::Engine;
use super::scratch::Scratch;
use crate::cargo;

/// The test binaries one build made, by target name (`core`,
/// `wgpu_graph`, `cubecl_server` for cubecl-server's lib tests).
#[derive(Debug, Default)]
pub struct Binaries {
    /// Target name → executable.
    pub by_target: BTreeMap<String, PathBuf>,
}

/// Builds every test binary of the scratch workspace for `engine`, with
/// `-j 2` and no debug info, into the scratch crate's own target dir.
pub fn build(scratch: &Scratch, engine: Engine) -> Result<Binaries, String> {
    let mut cmd = cargo(&["test", "--workspace", "--no-run", "-j", "2"]);
    cmd.args(["--message-format", "json-render-diagnostics"])
        .arg("--manifest-path")
        .arg(scratch.manifest())
        .arg("--target-dir")
        .arg(scratch.target())
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .env("CARGO_PROFILE_TEST_DEBUG", "0")
        .env("CARGO_INCREMENTAL", "0")
        .stdout(Stdio::piped());
    if let Some(feature) = engine.feature() {
        cmd.args(["--features", feature]);
    }
    eprintln!("$ {cmd:?}");
    let started = std::time::Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("could not start {cmd:?}: {e}"))?;
    let mut binaries = Binaries::default();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some((target, exe)) = test_binary(&line) {
                binaries.by_target.insert(target, exe);
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for {cmd:?}: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building the {} engine's tests failed ({status}); cargo's errors are above",
            engine.name()
        ));
    }
    eprintln!(
        "cubecl-client: built the {} engine's tests in {:.0} s",
        engine.name(),
        started.elapsed().as_secs_f64()
    );
    Ok(binaries)
}

/// The target name and executable of a `compiler-artifact` message that
/// has an executable (a test binary), read without a JSON parser: cargo
/// writes `"target":{…"name":"NAME"…}` and `"executable":"PATH"` in it.
pub fn test_binary(line: &str) -> Option<(String, PathBuf)> {
    if !line.contains(r#""reason":"compiler-artifact""#) {
        return None;
    }
    let exe = string_after(line, r#""executable":""#)?;
    let target = line.split_once(r#""target":{"#)?.1;
    let name = string_after(target, r#""name":""#)?;
    Some((name, PathBuf::from(exe)))
}

/// The JSON string that starts right after `key` (no escapes expected).
fn string_after(text: &str, key: &str) -> Option<String> {
    let rest = text.split_once(key)?.1;
    rest.split_once('"').map(|(value, _)| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_artifact_gives_its_target_name_and_executable_and_a_library_gives_nothing() {
        let test = r#"{"reason":"compiler-artifact","package_id":"path+file:///s#cubecl-client@0.0.0","target":{"kind":["test"],"crate_types":["bin"],"name":"wgpu_graph","src_path":"/s/tests/wgpu_graph.rs"},"profile":{},"features":[],"filenames":["/s/target/debug/deps/wgpu_graph-1"],"executable":"/s/target/debug/deps/wgpu_graph-1","fresh":true}"#;
        assert_eq!(
            test_binary(test),
            Some((
                "wgpu_graph".to_string(),
                PathBuf::from("/s/target/debug/deps/wgpu_graph-1")
            ))
        );
        let lib = r#"{"reason":"compiler-artifact","target":{"kind":["lib"],"name":"half"},"executable":null,"fresh":true}"#;
        assert_eq!(test_binary(lib), None);
        assert_eq!(
            test_binary(r#"{"reason":"build-finished","success":true}"#),
            None
        );
    }
}
