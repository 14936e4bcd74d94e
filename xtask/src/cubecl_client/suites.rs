//! CubeCL's test suites as the scratch crate runs them, and the tests left
//! out on purpose, each with its reason.

use super::engine::Engine;
use super::scratch::WGPU_TESTS;

/// One test binary of CubeCL's, as one row of the table.
#[derive(Debug, Clone)]
pub struct Suite {
    /// The row's name.
    pub name: String,
    /// What `cargo test` selects (`--test core`, `-p cubecl-server --lib`).
    pub select: Vec<String>,
    /// Whether the engine switch reaches it. cubecl-server's unit tests
    /// build CubeCL's engine types directly, on a CPU storage, and never go
    /// through the wgpu runtime's main memory: they run once.
    pub per_engine: bool,
}

/// A test `cargo xtask cubecl-client` does not run, and why. The table
/// counts it as skipped, and docs/cubecl.md lists it.
#[derive(Debug, Clone, Copy)]
pub struct Left {
    /// The suite it belongs to.
    pub suite: &'static str,
    /// Its full name as libtest prints it (matched exactly).
    pub test: &'static str,
    /// Only on this engine (`None`: on both).
    pub engine: Option<Engine>,
    /// Why.
    pub reason: &'static str,
}

/// The tests left out. Empty is the goal; each entry says why it is not.
pub const LEFT_OUT: &[Left] = &[];

/// Every suite, in the table's order.
pub fn all() -> Vec<Suite> {
    let test = |name: &str, binary: &str| Suite {
        name: name.to_string(),
        select: vec!["--test".into(), binary.into()],
        per_engine: true,
    };
    let mut suites = vec![
        test("cubecl-core exported tests (testgen_all)", "core"),
        test("cubecl-core exported tests (the rest)", "core_extra"),
    ];
    for name in WGPU_TESTS {
        suites.push(test(
            &format!("cubecl-wgpu tests/{name}.rs"),
            &format!("wgpu_{name}"),
        ));
    }
    suites.push(Suite {
        name: "cubecl-server unit tests".into(),
        select: vec!["-p".into(), "cubecl-server".into(), "--lib".into()],
        per_engine: false,
    });
    suites
}

/// The `--skip` arguments for `suite` on `engine` (with `--exact`).
pub fn skips(suite: &Suite, engine: Option<Engine>) -> Vec<&'static Left> {
    LEFT_OUT
        .iter()
        .filter(|left| left.suite == suite.name)
        .filter(|left| left.engine.is_none() || left.engine == engine)
        .collect()
}
