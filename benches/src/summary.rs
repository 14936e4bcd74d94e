//! The printed result of the quick suite: one table of ns/op with ratios
//! against the peers, the fragmentation table, and the goals of issue 8
//! read off them (met or not, with the numbers).

use std::fmt::Write;

use crate::fragmentation::{COMMAND_RELOCATE, FragRow, variant_name};
use crate::quick::QuickRow;
use crate::relocating::Policy;
use crate::table::{Table, divide, ns, ratio};

/// The speed table: one row per measurement, ratios against each peer.
pub fn speed_table(rows: &[QuickRow]) -> String {
    let mut table = Table::new(&[
        "measurement (median ns/op)",
        "gpumem",
        "offset-allocator",
        "system",
        "gpumem ÷ offset",
        "gpumem ÷ system",
    ]);
    for row in rows {
        table.row(vec![
            row.name.clone(),
            ns(row.gpumem),
            row.offset.map(ns).unwrap_or_default(),
            row.system.map(ns).unwrap_or_default(),
            ratio(divide(Some(row.gpumem), row.offset)),
            ratio(divide(Some(row.gpumem), row.system)),
        ]);
    }
    table.render()
}

/// The fragmentation table.
pub fn fragmentation_table(rows: &[FragRow]) -> String {
    let mut table = Table::new(&[
        "workload",
        "backend",
        "peak live",
        "peak reserved",
        "peak ratio",
        "final ratio",
        "storage allocs",
        "relocated",
    ])
    .labels(2);
    for row in rows {
        let r = &row.report;
        let moved = match &row.relocation {
            Some(t) if t.relocations > 0 => format!(
                "{} runs, {} moved, {} pages freed",
                t.relocations,
                crate::table::human_approx(t.summed.moved_bytes),
                t.summed.pages_freed
            ),
            Some(_) => "nothing".into(),
            None => "n/a".into(),
        };
        table.row(vec![
            row.workload.to_string(),
            row.backend.clone(),
            crate::table::human_approx(r.peak_live_bytes),
            crate::table::human_approx(r.peak_reserved_bytes),
            ratio(r.fragmentation.peak),
            ratio(r.fragmentation.end),
            r.storage_allocs.to_string(),
            moved,
        ]);
    }
    table.render()
}

/// A goal, its measured value and whether it is met.
#[derive(Debug, Clone, PartialEq)]
pub struct Goal {
    /// What the goal says.
    pub goal: String,
    /// What was measured.
    pub measured: String,
    /// Met or not (`None`: could not be measured in this run).
    pub met: Option<bool>,
}

fn find<'r>(rows: &'r [QuickRow], prefix: &str, suffix: &str) -> Option<&'r QuickRow> {
    rows.iter()
        .find(|r| r.name.starts_with(prefix) && r.name.ends_with(suffix))
}

