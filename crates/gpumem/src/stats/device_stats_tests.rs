//! Tests of the device's lock-free peaks; `rise` is shared with the loom
//! model (`device_stats_loom.rs`).

use super::*;

/// Stream `mine` of `all` moves its first level from `from` to `to`.
pub(crate) fn rise(peaks: &DevicePeaks, all: &[&Levels], mine: usize, from: u64, to: u64) {
    let (mut start, mut now) = ([0; LEVELS], [0; LEVELS]);
    start[0] = from;
    now[0] = to;
    let others = (all.iter().enumerate())
        .filter(move |&(j, _)| j != mine)
        .map(|(_, l)| *l);
    peaks.after_call(others, all[mine], &start, &now, &now);
}

#[cfg(not(loom))]
#[test]
fn the_device_peak_is_the_sum_held_at_once_not_the_sum_of_stream_peaks() {
    let (a, b) = (Levels::default(), Levels::default());
    let all = [&a, &b];
    let peaks = DevicePeaks::default();
    rise(&peaks, &all, 0, 0, 100);
    rise(&peaks, &all, 0, 100, 0);
    rise(&peaks, &all, 1, 0, 100);
    assert_eq!(peaks.read(&[0; LEVELS])[0], 100, "never held at once");
    rise(&peaks, &all, 0, 0, 40);
    assert_eq!(peaks.read(&[0; LEVELS])[0], 140);
    peaks.reset(&[140, 0, 0, 0, 0, 0, 0]);
    rise(&peaks, &all, 0, 40, 10);
    assert_eq!(peaks.read(&[110, 0, 0, 0, 0, 0, 0])[0], 140);
}

#[cfg(not(loom))]
#[test]
fn a_call_that_does_not_rise_publishes_its_level_and_raises_nothing() {
    let (a, b) = (Levels::default(), Levels::default());
    let all = [&a, &b];
    let peaks = DevicePeaks::default();
    rise(&peaks, &all, 1, 0, 50);
    // Stream 0 freed within its call and reserved back to below its start.
    let mut start = [0; LEVELS];
    start[0] = 30;
    let now = [20, 0, 0, 0, 0, 0, 0];
    peaks.after_call([&b].into_iter(), &a, &start, &now, &start);
    assert_eq!(a.now.0[0].load(Ordering::Relaxed), 20);
    assert_eq!(peaks.read(&[0; LEVELS])[0], 50);
    rise(&peaks, &all, 1, 50, 60);
    assert_eq!(
        peaks.read(&[0; LEVELS])[0],
        80,
        "stream 0's new level counts"
    );
}

#[cfg(not(loom))]
#[test]
fn a_rise_within_every_streams_high_reads_no_current_level_and_stays_exact() {
    let (a, b) = (Levels::default(), Levels::default());
    let all = [&a, &b];
    let peaks = DevicePeaks::default();
    // Both held at once: the device's peak is their sum, 80.
    rise(&peaks, &all, 0, 0, 30);
    rise(&peaks, &all, 1, 0, 50);
    rise(&peaks, &all, 0, 30, 0);
    rise(&peaks, &all, 1, 50, 0);
    assert_eq!(a.high.0[0].load(Ordering::Relaxed), 30);
    assert_eq!(b.high.0[0].load(Ordering::Relaxed), 50);
    // A level stored where the bound path would not look: rising again
    // to 30 is bounded by 30 + 50 ≤ 80 and must leave the peak alone.
    b.now.0[0].store(1_000, Ordering::Relaxed);
    rise(&peaks, &all, 0, 0, 30);
    assert_eq!(peaks.read(&[0; LEVELS])[0], 80, "bounded, not read");
    b.now.0[0].store(0, Ordering::Relaxed);
    // Above its own high the bound no longer holds: the levels are read.
    rise(&peaks, &all, 0, 30, 0);
    rise(&peaks, &all, 1, 0, 60);
    rise(&peaks, &all, 0, 0, 30);
    assert_eq!(peaks.read(&[0; LEVELS])[0], 90);
}

#[cfg(not(loom))]
#[test]
fn a_device_reset_lowers_each_streams_high_to_its_level() {
    let (a, b) = (Levels::default(), Levels::default());
    let all = [&a, &b];
    let peaks = DevicePeaks::default();
    rise(&peaks, &all, 0, 0, 70);
    rise(&peaks, &all, 0, 70, 10);
    a.reset_high();
    assert_eq!(a.high.0[0].load(Ordering::Relaxed), 10);
    peaks.reset(&[10, 0, 0, 0, 0, 0, 0]);
    rise(&peaks, &all, 1, 0, 5);
    assert_eq!(peaks.read(&[0; LEVELS])[0], 15);
}
