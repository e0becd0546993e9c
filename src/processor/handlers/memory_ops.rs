//! Packets that move data: WRITE_DATA, COPY_DATA, DMA_DATA, ATOMIC_MEM and
//! COND_WRITE.

use crate::memory::GuestMemory;
use crate::packet::body::{AtomicMem, CompareFunction, CondWrite, CopyData, DmaData, WriteData};
use crate::packet::wire::{
    AtomicCommand, AtomicOp, CondWriteSpace, CopyDataDstSel, CopyDataSrcSel, DmaDataDstSel, DmaDataSrcSel,
    WriteDataDstSel,
};
use crate::processor::handlers::report_not_emulated;
use crate::processor::view::context::{Ctx, HandlerResult, Step};
use crate::processor::{Pm4Error, SuspendReason};
use crate::regs::gfx103;

pub(crate) fn write_data(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let w = ctx.decode::<WriteData>(body)?;
    write(ctx, &w)?;
    Ok(Step::Next)
}

/// WRITE_DATA's effect: its dwords to registers, memory or GDS. Every
/// memory DST_SEL is guest memory here (the cache a write goes through is
/// invisible to an emulator).
fn write(ctx: &mut Ctx<'_>, w: &WriteData<'_>) -> Result<(), Pm4Error> {
    use WriteDataDstSel as Dst;
    match WriteDataDstSel::from_wire(w.dst_sel) {
        Some(Dst::MemMappedRegister) => {
            let register = w.destination as u32;
            for (i, value) in w.data.iter().enumerate() {
                let r = if w.one_address { register } else { register.wrapping_add(i as u32) };
                ctx.write_register(r, *value);
            }
        }
        Some(Dst::MemGrbm | Dst::TcL2 | Dst::Mem | Dst::MemMappedAdcPersistentState | Dst::PreemptionMetaMemory) => {
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
        Some(Dst::Gds) => {
            // GDS: DST_ADDR_LO [15:0] is the byte offset.
            let offset = w.destination & 0xFFFF;
            if w.one_address {
                if let Some(last) = w.data.last() {
                    ctx.write_gds(offset, std::slice::from_ref(last))?;
                }
            } else {
                ctx.write_gds(offset, w.data)?;
            }
        }
        Some(Dst::Reserved) | None => report_not_emulated(ctx, "reserved destination"),
    }
    Ok(())
}

/// Reads a COPY_DATA source value (`None` for the atomic-return sources,
/// not emulated, and undefined ones).
fn copy_source(ctx: &mut Ctx<'_>, c: &CopyData) -> Result<Option<u64>, Pm4Error> {
    use CopyDataSrcSel as Src;
    let value = match CopyDataSrcSel::from_wire(c.src_sel) {
        Some(Src::MemMappedRegister | Src::Perfcounters) => {
            let lo = u64::from(ctx.read_register(c.src as u32));
            if c.count_64 {
                lo | (u64::from(ctx.read_register(c.src as u32 + 1)) << 32)
            } else {
                lo
            }
        }
        Some(Src::Memory | Src::TcL2) => {
            if c.count_64 {
                ctx.read_u64(c.src)?
            } else {
                u64::from(ctx.read_u32(c.src)?)
            }
        }
        Some(Src::ImmediateData) => {
            if c.count_64 {
                c.src
            } else {
                c.src & 0xFFFF_FFFF
            }
        }
        Some(Src::Gds) => {
            let mut v = [0u32; 2];
            let n = if c.count_64 { 2 } else { 1 };
            ctx.read_gds(c.src, &mut v[..n])?;
            u64::from(v[0]) | (u64::from(v[1]) << 32)
        }
        Some(Src::GpuClockCount | Src::SystemClockCount) => ctx.gpu_clock(),
        Some(Src::AtomicReturnData | Src::GdsAtomicReturnData0 | Src::GdsAtomicReturnData1) | None => return Ok(None),
    };
    Ok(Some(value))
}

pub(crate) fn copy_data(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    use CopyDataDstSel as Dst;
    let c = ctx.decode::<CopyData>(body)?;
    let Some(value) = copy_source(ctx, &c)? else {
        report_not_emulated(ctx, "source (atomic return data)");
        return Ok(Step::Next);
    };
    match CopyDataDstSel::from_wire(c.dst_sel) {
        Some(Dst::MemMappedRegister | Dst::Perfcounters | Dst::MemMappedRegDc) => {
            ctx.write_register(c.dst as u32, value as u32);
            if c.count_64 {
                ctx.write_register(c.dst as u32 + 1, (value >> 32) as u32);
            }
        }
        Some(Dst::MemorySync | Dst::TcL2 | Dst::Memory) => {
            if c.count_64 {
                ctx.write_u64(c.dst, value)?;
            } else {
                ctx.write_u32(c.dst, value as u32)?;
            }
        }
        Some(Dst::Gds) => {
            let v = [value as u32, (value >> 32) as u32];
            ctx.write_gds(c.dst, if c.count_64 { &v } else { &v[..1] })?;
        }
        None => report_not_emulated(ctx, "reserved destination"),
    }
    Ok(Step::Next)
}

/// One side of a DMA_DATA transfer, as a stream of dwords.
#[derive(Clone, Copy)]
enum DmaEnd {
    /// Guest memory from an address; `step` false = the same dword again.
    Memory { address: u64, step: bool },
    /// Registers from an absolute index; `step` false = the same register.
    Register { index: u32, step: bool },
    /// The GDS from a byte offset (GDS increments, not the CP).
    Gds { offset: u64 },
    /// SRC_SEL 2: the DATA dword.
    Data(u32),
}

impl DmaEnd {
    fn at(self, dword: u32) -> Self {
        let bytes = u64::from(dword) * 4;
        match self {
            DmaEnd::Memory { address, step: true } => {
                DmaEnd::Memory { address: address.wrapping_add(bytes), step: true }
            }
            DmaEnd::Register { index, step: true } => DmaEnd::Register { index: index.wrapping_add(dword), step: true },
            DmaEnd::Gds { offset } => DmaEnd::Gds { offset: offset + bytes },
            other => other,
        }
    }
}

/// Reads `out.len()` dwords from a DMA source.
fn dma_read(ctx: &mut Ctx<'_>, src: DmaEnd, out: &mut [u32]) -> Result<(), Pm4Error> {
    match src {
        DmaEnd::Memory { address, step: true } => ctx.memory.read_dwords(address, out).map_err(|e| ctx.mem_err(e)),
        DmaEnd::Memory { address, step: false } => {
            out.fill(ctx.read_u32(address)?);
            Ok(())
        }
        DmaEnd::Register { index, step } => {
            for (i, slot) in out.iter_mut().enumerate() {
                *slot = ctx.read_register(if step { index.wrapping_add(i as u32) } else { index });
            }
            Ok(())
        }
        DmaEnd::Gds { offset } => ctx.read_gds(offset, out),
        DmaEnd::Data(value) => {
            out.fill(value);
            Ok(())
        }
    }
}

/// Writes dwords to a DMA destination.
fn dma_write(ctx: &mut Ctx<'_>, dst: DmaEnd, data: &[u32]) -> Result<(), Pm4Error> {
    match dst {
        DmaEnd::Memory { address, step: true } => {
            let mut bytes = [0u8; 256];
            for (slot, value) in bytes.chunks_exact_mut(4).zip(data) {
                slot.copy_from_slice(&value.to_le_bytes());
            }
            let r = ctx.memory.write_bytes(address, bytes.get(..data.len() * 4).unwrap_or(&[]));
            r.map_err(|e| ctx.mem_err(e))
        }
        // Every dword to the one address: the last one stays.
        DmaEnd::Memory { address, step: false } => match data.last() {
            Some(last) => ctx.write_u32(address, *last),
            None => Ok(()),
        },
        DmaEnd::Register { index, step: true } => {
            for (i, value) in data.iter().enumerate() {
                ctx.write_register(index.wrapping_add(i as u32), *value);
            }
            Ok(())
        }
        // Every dword to the one register: the last one stays.
        DmaEnd::Register { index, step: false } => {
            if let Some(last) = data.last() {
                ctx.write_register(index, *last);
            }
            Ok(())
        }
        DmaEnd::Gds { offset } => ctx.write_gds(offset, data),
        DmaEnd::Data(_) => Ok(()),
    }
}

/// DMA_DATA (§3.36): BYTE_COUNT bytes from the source (memory, registers,
/// GDS or the DATA dword) to the destination (memory, registers or GDS).
/// SAIC/DAIC keep the memory address or register of their side fixed;
/// GDS always increments. Register and GDS sides move whole dwords.
pub(crate) fn dma_data(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let d = ctx.decode::<DmaData>(body)?;
    if moves_nothing(&d) {
        return Ok(Step::Next);
    }
    let len = u64::from(d.byte_count);
    let (src, dst) = dma_ends(&d);
    // Memory to memory and fills of memory keep their byte-exact fast paths.
    if let Some(result) = copy_or_fill(ctx, src, dst, len) {
        return result.map(|()| Step::Next).map_err(Box::new);
    }
    match (src, dst) {
        (DmaEnd::Data(value), DmaEnd::Gds { offset }) => {
            ctx.state.global.fill_gds(offset, len, value).map_err(|e| ctx.gds_err(e))?;
            return Ok(Step::Next);
        }
        (DmaEnd::Memory { address, step: false }, DmaEnd::Memory { address: t, step: true }) => {
            let value = ctx.read_u32(address)?;
            return ctx.memory.fill(t, len, value).map(|()| Step::Next).map_err(|e| ctx.mem_err(e).into());
        }
        _ => {}
    }
    let mut dwords = d.byte_count / 4;
    if let DmaEnd::Register { index, step: true } = dst {
        // A register run ends with the register file.
        let available = crate::regs::space::END.saturating_sub(index);
        if dwords > available {
            tracing::warn!(queue = %ctx.state.queue, location = %ctx.location(), "DMA_DATA register run from {index:#x} leaves the register file after {available} of {dwords} dwords");
            dwords = available;
        }
    }
    let mut buf = [0u32; 64];
    let mut done = 0u32;
    while done < dwords {
        let n = (dwords - done).min(64) as usize;
        let chunk = &mut buf[..n];
        dma_read(ctx, src.at(done), chunk)?;
        dma_write(ctx, dst.at(done), chunk)?;
        done += n as u32;
    }
    Ok(Step::Next)
}

/// The source and destination of the DMA_DATA `d`.
fn dma_ends(d: &DmaData) -> (DmaEnd, DmaEnd) {
    let src = match DmaDataSrcSel::from_wire(d.src_sel) {
        Some(DmaDataSrcSel::Gds) => DmaEnd::Gds { offset: d.src & 0xFFFF },
        Some(DmaDataSrcSel::Data) => DmaEnd::Data(d.src as u32),
        _ if d.src_is_register => DmaEnd::Register { index: (d.src >> 2) as u32, step: !d.src_no_increment },
        _ => DmaEnd::Memory { address: d.src, step: !d.src_no_increment },
    };
    let dst = match DmaDataDstSel::from_wire(d.dst_sel) {
        Some(DmaDataDstSel::Gds) => DmaEnd::Gds { offset: d.dst & 0xFFFF },
        _ if d.dst_is_register => DmaEnd::Register { index: (d.dst >> 2) as u32, step: !d.dst_no_increment },
        _ => DmaEnd::Memory { address: d.dst, step: !d.dst_no_increment },
    };
    (src, dst)
}

/// A copy of `len` bytes from memory to memory or a fill of memory with
/// the DATA dword, both incrementing: done in one call to guest memory,
/// byte-exact. `None`, doing nothing, for any other pair of ends.
fn copy_or_fill(ctx: &mut Ctx<'_>, src: DmaEnd, dst: DmaEnd, len: u64) -> Option<Result<(), Pm4Error>> {
    let result = match (src, dst) {
        (DmaEnd::Memory { address: s, step: true }, DmaEnd::Memory { address: t, step: true }) => {
            ctx.memory.copy(t, s, len)
        }
        (DmaEnd::Data(value), DmaEnd::Memory { address, step: true }) => ctx.memory.fill(address, len, value),
        _ => return None,
    };
    Some(result.map_err(|e| ctx.mem_err(e)))
}

/// Whether the DMA_DATA `d` moves nothing: a read-only prefetch (DST_SEL
/// NOWHERE), a count of 0 (the CP_SYNC-only packet a driver ends a series
/// of copies with), or the DMA synchronisation idiom console SDKs emit (a
/// write of CP_DMA_READ_TAGS).
fn moves_nothing(d: &DmaData) -> bool {
    let dst = DmaDataDstSel::from_wire(d.dst_sel);
    dst == Some(DmaDataDstSel::Nowhere)
        || d.byte_count == 0
        || (dst != Some(DmaDataDstSel::Gds) && d.dst_is_register && (d.dst >> 2) as u32 == gfx103::CP_DMA_READ_TAGS)
}

/// Applies a TC atomic operation (`op`, a base code: the 64-bit and
/// non-returning variants folded); returns the new value.
fn atomic_result(op: AtomicOp, old: u64, src: u64, cmp: u64, is_64: bool) -> u64 {
    let (old_s, src_s) =
        if is_64 { (old as i64, src as i64) } else { (i64::from(old as u32 as i32), i64::from(src as u32 as i32)) };
    let v = match op {
        AtomicOp::Swap => src,
        AtomicOp::Cmpswap => {
            if old == cmp {
                src
            } else {
                old
            }
        }
        AtomicOp::Add => old.wrapping_add(src),
        AtomicOp::Sub => old.wrapping_sub(src),
        AtomicOp::Smin => (old_s.min(src_s)) as u64,
        AtomicOp::Umin => old.min(src),
        AtomicOp::Smax => (old_s.max(src_s)) as u64,
        AtomicOp::Umax => old.max(src),
        AtomicOp::And => old & src,
        AtomicOp::Or => old | src,
        AtomicOp::Xor => old ^ src,
        AtomicOp::Inc => {
            if old >= src {
                0
            } else {
                old.wrapping_add(1)
            }
        }
        AtomicOp::Dec => {
            if old == 0 || old > src {
                src
            } else {
                old - 1
            }
        }
    };
    if is_64 {
        v
    } else {
        v & 0xFFFF_FFFF
    }
}

pub(crate) fn atomic_mem(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let a = ctx.decode::<AtomicMem>(body)?;
    let is_64 = a.is_64();
    let (src, cmp) = if is_64 { (a.src, a.cmp) } else { (a.src & 0xFFFF_FFFF, a.cmp & 0xFFFF_FFFF) };
    let op = AtomicOp::from_wire(a.base_op());
    // COMMAND 1: repeat the compare-swap until it succeeds (a spin lock).
    let spin = AtomicCommand::from_wire(a.command) == Some(AtomicCommand::Loop) && op == Some(AtomicOp::Cmpswap);
    let read = || -> Result<u64, Pm4Error> {
        if is_64 {
            ctx.read_u64(a.address)
        } else {
            ctx.read_u32(a.address).map(u64::from)
        }
    };
    let Some(op) = op else {
        read()?;
        report_not_emulated(ctx, "atomic operation");
        return Ok(Step::Next);
    };
    if spin {
        let current = read()?;
        if current != cmp {
            return Ok(ctx.suspend(SuspendReason::AtomicLoop { address: a.address, compare: cmp, current }));
        }
    }
    // One indivisible read-modify-write on guest memory: a CPU thread or
    // another queue never sees (or slips between) a half-done operation.
    let mut update = |old: u64| if !spin || old == cmp { atomic_result(op, old, src, cmp, is_64) } else { old };
    let old = if is_64 {
        ctx.memory.atomic_update_u64(a.address, &mut update)
    } else {
        ctx.memory.atomic_update_u32(a.address, &mut |old| update(u64::from(old)) as u32).map(u64::from)
    }
    .map_err(|e| ctx.mem_err(e))?;
    if spin && old != cmp {
        // Another thread changed it between the check and the swap.
        return Ok(ctx.suspend(SuspendReason::AtomicLoop { address: a.address, compare: cmp, current: old }));
    }
    Ok(Step::Next)
}

pub(crate) fn cond_write(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let c = ctx.decode::<CondWrite>(body)?;
    let value = if c.poll_memory { ctx.read_u32(c.poll)? } else { ctx.read_register(c.poll as u32) };
    if c.function.test(u64::from(value & c.mask), u64::from(c.reference)) && c.function != CompareFunction::Reserved {
        match CondWriteSpace::from_wire(c.write_space) {
            Some(CondWriteSpace::Register) => ctx.write_register(c.write as u32, c.data),
            Some(CondWriteSpace::Memory) => ctx.write_u32(c.write, c.data)?,
            Some(CondWriteSpace::Scratch) | None => report_not_emulated(ctx, "scratch write space"),
        }
    }
    Ok(Step::Next)
}

#[cfg(test)]
mod tests {
    use super::atomic_result;
    use crate::packet::wire::AtomicOp;

    #[test]
    fn atomics() {
        let op = |code| AtomicOp::from_wire(code).unwrap();
        assert_eq!(atomic_result(op(0x0F), 5, 3, 0, false), 8);
        assert_eq!(atomic_result(op(0x10), 0, 1, 0, false), 0xFFFF_FFFF);
        assert_eq!(atomic_result(op(0x08), 5, 9, 5, false), 9);
        assert_eq!(atomic_result(op(0x08), 4, 9, 5, false), 4);
        assert_eq!(atomic_result(op(0x11), 0xFFFF_FFFF, 1, 0, false), 0xFFFF_FFFF);
        assert_eq!(atomic_result(op(0x12), 0xFFFF_FFFF, 1, 0, false), 1);
        assert_eq!(atomic_result(op(0x18), 3, 3, 0, false), 0);
        assert_eq!(atomic_result(op(0x19), 0, 7, 0, false), 7);
        assert_eq!(atomic_result(op(0x0F), u64::MAX, 1, 0, true), 0);
        assert_eq!(AtomicOp::from_wire(0x01), None);
    }
}
