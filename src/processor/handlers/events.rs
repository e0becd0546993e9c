//! Events and releases: EVENT_WRITE (flushes to the backend; ZPASS,
//! pipeline-statistics and stream-out samples written through
//! [`crate::backend::Backend::sample_event`]), RELEASE_MEM and the gfx7
//! EVENT_WRITE_EOP / EVENT_WRITE_EOS (data write, then fence/interrupt),
//! ACQUIRE_MEM / SURFACE_SYNC (cache actions) and OCCLUSION_QUERY.

use crate::backend::{CacheAction, Event, Fence, SampleKind};
use crate::packet::body::{AcquireMem, EventWrite, EventWriteEos, OcclusionQuery, ReleaseMem, SurfaceSync};
use crate::packet::wire::{EosCommand, EventType, ReleaseDataSel, ReleaseIntSel};
use crate::packet::Opcode;
use crate::processor::handlers::report_not_emulated;
use crate::processor::view::context::{Ctx, HandlerResult, Step};
use crate::processor::Pm4Error;
use crate::regs::gfx103;

pub(crate) fn event_write(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let e = ctx.decode::<EventWrite>(body)?;
    if let (Some(kind), Some(address)) = (sample_kind(e.event_type), e.address) {
        let queue = ctx.state.queue;
        let rbs = ctx.state.config.render_backends;
        let r = ctx.backend.sample_event(queue, kind, address, rbs, &ctx.memory);
        r.map_err(|err| ctx.mem_err(err))?;
        return Ok(Step::Next);
    }
    if EventType::from_wire(e.event_type) == Some(EventType::SoVgtstreamoutFlush) {
        // The stream-out offsets are flushed at once: OFFSET_UPDATE_DONE.
        let v = ctx.read_register(gfx103::CP_STRMOUT_CNTL) | 1;
        ctx.write_register(gfx103::CP_STRMOUT_CNTL, v);
    }
    report_event(ctx, &e);
    Ok(Step::Next)
}

/// The sample an EVENT_WRITE of `event_type` writes at its address.
fn sample_kind(event_type: u32) -> Option<SampleKind> {
    use EventType as E;
    match EventType::from_wire(event_type)? {
        E::ZpassDone | E::PixelPipeStatDump => Some(SampleKind::ZpassDone),
        E::SamplePipelinestat => Some(SampleKind::PipelineStats),
        E::SampleStreamoutstats => Some(SampleKind::StreamoutStats(0)),
        E::SampleStreamoutstats1 | E::SampleStreamoutstats2 | E::SampleStreamoutstats3 => {
            Some(SampleKind::StreamoutStats(event_type))
        }
        _ => None,
    }
}

/// Tells the backend of the event `e`.
#[inline(always)]
fn report_event(ctx: &mut Ctx<'_>, e: &EventWrite) {
    ctx.backend.event(&Event {
        queue: ctx.state.queue,
        event_type: e.event_type,
        event_index: e.event_index,
        location: ctx.location(),
    });
}

/// What a release does with GDS (DATA_SEL 5 of RELEASE_MEM, the GDS
/// commands of EVENT_WRITE_EOS).
#[derive(Clone, Copy)]
enum GdsStore {
    /// Nothing: the release's DATA_SEL says what to write.
    None,
    /// Copy `dwords` dwords of GDS from dword `offset` to the address.
    Copy { offset: u32, dwords: u32 },
    /// A GDS form the reference does not define: reported, nothing written.
    NotEmulated,
}

/// Writes a release's data and reports the fence. `int_sel` decides the
/// interrupt: 1/2/4 always, 5/6 when the 32/64-bit value at the address
/// equals CMP_DATA after the write (§3.35); `gfx7` releases interrupt on
/// 1/2 only.
fn retire(ctx: &mut Ctx<'_>, r: &ReleaseMem, gds: GdsStore) -> Result<(), Pm4Error> {
    if r.cache_control != 0 {
        let queue = ctx.state.queue;
        ctx.backend.cache_action(queue, &CacheAction::Release { cache_control: r.cache_control });
    }
    use ReleaseDataSel as Data;
    let release_mem = ctx.opcode() == Opcode::RELEASE_MEM;
    let data = match (ReleaseDataSel::from_wire(r.data_sel), gds) {
        (_, GdsStore::Copy { offset, dwords }) => {
            ctx.copy_gds_to_memory(u64::from(offset) * 4, dwords, r.address)?;
            None
        }
        (_, GdsStore::NotEmulated) => {
            report_not_emulated(ctx, "GDS append-count store");
            None
        }
        (Some(Data::NoData), _) => None,
        (Some(Data::Data32), _) => {
            ctx.write_u32(r.address, r.data as u32)?;
            Some(r.data & 0xFFFF_FFFF)
        }
        (Some(Data::Data64), _) => {
            ctx.write_u64(r.address, r.data)?;
            Some(r.data)
        }
        (Some(Data::GpuClockCounter | Data::SystemClockCounter), _) => {
            let t = ctx.gpu_clock();
            ctx.write_u64(r.address, t)?;
            Some(t)
        }
        (Some(Data::Gds), _) if release_mem => {
            // DW_OFFSET [15:0] and NUM_DWORDS [31:16] of the DATA dword.
            let (offset, dwords) = ((r.data & 0xFFFF) as u32, ((r.data >> 16) & 0xFFFF) as u32);
            ctx.copy_gds_to_memory(u64::from(offset) * 4, dwords, r.address)?;
            None
        }
        (Some(Data::AtomicAdd32), _) if release_mem => {
            let old = ctx.read_u32(r.address)?;
            let new = old.wrapping_add(r.data as u32);
            ctx.write_u32(r.address, new)?;
            Some(u64::from(new))
        }
        _ => {
            report_not_emulated(ctx, "release DATA_SEL");
            None
        }
    };
    use ReleaseIntSel as Int;
    let interrupt = match (ctx.opcode(), ReleaseIntSel::from_wire(r.int_sel)) {
        (Opcode::RELEASE_MEM, Some(Int::Interrupt | Int::InterruptAfterWriteConfirm | Int::IntCtxid)) => true,
        (Opcode::RELEASE_MEM, Some(Int::IntCtxidIf32BitCompare)) => ctx.read_u32(r.address)? == r.data as u32,
        (Opcode::RELEASE_MEM, Some(Int::IntCtxidIf64BitCompare)) => ctx.read_u64(r.address)? == r.data,
        (Opcode::EVENT_WRITE_EOP, Some(Int::Interrupt | Int::InterruptAfterWriteConfirm)) => true,
        _ => false,
    };
    ctx.state.stats.fences += 1;
    ctx.backend.fence(&Fence {
        queue: ctx.state.queue,
        opcode: ctx.opcode(),
        event_type: r.event_type,
        address: r.address,
        data: data.unwrap_or(0),
        data_sel: r.data_sel,
        int_sel: r.int_sel,
        int_ctxid: r.int_ctxid,
        interrupt,
    });
    Ok(())
}

