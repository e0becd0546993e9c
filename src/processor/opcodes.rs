//! The dispatch declaration: one line per opcode the processor knows
//! ([`DECLARATIONS`]: which queues run it and what it does), and the table
//! of each queue kind built from it at compile time ([`GRAPHICS`],
//! [`COMPUTE`]: a [`Table`] each).
//!
//! What an opcode does is one of:
//! - `Registers`: a plain register writer (SET_*_REG and their _INDEX
//!   forms), writing the space [`Opcode::register_space`] names: the view
//!   loop stores its common runs inline, and its handler
//!   (`handlers::registers::set_registers`) stores every other one;
//! - `Handler(f)`: the packet's handler;
//! - `Nothing`: no effect on a serial emulator (`handlers::nop::no_effect`);
//! - `Unhandled`: decoded, counted and reported as not emulated.
//!
//! A `Graphics` line is a packet only the graphics ring (or its constant
//! engine) accepts: named in packets.md §2 with engines G and/or CE but
//! not C, and absent from the compute-ring (MEC) packet set listed there.
//! A compute queue reports it like an unknown packet (a driver bug on real
//! hardware). An opcode with no line is unhandled on every queue; an
//! unnamed one is an unknown packet. Both go through
//! `handlers::unhandled_packet`, which first asks the embedder's
//! private-packet table ([`crate::packet::private`]).
//!
//! Every entry is called the same way (see `processor::view`): one
//! signature ([`Handler`]), one place for the packet, one check after the
//! call.

use super::handlers::{
    self, const_engine, dispatch, draw, events, indirect, memory_ops, nop, predication, registers, wait,
};
use super::view::context::Handler;
use super::view::is_pad;
use crate::backend::QueueId;
use crate::packet::private::{PrivatePacketEntry, PrivatePackets};
use crate::packet::{Header, Opcode, PacketType};
use crate::regs::RegisterSpace;

/// Which queues run an opcode.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Queues {
    /// The graphics queue and the compute queues.
    All,
    /// Only the graphics queue: compute queues report it like an unknown
    /// packet.
    Graphics,
}

/// What a queue that runs an opcode does with it.
#[derive(Clone, Copy)]
enum Does {
    /// Writes a run of registers of its space.
    Registers,
    /// Runs its handler.
    Handler(Handler),
    /// Nothing: passed by its length.
    Nothing,
    /// Counted and reported as not emulated.
    Unhandled,
}

/// One opcode's line.
#[derive(Clone, Copy)]
struct Declaration {
    opcode: Opcode,
    queues: Queues,
    does: Does,
}

macro_rules! declare {
    ($($op:ident: $queues:ident $does:expr;)*) => {{
        use Does::*;
        &[$(Declaration { opcode: Opcode::$op, queues: Queues::$queues, does: $does },)*]
    }};
}

