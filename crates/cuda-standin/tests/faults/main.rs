//! Seeded faults: each test does what gpumem must never do to a CUDA
//! driver and checks that the stand-in driver catches it (an error code
//! and a recorded violation, or a violation when the queued work runs).
//! They run only on the stand-in (`cargo xtask cuda-standin` puts it on
//! the loader path): on a real GPU these faults would fault the device, so
//! there they print `skipping:` and return.

mod calls;
mod devices;
mod share;
mod standin;
mod streams;
mod vmm;
