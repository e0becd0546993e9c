//! Trace replay: every chunk of a trace applied in order to a deterministic
//! [`Gpu`], and a summary of what the command processors did.
//!
//! Order of effects, as the trace format says: `MEM `/`ZERO` regions are
//! mapped where they stand; `WRIT` and `SHDR` take effect after every earlier
//! submission has run as far as it can (the GPU is run until it is idle or
//! stalled) and before any later submission starts; `SUBM` queues a
//! submission. At the end the GPU runs until idle; queues still waiting then
//! are reported as a stall naming each wait.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::ControlFlow;

use std::sync::Arc;

use crate::backend::{
    Backend, CacheAction, Dispatch, Draw, Event, Fence, Flip, Marker, NotEmulated, ProgramBinding, ProgramStage,
    QueueId, RecordingBackend, SampleKind, UnknownPacket,
};
use crate::diagnostics::forensics::{self, Failure, QueueForensics};
use crate::diagnostics::timeline::{WaitSpan, WaitTracker};
use crate::diagnostics::{ExecutedPacket, ReplayObserver};
use crate::gpu::{Gpu, GpuConfig, GpuError, RunStatus, StallReport, Submission};
use crate::memory::{GuestMemory, MemoryError, SparseMemory};
use crate::packet::{Header, Opcode, PacketLocation, PacketName};
use crate::regs::db::{self, GpuFamily};
use crate::shader::AgcShader;
use crate::trace::{Trace, TraceEvent};

/// A memory range to report after the replay (`--mem ADDR:LEN`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryQuery {
    /// The text the range was given as; the summary's key.
    pub label: String,
    pub address: u64,
    pub len: u64,
}

impl MemoryQuery {
    /// Parses `ADDR:LEN` (each decimal or 0x-hex): LEN is 1 byte to 1 MiB
    /// and the range lies in the 48-bit address space.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (a, l) = text.split_once(':').ok_or_else(|| format!("memory range '{text}' is not ADDR:LEN"))?;
        let address = parse_number(a).ok_or_else(|| format!("bad address '{a}' in '{text}'"))?;
        let len = parse_number(l).ok_or_else(|| format!("bad length '{l}' in '{text}'"))?;
        if len == 0 {
            return Err(format!("memory range '{text}' is empty"));
        }
        if len > 1 << 20 {
            return Err(format!("memory range '{text}' is longer than 1 MiB"));
        }
        if let Err(e) = crate::memory::check_range(address, len) {
            return Err(format!("memory range '{text}': {e}"));
        }
        Ok(Self { label: text.to_string(), address, len })
    }
}

/// A register to report after the replay (`--reg NAME` or `NAME@QUEUE`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterQuery {
    /// The text the register was given as; the summary's key.
    pub label: String,
    pub register: u32,
    pub queue: QueueId,
}

impl RegisterQuery {
    /// Parses `NAME`, `NAME@QUEUE` (`gfx`, `compP.Q` or a number) or a
    /// 0x-hex register index, against the register database of `family`.
    pub fn parse(text: &str, family: GpuFamily) -> Result<Self, String> {
        let (name, queue) = match text.split_once('@') {
            Some((n, q)) => (n, parse_queue(q).ok_or_else(|| format!("bad queue '{q}' in '{text}'"))?),
            None => (text, QueueId::GRAPHICS),
        };
        let register = match db::register_by_name(family, name) {
            Some(info) => info.offset,
            None => match parse_number(name) {
                Some(n) if n < 0x1_0000 => n as u32,
                _ => return Err(format!("no register named '{name}' in the {family} database")),
            },
        };
        Ok(Self { label: text.to_string(), register, queue })
    }
}

/// Parses a queue name: `gfx`, `compP.Q` or a number 0..=56 (see
/// [`QueueId`]'s `FromStr`).
pub fn parse_queue(text: &str) -> Option<QueueId> {
    text.parse().ok()
}