/// Every opcode the processor does something with, or that is
/// graphics-only, in opcode order: the one place that says what an
/// opcode does (see the module documentation).
const DECLARATIONS: &[Declaration] = declare! {
    NOP: All Handler(nop::nop);
    SET_BASE: Graphics Handler(draw::set_base);
    CLEAR_STATE: Graphics Handler(registers::clear_state);
    INDEX_BUFFER_SIZE: Graphics Handler(draw::index_buffer_size);
    DISPATCH_DIRECT: All Handler(dispatch::dispatch_direct);
    DISPATCH_INDIRECT: All Handler(dispatch::dispatch_indirect);
    ATOMIC_MEM: All Handler(memory_ops::atomic_mem);
    OCCLUSION_QUERY: Graphics Handler(events::occlusion_query);
    SET_PREDICATION: Graphics Handler(predication::set_predication);
    REG_RMW: Graphics Handler(registers::reg_rmw);
    COND_EXEC: All Handler(predication::cond_exec);
    PRED_EXEC: Graphics Handler(predication::pred_exec);
    DRAW_INDIRECT: Graphics Handler(draw::draw::<{ Opcode::DRAW_INDIRECT.0 }>);
    DRAW_INDEX_INDIRECT: Graphics Handler(draw::draw::<{ Opcode::DRAW_INDEX_INDIRECT.0 }>);
    INDEX_BASE: Graphics Handler(draw::index_base);
    DRAW_INDEX_2: Graphics Handler(draw::draw::<{ Opcode::DRAW_INDEX_2.0 }>);
    CONTEXT_CONTROL: Graphics Handler(registers::context_control);
    INDEX_TYPE: Graphics Handler(draw::index_type_packet);
    DRAW_INDIRECT_MULTI: Graphics Handler(draw::draw::<{ Opcode::DRAW_INDIRECT_MULTI.0 }>);
    DRAW_INDEX_AUTO: Graphics Handler(draw::draw::<{ Opcode::DRAW_INDEX_AUTO.0 }>);
    NUM_INSTANCES: Graphics Handler(draw::num_instances);
    DRAW_INDEX_MULTI_AUTO: Graphics Handler(draw::draw::<{ Opcode::DRAW_INDEX_MULTI_AUTO.0 }>);
    INDIRECT_BUFFER_CONST: Graphics Handler(indirect::indirect_buffer_const);
    STRMOUT_BUFFER_UPDATE: Graphics Handler(draw::strmout_buffer_update);
    DRAW_INDEX_OFFSET_2: Graphics Handler(draw::draw::<{ Opcode::DRAW_INDEX_OFFSET_2.0 }>);
    DRAW_PREAMBLE: Graphics Unhandled;
    WRITE_DATA: All Handler(memory_ops::write_data);
    DRAW_INDEX_INDIRECT_MULTI: Graphics Handler(draw::draw::<{ Opcode::DRAW_INDEX_INDIRECT_MULTI.0 }>);
    MEM_SEMAPHORE: All Handler(wait::mem_semaphore);
    DRAW_INDEX_MULTI_INST: Graphics Handler(draw::draw_index_multi_inst);
    COPY_DW: Graphics Unhandled;
    WAIT_REG_MEM: All Handler(wait::wait_reg_mem);
    INDIRECT_BUFFER: All Handler(indirect::indirect_buffer);
    COPY_DATA: All Handler(memory_ops::copy_data);
    CP_DMA: Graphics Unhandled;
    PFP_SYNC_ME: Graphics Nothing;
    SURFACE_SYNC: Graphics Handler(events::surface_sync);
    COND_WRITE: All Handler(memory_ops::cond_write);
    EVENT_WRITE: All Handler(events::event_write);
    EVENT_WRITE_EOP: Graphics Handler(events::release);
    EVENT_WRITE_EOS: Graphics Handler(events::event_write_eos);
    RELEASE_MEM: All Handler(events::release);
    PREAMBLE_CNTL: Graphics Nothing;
    DISPATCH_MESH_INDIRECT_MULTI: Graphics Handler(draw::dispatch_mesh_indirect_multi);
    DISPATCH_TASKMESH_GFX: Graphics Handler(draw::dispatch_taskmesh_gfx);
    DMA_DATA: All Handler(memory_ops::dma_data);
    CONTEXT_REG_RMW: Graphics Handler(registers::context_reg_rmw);
    ACQUIRE_MEM: All Handler(events::acquire_mem);
    REWIND: All Handler(wait::rewind);
    PRIME_UTCL2: All Nothing;
    LOAD_UCONFIG_REG: Graphics Handler(registers::load_reg);
    LOAD_SH_REG: Graphics Handler(registers::load_reg);
    LOAD_CONFIG_REG: Graphics Handler(registers::load_reg);
    LOAD_CONTEXT_REG: Graphics Handler(registers::load_reg);
    LOAD_SH_REG_INDEX: All Handler(registers::load_reg_index);
    LOAD_UCONFIG_REG_INDEX: Graphics Handler(registers::load_reg_index);
    SET_CONFIG_REG: All Registers;
    SET_CONTEXT_REG: Graphics Registers;
    SET_CONTEXT_REG_INDEX: Graphics Registers;
    SET_CONTEXT_REG_INDIRECT: Graphics Handler(registers::set_context_reg_indirect);
    SET_SH_REG: All Registers;
    SET_SH_REG_OFFSET: Graphics Handler(registers::set_sh_reg_offset);
    SET_QUEUE_REG: All Handler(registers::set_queue_reg);
    SET_UCONFIG_REG: All Registers;
    SET_UCONFIG_REG_INDEX: Graphics Registers;
    LOAD_CONST_RAM: Graphics Handler(const_engine::load_const_ram);
    WRITE_CONST_RAM: Graphics Handler(const_engine::write_const_ram);
    DUMP_CONST_RAM: Graphics Handler(const_engine::dump_const_ram);
    INCREMENT_CE_COUNTER: Graphics Handler(const_engine::increment_ce_counter);
    INCREMENT_DE_COUNTER: Graphics Handler(const_engine::increment_de_counter);
    WAIT_ON_CE_COUNTER: All Handler(const_engine::wait_on_ce_counter);
    WAIT_ON_DE_COUNTER_DIFF: Graphics Handler(const_engine::wait_on_de_counter_diff);
    SWITCH_BUFFER: Graphics Nothing;
    GET_LOD_STATS: Graphics Unhandled;
    FRAME_CONTROL: Graphics Nothing;
    INDEX_ATTRIBUTES_INDIRECT: Graphics Unhandled;
    WAIT_FOR_WRITE_CONFIRM: Graphics Nothing;
    WAIT_REG_MEM64: All Handler(wait::wait_reg_mem);
    SET_SH_REG_INDEX: All Registers;
    DRAW_INDIRECT_COUNT_MULTI: Graphics Handler(draw::draw::<{ Opcode::DRAW_INDIRECT_COUNT_MULTI.0 }>);
    DRAW_INDEX_INDIRECT_COUNT_MULTI: Graphics Handler(draw::draw::<{ Opcode::DRAW_INDEX_INDIRECT_COUNT_MULTI.0 }>);
    DUMP_CONST_RAM_OFFSET: Graphics Handler(const_engine::dump_const_ram);
    LOAD_CONTEXT_REG_INDEX: Graphics Handler(registers::load_reg_index);
    DISPATCH_TASK_STATE_INIT: All Handler(dispatch::dispatch_task_state_init);
    DISPATCH_TASKMESH_DIRECT_ACE: All Handler(dispatch::dispatch_taskmesh_direct_ace);
    CONTEXT_PUSH: Graphics Unhandled;
    CONTEXT_POP: Graphics Unhandled;
    DISPATCH_TASKMESH_INDIRECT_MULTI_ACE: All Handler(dispatch::dispatch_taskmesh_indirect_multi_ace);
};

