//! `cargo xtask html-check`: the `--html` report in a real browser.
//!
//! Replays a small tagged trace and a built-in workload with `--html`, opens
//! each page in headless Chromium with `#at=OP` in its address (the page
//! selects that point as a click would), and checks the DOM the page built:
//! the curves are drawn, and the table of allocations live at the point
//! lists the trace's tags with their bytes; on a PyTorch snapshot with C++
//! stacks (`#open=N` opens a row as a click would), a group's stack lists
//! the user's Python frames. On a snapshot with a backward pass it hovers
//! and clicks a band of the stacked timeline (`#hover=N&band=N`, which the
//! page turns into mouse events on the band) and checks the band is named
//! and its allocations listed. On a snapshot the size of a real training
//! step's (1,010 segments, 19,326 events, 51 GiB, written by
//! `make_cpp_snapshot.py`, so python3 is needed) it prints the time the
//! page took from navigation to drawn (`data-load-ms`) and to answer a
//! hover and a click (`data-respond-ms`), and fails past a second. Every
//! page must report no script error and Chromium's log no console
//! message. A screenshot of each page goes to `target/html-check/`.
//! Without Chromium (the Debian package `chromium`) the check says so and
//! skips.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{cargo, run};

/// Where the pages and screenshots go.
const OUT: &str = "target/html-check";

/// A trace whose peak holds two tags: 48 MiB of weights, 16 MiB of kv-cache.
const TAGGED: &str = r#"{"format":"gpumem-trace","version":1}
{"op":"alloc","id":1,"size":33554432,"tag":"weights"}
{"op":"alloc","id":2,"size":16777216,"tag":"weights"}
{"op":"alloc","id":3,"size":16777216,"tag":"kv-cache"}
{"op":"alloc","id":4,"size":4096}
{"op":"free","id":4}
{"op":"free","id":3}
"#;

fn chromium() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

/// Chromium's flags for a closed network (no background connections).
fn headless(browser: &Path, profile: &Path) -> Command {
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--window-size=1200,1100",
        "--virtual-time-budget=5000",
    ]);
    cmd.arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

