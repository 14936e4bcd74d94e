//! Which of a crate's top-level modules a source file names.
//!
//! A small lexer (comments, strings, chars and lifetimes skipped) feeds a
//! reader of paths: `use` trees (braces expanded) and paths in code, both
//! starting with `crate`, `super` or `self`. Each is made absolute against
//! the module the code sits in (its file's path plus inline `mod x { … }`
//! blocks) and mapped to its first segment.

use super::lex::{Token, lex};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A file's module path inside the crate: `src/DIR/FILE.rs` → `[DIR, FILE]`,
/// `src/DIR/mod.rs` → `[DIR]`, `src/lib.rs` → `[]`, and a test file beside
/// its module (`src/DIR/FILE_tests.rs`, included as `#[path] mod tests`) →
/// `[DIR, FILE, tests]`.
pub fn module_path(inside_src: &Path) -> Vec<String> {
    let mut parts: Vec<String> = inside_src
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod")) {
        parts.pop();
    }
    if let Some(module) = parts.last().and_then(|p| p.strip_suffix("_tests")) {
        let module = module.to_string();
        parts.pop();
        parts.extend([module, "tests".to_string()]);
    }
    if parts.len() == 1 && matches!(parts[0].as_str(), "lib" | "main") {
        parts.clear();
    }
    parts
}

/// Whether tokens at `i` are `::`.
fn colons(tokens: &[Token], i: usize) -> bool {
    tokens.get(i) == Some(&Token::Punct(':')) && tokens.get(i + 1) == Some(&Token::Punct(':'))
}

/// Reads a path of identifiers joined by `::` from `i`; returns it and the
/// index after it (stopping before a `::{` group).
fn read_path(tokens: &[Token], mut i: usize) -> (Vec<String>, usize) {
    let mut path = Vec::new();
    while let Some(Token::Ident(name)) = tokens.get(i) {
        path.push(name.clone());
        i += 1;
        if colons(tokens, i) && matches!(tokens.get(i + 2), Some(Token::Ident(_))) {
            i += 2;
        } else {
            break;
        }
    }
    (path, i)
}

/// One path a `use` tree names, with the name it binds in the file (its
/// last segment, or its `as` alias; none for a glob or `as _`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsePath {
    /// The path as written (`super::frames`, `{self}` folded into its prefix).
    pub path: Vec<String>,
    /// The name it binds.
    pub binds: Option<String>,
}

/// Expands a `use` tree starting at `i` with `prefix`; pushes each full path.
fn use_tree(tokens: &[Token], i: usize, prefix: &[String], out: &mut Vec<UsePath>) -> usize {
    let (path, mut i) = read_path(tokens, i);
    let mut full = prefix.to_vec();
    full.extend(path);
    if colons(tokens, i) && tokens.get(i + 2) == Some(&Token::Punct('{')) {
        i += 3;
        loop {
            match tokens.get(i) {
                Some(Token::Punct('}')) | None => return i + 1,
                Some(Token::Punct(',')) => i += 1,
                Some(Token::Punct('*')) => {
                    out.push(UsePath {
                        path: full.clone(),
                        binds: None,
                    });
                    i += 1;
                }
                _ => i = use_tree(tokens, i, &full, out),
            }
        }
    }
    if colons(tokens, i) && tokens.get(i + 2) == Some(&Token::Punct('*')) {
        out.push(UsePath {
            path: full,
            binds: None,
        });
        return i + 3;
    }
    if full.len() > 1 && full.last().is_some_and(|s| s == "self") {
        full.pop();
    }
    let mut binds = full.last().cloned();
    if tokens.get(i) == Some(&Token::Ident("as".into())) {
        binds = match tokens.get(i + 1) {
            Some(Token::Ident(alias)) if alias != "_" => Some(alias.clone()),
            _ => None,
        };
        i += 2;
    }
    out.push(UsePath { path: full, binds });
    i
}

/// A path a file names, made absolute (from the crate root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The absolute path.
    pub path: Vec<String>,
    /// The name a `use` binds with it; none for a path in code.
    pub binds: Option<String>,
}

