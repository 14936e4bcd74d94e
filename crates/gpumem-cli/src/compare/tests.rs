//! `gpumem compare` in process: rows, shared peak live, per-peer counts,
//! failures and their opt-out.

use clap::Parser;

use super::*;
use crate::cli::Cli;
use gpumem_replay::compare::*;
use gpumem_replay::workload::{Workload, WorkloadSpec};

use gpumem::storage::units::GIB;

fn program(workload: Workload, scale: f64) -> Program {
    let spec = WorkloadSpec { seed: 7, scale };
    Program::compile(&workload.generate(&spec).unwrap()).unwrap()
}

fn setup(capacity: u64) -> Setup {
    Setup {
        backend: CompareBackend::Sim,
        capacity,
        config: gpumem::config::GpumemConfig::default(),
        threads: false,
        splits: false,
        pytorch: pytorch::Policy::default(),
    }
}

/// Runs the command in process: (result, stdout, stderr).
fn command(args: &[&str]) -> (Result<()>, String, String) {
    let cli = Cli::try_parse_from([&["gpumem", "compare"], args].concat()).unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let result = crate::cli::run(cli, &mut out, &mut err);
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (result, text(out), text(err))
}

#[test]
fn the_table_has_one_row_per_allocator_with_the_same_peak_live() {
    let program = program(Workload::Serving, 0.03);
    let comparison = compare("serving", &program, &ALL, &setup(80 * GIB)).unwrap();
    let names: Vec<_> = comparison.rows.iter().map(|r| r.allocator).collect();
    assert_eq!(names, ALL.map(Allocator::name));
    let peak = comparison.rows[0].peak_live_bytes;
    assert!(peak > 0);
    for row in &comparison.rows {
        assert_eq!(row.peak_live_bytes, peak, "{}", row.allocator);
        assert_eq!(row.failed_allocs, 0, "{row:?}");
        assert!(row.peak_reserved_bytes >= peak, "{row:?}");
        assert!(row.wall_ns > 0, "{row:?}");
    }
}

#[test]
fn each_peer_counts_its_own_storage_calls_and_reserved_bytes() {
    let program = program(Workload::Random, 0.02);
    let comparison = compare("random", &program, &ALL, &setup(80 * GIB)).unwrap();
    let row = |a: Allocator| {
        comparison
            .rows
            .iter()
            .find(|r| r.allocator == a.name())
            .unwrap()
    };
    let system = row(Allocator::System);
    assert_eq!(system.peak_reserved_bytes, system.peak_live_bytes);
    assert!(system.storage_calls >= system.allocs, "{system:?}");
    let offset = row(Allocator::OffsetAllocator);
    assert_eq!(offset.storage_calls, 1);
    assert_eq!(offset.final_reserved_bytes, offset.peak_reserved_bytes);
    let gpumem = row(Allocator::Gpumem);
    assert!(gpumem.reserved_means.contains("chunks"), "{gpumem:?}");
    assert!(gpumem.storage_calls > 1, "arenas map chunks: {gpumem:?}");
    let paged = row(Allocator::SubSlices);
    assert!(paged.reserved_means.contains("pages"), "{paged:?}");
    assert!(paged.storage_calls >= 1, "{paged:?}");
}

#[test]
fn paged_rows_take_a_trace_whose_buffers_exceed_the_default_page() {
    let program = program(Workload::Training, 0.05);
    let chosen = [
        Allocator::SubSlices,
        Allocator::Exclusive,
        Allocator::Sliced,
    ];
    let comparison = compare("training", &program, &chosen, &setup(80 * GIB)).unwrap();
    let page = comparison
        .paged_max_page_bytes
        .expect("training has 1.5 GiB buffers");
    assert!(page > GIB, "{page}");
    assert!(comparison.failing().next().is_none(), "{comparison:#?}");
    assert!(comparison.to_string().contains("max_page"));
}

#[test]
fn the_text_names_every_row_and_what_reserved_means_for_it() {
    let (result, out, _) = command(&["--workload", "devlog", "--scale", "0.1"]);
    result.unwrap();
    for allocator in ALL {
        let row = out
            .lines()
            .find(|l| l.trim_start().starts_with(allocator.name()))
            .unwrap_or_else(|| panic!("no row for {}: {out}", allocator.name()));
        assert!(row.contains("128.00 MiB"), "{row}");
    }
    assert!(out.contains("reserved is"), "{out}");
    assert!(out.contains("high-water extent"), "{out}");
}

