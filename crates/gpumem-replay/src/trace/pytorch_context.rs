//! What a PyTorch snapshot holds besides the chosen device's events, read
//! and reported as notes that say what each part is and why it is, or is
//! not, replayed:
//!
//! - `allocator_settings`: the caching allocator's configuration when the
//!   snapshot was taken (`PYTORCH_CUDA_ALLOC_CONF`, `max_split_size`,
//!   `expandable_segments`, `roundup_power2_divisions`, ...), named with
//!   the `compare` row or option that models each;
//! - `external_annotations`: markers (`record_function` ranges, user
//!   annotations) with a name, a stage and a time: they mark phases, not
//!   memory, so they are counted and named, not replayed;
//! - the other devices' traces (one device is replayed; `--device N`
//!   reads another) and the streams the chosen device allocated on.

use super::pickle::Py;

/// How many distinct annotation names a note lists.
const NAMES_LISTED: usize = 5;

/// The notes for device `chosen` of a snapshot whose top-level dict is
/// `top` and whose `device_traces` are `devices`.
pub(crate) fn context_notes(top: &Py, devices: &[Py], chosen: usize) -> Vec<String> {
    let mut notes = Vec::new();
    match top.get("allocator_settings") {
        None => {}
        Some(settings @ Py::Dict(_)) => notes.push(settings_note(settings)),
        Some(other) => notes.push(format!(
            "allocator_settings is a {}, not a dict: not read",
            other.kind()
        )),
    }
    if let Some(note) = annotations_note(top.get("external_annotations"), chosen) {
        notes.push(note);
    }
    let others: Vec<String> = devices
        .iter()
        .enumerate()
        .filter(|(d, _)| *d != chosen)
        .filter_map(|(d, t)| match t {
            Py::List(events) if !events.is_empty() => {
                Some(format!("device {d} ({} events)", events.len()))
            }
            _ => None,
        })
        .collect();
    if !others.is_empty() {
        notes.push(format!(
            "this report is device {chosen}'s; the snapshot also traces {} (--device N reads one)",
            others.join(", ")
        ));
    }
    if let Some(Py::List(events)) = devices.get(chosen) {
        let streams = streams_of(events);
        if streams.len() > 1 {
            let named: Vec<String> = streams.iter().map(|s| format!("{s:#x}")).collect();
            notes.push(format!(
                "device {chosen} allocated on {} streams ({}): each is replayed on its own \
                 gpumem stream (--streams one merges them)",
                streams.len(),
                named.join(", ")
            ));
        }
    }
    notes
}

/// A setting's value as the note writes it.
fn value(v: &Py) -> Option<String> {
    match v {
        Py::None => None,
        Py::Bool(b) => Some(b.to_string()),
        Py::Int(i) => Some(i.to_string()),
        Py::Float(f) => Some(f.to_string()),
        Py::Str(s) if s.is_empty() => None,
        Py::Str(s) => Some(format!("`{s}`")),
        Py::List(items) | Py::Tuple(items) => {
            let listed: Vec<String> = items.iter().filter_map(value).collect();
            Some(format!("[{}]", listed.join(", ")))
        }
        Py::Dict(entries) => {
            let listed: Vec<String> = entries
                .iter()
                .filter_map(|(k, v)| Some(format!("{}: {}", value(k)?, value(v)?)))
                .collect();
            Some(format!("{{{}}}", listed.join(", ")))
        }
        other => Some(other.kind().to_string()),
    }
}

fn settings_note(settings: &Py) -> String {
    let Py::Dict(entries) = settings else {
        return String::new();
    };
    let listed: Vec<String> = entries
        .iter()
        .filter_map(|(k, v)| match k {
            Py::Str(key) if &**key == "max_split_size" && matches!(v, Py::Int(i) if *i < 0) => {
                Some(format!("{key} unlimited"))
            }
            Py::Str(key) => Some(format!("{key} {}", value(v)?)),
            _ => None,
        })
        .collect();
    let expandable = matches!(settings.get("expandable_segments"), Some(Py::Bool(true)));
    let row = if expandable {
        "PyTorch ran with expandable segments: compare's pytorch-expandable row is their model"
    } else {
        "PyTorch ran without expandable segments: compare's pytorch row is its model"
    };
    let listed = match listed.is_empty() {
        true => "every value unset (PyTorch's defaults)".to_string(),
        false => listed.join(", "),
    };
    format!(
        "PyTorch's allocator settings (allocator_settings): {listed}; {row}, with PyTorch's \
         defaults unless --pytorch-conf sets max_split_size_mb or roundup_power2_divisions"
    )
}

/// Annotations of device `chosen` (an annotation without a device is
/// counted for every device).
fn annotations_note(annotations: Option<&Py>, chosen: usize) -> Option<String> {
    let items = match annotations? {
        Py::List(items) => items,
        other => {
            return Some(format!(
                "external_annotations is a {}, not a list: not read",
                other.kind()
            ));
        }
    };
    let mine: Vec<&Py> = items
        .iter()
        .filter(|a| match a.get("device") {
            Some(Py::Int(d)) => usize::try_from(*d).is_ok_and(|d| d == chosen),
            _ => true,
        })
        .collect();
    if mine.is_empty() {
        return None;
    }
    let mut names: Vec<&str> = Vec::new();
    for a in &mine {
        if let Some(Py::Str(name)) = a.get("name")
            && !names.contains(&&**name)
        {
            names.push(name);
        }
    }
    let more = names.len().saturating_sub(NAMES_LISTED);
    let mut listed: Vec<String> = names
        .iter()
        .take(NAMES_LISTED)
        .map(|n| format!("`{n}`"))
        .collect();
    if more > 0 {
        listed.push(format!("{more} more"));
    }
    let named = match listed.is_empty() {
        true => String::new(),
        false => format!(", named {}", listed.join(", ")),
    };
    Some(format!(
        "{} external annotation(s) of device {chosen} skipped (external_annotations{named}): \
         they mark phases in time, not memory",
        mine.len()
    ))
}

/// The distinct streams of the `alloc` events in `events`, in order of
/// first use.
fn streams_of(events: &[Py]) -> Vec<u64> {
    let mut streams = Vec::new();
    for event in events {
        if !matches!(event.get("action"), Some(Py::Str(a)) if &**a == "alloc") {
            continue;
        }
        let stream = match event.get("stream") {
            Some(Py::Int(s)) => u64::try_from(*s).unwrap_or(0),
            _ => 0,
        };
        if !streams.contains(&stream) {
            streams.push(stream);
        }
    }
    streams
}
