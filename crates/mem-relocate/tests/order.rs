//! The provided methods of `RelocatingStreams` hold the order of steps:
//! checked against a runtime that only records which step ran.

use mem_relocate::{RelocatingStreams, RelocationError, RelocationNeed, RelocationReason};

#[derive(Default)]
struct Script {
    recording: bool,
    outdated: bool,
    device_outdated: bool,
    need: RelocationNeed,
    allocated: u64,
    calls: Vec<String>,
}

impl RelocatingStreams for Script {
    fn recording(&mut self) -> bool {
        self.calls.push("recording".into());
        self.recording
    }
    fn has_outdated(&mut self) -> bool {
        self.calls.push("has_outdated".into());
        self.outdated
    }
    fn relocation_need(&mut self) -> RelocationNeed {
        self.calls.push("need".into());
        self.need
    }
    fn bytes_allocated(&mut self) -> u64 {
        self.calls.push("bytes_allocated".into());
        self.allocated
    }
    fn finish(&mut self) {
        self.calls.push("finish".into());
    }
    fn relocate_memory(&mut self, reason: RelocationReason) {
        self.calls.push(format!("relocate_memory({reason})"));
    }
    fn device_has_outdated(&mut self) -> bool {
        self.calls.push("device_has_outdated".into());
        self.device_outdated
    }
    fn relocate_device_memory(&mut self, reason: RelocationReason) {
        self.calls.push(format!("relocate_device_memory({reason})"));
    }
    fn cleanup_memory(&mut self) {
        self.calls.push("cleanup".into());
    }
}

fn calls(s: &Script) -> Vec<&str> {
    s.calls.iter().map(String::as_str).collect()
}

#[test]
fn reclaim_is_refused_while_recording_and_runs_no_other_step() {
    let mut s = Script {
        recording: true,
        outdated: true,
        ..Script::default()
    };
    let err = s.reclaim().unwrap_err();
    assert!(matches!(err, RelocationError::Recording { recording: 1 }));
    assert!(err.to_string().contains("record a graph"), "{err}");
    assert_eq!(calls(&s), ["recording"]);
}

#[test]
fn reclaim_finishes_then_relocates_explicitly_then_cleans_up() {
    let mut s = Script {
        outdated: true,
        ..Script::default()
    };
    s.reclaim().unwrap();
    assert_eq!(
        calls(&s),
        [
            "recording",
            "recording",
            "has_outdated",
            "finish",
            "relocate_memory(explicit)",
            "cleanup"
        ]
    );
}

#[test]
fn reclaim_with_nothing_outdated_only_cleans_up() {
    let mut s = Script::default();
    s.reclaim().unwrap();
    assert_eq!(
        calls(&s),
        ["recording", "recording", "has_outdated", "cleanup"]
    );
}

#[test]
fn relocate_when_wanted_asks_the_device_bytes_only_under_pressure_and_finishes_first() {
    let mut s = Script {
        need: RelocationNeed::UnderPressure {
            capacity: 100,
            page_size: 10,
        },
        allocated: 85,
        ..Script::default()
    };
    s.relocate_when_wanted();
    assert_eq!(
        calls(&s),
        [
            "need",
            "recording",
            "bytes_allocated",
            "finish",
            "relocate_memory(memory pressure)"
        ]
    );
    s.calls.clear();
    s.allocated = 70;
    s.relocate_when_wanted();
    assert_eq!(calls(&s), ["need", "recording", "bytes_allocated"]);
}

#[test]
fn relocate_when_wanted_does_nothing_when_nothing_is_wanted_or_a_graph_records() {
    let mut s = Script::default();
    s.relocate_when_wanted();
    assert_eq!(calls(&s), ["need"]);
    let mut s = Script {
        need: RelocationNeed::OutOfPageSizes,
        recording: true,
        ..Script::default()
    };
    s.relocate_when_wanted();
    assert_eq!(calls(&s), ["need", "recording"]);
    s.recording = false;
    s.calls.clear();
    s.relocate_when_wanted();
    assert_eq!(
        calls(&s),
        [
            "need",
            "recording",
            "finish",
            "relocate_memory(pools out of page sizes)"
        ]
    );
}

#[test]
fn relocate_skips_while_recording_or_with_nothing_outdated() {
    let mut s = Script {
        recording: true,
        outdated: true,
        ..Script::default()
    };
    s.relocate(RelocationReason::Capture);
    assert_eq!(calls(&s), ["recording"]);
    let mut s = Script::default();
    s.relocate(RelocationReason::Capture);
    assert_eq!(calls(&s), ["recording", "has_outdated"]);
}

#[test]
fn relocate_device_checks_every_stream_and_moves_every_streams_memory() {
    let mut s = Script {
        outdated: false,
        device_outdated: true,
        ..Script::default()
    };
    let dynamic: &mut dyn RelocatingStreams = &mut s;
    dynamic.relocate_device(RelocationReason::Capture);
    assert_eq!(
        calls(&s),
        [
            "recording",
            "device_has_outdated",
            "finish",
            "relocate_device_memory(capture)"
        ]
    );
    s.calls.clear();
    s.recording = true;
    s.relocate_device(RelocationReason::Capture);
    assert_eq!(calls(&s), ["recording"]);
}
