//! gpumem's Burn client, built and run by `cargo xtask burn-client`: three
//! runs written with Burn's public API on generated data, on Burn's wgpu
//! device. The patched cubecl-wgpu puts the main memory on the engine
//! `GPUMEM_CUBECL_ENGINE` names (`cubecl`, the default, or `gpumem`), so
//! one build serves both engines.
//!
//! Usage: `burn-client cnn|lm-train|lm-infer STEPS`

mod cnn;
mod data;
mod lm;
mod report;

use burn::tensor::{Device, DeviceKind};

use report::Report;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (run, steps) = match args.as_slice() {
        [run, steps] => match steps.parse::<usize>() {
            Ok(steps) if steps > 0 => (run.as_str(), steps),
            _ => usage(),
        },
        _ => usage(),
    };
    let engine = std::env::var("GPUMEM_CUBECL_ENGINE").unwrap_or_else(|_| "cubecl".into());
    println!("run {run}");
    println!("engine {engine}");
    let device = Device::wgpu(DeviceKind::DefaultDevice);
    let mut report = Report::new();
    match run {
        "cnn" => {
            let model = cnn::train(&device, steps, &mut report);
            report.params(&model);
        }
        "lm-train" => {
            let model = lm::train(&device, steps, &mut report);
            report.params(&model);
        }
        "lm-infer" => {
            let model = lm::infer(&device, steps, &mut report);
            report.params(&model);
        }
        _ => usage(),
    }
    report.print();
}

fn usage() -> ! {
    eprintln!("usage: burn-client cnn|lm-train|lm-infer STEPS");
    std::process::exit(2);
}
