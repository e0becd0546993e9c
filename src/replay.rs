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
//! the program map and the list of skipped indirect buffers. [`replay_to`]
//! streams the log and the timeline to writers as the replay goes.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::ControlFlow;

use std::sync::Arc;

use crate::backend::{Call, Forward, ProgramBinding, ProgramStage, QueueId, RecordingBackend};
use crate::diagnostics::forensics::{self, Failure, QueueForensics};
use crate::diagnostics::timeline::{WaitSpan, WaitTracker};
use crate::diagnostics::{ExecutedPacket, ReplayObserver};
use crate::gpu::{Gpu, GpuConfig, GpuError, RunStatus, StallReport, Submission};
use crate::limits::{Limit, LimitExceeded, Limits, RecordOut, Records};
use crate::memory::{GuestMemory, MemoryError, SparseMemory};
use crate::packet::{Header, Opcode, PacketLocation, PacketName};
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
    /// What kind of error (serialised as its stable name: `memory`,
    /// `deadlock`, `host_write`, `shader`, …).
    pub kind: ReplayErrorKind,
    pub message: String,
}

/// The kind of a replay error: a processor error's kind, or a problem of
/// the replay itself. Written (`Display`, `--json`) as its stable name.
///
/// ```
/// use pm4core::replay::ReplayErrorKind;
///
/// assert_eq!(ReplayErrorKind::HostWrite.to_string(), "host_write");
/// assert!(ReplayErrorKind::Limit == "limit");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReplayErrorKind {
    /// A packet read or wrote unmapped memory, or a region could not be mapped.
    Memory,
    PacketOverrun,
    Type1Header,
    MalformedPacket,
    IbStackOverflow,
    WorkBudgetExhausted,
    SkipPastEnd,
    UnknownPacket,
    ConstantEngineBacklog,
    /// A GDS access outside the global data share.
    Gds,
    Busy,
    /// Every queue with work waits and nothing can wake it.
    Deadlock,
    /// A trace's host write could not be applied.
    HostWrite,
    /// A trace's shader could not be registered.
    Shader,
    /// A resource limit of the replay was reached.
    Limit,
    /// Writing an output (the event log) failed.
    Output,
    /// Any other GPU error.
    Gpu,
}

impl ReplayErrorKind {
    /// The stable name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::PacketOverrun => "packet_overrun",
            Self::Type1Header => "type1_header",
            Self::MalformedPacket => "malformed_packet",
            Self::IbStackOverflow => "ib_stack_overflow",
            Self::WorkBudgetExhausted => "work_budget_exhausted",
            Self::SkipPastEnd => "skip_past_end",
            Self::UnknownPacket => "unknown_packet",
            Self::ConstantEngineBacklog => "constant_engine_backlog",
            Self::Gds => "gds",
            Self::Busy => "busy",
            Self::Deadlock => "deadlock",
            Self::HostWrite => "host_write",
            Self::Shader => "shader",
            Self::Limit => "limit",
            Self::Output => "output",
            Self::Gpu => "gpu",
        }
    }

    /// The kind of a processor error.
    pub fn of(e: &Pm4Error) -> Self {
        match e {
            Pm4Error::Memory { .. } | Pm4Error::UnreadableHeader { .. } => Self::Memory,
            Pm4Error::PacketOverrun { .. } => Self::PacketOverrun,
            Pm4Error::Type1Header { .. } => Self::Type1Header,
            Pm4Error::MalformedPacket { .. } => Self::MalformedPacket,
            Pm4Error::IbStackOverflow { .. } => Self::IbStackOverflow,
            Pm4Error::WorkBudgetExhausted { .. } => Self::WorkBudgetExhausted,
            Pm4Error::SkipPastEnd { .. } => Self::SkipPastEnd,
            Pm4Error::UnknownPacket { .. } => Self::UnknownPacket,
            Pm4Error::ConstantEngineBacklog { .. } => Self::ConstantEngineBacklog,
            Pm4Error::Gds { .. } => Self::Gds,
            Pm4Error::Busy => Self::Busy,
        }
    }
}

impl std::fmt::Display for ReplayErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl PartialEq<&str> for ReplayErrorKind {
    fn eq(&self, other: &&str) -> bool {
        self.name() == *other
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for ReplayErrorKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
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
    /// Program bindings not kept in [`programs`](Self::programs) because it
    /// held [`Limits::max_programs`] addresses already.
    pub programs_not_kept: u64,
    /// The event log stopped at [`Limits::max_events`] records.
    pub log_truncated: bool,
    /// The timeline stopped at [`Limits::max_events`] packets (or waits).
    pub timeline_truncated: bool,
}

impl ReplayOutcome {
    /// True when the replay met no error.
    pub fn succeeded(&self) -> bool {
        self.summary.errors.is_empty()
    }
}

/// The timeline: Chrome/Perfetto trace-event JSON, one process, one thread
/// per queue, one 1-µs complete event per packet at the global packet clock,
/// written as the packets run; the waits (known when they end), the thread
/// names and the closing bracket are written by [`Timeline::finish`].
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

