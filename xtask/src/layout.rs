//! `cargo xtask layout [--deny]`: the code's shape, per crate.
//!
//! Reports, for every crate of the workspace (`crates/*`, `xtask`,
//! `benches`):
//! - files under `src/` over [`MAX_LINES`] lines of code: a line counts
//!   when it holds code; blank lines and comment lines (rustdoc `///`,
//!   `//!`, plain `//`, a `/* … */` block) do not. A type's public API lives
//!   in one file with its docs and a runnable example per method, and a
//!   comment says why the code is so: neither should push a file apart.
//!   Tests in `*_tests.rs` files beside the code are exempt;
//! - import circles between a crate's modules: the module graph at the
//!   granularity of top-level modules (a file `src/NAME.rs` or a folder `src/NAME/`),
//!   with an edge x → y when code in x names `crate::y…` (or reaches y
//!   through `super::`, or names an item the crate root re-exports from y),
//!   and its strongly connected components (Tarjan) of more than one module;
//! - import circles between the files of one top-level module: the same
//!   graph with a file per node, each name followed to the file that
//!   defines it (`layout/files.rs`).
//!
//! Test files (`*_tests.rs`, `tests.rs`, `*_loom.rs`) and a file's inline
//! `#[cfg(test)] mod tests` are left out of both graphs: a test sits above
//! the code it tests and may reach any module of its crate, as `tests/`
//! does, so its imports never close a circle.
//!
//! The crate root (`lib.rs`, `main.rs`) is left out of the graph: it declares
//! and re-exports every module, so every module "depends" on it. Binaries in
//! `src/bin/` are crates of their own and are skipped. With `--deny` any
//! finding fails the task; `ci` prints the report without failing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod files;
mod graph;
mod lex;
mod paths;

/// The longest a source file may be, in lines of code (neither blank nor
/// only a comment).
pub const MAX_LINES: usize = 300;

/// What the check found in one crate.
#[derive(Debug, Default)]
pub struct CrateLayout {
    /// The crate's folder, relative to the workspace root.
    pub dir: String,
    /// Files over [`MAX_LINES`], with their line counts.
    pub long_files: Vec<(String, usize)>,
    /// Import circles: each a set of top-level modules, with one file that
    /// names the next module for every edge inside it.
    pub circles: Vec<Circle>,
    /// Import circles between the files of one top-level module.
    pub file_circles: Vec<files::FileCircle>,
}

/// One strongly connected component of the module graph.
#[derive(Debug)]
pub struct Circle {
    /// Its modules, sorted.
    pub modules: Vec<String>,
    /// Its edges `from → to`, each with a file of `from` that names `to`.
    pub edges: Vec<(String, String, String)>,
}

/// `cargo xtask layout [--deny]`.
pub fn layout(args: &[String]) -> Result<(), String> {
    let deny = match args {
        [] => false,
        [flag] if flag == "--deny" => true,
        other => return Err(format!("usage: cargo xtask layout [--deny]; got {other:?}")),
    };
    let findings = report(Path::new("."))?;
    if deny && findings > 0 {
        return Err(format!("{findings} layout finding(s); see above"));
    }
    Ok(())
}

/// Prints the report for the workspace at `root`; returns how many findings
/// (long files and circles) it printed.
pub fn report(root: &Path) -> Result<usize, String> {
    let mut findings = 0;
    for dir in crate_dirs(root)? {
        let found = check_crate(root, &dir)?;
        let n = found.long_files.len() + found.circles.len() + found.file_circles.len();
        findings += n;
        eprintln!(
            "layout {}: {} file(s) over {MAX_LINES} lines of code (blank and comment lines not counted), {} import circle(s) between modules, {} between files",
            found.dir,
            found.long_files.len(),
            found.circles.len(),
            found.file_circles.len()
        );
        for (file, lines) in &found.long_files {
            eprintln!("  {file}: {lines} lines of code");
        }
        for circle in &found.circles {
            eprintln!("  circle {{{}}}", circle.modules.join(", "));
            for (from, to, file) in &circle.edges {
                eprintln!("    {from} → {to} ({file})");
            }
        }
        for circle in &found.file_circles {
            eprintln!(
                "  file circle in {}: {{{}}}",
                circle.module,
                circle.files.join(", ")
            );
            for (from, to, name) in &circle.edges {
                eprintln!("    {from} → {to} ({name})");
            }
        }
    }
    eprintln!("layout: {findings} finding(s)");
    Ok(findings)
}

