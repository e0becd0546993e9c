//! Draws and the state only draws use: DRAW_INDEX_2, DRAW_INDEX_AUTO,
//! DRAW_INDEX_OFFSET_2, DRAW_INDIRECT, DRAW_INDEX_INDIRECT, the _MULTI and
//! _COUNT_MULTI forms, DRAW_INDEX_MULTI_AUTO; INDEX_BASE, INDEX_BUFFER_SIZE,
//! INDEX_TYPE, NUM_INSTANCES, SET_BASE and STRMOUT_BUFFER_UPDATE.
//!
//! At each draw the programs bound to the active stages are resolved
//! against the shader registry (only when a program register, the stage
//! enables or the registry changed), and the backend receives the draw with
//! its resolved counts, index buffer, indirect arguments and register state.

use crate::backend::{Draw, IndexBuffer, ProgramBinding, ProgramStage};
use crate::memory::GuestMemory;
use crate::memory::ADDRESS_MASK;
use crate::packet::body::Body;
use crate::packet::body::{
    DispatchMeshIndirectMulti, DispatchTaskmeshGfx, DrawBody, DrawIndexMultiInst, IndexBase, IndexBufferSize,
    IndexType, NumInstances, SetBase, StrmoutBufferUpdate,
};
use crate::packet::wire::{IndexTypeMode, SetBaseIndex, StrmoutSourceSelect};
use crate::packet::Opcode;
use crate::processor::view::context::{Ctx, HandlerResult, Step};
use crate::processor::{state_group, Pm4Error};
use crate::regs::{gfx103 as r, space};

/// Re-resolves the programs of the active graphics stages when needed
/// (the check inline at every draw; the work out of line).
#[inline(always)]
pub(crate) fn refresh_programs(ctx: &mut Ctx<'_>) {
    let generation = ctx.shaders.generation();
    if ctx.state.dirty & state_group::PROGRAMS != 0 || generation != ctx.state.programs_generation {
        resolve_programs(ctx, generation);
    }
}

#[inline(never)]
fn resolve_programs(ctx: &mut Ctx<'_>, generation: u64) {
    let stages = ctx.state.regs.get(r::VGT_SHADER_STAGES_EN);
    let ls_en = stages & 3 != 0;
    let hs_en = stages & (1 << 2) != 0;
    let es_en = (stages >> 3) & 3 != 0;
    let gs_en = stages & (1 << 5) != 0;
    let primgen = stages & (1 << 13) != 0;
    for (i, stage) in ProgramStage::GRAPHICS.iter().enumerate() {
        let active = match stage {
            ProgramStage::Ps => true,
            ProgramStage::Vs => !primgen,
            ProgramStage::Es => es_en || gs_en || primgen,
            ProgramStage::Ls => ls_en || hs_en,
            ProgramStage::Cs => false,
        };
        let address = if active { ctx.state.regs.view().program_address(*stage) } else { 0 };
        let Some(slot) = ctx.state.programs.get(i) else { continue };
        if slot.address == address && generation == ctx.state.programs_generation {
            continue;
        }
        let container = if address != 0 { ctx.shaders.resolve(&ctx.memory, address) } else { None };
        if let Some(slot) = ctx.state.programs.get_mut(i) {
            *slot = ProgramBinding { address, container };
        }
    }
    ctx.state.programs_generation = generation;
}

/// VGT_DRAW_INITIATOR.USE_OPAQUE: a stream-out "draw auto".
const USE_OPAQUE: u32 = 1 << 6;

/// The parts of a draw that vary per draw.
struct DrawArgs {
    count: u32,
    instance_count: u32,
    first: u32,
    base_vertex: i32,
    first_instance: u32,
    draw_index: u32,
    index_buffer: Option<IndexBuffer>,
    initiator: u32,
    indirect_args: Option<u64>,
    mesh_groups: Option<[u32; 3]>,
}

impl DrawArgs {
    /// A mesh-shader draw (one instance, no vertices or indices): sub-draw
    /// `draw_index`, its argument record and group counts where known.
    fn mesh(initiator: u32, draw_index: u32, indirect_args: Option<u64>, mesh_groups: Option<[u32; 3]>) -> Self {
        Self {
            count: 0,
            instance_count: 1,
            first: 0,
            base_vertex: 0,
            first_instance: 0,
            draw_index,
            index_buffer: None,
            initiator,
            indirect_args,
            mesh_groups,
        }
    }
}