/// Parses a decimal or 0x-hex number.
pub fn parse_number(text: &str) -> Option<u64> {
    let t = text.trim().replace('_', "");
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

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
    /// GPU settings (deterministic mode is always used).
    pub gpu: GpuConfig,
}

/// Packet counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PacketCounts {
    /// Every packet a processor decoded, executed or skipped.
    pub total: u64,
    /// By opcode name (`TYPE0`, `TYPE2` for the other packet types).
    pub by_opcode: BTreeMap<String, u64>,
}

/// An error met during the replay.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ReplayErrorEntry {
    /// A short, stable kind (`memory`, `deadlock`, `host_write`, `shader`, …).
    pub kind: String,
    pub message: String,
}

/// An unknown packet as the summary reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct UnknownPacketEntry {
    pub queue: u32,
    pub address: u64,
    pub header: u32,
    pub dump: String,
}

/// Per-queue counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct QueueSummary {
    pub queue: u32,
    pub name: String,
    pub submissions: u64,
    pub packets: u64,
    pub dwords: u64,
}

/// What a replay did. Field names are stable: other tools parse them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ReplaySummary {
    pub gpu: String,
    pub submissions: u64,
    pub packets: PacketCounts,
    /// Draw packets executed (a multi-draw packet counts once).
    pub draws: u64,
    /// Dispatch packets executed.
    pub dispatches: u64,
    /// Times a packet made its queue wait.
    pub waits: u64,
    /// Releases that retired.
    pub fences: u64,
    /// Packets skipped by predication, COND_EXEC or PRED_EXEC.
    pub skipped: u64,
    pub not_emulated: BTreeMap<String, u64>,
    pub unknown_packets: Vec<UnknownPacketEntry>,
    pub errors: Vec<ReplayErrorEntry>,
    /// `"ADDR:LEN"` as given → hex of the final bytes.
    pub memory: BTreeMap<String, String>,
    /// Register as given → final value.
    pub registers: BTreeMap<String, u32>,
    pub queues: Vec<QueueSummary>,
    /// Indirect buffers skipped because their memory is not in the trace
    /// ([`crate::processor::ProcessorConfig::skip_unmapped_ibs`]).
    pub skipped_ibs: Vec<SkippedIb>,
    /// Hang forensics: one entry per queue still waiting at the end.
    pub stalls: Vec<QueueForensics>,
}

/// An indirect buffer the replay skipped (`--skip-unmapped-ibs`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SkippedIb {
    /// Queue name (`gfx`, `comp0.0`, …).
    pub queue: String,
    /// Address of the buffer the packet jumped to.
    pub address: u64,
    pub size_dw: u32,
    /// Address of the INDIRECT_BUFFER packet.
    pub packet: u64,
}

/// A program address some draw or dispatch bound, with its container.
#[derive(Clone, Debug, PartialEq)]
pub struct BoundProgram {
    pub address: u64,
    /// The first stage it was bound to.
    pub stage: ProgramStage,
    /// The registered container, or `None` for raw code.
    pub container: Option<Arc<AgcShader>>,
}

/// The result of [`replay`].
#[derive(Clone, Debug, Default)]
pub struct ReplayOutcome {
    pub summary: ReplaySummary,
    /// Every program address bound at a draw or dispatch, in address order.
    pub programs: Vec<BoundProgram>,
    /// The deterministic event log, one line per effect (empty unless
    /// [`ReplayOptions::log`]).
    pub log: Vec<String>,
    /// Chrome/Perfetto trace-event JSON, when asked for.
    pub timeline: Option<String>,
    /// Bytes of guest memory pages the replay had to copy because packets or
    /// host writes wrote them (everything else is the trace file's bytes).
    pub written_page_bytes: usize,
    /// The stall the replay ended in, if it did (the summary's `deadlock`
    /// error and, after [`replay_with_progress`], its `stalls`).
    pub stall: Option<StallReport>,
    /// Submissions a processor error stopped, with the packet it stopped at.
    pub failures: Vec<Failure>,
}

