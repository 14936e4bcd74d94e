//! `gpumem plan`: measured pool layouts.

use std::io::Write;

use crate::cli::PlanArgs;
use crate::error::{CliError, Result};

/// Runs `gpumem plan`.
pub fn run_plan(_args: &PlanArgs, _out: &mut dyn Write, _err: &mut dyn Write) -> Result<()> {
    Err(CliError::Backend {
        backend: "sim",
        message: "the pool engine is not wired in yet".to_string(),
    })
}
