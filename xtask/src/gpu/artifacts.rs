//! Reading the executables a build produced from cargo's JSON messages
//! (`--message-format=json…`, the `executable` field), without a JSON
//! library: xtask stays dependency-free and only reads a few fields.

use std::path::{Path, PathBuf};

/// One executable cargo built, and a file name for it in the bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Artifact {
    pub(super) path: PathBuf,
    pub(super) name: String,
}

/// The value of the first `"key":"…"` string field in `line`, unescaped
/// for the escapes cargo emits in paths (`\\` and `\"`).
fn string_field(line: &str, key: &str) -> Option<String> {
    let start = line.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let mut out = String::new();
    let mut chars = line[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => out.push(chars.next()?),
            c => out.push(c),
        }
    }
    None
}

/// What to keep of the executables a build produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keep {
    /// Test harnesses (`profile.test`): unit and integration tests, not the
    /// plain binaries and examples `cargo test` also builds.
    Tests,
    /// Bench targets only (`target.kind == ["bench"]`).
    Benches,
    /// Everything.
    All,
}

/// Whether the artifact `line` describes is one `keep` wants.
fn wanted(line: &str, keep: Keep) -> bool {
    match keep {
        Keep::All => true,
        Keep::Benches => line.contains("\"kind\":[\"bench\"]"),
        Keep::Tests => line
            .find("\"profile\":{")
            .and_then(|at| {
                let rest = &line[at..];
                rest.find('}')
                    .map(|end| rest[..end].contains("\"test\":true"))
            })
            .unwrap_or(false),
    }
}

/// Executables named by cargo's JSON messages in `stdout`.
pub(super) fn executables(stdout: &str, keep: Keep) -> Vec<Artifact> {
    stdout
        .lines()
        .filter(|l| l.contains("\"reason\":\"compiler-artifact\""))
        .filter(|l| wanted(l, keep))
        .filter_map(|line| {
            let path = PathBuf::from(string_field(line, "executable")?);
            let package = string_field(line, "manifest_path")
                .and_then(|m| {
                    Path::new(&m)
                        .parent()?
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                })
                .unwrap_or_else(|| "workspace".into());
            let file = path.file_name()?.to_string_lossy().into_owned();
            Some(Artifact {
                name: format!("{package}__{file}"),
                path,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_executables_are_read_from_cargo_json_and_others_skipped() {
        let out = concat!(
            r#"{"reason":"compiler-artifact","manifest_path":"/w/crates/mem-pools/Cargo.toml","target":{"kind":["lib"],"name":"mem_pools","test":true},"profile":{"opt_level":"3","test":true},"executable":"/w/target/release/deps/mem_pools-1a2b"}"#,
            "\n",
            r#"{"reason":"compiler-artifact","manifest_path":"/w/crates/mem-pools/Cargo.toml","target":{"kind":["lib"],"name":"mem_pools","test":true},"profile":{"opt_level":"3","test":false},"executable":null}"#,
            "\n",
            r#"{"reason":"compiler-artifact","manifest_path":"/w/crates/gpumem/Cargo.toml","target":{"kind":["example"],"name":"budget","test":true},"profile":{"opt_level":"3","test":false},"executable":"/w/target/release/examples/budget"}"#,
            "\n",
            r#"{"reason":"build-finished","success":true}"#,
        );
        assert_eq!(executables(out, Keep::All).len(), 2);
        assert!(executables(out, Keep::Benches).is_empty());
        assert_eq!(
            executables(out, Keep::Tests),
            vec![Artifact {
                path: PathBuf::from("/w/target/release/deps/mem_pools-1a2b"),
                name: "mem-pools__mem_pools-1a2b".into(),
            }]
        );
    }

    #[test]
    fn escaped_quotes_and_backslashes_in_paths_are_unescaped() {
        let line = r#"{"executable":"C:\\dir\\a\"b"}"#;
        assert_eq!(
            string_field(line, "executable").as_deref(),
            Some(r#"C:\dir\a"b"#)
        );
        assert_eq!(string_field(line, "missing"), None);
    }
}
