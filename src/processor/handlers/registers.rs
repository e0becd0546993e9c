//! Register writers: SET_*_REG (and their _INDEX forms) when the view loop
//! does not store them inline, LOAD_*_REG, LOAD_*_REG_INDEX (including the
//! offset/value-pair tables PS5 drivers load straight from shader
//! containers), CONTEXT_REG_RMW, REG_RMW, CLEAR_STATE, CONTEXT_CONTROL,
//! SET_QUEUE_REG, SET_CONTEXT_REG_INDIRECT and SET_SH_REG_OFFSET. The
//! stores themselves are `processor::register_store`'s.

use crate::memory::address_from_dwords;
use crate::memory::GuestMemory;
use crate::memory::ADDRESS_MASK;
use crate::packet::body::{
    BodyError, ClearState, ContextControl, ContextRegRmw, LoadRegisters, LoadRegistersIndex, RegRmw,
    SetContextRegIndirect, SetQueueReg, SetRegisters, SetShRegOffset,
};
use crate::packet::wire::{ClearStateCmd, LoadIndex};
use crate::packet::Opcode;
use crate::processor::register_store::{write_register, write_run, CLEAR_STATE_PIECES};
use crate::processor::view::context::{Ctx, HandlerResult, Step};
use crate::processor::ProcessorState;
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

/// SET_*_REG and their _INDEX forms: the values go to consecutive
/// registers of the opcode's space from dw0 \[15:0\]. The view loop stores
/// most runs itself (`register_store::store_register_run`); this is the
/// store of every other one, and of every run on the general path.
pub(crate) fn set_registers(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let set = ctx.decode::<SetRegisters>(body)?;
    let (base, size) = space_of(set.opcode);
    write_run(ctx.state, base, size, set.offset, set.values);
    Ok(Step::Next)
}

/// LOAD_UCONFIG/SH/CONFIG/CONTEXT_REG: (offset, count) ranges from a memory
/// image of the register space.
pub(crate) fn load_reg(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let load = ctx.decode::<LoadRegisters>(body)?;
    let base_address = load.address;
    let (base, size) = space_of(ctx.opcode());
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
    Ok(Step::Next)
}

/// Is `offset` (as stored in an offset/value table) a padding entry?
/// Tables pad with 0xFFFFFFFF and with per-space ids that have bit 31 set.
#[inline]
fn is_padding(offset: u32) -> bool {
    offset == u32::MAX || offset & 0x8000_0000 != 0
}

/// LOAD_SH/UCONFIG/CONTEXT_REG_INDEX.
pub(crate) fn load_reg_index(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let load = ctx.decode::<LoadRegistersIndex>(body)?;
    let address = if LoadIndex::from_wire(load.index) == Some(LoadIndex::Offset) {
        ctx.state.bases.load_index.wrapping_add(u64::from(load.address_hi)) & crate::memory::ADDRESS_MASK
    } else {
        address_from_dwords(load.address_lo, load.address_hi & 0xFFFF, 2)
    };
    let (base, size) = space_of(ctx.opcode());
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
    Ok(Step::Next)
}

pub(crate) fn context_reg_rmw(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let ContextRegRmw { offset, mask, data } = ctx.decode(body)?;
    if offset < space::CONTEXT_SIZE {
        let register = space::CONTEXT + offset;
        let old = ctx.state.regs.get(register);
        ctx.write_register(register, (old & !mask) | (data & mask));
    }
    Ok(Step::Next)
}

