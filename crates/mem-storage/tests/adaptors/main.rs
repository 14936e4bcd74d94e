//! Behaviour of each adaptor and of the simulated device beyond the shared
//! conformance suite: what they record, count, refuse and report.

mod fault;
mod logging;
mod model;
mod simulated;
mod stats;
mod tracking;
