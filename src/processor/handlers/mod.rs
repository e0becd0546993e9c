//! Packet handlers, one module per packet family. Every handler has one
//! signature (`view::context::Handler`): the context, placed on the packet,
//! and the packet's body in; a [`Step`] out. It decodes its body with its
//! [`crate::packet::body`] type (`Ctx::decode`) and applies the effect
//! through the context.
//!
//! | module | packets |
//! |---|---|
//! | `registers` | SET_*_REG (the general store), LOAD_*_REG(_INDEX), REG_RMW, CONTEXT_REG_RMW, CLEAR_STATE, CONTEXT_CONTROL, SET_QUEUE_REG, SET_CONTEXT_REG_INDIRECT, SET_SH_REG_OFFSET |
//! | `memory_ops` | WRITE_DATA, COPY_DATA, DMA_DATA, ATOMIC_MEM, COND_WRITE |
//! | `wait` | WAIT_REG_MEM(64), REWIND, MEM_SEMAPHORE |
//! | `events` | EVENT_WRITE, RELEASE_MEM / EVENT_WRITE_EOP, EVENT_WRITE_EOS, ACQUIRE_MEM, SURFACE_SYNC, OCCLUSION_QUERY |
//! | `draw` | every draw packet, index state, NUM_INSTANCES, SET_BASE, STRMOUT_BUFFER_UPDATE, program binding |
//! | `dispatch` | DISPATCH_DIRECT / _INDIRECT, the task/mesh dispatches |
//! | `predication` | SET_PREDICATION, COND_EXEC, PRED_EXEC |
//! | `indirect` | INDIRECT_BUFFER (call, chain, conditional), INDIRECT_BUFFER_CONST |
//! | `const_engine` | CE RAM and the CE/DE counters |
//! | `nop` | NOP, its payload conventions, packets with no effect |
//!
//! Packets with no handler, and embedders' private packets, are below.

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

use super::view::context::{Ctx, HandlerResult, Step};
use super::{unknown_packet_report, Pm4Error, UnknownPacketPolicy};
use crate::backend::NotEmulated;
use crate::packet::private::PrivatePacket;

/// The entry of every opcode with no handler on its queue (see
/// `processor::opcodes`): an embedder's private packet when its table
/// matches ([`private_packet`]), else [`unhandled`].
#[cold]
pub(crate) fn unhandled_packet(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    if private_packet(ctx, body) {
        return Ok(Step::Next);
    }
    unhandled(ctx, body)
}

/// Hands the packet to [`crate::backend::Backend::private_packet`] when the
/// embedder's private-packet table
/// ([`crate::processor::ProcessorConfig::private_packets`]) matches it;
/// false, doing nothing, when it does not.
pub(crate) fn private_packet(ctx: &mut Ctx<'_>, body: &[u32]) -> bool {
    let header = ctx.header();
    let Some(entry) = super::private_entry(&ctx.state.config.private_packets, ctx.state.queue, header, body) else {
        return false;
    };
    let packet = PrivatePacket {
        queue: ctx.state.queue,
        name: entry.name(),
        code: entry.code(),
        header,
        payload: entry.payload(body),
        location: ctx.location(),
    };
    tracing::debug!(queue = %packet.queue, location = %packet.location, "private packet {} (code {:#x})", packet.name, packet.code);
    ctx.backend.private_packet(&packet);
    true
}

/// A type-3 packet without a handler: known opcodes are reported as not
/// emulated, unknown ones with a hex dump; both are skipped by length (or,
/// for unknown packets under [`UnknownPacketPolicy::Stop`], stop).
#[cold]
pub(crate) fn unhandled(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let packet = &ctx.packet(body);
    let state = &mut *ctx.state;
    let opcode = packet.opcode();
    // A graphics-ring packet on a compute queue is reported like an unknown
    // packet of that queue: a driver bug on real hardware.
    let wrong_queue = !state.queue.is_graphics() && super::is_graphics_only(opcode);
    if opcode.is_known() && !wrong_queue {
        if let Some(slot) = state.stats.not_emulated.get_mut(opcode.0 as usize) {
            *slot += 1;
        }
        tracing::debug!(queue = %state.queue, location = %packet.location, "{opcode} is not emulated; skipped");
        ctx.backend.not_emulated(&NotEmulated { queue: state.queue, opcode, location: packet.location });
        return Ok(Step::Next);
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
        UnknownPacketPolicy::Skip => Ok(Step::Next),
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
    let (opcode, location) = (ctx.opcode(), ctx.location());
    tracing::debug!(queue = %ctx.state.queue, %location, "{opcode} {what}: not emulated");
    if let Some(slot) = ctx.state.stats.not_emulated.get_mut(opcode.0 as usize) {
        *slot += 1;
    }
    ctx.backend.not_emulated(&NotEmulated { queue: ctx.state.queue, opcode, location });
}
