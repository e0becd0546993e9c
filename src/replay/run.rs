//! One replay pass: the trace's events applied in order to a
//! deterministic [`Gpu`], run between host-side effects as far as it can,
//! with the work limits checked between scheduler slices, then the summary
//! gathered from the processors, the memory and the backend.

use std::ops::ControlFlow;

use super::backend::ReplayBackend;
use super::summary::{
    QueueSummary, ReplayErrorEntry, ReplayErrorKind, ReplayOutcome, ReplaySummary, UnknownPacketEntry,
};
use super::timeline::Timeline;
use super::{Progress, ReplayOptions};
use crate::backend::{QueueId, RecordingBackend};
use crate::diagnostics::forensics::Failure;
use crate::diagnostics::timeline::WaitTracker;
use crate::diagnostics::{ExecutedPacket, ReplayObserver};
use crate::gpu::{Gpu, GpuError, RunStatus, StallReport, Submission};
use crate::limits::{Limit, LimitExceeded, Limits, RecordOut, Records};
use crate::memory::{GuestMemory, MemoryError, SparseMemory};
use crate::packet::Opcode;
use crate::processor::Pm4Error;
use crate::trace::{Trace, TraceEvent};

fn error(kind: ReplayErrorKind, message: impl Into<String>) -> ReplayErrorEntry {
    ReplayErrorEntry { kind, message: message.into() }
}

/// A GPU error as the summary lists it: a resource limit reached is of kind
/// `limit` and names the limit's field and option; an indirect buffer
/// outside the trace's memory names `--skip-unmapped-ibs`.
fn gpu_error_entry(e: &GpuError, limits: &Limits) -> ReplayErrorEntry {
    let memory_limit = match e {
        GpuError::Processor { source: Pm4Error::Memory { source, .. }, .. } | GpuError::HostWrite { source, .. } => {
            match source {
                MemoryError::WrittenLimit { .. } => Some(Limit::WrittenMemory),
                MemoryError::WriteBudget { .. } => Some(Limit::WriteBytes),
                _ => None,
            }
        }
        _ => None,
    };
    if let Some(limit) = memory_limit {
        return error(ReplayErrorKind::Limit, format!("{e} ({}; raise it with {})", limit.field(), limit.option()));
    }
    if let GpuError::Processor { queue, submission, source: Pm4Error::WorkBudgetExhausted { location, .. } } = e {
        // A submission's budget is the replay's packet limit: said as the
        // limit, with where the submission stopped.
        let limit = LimitExceeded { limit: Limit::Packets, value: limits.max_packets };
        return error(
            ReplayErrorKind::Limit,
            format!("{limit}: submission {submission} on {queue} stopped at {location}"),
        );
    }
    if let GpuError::Processor {
        source:
            Pm4Error::Memory {
                opcode: Opcode::INDIRECT_BUFFER | Opcode::INDIRECT_BUFFER_CONST,
                source: MemoryError::Unmapped { .. },
                ..
            },
        ..
    } = e
    {
        return error(
            ReplayErrorKind::Memory,
            format!(
                "{e} (an indirect buffer the trace holds no memory for, as in command-only captures: \
                 --skip-unmapped-ibs reports such buffers and goes on)"
            ),
        );
    }
    let kind = match e {
        GpuError::Processor { source, .. } => ReplayErrorKind::of(source),
        GpuError::Deadlock(_) => ReplayErrorKind::Deadlock,
        GpuError::HostWrite { .. } => ReplayErrorKind::HostWrite,
        _ => ReplayErrorKind::Gpu,
    };
    error(kind, e.to_string())
}

/// The observed replay's state between steps.
struct Observed<'a> {
    observer: Option<&'a mut dyn ReplayObserver>,
    /// The timeline's waits, when a timeline is asked for (at most
    /// [`Limits::max_events`] kept).
    waits: Option<WaitTracker>,
    max_waits: usize,
    waits_truncated: bool,
    /// Packets each queue ran so far, and all queues together.
    counts: [u64; QueueId::COUNT as usize],
    total: u64,
    /// Queues that were given a submission, and those suspended now.
    submitted: [bool; QueueId::COUNT as usize],
    suspended: [bool; QueueId::COUNT as usize],
    stopped: bool,
}

