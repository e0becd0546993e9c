//! Threaded replay against deterministic replay, the reference: every radv
//! trace and every corpus trace replayed on a threaded GPU with 1, 2 and 4
//! workers gives the per-queue counts, the final bytes of every region of
//! the trace (every range anything wrote lies in one) and each queue's
//! backend events in the order the deterministic replay gives. (Every
//! trace with every worker count: the whole matrix runs in a few seconds
//! unoptimized.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pm4core::replay::{replay, MemoryQuery, ReplayOptions, ReplayOutcome};
use pm4core::trace::{Trace, TraceEvent};

fn traces() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let mut all = Vec::new();
    for dir in [root.clone(), root.join("corpus")] {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "pm4t") {
                all.push(path);
            }
        }
    }
    all.sort();
    all
}

/// A query for every memory region of the trace, whole.
fn every_region(trace: &Trace) -> Vec<MemoryQuery> {
    trace
        .events()
        .iter()
        .filter_map(|e| match e {
            TraceEvent::MemRegion { address, data, .. } => Some((*address, data.len())),
            TraceEvent::ZeroRegion { address, len, .. } => Some((*address, *len)),
            _ => None,
        })
        .map(|(address, len)| MemoryQuery { label: format!("{address:#x}:{len}"), address, len })
        .collect()
}

/// The log's lines by queue (the first word of each line), in order.
fn per_queue(log: &[String]) -> BTreeMap<String, Vec<String>> {
    let mut queues: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in log {
        let queue = line.split(' ').next().unwrap_or_default().to_string();
        queues.entry(queue).or_default().push(line.clone());
    }
    queues
}

fn run(trace: &Trace, threaded: Option<usize>) -> ReplayOutcome {
    let mut options = ReplayOptions { log: true, memory: every_region(trace), ..Default::default() };
    if let Some(workers) = threaded {
        options.threaded = true;
        options.gpu.workers = workers;
    }
    replay(trace, &options)
}

#[test]
fn threaded_replay_gives_what_deterministic_replay_gives() {
    let traces = traces();
    assert!(traces.len() >= 23, "{traces:?}");
    for path in traces {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let trace = Trace::read_file(&path).unwrap();
        let reference = run(&trace, None);
        assert!(reference.succeeded(), "{name}: {:?}", reference.summary.errors);
        let events = per_queue(&reference.log);
        for workers in [1, 2, 4] {
            let threaded = run(&trace, Some(workers));
            let (r, t) = (&reference.summary, &threaded.summary);
            assert!(threaded.succeeded(), "{name}, {workers} workers: {:?}", t.errors);
            assert_eq!(t.queues, r.queues, "{name}, {workers} workers: per-queue counts");
            assert_eq!(t.packets, r.packets, "{name}, {workers} workers: packets");
            assert_eq!(
                (t.draws, t.dispatches, t.fences, t.skipped),
                (r.draws, r.dispatches, r.fences, r.skipped),
                "{name}, {workers} workers"
            );
            // `waits` is not compared: whether a queue finds its label
            // written or waits for it depends on how the queues interleave
            // (frame.pm4t: 1 wait deterministically, 0 or 1 threaded).
            assert_eq!(t.memory.len(), r.memory.len());
            for (range, bytes) in &r.memory {
                assert!(t.memory.get(range) == Some(bytes), "{name}, {workers} workers: memory {range} differs");
            }
            assert_eq!(per_queue(&threaded.log), events, "{name}, {workers} workers: per-queue events");
        }
    }
}

#[test]
fn a_threaded_replay_stops_at_a_limit_and_reports_a_stall_as_deterministic_replay_does() {
    use pm4core::limits::Limits;
    // A buffer that chains to itself on two queues: only the limit ends it.
    let looping = pm4core::asm::assemble_trace(
        ".info gpu=gfx10.3\nloop: .mem 0x100000\n    NOP 0\n    chain loop, dwords(loop)\n.end\n\
         .submit gfx loop\n.submit comp0.0 loop\n",
    )
    .unwrap();
    for workers in [1, 2] {
        let mut options = ReplayOptions { threaded: true, ..Default::default() };
        options.gpu.workers = workers;
        options.limits = Limits { max_packets: 100_000, ..Limits::default() };
        let outcome = replay(&looping, &options);
        let kinds: Vec<String> = outcome.summary.errors.iter().map(|e| e.kind.to_string()).collect();
        assert!(
            !kinds.is_empty() && kinds.iter().all(|k| k == "limit"),
            "{workers} workers: {:?}",
            outcome.summary.errors
        );
        assert!(outcome.summary.errors[0].message.contains("more than 100000 packets"), "{:?}", outcome.summary.errors);
    }
    // A wait nothing ends: the same stall as the deterministic replay's.
    let stalled = pm4core::asm::assemble_trace(
        ".info gpu=gfx10.3\n.zero 0x200000, 0x100\nmain: .mem 0x100000\n    WRITE_DATA addr=0x200004 data=1\n    \
         WAIT_REG_MEM function=eq addr=0x200000 ref=1\n.end\n.submit comp0.0 main\n",
    )
    .unwrap();
    let reference = replay(&stalled, &ReplayOptions::default());
    let mut options = ReplayOptions { threaded: true, ..Default::default() };
    options.gpu.workers = 2;
    let threaded = replay(&stalled, &options);
    assert_eq!(threaded.summary.errors, reference.summary.errors);
    assert_eq!(threaded.summary.errors[0].kind, "deadlock");
    assert_eq!(threaded.summary.stalls, reference.summary.stalls);
}
