//! Packet handlers, one module per concept. Each handler decodes its body
//! with [`crate::packet::body`] and applies the effect through the context.

pub(crate) mod const_engine;
pub(crate) mod dispatch;
pub(crate) mod draw;
pub(crate) mod events;
pub(crate) mod indirect;
pub(crate) mod memory_ops;
pub(crate) mod nop;
pub(crate) mod predication;
pub(crate) mod registers;
pub(crate) mod wait;

use super::context::{Ctx, Flow, HandlerResult};
use super::{unknown_packet_report, Pm4Error, UnknownPacketPolicy};
use crate::backend::NotEmulated;
use crate::packet::Packet;

/// What a plain handler's fast entry did (see `tables::FAST_ENTRIES`): the
/// loop calls one for a packet it holds whole, with the context's location
/// and opcode set to the packet's and none of a handler call's bookkeeping.
pub(crate) enum Fast {
    /// The packet ran: the loop goes on past it.
    Done,
    /// Nothing was done: the loop runs the packet through its handler.
    General,
    /// The packet failed, as its handler fails.
    Failed(Box<Pm4Error>),
    /// The packet waits, as its handler waits: the entry called
    /// [`Ctx::suspend`], and the packet runs again on resume.
    Suspended,
}

impl Fast {
    /// What an entry answers once its packet's effect ran with `result`.
    pub(crate) fn of(result: Result<(), Pm4Error>) -> Fast {
        match result {
            Ok(()) => Fast::Done,
            Err(e) => Fast::Failed(Box::new(e)),
        }
    }
}

/// A type-3 packet without a handler: known opcodes are reported as not
/// emulated, unknown ones with a hex dump; both are skipped by length (or,
/// for unknown packets under [`UnknownPacketPolicy::Stop`], stop).
#[cold]
pub(crate) fn unhandled(ctx: &mut Ctx<'_>, packet: &Packet<'_>) -> HandlerResult {
    let state = &mut *ctx.state;
    let opcode = packet.opcode();
    // A graphics-ring packet on a compute queue is reported like an unknown
    // packet of that queue: a driver bug on real hardware.
    let wrong_queue = !state.queue.is_graphics() && super::tables::is_graphics_only(opcode);
    if opcode.is_known() && !wrong_queue {
        if let Some(slot) = state.stats.not_emulated.get_mut(opcode.0 as usize) {
            *slot += 1;
        }
        tracing::debug!(queue = %state.queue, location = %packet.location, "{opcode} is not emulated; skipped");
        ctx.backend.not_emulated(&NotEmulated { queue: state.queue, opcode, location: packet.location });
        return Ok(Flow::Continue);
    }
    state.stats.unknown += 1;
    let report = unknown_packet_report(state.queue, &ctx.memory, packet);
    tracing::warn!(
        queue = %state.queue,
        location = %packet.location,
        header = format_args!("{:#010x}", packet.header.0),
        "{} (opcode {:#04x}), {} dwords:\n{}",
        if wrong_queue { "graphics-only packet on a compute queue" } else { "unknown packet" },
        opcode.0,
        report.length_dw,
        report.dump
    );
    ctx.backend.unknown_packet(&report);
    if state.stats.unknown_packets.len() < state.config.max_unknown_reports {
        state.stats.unknown_packets.push(report);
    }
    match state.config.unknown_packet_policy {
        UnknownPacketPolicy::Skip => Ok(Flow::Continue),
        UnknownPacketPolicy::Stop => Err(Box::new(Pm4Error::UnknownPacket {
            location: packet.location,
            header: packet.header.0,
            opcode: opcode.0,
        })),
    }
}

/// Counts and reports a form of an emulated packet that is not emulated
/// (`what` names the form), with no effect.
pub(crate) fn report_not_emulated(ctx: &mut Ctx<'_>, what: &str) {
    tracing::debug!(queue = %ctx.state.queue, location = %ctx.location, "{} {what}: not emulated", ctx.opcode);
    if let Some(slot) = ctx.state.stats.not_emulated.get_mut(ctx.opcode.0 as usize) {
        *slot += 1;
    }
    ctx.backend.not_emulated(&NotEmulated { queue: ctx.state.queue, opcode: ctx.opcode, location: ctx.location });
}
