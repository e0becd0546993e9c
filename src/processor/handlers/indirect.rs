//! INDIRECT_BUFFER (call, or CHAIN = jump), its conditional form, and
//! INDIRECT_BUFFER_CONST (a buffer for the constant engine).

use crate::memory::{GuestMemory, MemoryError};
use crate::packet::body::{CondIndirectBuffer, IndirectBufferForm};
use crate::processor::view::context::{Ctx, HandlerResult, Step};
use crate::processor::{Engine, Pm4Error};

/// Most constant-engine buffers queued and not started yet: the drawing
/// engine hands the constant engine its buffers in order, and a constant
/// engine that waits must not let a looping drawing engine queue without end.
pub(crate) const MAX_CE_PENDING: usize = 256;

/// Calls (or with `chain`, jumps to) a buffer on the current execution:
/// the loop moves the cursor past the packet, so a call returns to the
/// next packet, then pushes the buffer (an IB stack already full is an
/// error at this packet) or replaces the current one.
fn enter(ctx: &mut Ctx<'_>, address: u64, size_dw: u32, chain: bool) -> HandlerResult {
    if size_dw == 0 {
        return Ok(Step::Next);
    }
    if let Some(step) = unmapped(ctx, address, size_dw)? {
        return Ok(step);
    }
    Ok(if chain { ctx.chain(address, size_dw) } else { ctx.call(address, size_dw) })
}

/// A buffer whose first dword is not mapped: an error naming this
/// INDIRECT_BUFFER packet (not the first packet of a buffer that cannot be
/// read), or with [`crate::processor::ProcessorConfig::skip_unmapped_ibs`]
/// a report to the backend and the next packet.
fn unmapped(ctx: &mut Ctx<'_>, address: u64, size_dw: u32) -> Result<Option<Step>, Pm4Error> {
    // The first header only: a buffer whose tail is unmapped runs up to the hole.
    let len = 4;
    if ctx.memory.is_mapped(address, len) {
        return Ok(None);
    }
    if ctx.state.config.skip_unmapped_ibs {
        let location = ctx.location();
        tracing::warn!(queue = %ctx.state.queue, %location, "skipped indirect buffer {address:#x} ({size_dw} dwords): not mapped");
        ctx.backend.skipped_indirect_buffer(ctx.state.queue, &location, address, size_dw);
        return Ok(Some(Step::Next));
    }
    Err(ctx.mem_err(MemoryError::Unmapped { address, len }))
}

pub(crate) fn indirect_buffer(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    match IndirectBufferForm::decode(ctx.opcode(), body).map_err(|e| ctx.body_err(e))? {
        IndirectBufferForm::Conditional(c) => match chosen(ctx, &c)? {
            Some((address, size)) => enter(ctx, address, size, false),
            None => Ok(Step::Next),
        },
        IndirectBufferForm::Plain(ib) => enter(ctx, ib.address, ib.size_dw, ib.chain),
    }
}

/// The buffer a conditional IB calls: IB1 when the compare passes, else
/// IB2 in MODE 2, else none.
fn chosen(ctx: &Ctx<'_>, c: &CondIndirectBuffer) -> Result<Option<(u64, u32)>, Pm4Error> {
    let value = ctx.read_u64(c.compare_address)?;
    Ok(if c.function.test(value & c.mask, c.reference) {
        Some(c.ib1)
    } else if c.mode == 2 {
        Some(c.ib2)
    } else {
        None
    })
}

/// INDIRECT_BUFFER_CONST: on the drawing engine it hands the buffer to the
/// constant engine; inside a constant-engine stream it is an ordinary call.
/// The conditional form (COND_INDIRECT_BUFFER_CONST, COUNT 12) picks IB1
/// or IB2 the same way the drawing engine's form does.
pub(crate) fn indirect_buffer_const(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let (address, size_dw, chain) = match IndirectBufferForm::decode(ctx.opcode(), body).map_err(|e| ctx.body_err(e))? {
        IndirectBufferForm::Conditional(c) => match chosen(ctx, &c)? {
            Some((address, size)) => (address, size, false),
            None => return Ok(Step::Next),
        },
        IndirectBufferForm::Plain(ib) => (ib.address, ib.size_dw, ib.chain),
    };
    if ctx.engine == Engine::Ce {
        return enter(ctx, address, size_dw, chain);
    }
    if size_dw == 0 {
        return Ok(Step::Next);
    }
    if let Some(step) = unmapped(ctx, address, size_dw)? {
        return Ok(step);
    }
    if ctx.state.ce_pending.len() >= MAX_CE_PENDING {
        return Err(Box::new(Pm4Error::ConstantEngineBacklog { location: ctx.location(), limit: MAX_CE_PENDING }));
    }
    ctx.state.ce_pending.push((address, size_dw));
    Ok(Step::RunConstantEngine)
}
