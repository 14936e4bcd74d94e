//! The frontier as text: one line per grid point, the reference rows
//! under them, and what the sweep found.

use std::fmt;

use gpumem::storage::CostSplit;
use gpumem::storage::units::format_bytes;

use super::frontier::{Frontier, FrontierPoint};

/// `1/N`, or `never` for 0.
fn share(n: u64) -> String {
    match n {
        0 => "never".to_string(),
        n => format!("1/{n}"),
    }
}

fn count(value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_string(), |c| c.to_string())
}

fn ratio(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_string(), |v| format!("{v:.4}"))
}

/// Driver µs/op under each split, in `CostSplit::ALL`'s order.
fn splits(by: &std::collections::BTreeMap<&'static str, f64>) -> String {
    CostSplit::ALL
        .iter()
        .map(|s| {
            by.get(s.name())
                .map_or_else(|| format!("{:>9}", "-"), |ns| format!("{:>9.2}", ns / 1e3))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `m` (memory) then one letter per split (`a` a100, `c` per call, `b`
/// per byte) where the point is at or under every reference; `-` where not.
fn standing(p: &FrontierPoint) -> String {
    let mut out = String::from(if p.memory_at_most_references {
        "m"
    } else {
        "-"
    });
    for (split, letter) in CostSplit::ALL.iter().zip(['a', 'c', 'b']) {
        out.push(match p.driver_at_most_references.contains(&split.name()) {
            true => letter,
            false => '-',
        });
    }
    out
}

fn setting(p: &FrontierPoint) -> String {
    let size = |b: u64| format_bytes(b).replace(".00", "");
    format!("{} {}", share(p.idle_share), size(p.max_chunk))
}

impl fmt::Display for Frontier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let against: Vec<&str> = self.references.iter().map(|r| r.allocator).collect();
        writeln!(
            f,
            "\nfrontier: gpumem's arena knobs (arena_idle_share × arena_max_chunk, {} \
             points), each under the three splits, against {}",
            self.points.len(),
            against.join(" and ")
        )?;
        writeln!(
            f,
            "  {:<25} {:>13} {:>7} {:>8} {:>9} {:>9} {:>9}  {:<5} note",
            "setting",
            "reserved÷live",
            "calls",
            "2nd-half",
            "a100",
            "per-call",
            "per-byte",
            "≤ all"
        )?;
        for p in &self.points {
            let mut note = Vec::new();
            if p.default {
                note.push("default");
            }
            if p.pareto {
                note.push("frontier");
            }
            if p.failed_allocs > 0 {
                note.push("refused allocations");
            }
            let line = format!(
                "  {:<25} {:>13} {:>7} {:>8} {} {:<5}  {}",
                setting(p),
                ratio(p.fragmentation),
                count(p.driver_calls),
                count(p.second_half_calls),
                splits(&p.driver_ns_per_op_by_split),
                standing(p),
                note.join(", ")
            );
            writeln!(f, "{}", line.trim_end())?;
        }
        for r in &self.references {
            writeln!(
                f,
                "  {:<25} {:>13} {:>7} {:>8} {}",
                r.allocator,
                ratio(r.fragmentation),
                count(r.driver_calls),
                count(r.second_half_calls),
                splits(&r.driver_ns_per_op_by_split)
            )?;
        }
        writeln!(
            f,
            "  driver µs/op; ≤ all: m where reserved÷live is at or under every reference row, \
             then a (a100), c (a100-per-call), b (a100-per-byte) where driver time is; \
             frontier: no other point is as good on all four and better on one"
        )?;
        let winners: Vec<String> = self.dominating().map(setting).collect();
        let named = match winners.len() {
            n if n > 6 => format!("{} … ({n} in all)", winners[..6].join("; ")),
            _ => winners.join("; "),
        };
        match winners.is_empty() {
            true => writeln!(
                f,
                "  no setting holds no more memory than {} and pays no more driver time \
                 under all three splits on this trace",
                against.join(" and ")
            ),
            false => writeln!(
                f,
                "  settings at or under {} on memory and under all three splits: {}",
                against.join(" and "),
                named
            ),
        }
    }
}