/// RELEASE_MEM and the gfx7 EVENT_WRITE_EOP (one body type, read by
/// opcode): the release's data write and fence.
pub(crate) fn release(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let r = ctx.decode::<ReleaseMem>(body)?;
    retire(ctx, &r, GdsStore::None)?;
    Ok(Step::Next)
}

/// EVENT_WRITE_EOS: COMMAND 2 stores the 32-bit DATA; COMMAND 1 stores
/// SIZE dwords of GDS from GDS_INDEX (DATA [15:0] and [31:16], in dwords);
/// COMMAND 0 (the GDS append count) is not defined well enough to emulate.
pub(crate) fn event_write_eos(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let e = ctx.decode::<EventWriteEos>(body)?;
    let command = EosCommand::from_wire(e.command);
    let gds = match command {
        Some(EosCommand::StoreData) => GdsStore::None,
        Some(EosCommand::StoreGdsData) => GdsStore::Copy { offset: e.data & 0xFFFF, dwords: e.data >> 16 },
        Some(EosCommand::StoreGdsAppendCount) | None => GdsStore::NotEmulated,
    };
    let data_sel = if command == Some(EosCommand::StoreData) { ReleaseDataSel::Data32 } else { ReleaseDataSel::Gds };
    let r = ReleaseMem {
        event_type: e.event_type,
        event_index: e.event_index,
        cache_control: 0,
        dst_sel: 0,
        int_sel: 0,
        data_sel: data_sel.wire(),
        address: e.address,
        data: u64::from(e.data),
        int_ctxid: 0,
        opcode: ctx.opcode(),
        legacy: false,
    };
    retire(ctx, &r, gds)?;
    Ok(Step::Next)
}

pub(crate) fn acquire_mem(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let a = ctx.decode::<AcquireMem>(body)?;
    acquire(ctx, &a);
    Ok(Step::Next)
}

/// ACQUIRE_MEM's effect: the backend's cache action.
fn acquire(ctx: &mut Ctx<'_>, a: &AcquireMem) {
    let size = if a.size == 0xFF_FFFF_FFFF || a.size == 0xFFFF_FFFF { u64::MAX } else { a.size << 8 };
    let queue = ctx.state.queue;
    ctx.backend.cache_action(
        queue,
        &CacheAction::AcquireMem {
            base: a.base << 8,
            size,
            coher_cntl: a.coher_cntl,
            gcr_cntl: a.gcr_cntl.unwrap_or(0),
        },
    );
}

pub(crate) fn surface_sync(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let s = ctx.decode::<SurfaceSync>(body)?;
    let queue = ctx.state.queue;
    ctx.backend.cache_action(
        queue,
        &CacheAction::SurfaceSync { base: s.base_address(), size: s.size_bytes(), coher_cntl: s.coher_cntl },
    );
    Ok(Step::Next)
}

/// OCCLUSION_QUERY: adds the sum over render backends of (end - begin) of
/// the ZPASS records at START to the 64-bit value at QUERY.
pub(crate) fn occlusion_query(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let OcclusionQuery { start, query } = ctx.decode(body)?;
    const VALID: u64 = 1 << 63;
    let mut sum = 0u64;
    for rb in 0..u64::from(ctx.state.config.render_backends) {
        let record = start.wrapping_add(rb * 16);
        let begin = ctx.read_u64(record)?;
        let end = ctx.read_u64(record.wrapping_add(8))?;
        if begin & VALID != 0 && end & VALID != 0 {
            sum = sum.wrapping_add((end & !VALID).wrapping_sub(begin & !VALID));
        }
    }
    let old = ctx.read_u64(query)?;
    ctx.write_u64(query, old.wrapping_add(sum))?;
    Ok(Step::Next)
}
