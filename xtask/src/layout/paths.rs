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

/// A file's module path inside the crate: `src/a/b.rs` → `[a, b]`,
/// `src/a/mod.rs` → `[a]`, `src/lib.rs` → `[]`, and a test file beside its
/// module (`src/a/b_tests.rs`, included as `#[path] mod tests`) → `[a, b, tests]`.
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

/// Expands a `use` tree starting at `i` with `prefix`; pushes each full path.
fn use_tree(tokens: &[Token], i: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let (path, mut i) = read_path(tokens, i);
    let mut full = prefix.to_vec();
    full.extend(path);
    if colons(tokens, i) && tokens.get(i + 2) == Some(&Token::Punct('{')) {
        i += 3;
        loop {
            match tokens.get(i) {
                Some(Token::Punct('}')) | None => return i + 1,
                Some(Token::Punct(',')) => i += 1,
                Some(Token::Punct('*')) => i += 1,
                _ => i = use_tree(tokens, i, &full, out),
            }
        }
    }
    if colons(tokens, i) && tokens.get(i + 2) == Some(&Token::Punct('*')) {
        i += 3;
    }
    out.push(full);
    i
}

/// The paths a file names, each made absolute (from the crate root), with
/// the module each sits in. `file_module` is the file's module path.
fn absolute_paths(text: &str, file_module: &[String]) -> Vec<Vec<String>> {
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
                out.extend(paths.iter().filter_map(|p| resolve(p, &module)));
                i = next.max(i + 1);
                continue;
            }
            Token::Ident(start) if matches!(start.as_str(), "crate" | "super" | "self") => {
                let preceded_by_colons = i >= 2 && colons(&tokens, i - 2);
                if !preceded_by_colons && colons(&tokens, i + 1) {
                    let (path, next) = read_path(&tokens, i);
                    if let Some(p) = resolve(&path, &here()) {
                        out.push(p);
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

/// `path` (starting with `crate`, `super` or `self`) made absolute against
/// `module`; `None` for a path that starts elsewhere (another crate, or a
/// child module named without `self::`).
fn resolve(path: &[String], module: &[String]) -> Option<Vec<String>> {
    let mut rest = path.iter().peekable();
    let mut base: Vec<String> = match rest.peek().map(|s| s.as_str()) {
        Some("crate") => {
            rest.next();
            Vec::new()
        }
        Some("super" | "self") => module.to_vec(),
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
            for path in paths {
                let path = resolve(&path, &[]).unwrap_or(path);
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
    absolute_paths(text, file_module)
        .into_iter()
        .filter_map(|path| {
            let first = path.first()?;
            if modules.contains(first) {
                Some(first.clone())
            } else {
                reexports.get(first).cloned()
            }
        })
        .collect()
}