/// The workspace's crates: `crates/*`, `xtask`, `benches`.
fn crate_dirs(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut dirs = Vec::new();
    let crates = root.join("crates");
    let entries = std::fs::read_dir(&crates).map_err(|e| format!("{}: {e}", crates.display()))?;
    for entry in entries.flatten() {
        if entry.path().join("Cargo.toml").is_file() {
            dirs.push(entry.path());
        }
    }
    dirs.sort();
    for extra in ["xtask", "benches"] {
        if root.join(extra).join("src").is_dir() {
            dirs.push(root.join(extra));
        }
    }
    Ok(dirs)
}

/// Every `.rs` file under `dir`, recursively, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Lines of `text` that hold code: neither blank nor only a comment
/// (`//`, `///`, `//!`, or inside a `/* … */` block that opens a line).
fn counted_lines(text: &str) -> usize {
    let mut in_block = false;
    text.lines()
        .filter(|line| {
            let line = line.trim();
            if in_block {
                in_block = !line.contains("*/");
                return false;
            }
            if line.starts_with("/*") {
                in_block = !line.contains("*/");
                return false;
            }
            !(line.is_empty() || line.starts_with("//"))
        })
        .count()
}

/// A file that holds only tests: its imports are not the crate's layers.
fn is_test_file(inside: &Path) -> bool {
    let name = inside.file_name().unwrap_or_default().to_string_lossy();
    name == "tests.rs" || name.ends_with("_tests.rs") || name.ends_with("_loom.rs")
}

/// `text` up to its inline test module (`#[cfg(test)]` then `mod tests`),
/// which by convention closes a file.
fn without_inline_tests(text: &str) -> &str {
    let mut from = 0;
    while let Some(at) = text[from..].find("#[cfg(test)]") {
        let start = from + at;
        let after = text[start + "#[cfg(test)]".len()..].trim_start();
        if after.starts_with("mod tests") {
            return &text[..start];
        }
        from = start + 1;
    }
    text
}

/// Checks one crate's `src/`.
pub fn check_crate(root: &Path, dir: &Path) -> Result<CrateLayout, String> {
    let rel = |p: &Path| {
        p.strip_prefix(root)
            .unwrap_or(p)
            .to_string_lossy()
            .trim_start_matches("./")
            .to_string()
    };
    let src = dir.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = CrateLayout {
        dir: rel(dir),
        ..CrateLayout::default()
    };
    let mut sources = Vec::new();
    for file in files {
        let inside = file.strip_prefix(&src).unwrap_or(&file).to_path_buf();
        if inside.starts_with("bin") {
            continue;
        }
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let lines = counted_lines(&text);
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        if lines > MAX_LINES && !name.ends_with("_tests.rs") {
            found.long_files.push((rel(&file), lines));
        }
        sources.push((inside, rel(&file), text));
    }
    let modules: BTreeSet<String> = sources
        .iter()
        .filter_map(|(inside, _, _)| paths::module_path(inside).first().cloned())
        .collect();
    let reexports = sources
        .iter()
        .filter(|(inside, _, _)| paths::module_path(inside).is_empty())
        .flat_map(|(_, _, text)| paths::root_reexports(text, &modules))
        .collect::<BTreeMap<_, _>>();
    let mut edges: BTreeMap<(String, String), String> = BTreeMap::new();
    for (inside, file, text) in &sources {
        if is_test_file(inside) {
            continue;
        }
        let module = paths::module_path(inside);
        let Some(from) = module.first() else {
            continue;
        };
        let code = without_inline_tests(text);
        for to in paths::referenced_modules(code, &module, &modules, &reexports) {
            if &to != from {
                edges
                    .entry((from.clone(), to))
                    .or_insert_with(|| file.clone());
            }
        }
    }
    let nodes: Vec<String> = modules.into_iter().collect();
    let pairs: Vec<(String, String)> = edges.keys().cloned().collect();
    for component in graph::strongly_connected(&nodes, &pairs) {
        if component.len() < 2 {
            continue;
        }
        let inside: BTreeSet<&String> = component.iter().collect();
        let circle_edges = edges
            .iter()
            .filter(|((a, b), _)| inside.contains(a) && inside.contains(b))
            .map(|((a, b), file)| (a.clone(), b.clone(), file.clone()))
            .collect();
        let mut modules = component;
        modules.sort();
        found.circles.push(Circle {
            modules,
            edges: circle_edges,
        });
    }
    found.circles.sort_by(|a, b| a.modules.cmp(&b.modules));
    let in_files: Vec<files::Source> = sources
        .iter()
        .map(|(inside, file, text)| files::Source {
            module: paths::module_path(inside),
            file,
            code: without_inline_tests(text),
            test: is_test_file(inside),
        })
        .collect();
    found.file_circles = files::file_circles(&in_files);
    Ok(found)
}

#[cfg(test)]
#[path = "layout_tests.rs"]
mod tests;
