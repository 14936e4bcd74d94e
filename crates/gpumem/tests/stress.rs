//! A multi-threaded stress run over the facade: four worker threads on the
//! four streams of one host device, and a device thread that relocates,
//! reclaims and captures graphs under them, for a bounded time.
//!
//! Workers reserve, write, verify, drop, stamp and bind buffers, hand them
//! to each other through channels, and record uses of buffers other
//! streams own (`Stream::launch`: a recorded use and a submit), completing
//! their own work only now and then. The oracles run all the time:
//! - **No memory under unfinished work is handed out.** Every recorded use
//!   is remembered (owner stream, view, user stream, operation); every new
//!   reservation's view must miss every remembered region whose operation
//!   the user stream has not completed (see `Oracle` for the race
//!   direction). This catches a `bind` that freed memory
//!   another stream's work used.
//! - **No memory under unfinished work moves.** While a recorded use of a
//!   buffer is unfinished, only its holder's bind may change its view
//!   (`Run::check_unmoved`). This catches a reclaim that
//!   compacted without finishing every stream's work: the pages it empties
//!   go back to the device and page ids are never reused, so the first
//!   oracle did not see that half in five 20 s runs.
//! - **Contents survive.** Only a buffer's holder writes it (a pattern from
//!   the seed and the buffer's id); every holder verifies its buffers.
//! - **Nothing leaks.** At the end nothing is reserved or charged.
//!
//! The run keeps every move in the device thread: `auto_relocate` is off,
//! the budget is unlimited, and sizes up to 256 KiB need 3 page sizes of
//! the 8 a pool may hold, so no reservation relocates. A runtime names
//! memory in its launches by views, and a view goes stale when a
//! relocation moves the memory: the workers launch through
//! `Stream::launch`, whose guard holds the device's moving lock shared from
//! the recorded use through the view to the submit, so the device thread's
//! moves (which take it exclusive) never land between a relocation's
//! "finish every stream" and its copy. Without it, such a move strands a
//! view the oracles still protect (the fixed engine trips the move check in
//! under a second then).
//!
//! The run is made twice, at once: on paged pools (64 KiB pages, where
//! relocation and compaction move memory) and on the facade's default,
//! virtual-memory arenas (where nothing moves, idle chunks wait for their
//! stream's work before the device thread's reclaims unmap them, and every
//! new reservation is checked against the memory under unfinished work as
//! on pages).
//!
//! `GPUMEM_STRESS_SECS` (default 20) bounds each run, `GPUMEM_STRESS_SEED`
//! repeats a seed (each thread's op sequence is the seed's; the
//! interleaving is the scheduler's). A watchdog aborts the process, naming
//! every thread's last op, if the run has not ended 30 s after its time.
//! `cargo xtask soak [--secs N] [--seed S]` runs it in release for longer.

mod common;
#[path = "stress/oracle.rs"]
mod oracle;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;
use std::time::{Duration, Instant};

use gpumem::pools::IoError;
use gpumem::prelude::*;
use oracle::{Op, Oracle, Region, Rng, Tally, pattern, tag};

/// Worker threads, one per stream.
const WORKERS: usize = 4;
/// The largest buffer a worker reserves.
const MAX_SIZE: u64 = 256 * KIB;
/// Buffers a worker holds at most (owned and received).
const MAX_HELD: usize = 24;
/// Default run length.
const DEFAULT_SECS: u64 = 20;
/// How long past its run length the watchdog waits before aborting.
const GRACE: Duration = Duration::from_secs(30);

/// One buffer a worker holds: the only holder writes it.
struct Buf {
    handle: ManagedMemoryHandle,
    /// The stream that reserved it (a bind keeps the assigned side's).
    owner: usize,
    id: u64,
    tag: u64,
    len: usize,
    /// Uses of its current memory recorded by any holder, with the view
    /// each was recorded against (a bind empties it: the memory left).
    uses: Vec<Region>,
}

