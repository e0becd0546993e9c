//! The register state of a queue at a chosen packet, with the packet that
//! last wrote each register (`pm4 state`), and the difference between two
//! such points.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::ControlFlow;

use super::{register_name, ExecutedPacket, RegisterShadow, RegisterWrite, ReplayObserver, GO_ON};
use crate::backend::QueueId;
use crate::gpu::StallReport;
use crate::memory::GuestMemory;
use crate::processor::Processor;
use crate::regs::db::GpuFamily;
use crate::replay::{self, ReplayOptions};
use crate::trace::Trace;

/// Where to stop: before the first execution of the packet at a guest
/// address, or before a queue's N-th packet (0-based).
///
/// ```
/// use pm4core::diagnostics::state::StopAt;
///
/// assert_eq!(StopAt::parse("0x100010"), Ok(StopAt::Address(0x100010)));
/// assert_eq!(StopAt::parse("#3"), Ok(StopAt::Index(3)));
/// assert!(StopAt::parse("#x").is_err());
/// assert_eq!(StopAt::Index(3).to_string(), "#3");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopAt {
    /// The packet whose header is at this address.
    Address(u64),
    /// The queue's packet of this index (every packet decoded counts).
    Index(u64),
}

impl StopAt {
    /// Parses `ADDR` (decimal or 0x-hex) or `#N`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.strip_prefix('#') {
            Some(n) => {
                replay::parse_number(n).map(StopAt::Index).ok_or_else(|| format!("'{text}' is not #N (a packet index)"))
            }
            None => replay::parse_number(text)
                .map(StopAt::Address)
                .ok_or_else(|| format!("'{text}' is not a packet address or #N")),
        }
    }
}

impl fmt::Display for StopAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopAt::Address(a) => write!(f, "{a:#x}"),
            StopAt::Index(n) => write!(f, "#{n}"),
        }
    }
}

/// A packet of a queue: its address and index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PacketPoint {
    pub address: u64,
    pub index: u64,
}

impl fmt::Display for PacketPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{} at {:#x}", self.index, self.address)
    }
}

/// The packet that wrote a register.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Writer {
    pub address: u64,
    pub index: u64,
    /// Opcode name (`TYPE0` for a type-0 packet).
    pub opcode: String,
}

impl fmt::Display for Writer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{} {} at {:#x}", self.index, self.opcode, self.address)
    }
}

/// A register's value and its last writer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RegisterEntry {
    /// Absolute dword index (the JSON key is the name).
    #[cfg_attr(feature = "serde", serde(skip))]
    pub register: u32,
    pub value: u32,
    pub written_by: Writer,
}

/// Every register a queue's stream wrote before a packet, with its value and
/// the packet that last wrote it.
///
/// ```
/// use pm4core::diagnostics::state::{state_at, StopAt};
/// use pm4core::replay::ReplayOptions;
/// use pm4core::trace::Trace;
///
/// let trace = Trace::read_file(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/traces/corpus/registers.pm4t"))).unwrap();
/// // Before the graphics queue's 4th packet: CONTEXT_CONTROL, CLEAR_STATE and
/// // SET_CONTEXT_REG DB_RENDER_CONTROL ran.
/// let state = state_at(&trace, &ReplayOptions::default(), None, StopAt::Index(3)).unwrap();
/// let db = &state.registers["DB_RENDER_CONTROL"];
/// assert_eq!(db.value, 1);
/// assert_eq!(db.written_by.opcode, "SET_CONTEXT_REG");
/// assert_eq!(db.written_by.index, 2);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct QueueState {
    /// Queue number (0 graphics, 1 + pipe × 8 + queue compute).
    pub queue: u32,
    /// Queue name (`gfx`, `comp0.0`, …).
    pub name: String,
    /// The packet the queue stopped before.
    pub at: PacketPoint,
    /// By register name.
    pub registers: BTreeMap<String, RegisterEntry>,
}

impl QueueState {
    /// The entries in register order.
    pub fn in_register_order(&self) -> Vec<(&String, &RegisterEntry)> {
        let mut v: Vec<_> = self.registers.iter().collect();
        v.sort_by_key(|(_, e)| e.register);
        v
    }
}

