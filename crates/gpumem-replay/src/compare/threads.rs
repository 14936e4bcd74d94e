//! `--threads`: a multi-stream trace replayed with one thread per stream,
//! all at once, through one `gpumem::Device` — what a runtime with several
//! CUDA streams on several host threads asks of the facade.
//!
//! The trace is split into lanes, one per stream: an allocation goes to its
//! stream's lane and its free to the same lane (so every free follows its
//! allocation), and mode switches and cleanups go to every lane at their
//! place. The order across lanes is the scheduler's, so peak live is what
//! the interleaving reached, not the trace's sequential peak. The clock
//! runs from the moment every thread is ready to the last one's end.

use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use gpumem::Stream;
use gpumem::pools::{ManagedMemoryHandle, MemoryAllocationMode};

use crate::error::{ReplayError, Result};
use crate::replay::{Op, Program};
use crate::trace::Mode;

/// One stream's share of a program, with lane-local slots.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lane {
    /// Steps in trace order.
    pub ops: Vec<Op>,
    /// Slots the lane uses.
    pub slots: usize,
}

/// Splits `program` into one lane per dense stream.
pub fn lanes(program: &Program) -> Vec<Lane> {
    let mut lanes = vec![Lane::default(); program.streams.len().max(1)];
    // Global slot -> (lane, lane-local slot), set when it is allocated.
    let mut placed: Vec<(u32, u32)> = vec![(0, 0); program.slots];
    for op in &program.ops {
        match *op {
            Op::Alloc { slot, size, stream } => {
                let lane = stream as usize;
                let local = lanes[lane].slots as u32;
                lanes[lane].slots += 1;
                placed[slot as usize] = (lane as u32, local);
                lanes[lane].ops.push(Op::Alloc {
                    slot: local,
                    size,
                    stream,
                });
            }
            Op::Free { slot } => {
                let (lane, local) = placed[slot as usize];
                lanes[lane as usize].ops.push(Op::Free { slot: local });
            }
            Op::Mode(_) | Op::Cleanup => lanes.iter_mut().for_each(|l| l.ops.push(*op)),
        }
    }
    lanes
}

/// What the threads did together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadedRun {
    /// Clock time from all threads ready to the last one done.
    pub wall_ns: u64,
    /// Threads (one per lane).
    pub threads: usize,
    /// Ops run, over every lane (mode switches and cleanups once per lane).
    pub ops: u64,
    /// Peak Σ requested bytes live across threads, as interleaved.
    pub peak_live_bytes: u64,
    /// Successful reservations.
    pub allocs: u64,
    /// Refused reservations.
    pub failed_allocs: u64,
    /// The first refusal a lane met: `stream N, lane op M: SIZE bytes: reason`.
    pub first_failure: Option<String>,
}

struct LaneResult {
    allocs: u64,
    failed: u64,
    first_failure: Option<String>,
    live: Vec<ManagedMemoryHandle>,
}

fn run_lane(
    index: usize,
    lane: &Lane,
    stream: &Stream,
    live: &AtomicU64,
    peak: &AtomicU64,
) -> LaneResult {
    let mut slots: Vec<Option<(ManagedMemoryHandle, u64)>> = Vec::with_capacity(lane.slots);
    slots.resize_with(lane.slots, || None);
    let mut result = LaneResult {
        allocs: 0,
        failed: 0,
        first_failure: None,
        live: Vec::new(),
    };
    for (at, op) in lane.ops.iter().enumerate() {
        match *op {
            Op::Alloc { slot, size, .. } => match stream.reserve(size) {
                Ok(handle) => {
                    slots[slot as usize] = Some((handle, size));
                    result.allocs += 1;
                    let now = live.fetch_add(size, Ordering::Relaxed) + size;
                    peak.fetch_max(now, Ordering::Relaxed);
                }
                Err(err) => {
                    result.failed += 1;
                    result.first_failure.get_or_insert_with(|| {
                        format!("stream {index}, lane op {}: {size} bytes: {err}", at + 1)
                    });
                }
            },
            Op::Free { slot } => {
                if let Some((handle, size)) = slots[slot as usize].take() {
                    drop(handle);
                    live.fetch_sub(size, Ordering::Relaxed);
                }
            }
            Op::Mode(Mode::Persistent) => stream.mode(MemoryAllocationMode::Persistent),
            Op::Mode(Mode::Auto) => stream.mode(MemoryAllocationMode::Auto),
            Op::Cleanup => stream.cleanup(),
        }
    }
    result.live = slots.into_iter().flatten().map(|(h, _)| h).collect();
    result
}

/// Runs every lane on its own thread against its stream (`streams[i]`
/// serves lane `i`). Allocations still live at the end are returned, so
/// the caller reads the device's statistics before they are freed.
///
/// # Errors
/// A lane whose thread panicked (a bug in the facade or here), named by
/// `backend`.
pub fn replay_threaded(
    backend: &'static str,
    lanes: &[Lane],
    streams: &[Stream],
) -> Result<(ThreadedRun, Vec<ManagedMemoryHandle>)> {
    let (live, peak) = (AtomicU64::new(0), AtomicU64::new(0));
    let ready = Barrier::new(lanes.len() + 1);
    let (results, wall_ns) = std::thread::scope(|scope| {
        let workers: Vec<_> = lanes
            .iter()
            .zip(streams)
            .enumerate()
            .map(|(index, (lane, stream))| {
                let (live, peak, ready) = (&live, &peak, &ready);
                scope.spawn(move || {
                    ready.wait();
                    run_lane(index, lane, stream, live, peak)
                })
            })
            .collect();
        ready.wait();
        let start = Instant::now();
        let results: Vec<_> = workers.into_iter().map(|w| w.join()).collect();
        (results, start.elapsed().as_nanos() as u64)
    });
    let mut run = ThreadedRun {
        wall_ns,
        threads: lanes.len(),
        ops: lanes.iter().map(|l| l.ops.len() as u64).sum(),
        peak_live_bytes: peak.into_inner(),
        ..ThreadedRun::default()
    };
    let mut held = Vec::new();
    for (index, result) in results.into_iter().enumerate() {
        let result = result.map_err(|_| ReplayError::Backend {
            backend,
            message: format!("the replay thread of stream {index} panicked"),
        })?;
        run.allocs += result.allocs;
        run.failed_allocs += result.failed;
        if run.first_failure.is_none() {
            run.first_failure = result.first_failure;
        }
        held.extend(result.live);
    }
    Ok((run, held))
}