/// The goals of issue 8, read off the rows.
pub fn goals(speed: &[QuickRow], frag: &[FragRow], shallow: &str, deep: &str) -> Vec<Goal> {
    let mut goals = Vec::new();
    for prefix in ["reserve+drop pair", "churn"] {
        let (a, b) = (find(speed, prefix, shallow), find(speed, prefix, deep));
        let scale = divide(b.map(|r| r.gpumem), a.map(|r| r.gpumem));
        goals.push(Goal {
            goal: format!("{prefix}: per-op cost at {deep} ≤ 1.5× at {shallow}"),
            measured: ratio(scale),
            met: scale.map(|s| s <= 1.5),
        });
        let vs = b.and_then(|r| divide(Some(r.gpumem), r.offset));
        goals.push(Goal {
            goal: format!("{prefix} at {deep}: within 2× of offset-allocator"),
            measured: ratio(vs),
            met: vs.map(|v| v <= 2.0),
        });
    }
    for (label, policy, limit) in [
        ("relocation off", variant_name(Policy::Off, true), 1.10),
        (
            "relocation trigger",
            variant_name(Policy::Trigger, true),
            1.03,
        ),
        (
            "relocation eager (with compaction)",
            variant_name(Policy::Eager, true),
            1.03,
        ),
        (
            "`gpumem replay --relocate`",
            COMMAND_RELOCATE.to_string(),
            1.03,
        ),
    ] {
        let worst = |pick: fn(&FragRow) -> Option<f64>| {
            frag.iter()
                .filter(|r| r.backend == policy)
                .filter_map(|r| Some((pick(r)?, r.workload)))
                .max_by(|a, b| a.0.total_cmp(&b.0))
        };
        for (which, pick) in [
            (
                "peak",
                (|r: &FragRow| r.report.fragmentation.peak) as fn(&FragRow) -> Option<f64>,
            ),
            ("final", |r: &FragRow| r.report.fragmentation.end),
        ] {
            let worst = worst(pick);
            goals.push(Goal {
                goal: format!("{which} reserved ÷ live, {label}: ≤ {limit:.2} on every workload"),
                measured: worst
                    .map(|(v, w)| format!("worst {v:.2}× ({w})"))
                    .unwrap_or_else(|| "–".into()),
                met: worst.map(|(v, _)| v <= limit),
            });
        }
    }
    goals
}

/// The goals as a table.
pub fn goals_table(goals: &[Goal]) -> String {
    let mut table = Table::new(&["goal", "measured", "met"]).labels(1);
    for g in goals {
        let met = match g.met {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "–",
        };
        table.row(vec![g.goal.clone(), g.measured.clone(), met.into()]);
    }
    table.render()
}

/// Everything, as printed by `bench-quick`.
pub fn render(speed: &[QuickRow], frag: &[FragRow], goals: &[Goal]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", speed_table(speed));
    let _ = writeln!(out, "{}", fragmentation_table(frag));
    let _ = write!(out, "{}", goals_table(goals));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fragmentation::workload_rows;
    use gpumem_replay::workload::{Workload, WorkloadSpec};

    fn row(name: &str, gpumem: f64, offset: f64) -> QuickRow {
        QuickRow {
            name: name.into(),
            gpumem,
            offset: Some(offset),
            system: None,
        }
    }

    #[test]
    fn depth_goals_compare_the_deepest_row_with_the_shallowest_and_the_peer() {
        let speed = [
            row("reserve+drop pair, 1k live", 100.0, 50.0),
            row("reserve+drop pair, 1M live", 140.0, 80.0),
            row("churn (drop one, reserve one), 1k live", 100.0, 50.0),
            row("churn (drop one, reserve one), 1M live", 200.0, 50.0),
        ];
        let goals = goals(&speed, &[], "1k live", "1M live");
        let met: Vec<Option<bool>> = goals.iter().map(|g| g.met).collect();
        // pair: 1.4× deeper (met), 1.75× the peer (met);
        // churn: 2× deeper (not met), 4× the peer (not met);
        // fragmentation: no rows, so not measured.
        assert_eq!(
            &met[..4],
            &[Some(true), Some(true), Some(false), Some(false)]
        );
        assert!(met[4..].iter().all(Option::is_none));
        assert_eq!(goals[0].measured, "1.40×");
    }

    #[test]
    fn fragmentation_goals_name_the_worst_workload() {
        let spec = WorkloadSpec {
            seed: 42,
            scale: 0.05,
        };
        let frag = workload_rows(Workload::Devlog, &spec).unwrap();
        let goals = goals(&[], &frag, "1k live", "1M live");
        let peak_off = goals
            .iter()
            .find(|g| g.goal.starts_with("peak reserved ÷ live, relocation off"))
            .unwrap();
        assert!(
            peak_off.measured.ends_with("(devlog)"),
            "{}",
            peak_off.measured
        );
        assert!(peak_off.met.is_some());
        let text = render(&[], &frag, &goals);
        assert!(text.contains("| devlog"));
    }
}
