//! Hang forensics: when a replay ends with queues stuck in waits, what each
//! waits on (the packet and its decoded fields), the last packets it ran,
//! and the queue and packet (or host write) that last wrote the watched
//! address.
//!
//! The plain replay pays nothing for this: only a replay that stalled is
//! run a second time under an observer that keeps the last 16 packets of
//! every queue and checks the watched bytes after every packet (one packet
//! per scheduler slice). A write is seen when it changes the watched bytes;
//! a write of the value already there is not.

use std::collections::VecDeque;
use std::fmt::{self, Write as _};
use std::ops::ControlFlow;

use super::{ExecutedPacket, ReplayObserver, GO_ON};
use crate::backend::QueueId;
use crate::gpu::StallReport;
use crate::memory::GuestMemory;
use crate::packet::{Header, Packet, PacketLocation};
use crate::processor::{Processor, SuspendReason};
use crate::regs::db::GpuFamily;
use crate::replay::{self, ReplayOptions};
use crate::trace::Trace;

/// Packets kept per queue.
pub const RECENT_PACKETS: usize = 16;

/// A packet a queue ran, in the list of its last packets.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RecentPacket {
    pub address: u64,
    pub opcode: String,
}

/// The packet a queue waits on.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct WaitingPacket {
    pub address: u64,
    pub opcode: String,
    /// Decoded fields, `NAME=VALUE` separated by spaces (as `pm4 disasm`).
    pub fields: String,
}

/// Who last wrote a watched address.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(untagged))]
pub enum LastWrite {
    /// A packet of a queue (`queue` its number, `name` its name; `index`:
    /// the queue's packet number, 0-based).
    Packet { queue: u32, name: String, address: u64, index: u64, opcode: String },
    /// The trace's host write (`WRIT` chunk).
    HostWrite { host_write_chunk: u32 },
}

impl fmt::Display for LastWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LastWrite::Packet { name, address, index, opcode, .. } => {
                write!(f, "{name} packet #{index} {opcode} at {address:#x}")
            }
            LastWrite::HostWrite { host_write_chunk } => write!(f, "the host write of chunk {host_write_chunk}"),
        }
    }
}

/// The address a wait watches and its last writer (`None`: never written
/// during the replay).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct WatchedAddress {
    pub address: u64,
    pub last_written_by: Option<LastWrite>,
}

/// Forensics of one stuck queue.
///
/// ```
/// use pm4core::diagnostics::forensics::{LastWrite, QueueForensics, RecentPacket, WatchedAddress};
///
/// let stuck = QueueForensics {
///     queue: 1,
///     name: "comp0.0".into(),
///     error: false,
///     reason: "WAIT_REG_MEM on memory 0x200000: ...".into(),
///     waiting: None,
///     last_packets: vec![RecentPacket { address: 0x101000, opcode: "NOP".into() }],
///     watched: Some(WatchedAddress { address: 0x200000, last_written_by: None }),
/// };
/// assert!(stuck.to_string().contains("watched 0x200000: never written"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct QueueForensics {
    /// Queue number (0 graphics, 1 + pipe × 8 + queue compute).
    pub queue: u32,
    /// Queue name (`gfx`, `comp0.0`, …).
    pub name: String,
    /// False: the queue waits (a stall); true: a processor error stopped
    /// its submission at `waiting`.
    pub error: bool,
    /// Why it waits (the stall report's words), or the error.
    pub reason: String,
    /// The packet it waits on (or failed at).
    pub waiting: Option<WaitingPacket>,
    /// The last packets it ran, oldest first (at most [`RECENT_PACKETS`]).
    pub last_packets: Vec<RecentPacket>,
    /// The address the wait watches, when it watches memory.
    pub watched: Option<WatchedAddress>,
}

impl fmt::Display for QueueForensics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, verb) = if self.error { ("error", "stopped") } else { ("stall", "waits") };
        write!(f, "{what} on {}: ", self.name)?;
        match &self.waiting {
            Some(w) => writeln!(f, "{verb} at {:#x} on {} {}", w.address, w.opcode, w.fields)?,
            None => writeln!(f, "{verb}")?,
        }
        writeln!(f, "  {}", self.reason)?;
        if let Some(w) = &self.watched {
            match &w.last_written_by {
                Some(by) => writeln!(f, "  watched {:#x}: last written by {by}", w.address)?,
                None => writeln!(f, "  watched {:#x}: never written", w.address)?,
            }
        }
        match self.last_packets.len() {
            0 => writeln!(f, "  no packet ran before")?,
            n => writeln!(f, "  last {n} packet{} run:", if n == 1 { "" } else { "s" })?,
        }
        for p in &self.last_packets {
            writeln!(f, "    {:#014x} {}", p.address, p.opcode)?;
        }
        Ok(())
    }
}

/// A watched range and what the observer knows of it.
struct Watch {
    address: u64,
    len: usize,
    value: Option<[u8; 8]>,
    last: Option<LastWrite>,
    /// A host write overlapped it: take the next value as the host's.
    refresh: bool,
}

impl Watch {
    fn read(&self, memory: &dyn GuestMemory) -> Option<[u8; 8]> {
        let mut bytes = [0u8; 8];
        memory.read_bytes(self.address, bytes.get_mut(..self.len)?).ok()?;
        Some(bytes)
    }
}

struct ForensicsObserver {
    recent: Vec<VecDeque<RecentPacket>>,
    watches: Vec<Watch>,
    /// The waiting packets' dwords, read at the start.
    waiting: Vec<(u64, Vec<u32>)>,
}

