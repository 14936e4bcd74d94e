//! Plain Markdown tables, so what `cargo xtask bench` prints can be pasted
//! into `docs/benchmarks.md` as is.

use std::fmt::Write;

use mem_storage::units::{format_bytes_approx, format_bytes_exact};

/// A table of right-aligned numbers beside left-aligned label columns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    labels: usize,
}

impl Table {
    /// A table with these column headers (the first column is the label).
    pub fn new(headers: &[&str]) -> Self {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            labels: 1,
        }
    }

    /// Left-aligns the first `count` columns (labels) instead of only the first.
    pub fn labels(mut self, count: usize) -> Self {
        self.labels = count.max(1);
        self
    }

    /// Appends a row; missing cells print empty, extra cells are dropped.
    pub fn row(&mut self, cells: Vec<String>) {
        let mut cells = cells;
        cells.resize(self.headers.len(), String::new());
        self.rows.push(cells);
    }

    /// The table as GitHub Markdown, columns padded to line up in a terminal.
    pub fn render(&self) -> String {
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| r[c].chars().count())
                    .chain([self.headers[c].chars().count(), 3])
                    .max()
                    .unwrap_or(3)
            })
            .collect();
        let mut out = String::new();
        let line = |out: &mut String, cells: &[String]| {
            out.push('|');
            for (c, cell) in cells.iter().enumerate() {
                let pad = widths[c] - cell.chars().count();
                if c < self.labels {
                    let _ = write!(out, " {cell}{} |", " ".repeat(pad));
                } else {
                    let _ = write!(out, " {}{cell} |", " ".repeat(pad));
                }
            }
            out.push('\n');
        };
        line(&mut out, &self.headers);
        out.push('|');
        for (c, w) in widths.iter().enumerate() {
            let dashes = "-".repeat(w.saturating_sub(1));
            if c < self.labels {
                let _ = write!(out, " {dashes}- |");
            } else {
                let _ = write!(out, " {dashes}: |");
            }
        }
        out.push('\n');
        for row in &self.rows {
            line(&mut out, row);
        }
        out
    }
}

/// Nanoseconds with one decimal below 100, none above.
pub fn ns(value: f64) -> String {
    if value < 100.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.0}")
    }
}

/// A ratio with two decimals and a `×`, or `–` when undefined.
pub fn ratio(value: Option<f64>) -> String {
    match value {
        Some(v) if v.is_finite() => format!("{v:.2}×"),
        _ => "–".into(),
    }
}

/// `a ÷ b`, when both exist and `b` is positive.
pub fn divide(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// `1_000_000` as `1M`, `100_000` as `100k`.
pub fn count(n: usize) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

/// Bytes exactly, in the largest unit up to GiB that divides them:
/// `2 GiB`, `96 KiB`, `1000 B` (`mem_storage::units::format_bytes_exact`).
pub fn human(bytes: u64) -> String {
    format_bytes_exact(bytes, crate::GIB)
}

/// Bytes to three significant digits: `1.50 GiB`, `712 MiB`, `96.0 KiB`
/// (`mem_storage::units::format_bytes_approx`).
pub fn human_approx(bytes: u64) -> String {
    format_bytes_approx(bytes, crate::GIB)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rendered_table_has_a_header_a_rule_and_one_line_per_row() {
        let mut t = Table::new(&["bench", "ns"]);
        t.row(vec!["pair".into(), "12.5".into()]);
        t.row(vec!["churn".into()]);
        let text = t.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0], "| bench |   ns |");
        assert_eq!(lines[1], "| ----- | ---: |");
        assert_eq!(lines[2], "| pair  | 12.5 |");
        assert_eq!(lines[3], "| churn |      |");
    }

    #[test]
    fn ratios_of_missing_or_zero_values_print_a_dash() {
        assert_eq!(ratio(divide(Some(3.0), Some(2.0))), "1.50×");
        assert_eq!(ratio(divide(Some(3.0), Some(0.0))), "–");
        assert_eq!(ratio(divide(None, Some(1.0))), "–");
        assert_eq!(ns(12.345), "12.3");
        assert_eq!(ns(1234.4), "1234");
    }

    #[test]
    fn counts_and_sizes_print_the_way_the_tables_name_them() {
        assert_eq!(count(1_000_000), "1M");
        assert_eq!(count(100_000), "100k");
        assert_eq!(count(1_500), "1500");
        assert_eq!(human(512), "512 B");
        assert_eq!(human(64 * crate::KIB), "64 KiB");
        assert_eq!(human(256 * crate::MIB), "256 MiB");
        assert_eq!(human_approx(3 * crate::GIB / 2), "1.50 GiB");
        assert_eq!(human_approx(712 * crate::MIB), "712 MiB");
        assert_eq!(human_approx(100), "100 B");
    }
}
