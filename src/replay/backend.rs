//! The replay's backend: every call to the recorder's event log (bounded,
//! numbered with the queue's packet), the timeline's packet clock, the
//! program map and the skipped indirect buffers.

use std::collections::BTreeMap;

use super::summary::{BoundProgram, SkippedIb};
use super::timeline::Timeline;
use crate::backend::{Call, Forward, ProgramBinding, ProgramStage, QueueId, RecordingBackend};
use crate::limits::Records;
use crate::packet::{Header, PacketLocation};

/// The replay's backend: the event log, the timeline's packet clock, the
/// program map and the count of backend draws and dispatches (the work of
/// multi-draw packets).
#[derive(Default)]
pub(super) struct ReplayBackend {
    /// The event log (lines formatted by the recorder, then moved into a
    /// bounded collector), when asked for.
    pub(super) log: Option<RecordingBackend>,
    pub(super) records: Option<Records>,
    pub(super) clock: u64,
    pub(super) timeline: Option<Timeline>,
    pub(super) programs: BTreeMap<u64, BoundProgram>,
    /// The address last recorded per stage (graphics stages, then compute):
    /// a draw that binds the same programs as the one before costs no lookup.
    pub(super) last_bound: [u64; 5],
    pub(super) max_programs: usize,
    pub(super) programs_not_kept: u64,
    /// Most entries of `skipped_ibs` ([`Limits::max_events`]).
    pub(super) max_skipped_ibs: usize,
    /// Draw and dispatch callbacks (one per sub-draw).
    pub(super) draw_calls: u64,
    /// Packets run since the observer last looked, when one watches.
    pub(super) executed: Option<Vec<(QueueId, Header, PacketLocation)>>,
    pub(super) skipped_ibs: Vec<SkippedIb>,
    /// Packets each queue ran: the number of the packet running now, which
    /// each log line carries (`gfx #12 draw …`).
    pub(super) packets: Vec<u64>,
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
                self.skipped_ibs.push(SkippedIb { queue: queue.0, name: queue.to_string(), address, size_dw, packet });
            }
            Call::Dispatch(d) => {
                self.draw_calls += 1;
                self.bind(ProgramStage::GRAPHICS.len(), ProgramStage::Cs, d.program);
            }
            _ => {}
        }
    }
}
