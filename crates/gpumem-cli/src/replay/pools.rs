//! Pool backends (sim, host, cuda) over mem-pools' `MemoryManagement`.

use super::{Program, ReplayOptions, ReplayRun};
use crate::cli::BackendKind;
use crate::error::{CliError, Result};

/// Replays on gpumem's pools over the storage `kind` names.
pub fn replay_on_pools(
    kind: BackendKind,
    _capacity: u64,
    _source: &str,
    _program: &Program,
    _options: &ReplayOptions,
) -> Result<ReplayRun> {
    Err(CliError::Backend {
        backend: match kind {
            BackendKind::Sim => "sim",
            BackendKind::Host => "host",
            BackendKind::Cuda => "cuda",
            BackendKind::System => "system",
        },
        message: "the pool engine is not wired in yet; use --backend system".to_string(),
    })
}
