//! `gpu-bench`: the measurements that need a CUDA device (`cargo xtask
//! gpu-bench`): pool-hit reserve+drop vs `cuMemAllocAsync`/`cuMemFreeAsync`
//! vs `cuMemAlloc`/`cuMemFree`; relocation copy bandwidth vs a plain
//! device-to-device copy; capture replay with zero device allocations.
//!
//! Without a CUDA driver it prints `skipping: <reason>` and exits 0, so it
//! can run in any CI. `--quick` takes a tenth of the counts; `--smoke`
//! only small sizes and a few calls of each, so every line runs in seconds
//! (CI runs it on the stand-in driver, whose timings are not a GPU's: the
//! report says so at its top).

use std::process::ExitCode;

use gpumem_benches::gpu::Scale;

fn main() -> ExitCode {
    let mut scale = Scale::Full;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--quick" => scale = Scale::Quick,
            "--smoke" => scale = Scale::Smoke,
            other => {
                eprintln!("gpu-bench: unknown option `{other}`; options: --quick, --smoke");
                return ExitCode::from(2);
            }
        }
    }
    if let Some(reason) = gpumem_benches::gpu::skip_reason() {
        println!("skipping: {reason}");
        return ExitCode::SUCCESS;
    }
    match gpumem_benches::gpu::run_all(scale) {
        Ok(report) => {
            println!("{report}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("gpu-bench: {err}");
            ExitCode::FAILURE
        }
    }
}
