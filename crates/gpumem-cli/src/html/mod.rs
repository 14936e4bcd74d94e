//! `--html FILE`: one self-contained page to look into a replay.
//!
//! PyTorch's `memory_viz` is the tool its users open to see where memory
//! went; this is gpumem's, written as a single HTML file with its data and
//! script inline, so it opens from disk, offline, in any browser:
//!
//! - a timeline of live and reserved bytes (and virtual, and the recorded
//!   allocator's own reserved bytes, when those exist) that zooms: drag
//!   across it to zoom in, double-click to zoom out;
//! - a stacked timeline of live bytes by origin (the top origins by peak
//!   bytes, the rest as one band, the memory live before recording as its
//!   own), by pool (each pool's reserved bytes) or by size class; hover a
//!   band to name it, click it to list its allocations and their stacks;
//!   the x axis names op numbers, and times when the trace has them;
//! - click a point: the allocations live there, grouped by origin (tag or
//!   frame), most bytes first; click a group: the whole stacks its
//!   allocations came from, Python frames first;
//! - the summary table of the text report.
//!
//! The page reads `#at=X` (select X), `#zoom=A-B`, `#view=origin|pool|size`,
//! `#hover=N` and `#band=N` (hover or click the N-th band) from its
//! address, so a script — the browser test in `cargo xtask html-check` —
//! can drive it; it marks its body `data-ready`, `data-load-ms` (from
//! navigation to drawn) and `data-errors` (script errors seen).
//!
//! Allocations are embedded as intervals `[start, end, bytes, origin,
//! stack]` (their stacks in `stacks.rs`);
//! a trace with more than [`MAX_INTERVALS`] keeps the largest ones and the
//! page says how many it left out.

use std::io::Write;

use serde::Serialize;

use gpumem_replay::trace::Trace;

mod intervals;
mod stacks;

use intervals::{Interval, intervals};
use stacks::PageFrame;

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
    /// `(op, time_us)` pairs in op order, sampled, when the trace has
    /// times: the x axis names both.
    pub clock: Vec<(u64, u64)>,
}

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
    /// The first this many intervals are the memory live before
    /// recording began.
    pre_existing: usize,
    left_out: usize,
    frames: Vec<PageFrame>,
    stacks: Vec<Vec<u32>>,
    /// Per stack, the forward stack of its autograd node (often empty).
    forward: Vec<Vec<u32>>,
    clock: &'a [(u64, u64)],
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
    let page = intervals(report.trace, report.x_of_event);
    let data = PageData {
        title: &report.title,
        x: report.x,
        summary: &report.summary,
        curves: &report.curves,
        bands: &report.bands,
        origins: page.origins,
        intervals: page.intervals,
        pre_existing: page.pre_existing,
        left_out: page.left_out,
        frames: page.stacks.frames,
        stacks: page.stacks.stacks,
        forward: page.stacks.forward,
        clock: &report.clock,
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
        .replace(
            "{{SCRIPT}}",
            concat!(
                include_str!("page.js"),
                include_str!("timeline.js"),
                include_str!("start.js")
            ),
        )
        .replace("{{TITLE}}", &title)
        .replace("{{DATA}}", &json);
    out.write_all(page.as_bytes())?;
    out.flush()
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
