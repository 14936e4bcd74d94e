//! gpumem's Burn client, built and run by `cargo xtask burn-client`: four
//! runs written with Burn's public API on generated data, on Burn's wgpu
//! device. The patched cubecl-wgpu puts the main memory on the engine
//! `GPUMEM_CUBECL_ENGINE` names (`cubecl`, the default, or `gpumem`), so
//! one build serves both engines.
//!
//! Usage: `burn-client cnn|lm-train|lm-infer|lstm-train STEPS`, or
//! `burn-client scenario NAME` for one of the memory scenarios users
//! reported (`scenarios.rs`).

mod cnn;
mod data;
mod lm;
mod lstm;
mod report;
mod scenarios;

use burn::tensor::{Device, DeviceKind};

use report::Report;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [mode, name] = args.as_slice()
        && mode == "scenario"
    {
        let device = Device::wgpu(DeviceKind::DefaultDevice);
        println!("scenario {name}");
        if !scenarios::run(name, &device) {
            usage();
        }
        return;
    }
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
        "lstm-train" => {
            let model = lstm::train(&device, steps, &mut report);
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
    eprintln!(
        "usage: burn-client cnn|lm-train|lm-infer|lstm-train STEPS\n       burn-client scenario {}",
        scenarios::NAMES.join("|")
    );
    std::process::exit(2);
}
