use super::*;

#[test]
fn an_unmap_over_an_incomplete_use_is_a_finding_and_one_after_completion_is_not() {
    let log = UseLog::new();
    let c = log.submit(0);
    log.record(0, c, 0x1000, 0x2000);
    // Another stream's work, elsewhere: not this span's business.
    let d = log.submit(1);
    log.record(1, d, 0x8000, 0x9000);
    log.check_unmap(0x2000, 0x3000); // touching, not overlapping
    assert!(log.take_findings().is_empty());
    log.check_unmap(0x1800, 0x2800);
    let found = log.take_findings();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].open.cursor, c);
    assert_eq!(found[0].completed, 0);
    // Stream 1 completing does not complete stream 0's use.
    log.synchronize(1);
    log.check_unmap(0x1000, 0x2000);
    assert_eq!(log.take_findings().len(), 1);
    log.complete(0, 1);
    log.check_unmap(0x1000, 0x2000);
    assert!(log.take_findings().is_empty());
    assert_eq!(log.unmaps(), (4, 3));
    assert_eq!(log.open_uses(), 0);
}

#[test]
fn completion_never_passes_what_was_submitted() {
    let log = UseLog::new();
    log.submit(0);
    log.complete(0, 40);
    assert_eq!(
        log.cursors(0),
        Cursors {
            submitted: 1,
            completed: 1
        }
    );
    // A use recorded at a completed cursor is not open.
    log.record(0, 1, 0, 64);
    assert_eq!(log.open_uses(), 0);
}
