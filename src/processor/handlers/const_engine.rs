//! The constant engine's packets: its 48 KiB RAM (WRITE_CONST_RAM,
//! LOAD_CONST_RAM, DUMP_CONST_RAM(_OFFSET)) and the CE/DE counters that
//! order the constant engine and the drawing engine
//! (INCREMENT_CE_COUNTER, INCREMENT_DE_COUNTER, WAIT_ON_CE_COUNTER,
//! WAIT_ON_DE_COUNTER_DIFF).

use crate::packet::body::{
    BodyError, DumpConstRam, IncrementCeCounter, LoadConstRam, WaitOnDeCounterDiff, WriteConstRam,
};
use crate::packet::Opcode;
use crate::processor::view::context::{Ctx, HandlerResult, Step};
use crate::processor::{Pm4Error, SuspendReason, CE_RAM_BYTES};

fn ram_range(ctx: &mut Ctx<'_>, offset: u32, bytes: u64) -> Result<std::ops::Range<usize>, Pm4Error> {
    if ctx.state.ce_ram.len() != CE_RAM_BYTES {
        ctx.state.ce_ram.resize(CE_RAM_BYTES, 0);
    }
    let start = offset as usize;
    match usize::try_from(bytes).ok().and_then(|b| start.checked_add(b)) {
        Some(end) if end <= CE_RAM_BYTES => Ok(start..end),
        _ => Err(ctx.body_err(BodyError::Invalid { opcode: ctx.opcode(), what: "CE RAM range past 48 KiB" })),
    }
}

pub(crate) fn write_const_ram(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let WriteConstRam { offset, data } = ctx.decode(body)?;
    let range = ram_range(ctx, offset, data.len() as u64 * 4)?;
    if let Some(ram) = ctx.state.ce_ram.get_mut(range) {
        for (slot, v) in ram.chunks_exact_mut(4).zip(data) {
            slot.copy_from_slice(&v.to_le_bytes());
        }
    }
    Ok(Step::Next)
}

pub(crate) fn load_const_ram(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let LoadConstRam { address, num_dwords, start } = ctx.decode(body)?;
    let range = ram_range(ctx, start, u64::from(num_dwords) * 4)?;
    let memory = &ctx.memory;
    let result = match ctx.state.ce_ram.get_mut(range) {
        Some(ram) => crate::memory::GuestMemory::read_bytes(memory, address, ram),
        None => Ok(()),
    };
    result.map_err(|e| ctx.mem_err(e))?;
    Ok(Step::Next)
}

/// DUMP_CONST_RAM and DUMP_CONST_RAM_OFFSET: CE RAM → memory; with
/// INCREMENT_CE set the CE counter is bumped after the dump.
pub(crate) fn dump_const_ram(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let dump = ctx.decode::<DumpConstRam>(body)?;
    let address = if dump.opcode == Opcode::DUMP_CONST_RAM_OFFSET {
        ctx.state.bases.ce_dst.wrapping_add(dump.destination) & crate::memory::ADDRESS_MASK
    } else {
        dump.destination
    };
    let range = ram_range(ctx, dump.offset, u64::from(dump.num_dwords) * 4)?;
    let result = match ctx.state.ce_ram.get(range) {
        Some(ram) => crate::memory::GuestMemory::write_bytes(&ctx.memory, address, ram),
        None => Ok(()),
    };
    result.map_err(|e| ctx.mem_err(e))?;
    // INCREMENT_CE (bit 30, gfx10 order): bump the CE counter once dumped.
    if dump.increment_ce {
        ctx.state.ce_counter = ctx.state.ce_counter.wrapping_add(1);
    }
    Ok(Step::Next)
}

pub(crate) fn increment_ce_counter(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let sel = ctx.decode::<IncrementCeCounter>(body)?.select;
    if sel & 1 != 0 || sel == 0 {
        ctx.state.ce_counter = ctx.state.ce_counter.wrapping_add(1);
    }
    Ok(Step::Next)
}

pub(crate) fn increment_de_counter(ctx: &mut Ctx<'_>, _: &[u32]) -> HandlerResult {
    ctx.state.de_counter = ctx.state.de_counter.wrapping_add(1);
    Ok(Step::RunConstantEngine)
}

/// WAIT_ON_CE_COUNTER: the drawing engine waits until the CE counter is
/// ahead of the DE counter.
pub(crate) fn wait_on_ce_counter(ctx: &mut Ctx<'_>, _: &[u32]) -> HandlerResult {
    let (ce, de) = (ctx.state.ce_counter, ctx.state.de_counter);
    if ce.wrapping_sub(de) as i32 > 0 {
        Ok(Step::Next)
    } else {
        Ok(ctx.suspend(SuspendReason::WaitOnCeCounter { ce, de }))
    }
}

/// WAIT_ON_DE_COUNTER_DIFF: the constant engine waits while it is `diff`
/// or more ahead of the drawing engine.
pub(crate) fn wait_on_de_counter_diff(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let diff = ctx.decode::<WaitOnDeCounterDiff>(body)?.diff;
    let (ce, de) = (ctx.state.ce_counter, ctx.state.de_counter);
    if ce.wrapping_sub(de) >= diff {
        Ok(ctx.suspend(SuspendReason::WaitOnDeCounterDiff { ce, de, diff }))
    } else {
        Ok(Step::Next)
    }
}