/// Which register runs the view loop stores inline ([`Table::inline`]):
/// one bit per case, tested in turn (a chain of branches the predictor
/// follows through a stream's opcodes, where a `match` on small numbers
/// compiles to an indirect jump it mispredicts).
pub(crate) mod inline {
    /// None: the packet's handler runs.
    pub(crate) const NONE: u8 = 0;
    /// A run of SH registers.
    pub(crate) const SH: u8 = 1;
    /// A run of context registers.
    pub(crate) const CONTEXT: u8 = 2;
    /// One GPU-wide UCONFIG register.
    pub(crate) const UCONFIG: u8 = 4;
}

/// What a queue does with each opcode: four arrays indexed by opcode, one
/// value built from [`DECLARATIONS`] (the view loop's inline test reads
/// one byte, its handler call one word).
pub(crate) struct Table {
    /// What runs the packet (for a register writer, the general store).
    pub(crate) handlers: [Handler; 256],
    /// The register runs the view loop stores inline ([`inline`]).
    pub(crate) inline: [u8; 256],
    /// Declared with an effect on this queue (a handler, a register writer
    /// or nothing), rather than reported.
    emulated: [bool; 256],
    /// Graphics-only packets (on any queue).
    graphics_only: [bool; 256],
}

/// The inline store of a register writer's space (none for the config
/// space, which marks nothing and is rare).
const fn inline_of(space: Option<RegisterSpace>) -> u8 {
    match space {
        Some(s) if s.base == RegisterSpace::SH.base => inline::SH,
        Some(s) if s.base == RegisterSpace::CONTEXT.base => inline::CONTEXT,
        Some(s) if s.base == RegisterSpace::UCONFIG.base => inline::UCONFIG,
        _ => inline::NONE,
    }
}