fn emit(ctx: &mut Ctx<'_>, a: DrawArgs) {
    let (opcode, location) = (ctx.opcode(), ctx.location());
    let state = &mut *ctx.state;
    let draw = Draw {
        queue: state.queue,
        opcode,
        location,
        count: a.count,
        instance_count: a.instance_count,
        first: a.first,
        base_vertex: a.base_vertex,
        first_instance: a.first_instance,
        draw_index: a.draw_index,
        index_buffer: a.index_buffer,
        primitive_type: state.regs.get(r::VGT_PRIMITIVE_TYPE),
        draw_initiator: a.initiator,
        indirect_args: a.indirect_args,
        mesh_groups: a.mesh_groups,
        programs: &state.programs,
        changed: state.dirty,
        registers: &state.regs,
    };
    ctx.backend.draw(&draw);
    state.dirty = 0;
}

fn index_type(ctx: &Ctx<'_>) -> u32 {
    ctx.state.regs.get(r::VGT_INDEX_TYPE) & 3
}

/// Bytes per index of an index type (16-bit for an undefined one).
fn index_size(index_type: u32) -> u64 {
    match IndexTypeMode::from_wire(index_type) {
        Some(IndexTypeMode::VgtIndex32) => 4,
        Some(IndexTypeMode::VgtIndex8) => 1,
        Some(IndexTypeMode::VgtIndex16) | None => 2,
    }
}

/// Writes `value` to SH register 0x2C00 + `loc` unless `loc` is 0.
fn write_loc(ctx: &mut Ctx<'_>, loc: u32, value: u32) {
    if loc != 0 && loc < space::SH_SIZE {
        ctx.write_register(space::SH + loc, value);
    }
}

/// Where an indirect draw packet asks the CP to put the record's values:
/// SH registers relative to 0x2C00 (0 = nowhere).
#[derive(Clone, Copy)]
struct ArgumentLocations {
    base_vtx: u32,
    start_indx: u32,
    start_inst: u32,
    start_indx_enable: bool,
}

/// One indirect draw from the argument record at `args`.
fn indirect_draw(
    ctx: &mut Ctx<'_>,
    indexed: bool,
    args: u64,
    locs: ArgumentLocations,
    draw_index: u32,
    initiator: u32,
) -> Result<(), Pm4Error> {
    let mut record = [0u32; 5];
    let n = if indexed { 5 } else { 4 };
    ctx.memory.read_dwords(args, &mut record[..n]).map_err(|e| ctx.mem_err(e))?;
    let (count, instances, first, base_vertex, first_instance) = if indexed {
        (record[0], record[1], record[2], record[3] as i32, record[4])
    } else {
        (record[0], record[1], record[2], 0, record[3])
    };
    let index_buffer = if indexed {
        let t = index_type(ctx);
        Some(IndexBuffer {
            address: ctx.state.index_base.wrapping_add(u64::from(first) * index_size(t)) & ADDRESS_MASK,
            index_type: t,
            max_indices: ctx.state.index_buffer_size.saturating_sub(first),
        })
    } else {
        None
    };
    write_loc(ctx, locs.base_vtx, if indexed { base_vertex as u32 } else { first });
    write_loc(ctx, locs.start_inst, first_instance);
    if locs.start_indx_enable {
        write_loc(ctx, locs.start_indx, first);
    }
    emit(
        ctx,
        DrawArgs {
            count,
            instance_count: instances,
            first,
            base_vertex,
            first_instance,
            draw_index,
            index_buffer,
            initiator,
            indirect_args: Some(args),
            mesh_groups: None,
        },
    );
    Ok(())
}

/// The handler of the draw packet with opcode `OP`: one instance per draw
/// opcode, so its body's decoding and the match below fold to that
/// opcode's form.
pub(crate) fn draw<const OP: u8>(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let body = DrawBody::decode_body(Opcode(OP), body).map_err(|e| ctx.body_err(e))?;
    run_draw(ctx, body)
}

