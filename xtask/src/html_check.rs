//! `cargo xtask html-check`: the `--html` report in a real browser.
//!
//! Replays a small tagged trace and a built-in workload with `--html`, opens
//! each page in headless Chromium with `#at=OP` in its address (the page
//! selects that point as a click would), and checks the DOM the page built:
//! the curves are drawn, and the table of allocations live at the point
//! lists the trace's tags with their bytes; on a PyTorch snapshot with C++
//! stacks (`#open=N` opens a row as a click would), a group's stack lists
//! the user's Python frames. A screenshot of each page goes
//! to `target/html-check/`. Without Chromium (the Debian package
//! `chromium`) the check says so and skips.

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
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .map_err(|e| format!("could not start {}: {e}", browser.display()))?;
    if !out.status.success() {
        return Err(format!(
            "chromium failed on {url}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
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
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
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
    expect(&dom, "a ready page", "data-ready=\"1\"")?;
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
        &["crates/gpumem-cli/tests/fixtures/cpp_stacks.pickle"],
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
    eprintln!("html-check: the three pages render, list live allocations and open a stack");
    Ok(None)
}