impl fmt::Display for QueueState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.registers.len();
        writeln!(f, "{} before packet {}: {n} register{} written", self.name, self.at, plural(n))?;
        for (name, e) in self.in_register_order() {
            writeln!(f, "  {name:<40} {:#010x}  by {}", e.value, e.written_by)?;
        }
        Ok(())
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Why there is no state at the asked point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateError {
    /// What was asked, and why it was not reached.
    pub message: String,
    /// The resource limit that stopped the replay before the point, if one
    /// did (its message, as the replay's error of kind `limit` says it).
    pub limit: Option<String>,
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StateError {}

/// One queue's tracked registers.
#[derive(Default)]
struct Tracked {
    shadow: RegisterShadow,
    written: BTreeMap<u32, (u32, Writer)>,
    /// Packets the queue ran.
    packets: u64,
}

/// The observer behind [`state_at`].
struct StateObserver {
    family: GpuFamily,
    queue: Option<QueueId>,
    at: StopAt,
    queues: Vec<Option<Tracked>>,
    writes: Vec<RegisterWrite>,
    result: Option<QueueState>,
}

impl StateObserver {
    fn snapshot(&self, queue: QueueId, at: PacketPoint) -> QueueState {
        let mut registers = BTreeMap::new();
        if let Some(Some(t)) = self.queues.get(queue.0 as usize) {
            for (&register, (value, writer)) in &t.written {
                registers.insert(
                    register_name(self.family, register),
                    RegisterEntry { register, value: *value, written_by: writer.clone() },
                );
            }
        }
        QueueState { queue: queue.0, name: queue.to_string(), at, registers }
    }
}

impl ReplayObserver for StateObserver {
    fn packet(&mut self, packet: &ExecutedPacket, processor: &Processor, memory: &dyn GuestMemory) -> ControlFlow<()> {
        if self.queue.is_some_and(|q| q != packet.queue) {
            return GO_ON;
        }
        let hit = match self.at {
            StopAt::Address(a) => packet.address() == a,
            StopAt::Index(n) => packet.index == n,
        };
        if hit {
            self.result =
                Some(self.snapshot(packet.queue, PacketPoint { address: packet.address(), index: packet.index }));
            return ControlFlow::Break(());
        }
        let Some(slot) = self.queues.get_mut(packet.queue.0 as usize) else { return GO_ON };
        let tracked = slot.get_or_insert_with(Tracked::default);
        tracked.shadow.packet_writes(packet, processor.registers(), memory, &mut self.writes);
        tracked.packets = packet.index + 1;
        let name = packet.name();
        for w in &self.writes {
            let writer = Writer { address: packet.address(), index: packet.index, opcode: name.clone() };
            tracked.written.insert(w.register, (w.value, writer));
        }
        GO_ON
    }
}

/// Replays `trace` and stops `queue` (or, with `None` and an address, the
/// first queue that runs the packet there; with an index, the graphics
/// queue) before the first execution of the packet `at`. A packet whose
/// queue is stuck in a wait on it at the end counts as reached (the state
/// before the wait). Diagnostic replays run one packet per scheduler slice.
pub fn state_at(
    trace: &Trace,
    options: &ReplayOptions,
    queue: Option<QueueId>,
    at: StopAt,
) -> Result<QueueState, StateError> {
    state_at_with_progress(trace, options, queue, at, &mut |_| {})
}

/// [`state_at`], calling `progress` as the replay goes (as
/// [`replay::replay_with_progress`] does).
pub fn state_at_with_progress(
    trace: &Trace,
    options: &ReplayOptions,
    queue: Option<QueueId>,
    at: StopAt,
    progress: &mut dyn FnMut(replay::Progress),
) -> Result<QueueState, StateError> {
    let family = trace.gpu_family().unwrap_or_default();
    let queue = match (queue, at) {
        (None, StopAt::Index(_)) => Some(QueueId::GRAPHICS),
        (q, _) => q,
    };
    let mut observer = StateObserver {
        family,
        queue,
        at,
        queues: (0..QueueId::COUNT).map(|_| None).collect(),
        writes: Vec::new(),
        result: None,
    };
    let outcome = replay::replay_observed(trace, options, progress, Some(&mut observer));
    if let Some(state) = observer.result.take() {
        return Ok(state);
    }
    if let Some(state) = stuck_at(&observer, outcome.stall.as_ref()) {
        return Ok(state);
    }
    let whom = queue.map_or_else(|| "any queue".to_string(), |q| q.to_string());
    let mut message = match at {
        StopAt::Address(a) => format!("no packet at {a:#x} ran on {whom}"),
        StopAt::Index(n) => {
            let ran =
                queue.and_then(|q| observer.queues.get(q.0 as usize)).and_then(Option::as_ref).map_or(0, |t| t.packets);
            format!("{whom} ran {ran} packet{}: there is no packet #{n}", plural(ran as usize))
        }
    };
    if let Some(e) = outcome.summary.errors.first() {
        message.push_str(&format!(" (the replay met an error: {})", e.message));
    }
    let limit = outcome.summary.errors.iter().find(|e| e.kind == "limit").map(|e| e.message.clone());
    Err(StateError { message, limit })
}

/// The state of a queue stuck in a wait on the asked packet.
fn stuck_at(observer: &StateObserver, stall: Option<&StallReport>) -> Option<QueueState> {
    for s in &stall?.queues {
        if observer.queue.is_some_and(|q| q != s.queue) {
            continue;
        }
        let address = s.packet_address?;
        let index = observer.queues.get(s.queue.0 as usize).and_then(Option::as_ref).map_or(0, |t| t.packets);
        let hit = match observer.at {
            StopAt::Address(a) => a == address,
            StopAt::Index(n) => n == index,
        };
        if hit {
            return Some(observer.snapshot(s.queue, PacketPoint { address, index }));
        }
    }
    None
}

/// A register that differs between two points.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RegisterChange {
    /// Absolute dword index (the JSON key is the name).
    #[cfg_attr(feature = "serde", serde(skip))]
    pub register: u32,
    /// The value at the first point (`None`: not written yet).
    pub before: Option<u32>,
    /// The value at the second point (`None`: not written yet).
    pub after: Option<u32>,
    /// The last writer at the second point.
    pub written_by: Option<Writer>,
}