/// A draw packet's effect, from its decoded body: the direct forms (their
/// counts in the packet, DRAW_INDEX_2, _AUTO, _OFFSET_2, _MULTI_AUTO)
/// cannot fail; the indirect ones read their records from memory.
#[inline(always)]
fn run_draw(ctx: &mut Ctx<'_>, body: DrawBody) -> HandlerResult {
    ctx.state.stats.draws += 1;
    refresh_programs(ctx);
    let direct = |count, first, index_buffer, initiator, instance_count| DrawArgs {
        count,
        instance_count,
        first,
        base_vertex: 0,
        first_instance: 0,
        draw_index: 0,
        index_buffer,
        initiator,
        indirect_args: None,
        mesh_groups: None,
    };
    let instances = |ctx: &Ctx<'_>| ctx.state.regs.get(r::VGT_NUM_INSTANCES);
    match body {
        DrawBody::Index2 { max_size, index_base, index_count, initiator } => {
            ctx.write_named_register::<{ r::VGT_DMA_MAX_SIZE }>(max_size);
            ctx.write_named_register::<{ r::VGT_DMA_BASE }>(index_base as u32);
            ctx.write_named_register::<{ r::VGT_DMA_BASE_HI }>((index_base >> 32) as u32);
            ctx.write_named_register::<{ r::VGT_NUM_INDICES }>(index_count);
            ctx.write_named_register::<{ r::VGT_DRAW_INITIATOR }>(initiator);
            let ib = IndexBuffer { address: index_base, index_type: index_type(ctx), max_indices: max_size };
            emit(ctx, direct(index_count, 0, Some(ib), initiator, instances(ctx)));
        }
        DrawBody::IndexAuto { index_count, initiator } => {
            // USE_OPAQUE (§3.19): the vertex count is the stream-out filled
            // size over the vertex stride (VERTEX_STRIDE is in dwords).
            let count = if initiator & USE_OPAQUE != 0 {
                let filled = ctx.state.regs.get(r::VGT_STRMOUT_DRAW_OPAQUE_BUFFER_FILLED_SIZE);
                let stride_bytes = (ctx.state.regs.get(r::VGT_STRMOUT_DRAW_OPAQUE_VERTEX_STRIDE) & 0x1FF) * 4;
                filled.checked_div(stride_bytes).unwrap_or(0)
            } else {
                index_count
            };
            ctx.write_named_register::<{ r::VGT_NUM_INDICES }>(count);
            ctx.write_named_register::<{ r::VGT_DRAW_INITIATOR }>(initiator);
            emit(ctx, direct(count, 0, None, initiator, instances(ctx)));
        }
        DrawBody::IndexOffset2 { max_size, index_offset, index_count, initiator } => {
            ctx.write_named_register::<{ r::VGT_NUM_INDICES }>(index_count);
            ctx.write_named_register::<{ r::VGT_DRAW_INITIATOR }>(initiator);
            let t = index_type(ctx);
            let ib = IndexBuffer {
                address: ctx.state.index_base.wrapping_add(u64::from(index_offset) * index_size(t)) & ADDRESS_MASK,
                index_type: t,
                max_indices: max_size.saturating_sub(index_offset),
            };
            emit(ctx, direct(index_count, index_offset, Some(ib), initiator, instances(ctx)));
        }
        DrawBody::IndexMultiAuto { prim_count, initiator, index_offset, index_count, .. } => {
            ctx.write_named_register::<{ r::VGT_DRAW_INITIATOR }>(initiator);
            let count = prim_count.saturating_mul(index_count);
            emit(ctx, direct(count, index_offset, None, initiator, instances(ctx)));
        }
        DrawBody::Indirect {
            indexed,
            data_offset,
            base_vtx_loc,
            start_indx_loc,
            start_inst_loc,
            start_indx_enable,
            initiator,
        } => {
            let args = ctx.state.bases.draw_indirect.wrapping_add(u64::from(data_offset)) & ADDRESS_MASK;
            ctx.write_named_register::<{ r::VGT_DRAW_INITIATOR }>(initiator);
            let locs = ArgumentLocations {
                base_vtx: base_vtx_loc,
                start_indx: start_indx_loc,
                start_inst: start_inst_loc,
                start_indx_enable,
            };
            indirect_draw(ctx, indexed, args, locs, 0, initiator)?;
        }
        DrawBody::IndirectMulti {
            indexed,
            data_offset,
            base_vtx_loc,
            start_indx_loc,
            start_inst_loc,
            draw_index_loc,
            start_indx_enable,
            count_indirect,
            draw_index_enable,
            count,
            count_address,
            stride,
            initiator,
            ..
        } => {
            let n = if count_indirect { count.min(ctx.read_u32(count_address)?) } else { count };
            let base = ctx.state.bases.draw_indirect.wrapping_add(u64::from(data_offset));
            ctx.write_named_register::<{ r::VGT_DRAW_INITIATOR }>(initiator);
            let locs = ArgumentLocations {
                base_vtx: base_vtx_loc,
                start_indx: start_indx_loc,
                start_inst: start_inst_loc,
                start_indx_enable,
            };
            for i in 0..n {
                if i > 0 {
                    ctx.charge()?;
                }
                if draw_index_enable {
                    write_loc(ctx, draw_index_loc, i);
                }
                let args = base.wrapping_add(u64::from(i) * u64::from(stride)) & ADDRESS_MASK;
                indirect_draw(ctx, indexed, args, locs, i, initiator)?;
            }
        }
    }
    Ok(Step::Next)
}

