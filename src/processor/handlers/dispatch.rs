//! Dispatches: DISPATCH_DIRECT and DISPATCH_INDIRECT (graphics form from the
//! SET_BASE dispatch base, compute form with its own address).

use crate::backend::{Dispatch, ProgramBinding, ProgramStage};
use crate::memory::GuestMemory;
use crate::memory::ADDRESS_MASK;
use crate::packet::body::{
    DispatchDirect, DispatchIndirect, DispatchTaskStateInit, DispatchTaskmeshDirectAce,
    DispatchTaskmeshIndirectMultiAce,
};
use crate::processor::state_group;
use crate::processor::view::context::{Ctx, HandlerResult, Step};
use crate::regs::{gfx103 as r, space};

fn refresh_compute_program(ctx: &mut Ctx<'_>) {
    let generation = ctx.shaders.generation();
    let address = ctx.state.regs.view().program_address(ProgramStage::Cs);
    // The compute binding has its own generation: a draw resolving the
    // graphics stages must not make a stale compute binding look current.
    if ctx.state.compute_program.address == address && generation == ctx.state.compute_program_generation {
        return;
    }
    let container = if address != 0 { ctx.shaders.resolve(&ctx.memory, address) } else { None };
    ctx.state.compute_program = ProgramBinding { address, container };
    ctx.state.compute_program_generation = generation;
    ctx.state.dirty &= !state_group::COMPUTE_PROGRAM;
}

fn run(ctx: &mut Ctx<'_>, dims: [u32; 3], initiator: u32, indirect_args: Option<u64>) {
    ctx.write_register(r::COMPUTE_DIM_X, dims[0]);
    ctx.write_register(r::COMPUTE_DIM_Y, dims[1]);
    ctx.write_register(r::COMPUTE_DIM_Z, dims[2]);
    ctx.write_register(r::COMPUTE_DISPATCH_INITIATOR, initiator);
    refresh_compute_program(ctx);
    let state = &*ctx.state;
    let view = state.regs.view();
    let dispatch = Dispatch {
        queue: state.queue,
        opcode: ctx.opcode(),
        location: ctx.location(),
        dims,
        start: view.compute_start(),
        threads_per_group: view.threads_per_group(),
        initiator,
        indirect_args,
        program: &state.compute_program,
        registers: &state.regs,
    };
    ctx.backend.dispatch(&dispatch);
}

pub(crate) fn dispatch_direct(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let d = ctx.decode::<DispatchDirect>(body)?;
    ctx.state.stats.dispatches += 1;
    run(ctx, d.dims, d.initiator, None);
    Ok(Step::Next)
}

pub(crate) fn dispatch_indirect(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let d = ctx.decode::<DispatchIndirect>(body)?;
    let (address, initiator) = match d {
        DispatchIndirect::Offset { data_offset, initiator } => {
            (ctx.state.bases.dispatch_indirect.wrapping_add(u64::from(data_offset)) & ADDRESS_MASK, initiator)
        }
        DispatchIndirect::Address { address, initiator } => (address, initiator),
    };
    let mut dims = [0u32; 3];
    ctx.memory.read_dwords(address, &mut dims).map_err(|e| ctx.mem_err(e))?;
    ctx.state.stats.dispatches += 1;
    run(ctx, dims, initiator, Some(address));
    Ok(Step::Next)
}

/// DISPATCH_TASK_STATE_INIT (§3.45): keeps the task control buffer address
/// (`ProcessorState::task_control_buffer`).
pub(crate) fn dispatch_task_state_init(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let t = ctx.decode::<DispatchTaskStateInit>(body)?;
    ctx.state.task_control_buffer = t.control_buffer;
    Ok(Step::Next)
}

/// DISPATCH_TASKMESH_DIRECT_ACE (§3.45): the task shaders' dispatch, its
/// group counts in the packet. (The task ring entry the CP would put at
/// RING_ENTRY_LOC is not modelled.)
pub(crate) fn dispatch_taskmesh_direct_ace(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let d = ctx.decode::<DispatchTaskmeshDirectAce>(body)?;
    ctx.state.stats.dispatches += 1;
    run(ctx, d.dims, d.initiator, None);
    Ok(Step::Next)
}

/// DISPATCH_TASKMESH_INDIRECT_MULTI_ACE (§3.45): one dispatch per record
/// (three group counts at DATA_ADDR + i × STRIDE), n = COUNT or
/// min(COUNT, *COUNT_ADDR); the counts go to XYZ_DIM_LOC and the index to
/// DISPATCH_INDEX_LOC when enabled. The packet counts once in `dispatches`.
pub(crate) fn dispatch_taskmesh_indirect_multi_ace(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let d = ctx.decode::<DispatchTaskmeshIndirectMultiAce>(body)?;
    let n = if d.count_indirect { d.count.min(ctx.read_u32(d.count_address)?) } else { d.count };
    ctx.state.stats.dispatches += 1;
    for i in 0..n {
        if i > 0 {
            ctx.charge()?;
        }
        let args = d.data_address.wrapping_add(u64::from(i) * u64::from(d.stride)) & ADDRESS_MASK;
        let mut dims = [0u32; 3];
        ctx.memory.read_dwords(args, &mut dims).map_err(|e| ctx.mem_err(e))?;
        if d.xyz_dim_enable && d.xyz_dim_loc != 0 {
            for (k, v) in dims.into_iter().enumerate() {
                let loc = d.xyz_dim_loc + k as u32;
                if loc < space::SH_SIZE {
                    ctx.write_register(space::SH + loc, v);
                }
            }
        }
        if d.dispatch_index_enable && d.dispatch_index_loc != 0 && d.dispatch_index_loc < space::SH_SIZE {
            ctx.write_register(space::SH + d.dispatch_index_loc, i);
        }
        run(ctx, dims, d.initiator, Some(args));
    }
    Ok(Step::Next)
}
