//! Register writers: SET_*_REG (and their _INDEX forms), LOAD_*_REG,
//! LOAD_*_REG_INDEX (including the offset/value-pair tables PS5 drivers load
//! straight from shader containers), CONTEXT_REG_RMW, REG_RMW, CLEAR_STATE
//! and CONTEXT_CONTROL.

use crate::memory::address_from_dwords;
use crate::memory::GuestMemory;
use crate::packet::body::{
    ClearState, ContextControl, ContextRegRmw, LoadRegisters, LoadRegistersIndex, RegRmw, SetQueueReg,
};
use crate::packet::{Opcode, Packet};
use crate::processor::context::{write_register, Ctx, Flow};
use crate::processor::{tables, Pm4Error, ProcessorState};
use crate::regs::{space, RegisterSpace};

/// `(space base, space size)` of the space an opcode writes.
fn space_of(opcode: Opcode) -> (u32, u32) {
    let space = opcode.register_space().unwrap_or(RegisterSpace::UCONFIG);
    (space.base, space.size)
}

#[cold]
fn run_leaves_space(state: &ProcessorState, first: u32, written: usize, total: usize) {
    tracing::warn!(queue = %state.queue, "register run from {first:#x} leaves its space after {written} of {total} values");
}

/// Writes `values` to consecutive registers of a space from `offset`;
/// values that would run past the space's end are dropped and logged.
#[inline]
pub(crate) fn write_run(state: &mut ProcessorState, base: u32, size: u32, offset: u32, values: &[u32]) {
    let available = size.saturating_sub(offset) as usize;
    let values = if values.len() > available {
        run_leaves_space(state, base + offset, available, values.len());
        values.get(..available).unwrap_or(&[])
    } else {
        values
    };
    let first = base + offset;
    let marks = tables::register_run_marks(first, values.len());
    let mut done = 0usize;
    while let Some(rest) = values.get(done..).filter(|r| !r.is_empty()) {
        let slots = state.regs.range_mut(first + done as u32, rest.len() as u32);
        let n = slots.len();
        match rest.get(..n) {
            Some(chunk) if n > 0 => store_run(slots, chunk),
            _ => break,
        }
        done += n;
    }
    state.dirty |= marks & !tables::CALLS_HANDLER;
    if marks & tables::CALLS_HANDLER != 0 {
        run_handlers(state, first, values);
    }
}

/// Copies `values` into `slots` (runs are a few registers long: a loop
/// beats a memcpy call).
#[inline]
fn store_run(slots: &mut [u32], values: &[u32]) {
    match (slots, values) {
        // One and two registers: most runs, stored without loop set-up.
        ([slot], [value]) => *slot = *value,
        ([s0, s1], [v0, v1]) => {
            *s0 = *v0;
            *s1 = *v1;
        }
        (slots, values) => {
            for (slot, value) in slots.iter_mut().zip(values) {
                *slot = *value;
            }
        }
    }
}

/// [`write_run`] for the common case, inlined into the loop's fast path:
/// the run lies inside its space and inside one allocated register page,
/// and no register of it calls a handler. Returns false (having written
/// nothing) in any other case: the caller then calls [`write_run`].
#[inline(always)]
pub(crate) fn write_run_in_page(state: &mut ProcessorState, base: u32, size: u32, offset: u32, values: &[u32]) -> bool {
    let n = values.len() as u32;
    if offset.saturating_add(n) > size {
        return false;
    }
    let first = base + offset;
    let marks = tables::register_run_marks(first, values.len());
    if marks & tables::CALLS_HANDLER != 0 {
        return false;
    }
    let Some(slots) = state.regs.allocated_range_mut(first, n) else { return false };
    store_run(slots, values);
    state.dirty |= marks;
    true
}

/// The register handlers of a run, in register order, after every value of
/// the run is stored.
#[cold]
fn run_handlers(state: &mut ProcessorState, first: u32, values: &[u32]) {
    let actions = tables::register_actions(first, values.len());
    for (i, (action, value)) in actions.iter().zip(values).enumerate() {
        if let tables::RegisterAction::Call(handler) = action {
            handler(state, first + i as u32, *value);
        }
    }
}

