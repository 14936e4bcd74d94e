//! The `gpumem` command.
fn main() {}
