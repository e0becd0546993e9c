//! The assembler corpus in traces/corpus: every source assembles to its
//! committed trace, and every trace replays to its reviewed golden log.

use std::path::{Path, PathBuf};

use pm4core::replay::{replay, ReplayOptions};
use pm4core::trace::Trace;

fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/corpus");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pm4"))
        .collect();
    sources.sort();
    sources
}

#[test]
fn every_source_assembles_to_its_committed_trace() {
    let sources = corpus();
    assert_eq!(sources.len(), 10);
    for source in sources {
        let text = std::fs::read_to_string(&source).unwrap();
        let built = pm4core::asm::assemble(&text).unwrap_or_else(|e| panic!("{}: {e}", source.display()));
        let committed = std::fs::read(source.with_extension("pm4t")).unwrap();
        assert!(built == committed, "{} is out of date: run `pm4 asm` on it", source.display());
    }
}

#[test]
fn the_frame_source_matches_its_generator() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(xtask::FRAME_FILE);
    assert_eq!(std::fs::read_to_string(path).unwrap(), xtask::frame_source(), "run `cargo run -p xtask -- frame`");
}

#[test]
fn every_corpus_trace_replays_to_its_golden_log() {
    for source in corpus() {
        let name = source.file_stem().unwrap().to_string_lossy().to_string();
        let trace = Trace::read_file(&source.with_extension("pm4t")).unwrap();
        let outcome = replay(&trace, &ReplayOptions { log: true, ..Default::default() });
        let s = &outcome.summary;
        assert!(s.errors.is_empty(), "{name}: {:?}", s.errors);
        if name == "unknown" {
            let headers: Vec<u32> = s.unknown_packets.iter().map(|u| u.header).collect();
            assert_eq!(headers, vec![0xC001_0100, 0xC002_F301]);
            assert_eq!(s.not_emulated.get("GET_LOD_STATS"), Some(&1));
        } else {
            assert!(s.unknown_packets.is_empty(), "{name}");
            assert!(s.not_emulated.is_empty(), "{name}: {:?}", s.not_emulated);
        }
        if name == "frame" {
            // Too long for a reviewed golden log: exact counts instead.
            assert_eq!((s.packets.total, s.draws, s.dispatches, s.fences, s.waits), (8341, 2000, 4, 2, 1));
            assert_eq!(outcome.log.len(), 2053);
            continue;
        }
        let golden = std::fs::read_to_string(source.with_extension("log")).unwrap();
        let golden: Vec<&str> = golden.lines().collect();
        assert_eq!(outcome.log, golden, "{name}");
    }
}
