//! Waits on the timeline: each wait a span from the packet clock at which
//! its queue suspended to the clock at which the waiting packet ran, with
//! a flow arrow from the packet (or host write) whose write released it.
//!
//! The clock is the replay's global packet counter: every packet any queue
//! runs advances it by one (one microsecond on the Perfetto time axis), so
//! the timeline shows order and relative packet counts, never measured time.
//! The releasing write is the last one that changed the watched bytes
//! before the wait passed (the observer checks them after every packet).

use std::fmt::Write as _;
use std::ops::ControlFlow;

use super::{ExecutedPacket, ReplayObserver, GO_ON};
use crate::backend::QueueId;
use crate::memory::GuestMemory;
use crate::processor::{Processor, SuspendReason};

/// What released a wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// A packet of `queue` at packet clock `clock`.
    Packet { queue: QueueId, clock: u64 },
    /// The trace's host write (`WRIT` chunk).
    HostWrite { chunk: u32 },
}

/// One wait: from `start` (the clock when the queue suspended) to `end`
/// (the clock of the waiting packet when it finally ran).
///
/// ```
/// use pm4core::backend::QueueId;
/// use pm4core::diagnostics::timeline::{Release, WaitSpan};
///
/// let wait = WaitSpan {
///     queue: QueueId(1),
///     packet: 0x101000,
///     start: 2,
///     end: 5,
///     reason: "WAIT_REG_MEM on memory 0x200000: …".into(),
///     released_by: Some(Release::Packet { queue: QueueId::GRAPHICS, clock: 4 }),
///     stalled: false,
/// };
/// let mut events = Vec::new();
/// wait.write_events(7, &mut events);
/// assert_eq!(events.len(), 3); // the span and the two ends of its flow arrow
/// assert!(events[1].contains("\"ph\":\"s\"") && events[1].contains("\"ts\":4"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitSpan {
    pub queue: QueueId,
    /// Address of the waiting packet.
    pub packet: u64,
    pub start: u64,
    pub end: u64,
    /// The wait as the stall report says it (at its first check).
    pub reason: String,
    /// `None` when nothing changed the watched bytes (a register wait, a
    /// constant-engine counter, or a write of the value already there).
    pub released_by: Option<Release>,
    /// The wait never ended: the replay stalled (`end` is the last clock).
    pub stalled: bool,
}

fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl WaitSpan {
    /// Chrome/Perfetto trace events: the span (`"cat":"wait"`) on the
    /// queue's track and, when a packet released it, a flow (`id`) from
    /// that packet's event to the waiting packet's event; a host write is
    /// named in the span's arguments.
    pub fn write_events(&self, id: u64, out: &mut Vec<String>) {
        let q = self.queue.0;
        let released = match self.released_by {
            Some(Release::Packet { queue, clock }) => format!("{queue} packet at clock {clock}"),
            Some(Release::HostWrite { chunk }) => format!("host write (chunk {chunk})"),
            None if self.stalled => "never: the replay stalled".to_string(),
            None => "unknown".to_string(),
        };
        out.push(format!(
            "{{\"ph\":\"X\",\"cat\":\"wait\",\"pid\":1,\"tid\":{q},\"ts\":{},\"dur\":{},\"name\":\"wait\",\"args\":{{\"packet\":\"{:#x}\",\"reason\":{},\"released_by\":{}}}}}",
            self.start,
            self.end.saturating_sub(self.start),
            self.packet,
            json_string(&self.reason),
            json_string(&released)
        ));
        if let Some(Release::Packet { queue, clock }) = self.released_by {
            out.push(format!(
                "{{\"ph\":\"s\",\"cat\":\"wait\",\"id\":{id},\"pid\":1,\"tid\":{},\"ts\":{clock},\"name\":\"release\"}}",
                queue.0
            ));
            out.push(format!(
                "{{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"wait\",\"id\":{id},\"pid\":1,\"tid\":{q},\"ts\":{},\"name\":\"release\"}}",
                self.end
            ));
        }
    }
}

/// A wait not yet over.
struct OpenWait {
    packet: u64,
    start: u64,
    reason: String,
    watch: Option<(u64, usize)>,
    value: Option<[u8; 8]>,
    released_by: Option<Release>,
}

fn read_watch(memory: &dyn GuestMemory, watch: Option<(u64, usize)>) -> Option<[u8; 8]> {
    let (address, len) = watch?;
    let mut bytes = [0u8; 8];
    memory.read_bytes(address, bytes.get_mut(..len)?).ok()?;
    Some(bytes)
}

/// The observer that finds the waits of a replay
/// ([`crate::replay::replay_observed`] runs it when a timeline is asked for).
#[derive(Default)]
pub struct WaitTracker {
    clock: u64,
    open: Vec<Option<OpenWait>>,
    /// Finished waits, in the order they ended.
    pub spans: Vec<WaitSpan>,
}

impl WaitTracker {
    /// No wait seen yet.
    pub fn new() -> Self {
        Self { clock: 0, open: (0..QueueId::COUNT).map(|_| None).collect(), spans: Vec::new() }
    }

    /// Waits still open at the end (stalled queues) as spans ending at the
    /// last clock.
    pub fn finish(&mut self) {
        for (q, slot) in self.open.iter_mut().enumerate() {
            if let Some(w) = slot.take() {
                self.spans.push(WaitSpan {
                    queue: QueueId(q as u32),
                    packet: w.packet,
                    start: w.start,
                    end: self.clock + 1,
                    reason: w.reason,
                    released_by: None,
                    stalled: true,
                });
            }
        }
    }
}

impl ReplayObserver for WaitTracker {
    fn wants_suspensions(&self) -> bool {
        true
    }

    fn suspended(&mut self, queue: QueueId, reason: &SuspendReason, packet: u64, memory: &dyn GuestMemory) {
        let Some(slot) = self.open.get_mut(queue.0 as usize) else { return };
        if slot.is_some() {
            return;
        }
        let watch = super::forensics::watched_range(reason);
        *slot = Some(OpenWait {
            packet,
            start: self.clock,
            reason: reason.to_string(),
            watch,
            value: read_watch(memory, watch),
            released_by: None,
        });
    }

    fn host_write(&mut self, chunk: u32, address: u64, len: u64) {
        for w in self.open.iter_mut().flatten() {
            if let Some((a, n)) = w.watch {
                if address < a.saturating_add(n as u64) && address.saturating_add(len) > a {
                    w.released_by = Some(Release::HostWrite { chunk });
                    w.value = None;
                }
            }
        }
    }

    fn packet(&mut self, packet: &ExecutedPacket, _: &Processor, memory: &dyn GuestMemory) -> ControlFlow<()> {
        self.clock += 1;
        let clock = self.clock;
        if let Some(slot) = self.open.get_mut(packet.queue.0 as usize) {
            if slot.as_ref().is_some_and(|w| w.packet == packet.address()) {
                if let Some(w) = slot.take() {
                    self.spans.push(WaitSpan {
                        queue: packet.queue,
                        packet: w.packet,
                        start: w.start,
                        end: clock,
                        reason: w.reason,
                        released_by: w.released_by,
                        stalled: false,
                    });
                }
            }
        }
        for w in self.open.iter_mut().flatten() {
            let now = read_watch(memory, w.watch);
            match w.value {
                // After a host write: its bytes are the new reference.
                None => w.value = now,
                Some(before) if now.is_some_and(|n| n != before) => {
                    w.released_by = Some(Release::Packet { queue: packet.queue, clock });
                    w.value = now;
                }
                Some(_) => {}
            }
        }
        GO_ON
    }
}
