//! Packets that move data: WRITE_DATA, COPY_DATA, DMA_DATA, ATOMIC_MEM and
//! COND_WRITE.

use crate::backend::NotEmulated;
use crate::memory::GuestMemory;
use crate::packet::body::{AtomicMem, CompareFunction, CondWrite, CopyData, DmaData, WriteData};
use crate::packet::Packet;
use crate::processor::context::{Ctx, Flow};
use crate::processor::{Pm4Error, SuspendReason};
use crate::regs::gfx103;

fn report_not_emulated(ctx: &mut Ctx<'_>, what: &str) {
    tracing::debug!(queue = %ctx.state.queue, location = %ctx.location, "{} {what}: not emulated", ctx.opcode);
    if let Some(slot) = ctx.state.stats.not_emulated.get_mut(ctx.opcode.0 as usize) {
        *slot += 1;
    }
    ctx.backend.not_emulated(&NotEmulated { queue: ctx.state.queue, opcode: ctx.opcode, location: *ctx.location });
}

pub(crate) fn write_data(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> Result<Flow, Pm4Error> {
    let w = ctx.decode::<WriteData>(p)?;
    match w.dst_sel {
        0 => {
            let register = w.destination as u32;
            for (i, value) in w.data.iter().enumerate() {
                let r = if w.one_address { register } else { register.wrapping_add(i as u32) };
                ctx.write_register(r, *value);
            }
        }
        1 | 2 | 5 | 6 | 8 => {
            if w.one_address {
                if let Some(last) = w.data.last() {
                    ctx.write_u32(w.destination, *last)?;
                }
            } else {
                let mut bytes = [0u8; 256];
                let mut address = w.destination;
                for chunk in w.data.chunks(64) {
                    let n = chunk.len() * 4;
                    for (slot, value) in bytes.chunks_exact_mut(4).zip(chunk) {
                        slot.copy_from_slice(&value.to_le_bytes());
                    }
                    let r = ctx.memory.write_bytes(address, &bytes[..n]);
                    r.map_err(|e| ctx.mem_err(e))?;
                    address = address.wrapping_add(n as u64);
                }
            }
        }
        _ => report_not_emulated(ctx, "destination (GDS or reserved)"),
    }
    Ok(Flow::Continue)
}

/// Reads a COPY_DATA source value.
fn copy_source(ctx: &mut Ctx<'_>, c: &CopyData) -> Result<Option<u64>, Pm4Error> {
    let value = match c.src_sel {
        0 | 4 => {
            let lo = u64::from(ctx.state.regs.get(c.src as u32));
            if c.count_64 {
                lo | (u64::from(ctx.state.regs.get(c.src as u32 + 1)) << 32)
            } else {
                lo
            }
        }
        1 | 2 => {
            if c.count_64 {
                ctx.read_u64(c.src)?
            } else {
                u64::from(ctx.read_u32(c.src)?)
            }
        }
        5 => {
            if c.count_64 {
                c.src
            } else {
                c.src & 0xFFFF_FFFF
            }
        }
        9 | 10 => ctx.gpu_clock(),
        _ => return Ok(None),
    };
    Ok(Some(value))
}

pub(crate) fn copy_data(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> Result<Flow, Pm4Error> {
    let c = ctx.decode::<CopyData>(p)?;
    let Some(value) = copy_source(ctx, &c)? else {
        report_not_emulated(ctx, "source (GDS or atomic return)");
        return Ok(Flow::Continue);
    };
    match c.dst_sel {
        0 | 4 | 6 => {
            ctx.write_register(c.dst as u32, value as u32);
            if c.count_64 {
                ctx.write_register(c.dst as u32 + 1, (value >> 32) as u32);
            }
        }
        1 | 2 | 5 => {
            if c.count_64 {
                ctx.write_u64(c.dst, value)?;
            } else {
                ctx.write_u32(c.dst, value as u32)?;
            }
        }
        _ => report_not_emulated(ctx, "destination (GDS)"),
    }
    Ok(Flow::Continue)
}

pub(crate) fn dma_data(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> Result<Flow, Pm4Error> {
    let d = ctx.decode::<DmaData>(p)?;
    let len = u64::from(d.byte_count);
    if d.dst_sel == 2 || len == 0 {
        // A read-only prefetch, or nothing to move.
        return Ok(Flow::Continue);
    }
    if d.dst_sel == 1 || d.src_sel == 1 {
        report_not_emulated(ctx, "GDS transfer");
        return Ok(Flow::Continue);
    }
    if d.dst_is_register {
        // Register destinations: the CP_DMA_READ_TAGS synchronisation idiom
        // (and other register streams) write the last dword to the register.
        let register = (d.dst >> 2) as u32;
        if register != gfx103::CP_DMA_READ_TAGS {
            let value = if d.src_sel == 2 { d.src as u32 } else { ctx.read_u32(d.src)? };
            ctx.write_register(register, value);
        }
        return Ok(Flow::Continue);
    }
    let result = if d.src_sel == 2 {
        if d.dst_no_increment {
            ctx.memory.write_u32(d.dst, d.src as u32)
        } else {
            ctx.memory.fill(d.dst, len, d.src as u32)
        }
    } else if d.src_is_register {
        let value = ctx.state.regs.get((d.src >> 2) as u32);
        ctx.memory.fill(d.dst, len, value)
    } else if d.src_no_increment {
        match ctx.memory.read_u32(d.src) {
            Ok(value) => ctx.memory.fill(d.dst, len, value),
            Err(e) => Err(e),
        }
    } else if d.dst_no_increment {
        match ctx.memory.read_u32(d.src.wrapping_add(len.saturating_sub(4))) {
            Ok(value) => ctx.memory.write_u32(d.dst, value),
            Err(e) => Err(e),
        }
    } else {
        ctx.memory.copy(d.dst, d.src, len)
    };
    result.map_err(|e| ctx.mem_err(e))?;
    Ok(Flow::Continue)
}

/// Applies a TC atomic operation; returns the new value (None: no such op).
fn atomic_result(op: u32, old: u64, src: u64, cmp: u64, is_64: bool) -> Option<u64> {
    let (old_s, src_s) =
        if is_64 { (old as i64, src as i64) } else { (i64::from(old as u32 as i32), i64::from(src as u32 as i32)) };
    let v = match op {
        0x07 => src,
        0x08 => {
            if old == cmp {
                src
            } else {
                old
            }
        }
        0x0F => old.wrapping_add(src),
        0x10 => old.wrapping_sub(src),
        0x11 => (old_s.min(src_s)) as u64,
        0x12 => old.min(src),
        0x13 => (old_s.max(src_s)) as u64,
        0x14 => old.max(src),
        0x15 => old & src,
        0x16 => old | src,
        0x17 => old ^ src,
        0x18 => {
            if old >= src {
                0
            } else {
                old.wrapping_add(1)
            }
        }
        0x19 => {
            if old == 0 || old > src {
                src
            } else {
                old - 1
            }
        }
        _ => return None,
    };
    Some(if is_64 { v } else { v & 0xFFFF_FFFF })
}

pub(crate) fn atomic_mem(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> Result<Flow, Pm4Error> {
    let a = ctx.decode::<AtomicMem>(p)?;
    let is_64 = a.is_64();
    let (src, cmp) = if is_64 { (a.src, a.cmp) } else { (a.src & 0xFFFF_FFFF, a.cmp & 0xFFFF_FFFF) };
    let op = a.base_op();
    // COMMAND 1: repeat the compare-swap until it succeeds (a spin lock).
    let spin = a.command == 1 && op == 0x08;
    let read = || -> Result<u64, Pm4Error> {
        if is_64 {
            ctx.read_u64(a.address)
        } else {
            ctx.read_u32(a.address).map(u64::from)
        }
    };
    if atomic_result(op, 0, src, cmp, is_64).is_none() {
        read()?;
        report_not_emulated(ctx, "atomic operation");
        return Ok(Flow::Continue);
    }
    if spin {
        let current = read()?;
        if current != cmp {
            return Ok(Flow::Suspend(SuspendReason::AtomicLoop { address: a.address, compare: cmp, current }));
        }
    }
    // One indivisible read-modify-write on guest memory: a CPU thread or
    // another queue never sees (or slips between) a half-done operation.
    let mut update = |old: u64| match atomic_result(op, old, src, cmp, is_64) {
        Some(new) if !spin || old == cmp => new,
        _ => old,
    };
    let old = if is_64 {
        ctx.memory.atomic_update_u64(a.address, &mut update)
    } else {
        ctx.memory.atomic_update_u32(a.address, &mut |old| update(u64::from(old)) as u32).map(u64::from)
    }
    .map_err(|e| ctx.mem_err(e))?;
    if spin && old != cmp {
        // Another thread changed it between the check and the swap.
        return Ok(Flow::Suspend(SuspendReason::AtomicLoop { address: a.address, compare: cmp, current: old }));
    }
    Ok(Flow::Continue)
}

pub(crate) fn cond_write(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> Result<Flow, Pm4Error> {
    let c = ctx.decode::<CondWrite>(p)?;
    let value = if c.poll_memory { ctx.read_u32(c.poll)? } else { ctx.state.regs.get(c.poll as u32) };
    if c.function.test(u64::from(value & c.mask), u64::from(c.reference)) && c.function != CompareFunction::Reserved {
        match c.write_space {
            0 => ctx.write_register(c.write as u32, c.data),
            1 => ctx.write_u32(c.write, c.data)?,
            _ => report_not_emulated(ctx, "scratch write space"),
        }
    }
    Ok(Flow::Continue)
}

#[cfg(test)]
mod tests {
    use super::atomic_result;

    #[test]
    fn atomics() {
        assert_eq!(atomic_result(0x0F, 5, 3, 0, false), Some(8));
        assert_eq!(atomic_result(0x10, 0, 1, 0, false), Some(0xFFFF_FFFF));
        assert_eq!(atomic_result(0x08, 5, 9, 5, false), Some(9));
        assert_eq!(atomic_result(0x08, 4, 9, 5, false), Some(4));
        assert_eq!(atomic_result(0x11, 0xFFFF_FFFF, 1, 0, false), Some(0xFFFF_FFFF));
        assert_eq!(atomic_result(0x12, 0xFFFF_FFFF, 1, 0, false), Some(1));
        assert_eq!(atomic_result(0x18, 3, 3, 0, false), Some(0));
        assert_eq!(atomic_result(0x19, 0, 7, 0, false), Some(7));
        assert_eq!(atomic_result(0x0F, u64::MAX, 1, 0, true), Some(0));
        assert_eq!(atomic_result(0x01, 0, 0, 0, false), None);
    }
}
