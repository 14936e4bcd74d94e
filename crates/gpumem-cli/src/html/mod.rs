//! `--html FILE`: one self-contained page to look into a replay.
//!
//! PyTorch's `memory_viz` is the tool its users open to see where memory
//! went; this is gpumem's, written as a single HTML file with its data and
//! script inline, so it opens from disk, offline, in any browser:
//!
//! - a timeline of live and reserved bytes (and virtual, and the recorded
//!   allocator's own reserved bytes, when those exist) that zooms: drag
//!   across it to zoom in, double-click to zoom out;
//! - per-pool reserved bytes as stacked bands beneath it;
//! - click a point: the allocations live there, grouped by origin (tag or
//!   frame), most bytes first; click a group: the whole stacks its
//!   allocations came from, Python frames first;
//! - the summary table of the text report.
//!
//! The page reads `#at=X` (select X) and `#zoom=A-B` from its address, so a
//! script — the browser test in `cargo xtask html-check` — can drive it.
//!
//! Allocations are embedded as intervals `[start, end, bytes, origin,
//! stack]` (their stacks in `stacks.rs`);
//! a trace with more than [`MAX_INTERVALS`] keeps the largest ones and the
//! page says how many it left out.

use std::io::Write;

use serde::Serialize;

use crate::trace::{Event, Trace};

mod stacks;

use stacks::{PageFrame, PageStacks};

/// Most allocations a page embeds (about 4 MB of JSON).
pub const MAX_INTERVALS: usize = 100_000;

/// What the x axis counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum XAxis {
    /// Ops, from 1.
    Ops,
    /// Microseconds, as the trace timed its events.
    Time,
}

/// One line over the x axis: `(x, bytes)` points in x order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Curve {
    /// Legend name.
    pub name: String,
    /// The points.
    pub points: Vec<(u64, u64)>,
}

/// Everything a page shows.
#[derive(Clone)]
pub struct HtmlReport<'a> {
    /// Page title (the trace and the layout).
    pub title: String,
    /// Summary rows: name, value.
    pub summary: Vec<(String, String)>,
    /// Lines over the timeline (live, reserved, ...).
    pub curves: Vec<Curve>,
    /// Stacked bands beneath it (per-pool reserved bytes).
    pub bands: Vec<Curve>,
    /// The trace replayed, for the live allocations at a point.
    pub trace: &'a Trace,
    /// What x counts.
    pub x: XAxis,
    /// The x of event `i` of the trace (its op number, or its time), as
    /// the curves count x.
    pub x_of_event: &'a dyn Fn(usize) -> u64,
}

/// `[start x, end x (or null: live at the end), bytes, origin index or -1,
/// stack index or -1]`.
type Interval = (u64, Option<u64>, u64, i64, i64);

impl std::fmt::Debug for HtmlReport<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HtmlReport")
            .field("title", &self.title)
            .field("curves", &self.curves.len())
            .field("x", &self.x)
            .finish_non_exhaustive()
    }
}

#[derive(Serialize)]
struct PageData<'a> {
    title: &'a str,
    x: XAxis,
    summary: &'a [(String, String)],
    curves: &'a [Curve],
    bands: &'a [Curve],
    origins: Vec<String>,
    intervals: Vec<Interval>,
    left_out: usize,
    frames: Vec<PageFrame>,
    stacks: Vec<Vec<u32>>,
}

/// Every allocation of the trace as an interval, the largest
/// [`MAX_INTERVALS`] kept; returns the origin names used, how many were
/// left out, and the stacks of those kept.
fn intervals(
    trace: &Trace,
    x_of: &dyn Fn(usize) -> u64,
) -> (Vec<Interval>, Vec<String>, usize, PageStacks) {
    use std::collections::HashMap;
    let mut open: HashMap<u64, usize> = HashMap::new();
    let mut all: Vec<(u64, Option<u64>, u64, usize)> = Vec::new();
    for (index, event) in trace.events.iter().enumerate() {
        match *event {
            Event::Alloc { id, size, .. } => {
                open.insert(id, all.len());
                all.push((x_of(index), None, size, index));
            }
            Event::Free { id } => {
                if let Some(at) = open.remove(&id) {
                    all[at].1 = Some(x_of(index));
                }
            }
            Event::Mode(_) | Event::Cleanup => {}
        }
    }
    let left_out = all.len().saturating_sub(MAX_INTERVALS);
    if left_out > 0 {
        all.sort_by_key(|a| std::cmp::Reverse(a.2));
        all.truncate(MAX_INTERVALS);
        all.sort_by_key(|a| a.0);
    }
    let mut names: Vec<String> = Vec::new();
    let mut index: HashMap<&str, i64> = HashMap::new();
    let mut stacks = PageStacks::default();
    let out = all
        .into_iter()
        .map(|(start, end, bytes, event)| {
            let origin = match trace.origins.origin_of(event) {
                Some(name) => *index.entry(name).or_insert_with(|| {
                    names.push(name.to_string());
                    names.len() as i64 - 1
                }),
                None => -1,
            };
            let stack = stacks.of_event(&trace.origins, event);
            (start, end, bytes, origin, stack)
        })
        .collect();
    (out, names, left_out, stacks)
}

/// JSON safe to place inside a `<script>` element: `<`, `>` and `&` are
/// escaped, so no string in the data can close the element.
fn script_json(value: &impl Serialize) -> serde_json::Result<String> {
    let text = serde_json::to_string(value)?;
    Ok(text
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026"))
}

/// Write the page.
///
/// # Errors
/// What writing to `out` returns.
pub fn write_html(out: &mut impl Write, report: &HtmlReport<'_>) -> std::io::Result<()> {
    let (intervals, origins, left_out, stacks) = intervals(report.trace, report.x_of_event);
    let data = PageData {
        title: &report.title,
        x: report.x,
        summary: &report.summary,
        curves: &report.curves,
        bands: &report.bands,
        origins,
        intervals,
        left_out,
        frames: stacks.frames,
        stacks: stacks.stacks,
    };
    let json = script_json(&data).map_err(std::io::Error::other)?;
    let title = report
        .title
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('{', "&#123;");
    // The data goes in last, so nothing inside it is taken for a marker.
    let page = include_str!("page.html")
        .replace("{{SCRIPT}}", include_str!("page.js"))
        .replace("{{TITLE}}", &title)
        .replace("{{DATA}}", &json);
    out.write_all(page.as_bytes())?;
    out.flush()
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