/// What changed between two [`QueueState`]s: registers whose value differs
/// or that only one point has.
///
/// ```
/// use pm4core::diagnostics::state::{diff, state_at, StopAt};
/// use pm4core::replay::ReplayOptions;
/// use pm4core::trace::Trace;
///
/// let trace = Trace::read_file(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/traces/corpus/registers.pm4t"))).unwrap();
/// let options = ReplayOptions::default();
/// let a = state_at(&trace, &options, None, StopAt::Index(3)).unwrap();
/// let b = state_at(&trace, &options, None, StopAt::Index(9)).unwrap();
/// let d = diff(&a, &b);
/// assert_eq!(d.changed["DB_RENDER_CONTROL"].before, Some(1));
/// assert_eq!(d.changed["DB_RENDER_CONTROL"].after, Some(0x1234_0001));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct StateDiff {
    /// Queue number of the first point (0 graphics, 1 + pipe × 8 + queue
    /// compute).
    pub queue: u32,
    /// Queue name (`gfx`, `comp0.0`, …; `A / B` when the points are on two
    /// queues).
    pub name: String,
    pub from: PacketPoint,
    pub to: PacketPoint,
    /// By register name.
    pub changed: BTreeMap<String, RegisterChange>,
}

/// The registers that differ between `a` and `b`.
pub fn diff(a: &QueueState, b: &QueueState) -> StateDiff {
    let mut changed = BTreeMap::new();
    for (name, e) in &b.registers {
        let before = a.registers.get(name).map(|x| x.value);
        if before != Some(e.value) {
            changed.insert(
                name.clone(),
                RegisterChange {
                    register: e.register,
                    before,
                    after: Some(e.value),
                    written_by: Some(e.written_by.clone()),
                },
            );
        }
    }
    for (name, e) in &a.registers {
        if !b.registers.contains_key(name) {
            changed.insert(
                name.clone(),
                RegisterChange { register: e.register, before: Some(e.value), after: None, written_by: None },
            );
        }
    }
    let name = if a.queue == b.queue { a.name.clone() } else { format!("{} / {}", a.name, b.name) };
    StateDiff { queue: a.queue, name, from: a.at, to: b.at, changed }
}

impl fmt::Display for StateDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.changed.len();
        writeln!(
            f,
            "{} from packet {} to packet {}: {n} register{} changed",
            self.name,
            self.from,
            self.to,
            plural(n)
        )?;
        let mut v: Vec<_> = self.changed.iter().collect();
        v.sort_by_key(|(_, c)| c.register);
        let show = |v: Option<u32>| v.map_or_else(|| "unwritten".to_string(), |v| format!("{v:#010x}"));
        for (name, c) in v {
            write!(f, "  {name:<40} {:>10} -> {:>10}", show(c.before), show(c.after))?;
            if let Some(w) = &c.written_by {
                write!(f, "  by {w}")?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
