//! A replay says how far it is while one long submission runs, not only
//! between the trace's chunks: `pm4 replay`, `state` and `stats` redraw
//! their progress line from it.

use pm4core::diagnostics::state::{state_at_with_progress, StopAt};
use pm4core::diagnostics::stats::stream_stats_with_progress;
use pm4core::replay::{replay_with_progress, Progress, ReplayOptions};

/// One submission of 60 060 packets: a 1 000-packet buffer called 60 times.
fn long_trace() -> pm4core::trace::Trace {
    let source = ".info gpu=gfx10.3\n.zero 0x200000, 0x1000\nbody: .mem 0x110000\n    .fill 1000, 0xffff1000\n.end\n\
                  main: .mem 0x100000\n    .rept_marker\n.end\n.submit gfx main\n";
    let calls = "    ib body, 1000\n".repeat(60);
    pm4core::asm::assemble_trace(&source.replace("    .rept_marker\n", &calls)).unwrap()
}

fn during_the_submission(seen: &[Progress]) -> Vec<Progress> {
    seen.iter().copied().filter(|p| !p.finished() && p.packets > 0).collect()
}

#[test]
fn progress_is_reported_while_a_long_submission_runs() {
    let trace = long_trace();
    let mut seen = Vec::new();
    let outcome = replay_with_progress(&trace, &ReplayOptions::default(), &mut |p| seen.push(p));
    assert!(outcome.succeeded(), "{:?}", outcome.summary.errors);
    assert_eq!(outcome.summary.packets.total, 60_060);
    let during = during_the_submission(&seen);
    assert!(during.len() >= 3, "{} reports while the submission ran", during.len());
    assert!(during.windows(2).all(|w| w[0].packets < w[1].packets));
    let last = seen.last().unwrap();
    assert!(last.finished() && last.packets == 60_060, "{last:?}");
}

#[test]
fn stats_and_state_report_progress_too() {
    let trace = long_trace();
    let options = ReplayOptions::default();
    let mut seen = Vec::new();
    stream_stats_with_progress(&trace, &options, &mut |p| seen.push(p));
    assert!(during_the_submission(&seen).len() >= 3);
    assert!(seen.last().unwrap().finished());
    let mut seen = Vec::new();
    let state = state_at_with_progress(&trace, &options, None, StopAt::Index(40_000), &mut |p| seen.push(p)).unwrap();
    assert_eq!(state.at.index, 40_000);
    assert!(during_the_submission(&seen).len() >= 3);
}
