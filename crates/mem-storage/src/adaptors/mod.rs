//! Adaptors: a [`crate::DeviceResource`] (and its [`crate::VirtualMemory`])
//! wrapped to log, count, track or fail its calls; each forwards the calls it
//! does not watch to the resource inside.

pub(crate) mod driver_cost;
pub(crate) mod fault;
mod forward;
mod forward_vm;
pub(crate) mod hooks;
pub(crate) mod logging;
pub(crate) mod stats;
pub(crate) mod tracking;