#[test]
fn json_parses_and_against_chooses_the_rows_in_its_order() {
    let (result, out, _) = command(&[
        "--workload",
        "devlog",
        "--scale",
        "0.1",
        "--json",
        "--against",
        "system,gpumem",
    ]);
    result.unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let names: Vec<_> = rows
        .iter()
        .map(|r| r["allocator"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["system", "gpumem"]);
    assert_eq!(rows[0]["peak_live_bytes"], rows[1]["peak_live_bytes"]);
    assert_eq!(v["backend"], "sim");
    assert!(rows[1]["fragmentation"].as_f64().unwrap() >= 1.0);
}

#[test]
fn an_unknown_allocator_is_refused_before_anything_replays() {
    let (result, out, _) = command(&["--workload", "devlog", "--against", "gpumem,tcmalloc"]);
    let err = result.unwrap_err();
    assert!(matches!(err, CliError::UnknownAllocator { .. }), "{err:?}");
    assert!(err.to_string().contains("offset-allocator"), "{err}");
    assert!(out.is_empty(), "{out}");
}

#[test]
fn failed_allocations_print_the_table_then_fail_unless_allowed() {
    // devlog peaks at 128 MiB live: 0.1 GiB cannot hold it on any row.
    let args = ["--workload", "devlog", "--device-gib", "0.1"];
    let (result, out, _) = command(&args);
    let err = result.unwrap_err();
    assert!(matches!(err, CliError::CompareFailures { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("system (") && text.contains("--allow-failures"),
        "{text}"
    );
    assert!(
        out.contains("allocation(s) failed"),
        "the table comes first: {out}"
    );

    let (result, out, _) = command(&[&args[..], &["--allow-failures"]].concat());
    result.unwrap();
    assert!(out.contains("system"), "{out}");
}

/// Two streams, each allocating 1–7 MiB and freeing what it allocated
/// three steps before, with a persistent window and a cleanup between.
fn two_streams() -> Program {
    use gpumem_replay::trace::{Event, Mode};
    let mut events = vec![Event::Mode(Mode::Persistent)];
    events.push(Event::Alloc {
        id: 10_000,
        size: 64 << 20,
        stream: 0,
    });
    events.push(Event::Mode(Mode::Auto));
    for id in 0..600u64 {
        let size = (1 + id % 7) << 20;
        events.push(Event::Alloc {
            id,
            size,
            stream: id % 2,
        });
        if id >= 6 {
            events.push(Event::Free { id: id - 6 });
        }
        if id == 300 {
            events.push(Event::Cleanup);
        }
    }
    Program::compile(&events).unwrap()
}

#[test]
fn lanes_keep_each_free_with_its_allocation_and_give_every_lane_the_mode_switches() {
    let program = two_streams();
    let lanes = lanes(&program);
    assert_eq!(lanes.len(), 2);
    for (index, lane) in lanes.iter().enumerate() {
        let mut allocated = vec![false; lane.slots];
        for op in &lane.ops {
            match *op {
                gpumem_replay::replay::Op::Alloc { slot, stream, .. } => {
                    assert_eq!(stream as usize, index);
                    allocated[slot as usize] = true;
                }
                gpumem_replay::replay::Op::Free { slot } => assert!(allocated[slot as usize]),
                _ => {}
            }
        }
        let switches = lane
            .ops
            .iter()
            .filter(|op| matches!(op, gpumem_replay::replay::Op::Mode(_)));
        assert_eq!(switches.count(), 2, "lane {index}");
    }
    assert_eq!(lanes[0].slots + lanes[1].slots, program.slots);
}

#[test]
fn threads_replay_every_stream_at_once_and_count_every_allocation() {
    let program = two_streams();
    let chosen = [Allocator::Gpumem, Allocator::SubSlices, Allocator::System];
    let threaded = Setup {
        threads: true,
        ..setup(80 * GIB)
    };
    let comparison = compare("two", &program, &chosen, &threaded).unwrap();
    assert_eq!(comparison.threaded_streams, Some(2));
    let in_order = compare("two", &program, &chosen, &setup(80 * GIB)).unwrap();
    assert_eq!(in_order.threaded_streams, None);
    let trace_peak = in_order.rows[0].peak_live_bytes;
    let largest = 64 << 20;
    for row in &comparison.rows {
        assert_eq!(row.failed_allocs, 0, "{row:?}");
        assert_eq!(row.allocs, 601, "{row:?}");
        // Interleaved, the peak lies between the persistent buffer plus
        // one allocation and everything the trace ever allocated.
        assert!(row.peak_live_bytes > largest, "{row:?}");
        assert!(row.peak_live_bytes < largest + 600 * (7 << 20), "{row:?}");
        assert!(row.peak_reserved_bytes >= row.peak_live_bytes, "{row:?}");
    }
    let threads: Vec<_> = comparison.rows.iter().map(|r| r.threads).collect();
    assert_eq!(
        threads,
        [2, 2, 1],
        "gpumem's rows ran threaded, system in order"
    );
    let system = comparison.rows.last().unwrap();
    assert_eq!(
        system.peak_live_bytes, trace_peak,
        "system replays in order"
    );
    assert!(comparison.to_string().contains("one thread per stream"));
}

#[test]
fn pytorch_conf_changes_the_modeled_rows_and_a_bad_one_is_refused_before_anything_replays() {
    let program = program(Workload::Training, 0.05);
    let chosen = [Allocator::Pytorch, Allocator::PytorchExpandable];
    let plain = compare("training", &program, &chosen, &setup(80 * GIB)).unwrap();
    let rounded = Setup {
        pytorch: pytorch::parse_pytorch_conf("roundup_power2_divisions:4").unwrap(),
        ..setup(80 * GIB)
    };
    let rounded = compare("training", &program, &chosen, &rounded).unwrap();
    for (a, b) in plain.rows.iter().zip(&rounded.rows) {
        assert_eq!(a.peak_live_bytes, b.peak_live_bytes);
        assert!(
            b.peak_reserved_bytes > a.peak_reserved_bytes,
            "{}: power-of-two steps waste more than 512 B rounding",
            a.allocator
        );
    }
    let (result, out, _) = command(&[
        "--workload",
        "devlog",
        "--pytorch-conf",
        "max_split_size_mb:8",
    ]);
    let err = result.unwrap_err().to_string();
    assert!(err.contains("more than 20"), "{err}");
    assert!(out.is_empty(), "{out}");
}
