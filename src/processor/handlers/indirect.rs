//! INDIRECT_BUFFER (call, or CHAIN = jump), its conditional form, and
//! INDIRECT_BUFFER_CONST (a buffer for the constant engine).

use crate::packet::body::{CondIndirectBuffer, IndirectBuffer};
use crate::packet::Packet;
use crate::processor::context::{Ctx, Flow};
use crate::processor::{Engine, Pm4Error};

/// Most constant-engine buffers queued and not started yet: the drawing
/// engine hands the constant engine its buffers in order, and a constant
/// engine that waits must not let a looping drawing engine queue without end.
pub(crate) const MAX_CE_PENDING: usize = 256;

/// Calls (or with `chain`, jumps to) a buffer on the current execution.
/// The loop advanced the cursor past the packet already, so a call returns
/// to the next packet.
fn enter(ctx: &mut Ctx<'_>, address: u64, size_dw: u32, chain: bool) -> Result<Flow, Pm4Error> {
    if size_dw == 0 {
        return Ok(Flow::Continue);
    }
    if chain {
        ctx.exec.chain(address, size_dw);
        return Ok(Flow::Continue);
    }
    if !ctx.exec.push(address, size_dw) {
        return Err(Pm4Error::IbStackOverflow {
            location: *ctx.location,
            target: address,
            depth: ctx.exec.depth() + 1,
            limit: ctx.exec.max_depth(),
        });
    }
    Ok(Flow::Continue)
}

pub(crate) fn indirect_buffer(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> Result<Flow, Pm4Error> {
    if p.body.len() >= 13 {
        let c = CondIndirectBuffer::decode(p).map_err(|e| ctx.body_err(e))?;
        let value = ctx.read_u64(c.compare_address)?;
        if c.function.test(value & c.mask, c.reference) {
            return enter(ctx, c.ib1.0, c.ib1.1, false);
        }
        if c.mode == 2 {
            return enter(ctx, c.ib2.0, c.ib2.1, false);
        }
        return Ok(Flow::Continue);
    }
    let ib = IndirectBuffer::decode(p).map_err(|e| ctx.body_err(e))?;
    enter(ctx, ib.address, ib.size_dw, ib.chain)
}

/// INDIRECT_BUFFER_CONST: on the drawing engine it hands the buffer to the
/// constant engine; inside a constant-engine stream it is an ordinary call.
/// The conditional form (COND_INDIRECT_BUFFER_CONST, COUNT 12) picks IB1
/// or IB2 the same way the drawing engine's form does.
pub(crate) fn indirect_buffer_const(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> Result<Flow, Pm4Error> {
    let (address, size_dw, chain) = if p.body.len() >= 13 {
        let c = CondIndirectBuffer::decode(p).map_err(|e| ctx.body_err(e))?;
        let value = ctx.read_u64(c.compare_address)?;
        if c.function.test(value & c.mask, c.reference) {
            (c.ib1.0, c.ib1.1, false)
        } else if c.mode == 2 {
            (c.ib2.0, c.ib2.1, false)
        } else {
            return Ok(Flow::Continue);
        }
    } else {
        let ib = IndirectBuffer::decode(p).map_err(|e| ctx.body_err(e))?;
        (ib.address, ib.size_dw, ib.chain)
    };
    if ctx.engine == Engine::Ce {
        return enter(ctx, address, size_dw, chain);
    }
    if size_dw == 0 {
        return Ok(Flow::Continue);
    }
    if ctx.state.ce_pending.len() >= MAX_CE_PENDING {
        return Err(Pm4Error::ConstantEngineBacklog { location: *ctx.location, limit: MAX_CE_PENDING });
    }
    ctx.state.ce_pending.push((address, size_dw));
    Ok(Flow::RunConstantEngine)
}
