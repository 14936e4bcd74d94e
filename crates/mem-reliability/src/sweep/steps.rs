//! The op constructors every scenario program is written with.

use crate::program::Op;

/// A reservation of `size` bytes on `stream`.
pub(crate) fn reserve(stream: u8, size: u64) -> Op {
    Op::Reserve { stream, size }
}

/// `cleanup(explicit)` on `stream`: every empty page when explicit, else periodic.
pub(crate) fn cleanup(stream: u8, explicit: bool) -> Op {
    Op::Cleanup { stream, explicit }
}