impl Observed<'_> {
    /// Calls `f` on the observer and on the wait tracker.
    fn each(&mut self, mut f: impl FnMut(&mut dyn ReplayObserver)) {
        if let Some(o) = self.observer.as_deref_mut() {
            f(o);
        }
        if let Some(w) = &mut self.waits {
            f(w);
        }
    }

    fn wants_suspensions(&self) -> bool {
        self.waits.is_some() || self.observer.as_deref().is_some_and(|o| o.wants_suspensions())
    }
}

/// Scheduler steps between two checks of the work limits: a replay stops
/// at most this many slices past a limit (each slice at most
/// [`GpuConfig::slice_packets`] packets, or [`LONE_SLICE_PACKETS`] while one
/// queue runs alone), and the check costs a few locks per 16 slices.
const CHECK_SLICES: u64 = 16;

/// The replay's [`GpuConfig::lone_slice_packets`] (unless its options set
/// one): the slice of a queue that runs alone.
const LONE_SLICE_PACKETS: u64 = 1024;

type ReplayGpu = Gpu<SparseMemory, ReplayBackend>;

/// Why a run stopped early.
enum Stop {
    Gpu(GpuError),
    Limit(LimitExceeded),
}

impl From<GpuError> for Stop {
    fn from(e: GpuError) -> Self {
        Stop::Gpu(e)
    }
}

/// The replay's progress callback and where the replay is.
struct Reporter<'a> {
    callback: &'a mut dyn FnMut(Progress),
    at: Progress,
}

impl Reporter<'_> {
    fn chunks_done(&mut self, done: usize) {
        self.at.chunks_done = done;
        (self.callback)(self.at);
    }

    fn packets(&mut self, packets: u64) {
        if packets != self.at.packets {
            self.at.packets = packets;
            (self.callback)(self.at);
        }
    }
}

/// The replay's backend. The replay reaches it only between slices, never
/// from a callback, where the GPU would refuse (and this would answer the
/// default).
fn replay_backend<R: Default>(gpu: &ReplayGpu, f: impl FnOnce(&mut ReplayBackend) -> R) -> R {
    gpu.with_backend(f).unwrap_or_default()
}

/// The first of the replay's work limits that the GPU has gone past; else
/// the packets run so far.
fn check_limits(gpu: &ReplayGpu, limits: &Limits) -> Result<u64, Stop> {
    let stats = gpu.stats();
    let draw_calls = replay_backend(gpu, |b| b.draw_calls);
    let written = gpu.with_memory_ref(|m| m.bytes_written());
    let checks = [
        (Limit::Packets, stats.packets.saturating_add(draw_calls), limits.max_packets),
        (Limit::Dwords, stats.dwords, limits.max_dwords),
        (Limit::WriteBytes, written, limits.max_write_bytes),
    ];
    match checks.iter().find(|(_, used, max)| used > max) {
        Some(&(limit, _, value)) => Err(Stop::Limit(LimitExceeded { limit, value })),
        None => Ok(stats.packets),
    }
}

/// How often a threaded replay's watchdog checks the work limits.
const THREADED_CHECK: std::time::Duration = std::time::Duration::from_millis(1);

/// A threaded GPU run as far as it can ([`Gpu::run_until_stalled`]) while a
/// watchdog thread checks the work limits; past one it aborts every queue's
/// submission (again at each check, as queued ones start) until the run
/// ends.
fn run_threaded(gpu: &ReplayGpu, limits: &Limits, reporter: &mut Reporter<'_>) -> Result<RunStatus, Stop> {
    let (done, finished) = crossbeam_channel::bounded::<()>(0);
    let reached = std::thread::scope(|s| {
        let watchdog = s.spawn(|| {
            let mut reached = None;
            loop {
                if reached.is_none() {
                    if let Err(Stop::Limit(e)) = check_limits(gpu, limits) {
                        reached = Some(e);
                    }
                }
                if reached.is_some() {
                    for q in 0..QueueId::COUNT {
                        let _ = gpu.abort(QueueId(q));
                    }
                }
                match finished.recv_timeout(THREADED_CHECK) {
                    Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                    _ => return reached,
                }
            }
        });
        let status = gpu.run_until_stalled();
        drop(done);
        (status, watchdog.join().ok().flatten())
    });
    match reached {
        (_, Some(e)) => Err(Stop::Limit(e)),
        (status, None) => {
            let status = status?;
            reporter.packets(check_limits(gpu, limits)?);
            Ok(status)
        }
    }
}

