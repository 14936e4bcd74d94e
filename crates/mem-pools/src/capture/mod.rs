//! The memory side of graph capture: the capture window (priming, pinning,
//! the extents a window hands out) and re-claiming a known free extent.

pub(crate) mod reclaim;
pub(crate) mod record;
pub(crate) mod window;