fn replay_html(args: &[&str], page: &Path) -> Result<(), String> {
    let page = page.display().to_string();
    let mut all = vec!["run", "-q", "-p", "gpumem-cli", "--", "replay"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--html", &page]);
    run(&mut cargo(&all))
}

/// Open `page` with `hash` in its address (`at=4`, `at=16&open=2`);
/// return the DOM the page built and write a screenshot beside it.
fn open(browser: &Path, page: &Path, hash: &str) -> Result<String, String> {
    let profile = std::env::temp_dir().join(format!("gpumem-html-check-{}", std::process::id()));
    let url = format!("file://{}#{hash}", page.display());
    let out = headless(browser, &profile)
        .args(["--enable-logging=stderr", "--v=0", "--dump-dom"])
        .arg(&url)
        .output()
        .map_err(|e| format!("could not start {}: {e}", browser.display()))?;
    if !out.status.success() {
        return Err(format!(
            "chromium failed on {url}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let log = String::from_utf8_lossy(&out.stderr);
    if let Some(line) = log
        .lines()
        .find(|l| l.contains(":CONSOLE(") || l.contains("Uncaught"))
    {
        return Err(format!("{url} wrote to the console: {line}"));
    }
    let shot = page.with_extension("png");
    let status = headless(browser, &profile)
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .output()
        .map_err(|e| format!("could not start {}: {e}", browser.display()))?;
    let _ = std::fs::remove_dir_all(&profile);
    if !status.status.success() || !shot.exists() {
        return Err(format!("no screenshot of {url}"));
    }
    eprintln!("screenshot: {}", shot.display());
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    expect(&dom, "a ready page", "data-ready=\"1\"")?;
    expect(&dom, "no script error", "data-errors=\"0\"")?;
    expect(&dom, "the stacked timeline's bands", "class=\"band\"")?;
    Ok(dom)
}

/// The number in `name="N"` of the page's body.
fn body_number(dom: &str, name: &str) -> Result<u64, String> {
    let key = format!("{name}=\"");
    let at = dom
        .find(&key)
        .ok_or_else(|| format!("the page does not say {name}"))?;
    let rest = &dom[at + key.len()..];
    rest[..rest.find('"').unwrap_or(0)]
        .parse()
        .map_err(|e| format!("{name}: {e}"))
}

/// The large snapshot: its page must open and answer within a second.
fn large_page(browser: &Path, dir: &Path) -> Result<(), String> {
    let snapshot = dir.join("large.pickle");
    let status = Command::new("python3")
        .arg("crates/gpumem-replay/tests/fixtures/make_cpp_snapshot.py")
        .args(["1007", "52", "1610"])
        .arg(&snapshot)
        .status()
        .map_err(|e| format!("python3 writes the large snapshot: {e}"))?;
    if !status.success() {
        return Err("make_cpp_snapshot.py failed".into());
    }
    let page = dir.join("large.html");
    replay_html(&[snapshot.to_str().unwrap_or_default()], &page)?;
    let dom = open(browser, &page, "hover=1&band=1")?;
    expect(&dom, "the hovered band's name", "<div id=\"tip\" style=")?;
    expect(
        &dom,
        "the clicked band's allocations",
        "class=\"alloc-row\"",
    )?;
    let (load, respond) = (
        body_number(&dom, "data-load-ms")?,
        body_number(&dom, "data-respond-ms")?,
    );
    eprintln!(
        "html-check: the large snapshot's page (1,010 segments, 19,326 events, 51.36 GiB) opened in {load} ms and answered a hover and a click in {respond} ms"
    );
    if load + respond >= 1000 {
        return Err(format!(
            "the large page took {load} + {respond} ms: over a second"
        ));
    }
    Ok(())
}

fn expect(dom: &str, what: &str, needle: &str) -> Result<(), String> {
    if dom.contains(needle) {
        Ok(())
    } else {
        Err(format!(
            "the page does not show {what} (no {needle:?} in its DOM)"
        ))
    }
}

/// Run the check; `Ok(Some(reason))` when it skipped.
pub fn html_check(_args: &[String]) -> Result<Option<String>, String> {
    let Some(browser) = chromium() else {
        let why = "skipping html-check: no Chromium (apt-get install chromium, or set CHROMIUM)";
        eprintln!("{why}");
        return Ok(Some(why.to_string()));
    };
    let dir = std::env::current_dir()
        .map_err(|e| e.to_string())?
        .join(OUT);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let trace = dir.join("tagged.jsonl");
    std::fs::write(&trace, TAGGED).map_err(|e| format!("{}: {e}", trace.display()))?;
    let page = dir.join("tagged.html");
    replay_html(&[trace.to_str().unwrap_or_default()], &page)?;
    let dom = open(&browser, &page, "at=4")?;
    expect(&dom, "the curves", "class=\"curve\"")?;
    expect(
        &dom,
        "the live total at op 4",
        "Live at op 4: 64.00 MiB in 4 allocations",
    )?;
    expect(
        &dom,
        "the weights row",
        "<td>weights</td><td class=\"num\">48.00 MiB</td><td class=\"num\">2</td>",
    )?;
    expect(
        &dom,
        "the kv-cache row",
        "<td>kv-cache</td><td class=\"num\">16.00 MiB</td>",
    )?;
    let page = dir.join("serving.html");
    replay_html(&["--workload", "serving"], &page)?;
    let dom = open(&browser, &page, "at=1000")?;
    expect(&dom, "the serving curves", "class=\"curve\"")?;
    expect(&dom, "the live allocations", "class=\"live-row\"")?;
    let page = dir.join("cpp_stacks.html");
    replay_html(
        &["crates/gpumem-replay/tests/fixtures/cpp_stacks.pickle"],
        &page,
    )?;
    // At op 16 the third group is forward (model/transformer.py:208).
    let dom = open(&browser, &page, "at=16&open=2")?;
    expect(&dom, "an opened stack", "class=\"stack-row\"")?;
    expect(
        &dom,
        "the user's frame in the stack",
        "/home/user/proj/model/transformer.py:208",
    )?;
    let page = dir.join("backward_stacks.html");
    replay_html(
        &["crates/gpumem-cli/tests/fixtures/backward_stacks.pickle"],
        &page,
    )?;
    // Band 0 is the memory from before recording, band 1 the gradients
    // (the largest peak of the rest), named with their role in the pass.
    let dom = open(&browser, &page, "hover=1&band=1")?;
    expect(
        &dom,
        "the hovered band's name",
        ">backward: AccumulateGrad (clone) · gradient: 16.00 MiB at op",
    )?;
    expect(
        &dom,
        "the clicked band's allocations",
        ">backward: AccumulateGrad (clone) · gradient: 2 allocations, peak 32.00 MiB live<",
    )?;
    expect(&dom, "a listed allocation", "class=\"alloc-row\"")?;
    expect(&dom, "the time axis", "class=\"tick-time\"")?;
    let dom = open(&browser, &page, "view=size&band=0")?;
    expect(&dom, "the size view", ">1–16 MiB: 2 allocations")?;
    large_page(&browser, &dir)?;
    eprintln!(
        "html-check: the pages render, list live allocations, open a stack, name and list a band"
    );
    Ok(None)
}
