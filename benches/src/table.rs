//! Plain Markdown tables, so what `cargo xtask bench` prints can be pasted
//! into `docs/benchmarks.md` as is.

use std::fmt::Write;

/// A table of right-aligned numbers under left-aligned labels.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers (the first column is the label).
    pub fn new(headers: &[&str]) -> Self {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
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
                if c == 0 {
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
            if c == 0 {
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
}
