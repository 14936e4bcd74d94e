//! CubeCL's test suites as the scratch crate runs them, and the tests left
//! out on purpose, each with its reason.

use super::engine::Engine;
use super::scratch::WGPU_TESTS;

/// One test binary of CubeCL's, as one row of the table.
#[derive(Debug, Clone)]
pub struct Suite {
    /// The row's name.
    pub name: String,
    /// Its test binary's target name (`core`, `cubecl_server`).
    pub target: String,
    /// The folder it runs in, relative to the scratch crate (its package's).
    pub cwd: &'static str,
    /// Whether the engine switch reaches it. cubecl-server's tests build
    /// CubeCL's engine types directly, on a CPU storage or its dummy
    /// runtime, and never go through the wgpu runtime's main memory: they
    /// run once.
    pub per_engine: bool,
}

/// A test `cargo xtask cubecl-client` does not run, and why. The table
/// counts it as skipped, and docs/cubecl.md lists it.
#[derive(Debug, Clone, Copy)]
pub struct Left {
    /// The suite it belongs to.
    pub suite: &'static str,
    /// A `--skip` filter: every test whose name contains it.
    pub test: &'static str,
    /// Only on this engine (`None`: on both).
    pub engine: Option<Engine>,
    /// Why.
    pub reason: &'static str,
}

/// The tests left out, each with the reason; none for a reason that is the
/// memory engine's. Every one fails (or aborts the process) on CubeCL's own
/// engine on lavapipe too, and CubeCL's own wgpu test module does not run
/// the macros of the `core_extra` ones on WGSL.
pub const LEFT_OUT: &[Left] = &[
    Left {
        suite: CORE,
        test: "tests::i64_ty::unary_int::test_reverse_bits",
        engine: None,
        reason: "lavapipe (Mesa 22.3, LLVM 15) aborts the whole process compiling a 64-bit \
                 reverseBits: `LLVM ERROR: Cannot emit physreg copy instruction`",
    },
    Left {
        suite: CORE_EXTRA,
        test: "tests::complex_",
        engine: None,
        reason: "the wgpu runtime does not advertise complex (c32/c64) support: \
                 `Complex operation … requires … support for c32, but the active runtime \
                 does not advertise it`",
    },
    Left {
        suite: CORE_EXTRA,
        test: "tests::value_form_literals::",
        engine: None,
        reason: "WGSL has no `i8`: naga refuses the kernel (`no definition in scope for \
                 identifier: i8`)",
    },
    Left {
        suite: CORE_EXTRA,
        test: "tests::launch_dynamic_count::",
        engine: None,
        reason: "wgpu refuses the indirect dispatch: the count and an output are bound in \
                 one buffer, `STORAGE_READ_WRITE` and `INDIRECT` in one dispatch (a \
                 validation error that poisons the device)",
    },
];

/// cubecl-server's integration tests (its `tests/`), on its own dummy
/// runtime.
const SERVER_TESTS: [&str; 3] = ["integration_test", "precompiled", "taint_property"];

/// The row names of the two suites of cubecl-core's macros.
const CORE: &str = "cubecl-core exported tests (testgen_all)";
const CORE_EXTRA: &str = "cubecl-core exported tests (the rest)";

/// Every suite, in the table's order.
pub fn all() -> Vec<Suite> {
    let test = |name: &str, binary: &str| Suite {
        name: name.to_string(),
        target: binary.to_string(),
        cwd: ".",
        per_engine: true,
    };
    let mut suites = vec![test(CORE, "core"), test(CORE_EXTRA, "core_extra")];
    for name in WGPU_TESTS {
        suites.push(test(
            &format!("cubecl-wgpu tests/{name}.rs"),
            &format!("wgpu_{name}"),
        ));
    }
    let server = |name: String, binary: &str| Suite {
        name,
        target: binary.to_string(),
        cwd: "patched/cubecl-server",
        per_engine: false,
    };
    suites.push(server("cubecl-server unit tests".into(), "cubecl_server"));
    for name in SERVER_TESTS {
        suites.push(server(format!("cubecl-server tests/{name}.rs"), name));
    }
    suites
}

/// The `--skip` filters for `suite` on `engine`.
pub fn skips(suite: &Suite, engine: Option<Engine>) -> Vec<&'static Left> {
    LEFT_OUT
        .iter()
        .filter(|left| left.suite == suite.name)
        .filter(|left| left.engine.is_none() || left.engine == engine)
        .collect()
}
