//! The `processor` harness holds no more than the caps it sets: every
//! regression of the target (among them a 511-byte input that once grew to
//! 11 GB resident through the recording backend's log) runs in this test's
//! own process, whose peak resident memory must stay under the harness's
//! [`RESIDENT_CAP`] plus the test process itself.

use std::path::Path;

use pm4core::fuzzing::processor::{processor, RESIDENT_CAP};

/// What the test binary and the harness's fixed regions need besides the
/// capped pages and log (measured: about 14 MiB).
const BASELINE: u64 = 64 << 20;

/// The process's peak resident set (`VmHWM`), in bytes.
#[cfg(target_os = "linux")]
fn peak_resident() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

#[cfg(target_os = "linux")]
#[test]
fn the_processor_regressions_stay_under_the_harness_caps() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions/processor");
    let mut ran = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            continue;
        }
        let data = std::fs::read(&path).unwrap();
        processor(&data).unwrap_or_else(|v| panic!("{}: {v}", path.display()));
        ran.push(path.file_name().unwrap().to_string_lossy().into_owned());
    }
    assert!(ran.iter().any(|n| n == "multi-draw-log-11GB-from-511-bytes"), "{ran:?}");
    let peak = peak_resident();
    // This input writes almost no page: its peak is the log's bound, far
    // under the cap; the cap is what the harness promises for any input.
    assert!(peak < RESIDENT_CAP + BASELINE, "peak resident {peak} bytes, over {RESIDENT_CAP} + {BASELINE}");
    assert!(peak < 256 << 20, "peak resident {peak} bytes for inputs that write almost nothing");
}
