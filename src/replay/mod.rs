//! Trace replay: every chunk of a trace applied in order to a deterministic
//! [`Gpu`](crate::gpu::Gpu), and a summary of what the command processors did.
//!
//! Order of effects, as the trace format says: `MEM `/`ZERO` regions are
//! mapped where they stand; `WRIT` and `SHDR` take effect after every earlier
//! submission has run as far as it can (the GPU is run until it is idle or
//! stalled) and before any later submission starts; `SUBM` queues a
//! submission. At the end the GPU runs until idle; queues still waiting then
//! are reported as a stall naming each wait.
//!
//! Every cost is bounded by [`ReplayOptions::limits`] ([`Limits`]): the
//! packets, command dwords and bytes written over the whole replay (all
//! queues, all submissions, checked between scheduler slices: a replay that
//! reaches one stops with an error of kind `limit` naming it), the guest
//! memory pages copied because they were written, the event log's and the
//! timeline's records (each ends with a "truncated at N events" record),
//! the program map and the list of skipped indirect buffers. [`replay_to`]
//! streams the log and the timeline to writers as the replay goes.
//!
//! The module's parts: `query` (what `--mem` and `--reg` ask for),
//! `summary` (what a replay reports, and its text), `run` (one replay
//! pass: the GPU driven through the trace's events, the work limits),
//! `backend` (the replay's backend: the log, the program map, the packet
//! clock) and `timeline` (the Chrome/Perfetto timeline).

mod backend;
mod query;
mod run;
mod summary;
mod timeline;

use crate::diagnostics::forensics;
use crate::diagnostics::ReplayObserver;
use crate::gpu::GpuConfig;
use crate::limits::{Limits, RecordOut};
use crate::trace::Trace;

pub use query::{parse_number, parse_queue, MemoryQuery, RegisterQuery};
pub use summary::{
    format_summary, BoundProgram, PacketCounts, QueueSummary, ReplayErrorEntry, ReplayErrorKind, ReplayOutcome,
    ReplaySummary, SkippedIb, UnknownPacketEntry,
};

use run::replay_into;

/// What to replay and what to report.
#[derive(Clone, Debug, Default)]
pub struct ReplayOptions {
    pub memory: Vec<MemoryQuery>,
    pub registers: Vec<RegisterQuery>,
    /// Keep the event log ([`ReplayOutcome::log`]).
    pub log: bool,
    /// Build a Chrome/Perfetto trace-event timeline.
    pub timeline: bool,
    /// Dwords written to guest memory after every region is mapped and
    /// before the first submission (`--patch ADDR=DWORD`): what-if replays.
    pub patches: Vec<(u64, u32)>,
    /// GPU settings (each submission's
    /// [`ProcessorConfig::work_budget`](crate::processor::ProcessorConfig::work_budget)
    /// is [`Limits::max_packets`]).
    pub gpu: GpuConfig,
    /// Replay on a [`Gpu::threaded`](crate::gpu::Gpu::threaded) with
    /// [`GpuConfig::workers`] workers instead of the deterministic GPU
    /// (`pm4 replay --workers N`). Host writes and shader creations still
    /// wait until the GPU has run as far as it can, so a stream whose queues
    /// do not race gives the same counts, memory and per-queue events; what
    /// differs: submissions to different queues run at once rather than one
    /// after another (a queue may wait where the deterministic replay found
    /// its label written, or find it written where that replay waited, so
    /// `waits` can differ), the log's lines of
    /// different queues interleave in the order the workers ran them, and
    /// the limits are checked every millisecond rather than every 16
    /// slices. Observed replays ([`replay_observed`], the timeline's pass,
    /// stall forensics) are always deterministic.
    pub threaded: bool,
    /// What the replay may cost (work, written memory, log and timeline
    /// records, program map).
    pub limits: Limits,
}

/// Writers the event log and the timeline stream to as the replay goes
/// ([`replay_to`]); each is bounded by [`Limits::max_events`].
///
/// ```
/// use pm4core::replay::{replay_to, ReplayOptions, ReplayOutputs};
/// use pm4core::trace::TraceWriter;
///
/// let trace = TraceWriter::new().finish_trace()?;
/// let outputs = ReplayOutputs { log: Some(Box::new(std::io::sink())), timeline: None };
/// let outcome = replay_to(&trace, &ReplayOptions::default(), outputs, &mut |_| {});
/// assert!(outcome.succeeded() && outcome.log.is_empty()); // streamed, not kept
/// # Ok::<(), pm4core::trace::TraceError>(())
/// ```
#[derive(Default)]
pub struct ReplayOutputs {
    /// The event log, one line per effect.
    pub log: Option<Box<dyn std::io::Write + Send>>,
    /// The Chrome/Perfetto trace-event JSON.
    pub timeline: Option<Box<dyn std::io::Write + Send>>,
}