/// Writes X, Y, Z to the SH registers from 0x2C00 + `loc` unless `loc` is 0.
fn write_dims(ctx: &mut Ctx<'_>, loc: u32, dims: [u32; 3]) {
    if loc != 0 {
        for (i, v) in dims.into_iter().enumerate() {
            write_loc(ctx, loc + i as u32, v);
        }
    }
}

/// DISPATCH_MESH_INDIRECT_MULTI (§3.45): for each record (three group
/// counts at the SET_BASE draw base + DATA_OFFSET + i × STRIDE) the counts go
/// to XYZ_DIM_LOC, the index to DRAW_INDEX_LOC when enabled, and the backend
/// gets a draw with `mesh_groups`. The packet counts once in `draws`.
pub(crate) fn dispatch_mesh_indirect_multi(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let m = ctx.decode::<DispatchMeshIndirectMulti>(body)?;
    ctx.state.stats.draws += 1;
    refresh_programs(ctx);
    let n = if m.count_indirect { m.count.min(ctx.read_u32(m.count_address)?) } else { m.count };
    let base = ctx.state.bases.draw_indirect.wrapping_add(u64::from(m.data_offset));
    ctx.write_register(r::VGT_DRAW_INITIATOR, m.initiator);
    for i in 0..n {
        if i > 0 {
            ctx.charge()?;
        }
        let args = base.wrapping_add(u64::from(i) * u64::from(m.stride)) & ADDRESS_MASK;
        let mut dims = [0u32; 3];
        ctx.memory.read_dwords(args, &mut dims).map_err(|e| ctx.mem_err(e))?;
        write_dims(ctx, m.xyz_dim_loc, dims);
        if m.draw_index_enable {
            write_loc(ctx, m.draw_index_loc, i);
        }
        emit(ctx, DrawArgs::mesh(m.initiator, i, Some(args), Some(dims)));
    }
    Ok(Step::Next)
}

/// DISPATCH_TASKMESH_GFX (§3.45): the mesh half of a task/mesh dispatch,
/// a draw whose group counts the task shaders put in the task ring (not
/// modelled: `mesh_groups` is `None`).
pub(crate) fn dispatch_taskmesh_gfx(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let t = ctx.decode::<DispatchTaskmeshGfx>(body)?;
    ctx.state.stats.draws += 1;
    refresh_programs(ctx);
    ctx.write_register(r::VGT_DRAW_INITIATOR, t.initiator);
    emit(ctx, DrawArgs::mesh(t.initiator, 0, None, None));
    Ok(Step::Next)
}

/// 0x3A, DRAW_INDEX_MULTI_INST in the 9-dword form of PS5 streams (§6.1):
/// an indexed draw of INDEX_COUNT indices at INDEX_ADDR, INSTANCE_COUNT
/// instances, the flags dword as draw initiator. Other lengths have no
/// defined layout: counted and reported as not emulated.
pub(crate) fn draw_index_multi_inst(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let Ok(d) = ctx.decode::<DrawIndexMultiInst>(body) else {
        super::report_not_emulated(ctx, "form other than the 9-dword one");
        return Ok(Step::Next);
    };
    ctx.state.stats.draws += 1;
    refresh_programs(ctx);
    ctx.write_register(r::VGT_DMA_BASE, d.index_address as u32);
    ctx.write_register(r::VGT_DMA_BASE_HI, (d.index_address >> 32) as u32);
    ctx.write_register(r::VGT_NUM_INDICES, d.index_count);
    ctx.write_register(r::VGT_DRAW_INITIATOR, d.flags);
    let ib = IndexBuffer { address: d.index_address, index_type: index_type(ctx), max_indices: d.index_count };
    emit(
        ctx,
        DrawArgs {
            count: d.index_count,
            instance_count: d.instance_count,
            first: 0,
            base_vertex: 0,
            first_instance: 0,
            draw_index: 0,
            index_buffer: Some(ib),
            initiator: d.flags,
            indirect_args: None,
            mesh_groups: None,
        },
    );
    Ok(Step::Next)
}