    fn separator(&self) -> &'static str {
        if self.records.count() == 0 && !self.records.truncated() {
            ""
        } else {
            ",\n"
        }
    }

    fn packet(&mut self, clock: u64, queue: u32, name: PacketName) {
        if !self.records.accepts() {
            return;
        }
        let sep = self.separator();
        let event =
            format!("{sep}{{\"ph\":\"X\",\"pid\":1,\"tid\":{queue},\"ts\":{clock},\"dur\":1,\"name\":\"{name}\"}}");
        if self.records.record(&event, |n| {
            format!("{sep}{{\"ph\":\"i\",\"s\":\"g\",\"pid\":1,\"tid\":0,\"ts\":{clock},\"name\":\"truncated at {n} events\"}}")
        }) {
            self.queues |= 1u64.checked_shl(queue).unwrap_or(0);
        }
    }

    /// Writes the wait spans (at most [`Limits::max_events`]), the thread
    /// names and the closing bracket.
    fn finish(mut self, waits: &[WaitSpan]) -> (RecordOut, Option<std::io::Error>, bool) {
        let mut events = Vec::new();
        for (id, w) in waits.iter().enumerate() {
            self.queues |= 1u64.checked_shl(w.queue.0).unwrap_or(0);
            events.clear();
            w.write_events(id as u64 + 1, &mut events);
            for e in &events {
                let sep = self.separator();
                self.records.raw(&format!("{sep}{e}"));
            }
        }
        for q in 0..QueueId::COUNT {
            if self.queues & (1u64 << q) != 0 {
                let sep = self.separator();
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
#[derive(Default)]
struct ReplayBackend {
    /// The event log (lines formatted by the recorder, then moved into a
    /// bounded collector), when asked for.
    log: Option<RecordingBackend>,
    records: Option<Records>,
    clock: u64,
    timeline: Option<Timeline>,
    programs: BTreeMap<u64, BoundProgram>,
    /// The address last recorded per stage (graphics stages, then compute):
    /// a draw that binds the same programs as the one before costs no lookup.
    last_bound: [u64; 5],
    max_programs: usize,
    programs_not_kept: u64,
    /// Most entries of `skipped_ibs` ([`Limits::max_events`]).
    max_skipped_ibs: usize,
    /// Draw and dispatch callbacks (one per sub-draw).
    draw_calls: u64,
    /// Packets run since the observer last looked, when one watches.
    executed: Option<Vec<(QueueId, Header, PacketLocation)>>,
    skipped_ibs: Vec<SkippedIb>,
    /// Packets each queue ran: the number of the packet running now, which
    /// each log line carries (`gfx #12 draw …`).
    packets: Vec<u64>,
}

impl ReplayBackend {
    fn bind(&mut self, slot: usize, stage: ProgramStage, binding: &ProgramBinding) {
        // The same program as this slot's last bind, already recorded.
        if binding.address == 0 || self.last_bound.get(slot) == Some(&binding.address) {
            return;
        }
        if !self.programs.contains_key(&binding.address) {
            if self.programs.len() >= self.max_programs {
                self.programs_not_kept += 1;
                return;
            }
            self.programs.insert(
                binding.address,
                BoundProgram { address: binding.address, stage, container: binding.container.clone() },
            );
        }
        if let Some(last) = self.last_bound.get_mut(slot) {
            *last = binding.address;
        }
    }
}

/// Every call goes to the recorder's log; the replay's own bookkeeping
/// (the packet clock, bound programs, skipped buffers) sees the calls it
/// needs afterwards.
impl Forward for ReplayBackend {
    type Target = RecordingBackend;

    /// Lets the recorder log an effect of `queue`'s running packet, then
    /// numbers the new lines with that packet's index (as `pm4 state --at
    /// #N` takes it). Lines beyond [`Limits::max_events`] are not
    /// formatted: one final "truncated at N events" line says so. Without
    /// a log the call is dropped (a sample event then writes the default
    /// record).
    #[inline]
    fn forward<R>(&mut self, queue: QueueId, call: impl FnOnce(&mut RecordingBackend) -> R) -> Option<R> {
        self.log.as_ref()?;
        self.forward_logged(queue, call)
    }

    #[inline]
    fn forwarded(&mut self, call: Call<'_>) {
        // A draw first, inline: most draws bind nothing new.
        if let Call::Draw(d) = call {
            self.draw_calls += 1;
            // Programs unchanged since this queue's previous draw were
            // recorded then (unless some could not be kept): nothing new.
            if d.changed & crate::processor::state_group::PROGRAMS != 0 || self.programs_not_kept != 0 {
                self.bind_draw(d);
            }
            return;
        }
        self.forwarded_other(call);
    }
}

impl ReplayBackend {
    /// [`Forward::forward`] with a log: out of line, so that the call
    /// without one (the replay's usual case, once per draw) stays small.
    #[inline(never)]
    fn forward_logged<R>(&mut self, queue: QueueId, call: impl FnOnce(&mut RecordingBackend) -> R) -> Option<R> {
        let (Some(log), Some(records)) = (&mut self.log, &mut self.records) else { return None };
        if !records.accepts() {
            return None;
        }
        let result = call(log);
        let index = self.packets.get(queue.0 as usize).copied().unwrap_or(0);
        for mut line in log.lines.drain(..) {
            if let Some(space) = line.find(' ') {
                line.insert_str(space, &format!(" #{index}"));
            }
            if !records.record_line(line, |n| format!("truncated at {n} events")) {
                break;
            }
        }
        log.lines.clear();
        log.unknown.clear();
        Some(result)
    }

    /// Records the programs a draw binds.
    #[inline(never)]
    fn bind_draw(&mut self, d: &crate::backend::Draw<'_>) {
        for (slot, (stage, binding)) in ProgramStage::GRAPHICS.iter().zip(d.programs.iter()).enumerate() {
            self.bind(slot, *stage, binding);
        }
    }

    /// [`Forward::forwarded`] for every call but a draw.
    #[inline(never)]
    fn forwarded_other(&mut self, call: Call<'_>) {
        match call {
            Call::Packet { queue, header, location } => {
                self.clock += 1;
                if self.packets.is_empty() {
                    self.packets.resize(QueueId::COUNT as usize, 0);
                }
                if let Some(n) = self.packets.get_mut(queue.0 as usize) {
                    *n += 1;
                }
                if let Some(t) = &mut self.timeline {
                    t.packet(self.clock, queue.0, header.name());
                }
                if let Some(e) = &mut self.executed {
                    e.push((queue, header, *location));
                }
            }
            Call::SkippedIndirectBuffer { queue, location, address, size_dw }
                if self.skipped_ibs.len() < self.max_skipped_ibs =>
            {
                let packet = location.address();
                self.skipped_ibs.push(SkippedIb { queue: queue.to_string(), address, size_dw, packet });
            }
            Call::Dispatch(d) => {
                self.draw_calls += 1;
                self.bind(ProgramStage::GRAPHICS.len(), ProgramStage::Cs, d.program);
            }
            _ => {}
        }
    }
}

fn error(kind: ReplayErrorKind, message: impl Into<String>) -> ReplayErrorEntry {
    ReplayErrorEntry { kind, message: message.into() }
}

fn gpu_error_entry(e: &GpuError) -> ReplayErrorEntry {
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
    if let GpuError::Processor { source: Pm4Error::WorkBudgetExhausted { .. }, .. } = e {
        // A submission's budget is the replay's packet limit.
        let limit = Limit::Packets;
        return error(ReplayErrorKind::Limit, format!("{e} ({}; raise it with {})", limit.field(), limit.option()));
    }
    let kind = match e {
        GpuError::Processor { source, .. } => ReplayErrorKind::of(source),
        GpuError::Deadlock(_) => ReplayErrorKind::Deadlock,
        GpuError::HostWrite { .. } => ReplayErrorKind::HostWrite,
        _ => ReplayErrorKind::Gpu,
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
    progress: &mut dyn FnMut(usize),
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

/// The observed replay's state between steps.
struct Observed<'a> {
    observer: Option<&'a mut dyn ReplayObserver>,
    /// The timeline's waits, when a timeline is asked for (at most
    /// [`Limits::max_events`] kept).
    waits: Option<WaitTracker>,
    max_waits: usize,
    waits_truncated: bool,
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

/// The first of the replay's work limits that the GPU has gone past.
fn check_limits(gpu: &ReplayGpu, limits: &Limits) -> Result<(), Stop> {
    let stats = gpu.stats();
    let draw_calls = gpu.with_backend(|b| b.draw_calls);
    let written = gpu.with_memory_ref(|m| m.bytes_written());
    let checks = [
        (Limit::Packets, stats.packets.saturating_add(draw_calls), limits.max_packets),
        (Limit::Dwords, stats.dwords, limits.max_dwords),
        (Limit::WriteBytes, written, limits.max_write_bytes),
    ];
    match checks.iter().find(|(_, used, max)| used > max) {
        Some(&(limit, _, value)) => Err(Stop::Limit(LimitExceeded { limit, value })),
        None => Ok(()),
    }
}

/// Runs the GPU as far as it can, checking the work limits between slices;
/// with an observer, one packet per step, the observer called after each.
fn run_gpu(gpu: &ReplayGpu, observed: &mut Option<Observed<'_>>, limits: &Limits) -> Result<RunStatus, Stop> {
    let Some(o) = observed else {
        loop {
            let status = gpu.run_slices(CHECK_SLICES)?;
            check_limits(gpu, limits)?;
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
        if steps % CHECK_SLICES == 0 {
            check_limits(gpu, limits)?;
            // A timeline that is full has nothing more to learn.
            if gpu.with_backend(|b| b.timeline.as_ref().is_some_and(|t| !t.records.accepts())) {
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
    let log = options.log.then(|| RecordOut::Lines(Vec::new()));
    let timeline = options.timeline.then(|| RecordOut::Text(String::new()));
    replay_into(trace, options, progress, observer, log, timeline)
}

/// One replay pass, its log and timeline (if any) going to `log` and
/// `timeline`.
fn replay_into(
    trace: &Trace,
    options: &ReplayOptions,
    progress: &mut dyn FnMut(usize),
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
        submitted: [false; QueueId::COUNT as usize],
        suspended: [false; QueueId::COUNT as usize],
        stopped: false,
    });
    let memory = SparseMemory::new();
    memory.set_written_limit(limits.max_written_memory);
    memory.set_write_budget(limits.max_write_bytes);
    let gpu = Gpu::deterministic(memory, backend, config);
    let mut errors = Vec::new();
    let mut submissions: Vec<Submission> = Vec::new();
    let mut host_writes = Vec::new();
    let mut per_queue = [0u64; QueueId::COUNT as usize];
    let mut started = false;
    let mut stopped = false;

    // Runs the GPU as far as it can (before a host-side effect, or at the
    // end); a limit stops the replay.
    let settle = |gpu: &ReplayGpu,
                  errors: &mut Vec<ReplayErrorEntry>,
                  observed: &mut Option<Observed<'_>>,
                  stopped: &mut bool|
     -> Option<StallReport> {
        match run_gpu(gpu, observed, &limits) {
            Ok(RunStatus::Stalled(report)) => Some(report),
            Ok(_) => None,
            Err(Stop::Gpu(e)) => {
                errors.push(gpu_error_entry(&e));
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
        progress(done);
        if stopped || observed.as_ref().is_some_and(|o| o.stopped) {
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
                    errors
                        .push(error(ReplayErrorKind::Memory, format!("chunk {}: mapping failed: {e}", event.chunk())));
                }
            }
            TraceEvent::HostWrite { address, data, chunk } => {
                settle(&gpu, &mut errors, &mut observed, &mut stopped);
                if stopped {
                    break;
                }
                if let Some(o) = &mut observed {
                    o.each(|ob| ob.host_write(*chunk, *address, data.len()));
                }
                let bytes = trace.bytes_of(data);
                match gpu.write_memory(*address, bytes) {
                    Ok(handle) => host_writes.push(handle),
                    Err(e) => errors.push(gpu_error_entry(&e)),
                }
            }
            TraceEvent::Shader { header_address, code_address, relocated, chunk } => {
                settle(&gpu, &mut errors, &mut observed, &mut stopped);
                if stopped {
                    break;
                }
                let r = gpu.with_shared(|m, _, s| s.create(m, *header_address, *code_address, *relocated).map(|_| ()));
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
    if !stopped {
        if let Some(report) = settle(&gpu, &mut errors, &mut observed, &mut stopped) {
            // The trace is over: no host write can come, the stall is final.
            errors.push(error(ReplayErrorKind::Deadlock, GpuError::Deadlock(report.clone()).to_string()));
            stall = Some(report);
        }
    }
    let mut failures = Vec::new();
    for w in &host_writes {
        if let Some(Err(e)) = w.poll() {
            errors.push(gpu_error_entry(&e));
        }
    }
    for s in &submissions {
        if let Some(Err(e)) = s.poll() {
            if matches!(e, GpuError::Aborted(_)) && stopped {
                continue;
            }
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
            Err(e) => errors.push(error(ReplayErrorKind::Memory, format!("--mem {}: {e}", query.label))),
        }
    }
    for query in &options.registers {
        match gpu.with_processor(query.queue, |p| p.register(query.register)) {
            Ok(v) => {
                summary.registers.insert(query.label.clone(), v);
            }
            Err(e) => errors.push(gpu_error_entry(&e)),
        }
    }

    let (records, timeline, programs, programs_not_kept, skipped_ibs) = gpu.with_backend(|b| {
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