impl ReplayOutcome {
    /// True when the replay met no error.
    pub fn succeeded(&self) -> bool {
        self.summary.errors.is_empty()
    }
}

/// One packet on the timeline: (global packet clock, queue, opcode or type name).
type TimelinePacket = (u64, u32, PacketName);

/// The replay's backend: the recording log plus the timeline's packet clock.
#[derive(Default)]
struct ReplayBackend {
    /// The event log, when asked for.
    log: Option<RecordingBackend>,
    clock: u64,
    timeline: Option<Vec<TimelinePacket>>,
    programs: BTreeMap<u64, BoundProgram>,
    /// The address last recorded per stage (graphics stages, then compute):
    /// a draw that binds the same programs as the one before costs no lookup.
    last_bound: [u64; 5],
    /// Packets run since the observer last looked, when one watches.
    executed: Option<Vec<(QueueId, Header, PacketLocation)>>,
    skipped_ibs: Vec<SkippedIb>,
    /// Packets each queue ran: the number of the packet running now, which
    /// each log line carries (`gfx #12 draw …`).
    packets: Vec<u64>,
}

impl ReplayBackend {
    /// Lets the recorder log an effect of `queue`'s running packet, then
    /// numbers the new lines with that packet's index (as `pm4 state --at
    /// #N` takes it).
    fn log_with(&mut self, queue: QueueId, f: impl FnOnce(&mut RecordingBackend)) {
        let Some(log) = &mut self.log else { return };
        let before = log.lines.len();
        f(log);
        let index = self.packets.get(queue.0 as usize).copied().unwrap_or(0);
        for line in log.lines.iter_mut().skip(before) {
            if let Some(space) = line.find(' ') {
                line.insert_str(space, &format!(" #{index}"));
            }
        }
    }

    fn bind(&mut self, slot: usize, stage: ProgramStage, binding: &ProgramBinding) {
        if binding.address == 0 {
            return;
        }
        if let Some(last) = self.last_bound.get_mut(slot) {
            if *last == binding.address {
                return;
            }
            *last = binding.address;
        }
        self.programs.entry(binding.address).or_insert_with(|| BoundProgram {
            address: binding.address,
            stage,
            container: binding.container.clone(),
        });
    }
}

