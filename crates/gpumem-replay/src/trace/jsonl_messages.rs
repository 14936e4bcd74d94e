//! What the JSONL reader says about a line serde refused: serde's own
//! wording, minus what misleads (a "line 1" position, a float type for an
//! oversized size, an unnamed field).

/// Turns a serde_json error into a message without its misleading
/// "line 1" position (each line is parsed alone).
pub(super) fn describe(err: &serde_json::Error) -> String {
    if err.is_eof() {
        return "line is truncated: it ends before the JSON object closes".to_string();
    }
    let text = err.to_string();
    let bare = text
        .rfind(" at line ")
        .map_or(text.as_str(), |at| &text[..at]);
    // Internally tagged events are buffered before decoding, so some errors
    // carry no position (column 0); only real positions are shown.
    match err.column() {
        0 => bare.to_string(),
        column => format!("{bare} (column {column})"),
    }
}

/// The digits of a `"size"` written as a whole number too large for 64
/// bits. serde_json reads such a number as a float, so the error it gives
/// ("invalid type: floating point") would hide the real problem.
pub(super) fn oversized_size(text: &str) -> Option<&str> {
    let at = text.find("\"size\"")? + "\"size\"".len();
    let rest = text[at..].trim_start().strip_prefix(':')?.trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let digits = &rest[..end];
    let follows = rest[end..].chars().next();
    let whole = !digits.is_empty() && !matches!(follows, Some('.' | 'e' | 'E'));
    (whole && digits.parse::<u64>().is_err()).then_some(digits)
}

/// The whole-number fields of an event line.
const COUNT_FIELDS: [&str; 4] = ["size", "id", "stream", "time_us"];

/// The first whole-number field of `text` holding something else (a
/// negative number, a fraction, a string), named with what it holds:
/// serde reads events through their `op` tag, so its own error ("invalid
/// value: integer `-4096`, expected u64") never names the field.
pub(super) fn bad_count(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let object = value.as_object()?;
    COUNT_FIELDS.into_iter().find_map(|key| {
        let field = object.get(key)?;
        if field.is_null() || field.as_u64().is_some() {
            return None;
        }
        let what = if key == "size" { " of bytes" } else { "" };
        Some(format!(
            "field `{key}` is {field}, not a whole number{what} from 0 to {}",
            u64::MAX
        ))
    })
}
