//! Every real driver capture in traces/ replays to the end with no error,
//! no unknown packet and nothing left waiting; exact counts per trace.

use std::path::Path;

use pm4core::replay::{replay, ReplayOptions};
use pm4core::trace::Trace;

/// (trace, submissions, packets, draws, dispatches, fences, waits)
const EXPECTED: &[(&str, u64, u64, u64, u64, u64, u64)] = &[
    ("radv-barriers", 2, 479, 1, 2, 2, 0),
    ("radv-chain_grow", 2, 12970, 3001, 0, 2, 0),
    ("radv-compute_queue", 2, 613, 0, 3, 1, 0),
    ("radv-copy_image", 2, 687, 3, 1, 2, 0),
    ("radv-dispatch", 2, 518, 0, 2, 0, 0),
    ("radv-dispatch_indirect", 2, 519, 0, 2, 0, 0),
    ("radv-draw", 2, 626, 2, 0, 2, 0),
    ("radv-draw_indexed", 2, 613, 3, 0, 2, 0),
    ("radv-draw_indirect", 2, 597, 4, 0, 2, 0),
    ("radv-frame", 2, 2216, 355, 5, 10, 0),
    ("radv-renderpass_clear", 2, 567, 2, 2, 5, 0),
    ("radv-transfer", 2, 413, 0, 0, 4, 0),
    ("radv-xfb", 2, 560, 4, 0, 2, 0),
];

#[test]
fn every_radv_trace_replays_to_the_end() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let mut seen = 0;
    let mut paths: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    for path in paths.iter().filter(|p| p.extension().is_some_and(|e| e == "pm4t")) {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let trace = Trace::read_file(path).unwrap();
        let outcome = replay(&trace, &ReplayOptions::default());
        let s = &outcome.summary;
        assert!(s.errors.is_empty(), "{name}: {:?}", s.errors);
        assert!(s.unknown_packets.is_empty(), "{name}: unknown packets");
        assert!(s.not_emulated.is_empty(), "{name}: not emulated {:?}", s.not_emulated);
        let got = (s.submissions, s.packets.total, s.draws, s.dispatches, s.fences, s.waits);
        let expected = EXPECTED.iter().find(|e| e.0 == name).map(|e| (e.1, e.2, e.3, e.4, e.5, e.6));
        assert_eq!(Some(got), expected, "{name}");
        seen += 1;
    }
    assert_eq!(seen, EXPECTED.len());
}
