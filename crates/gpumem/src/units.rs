//! Byte sizes written the way people write them: `8GiB`, `512 MiB`, `1.5GB`.
//!
//! The constants, [`format_bytes`] and [`parse_bytes`] (its grammar is on
//! its page) are mem-storage's (`mem_storage::units`), the one place every
//! crate prints and reads bytes. Parsing is a pure function: no
//! environment, no device.

pub use mem_storage::units::{GIB, KIB, MIB, PIB, TIB, format_bytes, parse_bytes};
