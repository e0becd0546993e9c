//! Trace replay: every chunk of a trace applied in order to a deterministic
//! [`Gpu`], and a summary of what the command processors did.
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
//! and the program map. [`replay_to`] streams the log and the timeline to
//! writers as the replay goes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use std::sync::Arc;

use crate::backend::{
    Backend, CacheAction, Dispatch, Draw, Event, Fence, Flip, Marker, NotEmulated, ProgramBinding, ProgramStage,
    QueueId, RecordingBackend, SampleKind, UnknownPacket,
};
use crate::gpu::{Gpu, GpuConfig, GpuError, RunStatus, Submission};
use crate::limits::{Limit, LimitExceeded, Limits, RecordOut, Records};
use crate::memory::{GuestMemory, MemoryError, SparseMemory};
use crate::packet::{Header, Opcode, PacketLocation, PacketType};
use crate::processor::Pm4Error;
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
    /// Parses `ADDR:LEN` (each decimal or 0x-hex). LEN is capped at 1 MiB.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (a, l) = text.split_once(':').ok_or_else(|| format!("memory range '{text}' is not ADDR:LEN"))?;
        let address = parse_number(a).ok_or_else(|| format!("bad address '{a}' in '{text}'"))?;
        let len = parse_number(l).ok_or_else(|| format!("bad length '{l}' in '{text}'"))?;
        if len > 1 << 20 {
            return Err(format!("memory range '{text}' is longer than 1 MiB"));
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

/// Parses a queue name: `gfx`, `compP.Q` or a number 0..=56.
pub fn parse_queue(text: &str) -> Option<QueueId> {
    if text.eq_ignore_ascii_case("gfx") || text.eq_ignore_ascii_case("graphics") {
        return Some(QueueId::GRAPHICS);
    }
    if let Some(rest) = text.strip_prefix("comp") {
        let (p, q) = rest.split_once('.')?;
        return QueueId::compute(p.parse().ok()?, q.parse().ok()?);
    }
    let n = u32::try_from(parse_number(text)?).ok()?;
    (n < QueueId::COUNT).then_some(QueueId(n))
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
    /// GPU settings (deterministic mode is always used; each submission's
    /// [`ProcessorConfig::work_budget`](crate::processor::ProcessorConfig::work_budget)
    /// is [`Limits::max_packets`]).
    pub gpu: GpuConfig,
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
    /// Program bindings not kept in [`programs`](Self::programs) because it
    /// held [`Limits::max_programs`] addresses already.
    pub programs_not_kept: u64,
    /// The event log stopped at [`Limits::max_events`] records.
    pub log_truncated: bool,
    /// The timeline stopped at [`Limits::max_events`] records.
    pub timeline_truncated: bool,
}

impl ReplayOutcome {
    /// True when the replay met no error.
    pub fn succeeded(&self) -> bool {
        self.summary.errors.is_empty()
    }
}

/// The event log: lines formatted by a [`RecordingBackend`], moved into a
/// bounded collector after each effect.
struct EventLog {
    recorder: RecordingBackend,
    records: Records,
}

impl EventLog {
    /// Lets the recorder format one effect, then collects its lines.
    fn with(&mut self, f: impl FnOnce(&mut RecordingBackend)) {
        if !self.records.accepts() {
            return;
        }
        f(&mut self.recorder);
        for line in self.recorder.lines.drain(..) {
            if !self.records.record_line(line, |n| format!("truncated at {n} events")) {
                break;
            }
        }
        self.recorder.lines.clear();
        self.recorder.unknown.clear();
    }
}

/// The timeline: Chrome/Perfetto trace-event JSON, one process, one thread
/// per queue, one 1-µs complete event per packet at the global packet clock,
/// written as the packets run; thread names and the closing bracket are
/// written by [`Timeline::finish`].
struct Timeline {
    records: Records,
    /// Queues that have an event (bit per queue).
    queues: u64,
}

impl Timeline {
    fn new(out: RecordOut, max: u64) -> Self {
        let mut records = Records::new(out, max);
        records.raw("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
        Timeline { records, queues: 0 }
    }

    fn packet(&mut self, clock: u64, queue: u32, name: &str) {
        if !self.records.accepts() {
            return;
        }
        let sep = if self.records.count() == 0 { "" } else { ",\n" };
        let event =
            format!("{sep}{{\"ph\":\"X\",\"pid\":1,\"tid\":{queue},\"ts\":{clock},\"dur\":1,\"name\":\"{name}\"}}");
        if self.records.record(&event, |n| {
            format!("{sep}{{\"ph\":\"i\",\"s\":\"g\",\"pid\":1,\"tid\":0,\"ts\":{clock},\"name\":\"truncated at {n} events\"}}")
        }) {
            self.queues |= 1u64.checked_shl(queue).unwrap_or(0);
        }
    }

    fn finish(mut self) -> (RecordOut, Option<std::io::Error>, bool) {
        let mut first = self.records.count() == 0 && !self.records.truncated();
        for q in 0..QueueId::COUNT {
            if self.queues & (1u64 << q) != 0 {
                let sep = if first { "" } else { ",\n" };
                first = false;
                self.records.raw(&format!(
                    "{sep}{{\"ph\":\"M\",\"pid\":1,\"tid\":{q},\"name\":\"thread_name\",\"args\":{{\"name\":\"{}\"}}}}",
                    QueueId(q)
                ));
            }
        }
        self.records.raw("\n]}\n");
        let truncated = self.records.truncated();
        let (out, error) = self.records.finish();
        (out, error, truncated)
    }
}

/// The replay's backend: the event log, the timeline's packet clock, the
/// program map and the count of backend draws and dispatches (the work of
/// multi-draw packets).
struct ReplayBackend {
    /// The event log, when asked for.
    log: Option<EventLog>,
    clock: u64,
    timeline: Option<Timeline>,
    programs: BTreeMap<u64, BoundProgram>,
    max_programs: usize,
    programs_not_kept: u64,
    /// Draw and dispatch callbacks (one per sub-draw).
    draw_calls: u64,
}

impl ReplayBackend {
    fn bind(&mut self, stage: ProgramStage, binding: &ProgramBinding) {
        if binding.address != 0 && !self.programs.contains_key(&binding.address) {
            if self.programs.len() >= self.max_programs {
                self.programs_not_kept += 1;
                return;
            }
            self.programs.insert(
                binding.address,
                BoundProgram { address: binding.address, stage, container: binding.container.clone() },
            );
        }
    }
}

fn packet_name(header: Header) -> &'static str {
    match header.packet_type() {
        PacketType::Type3 => header.opcode().name().unwrap_or("UNKNOWN"),
        PacketType::Type2 => "TYPE2",
        PacketType::Type0 | PacketType::Type1 => "TYPE0",
    }
}

impl Backend for ReplayBackend {
    fn packet(&mut self, queue: QueueId, header: Header, _: &PacketLocation) {
        self.clock += 1;
        if let Some(t) = &mut self.timeline {
            t.packet(self.clock, queue.0, packet_name(header));
        }
    }
    fn draw(&mut self, d: &Draw<'_>) {
        self.draw_calls += 1;
        for (stage, binding) in ProgramStage::GRAPHICS.iter().zip(d.programs.iter()) {
            self.bind(*stage, binding);
        }
        if let Some(log) = &mut self.log {
            log.with(|rec| rec.draw(d))
        }
    }
    fn dispatch(&mut self, d: &Dispatch<'_>) {
        self.draw_calls += 1;
        self.bind(ProgramStage::Cs, d.program);
        if let Some(log) = &mut self.log {
            log.with(|rec| rec.dispatch(d))
        }
    }
    fn event(&mut self, e: &Event) {
        if let Some(log) = &mut self.log {
            log.with(|rec| rec.event(e))
        }
    }
    fn cache_action(&mut self, q: QueueId, a: &CacheAction) {
        if let Some(log) = &mut self.log {
            log.with(|rec| rec.cache_action(q, a))
        }
    }
    fn fence(&mut self, f: &Fence) {
        if let Some(log) = &mut self.log {
            log.with(|rec| rec.fence(f))
        }
    }
    fn flip(&mut self, f: &Flip) {
        if let Some(log) = &mut self.log {
            log.with(|rec| rec.flip(f))
        }
    }
    fn marker(&mut self, q: QueueId, m: &Marker<'_>) {
        if let Some(log) = &mut self.log {
            log.with(|rec| rec.marker(q, m))
        }
    }
    fn host_command(&mut self, q: QueueId, code: u32, payload: &[u32]) {
        if let Some(log) = &mut self.log {
            log.with(|rec| rec.host_command(q, code, payload))
        }
    }
    fn not_emulated(&mut self, p: &NotEmulated) {
        if let Some(log) = &mut self.log {
            log.with(|rec| rec.not_emulated(p))
        }
    }
    fn unknown_packet(&mut self, r: &UnknownPacket) {
        if let Some(log) = &mut self.log {
            log.with(|rec| rec.unknown_packet(r))
        }
    }
    fn sample_event(
        &mut self,
        queue: QueueId,
        kind: SampleKind,
        address: u64,
        render_backends: u32,
        memory: &dyn GuestMemory,
    ) -> Result<(), MemoryError> {
        match &mut self.log {
            Some(log) if log.records.accepts() => {
                let mut result = Ok(());
                log.with(|rec| result = rec.sample_event(queue, kind, address, render_backends, memory));
                result
            }
            _ => crate::backend::write_default_sample(kind, address, render_backends, memory),
        }
    }
}

fn error(kind: &str, message: impl Into<String>) -> ReplayErrorEntry {
    ReplayErrorEntry { kind: kind.to_string(), message: message.into() }
}

fn gpu_error_entry(e: &GpuError) -> ReplayErrorEntry {
    let written_limit = match e {
        GpuError::Processor { source: Pm4Error::Memory { source, .. }, .. } | GpuError::HostWrite { source, .. } => {
            matches!(source, MemoryError::WrittenLimit { .. })
        }
        _ => false,
    };
    if written_limit {
        let limit = Limit::WrittenMemory;
        return error("limit", format!("{e} ({}; raise it with {})", limit.field(), limit.option()));
    }
    if let GpuError::Processor { source: Pm4Error::WorkBudgetExhausted { .. }, .. } = e {
        // A submission's budget is the replay's packet limit.
        let limit = Limit::Packets;
        return error("limit", format!("{e} ({}; raise it with {})", limit.field(), limit.option()));
    }
    let kind = match e {
        GpuError::Processor { source, .. } => source.kind(),
        GpuError::Deadlock(_) => "deadlock",
        GpuError::HostWrite { .. } => "host_write",
        _ => "gpu",
    };
    error(kind, e.to_string())
}

/// Scheduler steps between two checks of the work limits: a replay stops
/// at most this many slices past a limit (each slice at most
/// [`GpuConfig::slice_packets`] packets), and the check costs a few locks
/// per 16 slices.
const CHECK_SLICES: u64 = 16;

type ReplayGpu = Gpu<SparseMemory, ReplayBackend>;

/// Why a bounded run stopped early.
enum Stop {
    Gpu(GpuError),
    Limit(LimitExceeded),
}

/// Runs the GPU until it is idle or stalled, checking the replay's work
/// limits between slices.
fn run_bounded(gpu: &ReplayGpu, limits: &Limits) -> Result<RunStatus, Stop> {
    loop {
        let status = gpu.run_slices(CHECK_SLICES).map_err(Stop::Gpu)?;
        let stats = gpu.stats();
        let draw_calls = gpu.with_backend(|b| b.draw_calls);
        let written = gpu.with_memory_ref(|m| m.bytes_written());
        let checks = [
            (Limit::Packets, stats.packets.saturating_add(draw_calls), limits.max_packets),
            (Limit::Dwords, stats.dwords, limits.max_dwords),
            (Limit::WriteBytes, written, limits.max_write_bytes),
        ];
        if let Some(&(limit, _, value)) = checks.iter().find(|(_, used, max)| used > max) {
            return Err(Stop::Limit(LimitExceeded { limit, value }));
        }
        if status != RunStatus::Running {
            return Ok(status);
        }
    }
}

/// Replays `trace` and summarises it. Problems met while replaying are in
/// the summary's `errors`; the trace itself was validated when it was read.
pub fn replay(trace: &Trace, options: &ReplayOptions) -> ReplayOutcome {
    replay_with_progress(trace, options, &mut |_| {})
}

/// [`replay`], calling `progress(chunks_done)` as it goes through the trace's
/// events.
pub fn replay_with_progress(trace: &Trace, options: &ReplayOptions, progress: &mut dyn FnMut(usize)) -> ReplayOutcome {
    replay_to(trace, options, ReplayOutputs::default(), progress)
}

/// [`replay_with_progress`], streaming the event log and the timeline to
/// `outputs` as the replay goes (each given writer replaces the in-memory
/// [`ReplayOutcome::log`] / [`ReplayOutcome::timeline`] and is asked for
/// whatever [`ReplayOptions::log`] / [`ReplayOptions::timeline`] say). A
/// write error ends that output and is reported in the summary's errors
/// (kind `output`).
pub fn replay_to(
    trace: &Trace,
    options: &ReplayOptions,
    outputs: ReplayOutputs,
    progress: &mut dyn FnMut(usize),
) -> ReplayOutcome {
    let limits = options.limits;
    let mut config = options.gpu.clone();
    config.processor.report_packets = true;
    // A submission may run what the whole replay may, no more.
    config.processor.work_budget = limits.max_packets.max(1);
    let stream = |w: Box<dyn std::io::Write + Send>| RecordOut::Stream(std::io::BufWriter::new(w));
    let log = match outputs.log {
        Some(w) => Some(stream(w)),
        None => options.log.then(|| RecordOut::Lines(Vec::new())),
    };
    let timeline = match outputs.timeline {
        Some(w) => Some(stream(w)),
        None => options.timeline.then(|| RecordOut::Text(String::new())),
    };
    let backend = ReplayBackend {
        log: log
            .map(|out| EventLog { recorder: RecordingBackend::new(), records: Records::new(out, limits.max_events) }),
        clock: 0,
        timeline: timeline.map(|out| Timeline::new(out, limits.max_events)),
        programs: BTreeMap::new(),
        max_programs: limits.max_programs,
        programs_not_kept: 0,
        draw_calls: 0,
    };
    let memory = SparseMemory::new();
    memory.set_written_limit(limits.max_written_memory);
    let gpu = Gpu::deterministic(memory, backend, config);
    let mut errors = Vec::new();
    let mut submissions: Vec<Submission> = Vec::new();
    let mut host_writes = Vec::new();
    let mut per_queue = [0u64; QueueId::COUNT as usize];
    let mut stopped = false;

    // Runs the GPU as far as it can (before a host-side effect, or at the
    // end); a limit stops the replay.
    let settle =
        |gpu: &ReplayGpu, errors: &mut Vec<ReplayErrorEntry>, stopped: &mut bool| match run_bounded(gpu, &limits) {
            Ok(RunStatus::Stalled(report)) => Some(report),
            Ok(_) => None,
            Err(Stop::Gpu(e)) => {
                errors.push(gpu_error_entry(&e));
                None
            }
            Err(Stop::Limit(e)) => {
                errors.push(error("limit", e.to_string()));
                for q in 0..QueueId::COUNT {
                    let _ = gpu.abort(QueueId(q));
                }
                *stopped = true;
                None
            }
        };

    for (done, event) in trace.events().iter().enumerate() {
        progress(done);
        match event {
            TraceEvent::MemRegion { .. } | TraceEvent::ZeroRegion { .. } => {
                let r = gpu.with_memory(|m| trace.map_region(m, event));
                if let Err(e) = r {
                    errors.push(error("memory", format!("chunk {}: mapping failed: {e}", event.chunk())));
                }
            }
            TraceEvent::HostWrite { address, data, .. } => {
                settle(&gpu, &mut errors, &mut stopped);
                if stopped {
                    break;
                }
                let bytes = trace.bytes_of(data);
                match gpu.write_memory(*address, bytes) {
                    Ok(handle) => host_writes.push(handle),
                    Err(e) => errors.push(gpu_error_entry(&e)),
                }
            }
            TraceEvent::Shader { header_address, code_address, relocated, chunk } => {
                settle(&gpu, &mut errors, &mut stopped);
                if stopped {
                    break;
                }
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
            }
            TraceEvent::Note { .. } | TraceEvent::Ancillary { .. } => {}
        }
    }
    progress(trace.events().len());
    if !stopped {
        if let Some(report) = settle(&gpu, &mut errors, &mut stopped) {
            errors.push(error("deadlock", report.to_string()));
        }
    }
    for s in &submissions {
        if let Some(Err(e)) = s.poll() {
            if !matches!(e, GpuError::Deadlock(_) | GpuError::Pending | GpuError::Aborted { .. }) {
                errors.push(gpu_error_entry(&e));
            }
        }
    }
    for w in &host_writes {
        if let Some(Err(e)) = w.poll() {
            errors.push(gpu_error_entry(&e));
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

    let (log, timeline, programs, programs_not_kept) =
        gpu.with_backend(|b| (b.log.take(), b.timeline.take(), std::mem::take(&mut b.programs), b.programs_not_kept));
    let mut outcome = ReplayOutcome {
        programs: programs.into_values().collect(),
        programs_not_kept,
        written_page_bytes: gpu.with_memory_ref(|m| m.allocated_page_bytes()),
        ..Default::default()
    };
    if let Some(log) = log {
        outcome.log_truncated = log.records.truncated();
        let (out, e) = log.records.finish();
        if let Some(e) = e {
            errors.push(error("output", format!("writing the event log: {e}")));
        }
        if let RecordOut::Lines(lines) = out {
            outcome.log = lines;
        }
    }
    if let Some(timeline) = timeline {
        let (out, e, truncated) = timeline.finish();
        outcome.timeline_truncated = truncated;
        if let Some(e) = e {
            errors.push(error("output", format!("writing the timeline: {e}")));
        }
        if let RecordOut::Text(text) = out {
            outcome.timeline = Some(text);
        }
    }
    summary.errors = errors;
    outcome.summary = summary;
    outcome
}

/// `len` bytes of guest memory at `address`.
fn read_range(memory: &dyn GuestMemory, address: u64, len: u64) -> Result<Vec<u8>, MemoryError> {
    let mut bytes = vec![0u8; usize::try_from(len).unwrap_or(0)];
    memory.read_bytes(address, &mut bytes)?;
    Ok(bytes)
}

/// The summary as text for people.
pub fn format_summary(s: &ReplaySummary) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "gpu {}: {} submissions, {} packets", s.gpu, s.submissions, s.packets.total);
    let _ = writeln!(
        out,
        "draws {}  dispatches {}  waits {}  fences {}  skipped {}",
        s.draws, s.dispatches, s.waits, s.fences, s.skipped
    );
    for q in &s.queues {
        let _ = writeln!(
            out,
            "queue {:<8} {:>5} submissions {:>9} packets {:>10} dwords",
            q.name, q.submissions, q.packets, q.dwords
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
    if s.errors.is_empty() {
        let _ = writeln!(out, "errors: none");
    }
    for e in &s.errors {
        let _ = writeln!(out, "error ({}): {}", e.kind, e.message);
    }
    out
}
