//! Handles and what follows them: the handle and binding, the counted cell
//! behind a handle's clones, the drop queue that carries frees to the
//! engine, raw-address pins, and `bind` (with the cursor it stamps).

pub(crate) mod drop_queue;
pub(crate) mod handle;
pub(crate) mod handle_cell;
#[cfg(all(test, loom))]
mod handle_cell_loom;
pub(crate) mod raw_pin;
pub(crate) mod sync;
