//! Stream statistics (`pm4 stats`): per queue, packets by opcode, NOP and
//! padding dwords, redundant register writes, context rolls, draws and
//! dispatches.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::ControlFlow;

use super::{ExecutedPacket, RegisterShadow, RegisterWrite, ReplayObserver, GO_ON};
use crate::backend::QueueId;
use crate::memory::GuestMemory;
use crate::packet::{Opcode, PacketType};
use crate::processor::Processor;
use crate::regs::space;
use crate::replay::{self, ReplayErrorEntry, ReplayOptions};
use crate::trace::Trace;

/// The statistics of one queue.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct QueueStats {
    /// Queue number (0 graphics, 1 + pipe × 8 + queue compute).
    pub queue: u32,
    /// Queue name (`gfx`, `comp0.0`, …).
    pub name: String,
    /// Every packet decoded (executed or skipped).
    pub packets: u64,
    /// By opcode name (`TYPE0`, `TYPE2` for the other packet types).
    pub by_opcode: BTreeMap<String, u64>,
    /// Dwords of NOP packets (header included) and type-2 fillers.
    pub nop_dwords: u64,
    /// Register writes of SET_*_REG and type-0 packets that stored the value
    /// the register already held.
    pub redundant_register_writes: u64,
    /// Draw packets with at least one context-register write (0xA000..0xA3FF,
    /// by any packet but a draw, even of the value already there) since the
    /// queue's previous draw or its start: the hardware rolls the context
    /// for each.
    pub context_rolls: u64,
    /// Draw packets executed (a multi-draw packet counts once).
    pub draws: u64,
    /// Dispatch packets executed.
    pub dispatches: u64,
}

/// The statistics of a trace's replay: every queue that ran a packet, in
/// queue order.
///
/// ```
/// use pm4core::diagnostics::stats::stream_stats;
/// use pm4core::replay::ReplayOptions;
/// use pm4core::trace::Trace;
///
/// let trace = Trace::read_file(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/traces/corpus/draws_dispatches.pm4t"))).unwrap();
/// let stats = stream_stats(&trace, &ReplayOptions::default());
/// let gfx = &stats.queues[0];
/// assert_eq!((gfx.queue, gfx.name.as_str()), (0, "gfx"));
/// assert!(gfx.draws > 0);
/// assert!(gfx.context_rolls <= gfx.draws);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct StreamStats {
    pub queues: Vec<QueueStats>,
    /// Errors the replay met (the statistics cover what ran).
    #[cfg_attr(feature = "serde", serde(skip))]
    pub errors: Vec<ReplayErrorEntry>,
}

impl fmt::Display for StreamStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for q in &self.queues {
            writeln!(
                f,
                "queue {}: {} packet{}, {} draw{}, {} dispatch{}",
                q.name,
                q.packets,
                plural(q.packets, "s"),
                q.draws,
                plural(q.draws, "s"),
                q.dispatches,
                plural(q.dispatches, "es")
            )?;
            writeln!(f, "  nop/padding dwords         {:>9}", q.nop_dwords)?;
            writeln!(f, "  redundant register writes  {:>9}", q.redundant_register_writes)?;
            writeln!(f, "  context rolls              {:>9}", q.context_rolls)?;
            let mut by_count: Vec<(&String, &u64)> = q.by_opcode.iter().collect();
            by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            for (name, n) in by_count {
                writeln!(f, "  {name:<26} {n:>9}")?;
            }
        }
        Ok(())
    }
}

fn plural(n: u64, suffix: &'static str) -> &'static str {
    if n == 1 {
        ""
    } else {
        suffix
    }
}

#[derive(Default)]
struct Tracked {
    stats: QueueStats,
    shadow: RegisterShadow,
    /// A context register was written since the last draw.
    context_dirty: bool,
    draws_seen: u64,
}

struct StatsObserver {
    queues: Vec<Option<Tracked>>,
    writes: Vec<RegisterWrite>,
}

impl ReplayObserver for StatsObserver {
    fn packet(&mut self, packet: &ExecutedPacket, processor: &Processor, memory: &dyn GuestMemory) -> ControlFlow<()> {
        let Some(slot) = self.queues.get_mut(packet.queue.0 as usize) else { return GO_ON };
        let t = slot.get_or_insert_with(Tracked::default);
        let s = &mut t.stats;
        s.packets += 1;
        *s.by_opcode.entry(packet.name()).or_default() += 1;
        let length = u64::from(packet.header.length_dw().unwrap_or(1));
        match packet.header.packet_type() {
            PacketType::Type2 => s.nop_dwords += 1,
            PacketType::Type3 if packet.header.opcode() == Opcode::NOP => s.nop_dwords += length,
            _ => {}
        }
        let pstats = processor.stats();
        let draw = pstats.draws > t.draws_seen;
        if draw {
            t.draws_seen = pstats.draws;
            if t.context_dirty {
                s.context_rolls += 1;
            }
            t.context_dirty = false;
        }
        s.draws = pstats.draws;
        s.dispatches = pstats.dispatches;
        t.shadow.packet_writes(packet, processor.registers(), memory, &mut self.writes);
        for w in &self.writes {
            s.redundant_register_writes += u64::from(w.redundant);
            if !draw && (space::CONTEXT..space::CONTEXT + space::CONTEXT_SIZE).contains(&w.register) {
                t.context_dirty = true;
            }
        }
        GO_ON
    }
}

/// Replays `trace` packet by packet (one packet per scheduler slice) and
/// counts, per queue, what [`QueueStats`] says.
pub fn stream_stats(trace: &Trace, options: &ReplayOptions) -> StreamStats {
    stream_stats_with_progress(trace, options, &mut |_| {})
}

/// [`stream_stats`], calling `progress` as the replay goes (as
/// [`replay::replay_with_progress`] does).
pub fn stream_stats_with_progress(
    trace: &Trace,
    options: &ReplayOptions,
    progress: &mut dyn FnMut(replay::Progress),
) -> StreamStats {
    let mut observer = StatsObserver { queues: (0..QueueId::COUNT).map(|_| None).collect(), writes: Vec::new() };
    let outcome = replay::replay_observed(trace, options, progress, Some(&mut observer));
    let queues = observer
        .queues
        .into_iter()
        .enumerate()
        .filter_map(|(q, t)| {
            t.map(|mut t| {
                t.stats.queue = q as u32;
                t.stats.name = QueueId(q as u32).to_string();
                t.stats
            })
        })
        .collect();
    StreamStats { queues, errors: outcome.summary.errors }
}