/// Runs the GPU as far as it can, checking the work limits between slices;
/// with an observer, one packet per step, the observer called after each.
fn run_gpu(
    gpu: &ReplayGpu,
    observed: &mut Option<Observed<'_>>,
    limits: &Limits,
    reporter: &mut Reporter<'_>,
) -> Result<RunStatus, Stop> {
    if gpu.is_threaded() {
        return run_threaded(gpu, limits, reporter);
    }
    let Some(o) = observed else {
        loop {
            let status = gpu.run_slices(CHECK_SLICES)?;
            reporter.packets(check_limits(gpu, limits)?);
            if status != RunStatus::Running {
                return Ok(status);
            }
        }
    };
    if o.stopped {
        return Ok(RunStatus::Idle);
    }
    let mut steps = 0u64;
    loop {
        let status = gpu.run_slices(1)?;
        steps += 1;
        if steps % CHECK_SLICES == 0 || status != RunStatus::Running {
            reporter.packets(check_limits(gpu, limits)?);
            // A timeline that is full has nothing more to learn.
            if replay_backend(gpu, |b| b.timeline.as_ref().is_some_and(|t| !t.records.accepts())) {
                o.stopped = true;
                return Ok(RunStatus::Idle);
            }
        }
        if let Some(w) = &mut o.waits {
            if w.spans.len() > o.max_waits {
                w.spans.truncate(o.max_waits);
                o.waits_truncated = true;
            }
        }
        let (ran, draw_calls) =
            replay_backend(gpu, |b| (b.executed.as_mut().map(std::mem::take).unwrap_or_default(), b.draw_calls));
        // One packet a step: the packet limit is checked at each, exactly,
        // once the observer has seen the packet (the dword and write limits
        // every CHECK_SLICES steps).
        o.total += ran.len() as u64;
        let past_limit = o.total.saturating_add(draw_calls) > limits.max_packets;
        for (queue, header, location) in ran {
            let slot = o.counts.get_mut(queue.0 as usize);
            let index = slot.as_deref().copied().unwrap_or(0);
            if let Some(n) = slot {
                *n += 1;
            }
            let packet = ExecutedPacket { queue, index, header, location };
            let flow = gpu.with_processor_and_memory(queue, |p, m| {
                if let Some(w) = &mut o.waits {
                    let _ = w.packet(&packet, p, m);
                }
                o.observer.as_deref_mut().map_or(ControlFlow::Continue(()), |ob| ob.packet(&packet, p, m))
            })?;
            if flow == ControlFlow::Break(()) {
                o.stopped = true;
                return Ok(RunStatus::Idle);
            }
        }
        if past_limit {
            return Err(Stop::Limit(LimitExceeded { limit: Limit::Packets, value: limits.max_packets }));
        }
        if o.wants_suspensions() {
            for q in 0..QueueId::COUNT {
                let i = q as usize;
                if !o.submitted.get(i).copied().unwrap_or(false) {
                    continue;
                }
                let was = o.suspended.get(i).copied().unwrap_or(false);
                let now = gpu.with_processor_and_memory(QueueId(q), |p, m| {
                    let reason = p.suspended();
                    if let (Some(reason), false) = (reason, was) {
                        let at = p.execution().top().map_or(0, |c| c.address());
                        o.each(|ob| ob.suspended(QueueId(q), &reason, at, m));
                    }
                    reason.is_some()
                })?;
                if let Some(slot) = o.suspended.get_mut(i) {
                    *slot = now;
                }
            }
        }
        if status != RunStatus::Running {
            return Ok(status);
        }
    }
}