/// The paths a file names, each made absolute (from the crate root), with
/// the module each sits in. `file_module` is the file's module path;
/// `known` the crate's module paths, so that a path starting with a child
/// module's name (`use event::Trace;` in `trace/mod.rs`) resolves too.
pub fn absolute_paths(
    text: &str,
    file_module: &[String],
    known: &BTreeSet<Vec<String>>,
) -> Vec<Named> {
    let tokens = lex(text);
    let mut out = Vec::new();
    // Inline modules: (name, brace depth inside them).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        let here = || {
            let mut m = file_module.to_vec();
            m.extend(inline.iter().map(|(n, _)| n.clone()));
            m
        };
        match &tokens[i] {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Token::Ident(kw) if kw == "mod" => {
                if let (Some(Token::Ident(name)), Some(Token::Punct('{'))) =
                    (tokens.get(i + 1), tokens.get(i + 2))
                {
                    depth += 1;
                    inline.push((name.clone(), depth));
                    i += 3;
                    continue;
                }
            }
            Token::Ident(kw) if kw == "use" => {
                let mut paths = Vec::new();
                let next = use_tree(&tokens, i + 1, &[], &mut paths);
                let module = here();
                out.extend(paths.into_iter().filter_map(|p| {
                    Some(Named {
                        path: resolve(&p.path, &module, known)?,
                        binds: p.binds,
                    })
                }));
                i = next.max(i + 1);
                continue;
            }
            Token::Ident(start) => {
                let preceded_by_colons = i >= 2 && colons(&tokens, i - 2);
                let starts_path = matches!(start.as_str(), "crate" | "super" | "self")
                    || is_child(start, &here(), known);
                if starts_path && !preceded_by_colons && colons(&tokens, i + 1) {
                    let (path, next) = read_path(&tokens, i);
                    if let Some(path) = resolve(&path, &here(), known) {
                        out.push(Named { path, binds: None });
                    }
                    i = next;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Whether `name` is a child module of `module` (a file of the crate).
fn is_child(name: &str, module: &[String], known: &BTreeSet<Vec<String>>) -> bool {
    let mut child = module.to_vec();
    child.push(name.to_string());
    known.contains(&child)
}

/// `path` (starting with `crate`, `super`, `self` or the name of one of
/// `module`'s child modules in `known`) made absolute against `module`;
/// `None` for a path that starts elsewhere (another crate, a local name).
fn resolve(
    path: &[String],
    module: &[String],
    known: &BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    let mut rest = path.iter().peekable();
    let mut base: Vec<String> = match rest.peek().map(|s| s.as_str()) {
        Some("crate") => {
            rest.next();
            Vec::new()
        }
        Some("super" | "self") => module.to_vec(),
        Some(first) if is_child(first, module, known) => module.to_vec(),
        _ => return None,
    };
    while let Some(seg) = rest.peek() {
        match seg.as_str() {
            "super" => {
                base.pop()?;
            }
            "self" => {}
            _ => break,
        }
        rest.next();
    }
    base.extend(rest.cloned());
    Some(base)
}

/// Items the crate root re-exports from a module: `pub use a::b::Item;`
/// in `lib.rs` maps `Item` → `a`.
pub fn root_reexports(text: &str, modules: &BTreeSet<String>) -> Vec<(String, String)> {
    let tokens = lex(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i] == Token::Ident("use".into()) {
            let mut paths = Vec::new();
            i = use_tree(&tokens, i + 1, &[], &mut paths);
            for UsePath { path, .. } in paths {
                let path = resolve(&path, &[], &BTreeSet::new()).unwrap_or(path);
                if let (Some(first), Some(last)) = (path.first(), path.last())
                    && path.len() >= 2
                    && modules.contains(first)
                {
                    out.push((last.clone(), first.clone()));
                }
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The crate's top-level modules a file names (its own included).
pub fn referenced_modules(
    text: &str,
    file_module: &[String],
    modules: &BTreeSet<String>,
    reexports: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    absolute_paths(text, file_module, &BTreeSet::new())
        .into_iter()
        .filter_map(|Named { path, .. }| {
            let first = path.first()?;
            if modules.contains(first) {
                Some(first.clone())
            } else {
                reexports.get(first).cloned()
            }
        })
        .collect()
}
