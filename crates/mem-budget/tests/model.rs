//! Random programs of reserve / alloc / alloc_raw / drop / reap against a model.
//!
//! The model is two integers per budget; the manager must agree with it on
//! every decision (granted, or refused by which budget), on every counter
//! after every step, and every live allocation must keep its bytes.

use std::sync::Arc;

use mem_budget::{
    AllocTag, BudgetDevice, BudgetError, BudgetScope, DeviceRuntime, GpuMemoryManager,
    GpuMemoryReservation, MemoryBudget, RuntimeAllocBlock, TrackedSlice,
};
use proptest::prelude::*;

const LOCAL: u64 = 8 << 10;
const GLOBAL: u64 = 6 << 10;

#[derive(Debug, Clone)]
enum Op {
    Reserve(u64),
    Alloc(u64),
    AllocRaw(u64),
    Drop(usize),
    Reap,
    ResetPeak,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0u64..3000).prop_map(Op::Reserve),
        2 => (0u64..3000).prop_map(Op::Alloc),
        2 => (0u64..3000).prop_map(Op::AllocRaw),
        5 => any::<usize>().prop_map(Op::Drop),
        1 => Just(Op::Reap),
        1 => Just(Op::ResetPeak),
    ]
}

enum Held {
    Token(GpuMemoryReservation),
    Slice(TrackedSlice<u8>, u8),
    Block(RuntimeAllocBlock, u8),
}

#[derive(Default)]
struct Model {
    local: u64,
    global: u64,
    pending: u64,
    peak: u64,
    global_peak: u64,
}

impl Model {
    /// The scope that refuses `bytes`, checking budgets in `order`.
    fn refusal(&self, bytes: u64, order: [BudgetScope; 2]) -> Option<BudgetScope> {
        order.into_iter().find(|scope| match scope {
            BudgetScope::Local => self.local + bytes > LOCAL,
            BudgetScope::Global => self.global + bytes > GLOBAL,
        })
    }
}

fn check_contents(held: &Held) {
    let (bytes, stamp, read): (u64, u8, Vec<u8>) = match held {
        Held::Token(_) => return,
        Held::Slice(s, stamp) => {
            let mut out = vec![0; s.len()];
            s.read(&mut out).unwrap();
            (s.bytes(), *stamp, out)
        }
        Held::Block(b, stamp) => {
            let mut out = vec![0; b.bytes() as usize];
            b.read(&mut out).unwrap();
            (b.bytes(), *stamp, out)
        }
    };
    assert_eq!(read.len() as u64, bytes);
    assert!(
        read.iter().all(|&b| b == stamp),
        "an allocation lost its bytes"
    );
}

fn run(ops: Vec<Op>, defer: bool) {
    let device = BudgetDevice::host_with_capacity(1 << 24);
    let mut builder =
        DeviceRuntime::builder(device.clone()).global_budget(MemoryBudget::bytes(GLOBAL));
    if defer {
        builder = builder.defer_frees();
    }
    let runtime = Arc::new(builder.build());
    let global = runtime.global_budget().unwrap().clone();
    let manager = Arc::new(
        GpuMemoryManager::with_runtime(device, MemoryBudget::bytes(LOCAL), runtime).unwrap(),
    );
    let mut model = Model::default();
    let mut held: Vec<Held> = Vec::new();
    for (step, op) in ops.into_iter().enumerate() {
        let stamp = (step % 251) as u8 + 1;
        let (bytes, order, result) = match &op {
            Op::Reserve(b) => (
                *b,
                [BudgetScope::Global, BudgetScope::Local],
                manager.reserve_bytes(*b).map(Held::Token),
            ),
            Op::Alloc(b) => (
                *b,
                [BudgetScope::Local, BudgetScope::Global],
                manager.alloc::<u8>(*b as usize).map(|s| {
                    s.write(&vec![stamp; s.len()]).unwrap();
                    Held::Slice(s, stamp)
                }),
            ),
            Op::AllocRaw(b) => (
                *b,
                [BudgetScope::Local, BudgetScope::Global],
                manager
                    .alloc_raw(*b as usize, AllocTag::SCRATCH)
                    .map(|blk| {
                        blk.write(&vec![stamp; blk.bytes() as usize]).unwrap();
                        Held::Block(blk, stamp)
                    }),
            ),
            Op::Drop(i) => {
                if !held.is_empty() {
                    let item = held.swap_remove(i % held.len());
                    check_contents(&item);
                    let size = match &item {
                        Held::Token(t) => {
                            model.local -= t.bytes();
                            model.global -= t.bytes();
                            0
                        }
                        Held::Slice(s, _) => s.bytes(),
                        Held::Block(b, _) => b.bytes(),
                    };
                    if defer {
                        model.pending += size
                    } else {
                        model.local -= size;
                        model.global -= size;
                    }
                }
                continue_checks(&manager, &global, &model);
                continue;
            }
            Op::Reap => {
                manager.reap_pending_deallocations().unwrap();
                model.local -= model.pending;
                model.global -= model.pending;
                model.pending = 0;
                continue_checks(&manager, &global, &model);
                continue;
            }
            Op::ResetPeak => {
                manager.reset_peak();
                model.peak = model.local;
                continue_checks(&manager, &global, &model);
                continue;
            }
        };
        match (model.refusal(bytes, order), result) {
            (None, Ok(item)) => {
                model.local += bytes;
                model.global += bytes;
                model.peak = model.peak.max(model.local);
                model.global_peak = model.global_peak.max(model.global);
                held.push(item);
            }
            (
                Some(scope),
                Err(BudgetError::ResourceExhausted {
                    which, requested, ..
                }),
            ) => {
                assert_eq!((which, requested), (scope, bytes), "step {step}: {op:?}");
            }
            (expected, got) => panic!(
                "step {step}: {op:?}: model says {expected:?}, manager says {:?}",
                got.err()
            ),
        }
        continue_checks(&manager, &global, &model);
    }
    held.iter().for_each(check_contents);
    drop(held);
    manager.reap_pending_deallocations().unwrap();
    assert_eq!(
        (manager.allocated_bytes(), global.charged()),
        (0, 0),
        "everything came back"
    );
}

fn continue_checks(
    manager: &GpuMemoryManager,
    global: &mem_budget::GlobalBudgetHandle,
    model: &Model,
) {
    assert_eq!(manager.allocated_bytes(), model.local);
    assert_eq!(global.charged(), model.global);
    assert_eq!(manager.peak_bytes(), model.peak);
    assert_eq!(
        global.peak(),
        model.global_peak,
        "a rolled-back claim is no peak"
    );
    assert_eq!(manager.remaining_bytes(), LOCAL - model.local);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_manager_agrees_with_the_model_on_every_step(ops in prop::collection::vec(op(), 1..60)) {
        run(ops, false);
    }

    #[test]
    fn deferred_frees_agree_with_the_model_on_every_step(ops in prop::collection::vec(op(), 1..60)) {
        run(ops, true);
    }
}