/// One replay pass, its log and timeline (if any) going to `log` and
/// `timeline`.
pub(super) fn replay_into(
    trace: &Trace,
    options: &ReplayOptions,
    progress: &mut dyn FnMut(Progress),
    observer: Option<&mut dyn ReplayObserver>,
    log: Option<RecordOut>,
    timeline: Option<RecordOut>,
) -> ReplayOutcome {
    let limits = options.limits;
    let mut config = options.gpu.clone();
    let observe = observer.is_some() || timeline.is_some();
    // A backend call per packet only when something uses it: the log's
    // packet numbers, the timeline, an observer. The summary's counts come
    // from the processors' own counters.
    config.processor.report_packets |= log.is_some() || observe;
    // A submission may run what the whole replay may, no more.
    config.processor.work_budget = limits.max_packets.max(1);
    let max_events = usize::try_from(limits.max_events).unwrap_or(usize::MAX);
    if observe {
        config.slice_packets = 1;
        config.lone_slice_packets = 1;
    } else if config.lone_slice_packets == 0 {
        // A queue running alone goes through the scheduler (and the limit
        // checks) once per LONE_SLICE_PACKETS packets.
        config.lone_slice_packets = LONE_SLICE_PACKETS;
    }
    let backend = ReplayBackend {
        log: log.is_some().then(RecordingBackend::new),
        records: log.map(|out| Records::new(out, limits.max_events)),
        timeline: timeline.map(|out| Timeline::new(out, limits.max_events)),
        executed: observe.then(Vec::new),
        max_programs: limits.max_programs,
        max_skipped_ibs: max_events,
        ..Default::default()
    };
    let mut observed = observe.then(|| Observed {
        observer,
        waits: backend.timeline.is_some().then(WaitTracker::new),
        max_waits: max_events,
        waits_truncated: false,
        counts: [0; QueueId::COUNT as usize],
        total: 0,
        submitted: [false; QueueId::COUNT as usize],
        suspended: [false; QueueId::COUNT as usize],
        stopped: false,
    });
    let memory = SparseMemory::new();
    memory.set_written_limit(limits.max_written_memory);
    memory.set_write_budget(limits.max_write_bytes);
    let mut errors = Vec::new();
    let gpu = if options.threaded && !observe {
        match Gpu::threaded(memory, backend, config) {
            Ok(gpu) => gpu,
            Err(e) => {
                let mut outcome = ReplayOutcome::default();
                outcome.summary.errors.push(error(ReplayErrorKind::Gpu, format!("starting the threaded GPU: {e}")));
                return outcome;
            }
        }
    } else {
        Gpu::deterministic(memory, backend, config)
    };
    let mut submissions: Vec<Submission> = Vec::new();
    let mut host_writes = Vec::new();
    let mut per_queue = [0u64; QueueId::COUNT as usize];
    let mut started = false;
    let mut stopped = false;

    // Runs the GPU as far as it can (before a host-side effect, or at the
    // end); a limit stops the replay.
    let mut reporter =
        Reporter { callback: progress, at: Progress { chunks: trace.events().len(), ..Progress::default() } };
    let settle = |gpu: &ReplayGpu,
                  errors: &mut Vec<ReplayErrorEntry>,
                  observed: &mut Option<Observed<'_>>,
                  stopped: &mut bool,
                  reporter: &mut Reporter<'_>|
     -> Option<StallReport> {
        match run_gpu(gpu, observed, &limits, reporter) {
            Ok(RunStatus::Stalled(report)) => Some(report),
            Ok(_) => None,
            Err(Stop::Gpu(e)) => {
                errors.push(gpu_error_entry(&e, &limits));
                None
            }
            Err(Stop::Limit(e)) => {
                errors.push(error(ReplayErrorKind::Limit, e.to_string()));
                for q in 0..QueueId::COUNT {
                    let _ = gpu.abort(QueueId(q));
                }
                *stopped = true;
                None
            }
        }
    };

    for (done, event) in trace.events().iter().enumerate() {
        reporter.chunks_done(done);
        if stopped || observed.as_ref().is_some_and(|o| o.stopped) {
            break;
        }
        if !started && matches!(event, TraceEvent::Submit { .. }) {
            started = true;
            if limits.max_packets == 0 {
                // No packet may run: nothing is submitted.
                let limit = LimitExceeded { limit: Limit::Packets, value: 0 };
                errors.push(error(ReplayErrorKind::Limit, format!("{limit}: no submission ran")));
                stopped = true;
                break;
            }
            apply_patches(&gpu, &options.patches, &mut errors);
            if let Some(o) = &mut observed {
                gpu.with_memory_ref(|m| o.each(|ob| ob.start(m)));
            }
        }
        match event {
            TraceEvent::MemRegion { .. } | TraceEvent::ZeroRegion { .. } => {
                let r = gpu.with_memory(|m| trace.map_region(m, event));
                if let Err(e) = r {
                    errors
                        .push(error(ReplayErrorKind::Memory, format!("chunk {}: mapping failed: {e}", event.chunk())));
                }
            }
            TraceEvent::HostWrite { address, data, chunk } => {
                settle(&gpu, &mut errors, &mut observed, &mut stopped, &mut reporter);
                if stopped {
                    break;
                }
                if let Some(o) = &mut observed {
                    o.each(|ob| ob.host_write(*chunk, *address, data.len()));
                }
                let bytes = trace.bytes_of(data);
                match gpu.write_memory(*address, bytes) {
                    Ok(handle) => host_writes.push(handle),
                    Err(e) => errors.push(gpu_error_entry(&e, &limits)),
                }
            }
            TraceEvent::Shader { header_address, code_address, relocated, chunk } => {
                settle(&gpu, &mut errors, &mut observed, &mut stopped, &mut reporter);
                if stopped {
                    break;
                }
                let r = gpu
                    .with_shared(|m, _, s| s.create(m, *header_address, *code_address, *relocated).map(|_| ()))
                    .map_err(|e| e.to_string())
                    .and_then(|created| created.map_err(|e| e.to_string()));
                if let Err(e) = r {
                    errors.push(error(
                        ReplayErrorKind::Shader,
                        format!("chunk {chunk}: shader at {header_address:#x}: {e}"),
                    ));
                }
            }
            TraceEvent::Submit { queue, address, size_dw, .. } => {
                match gpu.submit(QueueId(*queue), *address, *size_dw) {
                    Ok(s) => submissions.push(s),
                    Err(e) => errors.push(gpu_error_entry(&e, &limits)),
                }
                if let Some(n) = per_queue.get_mut(*queue as usize) {
                    *n += 1;
                }
                if let Some(slot) = observed.as_mut().and_then(|o| o.submitted.get_mut(*queue as usize)) {
                    *slot = true;
                }
            }
            TraceEvent::Note { .. } | TraceEvent::Ancillary { .. } => {}
        }
    }
    if !started {
        apply_patches(&gpu, &options.patches, &mut errors);
    }
    let mut stall = None;
    if !stopped {
        if let Some(report) = settle(&gpu, &mut errors, &mut observed, &mut stopped, &mut reporter) {
            // The trace is over: no host write can come, the stall is final.
            errors.push(error(ReplayErrorKind::Deadlock, GpuError::Deadlock(report.clone()).to_string()));
            stall = Some(report);
        }
    }
    reporter.at.packets = gpu.stats().packets;
    reporter.chunks_done(trace.events().len());
    let mut failures = Vec::new();
    for w in &host_writes {
        if let Some(Err(e)) = w.poll() {
            errors.push(gpu_error_entry(&e, &limits));
        }
    }
    for s in &submissions {
        if let Some(Err(e)) = s.poll() {
            if matches!(e, GpuError::Aborted(_)) && stopped {
                continue;
            }
            if !matches!(e, GpuError::Deadlock(_) | GpuError::Pending) {
                let entry = gpu_error_entry(&e, &limits);
                // The submission's budget is the replay's packet limit: its
                // error says where, and replaces the replay's own.
                match errors
                    .iter_mut()
                    .find(|x| x.kind == ReplayErrorKind::Limit && entry.message.starts_with(&x.message))
                {
                    Some(general) => *general = entry,
                    None => errors.push(entry),
                }
            }
            if let GpuError::Processor { queue, source, .. } = &e {
                let packet = source.location().map(|l| l.address());
                failures.push(Failure { queue: *queue, packet, message: e.to_string() });
            }
        }
    }

    let mut summary = ReplaySummary {
        gpu: trace.gpu().unwrap_or("gfx10.3").to_string(),
        submissions: submissions.len() as u64,
        ..Default::default()
    };
    for q in 0..QueueId::COUNT {
        let queue = QueueId(q);
        let Ok(stats) = gpu.processor_stats(queue) else { continue };
        let p = &mut summary.packets;
        p.total += stats.packets;
        for (op, n) in stats.by_opcode.iter().enumerate() {
            if *n > 0 {
                *p.by_opcode.entry(Opcode(op as u8).to_string()).or_default() += n;
            }
        }
        if stats.type0 > 0 {
            *p.by_opcode.entry("TYPE0".into()).or_default() += stats.type0;
        }
        if stats.type2 > 0 {
            *p.by_opcode.entry("TYPE2".into()).or_default() += stats.type2;
        }
        for (op, n) in stats.not_emulated.iter().enumerate() {
            if *n > 0 {
                *summary.not_emulated.entry(Opcode(op as u8).to_string()).or_default() += n;
            }
        }
        summary.draws += stats.draws;
        summary.dispatches += stats.dispatches;
        summary.waits += stats.waits;
        summary.fences += stats.fences;
        summary.skipped += stats.skipped;
        for u in &stats.unknown_packets {
            summary.unknown_packets.push(UnknownPacketEntry {
                queue: u.queue,
                name: QueueId(u.queue).to_string(),
                address: u.address,
                header: u.header,
                dump: u.dump.clone(),
            });
        }
        let submitted = per_queue.get(q as usize).copied().unwrap_or(0);
        if submitted > 0 || stats.packets > 0 {
            summary.queues.push(QueueSummary {
                queue: q,
                name: queue.to_string(),
                submissions: submitted,
                packets: stats.packets,
                dwords: stats.dwords,
            });
        }
    }
    for query in &options.memory {
        let value = gpu.with_memory_ref(|m| read_range(m, query.address, query.len).map(hex::encode));
        match value {
            Ok(hex) => {
                summary.memory.insert(query.label.clone(), hex);
            }
            Err(e) => errors.push(error(ReplayErrorKind::Memory, format!("--mem {}: {e}", query.label))),
        }
    }
    for query in &options.registers {
        match gpu.with_processor(query.queue, |p| p.register(query.register)) {
            Ok(v) => {
                summary.registers.insert(query.label.clone(), v);
            }
            Err(e) => errors.push(gpu_error_entry(&e, &limits)),
        }
    }

    let (records, timeline, programs, programs_not_kept, skipped_ibs) = replay_backend(&gpu, |b| {
        (
            b.records.take(),
            b.timeline.take(),
            std::mem::take(&mut b.programs),
            b.programs_not_kept,
            std::mem::take(&mut b.skipped_ibs),
        )
    });
    summary.skipped_ibs = skipped_ibs;
    let mut outcome = ReplayOutcome {
        programs: programs.into_values().collect(),
        programs_not_kept,
        written_page_bytes: gpu.with_memory_ref(|m| m.allocated_page_bytes()),
        stall,
        failures,
        ..Default::default()
    };
    if let Some(records) = records {
        outcome.log_truncated = records.truncated();
        let (out, e) = records.finish();
        if let Some(e) = e {
            errors.push(error(ReplayErrorKind::Output, format!("writing the event log: {e}")));
        }
        if let RecordOut::Lines(lines) = out {
            outcome.log = lines;
        }
    }
    if let Some(timeline) = timeline {
        let (mut waits, waits_truncated) =
            observed.map(|o| (o.waits.unwrap_or_default(), o.waits_truncated)).unwrap_or_default();
        waits.finish();
        waits.spans.truncate(max_events);
        let (out, e, truncated) = timeline.finish(&waits.spans);
        outcome.timeline_truncated = truncated || waits_truncated;
        if let Some(e) = e {
            errors.push(error(ReplayErrorKind::Output, format!("writing the timeline: {e}")));
        }
        if let RecordOut::Text(text) = out {
            outcome.timeline = Some(text);
        }
    }
    summary.errors = errors;
    outcome.summary = summary;
    outcome
}

/// Writes the `--patch` dwords (before the first submission).
fn apply_patches(gpu: &Gpu<SparseMemory, ReplayBackend>, patches: &[(u64, u32)], errors: &mut Vec<ReplayErrorEntry>) {
    for &(address, value) in patches {
        if let Err(e) = gpu.with_memory(|m| m.write_u32(address, value)) {
            errors.push(error(ReplayErrorKind::Memory, format!("--patch {address:#x}={value:#x}: {e}")));
        }
    }
}

/// `len` bytes of guest memory at `address`.
fn read_range(memory: &dyn GuestMemory, address: u64, len: u64) -> Result<Vec<u8>, MemoryError> {
    let mut bytes = vec![0u8; usize::try_from(len).unwrap_or(0)];
    memory.read_bytes(address, &mut bytes)?;
    Ok(bytes)
}
