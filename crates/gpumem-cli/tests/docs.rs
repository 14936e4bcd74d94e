//! The commands shown in README.md and docs/cli.md, run, with their output
//! checked against what the docs show.
//!
//! trycmd runs every `$ gpumem …` line of the docs' `console` blocks with the
//! `gpumem` binary of this build and compares what it prints (stdout and
//! stderr together) and its exit status (`? failed` under the command when
//! it must fail) with the lines under it. What varies between runs — times,
//! ns/op, a machine's memory — is written `[..]` in the docs (any text within
//! a line); `...` on its own line stands for any number of lines the doc leaves
//! out. Everything else must match.
//!
//! When the output changes on purpose, rewrite the docs' outputs in place
//! (wildcards that still match are kept) and review the diff:
//!
//! ```sh
//! TRYCMD=overwrite cargo test -p gpumem-cli --test docs
//! ```
//!
//! Commands run in a scratch folder that links `traces/`, `crates/` and
//! `docs/` of the repository, so files they write (`--plot serving.svg`,
//! `--html gpt2.html`) stay out of the tree. Commands in README.md are written
//! as `cargo run --release -p gpumem-cli -- ARGS` where a reader starts from a
//! clone; [`NOT_RUN`] and the second test keep those honest: each must also be
//! shown, and so run, as `$ gpumem ARGS` in a `console` block, or be listed in
//! [`NOT_RUN`] with the reason. (Unix only: the scratch folder links.)

#![cfg(unix)]

use std::path::{Path, PathBuf};

/// Commands the docs show that this test does not run, with why. The second
/// test fails on a command in the docs that is neither run nor listed here.
const NOT_RUN: &[(&str, &str)] = &[
    (
        "gpumem plan --workload random --json > plan.json",
        "a shell redirection, which trycmd does not run; the test \
         plan_json_written_to_a_file_is_accepted_by_replay_config_and_shows_the_improvement \
         (tests/cli_layouts.rs) runs this cycle through the binary",
    ),
    (
        "gpumem replay --workload random --config plan.json",
        "reads the plan.json of the line above; run by the same test",
    ),
];

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root exists")
}

/// The two documents whose commands are checked.
fn documents() -> [PathBuf; 2] {
    let root = root();
    [root.join("README.md"), root.join("docs/cli.md")]
}

/// An empty folder that links the repository's `traces/`, `crates/` and
/// `docs/`, so doc commands read the repository's files and write their own
/// files here.
fn scratch_folder() -> PathBuf {
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("docs-cwd");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("scratch folder");
    for name in ["traces", "crates", "docs"] {
        std::os::unix::fs::symlink(root().join(name), scratch.join(name)).expect("link");
    }
    scratch
}

#[test]
fn every_command_in_the_readme_and_the_cli_guide_prints_what_the_docs_show() {
    // The docs show the facade's defaults: a GPUMEM_CONF in the environment
    // would change every report.
    assert!(
        std::env::var_os("GPUMEM_CONF").is_none(),
        "unset GPUMEM_CONF to check the docs: they show the defaults"
    );
    std::env::set_current_dir(scratch_folder()).expect("enter the scratch folder");
    let cases = trycmd::TestCases::new();
    cases.register_bin("gpumem", trycmd::cargo::cargo_bin!("gpumem"));
    for doc in documents() {
        cases.case(doc);
    }
    cases.run();
}

/// The commands a document shows: those of its `console` blocks (run by
/// trycmd), and those elsewhere in its shell or plain code blocks (fenced or
/// indented), each as `gpumem ARGS`.
fn shown_commands(text: &str) -> (Vec<String>, Vec<String>) {
    let mut checked = Vec::new();
    let mut other = Vec::new();
    let mut fence: Option<String> = None;
    for line in text.lines() {
        if let Some(lang) = line.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(lang.trim().to_owned()),
            };
            continue;
        }
        let code = match &fence {
            Some(lang) if lang.starts_with("console") => {
                if let Some(cmd) = line.strip_prefix("$ ") {
                    checked.push(cmd.trim().to_owned());
                }
                continue;
            }
            // Shell and plain blocks may show commands; `toml`, `rust`,
            // `python` and the like do not.
            Some(lang) if matches!(lang.as_str(), "" | "sh" | "bash" | "shell" | "text") => {
                line.trim()
            }
            Some(_) => continue,
            None => match line.strip_prefix("    ") {
                Some(code) => code.trim(),
                None => continue,
            },
        };
        if let Some(args) = code.strip_prefix("cargo run --release -p gpumem-cli -- ") {
            other.push(format!("gpumem {}", args.trim()));
        } else if code.starts_with("gpumem ") {
            other.push(code.to_owned());
        }
    }
    (checked, other)
}

#[test]
fn every_gpumem_command_in_the_docs_is_run_or_listed_as_not_run_with_a_reason() {
    let mut checked = Vec::new();
    let mut other = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).expect("doc");
        let (c, o) = shown_commands(&text);
        checked.extend(c);
        other.extend(o);
    }
    assert!(
        checked.len() >= 10,
        "the docs' console blocks hold {} commands; the parser lost them",
        checked.len()
    );
    let unchecked: Vec<&String> = other
        .iter()
        .filter(|cmd| !checked.contains(cmd) && !NOT_RUN.iter().any(|(c, _)| c == cmd))
        .collect();
    assert!(
        unchecked.is_empty(),
        "commands shown in the docs that no console block runs and NOT_RUN does not list: {unchecked:?}"
    );
    for (cmd, _) in NOT_RUN {
        assert!(
            other.contains(&cmd.to_string()),
            "NOT_RUN lists `{cmd}`, which the docs no longer show"
        );
    }
}

#[test]
fn the_command_parser_sees_console_sh_and_indented_commands_and_not_toml() {
    let text = "    cargo run --release -p gpumem-cli -- replay --workload devlog\n\
                ```sh\ngpumem plan --workload random\n```\n\
                ```console\n$ gpumem compare --workload serving\n...\n```\n\
                ```toml\ngpumem = { path = \"crates/gpumem\" }\n```\n\
                gpumem in prose is not a command\n";
    let (checked, other) = shown_commands(text);
    assert_eq!(checked, ["gpumem compare --workload serving"]);
    assert_eq!(
        other,
        [
            "gpumem replay --workload devlog",
            "gpumem plan --workload random"
        ]
    );
}
