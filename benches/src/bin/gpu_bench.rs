//! `gpu-bench`: the measurements that need a CUDA device (`cargo xtask
//! gpu-bench`): pool-hit reserve+drop vs `cuMemAllocAsync`/`cuMemFreeAsync`
//! vs `cuMemAlloc`/`cuMemFree`; relocation copy bandwidth vs a plain
//! device-to-device copy; capture replay with zero device allocations.
//!
//! Without a CUDA driver it prints `skipping: <reason>` and exits 0, so it
//! can run in any CI. `--quick` shrinks every measurement (a smoke test).

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut quick = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--quick" => quick = true,
            other => {
                eprintln!("gpu-bench: unknown option `{other}`; options: --quick");
                return ExitCode::from(2);
            }
        }
    }
    if let Some(reason) = gpumem_benches::gpu::skip_reason() {
        println!("skipping: {reason}");
        return ExitCode::SUCCESS;
    }
    match gpumem_benches::gpu::run_all(quick) {
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