impl Backend for ReplayBackend {
    fn packet(&mut self, queue: QueueId, header: Header, location: &PacketLocation) {
        self.clock += 1;
        if self.packets.is_empty() {
            self.packets.resize(QueueId::COUNT as usize, 0);
        }
        if let Some(n) = self.packets.get_mut(queue.0 as usize) {
            *n += 1;
        }
        if let Some(t) = &mut self.timeline {
            t.push((self.clock, queue.0, header.name()));
        }
        if let Some(e) = &mut self.executed {
            e.push((queue, header, *location));
        }
    }
    fn skipped_indirect_buffer(&mut self, queue: QueueId, location: &PacketLocation, address: u64, size_dw: u32) {
        self.skipped_ibs.push(SkippedIb { queue: queue.to_string(), address, size_dw, packet: location.address() });
        self.log_with(queue, |l| l.skipped_indirect_buffer(queue, location, address, size_dw));
    }
    fn draw(&mut self, d: &Draw<'_>) {
        for (slot, (stage, binding)) in ProgramStage::GRAPHICS.iter().zip(d.programs.iter()).enumerate() {
            self.bind(slot, *stage, binding);
        }
        self.log_with(d.queue, |l| l.draw(d));
    }
    fn dispatch(&mut self, d: &Dispatch<'_>) {
        self.bind(ProgramStage::GRAPHICS.len(), ProgramStage::Cs, d.program);
        self.log_with(d.queue, |l| l.dispatch(d));
    }
    fn event(&mut self, e: &Event) {
        self.log_with(e.queue, |l| l.event(e));
    }
    fn cache_action(&mut self, q: QueueId, a: &CacheAction) {
        self.log_with(q, |l| l.cache_action(q, a));
    }
    fn fence(&mut self, f: &Fence) {
        self.log_with(f.queue, |l| l.fence(f));
    }
    fn flip(&mut self, f: &Flip) {
        self.log_with(f.queue, |l| l.flip(f));
    }
    fn marker(&mut self, q: QueueId, m: &Marker<'_>) {
        self.log_with(q, |l| l.marker(q, m));
    }
    fn host_command(&mut self, q: QueueId, code: u32, payload: &[u32]) {
        self.log_with(q, |l| l.host_command(q, code, payload));
    }
    fn not_emulated(&mut self, p: &NotEmulated) {
        self.log_with(p.queue, |l| l.not_emulated(p));
    }
    fn unknown_packet(&mut self, r: &UnknownPacket) {
        self.log_with(QueueId(r.queue), |l| l.unknown_packet(r));
    }
    fn sample_event(
        &mut self,
        queue: QueueId,
        kind: SampleKind,
        address: u64,
        render_backends: u32,
        memory: &dyn GuestMemory,
    ) -> Result<(), MemoryError> {
        if self.log.is_none() {
            return crate::backend::write_default_sample(kind, address, render_backends, memory);
        }
        let mut result = Ok(());
        self.log_with(queue, |l| result = l.sample_event(queue, kind, address, render_backends, memory));
        result
    }
}

fn error(kind: &str, message: impl Into<String>) -> ReplayErrorEntry {
    ReplayErrorEntry { kind: kind.to_string(), message: message.into() }
}

fn gpu_error_entry(e: &GpuError) -> ReplayErrorEntry {
    let kind = match e {
        GpuError::Processor { source, .. } => source.kind(),
        GpuError::Deadlock(_) => "deadlock",
        GpuError::HostWrite { .. } => "host_write",
        _ => "gpu",
    };
    error(kind, e.to_string())
}

/// Replays `trace` and summarises it. Problems met while replaying are in
/// the summary's `errors`; the trace itself was validated when it was read.
pub fn replay(trace: &Trace, options: &ReplayOptions) -> ReplayOutcome {
    replay_with_progress(trace, options, &mut |_| {})
}

/// [`replay`], calling `progress(chunks_done)` as it goes through the trace's
/// events. When the replay ends stalled or a submission fails, the trace is
/// replayed a second time under a [`forensics`] observer and the summary's
/// `stalls` say what each stuck queue waits on (or failed at) and who last
/// wrote what it waits on.
///
/// A timeline comes from a second replay that runs one packet per
/// scheduler slice (so each wait's releasing write is seen: see
/// [`crate::diagnostics::timeline`]); the summary and the log are the
/// plain replay's.
pub fn replay_with_progress(trace: &Trace, options: &ReplayOptions, progress: &mut dyn FnMut(usize)) -> ReplayOutcome {
    let plain = ReplayOptions { timeline: false, ..options.clone() };
    let mut outcome = replay_observed(trace, &plain, progress, None);
    let stall = outcome.stall.take();
    if stall.is_some() || !outcome.failures.is_empty() {
        outcome.summary.stalls = forensics::investigate(trace, options, stall.as_ref(), &outcome.failures);
    }
    if options.timeline {
        let timeline = ReplayOptions { log: false, memory: Vec::new(), registers: Vec::new(), ..options.clone() };
        outcome.timeline = replay_observed(trace, &timeline, &mut |_| {}, None).timeline;
    }
    outcome
}

/// The observed replay's state between steps.
struct Observed<'a> {
    observer: Option<&'a mut dyn ReplayObserver>,
    /// The timeline's waits, when a timeline is asked for.
    waits: Option<WaitTracker>,
    /// Packets each queue ran so far.
    counts: [u64; QueueId::COUNT as usize],
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

