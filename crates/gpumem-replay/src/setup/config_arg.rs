//! `--config`: a pool layout in the facade's grammar (`gpumem::config::layout`,
//! what `GPUMEM_CONF=pools:…` takes), `GPUMEM_CONF` items, or a file
//! holding either — as text, or as `gpumem plan --json` output (its
//! `config` field), so a measured plan replays as printed.
//!
//! The command starts from what a program's `Device` starts from: the
//! facade's defaults with the `GPUMEM_CONF` variable applied. `--config`
//! is applied on top, so a flag beats the environment, as on any command.

use std::path::Path;

use gpumem::config::GpumemConfig;
use gpumem::config::conf::CONF_KEYS;
use gpumem::config::layout::{LAYOUT_WORDS, LayoutError, parse_layout};

use crate::error::{ReplayError, Result};

/// What `--config` accepts, for error messages.
pub const CONFIG_SYNTAX: &str = "GPUMEM_CONF items such as `pools:sub_slices,max_page:20GiB`, \
     or a file holding a layout or items (such as `gpumem plan --json` output)";

fn invalid(value: &str, err: &LayoutError) -> ReplayError {
    ReplayError::InvalidArgument {
        option: "--config",
        value: value.to_string(),
        reason: format!(
            "{}; expected {}, or {CONFIG_SYNTAX}",
            err.reason,
            gpumem::config::layout::LAYOUT_SYNTAX
        ),
    }
}

/// Whether `text` is `GPUMEM_CONF` items (its first item's key is a key).
fn is_conf(text: &str) -> bool {
    let key = text.split([':', ',']).next().unwrap_or("").trim();
    CONF_KEYS.iter().any(|(k, _, _)| *k == key)
}

/// Edits (insert, delete, substitute one character) from `a` to `b`.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// The layout word `word` is a typo of (at most two edits, case and `-`
/// for `_` aside), if one is that close.
pub fn near_layout(word: &str) -> Option<&'static str> {
    let word = word.to_ascii_lowercase().replace('-', "_");
    LAYOUT_WORDS
        .into_iter()
        .map(|name| (edit_distance(&word, name), name))
        .filter(|&(d, _)| d <= 2)
        .min()
        .map(|(_, name)| name)
}

/// `base` with the layout or `GPUMEM_CONF` items of `text` applied.
fn apply(value: &str, text: &str, base: &GpumemConfig) -> Result<GpumemConfig> {
    let mut config = base.clone();
    if is_conf(text) {
        config
            .apply_conf(text)
            .map_err(|e| ReplayError::InvalidArgument {
                option: "--config",
                value: value.to_string(),
                reason: e.to_string(),
            })?;
    } else {
        config.pools = parse_layout(text).map_err(|e| invalid(value, &e))?;
    }
    Ok(config)
}

/// The configuration `--config` makes of `base` (the facade's defaults
/// with `GPUMEM_CONF` applied, see [`base_config`]).
///
/// # Errors
/// A value that looks like a file name and names none is "file not
/// found"; a layout or item the facade refuses says why and what is valid.
pub fn load_config(value: &str, base: &GpumemConfig) -> Result<GpumemConfig> {
    let path = Path::new(value);
    if !path.is_file() {
        let not_found = |hint: String| ReplayError::FileNotFound {
            option: "--config",
            path: path.to_path_buf(),
            hint,
        };
        return match classify(value) {
            _ if path.exists() => apply(value, value, base),
            ConfigValue::Path => Err(not_found(String::new())),
            ConfigValue::Word => match apply(value, value, base) {
                Err(ReplayError::InvalidArgument { .. }) if near_layout(value).is_some() => {
                    let name = near_layout(value).unwrap_or_default();
                    Err(not_found(format!(
                        "; nor is it a layout: did you mean `{name}`?"
                    )))
                }
                Err(ReplayError::InvalidArgument { reason, .. }) => {
                    Err(not_found(format!("; nor is it a layout: {reason}")))
                }
                other => other,
            },
            ConfigValue::Layout => apply(value, value, base),
        };
    }

    let text = std::fs::read_to_string(path).map_err(|source| ReplayError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let text = text.trim_start_matches('\u{feff}');
    let refuse = |reason: &str| ReplayError::InvalidArgument {
        option: "--config",
        value: value.to_string(),
        reason: reason.to_string(),
    };
    let json = serde_json::from_str::<serde_json::Value>(text);
    let named_json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    match json {
        Ok(serde_json::Value::Object(json)) => match json.get("config").and_then(|c| c.as_str()) {
            Some(layout) => apply(value, layout, base),
            None => Err(refuse(
                "the file is a JSON object without a \"config\" string; write it with \
                 `gpumem plan --json`, or put a layout such as `arenas` in it",
            )),
        },
        Ok(serde_json::Value::String(layout)) => apply(value, &layout, base),
        Ok(other) => Err(refuse(&format!(
            "the file holds a JSON {}, not an object with a \"config\" string; write it with \
             `gpumem plan --json`, or put a layout such as `arenas` in a text file",
            json_kind(&other)
        ))),
        _ if named_json => Err(refuse(
            "the file is named .json but is not JSON; write it with `gpumem plan --json`, \
             or put a layout such as `arenas` in a text file",
        )),
        _ => apply(value, text.trim(), base),
    }
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

/// The facade's defaults with the `GPUMEM_CONF` variable applied, as a
/// program's `Device` starts.
///
/// # Errors
/// A `GPUMEM_CONF` the facade refuses, with its reason.
pub fn base_config() -> Result<GpumemConfig> {
    GpumemConfig::from_env().map_err(|e| ReplayError::InvalidArgument {
        option: "GPUMEM_CONF",
        value: std::env::var(gpumem::config::conf::CONF_VAR).unwrap_or_default(),
        reason: e.to_string(),
    })
}

/// What a `--config` value that names no file was meant as.
#[derive(Debug, PartialEq, Eq)]
enum ConfigValue {
    /// A file name: it ends in `.json` or `.txt`, starts like a path
    /// (`/`, `.`, `~`), has a `/` before any `:`, or a `.` before its
    /// first `:` (pool kinds are plain words; `sliced:8MiB/64KiB` is a
    /// layout).
    Path,
    /// One word that is not a layout keyword: a file name or a misspelt
    /// layout.
    Word,
    /// A layout (a keyword or `kind:` pools).
    Layout,
}

fn classify(value: &str) -> ConfigValue {
    let v = value.trim();
    let lower = v.to_ascii_lowercase();
    let before_colon = v.split(':').next().unwrap_or("");
    if lower.ends_with(".json")
        || lower.ends_with(".txt")
        || v.starts_with(['/', '.', '~'])
        || before_colon.contains(['/', '\\'])
        || (v.contains(':') && before_colon.contains('.'))
    {
        ConfigValue::Path
    } else if !v.contains(':') && !v.is_empty() && parse_layout(v).is_err() {
        ConfigValue::Word
    } else {
        ConfigValue::Layout
    }
}
