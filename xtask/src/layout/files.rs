//! Import circles between the files of one top-level module.
//!
//! The module graph sees `pools` as one node; inside it, `arena/state.rs`
//! may name `arena/chunks.rs` while `chunks.rs` names `state.rs`. Here each
//! file is a node, with an edge a → b when a's code or a `use` in it (`pub`
//! or not) names an item that b defines. A name is followed to where it is
//! defined: a path into a module whose file only imports or re-exports the
//! item continues through that import, so `super::Item` reaches the
//! sibling that holds `Item`, not the folder's `mod.rs`. The crate root and
//! test files stay out of the graph, as in the module graph; an edge joins
//! two files of the same top-level module (a longer circle would cross a
//! module circle, which the module graph reports).
//!
//! The file that declares a folder's modules (`DIR/mod.rs`, or `DIR.rs`
//! beside `DIR/`) is that folder's root, as `lib.rs` is the crate's: its
//! edges down into its own folder are the folder's declarations and its
//! front door, and do not count. Its children's edges up to it do (the
//! types a folder shares live there), and so do its edges to anywhere else.

use super::graph::strongly_connected;
use super::paths::{Named, absolute_paths};
use std::collections::{BTreeMap, BTreeSet};

/// One source file, as the check reads it.
#[derive(Debug)]
pub struct Source<'a> {
    /// Its module path inside the crate (`[pools, arena, state]`).
    pub module: Vec<String>,
    /// Its path relative to the workspace root, as the report prints it.
    pub file: &'a str,
    /// Its text without its inline test module.
    pub code: &'a str,
    /// Whether it holds only tests (`*_tests.rs`, `tests.rs`, `*_loom.rs`).
    pub test: bool,
}

/// A circle of files inside one top-level module.
#[derive(Debug)]
pub struct FileCircle {
    /// The top-level module the files sit in.
    pub module: String,
    /// The files, sorted.
    pub files: Vec<String>,
    /// Its edges `from → to`, each with the first path `from` names in `to`.
    pub edges: Vec<(String, String, String)>,
}

/// How many imports a name is followed through before the search stops.
const MAX_HOPS: usize = 16;

/// The file-level circles among `sources` (one crate's `src/`).
pub fn file_circles(sources: &[Source]) -> Vec<FileCircle> {
    let known: BTreeSet<Vec<String>> = sources.iter().map(|s| s.module.clone()).collect();
    let named: Vec<Vec<Named>> = sources
        .iter()
        .map(|s| absolute_paths(s.code, &s.module, &known))
        .collect();
    let index: BTreeMap<&[String], usize> = sources
        .iter()
        .enumerate()
        .map(|(i, s)| (s.module.as_slice(), i))
        .collect();
    let bindings: Vec<BTreeMap<&str, &[String]>> = named
        .iter()
        .map(|names| {
            names
                .iter()
                .filter_map(|n| Some((n.binds.as_deref()?, n.path.as_slice())))
                .collect()
        })
        .collect();
    let locate = |path: &[String]| -> Option<usize> {
        let mut path = path.to_vec();
        for _ in 0..MAX_HOPS {
            let k = (0..=path.len())
                .rev()
                .find(|&k| index.contains_key(&path[..k]))?;
            let file = index[&path[..k]];
            let Some(next) = path.get(k) else {
                return Some(file);
            };
            match bindings[file].get(next.as_str()) {
                Some(target) if !path.starts_with(target) => {
                    let mut through = target.to_vec();
                    through.extend_from_slice(&path[k + 1..]);
                    path = through;
                }
                _ => return Some(file),
            }
        }
        None
    };
    let in_graph = |i: usize| !sources[i].test && !sources[i].module.is_empty();
    let mut edges: BTreeMap<(usize, usize), String> = BTreeMap::new();
    for (from, names) in named.iter().enumerate() {
        if !in_graph(from) {
            continue;
        }
        for n in names {
            let Some(to) = locate(&n.path) else { continue };
            let (a, b) = (&sources[from].module, &sources[to].module);
            if to != from && in_graph(to) && a[0] == b[0] && !b.starts_with(a) {
                edges
                    .entry((from, to))
                    .or_insert_with(|| format!("crate::{}", n.path.join("::")));
            }
        }
    }
    let nodes: Vec<String> = (0..sources.len()).map(|i| i.to_string()).collect();
    let pairs: Vec<(String, String)> = edges
        .keys()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let mut circles: Vec<FileCircle> = strongly_connected(&nodes, &pairs)
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|component| {
            let members: BTreeSet<usize> =
                component.iter().filter_map(|c| c.parse().ok()).collect();
            let mut files: Vec<String> = members.iter().map(|&i| sources[i].file.into()).collect();
            files.sort();
            let edges = edges
                .iter()
                .filter(|((a, b), _)| members.contains(a) && members.contains(b))
                .map(|((a, b), name)| {
                    (
                        sources[*a].file.into(),
                        sources[*b].file.into(),
                        name.clone(),
                    )
                })
                .collect();
            let first = members.first().copied().unwrap_or_default();
            FileCircle {
                module: sources[first].module[0].clone(),
                files,
                edges,
            }
        })
        .collect();
    circles.sort_by(|a, b| a.files.cmp(&b.files));
    circles
}

#[cfg(test)]
#[path = "files_tests.rs"]
mod tests;
