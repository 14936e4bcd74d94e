use super::*;
use crate::burn_client::runs::RUNS;

fn row(run: usize, engine: Engine, peak_mib: u64, secs: f64) -> Row {
    Row {
        run: RUNS[run],
        engine,
        outcome: Outcome {
            losses: vec![0; RUNS[run].steps],
            params: "p".into(),
            timed_steps: 10,
            timed_seconds: secs,
            peak_bytes: peak_mib << 20,
            created: peak_mib,
            ..Outcome::default()
        },
    }
}

#[test]
fn each_run_gets_a_ratio_row_after_both_engines() {
    let rows = [
        row(0, Engine::Cubecl, 20, 2.0),
        row(0, Engine::Gpumem, 10, 4.0),
        row(1, Engine::Cubecl, 8, 1.0),
    ];
    let text = render(&rows);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2 + 3 + 1, "{text}");
    assert!(lines[3].contains("| gpumem |") && lines[3].contains("10.00 MiB"));
    assert!(lines[4].contains("gpumem ÷ cubecl") && lines[4].contains("| 0.500 |"));
    assert!(lines[4].contains("| 0.500 |") && lines[4].ends_with("| 0.500 |"));
    assert!(lines[5].contains("| cubecl |"));
}

#[test]
fn holding_more_is_reported_and_holding_less_is_not() {
    let rows = [
        row(0, Engine::Cubecl, 20, 1.0),
        row(0, Engine::Gpumem, 10, 1.0),
        row(1, Engine::Cubecl, 8, 1.0),
        row(1, Engine::Gpumem, 16, 1.0),
    ];
    let more = held_more(&rows);
    assert_eq!(more.len(), 1, "{more:?}");
    assert!(more[0].contains("lm-train") && more[0].contains("16.00 MiB vs 8.00 MiB"));
}
