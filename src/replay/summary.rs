//! What a replay reports ([`ReplaySummary`], [`ReplayOutcome`]) and the
//! summary's text for people ([`format_summary`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use crate::backend::ProgramStage;
use crate::diagnostics::forensics::{Failure, QueueForensics};
use crate::gpu::StallReport;
use crate::processor::Pm4Error;
use crate::shader::AgcShader;

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
    /// Queue number (0 graphics, 1 + pipe × 8 + queue compute).
    pub queue: u32,
    /// Queue name (`gfx`, `comp0.0`, …).
    pub name: String,
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
    /// Queue number (0 graphics, 1 + pipe × 8 + queue compute).
    pub queue: u32,
    /// Queue name (`gfx`, `comp0.0`, …).
    pub name: String,
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

/// The result of [`replay`](super::replay).
#[derive(Clone, Debug, Default)]
pub struct ReplayOutcome {
    pub summary: ReplaySummary,
    /// Every program address bound at a draw or dispatch, in address order.
    pub programs: Vec<BoundProgram>,
    /// The deterministic event log, one line per effect (empty unless
    /// [`ReplayOptions::log`](super::ReplayOptions::log)).
    pub log: Vec<String>,
    /// Chrome/Perfetto trace-event JSON, when asked for.
    pub timeline: Option<String>,
    /// Bytes of guest memory pages the replay had to copy because packets or
    /// host writes wrote them (everything else is the trace file's bytes).
    pub written_page_bytes: usize,
    /// The stall the replay ended in, if it did (the summary's `deadlock`
    /// error and, after [`replay_with_progress`](super::replay_with_progress), its `stalls`).
    pub stall: Option<StallReport>,
    /// Submissions a processor error stopped, with the packet it stopped at.
    pub failures: Vec<Failure>,
    /// Program bindings not kept in [`programs`](Self::programs) because it
    /// held [`Limits::max_programs`](crate::limits::Limits::max_programs) addresses already.
    pub programs_not_kept: u64,
    /// The event log stopped at [`Limits::max_events`](crate::limits::Limits::max_events) records.
    pub log_truncated: bool,
    /// The timeline stopped at [`Limits::max_events`](crate::limits::Limits::max_events) packets (or waits).
    pub timeline_truncated: bool,
}

impl ReplayOutcome {
    /// True when the replay met no error.
    pub fn succeeded(&self) -> bool {
        self.summary.errors.is_empty()
    }
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
        let _ = writeln!(out, "unknown packet {:#010x} on {} at {:#x}:", u.header, u.name, u.address);
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
            ib.name,
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