/// What every thread of the run shares.
struct Run {
    device: Device,
    streams: Vec<Stream>,
    seed: u64,
    stop: AtomicBool,
    oracle: Oracle,
    tally: Arc<Tally>,
    moved_slices: AtomicU64,
    pages_freed: AtomicU64,
    graphs: AtomicU64,
    verified_bytes: AtomicU64,
    /// A second device that imports the run's shareable buffers (when the
    /// device makes them).
    importer: Option<Device>,
    shared_bytes: AtomicU64,
}

/// Sets the stop flag when its thread panics, so the others end too.
struct StopOnPanic<'a>(&'a AtomicBool);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if thread::panicking() {
            self.0.store(true, Ordering::SeqCst);
        }
    }
}

fn env_u64(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    let text = text.trim();
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={text:?} is not a whole number")))
}

impl Run {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Count an error the scenario allows; panic on any other.
    fn tolerate(&self, err: GpuMemError, during: &str) {
        let kind = match &err {
            GpuMemError::Recording { .. } => "Recording (a device-wide move while a graph records)",
            GpuMemError::Pool(IoError::CaptureWouldAllocate { .. }) => {
                "CaptureWouldAllocate (the stream's capture window is full)"
            }
            GpuMemError::Pool(IoError::SharedReserved { .. }) => {
                "SharedReserved (a graph pins the reserved memory)"
            }
            GpuMemError::Pool(IoError::AssignedPinned { .. }) => {
                "AssignedPinned (a graph pins the assigned memory)"
            }
            _ => panic!("{during}: an error the scenario does not allow: {err}\n{err:?}"),
        };
        self.tally.tolerate(&format!("{during}: {kind}"));
    }

    /// Reserve `size` bytes on stream `on` for thread `me`, and check the
    /// fresh memory against the oracle while it is held.
    fn reserve_checked(&self, me: usize, on: usize, size: u64) -> Option<ManagedMemoryHandle> {
        self.tally.start(me, Op::Reserve);
        let stream = &self.streams[on];
        let handle = match stream.reserve(size) {
            Ok(handle) => handle,
            Err(err) => {
                self.tolerate(err, "reserve");
                // A full capture window stays full until the capture ends.
                thread::yield_now();
                return None;
            }
        };
        let view = stream
            .view(&handle)
            .expect("a fresh reservation has a view");
        let what = format!("thread {me}'s reservation of {size} bytes");
        self.oracle.check_fresh(&self.streams, on, &view, &what);
        Some(handle)
    }

    /// Reserve and fill a new buffer on stream `on`.
    fn new_buf(&self, me: usize, on: usize, size: u64, next_id: &mut u64) -> Option<Buf> {
        let handle = self.reserve_checked(me, on, size)?;
        *next_id += 1;
        let (id, len) = (*next_id, size as usize);
        let tag = tag(self.seed, id);
        self.tally.start(me, Op::Write);
        self.streams[on]
            .write(&handle, &pattern(tag, len))
            .expect("a fresh buffer is writable");
        Some(Buf {
            handle,
            owner: on,
            id,
            tag,
            len,
            uses: Vec::new(),
        })
    }

    /// Check that `buf`'s memory has not moved while work that uses it is
    /// unfinished: only a holder's bind gives it new memory (and empties
    /// its uses); every relocation and compaction finishes every stream's
    /// work before a byte moves. Forgets completed uses.
    fn check_unmoved(&self, me: usize, buf: &mut Buf) {
        if buf.uses.is_empty() {
            return;
        }
        let now = self.streams[buf.owner]
            .view(&buf.handle)
            .expect("a held buffer has a view");
        // As in `Oracle`: the counter is read after the view.
        buf.uses.retain(|u| {
            let completed = self.streams[u.user].completed();
            if completed >= u.op {
                return false;
            }
            assert!(
                u.view == now,
                "MOVED: thread {me}'s buffer {:#x} on stream {} moved from {:?} to {now:?} \
                 while stream {}'s operation {} uses it (completed only through {completed})",
                buf.id,
                buf.owner,
                u.view,
                u.user,
                u.op,
            );
            true
        });
    }

