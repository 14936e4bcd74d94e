//! `ServerLogger`: the engine's log sink, backed by `tracing`.
//!
//! The CubeCL-compatible `MemoryManagement` passes a shared logger into the
//! engine. Here it is a thin,
//! named front over `tracing` events (target `gpumem::pools`), so a runtime
//! chooses verbosity with its subscriber and several managers stay apart by
//! name. It holds no state that could fail.

/// A named sink for the engine's events.
#[derive(Debug, Clone, Default)]
pub struct ServerLogger {
    name: String,
}

impl ServerLogger {
    /// A logger whose events carry `name`.
    pub fn named(name: impl Into<String>) -> Self {
        Self { name: name.into() }
    }

    /// The name events carry.
    pub fn name(&self) -> &str {
        &self.name
    }

    #[inline]
    pub(crate) fn reserve(&self, size: u64, pool: u32) {
        tracing::trace!(target: "gpumem::pools", logger = %self.name, size, pool, "reserve");
    }

    pub(crate) fn cleanup(&self, explicit: bool, pages_freed: u64) {
        tracing::debug!(target: "gpumem::pools", logger = %self.name, explicit, pages_freed, "cleanup");
    }

    pub(crate) fn report(&self, text: &str) {
        tracing::debug!(target: "gpumem::pools", logger = %self.name, "{text}");
    }
}
