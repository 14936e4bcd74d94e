//! loom model of the device peak: two streams rising at once never both
//! miss each other. Run with `cargo xtask loom`.

use loom::sync::Arc;
use loom::thread;

use super::device_stats::tests::rise;
use super::device_stats::{DevicePeaks, LEVELS, Levels};

#[test]
fn loom_two_streams_rising_at_once_leave_the_device_peak_at_their_sum() {
    loom::model(|| {
        let shared = Arc::new((Levels::default(), Levels::default(), DevicePeaks::default()));
        let other = {
            let shared = Arc::clone(&shared);
            thread::spawn(move || {
                let (a, b, peaks) = &*shared;
                rise(peaks, &[a, b], 1, 0, 5);
            })
        };
        let (a, b, peaks) = &*shared;
        rise(peaks, &[a, b], 0, 0, 3);
        other.join().unwrap();
        assert_eq!(peaks.read(&[0; LEVELS])[0], 8, "both were held at once");
    });
}

#[test]
fn loom_a_stream_passing_its_high_while_another_rises_within_bounds_is_still_counted() {
    loom::model(|| {
        let shared = Arc::new((Levels::default(), Levels::default(), DevicePeaks::default()));
        {
            // Before the race: both held at once (peak 8), then let go, so
            // stream 0's rise back to 3 is bounded by 3 + stream 1's high 5.
            let (a, b, peaks) = &*shared;
            rise(peaks, &[a, b], 0, 0, 3);
            rise(peaks, &[a, b], 1, 0, 5);
            rise(peaks, &[a, b], 0, 3, 0);
            rise(peaks, &[a, b], 1, 5, 0);
        }
        let other = {
            let shared = Arc::clone(&shared);
            thread::spawn(move || {
                let (a, b, peaks) = &*shared;
                rise(peaks, &[a, b], 1, 0, 9);
            })
        };
        let (a, b, peaks) = &*shared;
        rise(peaks, &[a, b], 0, 0, 3);
        other.join().unwrap();
        assert_eq!(peaks.read(&[0; LEVELS])[0], 12, "both were held at once");
    });
}
