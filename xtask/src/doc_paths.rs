//! `cargo xtask doc-paths`: every source file the prose names exists.
//!
//! docs/*.md, README.md and CONTRIBUTING.md name files (`pools/core.rs`,
//! `crates/gpumem/tests/stress.rs`); a file that moved or was split leaves
//! such a name pointing at nothing, and nothing else checks prose. Every
//! `.rs` name must be a repository file or the tail of one's path
//! (`carve.rs`, `paged/carve.rs`), and every relative Markdown link
//! (`[x](pools.md)`, `[y](../crates/...)`) must reach a file. Two kinds of
//! name are exempt: templates (a placeholder word in capitals, as in
//! `NAME_tests.rs`), and files of other projects the docs talk about,
//! listed in [`EXTERNAL`] with whose they are. The list cannot rot: an
//! entry the docs no longer name, or one the repository now has, fails the
//! check too.
//!
//! The comments of the workspace's `.rs` files are prose too: every comment
//! line (`//!`, `///`, `//`) is read for `.rs` names the same way, resolved
//! the same lenient way (a repository file or the tail of one's path, so a
//! name relative to the crate's `src/` or to the file's folder resolves).
//! Their Markdown links are not read: rustdoc's are intra-doc links that
//! `cargo xtask doc` checks.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Files of other projects that the docs name, with whose they are.
const EXTERNAL: &[(&str, &str)] = &[
    ("tests/cubecl.rs", "Burn's burn-backend-tests suite"),
    ("allocation_mode.rs", "CubeCL's cubecl-core test"),
    ("memory_manage.rs", "CubeCL's cubecl-server engine"),
    ("src/compute/counts.rs", "the patched cubecl-wgpu"),
    ("src/compute/mem_manager.rs", "cubecl-wgpu"),
    ("src/compute/storage.rs", "cubecl-wgpu"),
    ("src/compute/stream.rs", "cubecl-wgpu"),
    ("tests/device_poisoned.rs", "cubecl-wgpu"),
    ("tests/discarded_launch_profiling.rs", "cubecl-wgpu"),
    ("tests/integration_test.rs", "cubecl-server"),
    ("tests/launch_errors.rs", "cubecl-wgpu"),
    ("tests/precompiled.rs", "cubecl-server"),
    ("tests/profile_window.rs", "cubecl-wgpu"),
    ("tests/taint_property.rs", "cubecl-server"),
];

/// A name in prose that reaches nothing.
#[derive(Debug, PartialEq, Eq)]
pub struct Broken {
    /// `docs/pools.md:12`.
    pub place: String,
    /// The name as written.
    pub name: String,
}

/// Run the check on the working tree; fail listing every broken name.
pub fn doc_paths(args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return Err(format!("usage: cargo xtask doc-paths; got {args:?}"));
    }
    let root = Path::new(".");
    let files = repo_files(root)?;
    let mut broken = Vec::new();
    let mut external_seen = BTreeSet::new();
    let mut checked = 0;
    for doc in prose_files(&files) {
        let text =
            std::fs::read_to_string(root.join(&doc)).map_err(|e| format!("reading {doc}: {e}"))?;
        let found = check_text(&doc, &text, &files, &mut external_seen);
        checked += found.0;
        broken.extend(found.1);
    }
    for source in source_files(&files) {
        let text = std::fs::read_to_string(root.join(&source))
            .map_err(|e| format!("reading {source}: {e}"))?;
        let found = check_comments(&source, &text, &files, &mut external_seen);
        checked += found.0;
        broken.extend(found.1);
    }
    let mut stale = Vec::new();
    for (name, whose) in EXTERNAL {
        if !external_seen.contains(name) {
            stale.push(format!(
                "{name} ({whose}): no doc names it; drop it from EXTERNAL"
            ));
        } else if resolves(name, &files) {
            stale.push(format!(
                "{name} ({whose}): the repository has it now; drop it from EXTERNAL"
            ));
        }
    }
    eprintln!(
        "doc-paths: {checked} file names and links checked (docs and comments in .rs files), {} broken",
        broken.len()
    );
    for b in &broken {
        eprintln!(
            "  {}: `{}` names no file in the repository",
            b.place, b.name
        );
    }
    for s in &stale {
        eprintln!("  EXTERNAL: {s}");
    }
    if broken.is_empty() && stale.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} name(s) in the docs or comments point at nothing (fix the name, or list another project's file in xtask/src/doc_paths.rs EXTERNAL), {} stale EXTERNAL entr(ies)",
            broken.len(),
            stale.len()
        ))
    }
}

/// The docs whose names are checked: docs/*.md, README.md, CONTRIBUTING.md.
fn prose_files(files: &BTreeSet<String>) -> Vec<String> {
    files
        .iter()
        .filter(|f| {
            *f == "README.md"
                || *f == "CONTRIBUTING.md"
                || (f.starts_with("docs/") && f.ends_with(".md") && !f[5..].contains('/'))
        })
        .cloned()
        .collect()
}

