//! The stress test's parts that hold no thread: the seeded PRNG, byte
//! patterns, the oracle of memory under unfinished work, and the tallies.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use gpumem::Stream;
use gpumem::storage::StorageHandle;

/// splitmix64: a tiny deterministic PRNG, one `u64` of state.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`; the modulo bias is irrelevant here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// An index into a non-empty collection of `len` items.
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    /// True with probability `percent` / 100.
    pub fn percent(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// A size in `1..=max`, log-uniform: as many sizes of a few bytes as of
    /// a few hundred KiB, so small slices share pages with big ones.
    pub fn size(&mut self, max: u64) -> u64 {
        let bits = 64 - max.leading_zeros() as u64;
        let top = 1u64 << self.below(bits);
        (1 + self.below(top)).min(max)
    }
}

/// The bytes buffer `tag` holds: splitmix64 words from the tag.
pub fn pattern(tag: u64, len: usize) -> Vec<u8> {
    let mut rng = Rng::new(tag);
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    out.truncate(len);
    out
}

/// The pattern tag of buffer `id` in a run seeded `seed`.
pub fn tag(seed: u64, id: u64) -> u64 {
    Rng::new(seed ^ id.wrapping_mul(0xA24B_AED4_963E_E407)).next_u64()
}

/// Memory that work of stream `user` (operation `op`) uses: the view, on
/// stream `owner`'s storage (page ids are per stream), of a buffer whose
/// use was recorded.
#[derive(Debug, Clone)]
pub struct Region {
    pub owner: usize,
    pub view: StorageHandle,
    pub user: usize,
    pub op: u64,
}

fn overlaps(a: &StorageHandle, b: &StorageHandle) -> bool {
    let (a_end, b_end) = (
        a.offset() + a.utilization.size,
        b.offset() + b.utilization.size,
    );
    a.id == b.id && a.offset() < b_end && b.offset() < a_end
}

/// Every region some stream's unfinished work uses, shared by all threads.
///
/// The race direction: a region is checked against a new reservation
/// only with the user's `completed()` read *after* the reservation and
/// its view were taken. The counter never goes back, so `completed < op`
/// then means the work was unfinished during the whole reservation: an
/// overlap is memory handed out under unfinished work, never a race of
/// the check. (Reading it before the reservation would blame the engine
/// for work that completed in between.)
#[derive(Debug, Default)]
pub struct Oracle {
    regions: Mutex<Vec<Region>>,
    pub checks: AtomicU64,
    pub compared: AtomicU64,
    pub remembered: AtomicU64,
}

impl Oracle {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Region>> {
        self.regions.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn remember(&self, region: Region) {
        self.remembered.fetch_add(1, Ordering::Relaxed);
        self.lock().push(region);
    }

    /// Check a reservation just made on stream `owner` (still held by the
    /// caller), whose view is `view`, against every remembered region;
    /// forget regions whose work completed. Panics naming both on overlap.
    pub fn check_fresh(&self, streams: &[Stream], owner: usize, view: &StorageHandle, what: &str) {
        self.checks.fetch_add(1, Ordering::Relaxed);
        let mut regions = self.lock();
        let mut compared = 0;
        regions.retain(|r| {
            // Read after the view was taken (see the type's doc).
            let completed = streams[r.user].completed();
            if completed >= r.op {
                return false;
            }
            compared += 1;
            assert!(
                !(r.owner == owner && overlaps(&r.view, view)),
                "ORACLE: {what} on stream {owner} got {view:?}, which overlaps {:?}: memory \
                 that stream {}'s operation {} uses, and that stream has completed only \
                 through {completed}",
                r.view,
                r.user,
                r.op,
            );
            true
        });
        self.compared.fetch_add(compared, Ordering::Relaxed);
    }
}

/// What a thread does; the tallies count each, the watchdog names the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Idle,
    Reserve,
    Write,
    Verify,
    VerifyAll,
    Drop,
    Send,
    Receive,
    RecordUse,
    Submit,
    CompleteThrough,
    Synchronize,
    Bind,
    Stamp,
    Relocate,
    DeviceReclaim,
    StreamReclaim,
    Cleanup,
    Share,
    CaptureBegin,
    CaptureWarmup,
    CaptureRecord,
    CaptureEnd,
    Replay,
    RefusedWhileRecording,
    Done,
}

impl Op {
    pub const ALL: [Op; 26] = [
        Op::Idle,
        Op::Reserve,
        Op::Write,
        Op::Verify,
        Op::VerifyAll,
        Op::Drop,
        Op::Send,
        Op::Receive,
        Op::RecordUse,
        Op::Submit,
        Op::CompleteThrough,
        Op::Synchronize,
        Op::Bind,
        Op::Stamp,
        Op::Relocate,
        Op::DeviceReclaim,
        Op::StreamReclaim,
        Op::Cleanup,
        Op::Share,
        Op::CaptureBegin,
        Op::CaptureWarmup,
        Op::CaptureRecord,
        Op::CaptureEnd,
        Op::Replay,
        Op::RefusedWhileRecording,
        Op::Done,
    ];

    /// Its position in [`Op::ALL`] (the declaration order).
    fn index(self) -> usize {
        self as usize
    }
}

/// Per-thread progress (for the watchdog) and per-op counts.
#[derive(Debug)]
pub struct Tally {
    names: Vec<String>,
    last: Vec<AtomicUsize>,
    steps: Vec<AtomicU64>,
    counts: Vec<AtomicU64>,
    tolerated: Mutex<BTreeMap<String, u64>>,
}

impl Tally {
    pub fn new(names: Vec<String>) -> Self {
        let n = names.len();
        Self {
            names,
            last: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            steps: (0..n).map(|_| AtomicU64::new(0)).collect(),
            counts: Op::ALL.iter().map(|_| AtomicU64::new(0)).collect(),
            tolerated: Mutex::default(),
        }
    }

    /// Thread `thread` starts `op`.
    pub fn start(&self, thread: usize, op: Op) {
        self.last[thread].store(op.index(), Ordering::Relaxed);
        self.steps[thread].fetch_add(1, Ordering::Relaxed);
        self.counts[op.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// A typed error the scenario allows, by kind.
    pub fn tolerate(&self, kind: &str) {
        let mut map = self.tolerated.lock().unwrap_or_else(|p| p.into_inner());
        *map.entry(kind.to_owned()).or_default() += 1;
    }

    pub fn count(&self, op: Op) -> u64 {
        self.counts[op.index()].load(Ordering::Relaxed)
    }

    /// Every thread's last op and step count, one line each.
    pub fn progress(&self) -> String {
        self.names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let op = Op::ALL[self.last[i].load(Ordering::Relaxed)];
                let steps = self.steps[i].load(Ordering::Relaxed);
                format!("  {name}: last op {op:?} (step {steps})\n")
            })
            .collect()
    }

    /// The op counts and the tolerated errors, one line each.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for op in Op::ALL {
            let n = self.count(op);
            if n > 0 && !matches!(op, Op::Idle | Op::Done) {
                out += &format!("  {op:?}: {n}\n");
            }
        }
        let tolerated = self.tolerated.lock().unwrap_or_else(|p| p.into_inner());
        let total: u64 = tolerated.values().sum();
        out += &format!("  tolerated errors: {total}\n");
        for (kind, n) in tolerated.iter() {
            out += &format!("    {kind}: {n}\n");
        }
        out
    }
}
