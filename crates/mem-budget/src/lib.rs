//! mem-budget — placeholder; its contract is written as the crate is built.
