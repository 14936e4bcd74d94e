use super::*;

const REPORT: &str = "scenario drop\npoint start 24 1048576 1048576\n\
                      point tensor-live 4000000 8388608 2097152\n";

#[test]
fn points_are_read_in_order_with_their_labels() {
    let outcome = parse_points(REPORT).unwrap();
    let labels: Vec<&str> = outcome.points.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["start", "tensor-live"]);
    assert_eq!(
        outcome.points[1].1,
        Usage {
            in_use: 4_000_000,
            reserved: 8 << 20,
            rss: 2 << 20
        }
    );
}

#[test]
fn a_report_without_points_or_with_a_bad_number_is_an_error() {
    assert!(parse_points("scenario drop\n").is_err());
    assert!(parse_points("point start 0 x 0\n").is_err());
}

#[test]
fn the_totals_need_the_bytes_held_at_exit() {
    let mut outcome = Outcome::default();
    let totals = "peak_bytes 10\nbuffers_created 2\nbuffers_destroyed 1\n";
    assert!(parse_totals(totals, &mut outcome).is_err());
    parse_totals(&format!("{totals}held_at_exit 4\n"), &mut outcome).unwrap();
    assert_eq!(
        (
            outcome.peak_bytes,
            outcome.created,
            outcome.destroyed,
            outcome.held_at_exit
        ),
        (10, 2, 1, 4)
    );
}

#[test]
fn each_point_shows_both_engines_side_by_side_with_reserved_over_in_use() {
    let cubecl = parse_points(REPORT).unwrap();
    let mut gpumem = cubecl.clone();
    gpumem.points[1].1.reserved = 4 << 20;
    let rows = [
        ("drop", Engine::Cubecl, cubecl),
        ("drop", Engine::Gpumem, gpumem),
    ];
    let text = render(&rows);
    let line = text
        .lines()
        .find(|l| l.starts_with("| drop | tensor-live |"))
        .unwrap();
    assert!(line.contains("8.0 MiB (2.10 ×)"), "{line}");
    assert!(line.contains("4.0 MiB (1.05 ×)"), "{line}");
    let start = text
        .lines()
        .find(|l| l.starts_with("| drop | start |"))
        .unwrap();
    assert!(
        !start.contains('×'),
        "next to nothing in use, no ratio: {start}"
    );
    assert_eq!(text.matches("| drop | gpumem |").count(), 1, "{text}");
}