/// SET_BASE: index 1 selects the draw or dispatch argument base by the
/// header's SHADER_TYPE bit.
pub(crate) fn set_base(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let b = ctx.decode::<SetBase>(body)?;
    let compute = ctx.header().shader_type_compute();
    let bases = &mut ctx.state.bases;
    match SetBaseIndex::from_wire(b.base_index) {
        Some(SetBaseIndex::PatchTable) => bases.patch_table = b.address,
        Some(SetBaseIndex::IndirectArgs) if compute => bases.dispatch_indirect = b.address,
        Some(SetBaseIndex::IndirectArgs) => bases.draw_indirect = b.address,
        Some(SetBaseIndex::CeDstBase) => bases.ce_dst = b.address,
        Some(SetBaseIndex::LoadIndex) => bases.load_index = b.address,
        Some(SetBaseIndex::ShRegOffset) => bases.sh_offset = b.address,
        Some(SetBaseIndex::CePartitionBases) | None => {
            tracing::debug!(queue = %ctx.state.queue, "SET_BASE index {} ignored", b.base_index)
        }
    }
    Ok(Step::Next)
}

pub(crate) fn index_base(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let address = ctx.decode::<IndexBase>(body)?.address;
    ctx.state.index_base = address;
    ctx.write_named_register::<{ r::VGT_DMA_BASE }>(address as u32);
    ctx.write_named_register::<{ r::VGT_DMA_BASE_HI }>((address >> 32) as u32);
    Ok(Step::Next)
}

pub(crate) fn index_buffer_size(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let size = ctx.decode::<IndexBufferSize>(body)?.index_count;
    ctx.state.index_buffer_size = size;
    ctx.write_named_register::<{ r::VGT_DMA_SIZE }>(size);
    Ok(Step::Next)
}

/// INDEX_TYPE sets the same "current index type" as a VGT_INDEX_TYPE write.
pub(crate) fn index_type_packet(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let v = ctx.decode::<IndexType>(body)?.index_type;
    ctx.write_named_register::<{ r::VGT_DMA_INDEX_TYPE }>(v);
    ctx.write_named_register::<{ r::VGT_INDEX_TYPE }>(v & 0x4003);
    Ok(Step::Next)
}

pub(crate) fn num_instances(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let v = ctx.decode::<NumInstances>(body)?.instances;
    ctx.write_named_register::<{ r::VGT_NUM_INSTANCES }>(v);
    Ok(Step::Next)
}

/// STRMOUT_BUFFER_UPDATE (§3.22): stores buffer n's filled size to DST
/// (UPDATE_MEMORY), then sets VGT_STRMOUT_BUFFER_OFFSET_n from the packet,
/// the filled-size register or memory. The filled size is the buffer's
/// offset: a loaded offset becomes the filled size too, so a store after a
/// load gives back what was loaded.
pub(crate) fn strmout_buffer_update(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let s = ctx.decode::<StrmoutBufferUpdate>(body)?;
    let offset_reg = r::VGT_STRMOUT_BUFFER_OFFSET_0 + s.buffer * 4;
    let filled_reg = r::VGT_STRMOUT_BUFFER_FILLED_SIZE_0 + s.buffer;
    if s.update_memory {
        let filled = ctx.read_register(filled_reg);
        ctx.write_u32(s.dst, filled)?;
    }
    let new_offset = match StrmoutSourceSelect::from_wire(s.source_select) {
        Some(StrmoutSourceSelect::Offset) => Some(s.src as u32),
        Some(StrmoutSourceSelect::FilledSize) => Some(ctx.read_register(filled_reg)),
        Some(StrmoutSourceSelect::SrcAddress) => Some(ctx.read_u32(s.src)?),
        Some(StrmoutSourceSelect::NoSource) | None => None,
    };
    if let Some(v) = new_offset {
        ctx.write_register(offset_reg, v);
        ctx.write_register(filled_reg, v);
    }
    Ok(Step::Next)
}