/// LOAD_UCONFIG/SH/CONFIG/CONTEXT_REG: (offset, count) ranges from a memory
/// image of the register space.
pub(crate) fn load_reg(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> Result<Flow, Pm4Error> {
    let load = ctx.decode::<LoadRegisters>(p)?;
    let base_address = load.address;
    let (base, size) = space_of(p.opcode());
    for (offset, count) in load.ranges() {
        let mut buf = [0u32; 64];
        let mut done = 0u32;
        while done < count {
            let n = (count - done).min(buf.len() as u32);
            let chunk = &mut buf[..n as usize];
            let address = base_address.wrapping_add(u64::from(offset + done) * 4);
            ctx.memory.read_dwords(address, chunk).map_err(|e| ctx.mem_err(e))?;
            write_run(ctx.state, base, size, offset + done, chunk);
            done += n;
        }
    }
    Ok(Flow::Continue)
}

/// Is `offset` (as stored in an offset/value table) a padding entry?
/// Tables pad with 0xFFFFFFFF and with per-space ids that have bit 31 set.
#[inline]
fn is_padding(offset: u32) -> bool {
    offset == u32::MAX || offset & 0x8000_0000 != 0
}

/// LOAD_SH/UCONFIG/CONTEXT_REG_INDEX.
pub(crate) fn load_reg_index(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> Result<Flow, Pm4Error> {
    let load = ctx.decode::<LoadRegistersIndex>(p)?;
    let address = if load.index == 1 {
        ctx.state.bases.load_index.wrapping_add(u64::from(load.address_hi)) & crate::memory::ADDRESS_MASK
    } else {
        address_from_dwords(load.address_lo, load.address_hi & 0xFFFF, 2)
    };
    let (base, size) = space_of(p.opcode());
    if load.pairs {
        let mut buf = [0u32; 64];
        let total = u64::from(load.num_dwords) * 2;
        let mut done = 0u64;
        while done < total {
            let n = (total - done).min(buf.len() as u64) as usize;
            let chunk = &mut buf[..n];
            ctx.memory.read_dwords(address.wrapping_add(done * 4), chunk).map_err(|e| ctx.mem_err(e))?;
            for pair in chunk.chunks_exact(2) {
                let (offset, value) = (pair[0], pair[1]);
                if is_padding(offset) {
                    continue;
                }
                // Selector bits [30:28] are not part of the offset.
                let relative = offset & 0x0FFF_FFFF & 0xFFFF;
                if relative < size {
                    write_register(ctx.state, base + relative, value);
                }
            }
            done += n as u64;
        }
    } else {
        let mut buf = [0u32; 64];
        let mut done = 0u32;
        while done < load.num_dwords {
            let n = (load.num_dwords - done).min(buf.len() as u32);
            let chunk = &mut buf[..n as usize];
            ctx.memory.read_dwords(address.wrapping_add(u64::from(done) * 4), chunk).map_err(|e| ctx.mem_err(e))?;
            write_run(ctx.state, base, size, load.reg_offset + done, chunk);
            done += n;
        }
    }
    Ok(Flow::Continue)
}

pub(crate) fn context_reg_rmw(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> Result<Flow, Pm4Error> {
    let ContextRegRmw { offset, mask, data } = ctx.decode(p)?;
    if offset < space::CONTEXT_SIZE {
        let register = space::CONTEXT + offset;
        let old = ctx.state.regs.get(register);
        ctx.write_register(register, (old & !mask) | (data & mask));
    }
    Ok(Flow::Continue)
}

pub(crate) fn reg_rmw(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> Result<Flow, Pm4Error> {
    let rmw = ctx.decode::<RegRmw>(p)?;
    let register = rmw.register;
    let and_mask = if rmw.and_from_register { ctx.state.regs.get(rmw.and_mask & 0x3FFFF) } else { rmw.and_mask };
    let or_mask = if rmw.or_from_register { ctx.state.regs.get(rmw.or_mask & 0x3FFFF) } else { rmw.or_mask };
    let old = ctx.state.regs.get(register);
    ctx.write_register(register, (old & and_mask) | or_mask);
    Ok(Flow::Continue)
}

/// Saves the context registers on the context stack (bounded at 8).
pub(crate) fn push_context(state: &mut ProcessorState) {
    if state.context_stack.len() >= 8 {
        tracing::warn!(queue = %state.queue, "context push ignored: 8 contexts already saved");
        return;
    }
    let mut saved = vec![0u32; space::CONTEXT_SIZE as usize].into_boxed_slice();
    state.regs.read_into(space::CONTEXT, &mut saved);
    state.context_stack.push(saved);
}

/// Restores the context registers saved by the last push.
pub(crate) fn pop_context(state: &mut ProcessorState) {
    match state.context_stack.pop() {
        Some(saved) => {
            for (i, value) in saved.iter().enumerate() {
                write_register(state, space::CONTEXT + i as u32, *value);
            }
        }
        None => tracing::warn!(queue = %state.queue, "context pop with nothing saved"),
    }
}

/// CLEAR_STATE: CMD 0 clears the context registers to their defaults
/// (zero: the kernel's clear-state image is not part of a stream), 1 pushes,
/// 2 pops, 3 pushes then clears.
pub(crate) fn clear_state(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> Result<Flow, Pm4Error> {
    let cmd = ctx.decode::<ClearState>(p)?.cmd;
    if cmd == 1 || cmd == 3 {
        push_context(ctx.state);
    }
    if cmd == 2 {
        pop_context(ctx.state);
    }
    if cmd == 0 || cmd == 3 {
        // One run over the space: the same stores and actions as writing
        // each register in turn.
        static ZEROS: [u32; space::CONTEXT_SIZE as usize] = [0; space::CONTEXT_SIZE as usize];
        write_run(ctx.state, space::CONTEXT, space::CONTEXT_SIZE, 0, &ZEROS);
    }
    Ok(Flow::Continue)
}

/// CONTEXT_CONTROL: register shadowing enables; every register already lives
/// in the register file, so only the enables are kept.
pub(crate) fn context_control(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> Result<Flow, Pm4Error> {
    let ContextControl { load, shadow } = ctx.decode(p)?;
    let (mut l, mut s) = ctx.state.context_control;
    if load & (1 << 31) != 0 {
        l = load;
    }
    if shadow & (1 << 31) != 0 {
        s = shadow;
    }
    ctx.state.context_control = (l, s);
    Ok(Flow::Continue)
}

/// SET_QUEUE_REG (compute queues): values for the queue's own registers
/// from dw0 [7:0] on, kept per processor (256 of them).
pub(crate) fn set_queue_reg(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> Result<Flow, Pm4Error> {
    let set = ctx.decode::<SetQueueReg>(p)?;
    let regs = &mut ctx.state.queue_registers;
    if regs.len() != 256 {
        regs.resize(256, 0);
    }
    for (slot, value) in regs.iter_mut().skip(set.offset as usize).zip(set.values) {
        *slot = *value;
    }
    Ok(Flow::Continue)
}
