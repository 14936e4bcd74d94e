//! [`Refuser`]: who refused memory, so a caller can pick the remedy.

/// Who refused memory: the device itself, or a budget stacked over it.
///
/// Carried by [`StorageError::OutOfMemory`](super::StorageError::OutOfMemory) so a caller can tell the two
/// apart by type — the remedy differs (a device that is full needs live data
/// freed; a budget that is spent may leave the device room, and can be
/// raised). Backends set [`Refuser::Device`]; a budget adaptor (mem-budget's
/// `GlobalDeviceBudget`) sets [`Refuser::DeviceBudget`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Refuser {
    /// The device budget (a limit shared by every user of the device,
    /// stacked over its resource): the device may still have room.
    DeviceBudget,
    /// The device itself (its backend resource, or the capacity a host or
    /// simulated device was given).
    Device,
}

impl std::fmt::Display for Refuser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::DeviceBudget => "the device budget",
            Self::Device => "the device",
        })
    }
}
