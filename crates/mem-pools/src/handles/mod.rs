//! Handles and what follows them: the handle (`handle.rs`), its names and
//! drop records (`keys.rs`: slot keys, the binding), the counted cell
//! behind a handle's clones (`handle_cell.rs`) and the engine's pool of
//! them (`cell_pool.rs`), the drop queue that carries frees to the engine
//! (`drop_queue.rs`), and raw-address pins (`raw_pin.rs`). Layered
//! `keys` <- `drop_queue` <- `handle_cell` <- `cell_pool` <- `handle`.

pub(crate) mod cell_pool;
pub(crate) mod drop_queue;
pub(crate) mod handle;
pub(crate) mod handle_cell;
#[cfg(all(test, loom))]
mod handle_cell_loom;
pub(crate) mod keys;
pub(crate) mod raw_pin;
pub(crate) mod sync;
