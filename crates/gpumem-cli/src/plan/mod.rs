//! `gpumem plan`: its arguments and its output; the measured-plan cycle
//! (dry runs, candidate layouts, the verified suggestion) is
//! `gpumem_replay::plan`'s.

mod args;
mod output;

pub use args::PlanArgs;
pub use output::run_plan;