/// How far a replay is, as its progress callback is told: after every
/// chunk of the trace, and while the GPU runs (every few thousand packets
/// of a long submission; per chunk only on a threaded GPU).
///
/// ```
/// use pm4core::replay::{replay_with_progress, Progress, ReplayOptions};
/// use pm4core::trace::Trace;
///
/// let trace = Trace::read_file(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/traces/corpus/ibs.pm4t"))).unwrap();
/// let mut seen: Vec<Progress> = Vec::new();
/// let outcome = replay_with_progress(&trace, &ReplayOptions::default(), &mut |p| seen.push(p));
/// let last = seen.last().unwrap();
/// assert!(last.finished() && last.packets == outcome.summary.packets.total);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Chunks of the trace applied so far.
    pub chunks_done: usize,
    /// Chunks in the trace.
    pub chunks: usize,
    /// Packets all queues have run so far.
    pub packets: u64,
}

impl Progress {
    /// True once every chunk is applied and the GPU has run to its end.
    pub fn finished(&self) -> bool {
        self.chunks_done == self.chunks
    }
}

/// Replays `trace` and summarises it. Problems met while replaying are in
/// the summary's `errors`; the trace itself was validated when it was read.
pub fn replay(trace: &Trace, options: &ReplayOptions) -> ReplayOutcome {
    replay_with_progress(trace, options, &mut |_| {})
}

/// [`replay`], calling `progress` ([`Progress`]) as it goes through the
/// trace's events and while the GPU runs. When the replay ends stalled or a submission fails, the trace is
/// replayed a second time under a [`forensics`] observer and the summary's
/// `stalls` say what each stuck queue waits on (or failed at) and who last
/// wrote what it waits on.
///
/// A timeline comes from a second replay that runs one packet per
/// scheduler slice (so each wait's releasing write is seen: see
/// [`crate::diagnostics::timeline`]); the summary and the log are the
/// plain replay's.
pub fn replay_with_progress(
    trace: &Trace,
    options: &ReplayOptions,
    progress: &mut dyn FnMut(Progress),
) -> ReplayOutcome {
    replay_to(trace, options, ReplayOutputs::default(), progress)
}

/// [`replay_with_progress`], streaming the event log and the timeline to
/// `outputs` as the replay goes (each given writer replaces the in-memory
/// [`ReplayOutcome::log`] / [`ReplayOutcome::timeline`], and is written
/// whatever [`ReplayOptions::log`] / [`ReplayOptions::timeline`] say). A
/// write error ends that output and is reported in the summary's errors
/// (kind `output`).
pub fn replay_to(
    trace: &Trace,
    options: &ReplayOptions,
    outputs: ReplayOutputs,
    progress: &mut dyn FnMut(Progress),
) -> ReplayOutcome {
    let stream = |w: Box<dyn std::io::Write + Send>| RecordOut::Stream(std::io::BufWriter::new(w));
    let log = match outputs.log {
        Some(w) => Some(stream(w)),
        None => options.log.then(|| RecordOut::Lines(Vec::new())),
    };
    let timeline = match outputs.timeline {
        Some(w) => Some(stream(w)),
        None => options.timeline.then(|| RecordOut::Text(String::new())),
    };
    let plain = ReplayOptions { timeline: false, ..options.clone() };
    let mut outcome = replay_into(trace, &plain, progress, None, log, None);
    let stall = outcome.stall.take();
    // A replay stopped by a limit is not investigated again: the error
    // names the limit, and a second pass would cost as much again.
    let limited = outcome.summary.errors.iter().any(|e| e.kind == "limit");
    if !limited && (stall.is_some() || !outcome.failures.is_empty()) {
        outcome.summary.stalls = forensics::investigate(trace, options, stall.as_ref(), &outcome.failures);
    }
    if let Some(out) = timeline {
        let options = ReplayOptions { log: false, memory: Vec::new(), registers: Vec::new(), ..options.clone() };
        let pass = replay_into(trace, &options, &mut |_| {}, None, None, Some(out));
        outcome.timeline = pass.timeline;
        outcome.timeline_truncated = pass.timeline_truncated;
        outcome.summary.errors.extend(pass.summary.errors.into_iter().filter(|e| e.kind == "output"));
    }
    outcome
}

/// [`replay_with_progress`] with an optional observer that sees every packet
/// with its queue's registers and the guest memory right after it ran. With
/// an observer, or a timeline, each scheduler slice runs one packet (so the
/// interleaving of queues can differ from a plain replay's), and the
/// observer can stop the replay early (the summary then covers what ran).
/// One pass: no stall forensics.
pub fn replay_observed(
    trace: &Trace,
    options: &ReplayOptions,
    progress: &mut dyn FnMut(Progress),
    observer: Option<&mut dyn ReplayObserver>,
) -> ReplayOutcome {
    let log = options.log.then(|| RecordOut::Lines(Vec::new()));
    let timeline = options.timeline.then(|| RecordOut::Text(String::new()));
    replay_into(trace, options, progress, observer, log, timeline)
}
