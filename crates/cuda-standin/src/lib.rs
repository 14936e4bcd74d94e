//! A stand-in CUDA driver: `libcuda.so` over host memory, for running
//! gpumem's CUDA paths on a machine without a GPU.
//!
//! cudarc loads the driver at run time (`dynamic-loading`), one symbol at
//! a time at its first call. Built as `libgpumem_cuda_standin.so` and
//! copied to `libcuda.so` / `libcuda.so.1` in a folder on
//! `LD_LIBRARY_PATH` (`cargo xtask cuda-standin` does both), this library
//! answers every driver call gpumem and cudarc make on gpumem's paths.
//!
//! It is strict where a GPU is strict and reports what a GPU would only
//! show as a crash: the calls that break the driver API's contract
//! (granularity, mapping only reserved and unmapped addresses, unmapping
//! whole mappings, access only after `cuMemSetAccess` and only for the
//! devices it named, no work after a `cuMemFreeAsync`, exports only of
//! chunks made shareable, imports only of exported chunks, no allocation in
//! a stream capture) are refused with the driver's error code, and any
//! work that finds its memory freed, unmapped or without access when it
//! runs on its stream is a contract violation. Several devices
//! (`GPUMEM_STANDIN_DEVICES`) share one address space; chunks shareable as
//! POSIX file descriptors are memfds, so two processes really share bytes. Violations are counted and kept
//! (`gpumem_standin_violations`, `gpumem_standin_violation_message`), and
//! abort the process under `GPUMEM_STANDIN_ABORT=1`. docs/cuda.md says
//! what it checks and what only a GPU can.
//!
//! - `types.rs`: the driver's C types and codes; `sync.rs`: locks and the
//!   violation record; `driver.rs`: the handles' registries; `device.rs`:
//!   the devices, their contexts and peer links;
//! - `buffer.rs`, `memory.rs`, `pool.rs`, `vmm.rs`: memory, its tables,
//!   each device's physical capacity and the VMM rules; `memfd.rs`,
//!   `share.rs`: chunks shared between processes (export, import);
//! - `work.rs`, `exec.rs`, `stream.rs`, `event.rs`: work, its checked
//!   execution, asynchronous streams, events;
//! - `capture.rs`, `graph.rs`: capture and its legal calls, graphs;
//!   `module.rs`: stand-in kernels;
//! - `api/`: the exported entry points, one file per group.

// The entry points are the driver's own, documented by NVIDIA's driver
// API reference; each carries its `# Safety` section.
#![allow(missing_docs)]

mod buffer;
mod capture;
mod device;
mod driver;
mod event;
mod exec;
mod graph;
mod memfd;
mod memory;
mod module;
mod pool;
mod share;
mod stream;
mod sync;
mod types;
mod vmm;
mod work;

mod api {
    pub mod context;
    pub mod copy;
    pub mod graph;
    pub mod memory;
    pub mod module;
    pub mod peer;
    pub mod share;
    pub mod standin;
    pub mod stream;
    pub mod stubs;
    pub mod vmm;
}