pub(crate) fn reg_rmw(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let rmw = ctx.decode::<RegRmw>(body)?;
    let register = rmw.register;
    let and_mask = if rmw.and_from_register { ctx.read_register(rmw.and_mask & 0x3FFFF) } else { rmw.and_mask };
    let or_mask = if rmw.or_from_register { ctx.read_register(rmw.or_mask & 0x3FFFF) } else { rmw.or_mask };
    let old = ctx.read_register(register);
    ctx.write_register(register, (old & and_mask) | or_mask);
    Ok(Step::Next)
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

/// CLEAR_STATE (§3.3): CMD 0 loads the clear-state values into the context
/// registers of the clear-state extents (the values of
/// `registers/clear-state-gfx10.json`: 0 unless listed; registers outside
/// the extents keep theirs), 1 pushes the context, 2 pops it, 3 pushes then
/// clears.
pub(crate) fn clear_state(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let cmd = ctx.decode::<ClearState>(body)?.cmd;
    run_clear_state(ctx.state, cmd);
    Ok(Step::Next)
}

/// CLEAR_STATE's effect for its CMD (an undefined one does nothing).
fn run_clear_state(state: &mut ProcessorState, cmd: u32) {
    match ClearStateCmd::from_wire(cmd) {
        Some(ClearStateCmd::ClearState) => load_clear_state(state),
        Some(ClearStateCmd::PushState) => push_context(state),
        Some(ClearStateCmd::PopState) => pop_context(state),
        Some(ClearStateCmd::PushClearState) => {
            push_context(state);
            load_clear_state(state);
        }
        None => {}
    }
}

/// The context space as CLEAR_STATE leaves it: the generated non-zero
/// values, 0 elsewhere (built at compile time).
static CLEAR_STATE_IMAGE: [u32; space::CONTEXT_SIZE as usize] = clear_state_image();

const fn clear_state_image() -> [u32; space::CONTEXT_SIZE as usize] {
    use crate::regs::generated::clear_state::NONZERO;
    let mut image = [0u32; space::CONTEXT_SIZE as usize];
    let mut i = 0;
    while i < NONZERO.len() {
        let (register, value) = NONZERO[i];
        let offset = register.wrapping_sub(space::CONTEXT) as usize;
        if offset < image.len() {
            image[offset] = value;
        }
        i += 1;
    }
    image
}

/// Writes the clear-state image into the context registers' extents: one
/// copy per piece of an extent in one register page
/// (`register_store::CLEAR_STATE_PIECES`), then the state groups their registers
/// mark: the same stores and marks as writing each register in turn.
pub(crate) fn load_clear_state(state: &mut ProcessorState) {
    let plan = &CLEAR_STATE_PIECES;
    for &(offset, count) in plan.pieces() {
        let slots = state.regs.range_mut(space::CONTEXT + offset, count);
        if let Some(values) = CLEAR_STATE_IMAGE.get(offset as usize..(offset + count) as usize) {
            if slots.len() == values.len() {
                slots.copy_from_slice(values);
            }
        }
    }
    state.dirty |= plan.marks;
}

/// CONTEXT_CONTROL: register shadowing enables; every register already lives
/// in the register file, so only the enables are kept.
pub(crate) fn context_control(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let control = ctx.decode(body)?;
    set_context_control(ctx.state, control);
    Ok(Step::Next)
}

/// CONTEXT_CONTROL's effect: the enables with their bit 31 set.
fn set_context_control(state: &mut ProcessorState, ContextControl { load, shadow }: ContextControl) {
    let (mut l, mut s) = state.context_control;
    if load & (1 << 31) != 0 {
        l = load;
    }
    if shadow & (1 << 31) != 0 {
        s = shadow;
    }
    state.context_control = (l, s);
}

/// SET_QUEUE_REG (compute queues): values for the queue's own registers
/// from dw0 [7:0] on, kept per processor (256 of them).
pub(crate) fn set_queue_reg(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let set = ctx.decode::<SetQueueReg>(body)?;
    let regs = &mut ctx.state.queue_registers;
    if regs.len() != 256 {
        regs.resize(256, 0);
    }
    for (slot, value) in regs.iter_mut().skip(set.offset as usize).zip(set.values) {
        *slot = *value;
    }
    Ok(Step::Next)
}

/// SET_CONTEXT_REG_INDIRECT (0x73, §2, §3.2): context register
/// REG_OFFSET + i takes the dword at the patch table (SET_BASE index 0) +
/// 4 × the i-th offset of the packet.
pub(crate) fn set_context_reg_indirect(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let s = ctx.decode::<SetContextRegIndirect>(body)?;
    let table = ctx.state.bases.patch_table;
    for (i, offset) in s.table_offsets.iter().enumerate() {
        let relative = s.reg_offset + i as u32;
        if relative >= space::CONTEXT_SIZE {
            run_leaves_space(ctx.state, space::CONTEXT + s.reg_offset, i, s.table_offsets.len());
            break;
        }
        let value = ctx.read_u32(table.wrapping_add(u64::from(*offset) * 4) & ADDRESS_MASK)?;
        ctx.write_register(space::CONTEXT + relative, value);
    }
    Ok(Step::Next)
}

/// SET_SH_REG_OFFSET (0x77, §3.42), read as follows where the reference is
/// silent (ARCHITECTURE.md says so too):
/// - INDEX 0: the SH register pair at REG_OFFSET gets the address of
///   (current IB base + IB_OFFSET × 4): low 32 bits, then bits \[47:32\]
///   with DRIVER_DATA in \[31:16\];
/// - INDEX 2: the register gets the dword at the SET_BASE index-5 base +
///   DATA_OFFSET (bytes);
/// - INDEX 1: the pair gets the two dwords there.
pub(crate) fn set_sh_reg_offset(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let s = ctx.decode::<SetShRegOffset>(body)?;
    let values = match s.index {
        0 => {
            let address = ctx.location().buffer.wrapping_add(u64::from(s.offset) * 4) & ADDRESS_MASK;
            [address as u32, ((address >> 32) as u32 & 0xFFFF) | (s.driver_data.unwrap_or(0) << 16)]
        }
        1 | 2 => {
            let at = ctx.state.bases.sh_offset.wrapping_add(u64::from(s.offset)) & ADDRESS_MASK;
            let first = ctx.read_u32(at)?;
            let second = if s.index == 1 { ctx.read_u32(at.wrapping_add(4))? } else { 0 };
            [first, second]
        }
        _ => {
            return Err(Box::new(
                ctx.body_err(BodyError::Invalid { opcode: ctx.opcode(), what: "INDEX 3 is reserved" }),
            ))
        }
    };
    let count = if s.index == 2 { 1 } else { 2 };
    write_run(ctx.state, space::SH, space::SH_SIZE, s.reg_offset, &values[..count]);
    Ok(Step::Next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::QueueId;
    use crate::processor::global::GlobalState;
    use crate::processor::ProcessorConfig;
    use std::sync::Arc;

    /// A queue's state with every context register holding a value of its
    /// own and no state group marked.
    fn dirty_context() -> ProcessorState {
        let global = Arc::new(GlobalState::new(16));
        let mut state = ProcessorState::new(QueueId::GRAPHICS, ProcessorConfig::default(), global);
        for offset in 0..space::CONTEXT_SIZE {
            state.regs.set(space::CONTEXT + offset, 0x5A00_0000 | offset);
        }
        state.dirty = 0;
        state
    }

    #[test]
    fn clear_state_stores_and_marks_what_writing_each_extent_in_turn_does() {
        use crate::regs::generated::clear_state::EXTENTS;
        let mut loaded = dirty_context();
        load_clear_state(&mut loaded);
        // The general way: one register run per extent.
        let mut written = dirty_context();
        for &(start, count) in EXTENTS {
            let offset = start - space::CONTEXT;
            let values = &CLEAR_STATE_IMAGE[offset as usize..(offset + count) as usize];
            write_run(&mut written, space::CONTEXT, space::CONTEXT_SIZE, offset, values);
        }
        let context = |state: &ProcessorState| -> Vec<u32> {
            (space::CONTEXT..space::CONTEXT + space::CONTEXT_SIZE).map(|r| state.regs.get(r)).collect()
        };
        assert_eq!(context(&loaded), context(&written));
        assert_eq!(loaded.dirty, written.dirty);
        // Registers outside the extents kept theirs; inside, the image.
        assert_eq!(loaded.regs.get(0xA0D7), 0x5A00_00D7);
        assert_eq!(loaded.regs.get(crate::regs::gfx103::CB_TARGET_MASK), 0xFFFF_FFFF);
        assert_eq!(loaded.regs.get(0xA001), 0);
        assert_ne!(loaded.dirty & crate::processor::state_group::SCISSOR, 0);
    }
}