/// The Rust sources whose comments are checked: every `.rs` file of the
/// repository (build output and scratch folders are not in `files`).
fn source_files(files: &BTreeSet<String>) -> Vec<String> {
    files
        .iter()
        .filter(|f| f.ends_with(".rs"))
        .cloned()
        .collect()
}

/// Check one Rust source's comment lines (`//!`, `///`, `//`): returns how
/// many names it checked and the broken ones.
fn check_comments(
    source: &str,
    text: &str,
    files: &BTreeSet<String>,
    external_seen: &mut BTreeSet<&'static str>,
) -> (usize, Vec<Broken>) {
    let mut checked = 0;
    let mut broken = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let Some(comment) = line.trim_start().strip_prefix("//") else {
            continue;
        };
        let place = format!("{source}:{}", n + 1);
        checked += check_names(&place, comment, files, external_seen, &mut broken);
    }
    (checked, broken)
}

/// Check the `.rs` names of one line; returns how many it checked.
fn check_names(
    place: &str,
    line: &str,
    files: &BTreeSet<String>,
    external_seen: &mut BTreeSet<&'static str>,
    broken: &mut Vec<Broken>,
) -> usize {
    let names = rs_names(line);
    for name in &names {
        if let Some((ext, _)) = EXTERNAL.iter().find(|(e, _)| e == name) {
            external_seen.insert(ext);
            continue;
        }
        if is_template(name) || resolves(name, files) {
            continue;
        }
        broken.push(Broken {
            place: place.to_string(),
            name: name.clone(),
        });
    }
    names.len()
}

/// Check one document: returns how many names it checked and the broken ones.
fn check_text(
    doc: &str,
    text: &str,
    files: &BTreeSet<String>,
    external_seen: &mut BTreeSet<&'static str>,
) -> (usize, Vec<Broken>) {
    let dir = Path::new(doc).parent().unwrap_or(Path::new(""));
    let mut checked = 0;
    let mut broken = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let place = format!("{doc}:{}", n + 1);
        checked += check_names(&place, line, files, external_seen, &mut broken);
        for target in link_targets(line) {
            checked += 1;
            let joined = normalize(&dir.join(&target));
            if !files.contains(&joined) && !is_dir_of(&joined, files) {
                broken.push(Broken {
                    place: place.clone(),
                    name: target,
                });
            }
        }
    }
    (checked, broken)
}

/// The `.rs` names in a line: runs of path characters ending in `.rs`. A
/// glob (`*_tests.rs`, `crates/*/src/lib.rs`) names a kind of file, not a
/// file, and is left out; Markdown's bold around a name is not a glob.
fn rs_names(line: &str) -> Vec<String> {
    let path_char = |c: char| c.is_ascii_alphanumeric() || "_./-*".contains(c);
    line.split(|c: char| !path_char(c))
        .map(|t| t.trim_end_matches('*'))
        .map(|t| t.strip_prefix("**").unwrap_or(t))
        .filter(|t| !t.contains('*'))
        .map(|t| t.trim_start_matches("./").trim_end_matches('.'))
        .filter(|t| t.ends_with(".rs") && t.len() > 3 && !t.contains("://"))
        .filter(|t| !t.starts_with('/') && !t.starts_with(".."))
        .map(str::to_string)
        .collect()
}

/// Relative Markdown link targets in a line (`](target)`, anchors cut off),
/// leaving out web addresses, anchors alone and mail links.
fn link_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split('#').next().unwrap_or("").trim();
        if !target.is_empty()
            && !target.contains("://")
            && !target.starts_with("mailto:")
            && !target.contains(' ')
        {
            out.push(target.to_string());
        }
        rest = &rest[end..];
    }
    out
}

/// A placeholder word in capitals (`NAME_tests.rs`, `read_FORMAT.rs`).
fn is_template(name: &str) -> bool {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| w.len() >= 3 && w.chars().all(|c| c.is_ascii_uppercase()))
}

/// A repository file is `name`, or its path ends with `/name`.
fn resolves(name: &str, files: &BTreeSet<String>) -> bool {
    let tail = format!("/{name}");
    files.iter().any(|f| f == name || f.ends_with(&tail))
}

fn is_dir_of(path: &str, files: &BTreeSet<String>) -> bool {
    let prefix = format!("{}/", path.trim_end_matches('/'));
    files.iter().any(|f| f.starts_with(&prefix))
}

/// `docs/../crates/x` → `crates/x` (no file system access).
fn normalize(path: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            _ => {}
        }
    }
    parts.join("/")
}

/// Every file under `root`, as `/`-separated relative paths, leaving out
/// build output, git's own folder and scratch worktrees.
fn repo_files(root: &Path) -> Result<BTreeSet<String>, String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let dir = root.join(&rel);
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| e.to_string())?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == "target" || name == ".git" || name == "gpu-bundle" {
                continue;
            }
            let child = rel.join(&name);
            let kind = entry.file_type().map_err(|e| e.to_string())?;
            if kind.is_dir() {
                stack.push(child);
            } else {
                out.insert(child.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "doc_paths_tests.rs"]
mod tests;
