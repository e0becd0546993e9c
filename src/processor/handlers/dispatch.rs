//! Dispatches: DISPATCH_DIRECT and DISPATCH_INDIRECT (graphics form from the
//! SET_BASE dispatch base, compute form with its own address).

use crate::backend::{Dispatch, ProgramBinding, ProgramStage};
use crate::memory::GuestMemory;
use crate::memory::ADDRESS_MASK;
use crate::packet::body::{DispatchDirect, DispatchIndirect};
use crate::packet::Packet;
use crate::processor::context::{Ctx, Flow};
use crate::processor::{state_group, Pm4Error};
use crate::regs::gfx103 as r;

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
    ctx.state.stats.dispatches += 1;
    refresh_compute_program(ctx);
    let state = &*ctx.state;
    let view = state.regs.view();
    let dispatch = Dispatch {
        queue: state.queue,
        opcode: ctx.opcode,
        location: *ctx.location,
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

pub(crate) fn dispatch_direct(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> Result<Flow, Pm4Error> {
    let d = ctx.decode::<DispatchDirect>(p)?;
    run(ctx, d.dims, d.initiator, None);
    Ok(Flow::Continue)
}

pub(crate) fn dispatch_indirect(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> Result<Flow, Pm4Error> {
    let d = ctx.decode::<DispatchIndirect>(p)?;
    let (address, initiator) = match d {
        DispatchIndirect::Offset { data_offset, initiator } => {
            (ctx.state.bases.dispatch_indirect.wrapping_add(u64::from(data_offset)) & ADDRESS_MASK, initiator)
        }
        DispatchIndirect::Address { address, initiator } => (address, initiator),
    };
    let mut dims = [0u32; 3];
    ctx.memory.read_dwords(address, &mut dims).map_err(|e| ctx.mem_err(e))?;
    run(ctx, dims, initiator, Some(address));
    Ok(Flow::Continue)
}