impl ReplayObserver for ForensicsObserver {
    fn start(&mut self, memory: &dyn GuestMemory) {
        for w in &mut self.watches {
            w.value = w.read(memory);
        }
        for (address, words) in &mut self.waiting {
            if let Ok(header) = memory.read_u32(*address) {
                let length = Header(header).length_dw().unwrap_or(1).min(64);
                words.resize(length as usize, 0);
                if memory.read_dwords(*address, words).is_err() {
                    words.clear();
                }
            }
        }
    }

    fn host_write(&mut self, chunk: u32, address: u64, len: u64) {
        for w in &mut self.watches {
            if address < w.address.saturating_add(w.len as u64) && address.saturating_add(len) > w.address {
                w.last = Some(LastWrite::HostWrite { host_write_chunk: chunk });
                w.refresh = true;
            }
        }
    }

    fn packet(&mut self, packet: &ExecutedPacket, _: &Processor, memory: &dyn GuestMemory) -> ControlFlow<()> {
        if let Some(ring) = self.recent.get_mut(packet.queue.0 as usize) {
            if ring.len() == RECENT_PACKETS {
                ring.pop_front();
            }
            ring.push_back(RecentPacket { address: packet.address(), opcode: packet.name() });
        }
        for w in &mut self.watches {
            let now = w.read(memory);
            if w.refresh {
                w.refresh = false;
            } else if now != w.value {
                w.last = Some(LastWrite::Packet {
                    queue: packet.queue.0,
                    name: packet.queue.to_string(),
                    address: packet.address(),
                    index: packet.index,
                    opcode: packet.name(),
                });
            }
            w.value = now;
        }
        GO_ON
    }
}

/// The watched range of a wait: its address and 4 or 8 bytes.
pub(crate) fn watched_range(reason: &SuspendReason) -> Option<(u64, usize)> {
    let address = reason.watched_address()?;
    let len = match reason {
        SuspendReason::WaitRegMem { is_64: true, .. } | SuspendReason::AtomicLoop { .. } => 8,
        _ => 4,
    };
    Some((address, len))
}

/// A submission a processor error stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub queue: QueueId,
    /// Address of the packet it stopped at, when the error names one.
    pub packet: Option<u64>,
    /// The error.
    pub message: String,
}

/// Replays `trace` again under the forensics observer and describes each
/// queue of `report` (the stall of a first replay; the second replay's
/// own stall is used when it has one) and each failed submission (its
/// packet, and the packets before it; no watched address).
pub fn investigate(
    trace: &Trace,
    options: &ReplayOptions,
    report: Option<&StallReport>,
    failures: &[Failure],
) -> Vec<QueueForensics> {
    let empty = StallReport::default();
    let report = report.unwrap_or(&empty);
    let family = trace.gpu_family().unwrap_or_default();
    let mut observer = ForensicsObserver {
        recent: (0..QueueId::COUNT).map(|_| VecDeque::new()).collect(),
        watches: Vec::new(),
        waiting: Vec::new(),
    };
    for q in &report.queues {
        if let Some((address, len)) = watched_range(&q.reason) {
            if !observer.watches.iter().any(|w| w.address == address) {
                observer.watches.push(Watch { address, len, value: None, last: None, refresh: false });
            }
        }
        if let Some(at) = q.packet_address {
            observer.waiting.push((at, Vec::new()));
        }
    }
    for f in failures {
        if let Some(at) = f.packet {
            observer.waiting.push((at, Vec::new()));
        }
    }
    let mut quiet = options.clone();
    quiet.log = false;
    quiet.timeline = false;
    let outcome = replay::replay_observed(trace, &quiet, &mut |_| {}, Some(&mut observer));
    let report = outcome.stall.as_ref().unwrap_or(report);
    let recent = |queue: QueueId| -> Vec<RecentPacket> {
        observer.recent.get(queue.0 as usize).map(|r| r.iter().cloned().collect()).unwrap_or_default()
    };
    let waiting = |address: u64| {
        let words = observer.waiting.iter().find(|(a, _)| *a == address).map_or(&[][..], |(_, w)| w);
        describe_packet(family, address, words)
    };
    let stuck = report.queues.iter().map(|q| {
        let watched = watched_range(&q.reason).map(|(address, _)| WatchedAddress {
            address,
            last_written_by: observer.watches.iter().find(|w| w.address == address).and_then(|w| w.last.clone()),
        });
        QueueForensics {
            queue: q.queue.0,
            name: q.queue.to_string(),
            error: false,
            reason: q.reason.to_string(),
            waiting: q.packet_address.map(waiting),
            last_packets: recent(q.queue),
            watched,
        }
    });
    let failed = failures.iter().map(|f| QueueForensics {
        queue: f.queue.0,
        name: f.queue.to_string(),
        error: true,
        reason: f.message.clone(),
        waiting: f.packet.map(waiting),
        last_packets: recent(f.queue),
        watched: None,
    });
    stuck.chain(failed).collect()
}

/// The opcode and decoded fields of the packet `words` at `address`.
fn describe_packet(family: GpuFamily, address: u64, words: &[u32]) -> WaitingPacket {
    let Some((&header, body)) = words.split_first() else {
        return WaitingPacket { address, opcode: "?".into(), fields: "(not readable)".into() };
    };
    let header = Header(header);
    let packet = Packet {
        header,
        body,
        location: PacketLocation { buffer: address, buffer_size_dw: words.len() as u32, offset_dw: 0 },
    };
    let fields = match crate::disasm::decode_fields(family, &packet) {
        Ok(fields) => {
            let mut s = String::new();
            for f in fields {
                let sep = if s.is_empty() { "" } else { " " };
                let _ = write!(s, "{sep}{}={}", f.name, f.value);
            }
            s
        }
        Err(e) => format!("(malformed: {e})"),
    };
    WaitingPacket { address, opcode: crate::disasm::packet_name(header), fields }
}
