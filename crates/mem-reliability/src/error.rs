//! The one error of this crate: a broken promise of the code under test.
//!
//! A [`Violation`] is what a test fails with. Each variant names the step
//! (0-based index in the program; `usize::MAX` for the final teardown) and
//! carries the numbers that disagree, so a failing seed can be read without
//! re-running it.

/// Something the engine, a budget or the device did that the model forbids.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    /// An allocation's bytes changed although nobody wrote them.
    #[error(
        "step {step}: allocation #{entry} lost its contents at byte {offset}: expected {expected:#04x}, found {found:#04x}"
    )]
    ContentsLost {
        /// Step after which the check ran.
        step: usize,
        /// Model entry id.
        entry: u64,
        /// Offset of the first differing byte inside the allocation.
        offset: u64,
        /// Byte written.
        expected: u8,
        /// Byte read back.
        found: u8,
    },
    /// A live allocation could not be reached or read at all.
    #[error("step {step}: allocation #{entry} is unreachable: {error}")]
    Unreachable {
        /// Step after which the check ran.
        step: usize,
        /// Model entry id.
        entry: u64,
        /// The engine's error, as text.
        error: String,
    },
    /// A counter of the engine, a ledger or the device disagrees with the model.
    #[error("step {step}: {what}: model says {expected}, found {found}")]
    Mismatch {
        /// Step after which the check ran.
        step: usize,
        /// Which quantity (e.g. `stream 1 number_allocs`).
        what: String,
        /// What the model predicts.
        expected: u64,
        /// What was observed.
        found: u64,
    },
    /// A call failed where the model says it must succeed, or failed with a
    /// kind of error the situation does not allow.
    #[error("step {step} ({op}): unexpected error: {error}")]
    UnexpectedError {
        /// Step index.
        step: usize,
        /// The op, as text.
        op: String,
        /// The error, as text.
        error: String,
    },
    /// A call succeeded where the model says it must be refused.
    #[error("step {step} ({op}): succeeded, but the model expects {expected}")]
    UnexpectedSuccess {
        /// Step index.
        step: usize,
        /// The op, as text.
        op: String,
        /// The refusal expected.
        expected: String,
    },
    /// A refused call changed the state it promised to leave alone.
    #[error("step {step} ({op}): refused with `{error}` but changed {what}: {before} → {after}")]
    HalfChanged {
        /// Step index.
        step: usize,
        /// The op, as text.
        op: String,
        /// The refusal.
        error: String,
        /// Which quantity changed.
        what: &'static str,
        /// Value before the call.
        before: u64,
        /// Value after the call.
        after: u64,
    },
    /// The binding of a freed allocation resolved (or failed otherwise than
    /// as stale): it could reach another allocation's memory.
    #[error("step {step}: a freed allocation's binding on stream {stream} is not stale: {found}")]
    StaleResolved {
        /// Step after which the check ran.
        step: usize,
        /// Stream (manager) index.
        stream: usize,
        /// What resolving it gave.
        found: String,
    },
    /// Device memory still outstanding after everything was dropped.
    #[error("leak after teardown: {allocations} device allocations ({bytes} bytes) outstanding")]
    Leak {
        /// Outstanding allocations.
        allocations: usize,
        /// Their bytes.
        bytes: u64,
    },
    /// Physical memory left an address while a recorded use of it was
    /// incomplete (the reclamation oracle, `streams/`).
    #[error(
        "step {step}: {lo:#x}..{hi:#x} unmapped while stream {stream}'s operation {cursor} on {use_lo:#x}..{use_hi:#x} was incomplete (completed {completed})"
    )]
    UnmappedInUse {
        /// Step index (the teardown's is `usize::MAX`).
        step: usize,
        /// First address unmapped.
        lo: u64,
        /// One past the last address unmapped.
        hi: u64,
        /// The use's stream.
        stream: usize,
        /// The use's cursor.
        cursor: u64,
        /// First address of the use.
        use_lo: u64,
        /// One past its last address.
        use_hi: u64,
        /// The stream's completed cursor at the unmap.
        completed: u64,
    },
    /// Code under test panicked.
    #[error("step {step} ({op}): panicked: {message}")]
    Panic {
        /// Step index.
        step: usize,
        /// The op, as text.
        op: String,
        /// The panic payload, as text.
        message: String,
    },
}

impl Violation {
    /// A counter mismatch at `step`.
    pub(crate) fn mismatch(
        step: usize,
        what: impl Into<String>,
        expected: u64,
        found: u64,
    ) -> Self {
        Violation::Mismatch {
            step,
            what: what.into(),
            expected,
            found,
        }
    }
}
