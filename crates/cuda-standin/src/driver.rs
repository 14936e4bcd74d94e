//! The one driver instance: its handles (streams, events, graphs), call
//! counts and state; the memory tables are `memory::MEM`, the violations
//! `sync::VIOLATIONS`.
//!
//! Lock order, everywhere: a stream's state, then the memory tables; the
//! registries (streams, events, graphs) are held only to look up or insert
//! a handle, never while waiting.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use crate::device::{MAX_DEVICES, of_context};
use crate::event::Event;
use crate::graph::Graphs;
use crate::stream::Stream;
pub use crate::sync::{lock, violation};
use crate::types::{CuResult, INVALID_CONTEXT, INVALID_HANDLE, NOT_INITIALIZED, Outcome, SUCCESS};

pub struct Driver {
    pub streams: Mutex<HashMap<u64, Arc<Stream>>>,
    pub events: Mutex<HashMap<u64, Arc<Event>>>,
    pub graphs: Mutex<Graphs>,
    pub calls: Mutex<BTreeMap<&'static str, u64>>,
    pub initialized: AtomicBool,
    /// Each device's primary context's references.
    pub context_refs: [AtomicI64; MAX_DEVICES],
    next_handle: AtomicU64,
}

pub static DRIVER: LazyLock<Driver> = LazyLock::new(|| Driver {
    streams: Mutex::new(HashMap::new()),
    events: Mutex::new(HashMap::new()),
    graphs: Mutex::new(Graphs::default()),
    calls: Mutex::new(BTreeMap::new()),
    initialized: AtomicBool::new(false),
    context_refs: [const { AtomicI64::new(0) }; MAX_DEVICES],
    next_handle: AtomicU64::new(1),
});

/// Whether the device reports memory pools (`gpumem_standin_set_memory_pools`).
pub static MEMORY_POOLS: AtomicBool = AtomicBool::new(true);

thread_local! {
    /// The context current on this thread (0: none).
    pub static CURRENT: Cell<u64> = const { Cell::new(0) };
}

impl Driver {
    /// A fresh handle value: never 0, never reused, 16-aligned (so it
    /// looks like the pointer a `CUstream` or `CUevent` is).
    pub fn handle(&self) -> u64 {
        0x5_0000_0000 + (self.next_handle.fetch_add(1, Ordering::Relaxed) << 4)
    }

    /// The stream named by `handle` (0, 1 and 2 are the default stream
    /// of the current context's device, kept under the device's number).
    pub fn stream(&self, handle: u64) -> Result<Arc<Stream>, CuResult> {
        let mut streams = lock(&self.streams);
        if handle <= 2 {
            let dev = current_device()?;
            let s = streams
                .entry(dev as u64)
                .or_insert_with(|| Stream::spawn(0, dev));
            return Ok(s.clone());
        }
        streams.get(&handle).cloned().ok_or(INVALID_HANDLE)
    }

    pub fn event(&self, handle: u64) -> Result<Arc<Event>, CuResult> {
        lock(&self.events)
            .get(&handle)
            .cloned()
            .ok_or(INVALID_HANDLE)
    }

    /// Every stream of device `dev`.
    pub fn streams_of(&self, dev: usize) -> Vec<Arc<Stream>> {
        let streams = lock(&self.streams);
        streams
            .values()
            .filter(|s| s.device == dev)
            .cloned()
            .collect()
    }
}

/// The driver is initialized and this thread has a live context current.
pub fn ready() -> Outcome {
    current_device().map(drop)
}

/// The device of the live context current on this thread.
pub fn current_device() -> Result<usize, CuResult> {
    if !DRIVER.initialized.load(Ordering::Acquire) {
        return Err(NOT_INITIALIZED);
    }
    match of_context(CURRENT.get()) {
        Some(dev) if DRIVER.context_refs[dev].load(Ordering::Acquire) > 0 => Ok(dev),
        _ => Err(INVALID_CONTEXT),
    }
}

/// Calls a test asked to fail (`gpumem_standin_fail_call`): the entry
/// point's name, how many calls of it to let through first, the code.
pub static FAILS: Mutex<Vec<(String, u64, CuResult)>> = Mutex::new(Vec::new());

/// `Err(code)` when this call of `name` is one a test asked to fail: it
/// then fails before doing anything, as a driver refusing it would.
pub fn injected(name: &str) -> Outcome {
    let mut fails = lock(&FAILS);
    let Some(i) = fails.iter().position(|(n, _, _)| n == name) else {
        return Ok(());
    };
    if fails[i].1 > 0 {
        fails[i].1 -= 1;
        return Ok(());
    }
    Err(fails.remove(i).2)
}

/// An entry point's result: counted under its name when it succeeded.
pub fn finish(name: &'static str, outcome: Outcome) -> CuResult {
    match outcome {
        Ok(()) => {
            *lock(&DRIVER.calls).entry(name).or_insert(0) += 1;
            SUCCESS
        }
        Err(code) => code,
    }
}

/// Define an exported driver entry point whose body returns an
/// [`Outcome`]; successes are counted by name.
macro_rules! entry {
    ($(#[$m:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $(#[$m])*
        ///
        /// # Safety
        /// The CUDA driver API's contract for this entry point: every
        /// pointer argument is null or valid for its documented use.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $crate::types::CuResult {
            let run = || -> $crate::types::Outcome { $body };
            let name = stringify!($name);
            $crate::driver::finish(name, $crate::driver::injected(name).and_then(|()| run()))
        }
    };
}
pub(crate) use entry;
