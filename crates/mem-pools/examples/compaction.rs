//! What compaction does to a fragmented serving-like program: reserved ÷
//! live before and after `plan_compaction` → copy → commit, on host memory.
//!
//! `cargo run -p mem-pools --example compaction --release`
//!
//! The program reserves log-uniform sizes (256 B .. 2 MiB) with churn until
//! ~64 MiB are live, then frees a random 60 % of them — the waste serving
//! leaves behind is holes between live buffers in current pages. It then
//! gives back empty pages (`cleanup(true)`), relocates outdated pages,
//! compacts (repeating while a plan empties a page) and cleans up again.

use std::sync::Arc;

use mem_pools::{
    ManagedMemoryHandle, MemoryConfiguration, MemoryDeviceProperties, MemoryManagement,
    MemoryManagementOptions, ServerLogger, StorageCopyQueue, TargetRoom,
};
use mem_storage::HostStorage;

use mem_storage::units::MIB;

/// A small deterministic generator (no dependency, same numbers everywhere).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    /// Log-uniform in 2^8 .. 2^21.
    fn size(&mut self) -> u64 {
        let exp = 8 + self.below(13);
        (1 << exp) + self.below(1 << exp)
    }
}

fn ratio(mm: &MemoryManagement<HostStorage>) -> f64 {
    let u = mm.memory_usage();
    u.bytes_reserved as f64 / u.bytes_in_use.max(1) as f64
}

fn run(seed: u64) {
    let props = MemoryDeviceProperties {
        max_page_size: 256 * MIB,
        alignment: 256,
    };
    let mut mm = MemoryManagement::from_configuration(
        HostStorage::host(),
        &props,
        MemoryConfiguration::SubSlices,
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::default(),
    );
    let mut rng = Lcg(seed);
    let mut live: Vec<ManagedMemoryHandle> = Vec::new();
    while mm.memory_usage().bytes_in_use < 64 * MIB {
        live.push(mm.reserve(rng.size()).expect("host memory"));
        if rng.below(3) == 0 && !live.is_empty() {
            let i = rng.below(live.len() as u64) as usize;
            live.swap_remove(i);
        }
    }
    for _ in 0..live.len() * 6 / 10 {
        let i = rng.below(live.len() as u64) as usize;
        live.swap_remove(i);
    }
    mm.cleanup(true);
    let before = ratio(&mm);
    let relocation = mm.plan_relocation(TargetRoom::Held);
    let landed = mm.copy_relocation(relocation, &mut StorageCopyQueue);
    mm.commit_relocation(landed.expect("host copies"))
        .expect("same manager");
    let relocated = ratio(&mm);
    let (mut rounds, mut pages, mut moved) = (0, 0, 0);
    let state = mm.compaction_state();
    loop {
        let plan = mm.plan_compaction();
        if plan.pages() == 0 || rounds == 8 {
            break;
        }
        rounds += 1;
        let landed = mm.copy_relocation(plan, &mut StorageCopyQueue);
        let outcome = mm
            .commit_relocation(landed.expect("host copies"))
            .expect("same manager");
        pages += outcome.pages_freed;
        moved += outcome.moved_bytes;
    }
    mm.cleanup(true);
    let waste: Vec<String> = mm
        .memory_report()
        .pools
        .iter()
        .filter(|p| p.pages > 0)
        .map(|p| {
            format!(
                "{} pages: {:.1}/{:.1} MiB",
                p.pages,
                p.bytes_in_use as f64 / MIB as f64,
                p.bytes_reserved as f64 / MIB as f64
            )
        })
        .collect();
    let u = mm.memory_usage();
    println!(
        "seed {seed}: live {:.1} MiB in {} buffers | reserved/live after cleanup {before:.3}, \
         after relocation {relocated:.3}, after compaction {:.3} \
         ({rounds} rounds, {pages} pages freed, {:.1} MiB moved; \
         state before: {:.1} MiB holes, at most {} pages)\n  pools (live/reserved): {}",
        u.bytes_in_use as f64 / MIB as f64,
        live.len(),
        ratio(&mm),
        moved as f64 / MIB as f64,
        state.current_free_bytes as f64 / MIB as f64,
        state.compactable_pages,
        waste.join(" | "),
    );
}

fn main() {
    for seed in [1, 2, 3] {
        run(seed);
    }
}