    fn verify(&self, me: usize, buf: &mut Buf) {
        self.check_unmoved(me, buf);
        let mut bytes = vec![0; buf.len];
        self.streams[buf.owner]
            .read(&buf.handle, &mut bytes)
            .expect("a held buffer is readable");
        let expected = pattern(buf.tag, buf.len);
        if let Some(at) = (0..buf.len).find(|&i| bytes[i] != expected[i]) {
            let view = self.streams[buf.owner].view(&buf.handle);
            panic!(
                "CONTENTS: thread {me}'s buffer {:#x} ({} bytes on stream {}, now {view:?}) \
                 changed at byte {at}: {:#04x}, written {:#04x}",
                buf.id, buf.len, buf.owner, bytes[at], expected[at]
            );
        }
        self.verified_bytes
            .fetch_add(buf.len as u64, Ordering::Relaxed);
    }
}

/// One worker: thread `me` on stream `me`.
fn worker(run: &Run, me: usize, inbox: Receiver<Buf>, peers: Vec<Sender<Buf>>) {
    let _stop = StopOnPanic(&run.stop);
    let stream = &run.streams[me];
    let mut rng = Rng::new(run.seed ^ (me as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
    let mut bufs: Vec<Buf> = Vec::new();
    let mut next_id = (me as u64 + 1) << 48;
    let mut step = 0u64;
    while !run.stopped() {
        step += 1;
        while let Ok(buf) = inbox.try_recv() {
            run.tally.start(me, Op::Receive);
            bufs.push(buf);
        }
        let roll = rng.below(100);
        let pick = (!bufs.is_empty()).then(|| rng.index(bufs.len()));
        match (roll, pick) {
            (0..=24, _) | (_, None) => {
                let size = rng.size(MAX_SIZE);
                if let Some(buf) = run.new_buf(me, me, size, &mut next_id) {
                    bufs.push(buf);
                }
            }
            (25..=34, Some(i)) => {
                run.tally.start(me, Op::Drop);
                drop(bufs.swap_remove(i));
            }
            (35..=42, Some(i)) => {
                run.tally.start(me, Op::Verify);
                run.verify(me, &mut bufs[i]);
            }
            (43..=52, Some(i)) => {
                run.tally.start(me, Op::Send);
                let to = (me + 1 + rng.index(WORKERS - 1)) % WORKERS;
                // A peer that already stopped drops it with its inbox.
                let _ = peers[to].send(bufs.swap_remove(i));
            }
            (53..=66, Some(_)) => record_use(run, me, &mut rng, &mut bufs),
            (67..=72, _) => {
                run.tally.start(me, Op::Submit);
                stream.submit();
            }
            (73..=77, _) => {
                run.tally.start(me, Op::CompleteThrough);
                stream
                    .complete_through(stream.cursor())
                    .expect("the cursor was submitted");
            }
            (78, _) => {
                run.tally.start(me, Op::Synchronize);
                stream.synchronize().expect("a host stream synchronizes");
            }
            (79..=91, Some(i)) => bind(run, me, &mut rng, &mut bufs[i], &mut next_id),
            (_, Some(i)) => {
                run.tally.start(me, Op::Stamp);
                let owner = run
                    .device
                    .stream_of(&bufs[i].handle)
                    .expect("a held buffer has an owner");
                if let Err(err) = owner.stamp(&bufs[i].handle) {
                    run.tolerate(err, "stamp");
                }
            }
        }
        if bufs.len() > MAX_HELD {
            run.tally.start(me, Op::Drop);
            drop(bufs.swap_remove(rng.index(bufs.len())));
        }
        if step.is_multiple_of(64) {
            run.tally.start(me, Op::VerifyAll);
            bufs.iter_mut().for_each(|b| run.verify(me, b));
        }
    }
    run.tally.start(me, Op::VerifyAll);
    bufs.iter_mut().for_each(|b| run.verify(me, b));
    run.tally.start(me, Op::Done);
}

/// Record that this stream's next operation uses a buffer another stream
/// owns, submit that operation, and remember the memory it uses.
fn record_use(run: &Run, me: usize, rng: &mut Rng, bufs: &mut [Buf]) {
    let foreign: Vec<usize> = (0..bufs.len()).filter(|&i| bufs[i].owner != me).collect();
    let stream = &run.streams[me];
    if foreign.is_empty() {
        run.tally.start(me, Op::Submit);
        stream.submit();
        return;
    }
    let buf = &mut bufs[foreign[rng.index(foreign.len())]];
    run.check_unmoved(me, buf);
    run.tally.start(me, Op::RecordUse);
    // The launch records the use and keeps every move out until the
    // submit: the view it reads is the memory the work uses.
    let launch = stream
        .launch(&[&buf.handle])
        .expect("a held buffer's use is recorded");
    let view = launch.view(&buf.handle).expect("a held buffer has a view");
    let op = launch.submit();
    let region = Region {
        owner: buf.owner,
        view,
        user: me,
        op,
    };
    buf.uses.push(region.clone());
    run.oracle.remember(region);
}

/// Bind a fresh buffer of `buf`'s stream to `buf` (on that stream).
fn bind(run: &Run, me: usize, rng: &mut Rng, buf: &mut Buf, next_id: &mut u64) {
    let owner = run
        .device
        .stream_of(&buf.handle)
        .expect("a held buffer has an owner");
    let size = rng.size(MAX_SIZE);
    let Some(fresh) = run.new_buf(me, owner.index(), size, next_id) else {
        return;
    };
    run.tally.start(me, Op::Bind);
    let (id, tag, len) = (fresh.id, fresh.tag, fresh.len);
    match owner.bind(fresh.handle, buf.handle.clone()) {
        Ok(_) => {
            // `buf` names the fresh memory and its bytes now; the uses
            // stay with the old memory (the oracle's regions).
            (buf.id, buf.tag, buf.len) = (id, tag, len);
            buf.uses.clear();
        }
        Err(err) => run.tolerate(err, "bind"),
    }
}

/// The device thread: relocations, reclaims and captures under the workers.
fn device_thread(run: &Run, me: usize) {
    let _stop = StopOnPanic(&run.stop);
    let mut rng = Rng::new(run.seed ^ 0x00DE_71CE);
    while !run.stopped() {
        thread::sleep(Duration::from_millis(1 + rng.below(8)));
        let stream = &run.streams[rng.index(WORKERS)];
        match rng.below(10) {
            0..=1 => {
                run.tally.start(me, Op::Relocate);
                tally_moves(
                    run,
                    run.device.relocate(RelocationReason::Explicit),
                    "relocate",
                );
            }
            2..=3 => {
                run.tally.start(me, Op::DeviceReclaim);
                tally_moves(run, run.device.reclaim(), "device reclaim");
            }
            4..=5 => {
                run.tally.start(me, Op::StreamReclaim);
                tally_moves(run, stream.reclaim(), "stream reclaim");
            }
            6 if run.importer.is_some() && rng.percent(50) => {
                run.tally.start(me, Op::Share);
                share_round(run, &mut rng, stream);
            }
            6 => {
                run.tally.start(me, Op::Cleanup);
                stream.cleanup();
            }
            // On CUDA, half the captures are CUDA graphs, on the stream no
            // worker uses: work other threads queue on a captured stream
            // would be captured too (their host transfers are refused).
            _ if run.streams.len() > WORKERS && rng.percent(50) => {
                capture_cuda(run, me, &mut rng, &run.streams[WORKERS])
            }
            _ => capture(run, me, &mut rng, stream),
        }
    }
    run.tally.start(me, Op::Done);
}

/// A shareable buffer made beside the workers' pooled ones while they
/// run, exported, imported by the importer device, checked on both sides
/// (the exporter's bytes then zeros to the granule's end: nothing of a
/// worker's buffer), answered, and dropped by the exporter before the
/// importer.
fn share_round(run: &Run, rng: &mut Rng, stream: &Stream) {
    let Some(importer) = &run.importer else {
        return;
    };
    let len = 1 + rng.below(3 * MIB) as usize;
    let tag = rng.next_u64();
    let data = pattern(tag, len);
    let buffer = stream
        .reserve_shareable(len as u64)
        .expect("a host shareable buffer");
    buffer
        .write(0, &data)
        .expect("a write to a shareable buffer");
    let shared = stream.export(&buffer).expect("an export");
    let view = importer.import(shared).expect("an import");
    let mut seen = vec![0u8; view.mapped_len() as usize];
    view.read(0, &mut seen).expect("the importer reads");
    assert!(
        seen[..len] == data[..],
        "the importer saw other bytes (tag {tag:#x})"
    );
    assert!(
        seen[len..].iter().all(|&b| b == 0),
        "the padding holds data"
    );
    view.write(0, &[0xA5]).expect("the importer writes");
    let mut reply = [0u8];
    buffer.read(0, &mut reply).expect("the exporter reads");
    assert_eq!(reply, [0xA5]);
    drop(buffer);
    view.read(1, &mut seen[1..len])
        .expect("the importer reads on");
    assert!(
        seen[1..len] == data[1..],
        "the exporter's drop changed the importer's bytes"
    );
    run.shared_bytes.fetch_add(len as u64, Ordering::Relaxed);
}

fn tally_moves(
    run: &Run,
    result: gpumem::error::Result<gpumem::relocate::RelocationSummary>,
    during: &str,
) {
    match result {
        Ok(summary) => {
            run.moved_slices
                .fetch_add(summary.moved_slices as u64, Ordering::Relaxed);
            run.pages_freed
                .fetch_add(summary.pages_freed, Ordering::Relaxed);
        }
        Err(err) => run.tolerate(err, during),
    }
}

/// While a graph records, a device-wide move is refused with `Recording`.
fn refused_while_recording(run: &Run, me: usize, rng: &mut Rng) {
    run.tally.start(me, Op::RefusedWhileRecording);
    let result = if rng.percent(50) {
        run.device.reclaim()
    } else {
        run.device.relocate(RelocationReason::Explicit)
    };
    match result {
        Err(err @ GpuMemError::Recording { .. }) => run.tolerate(err, "move during a capture"),
        other => panic!("a device-wide move while a graph records: {other:?}"),
    }
}

/// One capture on `stream`: a warmup reservation, the same size in the
/// recorded pass with a fill recorded over it, end, one replay.
fn capture(run: &Run, me: usize, rng: &mut Rng, stream: &Stream) {
    run.tally.start(me, Op::CaptureBegin);
    let warmup = stream.begin_capture();
    let warmup = match warmup {
        Ok(warmup) => warmup,
        Err(err) => return run.tolerate(err, "begin capture"),
    };
    run.tally.start(me, Op::CaptureWarmup);
    let size = rng.size(MAX_SIZE);
    let Some(scratch) = run.reserve_checked(me, stream.index(), size) else {
        return;
    };
    drop(scratch);
    if rng.percent(25) {
        refused_while_recording(run, me, rng);
    }
    thread::sleep(Duration::from_millis(rng.below(3)));
    let mut recording = match warmup.start_recording() {
        Ok(recording) => recording,
        Err(err) => return run.tolerate(err, "start recording"),
    };
    run.tally.start(me, Op::CaptureRecord);
    // Workers on this stream may have taken the warmed-up memory.
    let Some(out) = run.reserve_checked(me, stream.index(), size) else {
        return;
    };
    let view = stream.view(&out).expect("a fresh reservation has a view");
    recording
        .recorder()
        .fill(0, view, 0x5A)
        .expect("a recording records");
    if rng.percent(25) {
        refused_while_recording(run, me, rng);
    }
    thread::sleep(Duration::from_millis(rng.below(3)));
    run.tally.start(me, Op::CaptureEnd);
    let mut graph = match recording.end() {
        Ok(graph) => graph,
        Err(err) => return run.tolerate(err, "end capture"),
    };
    run.graphs.fetch_add(1, Ordering::Relaxed);
    run.tally.start(me, Op::Replay);
    graph
        .replay()
        .expect("a graph whose memory is pinned replays");
    let mut bytes = vec![0; size as usize];
    stream.read(&out, &mut bytes).expect("readable");
    assert!(
        bytes.iter().all(|&b| b == 0x5A),
        "the replayed fill did not land on the graph's memory"
    );
}

/// [`capture`] on a CUDA device, as a CUDA graph: the stream is captured
/// by the driver (thread-local mode) and the fill is a `cuMemsetD8Async`
/// recorded on it, so every call gpumem makes while it records (on this
/// thread, and the workers' and relocations' on other streams) meets the
/// driver's capture rules.
fn capture_cuda(run: &Run, me: usize, rng: &mut Rng, stream: &Stream) {
    use gpumem::capture::cuda::CudaGraphBackend;
    use gpumem::device::cudarc::driver::result;

    run.tally.start(me, Op::CaptureBegin);
    let cuda = stream.cuda_stream().expect("a CUDA device's stream");
    // SAFETY: the capture makes no CudaSlice; its one recorded operation
    // is a memset over gpumem memory, on the capturing stream.
    let backend = unsafe { CudaGraphBackend::new(cuda) };
    let warmup = match stream.begin_capture_with(backend) {
        Ok(warmup) => warmup,
        Err(err) => return run.tolerate(err, "begin capture"),
    };
    run.tally.start(me, Op::CaptureWarmup);
    let size = rng.size(MAX_SIZE);
    let Some(scratch) = run.reserve_checked(me, stream.index(), size) else {
        return;
    };
    drop(scratch);
    if rng.percent(25) {
        refused_while_recording(run, me, rng);
    }
    let mut recording = match warmup.start_recording() {
        Ok(recording) => recording,
        Err(err) => return run.tolerate(err, "start recording"),
    };
    run.tally.start(me, Op::CaptureRecord);
    let Some(out) = run.reserve_checked(me, stream.index(), size) else {
        return;
    };
    {
        let ptr = stream.device_ptr(&out).expect("a fresh reservation");
        let on = recording.recorder().clone();
        // SAFETY: `ptr` is a live gpumem allocation of `size` bytes,
        // pinned by its guard while recorded and by the graph after
        // (it was reserved in the recording).
        unsafe { result::memset_d8_async(ptr.as_raw(), 0x5A, size as usize, on.cu_stream()) }
            .expect("a recording records");
    }
    if rng.percent(25) {
        refused_while_recording(run, me, rng);
    }
    run.tally.start(me, Op::CaptureEnd);
    let mut graph = match recording.end() {
        Ok(graph) => graph,
        Err(err) => return run.tolerate(err, "end capture"),
    };
    run.graphs.fetch_add(1, Ordering::Relaxed);
    run.tally.start(me, Op::Replay);
    graph
        .replay()
        .expect("a graph whose memory is pinned replays");
    stream.synchronize().expect("the replay completes");
    let mut bytes = vec![0; size as usize];
    stream.read(&out, &mut bytes).expect("readable");
    assert!(
        bytes.iter().all(|&b| b == 0x5A),
        "the replayed memset did not land on the graph's memory"
    );
}

/// Abort the process, naming every thread's last op, unless `done` is set
/// within `limit`: a deadlock fails loudly instead of hanging CI.
fn watchdog(tally: Arc<Tally>, done: Arc<AtomicBool>, limit: Duration, seed: u64) {
    let start = Instant::now();
    thread::spawn(move || {
        while !done.load(Ordering::SeqCst) {
            if start.elapsed() > limit {
                eprintln!(
                    "stress: no end after {limit:?} (GPUMEM_STRESS_SEED={seed:#x}); last ops:\n{}",
                    tally.progress()
                );
                std::process::abort();
            }
            thread::sleep(Duration::from_millis(100));
        }
    });
}

#[test]
#[cfg_attr(miri, ignore = "a timed multi-threaded run")]
fn four_threads_on_four_streams_of_paged_pools_never_reuse_memory_under_unfinished_work() {
    let device = Device::host()
        .pools(common::growable())
        .streams(WORKERS)
        .ignore_env()
        .build()
        .expect("a host device builds");
    stress(&device, "paged pools");
}

/// The same run on the facade's default, virtual-memory arenas: slices of
/// up to 256 KiB share 2 MiB chunks, idle chunks wait for their stream's
/// work before they are unmapped, and nothing ever moves (the device
/// thread's relocations and reclaims give back idle chunks instead).
#[test]
#[cfg_attr(miri, ignore = "a timed multi-threaded run")]
fn four_threads_on_four_streams_of_arenas_never_reuse_memory_under_unfinished_work() {
    // Shareable buffers exported and imported in the mix.
    let device = Device::host()
        .streams(WORKERS)
        .ignore_env()
        .conf("share:posix_fd")
        .expect("share is a key")
        .build()
        .expect("a host device builds");
    assert!(
        device.memory_report().virtual_memory.is_some(),
        "the default is arenas"
    );
    stress(&device, "arenas");
}

/// The same run on CUDA, where a driver is present: on a GPU, or on the
/// stand-in driver (`cargo xtask cuda-standin`), whose streams run
/// asynchronously and whose contract violations (work that found its
/// memory unmapped, freed or without access; a call that broke the
/// driver's rules) are one more oracle: there must be none. `pools` is
/// the layout (the default arenas when `None`).
fn cuda_stress(pools: Option<PoolLayout>, layout: &str) {
    let builder = match Device::cuda(0) {
        Ok(builder) => builder,
        Err(err) => {
            println!("skipping: no CUDA device ({err})");
            return;
        }
    };
    let builder = match pools {
        Some(pools) => builder.pools(pools),
        None => builder,
    };
    // A stream beyond the workers' for the device thread's CUDA graphs.
    let device = builder
        .streams(WORKERS + 1)
        .ignore_env()
        .build()
        .expect("a CUDA device builds");
    let before = common::standin::violations();
    stress(&device, layout);
    drop(device);
    if let (Some(before), Some(after)) = (before, common::standin::violations()) {
        assert_eq!(
            after - before,
            0,
            "the stand-in driver saw contract violations"
        );
    }
}

#[test]
#[cfg_attr(miri, ignore = "a timed multi-threaded run")]
fn four_threads_on_four_streams_of_cuda_arenas_never_reuse_memory_under_unfinished_work() {
    cuda_stress(None, "CUDA arenas");
}

#[test]
#[cfg_attr(miri, ignore = "a timed multi-threaded run")]
fn four_threads_on_four_streams_of_cuda_paged_pools_never_reuse_memory_under_unfinished_work() {
    cuda_stress(Some(common::growable()), "CUDA paged pools");
}

/// One stress run on `device` (named `layout` in what it prints).
fn stress(device: &Device, layout: &str) {
    let seed = env_u64("GPUMEM_STRESS_SEED").unwrap_or_else(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Rng::new(nanos).next_u64()
    });
    let secs = env_u64("GPUMEM_STRESS_SECS").unwrap_or(DEFAULT_SECS).max(1);
    println!("stress on {layout}: GPUMEM_STRESS_SEED={seed:#x} GPUMEM_STRESS_SECS={secs}");
    let mut names: Vec<String> = (0..WORKERS).map(|i| format!("worker {i}")).collect();
    names.push("device thread".into());
    let run = Run {
        streams: device.streams(),
        device: device.clone(),
        seed,
        stop: AtomicBool::new(false),
        oracle: Oracle::default(),
        tally: Arc::new(Tally::new(names)),
        moved_slices: AtomicU64::new(0),
        pages_freed: AtomicU64::new(0),
        graphs: AtomicU64::new(0),
        verified_bytes: AtomicU64::new(0),
        importer: device.config().share.map(|_| {
            Device::host()
                .ignore_env()
                .build()
                .expect("a host importer builds")
        }),
        shared_bytes: AtomicU64::new(0),
    };
    let done = Arc::new(AtomicBool::new(false));
    let run_for = Duration::from_secs(secs);
    watchdog(run.tally.clone(), done.clone(), run_for + GRACE, seed);

    let started = Instant::now();
    let (senders, inboxes): (Vec<_>, Vec<_>) = (0..WORKERS).map(|_| mpsc::channel()).unzip();
    thread::scope(|scope| {
        let run = &run;
        for (me, inbox) in inboxes.into_iter().enumerate() {
            let peers = senders.clone();
            scope.spawn(move || worker(run, me, inbox, peers));
        }
        scope.spawn(move || device_thread(run, WORKERS));
        while !run.stopped() && started.elapsed() < run_for {
            thread::sleep(Duration::from_millis(20));
        }
        run.stop.store(true, Ordering::SeqCst);
    });
    drop(senders);
    let elapsed = started.elapsed();

    device.synchronize().expect("every stream synchronizes");
    device.reclaim().expect("nothing records any more");
    for stream in &run.streams {
        assert_eq!(
            stream.held_bytes(),
            0,
            "stream {} holds memory",
            stream.index()
        );
    }
    let stats = device.stats();
    assert_eq!(
        stats.requested_bytes.current, 0,
        "a buffer outlived its holders"
    );
    if stats.reserved_bytes.current != 0 {
        // Which stream holds what, pool by pool: what to read first when
        // this fails.
        let held: Vec<String> = run
            .streams
            .iter()
            .filter(|s| s.stats().reserved_bytes.current != 0)
            .map(|s| {
                let capture = s.with_memory(|m| m.capture_state());
                format!(
                    "stream {}: capture {capture:?}\n{:#?}",
                    s.index(),
                    s.memory_report()
                )
            })
            .collect();
        // Whether the memory only went free after the reclaim (a second
        // one gives it back) or stays held (it does not).
        device.reclaim().expect("nothing records any more");
        let again = device.stats().reserved_bytes.current;
        panic!(
            "pages leaked on {layout} (seed {seed:#x}): {} bytes reserved; after a second reclaim {again}\n{}\n{stats:?}",
            stats.reserved_bytes.current,
            held.join("\n")
        );
    }
    assert_eq!(device.budget().charged(), 0, "the budget is still charged");
    done.store(true, Ordering::SeqCst);

    let ops: u64 = Op::ALL.iter().map(|&op| run.tally.count(op)).sum();
    println!(
        "stress on {layout}: {ops} ops in {elapsed:.1?} (seed {seed:#x})\n{}  oracle: {} reservations \
         checked against {} regions under unfinished work, {} uses remembered\n  \
         moved slices {}, pages freed {}, graphs {}, verified {} MiB, shared {} MiB",
        run.tally.summary(),
        run.oracle.checks.load(Ordering::Relaxed),
        run.oracle.compared.load(Ordering::Relaxed),
        run.oracle.remembered.load(Ordering::Relaxed),
        run.moved_slices.load(Ordering::Relaxed),
        run.pages_freed.load(Ordering::Relaxed),
        run.graphs.load(Ordering::Relaxed),
        run.verified_bytes.load(Ordering::Relaxed) / MIB,
        run.shared_bytes.load(Ordering::Relaxed) / MIB,
    );
    if run.importer.is_some() {
        assert!(
            run.tally.count(Op::Share) > 0,
            "no buffer was shared in the run"
        );
    }
}
