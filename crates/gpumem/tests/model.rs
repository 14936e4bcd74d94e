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
//! - no new reservation overlaps memory that work of another stream may
//!   still use: memory a `bind` took from a handle, or a relocation or
//!   compaction moved an allocation off, while a stream that recorded a use
//!   of it had not completed what it had submitted then (the overlap
//!   oracle: it watches addresses, not handles, so a hold that follows a
//!   handle's name instead of its memory is caught);
//! - the device budget is charged exactly the pages the pools hold, and the
//!   device's statistics are the sum of the streams'.

mod common;

use common::{growable, pattern};
use gpumem::pools::{ManagedMemoryBinding, ManagedMemoryHandle};
use gpumem::prelude::*;
use gpumem::storage::StorageHandle;
use proptest::prelude::*;

const STREAMS: usize = 3;

#[derive(Debug, Clone)]
enum Op {
    Reserve {
        stream: usize,
        size: u64,
    },
    Drop {
        pick: usize,
    },
    RecordUse {
        pick: usize,
        user: usize,
    },
    /// A fresh reservation of `size` bound into live allocation `pick`.
    BindFresh {
        pick: usize,
        size: u64,
    },
    /// Live allocation `from` bound into live allocation `pick` (both of
    /// `pick`'s stream; `from` retires).
    BindLive {
        pick: usize,
        from: usize,
    },
    Submit {
        stream: usize,
    },
    Complete {
        stream: usize,
    },
    Relocate,
    Reclaim,
    Cleanup {
        stream: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..STREAMS, 1u64..160 * 1024).prop_map(|(stream, size)| Op::Reserve { stream, size }),
        3 => any::<usize>().prop_map(|pick| Op::Drop { pick }),
        2 => (any::<usize>(), 0..STREAMS).prop_map(|(pick, user)| Op::RecordUse { pick, user }),
        1 => (any::<usize>(), 1u64..64 * 1024).prop_map(|(pick, size)| Op::BindFresh { pick, size }),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(pick, from)| Op::BindLive { pick, from }),
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
    /// Where its memory was at the last look.
    view: StorageHandle,
}

/// Memory an allocation left (bind, move) while recorded work may use it.
struct Left {
    /// The stream whose storage the memory is (page ids are per stream).
    stream: usize,
    view: StorageHandle,
    /// (user stream, its submitted counter when the memory was left).
    until: Vec<(usize, u64)>,
}

fn pending(streams: &[Stream], until: &[(usize, u64)]) -> bool {
    until.iter().any(|&(u, k)| streams[u].completed() < k)
}

fn overlaps(a: &StorageHandle, b: &StorageHandle) -> bool {
    a.id == b.id
        && a.offset() < b.offset() + b.utilization.size
        && b.offset() < a.offset() + a.utilization.size
}

/// The overlap oracle: `view`, just handed to a new owner, lies on no
/// memory left behind under unfinished recorded work.
fn check_fresh(
    streams: &[Stream],
    left: &[Left],
    stream: usize,
    view: &StorageHandle,
) -> Result<(), TestCaseError> {
    for l in left {
        prop_assert!(
            !(l.stream == stream && overlaps(view, &l.view) && pending(streams, &l.until)),
            "a new reservation {:?} landed on {:?}, still used by {:?}",
            view,
            l.view,
            l.until
        );
    }
    Ok(())
}

/// Note every live or held allocation whose memory moved; memory it left
/// under recorded work that had not completed joins `left`.
fn observe_moves(
    streams: &[Stream],
    live: &mut [Live],
    protected: &mut [Protected],
    left: &mut Vec<Left>,
) {
    for p in protected.iter_mut() {
        let s = &streams[p.stream];
        let Ok(now) = s.with_memory(|mm| mm.get_storage(p.binding)) else {
            continue; // freed: `check` says whether that was too early
        };
        if now != p.view {
            let old = std::mem::replace(&mut p.view, now);
            if pending(streams, &p.until) {
                left.push(Left {
                    stream: p.stream,
                    view: old,
                    until: p.until.clone(),
                });
            }
        }
    }
    for l in live.iter_mut() {
        let now = streams[l.stream].view(&l.handle).unwrap();
        if now != l.view {
            let old = std::mem::replace(&mut l.view, now);
            leave(streams, left, l.stream, old, &l.users);
        }
    }
    left.retain(|l| pending(streams, &l.until));
}

fn leave(
    streams: &[Stream],
    left: &mut Vec<Left>,
    stream: usize,
    view: StorageHandle,
    users: &[usize],
) {
    let until: Vec<_> = users.iter().map(|&u| (u, streams[u].cursor())).collect();
    if pending(streams, &until) {
        left.push(Left {
            stream,
            view,
            until,
        });
    }
}

struct Protected {
    binding: ManagedMemoryBinding,
    stream: usize,
    seed: u64,
    len: usize,
    /// (user stream, its submitted counter when the handle dropped).
    until: Vec<(usize, u64)>,
    view: StorageHandle,
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
    let mut left = Vec::<Left>::new();
    for (seed, op) in ops.into_iter().enumerate() {
        let seed = seed as u64;
        match op {
            Op::Reserve { stream, size } => {
                let handle = streams[stream].reserve(size).unwrap();
                let view = streams[stream].view(&handle).unwrap();
                check_fresh(&streams, &left, stream, &view)?;
                let len = size.min(4096) as usize;
                streams[stream].write(&handle, &pattern(seed, len)).unwrap();
                live.push(Live {
                    handle,
                    stream,
                    seed,
                    users: Vec::new(),
                    view,
                });
            }
            Op::BindFresh { pick, size } if !live.is_empty() => {
                let i = pick % live.len();
                let stream = live[i].stream;
                let s = &streams[stream];
                let fresh = s.reserve(size).unwrap();
                let view = s.view(&fresh).unwrap();
                check_fresh(&streams, &left, stream, &view)?;
                s.write(&fresh, &pattern(seed, size.min(4096) as usize))
                    .unwrap();
                s.bind(fresh, live[i].handle.clone()).unwrap();
                let l = &mut live[i];
                let old = std::mem::replace(&mut l.view, view);
                leave(&streams, &mut left, l.stream, old, &l.users);
                l.users.clear();
                l.seed = seed;
            }
            Op::BindLive { pick, from } if !live.is_empty() => {
                let i = pick % live.len();
                let stream = live[i].stream;
                let candidates: Vec<usize> = (0..live.len())
                    .filter(|&j| j != i && live[j].stream == stream)
                    .collect();
                if candidates.is_empty() {
                    continue;
                }
                let j = candidates[from % candidates.len()];
                let r = live.swap_remove(j);
                let i = if i == live.len() { j } else { i };
                streams[stream]
                    .bind(r.handle, live[i].handle.clone())
                    .unwrap();
                let l = &mut live[i];
                let old = std::mem::replace(&mut l.view, r.view);
                leave(&streams, &mut left, l.stream, old, &l.users);
                l.users = r.users;
                l.seed = r.seed;
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
                    view: l.view,
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
            Op::Drop { .. } | Op::RecordUse { .. } | Op::BindFresh { .. } | Op::BindLive { .. } => {
            }
        }
        observe_moves(&streams, &mut live, &mut protected, &mut left);
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