/// Runs the GPU as far as it can; with an observer, one packet per step,
/// the observer called after each.
fn run_gpu(gpu: &Gpu<SparseMemory, ReplayBackend>, observed: &mut Option<Observed<'_>>) -> Result<RunStatus, GpuError> {
    let Some(o) = observed else { return gpu.run_until_stalled() };
    if o.stopped {
        return Ok(RunStatus::Idle);
    }
    loop {
        let status = gpu.run_slices(1)?;
        let ran = gpu.with_backend(|b| b.executed.as_mut().map(std::mem::take).unwrap_or_default());
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

/// [`replay_with_progress`] with an optional observer that sees every packet
/// with its queue's registers and the guest memory right after it ran. With
/// an observer, or a timeline, each scheduler slice runs one packet (so the
/// interleaving of queues can differ from a plain replay's), and the
/// observer can stop the replay early (the summary then covers what ran).
/// One pass: no stall forensics.
pub fn replay_observed(
    trace: &Trace,
    options: &ReplayOptions,
    progress: &mut dyn FnMut(usize),
    observer: Option<&mut dyn ReplayObserver>,
) -> ReplayOutcome {
    let mut config = options.gpu.clone();
    let observe = observer.is_some() || options.timeline;
    // A backend call per packet only when something uses it: the log's
    // packet numbers, the timeline, an observer. The summary's counts come
    // from the processors' own counters.
    config.processor.report_packets |= options.log || observe;
    if observe {
        config.slice_packets = 1;
    }
    let backend = ReplayBackend {
        log: options.log.then(RecordingBackend::new),
        timeline: options.timeline.then(Vec::new),
        executed: observe.then(Vec::new),
        ..Default::default()
    };
    let mut observed = observe.then(|| Observed {
        observer,
        waits: options.timeline.then(WaitTracker::new),
        counts: [0; QueueId::COUNT as usize],
        submitted: [false; QueueId::COUNT as usize],
        suspended: [false; QueueId::COUNT as usize],
        stopped: false,
    });
    let gpu = Gpu::deterministic(SparseMemory::new(), backend, config);
    let mut errors = Vec::new();
    let mut submissions: Vec<Submission> = Vec::new();
    let mut per_queue = [0u64; QueueId::COUNT as usize];
    let mut started = false;

    // Runs the GPU as far as it can before a host-side effect.
    let settle = |gpu: &Gpu<SparseMemory, ReplayBackend>,
                  errors: &mut Vec<ReplayErrorEntry>,
                  observed: &mut Option<Observed<'_>>| {
        if let Err(e) = run_gpu(gpu, observed) {
            errors.push(gpu_error_entry(&e));
        }
    };

    for (done, event) in trace.events().iter().enumerate() {
        progress(done);
        if observed.as_ref().is_some_and(|o| o.stopped) {
            break;
        }
        if !started && matches!(event, TraceEvent::Submit { .. }) {
            started = true;
            apply_patches(&gpu, &options.patches, &mut errors);
            if let Some(o) = &mut observed {
                gpu.with_memory_ref(|m| o.each(|ob| ob.start(m)));
            }
        }
        match event {
            TraceEvent::MemRegion { .. } | TraceEvent::ZeroRegion { .. } => {
                let r = gpu.with_memory(|m| trace.map_region(m, event));
                if let Err(e) = r {
                    errors.push(error("memory", format!("chunk {}: mapping failed: {e}", event.chunk())));
                }
            }
            TraceEvent::HostWrite { address, data, chunk } => {
                settle(&gpu, &mut errors, &mut observed);
                if let Some(o) = &mut observed {
                    o.each(|ob| ob.host_write(*chunk, *address, data.len()));
                }
                let bytes = trace.bytes_of(data);
                match gpu.write_memory(*address, bytes) {
                    Ok(_) => {}
                    Err(e) => errors.push(gpu_error_entry(&e)),
                }
            }
            TraceEvent::Shader { header_address, code_address, relocated, chunk } => {
                settle(&gpu, &mut errors, &mut observed);
                let r = gpu.with_shared(|m, _, s| s.create(m, *header_address, *code_address, *relocated).map(|_| ()));
                if let Err(e) = r {
                    errors.push(error("shader", format!("chunk {chunk}: shader at {header_address:#x}: {e}")));
                }
            }
            TraceEvent::Submit { queue, address, size_dw, .. } => {
                match gpu.submit(QueueId(*queue), *address, *size_dw) {
                    Ok(s) => submissions.push(s),
                    Err(e) => errors.push(gpu_error_entry(&e)),
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
    progress(trace.events().len());
    if !started {
        apply_patches(&gpu, &options.patches, &mut errors);
    }
    let mut stall = None;
    match run_gpu(&gpu, &mut observed) {
        Ok(RunStatus::Stalled(report)) => {
            errors.push(error("deadlock", report.to_string()));
            stall = Some(report);
        }
        Ok(_) => {}
        Err(e) => errors.push(gpu_error_entry(&e)),
    }
    let mut failures = Vec::new();
    for s in &submissions {
        if let Some(Err(e)) = s.poll() {
            if !matches!(e, GpuError::Deadlock(_) | GpuError::Pending) {
                errors.push(gpu_error_entry(&e));
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
            Err(e) => errors.push(error("memory", format!("--mem {}: {e}", query.label))),
        }
    }
    for query in &options.registers {
        match gpu.with_processor(query.queue, |p| p.registers().get(query.register)) {
            Ok(v) => {
                summary.registers.insert(query.label.clone(), v);
            }
            Err(e) => errors.push(gpu_error_entry(&e)),
        }
    }
    summary.errors = errors;

    let (log, timeline, programs, skipped_ibs) = gpu.with_backend(|b| {
        (
            b.log.take().map(|l| l.lines).unwrap_or_default(),
            b.timeline.take(),
            std::mem::take(&mut b.programs),
            std::mem::take(&mut b.skipped_ibs),
        )
    });
    summary.skipped_ibs = skipped_ibs;
    let mut waits = observed.and_then(|o| o.waits).unwrap_or_default();
    waits.finish();
    let timeline = timeline.map(|packets| timeline_json(&packets, &waits.spans));
    let written_page_bytes = gpu.with_memory_ref(|m| m.allocated_page_bytes());
    ReplayOutcome {
        summary,
        programs: programs.into_values().collect(),
        log,
        timeline,
        written_page_bytes,
        stall,
        failures,
    }
}

/// Writes the `--patch` dwords (before the first submission).
fn apply_patches(gpu: &Gpu<SparseMemory, ReplayBackend>, patches: &[(u64, u32)], errors: &mut Vec<ReplayErrorEntry>) {
    for &(address, value) in patches {
        if let Err(e) = gpu.with_memory(|m| m.write_u32(address, value)) {
            errors.push(error("memory", format!("--patch {address:#x}={value:#x}: {e}")));
        }
    }
}

/// Chrome/Perfetto trace-event JSON: one process, one thread per queue,
/// one 1-µs complete event per packet at the global packet clock, and each
/// wait as a span with a flow arrow from the packet that released it
/// ([`crate::diagnostics::timeline`]).
fn timeline_json(packets: &[TimelinePacket], waits: &[WaitSpan]) -> String {
    let mut out = String::from("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    let mut queues: Vec<u32> = packets.iter().map(|p| p.1).chain(waits.iter().map(|w| w.queue.0)).collect();
    queues.sort_unstable();
    queues.dedup();
    let mut first = true;
    for q in &queues {
        let sep = if first { "" } else { ",\n" };
        first = false;
        let _ = write!(
            out,
            "{sep}{{\"ph\":\"M\",\"pid\":1,\"tid\":{q},\"name\":\"thread_name\",\"args\":{{\"name\":\"{}\"}}}}",
            QueueId(*q)
        );
    }
    for (ts, q, name) in packets {
        let sep = if first { "" } else { ",\n" };
        first = false;
        let _ = write!(out, "{sep}{{\"ph\":\"X\",\"pid\":1,\"tid\":{q},\"ts\":{ts},\"dur\":1,\"name\":\"{name}\"}}");
    }
    let mut events = Vec::new();
    for (id, w) in waits.iter().enumerate() {
        w.write_events(id as u64 + 1, &mut events);
    }
    for e in events {
        let sep = if first { "" } else { ",\n" };
        first = false;
        let _ = write!(out, "{sep}{e}");
    }
    out.push_str("\n]}\n");
    out
}

/// `len` bytes of guest memory at `address`.
fn read_range(memory: &dyn GuestMemory, address: u64, len: u64) -> Result<Vec<u8>, MemoryError> {
    let mut bytes = vec![0u8; usize::try_from(len).unwrap_or(0)];
    memory.read_bytes(address, &mut bytes)?;
    Ok(bytes)
}

/// `one` for 1, else `many`.
fn plural(n: u64, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// The summary as text for people.
pub fn format_summary(s: &ReplaySummary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "gpu {}: {} {}, {} {}",
        s.gpu,
        s.submissions,
        plural(s.submissions, "submission", "submissions"),
        s.packets.total,
        plural(s.packets.total, "packet", "packets")
    );
    let _ = writeln!(
        out,
        "draws {}  dispatches {}  waits {}  fences {}  skipped {}",
        s.draws, s.dispatches, s.waits, s.fences, s.skipped
    );
    for q in &s.queues {
        let _ = writeln!(
            out,
            "queue {:<8} {:>5} {:<11} {:>9} {:<7} {:>10} {}",
            q.name,
            q.submissions,
            plural(q.submissions, "submission", "submissions"),
            q.packets,
            plural(q.packets, "packet", "packets"),
            q.dwords,
            plural(q.dwords, "dword", "dwords")
        );
    }
    let mut by_count: Vec<(&String, &u64)> = s.packets.by_opcode.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let _ = writeln!(out, "packets by opcode:");
    for (name, n) in by_count {
        let _ = writeln!(out, "  {name:<34} {n:>9}");
    }
    if s.not_emulated.is_empty() {
        let _ = writeln!(out, "not emulated: none");
    } else {
        let _ = writeln!(out, "not emulated:");
        for (name, n) in &s.not_emulated {
            let _ = writeln!(out, "  {name:<34} {n:>9}");
        }
    }
    if s.unknown_packets.is_empty() {
        let _ = writeln!(out, "unknown packets: none");
    }
    for u in &s.unknown_packets {
        let _ = writeln!(out, "unknown packet {:#010x} on {} at {:#x}:", u.header, QueueId(u.queue), u.address);
        let _ = write!(out, "{}", u.dump);
    }
    for (label, hex) in &s.memory {
        let _ = writeln!(out, "memory {label}: {hex}");
    }
    for (label, value) in &s.registers {
        let _ = writeln!(out, "register {label} = {value:#010x}");
    }
    for ib in &s.skipped_ibs {
        let _ = writeln!(
            out,
            "skipped indirect buffer on {} at {:#x}: {:#x}, {} {} not in the trace",
            ib.queue,
            ib.packet,
            ib.address,
            ib.size_dw,
            plural(u64::from(ib.size_dw), "dword", "dwords")
        );
    }
    for stall in &s.stalls {
        let _ = write!(out, "{stall}");
    }
    if s.errors.is_empty() {
        let _ = writeln!(out, "errors: none");
    }
    for e in &s.errors {
        let _ = writeln!(out, "error ({}): {}", e.kind, e.message);
    }
    out
}