/// The table of a queue kind, from [`DECLARATIONS`] (checked here, at
/// compile time: every line names a known opcode once, and the register
/// writers are exactly the opcodes that write register runs).
const fn table(graphics_queue: bool) -> Table {
    let mut t = Table {
        handlers: [handlers::unhandled_packet as Handler; 256],
        inline: [inline::NONE; 256],
        emulated: [false; 256],
        graphics_only: [false; 256],
    };
    let mut declared = [false; 256];
    let mut k = 0;
    while k < DECLARATIONS.len() {
        let d = DECLARATIONS[k];
        let i = d.opcode.0 as usize;
        assert!(d.opcode.is_known(), "a declaration of an unnamed opcode");
        assert!(!declared[i], "an opcode declared twice");
        declared[i] = true;
        assert!(d.opcode.writes_register_run() == matches!(d.does, Does::Registers));
        t.graphics_only[i] = matches!(d.queues, Queues::Graphics);
        if !t.graphics_only[i] || graphics_queue {
            match d.does {
                Does::Registers => {
                    t.handlers[i] = registers::set_registers;
                    t.inline[i] = inline_of(d.opcode.register_space());
                    t.emulated[i] = true;
                }
                Does::Handler(handler) => {
                    t.handlers[i] = handler;
                    t.emulated[i] = true;
                }
                Does::Nothing => {
                    t.handlers[i] = nop::no_effect;
                    t.emulated[i] = true;
                }
                Does::Unhandled => {}
            }
        }
        k += 1;
    }
    t
}

/// The graphics queue's table.
pub(crate) static GRAPHICS: Table = table(true);

/// The compute queues' table: graphics-only packets are reported.
pub(crate) static COMPUTE: Table = table(false);

/// True when pm4core executes `opcode` on the graphics queue (a handler,
/// a register writer, or a packet with no effect), rather than reporting
/// it as not emulated or unknown.
///
/// ```
/// use pm4core::packet::Opcode;
/// use pm4core::processor::is_emulated;
///
/// assert!(is_emulated(Opcode::WRITE_DATA));
/// assert!(!is_emulated(Opcode::GET_LOD_STATS));
/// ```
pub fn is_emulated(opcode: Opcode) -> bool {
    GRAPHICS.emulated[usize::from(opcode.0)]
}

/// True when `opcode` is a graphics-ring packet that compute queues report
/// as an unknown packet.
///
/// ```
/// use pm4core::packet::Opcode;
/// use pm4core::processor::is_graphics_only;
///
/// assert!(is_graphics_only(Opcode::SET_CONTEXT_REG));
/// assert!(!is_graphics_only(Opcode::DISPATCH_DIRECT));
/// ```
pub fn is_graphics_only(opcode: Opcode) -> bool {
    GRAPHICS.graphics_only[usize::from(opcode.0)]
}

/// The entry of `table` a packet with `header` and `body` is, on `queue`,
/// when the processor asks the table for it: a NOP (not a one-dword pad)
/// or a type-3 packet the queue has no handler for (an unnamed opcode, a
/// named one not emulated, or a graphics-only one on a compute queue).
/// The disassembler names packets by the same rule.
pub(crate) fn private_entry<'t>(
    table: &'t PrivatePackets,
    queue: QueueId,
    header: Header,
    body: &[u32],
) -> Option<&'t PrivatePacketEntry> {
    if table.is_empty() || header.packet_type() != PacketType::Type3 {
        return None;
    }
    let opcode = header.opcode();
    let kind = if queue.is_graphics() { &GRAPHICS } else { &COMPUTE };
    let asked = if opcode == Opcode::NOP { !is_pad(header.0) } else { !kind.emulated[usize::from(opcode.0)] };
    if asked {
        table.classify(header, body)
    } else {
        None
    }
}
