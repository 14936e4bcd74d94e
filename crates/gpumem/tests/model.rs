//! Model-based property test of the cross-stream rules on host memory with
//! real bytes: random programs of reserve / write / drop / record_use /
//! submit / complete / relocate / reclaim / cleanup over three streams.
//!
//! After every step:
//! - every live allocation reads back exactly what was written (no memory
//!   was handed to two owners, relocation preserved contents);
//! - every dropped allocation still protected — some stream that recorded a
//!   use had not completed, when the drop happened, the work it had
//!   submitted then — still resolves and still holds its bytes (not reused);
//! - the device budget is charged exactly the pages the pools hold, and the
//!   device's statistics are the sum of the streams'.

mod common;

use common::{growable, pattern};
use gpumem::pools::{ManagedMemoryBinding, ManagedMemoryHandle};
use gpumem::prelude::*;
use proptest::prelude::*;

const STREAMS: usize = 3;

#[derive(Debug, Clone)]
enum Op {
    Reserve { stream: usize, size: u64 },
    Drop { pick: usize },
    RecordUse { pick: usize, user: usize },
    Submit { stream: usize },
    Complete { stream: usize },
    Relocate,
    Reclaim,
    Cleanup { stream: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..STREAMS, 1u64..160 * 1024).prop_map(|(stream, size)| Op::Reserve { stream, size }),
        3 => any::<usize>().prop_map(|pick| Op::Drop { pick }),
        2 => (any::<usize>(), 0..STREAMS).prop_map(|(pick, user)| Op::RecordUse { pick, user }),
        2 => (0..STREAMS).prop_map(|stream| Op::Submit { stream }),
        2 => (0..STREAMS).prop_map(|stream| Op::Complete { stream }),
        1 => Just(Op::Relocate),
        1 => Just(Op::Reclaim),
        1 => (0..STREAMS).prop_map(|stream| Op::Cleanup { stream }),
    ]
}

struct Live {
    handle: ManagedMemoryHandle,
    stream: usize,
    seed: u64,
    users: Vec<usize>,
}

struct Protected {
    binding: ManagedMemoryBinding,
    stream: usize,
    seed: u64,
    len: usize,
    /// (user stream, its submitted counter when the handle dropped).
    until: Vec<(usize, u64)>,
}

fn bytes_of(s: &Stream, binding: ManagedMemoryBinding, len: usize) -> Option<Vec<u8>> {
    let mut out = vec![0; len];
    s.with_memory(|mm| mm.read(binding, &mut out)).ok()?;
    Some(out)
}

fn check(device: &Device, live: &[Live], protected: &[Protected]) -> Result<(), TestCaseError> {
    let streams = device.streams();
    for l in live {
        let len = l.handle.size().min(4096) as usize;
        let mut out = vec![0; len];
        streams[l.stream].read(&l.handle, &mut out).unwrap();
        prop_assert_eq!(out, pattern(l.seed, len), "a live allocation changed");
    }
    for p in protected {
        let pending = p
            .until
            .iter()
            .any(|&(user, until)| streams[user].completed() < until);
        if pending {
            let read = bytes_of(&streams[p.stream], p.binding, p.len);
            prop_assert_eq!(
                read,
                Some(pattern(p.seed, p.len)),
                "protected memory was reused"
            );
        }
    }
    let stats = device.stats();
    prop_assert_eq!(device.budget().charged(), stats.reserved_bytes.current);
    let sum: u64 = streams
        .iter()
        .map(|s| s.stats().requested_bytes.current)
        .sum();
    prop_assert_eq!(sum, stats.requested_bytes.current);
    Ok(())
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let device = Device::host()
        .pools(growable())
        .streams(STREAMS)
        .budget(Budget::Bytes(64 * MIB))
        .ignore_env()
        .build()
        .unwrap();
    let streams = device.streams();
    let (mut live, mut protected) = (Vec::<Live>::new(), Vec::<Protected>::new());
    for (seed, op) in ops.into_iter().enumerate() {
        let seed = seed as u64;
        match op {
            Op::Reserve { stream, size } => {
                let handle = streams[stream].reserve(size).unwrap();
                let len = size.min(4096) as usize;
                streams[stream].write(&handle, &pattern(seed, len)).unwrap();
                live.push(Live {
                    handle,
                    stream,
                    seed,
                    users: Vec::new(),
                });
            }
            Op::Drop { pick } if !live.is_empty() => {
                let l = live.swap_remove(pick % live.len());
                let until = l.users.iter().map(|&u| (u, streams[u].cursor())).collect();
                protected.push(Protected {
                    binding: l.handle.binding(),
                    stream: l.stream,
                    seed: l.seed,
                    len: l.handle.size().min(4096) as usize,
                    until,
                });
            }
            Op::RecordUse { pick, user } if !live.is_empty() => {
                let i = pick % live.len();
                streams[user].record_use(&live[i].handle).unwrap();
                if user != live[i].stream {
                    live[i].users.push(user);
                }
            }
            Op::Submit { stream } => {
                streams[stream].submit();
            }
            Op::Complete { stream } => {
                let s = &streams[stream];
                s.complete_through(s.cursor()).unwrap();
            }
            Op::Relocate => {
                device.relocate(RelocationReason::Explicit).unwrap();
            }
            Op::Reclaim => {
                device.reclaim().unwrap();
            }
            Op::Cleanup { stream } => streams[stream].cleanup(),
            Op::Drop { .. } | Op::RecordUse { .. } => {}
        }
        check(&device, &live, &protected)?;
    }
    drop(live);
    device.synchronize().unwrap();
    device.reclaim().unwrap();
    prop_assert_eq!(
        device.stats().reserved_bytes.current,
        0,
        "everything went back"
    );
    prop_assert_eq!(device.budget().charged(), 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn memory_used_across_streams_is_never_reused_early_and_live_bytes_survive(
        ops in proptest::collection::vec(op(), 1..60)
    ) {
        run(ops)?;
    }
}
