//! The dispatch tables, built at compile time: CP opcode → entry (256: a
//! packet handler, a register writer described as data, or unhandled; one
//! table for the graphics queue and one for compute queues, where the
//! graphics-only packets are marked), and context (0xA000..0xA3FF), SH (0x2C00..0x2FFF)
//! and uconfig (0xC000..0xFFFF) register → register action. A register
//! without an action is still stored in the register file; an action adds
//! behaviour: marking the state groups a draw reports as changed, or
//! calling a handler function.
//! The custom-NOP table is `CUSTOM_NOPS` in `processor/handlers/nop.rs`.

use super::context::{Ctx, HandlerResult};
use super::handlers::{
    self, const_engine, dispatch, draw, events, indirect, memory_ops, nop, predication, registers, wait, Fast,
};
use super::{state_group, ProcessorState};
use crate::packet::{Opcode, Packet};
use crate::regs::gfx103 as r;
use crate::regs::space;

/// A packet handler.
pub(crate) type OpcodeHandler = for<'a, 'b, 'c> fn(&'a mut Ctx<'b>, &'a Packet<'c>) -> HandlerResult;

/// What the opcode table says about an opcode.
#[derive(Clone, Copy)]
pub(crate) enum OpcodeEntry {
    /// Decoded, counted and reported as not emulated (named opcodes) or as
    /// an unknown packet (unnamed ones).
    Unhandled,
    /// A plain register writer (SET_*_REG and their _INDEX forms): the
    /// values after dw0 go to consecutive registers of the space that
    /// starts at `base` (`size` registers), from dw0 \[15:0\]. Described as
    /// data so the loop writes them without a handler call.
    SetRegisters { base: u32, size: u32 },
    /// Any other packet.
    Handler(OpcodeHandler),
    /// A graphics-ring packet met on a compute queue: a driver bug on real
    /// hardware, reported like an unknown packet (hex dump, counted, skipped
    /// or stopping per [`super::UnknownPacketPolicy`]).
    GraphicsOnly,
}

/// A register handler function: runs after the value is stored.
pub type RegisterHandler = fn(&mut ProcessorState, u32, u32);

/// What writing a register does besides storing the value.
#[derive(Clone, Copy)]
pub enum RegisterAction {
    /// Nothing more.
    None,
    /// Marks these [`state_group`] bits as changed.
    Mark(u32),
    /// Calls a handler with the register index and value.
    Call(RegisterHandler),
}

const fn opcode_table() -> [OpcodeEntry; 256] {
    let mut t: [OpcodeEntry; 256] = [OpcodeEntry::Unhandled; 256];
    macro_rules! set {
        ($($op:ident => $h:expr),* $(,)?) => { $( t[Opcode::$op.0 as usize] = OpcodeEntry::Handler($h); )* };
    }
    macro_rules! set_registers {
        ($($op:ident => ($base:expr, $size:expr)),* $(,)?) => {
            $( t[Opcode::$op.0 as usize] = OpcodeEntry::SetRegisters { base: $base, size: $size }; )*
        };
    }
    set_registers! {
        SET_CONFIG_REG => (space::CONFIG, space::SH - space::CONFIG),
        SET_CONTEXT_REG => (space::CONTEXT, space::UCONFIG - space::CONTEXT),
        SET_CONTEXT_REG_INDEX => (space::CONTEXT, space::UCONFIG - space::CONTEXT),
        SET_SH_REG => (space::SH, space::SH_SIZE),
        SET_SH_REG_INDEX => (space::SH, space::SH_SIZE),
        SET_UCONFIG_REG => (space::UCONFIG, space::UCONFIG_SIZE),
        SET_UCONFIG_REG_INDEX => (space::UCONFIG, space::UCONFIG_SIZE),
    }
    set! {
        NOP => nop::nop,
        SET_BASE => draw::set_base,
        CLEAR_STATE => registers::clear_state,
        INDEX_BUFFER_SIZE => draw::index_buffer_size,
        DISPATCH_DIRECT => dispatch::dispatch_direct,
        DISPATCH_INDIRECT => dispatch::dispatch_indirect,
        ATOMIC_MEM => memory_ops::atomic_mem,
        OCCLUSION_QUERY => events::occlusion_query,
        SET_PREDICATION => predication::set_predication,
        REG_RMW => registers::reg_rmw,
        COND_EXEC => predication::cond_exec,
        PRED_EXEC => predication::pred_exec,
        DRAW_INDIRECT => draw::draw::<{ Opcode::DRAW_INDIRECT.0 }>,
        DRAW_INDEX_INDIRECT => draw::draw::<{ Opcode::DRAW_INDEX_INDIRECT.0 }>,
        INDEX_BASE => draw::index_base,
        DRAW_INDEX_2 => draw::draw::<{ Opcode::DRAW_INDEX_2.0 }>,
        CONTEXT_CONTROL => registers::context_control,
        INDEX_TYPE => draw::index_type_packet,
        DRAW_INDIRECT_MULTI => draw::draw::<{ Opcode::DRAW_INDIRECT_MULTI.0 }>,
        DRAW_INDEX_AUTO => draw::draw::<{ Opcode::DRAW_INDEX_AUTO.0 }>,
        NUM_INSTANCES => draw::num_instances,
        DRAW_INDEX_MULTI_AUTO => draw::draw::<{ Opcode::DRAW_INDEX_MULTI_AUTO.0 }>,
        INDIRECT_BUFFER_CONST => indirect::indirect_buffer_const,
        STRMOUT_BUFFER_UPDATE => draw::strmout_buffer_update,
        DRAW_INDEX_OFFSET_2 => draw::draw::<{ Opcode::DRAW_INDEX_OFFSET_2.0 }>,
        WRITE_DATA => memory_ops::write_data,
        DRAW_INDEX_INDIRECT_MULTI => draw::draw::<{ Opcode::DRAW_INDEX_INDIRECT_MULTI.0 }>,
        MEM_SEMAPHORE => wait::mem_semaphore,
        WAIT_REG_MEM => wait::wait_reg_mem,
        INDIRECT_BUFFER => indirect::indirect_buffer,
        COPY_DATA => memory_ops::copy_data,
        SURFACE_SYNC => events::surface_sync,
        COND_WRITE => memory_ops::cond_write,
        EVENT_WRITE => events::event_write,
        EVENT_WRITE_EOP => events::event_write_eop,
        EVENT_WRITE_EOS => events::event_write_eos,
        RELEASE_MEM => events::release_mem,
        DMA_DATA => memory_ops::dma_data,
        CONTEXT_REG_RMW => registers::context_reg_rmw,
        ACQUIRE_MEM => events::acquire_mem,
        REWIND => wait::rewind,
        LOAD_UCONFIG_REG => registers::load_reg,
        LOAD_SH_REG => registers::load_reg,
        LOAD_CONFIG_REG => registers::load_reg,
        LOAD_CONTEXT_REG => registers::load_reg,
        LOAD_SH_REG_INDEX => registers::load_reg_index,
        LOAD_UCONFIG_REG_INDEX => registers::load_reg_index,
        LOAD_CONST_RAM => const_engine::load_const_ram,
        WRITE_CONST_RAM => const_engine::write_const_ram,
        DUMP_CONST_RAM => const_engine::dump_const_ram,
        INCREMENT_CE_COUNTER => const_engine::increment_ce_counter,
        INCREMENT_DE_COUNTER => const_engine::increment_de_counter,
        WAIT_ON_CE_COUNTER => const_engine::wait_on_ce_counter,
        WAIT_ON_DE_COUNTER_DIFF => const_engine::wait_on_de_counter_diff,
        WAIT_REG_MEM64 => wait::wait_reg_mem,
        DRAW_INDIRECT_COUNT_MULTI => draw::draw::<{ Opcode::DRAW_INDIRECT_COUNT_MULTI.0 }>,
        DRAW_INDEX_INDIRECT_COUNT_MULTI => draw::draw::<{ Opcode::DRAW_INDEX_INDIRECT_COUNT_MULTI.0 }>,
        DUMP_CONST_RAM_OFFSET => const_engine::dump_const_ram,
        LOAD_CONTEXT_REG_INDEX => registers::load_reg_index,
        SET_QUEUE_REG => registers::set_queue_reg,
        SET_CONTEXT_REG_INDIRECT => registers::set_context_reg_indirect,
        SET_SH_REG_OFFSET => registers::set_sh_reg_offset,
        DISPATCH_MESH_INDIRECT_MULTI => draw::dispatch_mesh_indirect_multi,
        DISPATCH_TASKMESH_GFX => draw::dispatch_taskmesh_gfx,
        DRAW_INDEX_MULTI_INST => draw::draw_index_multi_inst,
        DISPATCH_TASK_STATE_INIT => dispatch::dispatch_task_state_init,
        DISPATCH_TASKMESH_DIRECT_ACE => dispatch::dispatch_taskmesh_direct_ace,
        DISPATCH_TASKMESH_INDIRECT_MULTI_ACE => dispatch::dispatch_taskmesh_indirect_multi_ace,
    }
    let mut k = 0;
    while k < NO_EFFECT_PACKETS.len() {
        t[NO_EFFECT_PACKETS[k].0 as usize] = OpcodeEntry::Handler(nop::no_effect);
        k += 1;
    }
    t
}

/// Packets only the graphics ring (or its constant engine) accepts: named
/// in packets.md §2 with engines G and/or CE but not C, and absent from the
/// compute-ring (MEC) packet set listed there.
pub const GRAPHICS_ONLY: [Opcode; 60] = [
    Opcode::SET_BASE,
    Opcode::CLEAR_STATE,
    Opcode::INDEX_BUFFER_SIZE,
    Opcode::OCCLUSION_QUERY,
    Opcode::SET_PREDICATION,
    Opcode::REG_RMW,
    Opcode::PRED_EXEC,
    Opcode::DRAW_INDIRECT,
    Opcode::DRAW_INDEX_INDIRECT,
    Opcode::INDEX_BASE,
    Opcode::DRAW_INDEX_2,
    Opcode::CONTEXT_CONTROL,
    Opcode::INDEX_TYPE,
    Opcode::DRAW_INDIRECT_MULTI,
    Opcode::DRAW_INDEX_AUTO,
    Opcode::NUM_INSTANCES,
    Opcode::DRAW_INDEX_MULTI_AUTO,
    Opcode::INDIRECT_BUFFER_CONST,
    Opcode::STRMOUT_BUFFER_UPDATE,
    Opcode::DRAW_INDEX_OFFSET_2,
    Opcode::DRAW_PREAMBLE,
    Opcode::DRAW_INDEX_INDIRECT_MULTI,
    Opcode::DRAW_INDEX_MULTI_INST,
    Opcode::COPY_DW,
    Opcode::CP_DMA,
    Opcode::PFP_SYNC_ME,
    Opcode::SURFACE_SYNC,
    Opcode::EVENT_WRITE_EOP,
    Opcode::EVENT_WRITE_EOS,
    Opcode::PREAMBLE_CNTL,
    Opcode::DISPATCH_MESH_INDIRECT_MULTI,
    Opcode::DISPATCH_TASKMESH_GFX,
    Opcode::CONTEXT_REG_RMW,
    Opcode::LOAD_UCONFIG_REG,
    Opcode::LOAD_SH_REG,
    Opcode::LOAD_CONFIG_REG,
    Opcode::LOAD_CONTEXT_REG,
    Opcode::LOAD_UCONFIG_REG_INDEX,
    Opcode::SET_CONTEXT_REG,
    Opcode::SET_CONTEXT_REG_INDEX,
    Opcode::SET_CONTEXT_REG_INDIRECT,
    Opcode::SET_SH_REG_OFFSET,
    Opcode::SET_UCONFIG_REG_INDEX,
    Opcode::LOAD_CONST_RAM,
    Opcode::WRITE_CONST_RAM,
    Opcode::DUMP_CONST_RAM,
    Opcode::INCREMENT_CE_COUNTER,
    Opcode::INCREMENT_DE_COUNTER,
    Opcode::WAIT_ON_DE_COUNTER_DIFF,
    Opcode::SWITCH_BUFFER,
    Opcode::GET_LOD_STATS,
    Opcode::FRAME_CONTROL,
    Opcode::INDEX_ATTRIBUTES_INDIRECT,
    Opcode::WAIT_FOR_WRITE_CONFIRM,
    Opcode::DRAW_INDIRECT_COUNT_MULTI,
    Opcode::DRAW_INDEX_INDIRECT_COUNT_MULTI,
    Opcode::DUMP_CONST_RAM_OFFSET,
    Opcode::LOAD_CONTEXT_REG_INDEX,
    Opcode::CONTEXT_PUSH,
    Opcode::CONTEXT_POP,
];

const fn compute_opcode_table() -> [OpcodeEntry; 256] {
    let mut t = opcode_table();
    let mut i = 0;
    while i < GRAPHICS_ONLY.len() {
        t[GRAPHICS_ONLY[i].0 as usize] = OpcodeEntry::GraphicsOnly;
        i += 1;
    }
    t
}

/// The register space a plain register writer writes (`size` 0 for every
/// other opcode): [`OpcodeEntry::SetRegisters`] as a compact table for the
/// loop's fast path, with the space's [`RunSpans`] (empty for a space
/// without action tables).
#[derive(Clone, Copy)]
pub(crate) struct RegisterRun {
    pub base: u32,
    pub size: u32,
    pub spans: &'static [u64],
}

const fn register_runs(entries: [OpcodeEntry; 256]) -> [RegisterRun; 256] {
    let mut t = [RegisterRun { base: 0, size: 0, spans: &[] }; 256];
    let mut i = 0;
    while i < 256 {
        if let OpcodeEntry::SetRegisters { base, size } = entries[i] {
            let spans: &'static [u64] = match base {
                space::SH => &SH_RUN_SPANS,
                space::CONTEXT => &CONTEXT_RUN_SPANS,
                space::UCONFIG => &UCONFIG_RUN_SPANS,
                _ => &[],
            };
            t[i] = RegisterRun { base, size, spans };
        }
        i += 1;
    }
    t
}

/// What the loop's fast path does with a packet, by opcode (see
/// [`fast_classes`]): one bit per case, tested one after the other, a
/// chain of conditional branches that the branch predictor follows through
/// a stream's pattern of opcodes, where a `match` on small numbers
/// compiles to an indirect jump it mispredicts.
pub(crate) mod fast_class {
    /// Nothing: the packet goes the general way (the loop takes a
    /// one-dword NOP pad before it looks here).
    pub const NONE: u8 = 0;
    /// SET_SH_REG: a register run in the SH space.
    pub const SH: u8 = 1;
    /// SET_CONTEXT_REG: a register run in the context space.
    pub const CONTEXT: u8 = 2;
    /// SET_UCONFIG_REG and SET_UCONFIG_REG_INDEX: one GPU-wide register.
    pub const UCONFIG: u8 = 4;
    /// NUM_INSTANCES: its handler's whole effect is one write of
    /// VGT_NUM_INSTANCES, which the fast path makes like a SET_UCONFIG_REG.
    pub const NUM_INSTANCES: u8 = 8;
    /// Another register writer: a register run in its space's [`super::RegisterRun`].
    pub const OTHER_RUN: u8 = 16;
    /// A packet whose handler is plain (see [`super::PLAIN_HANDLERS`]).
    pub const PLAIN_HANDLER: u8 = 32;
    /// A direct draw: the draw handler's fast entry runs it
    /// (`handlers::draw::direct_draw`, for `handlers::draw::DIRECT_DRAWS`).
    pub const DIRECT_DRAW: u8 = 64;
    /// EVENT_WRITE: the events handler's fast entry runs a plain event
    /// (`handlers::events::plain_event_write`).
    pub const EVENT_WRITE: u8 = 128;
    /// A packet with no effect (see [`super::NO_EFFECT_PACKETS`]): counted
    /// and passed by its length, no handler call. EVENT_WRITE's bit with
    /// the plain-handler bit (which no other class with EVENT_WRITE's bit
    /// has): the chain tests the one bit, then tells the two apart, so
    /// nine cases fit a byte.
    pub const NO_EFFECT: u8 = EVENT_WRITE | PLAIN_HANDLER;
}

/// Packets with no effect on a serial emulator: their handler is
/// `nop::no_effect` (the opcode table takes it from this list), and the
/// loop's fast path passes them by their length without calling it
/// (`fast_class::NO_EFFECT`).
pub(crate) const NO_EFFECT_PACKETS: [Opcode; 6] = [
    Opcode::PFP_SYNC_ME,
    Opcode::PREAMBLE_CNTL,
    Opcode::PRIME_UTCL2,
    Opcode::SWITCH_BUFFER,
    Opcode::FRAME_CONTROL,
    Opcode::WAIT_FOR_WRITE_CONFIRM,
];

/// Opcodes whose handler is plain: it never changes predication, runs the
/// constant engine, charges packets of its own or reads the counts of
/// packets run, and almost never suspends, moves the cursor or changes the
/// IB stack, so the loop runs it without settling those counts first (it
/// settles them when the handler fails, suspends, moves the cursor or
/// writes the dwords the loop holds after all). Direct dispatches, the
/// index-buffer state packets (the direct draws have a fast entry of their
/// own, `fast_class::DIRECT_DRAW`), releases (EVENT_WRITE has a fast
/// entry, `fast_class::EVENT_WRITE`), memory writes, fills and copies,
/// cache actions, context control, clear state and waits on memory or a
/// register (which suspend only when the value is not there yet). Each
/// comes with its fast entry when it has one: the loop calls it with the
/// packet's body before the handler, and calls the handler only when it
/// answers [`Fast::General`].
pub(crate) const PLAIN_HANDLERS: [(Opcode, Option<FastEntry>); 15] = [
    (Opcode::DISPATCH_DIRECT, None),
    (Opcode::INDEX_BASE, None),
    (Opcode::INDEX_TYPE, None),
    (Opcode::INDEX_BUFFER_SIZE, None),
    (Opcode::EVENT_WRITE_EOP, Some(events::release_fast)),
    (Opcode::EVENT_WRITE_EOS, None),
    (Opcode::RELEASE_MEM, Some(events::release_fast)),
    (Opcode::ACQUIRE_MEM, Some(events::acquire_mem_fast)),
    (Opcode::SURFACE_SYNC, None),
    (Opcode::WRITE_DATA, Some(memory_ops::write_data_fast)),
    (Opcode::DMA_DATA, Some(memory_ops::dma_data_fast)),
    (Opcode::CONTEXT_CONTROL, Some(registers::context_control_fast)),
    (Opcode::CLEAR_STATE, Some(registers::clear_state_fast)),
    (Opcode::WAIT_REG_MEM, Some(wait::wait_reg_mem_fast)),
    (Opcode::WAIT_REG_MEM64, Some(wait::wait_reg_mem_fast)),
];

/// A plain handler's fast entry (see `handlers::Fast`): the packet's body
/// in (the context's location and opcode are the packet's), what it did
/// out.
pub(crate) type FastEntry = for<'a, 'b> fn(&'a mut Ctx<'b>, &'a [u32]) -> Fast;

/// Opcode → the fast entry of its plain handler (see [`PLAIN_HANDLERS`]):
/// the loop's fast path calls it for a packet whose class is
/// [`fast_class::PLAIN_HANDLER`] and that it holds whole.
pub(crate) static FAST_ENTRIES: [Option<FastEntry>; 256] = fast_entries();

const fn fast_entries() -> [Option<FastEntry>; 256] {
    let mut t: [Option<FastEntry>; 256] = [None; 256];
    let mut k = 0;
    while k < PLAIN_HANDLERS.len() {
        let (opcode, entry) = PLAIN_HANDLERS[k];
        t[opcode.0 as usize] = entry;
        k += 1;
    }
    t
}

/// Opcode → [`fast_class`]: one byte load picks the fast path's case
/// (`entries` says which opcodes run a handler on the queue: a plain
/// handler's opcode that is graphics-only on compute queues is not plain
/// there).
const fn fast_classes(runs: &[RegisterRun; 256], entries: &[OpcodeEntry; 256]) -> [u8; 256] {
    let mut t = [fast_class::NONE; 256];
    let mut k = 0;
    while k < PLAIN_HANDLERS.len() {
        let i = PLAIN_HANDLERS[k].0 .0 as usize;
        if matches!(entries[i], OpcodeEntry::Handler(_)) {
            t[i] = fast_class::PLAIN_HANDLER;
        }
        k += 1;
    }
    let mut k = 0;
    while k < NO_EFFECT_PACKETS.len() {
        let i = NO_EFFECT_PACKETS[k].0 as usize;
        if matches!(entries[i], OpcodeEntry::Handler(_)) {
            t[i] = fast_class::NO_EFFECT;
        }
        k += 1;
    }
    let event_write = Opcode::EVENT_WRITE.0 as usize;
    if matches!(entries[event_write], OpcodeEntry::Handler(_)) {
        t[event_write] = fast_class::EVENT_WRITE;
    }
    let mut k = 0;
    while k < draw::DIRECT_DRAWS.len() {
        let i = draw::DIRECT_DRAWS[k].0 as usize;
        if matches!(entries[i], OpcodeEntry::Handler(_)) {
            t[i] = fast_class::DIRECT_DRAW;
        }
        k += 1;
    }
    let mut i = 0;
    while i < 256 {
        if runs[i].size != 0 {
            t[i] = match runs[i].base {
                space::SH if i == Opcode::SET_SH_REG.0 as usize => fast_class::SH,
                space::CONTEXT if i == Opcode::SET_CONTEXT_REG.0 as usize => fast_class::CONTEXT,
                space::UCONFIG => fast_class::UCONFIG,
                _ => fast_class::OTHER_RUN,
            };
        }
        i += 1;
    }
    // NUM_INSTANCES is graphics-only: on compute queues it goes the
    // general way (reported like any packet the queue does not run).
    let num_instances = Opcode::NUM_INSTANCES.0 as usize;
    if matches!(entries[num_instances], OpcodeEntry::Handler(_)) {
        t[num_instances] = fast_class::NUM_INSTANCES;
    }
    t
}

/// True when no opcode the fast path stores through its space's
/// [`RegisterRun`] (`fast_class::OTHER_RUN`) writes uconfig registers:
/// those are GPU-wide, and only the uconfig case stores them there too.
const fn other_runs_stay_local(classes: &[u8; 256], runs: &[RegisterRun; 256]) -> bool {
    let mut i = 0;
    while i < 256 {
        if classes[i] == fast_class::OTHER_RUN && runs[i].base >= space::UCONFIG {
            return false;
        }
        i += 1;
    }
    true
}

const _: () = {
    let runs = register_runs(opcode_table());
    assert!(other_runs_stay_local(&fast_classes(&runs, &opcode_table()), &runs));
    let runs = register_runs(compute_opcode_table());
    assert!(other_runs_stay_local(&fast_classes(&runs, &compute_opcode_table()), &runs));
};

/// CP opcode → the space its register run writes, for plain register writers.
pub(crate) static REGISTER_RUNS: [RegisterRun; 256] = register_runs(opcode_table());

/// [`fast_class`] by opcode on the graphics queue.
pub(crate) static FAST_CLASSES: [u8; 256] = fast_classes(&REGISTER_RUNS, &opcode_table());

/// [`fast_class`] by opcode on compute queues.
pub(crate) static COMPUTE_FAST_CLASSES: [u8; 256] = fast_classes(&COMPUTE_REGISTER_RUNS, &compute_opcode_table());

/// The same for compute queues: graphics-only register writers have none.
pub(crate) static COMPUTE_REGISTER_RUNS: [RegisterRun; 256] = register_runs(compute_opcode_table());

/// What the loop calls for a packet that is not a plain register writer or
/// a one-dword pad: the opcode's handler, or the report of a packet with
/// none ([`handlers::unhandled`]). Plain register writers have a handler
/// too ([`handlers::registers::set_registers`]), though the loop stores
/// them itself.
const fn handler_table(entries: [OpcodeEntry; 256]) -> [OpcodeHandler; 256] {
    let mut t: [OpcodeHandler; 256] = [handlers::unhandled as OpcodeHandler; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = match entries[i] {
            OpcodeEntry::Handler(handler) => handler,
            OpcodeEntry::SetRegisters { .. } => handlers::registers::set_registers as OpcodeHandler,
            OpcodeEntry::Unhandled | OpcodeEntry::GraphicsOnly => handlers::unhandled as OpcodeHandler,
        };
        i += 1;
    }
    t
}

/// [`handler_table`] of the graphics queue.
pub(crate) static HANDLERS: [OpcodeHandler; 256] = handler_table(opcode_table());

/// [`handler_table`] of the compute queues.
pub(crate) static COMPUTE_HANDLERS: [OpcodeHandler; 256] = handler_table(compute_opcode_table());

/// CP opcode → what executes it, on the graphics queue.
pub(crate) static OPCODE_TABLE: [OpcodeEntry; 256] = opcode_table();

/// CP opcode → what executes it, on a compute queue.
pub(crate) static COMPUTE_OPCODE_TABLE: [OpcodeEntry; 256] = compute_opcode_table();

/// True when pm4core executes `opcode` (on the graphics queue).
pub fn is_emulated(opcode: Opcode) -> bool {
    !matches!(OPCODE_TABLE[opcode.0 as usize], OpcodeEntry::Unhandled)
}

/// True when `opcode` is a graphics-ring packet that compute queues report
/// as an unknown packet.
pub fn is_graphics_only(opcode: Opcode) -> bool {
    matches!(COMPUTE_OPCODE_TABLE[opcode.0 as usize], OpcodeEntry::GraphicsOnly)
}

/// Binds `count` registers from `first` (absolute index) in a table whose
/// first entry is register `base`.
const fn bind<const N: usize>(
    mut t: [RegisterAction; N],
    base: u32,
    first: u32,
    count: u32,
    stride: u32,
    action: RegisterAction,
) -> [RegisterAction; N] {
    let mut i = 0;
    while i < count {
        let index = (first + i * stride - base) as usize;
        if index < N {
            t[index] = action;
        }
        i += 1;
    }
    t
}

const fn context_table() -> [RegisterAction; space::CONTEXT_SIZE as usize] {
    let b = space::CONTEXT;
    let mut t: [RegisterAction; space::CONTEXT_SIZE as usize] = [RegisterAction::None; space::CONTEXT_SIZE as usize];
    // 16 viewports: 6 transform registers each, then the Z min/max pairs.
    t = bind(t, b, r::PA_CL_VPORT_XSCALE, 16 * 6, 1, RegisterAction::Mark(state_group::VIEWPORT));
    t = bind(t, b, r::PA_SC_VPORT_ZMIN_0, 16 * 2, 1, RegisterAction::Mark(state_group::VIEWPORT));
    // 16 viewport scissors (TL/BR) plus the screen, window and generic ones.
    t = bind(t, b, r::PA_SC_VPORT_SCISSOR_0_TL, 16 * 2, 1, RegisterAction::Mark(state_group::SCISSOR));
    t = bind(t, b, r::PA_SC_SCREEN_SCISSOR_TL, 2, 1, RegisterAction::Mark(state_group::SCISSOR));
    t = bind(t, b, r::PA_SC_GENERIC_SCISSOR_TL, 2, 1, RegisterAction::Mark(state_group::SCISSOR));
    t = bind(t, b, r::PA_SC_WINDOW_OFFSET, 1, 1, RegisterAction::Mark(state_group::SCISSOR));
    // 8 colour targets: 15 registers each, plus the gfx10 extension ranges.
    t = bind(t, b, r::CB_COLOR0_BASE, 8 * 15, 1, RegisterAction::Mark(state_group::RENDER_TARGETS));
    t = bind(t, b, r::CB_COLOR0_BASE_EXT, 8 * 6, 1, RegisterAction::Mark(state_group::RENDER_TARGETS));
    t = bind(t, b, r::CB_COLOR0_ATTRIB2, 8 * 2, 1, RegisterAction::Mark(state_group::RENDER_TARGETS));
    // Depth/stencil surface.
    t = bind(t, b, r::DB_DEPTH_SIZE_XY, 1, 1, RegisterAction::Mark(state_group::DEPTH));
    t = bind(t, b, r::DB_Z_INFO, 8, 1, RegisterAction::Mark(state_group::DEPTH));
    t = bind(t, b, r::DB_Z_READ_BASE_HI, 5, 1, RegisterAction::Mark(state_group::DEPTH));
    t = bind(t, b, r::DB_DEPTH_CLEAR, 1, 1, RegisterAction::Mark(state_group::DEPTH));
    // Which stages run decides which programs a draw binds.
    t = bind(t, b, r::VGT_SHADER_STAGES_EN, 1, 1, RegisterAction::Mark(state_group::PROGRAMS));
    t = bind(t, b, r::VGT_DMA_INDEX_TYPE, 1, 1, RegisterAction::Mark(state_group::INDEX));
    t = bind(t, b, r::VGT_STRMOUT_BUFFER_SIZE_0, 16, 1, RegisterAction::Mark(state_group::STREAMOUT));
    t
}

const fn sh_table() -> [RegisterAction; space::SH_SIZE as usize] {
    let b = space::SH;
    let mut t: [RegisterAction; space::SH_SIZE as usize] = [RegisterAction::None; space::SH_SIZE as usize];
    // Program address LO/HI pairs of every graphics slot.
    t = bind(t, b, r::SPI_SHADER_PGM_LO_PS, 2, 1, RegisterAction::Mark(state_group::PROGRAMS));
    t = bind(t, b, r::SPI_SHADER_PGM_LO_VS, 2, 1, RegisterAction::Mark(state_group::PROGRAMS));
    t = bind(t, b, r::SPI_SHADER_PGM_LO_ES_GS, 2, 1, RegisterAction::Mark(state_group::PROGRAMS));
    t = bind(t, b, r::SPI_SHADER_PGM_LO_GS, 2, 1, RegisterAction::Mark(state_group::PROGRAMS));
    t = bind(t, b, r::SPI_SHADER_PGM_LO_ES, 2, 1, RegisterAction::Mark(state_group::PROGRAMS));
    t = bind(t, b, r::SPI_SHADER_PGM_LO_LS_HS, 2, 1, RegisterAction::Mark(state_group::PROGRAMS));
    t = bind(t, b, r::SPI_SHADER_PGM_LO_HS, 2, 1, RegisterAction::Mark(state_group::PROGRAMS));
    t = bind(t, b, r::SPI_SHADER_PGM_LO_LS, 2, 1, RegisterAction::Mark(state_group::PROGRAMS));
    t = bind(t, b, r::COMPUTE_PGM_LO, 2, 1, RegisterAction::Mark(state_group::COMPUTE_PROGRAM));
    // User data: 32 per graphics stage, 16 for compute.
    t = bind(t, b, r::SPI_SHADER_USER_DATA_PS_0, 32, 1, RegisterAction::Mark(state_group::USER_DATA));
    t = bind(t, b, r::SPI_SHADER_USER_DATA_VS_0, 32, 1, RegisterAction::Mark(state_group::USER_DATA));
    t = bind(t, b, r::SPI_SHADER_USER_DATA_GS_0, 32, 1, RegisterAction::Mark(state_group::USER_DATA));
    t = bind(t, b, r::SPI_SHADER_USER_DATA_HS_0, 32, 1, RegisterAction::Mark(state_group::USER_DATA));
    t = bind(t, b, r::COMPUTE_USER_DATA_0, 16, 1, RegisterAction::Mark(state_group::USER_DATA));
    t
}

const fn uconfig_table() -> [RegisterAction; space::UCONFIG_SIZE as usize] {
    let b = space::UCONFIG;
    let mut t: [RegisterAction; space::UCONFIG_SIZE as usize] = [RegisterAction::None; space::UCONFIG_SIZE as usize];
    t = bind(t, b, r::VGT_PRIMITIVE_TYPE, 1, 1, RegisterAction::Mark(state_group::PRIMITIVE));
    t = bind(t, b, r::VGT_INDEX_TYPE, 1, 1, RegisterAction::Mark(state_group::INDEX));
    t = bind(t, b, r::VGT_NUM_INSTANCES, 1, 1, RegisterAction::Mark(state_group::INSTANCES));
    t
}

/// Context register (0xA000 + i) → action.
pub static CONTEXT_REGISTER_ACTIONS: [RegisterAction; space::CONTEXT_SIZE as usize] = context_table();
/// SH register (0x2C00 + i) → action.
pub static SH_REGISTER_ACTIONS: [RegisterAction; space::SH_SIZE as usize] = sh_table();
/// Uconfig register (0xC000 + i) → action.
pub static UCONFIG_REGISTER_ACTIONS: [RegisterAction; space::UCONFIG_SIZE as usize] = uconfig_table();

/// [`RegisterMarks`] bit of a register whose action calls a handler.
pub(crate) const CALLS_HANDLER: u32 = 1 << 31;

/// A register table's actions as one word each: the [`state_group`] bits
/// a write marks, or [`CALLS_HANDLER`]. A run of register writes ORs these
/// words together instead of matching each action.
type RegisterMarks<const N: usize> = [u32; N];

const fn marks_of<const N: usize>(actions: &[RegisterAction; N]) -> RegisterMarks<N> {
    let mut marks = [0u32; N];
    let mut i = 0;
    while i < N {
        marks[i] = match actions[i] {
            RegisterAction::None => 0,
            RegisterAction::Mark(groups) => groups & !CALLS_HANDLER,
            RegisterAction::Call(_) => CALLS_HANDLER,
        };
        i += 1;
    }
    marks
}

/// What CLEAR_STATE stores, built at compile time from
/// `regs::generated::clear_state::EXTENTS`: each extent cut at the
/// register file's pages, so that every piece is one slice of one page
/// (`(offset from 0xA000, count)`), and the state groups the extents'
/// registers mark. No context register calls a handler (checked here, at
/// compile time), so storing the pieces and marking the groups is the
/// whole of writing the extents one register run at a time.
pub(crate) struct ClearStatePieces {
    pieces: [(u32, u32); 32],
    count: usize,
    /// The [`state_group`] bits the extents' registers mark.
    pub marks: u32,
}

impl ClearStatePieces {
    /// The pieces, in the extents' order.
    pub(crate) fn pieces(&self) -> &[(u32, u32)] {
        self.pieces.get(..self.count).unwrap_or(&[])
    }
}

/// CLEAR_STATE's pieces and marks (see [`ClearStatePieces`]).
pub(crate) static CLEAR_STATE_PIECES: ClearStatePieces = clear_state_pieces();

const fn clear_state_pieces() -> ClearStatePieces {
    use crate::regs::generated::clear_state::EXTENTS;
    use crate::regs::REGISTER_PAGE;
    let marks = marks_of(&context_table());
    let mut out = ClearStatePieces { pieces: [(0, 0); 32], count: 0, marks: 0 };
    // The context space starts on a page: a cut relative to it is a cut of
    // the file.
    assert!(space::CONTEXT as usize % REGISTER_PAGE == 0);
    let mut e = 0;
    while e < EXTENTS.len() {
        let (first, count) = EXTENTS[e];
        let mut offset = (first - space::CONTEXT) as usize;
        let end = offset + count as usize;
        assert!(end <= space::CONTEXT_SIZE as usize);
        while offset < end {
            let page_end = (offset / REGISTER_PAGE + 1) * REGISTER_PAGE;
            let piece_end = if end < page_end { end } else { page_end };
            out.pieces[out.count] = (offset as u32, (piece_end - offset) as u32);
            out.count += 1;
            while offset < piece_end {
                assert!(marks[offset] & CALLS_HANDLER == 0, "a clear-state register calls a handler");
                out.marks |= marks[offset];
                offset += 1;
            }
        }
        e += 1;
    }
    out
}

/// Levels of a [`RangeMarks`] table: runs of up to 2^10 = 1024 registers.
const RANGE_LEVELS: usize = 11;

/// A [`RegisterMarks`] table as a sparse table for range ORs: level `k`,
/// entry `i` is the OR of the words of registers `i..i + 2^k` (clamped to
/// the table), so any run's OR is the OR of two entries, with no loop.
type RangeMarks<const N: usize> = [[u32; N]; RANGE_LEVELS];

const fn range_marks_of<const N: usize>(marks: &RegisterMarks<N>) -> RangeMarks<N> {
    let mut t = [[0u32; N]; RANGE_LEVELS];
    t[0] = *marks;
    let mut k = 1;
    while k < RANGE_LEVELS {
        let half = 1usize << (k - 1);
        let mut i = 0;
        while i < N {
            t[k][i] = if i + half < N { t[k - 1][i] | t[k - 1][i + half] } else { t[k - 1][i] };
            i += 1;
        }
        k += 1;
    }
    t
}

/// The OR of `table`'s words `start..start + count` (`None` past the table).
#[inline]
fn range_or<const N: usize>(table: &RangeMarks<N>, start: usize, count: usize) -> Option<u32> {
    if count == 0 {
        return Some(0);
    }
    let level = (usize::BITS - 1 - count.leading_zeros()) as usize;
    let level_table = table.get(level)?;
    let left = level_table.get(start)?;
    let right = level_table.get(start + count - (1 << level))?;
    Some(left | right)
}

/// For each register of a [`RegisterMarks`] table, the last register of
/// the run of equal words it starts: a register run inside it has that one
/// word as its OR (most runs: user data, a viewport, a render target).
const fn spans_of<const N: usize>(marks: &RegisterMarks<N>) -> [u16; N] {
    let mut spans = [0u16; N];
    let mut i = N;
    while i > 0 {
        i -= 1;
        spans[i] = if i + 1 < N && marks[i + 1] == marks[i] { spans[i + 1] } else { i as u16 };
    }
    spans
}

/// The OR of the words of `count` registers from `start` of a table: one
/// lookup when the run lies in one span of equal words, two in the sparse
/// table otherwise.
#[inline]
fn run_marks<const N: usize>(ranges: &RangeMarks<N>, spans: &[u16; N], start: usize, count: usize) -> Option<u32> {
    match (ranges.first().and_then(|marks| marks.get(start)), spans.get(start)) {
        (Some(&marks), Some(&span)) if start + count <= usize::from(span) + 1 => Some(marks),
        _ => range_or(ranges, start, count),
    }
}

static CONTEXT_REGISTER_MARKS: RangeMarks<{ space::CONTEXT_SIZE as usize }> =
    range_marks_of(&marks_of(&context_table()));
static SH_REGISTER_MARKS: RangeMarks<{ space::SH_SIZE as usize }> = range_marks_of(&marks_of(&sh_table()));
static CONTEXT_MARK_SPANS: [u16; space::CONTEXT_SIZE as usize] = spans_of(&marks_of(&context_table()));
static SH_MARK_SPANS: [u16; space::SH_SIZE as usize] = spans_of(&marks_of(&sh_table()));
static UCONFIG_REGISTER_MARKS: RegisterMarks<{ space::UCONFIG_SIZE as usize }> = marks_of(&uconfig_table());

/// Most values one packet of the loop's fast path stores (`store_register_run`).
pub(crate) const RUN_MAX_VALUES: u32 = 8;

/// A register table's [`RegisterMarks`] and how far a fast-path store may
/// reach, in one word per register: the low half is the register's marks,
/// the high half the most values a register writer starting at that
/// register may store on the loop's fast path (`store_register_run`). That is
/// at most [`RUN_MAX_VALUES`] (`max_values` for a space the fast path
/// writes one value of), never past the run of equal marks the register
/// is in (so the packet's marks are its first register's) or its
/// 256-register page (so the store is one slice of one page), and 0 for
/// a register whose write calls a handler. A packet of `n` values fits
/// when `n - 1 < limit`: one compare.
type RunSpans<const N: usize> = [u64; N];

const fn run_spans_of<const N: usize>(marks: &RegisterMarks<N>, max_values: u32) -> RunSpans<N> {
    let spans = spans_of(marks);
    let mut t = [0u64; N];
    let mut i = 0;
    while i < N {
        // Every space starts on a page boundary (0x2C00, 0xA000, 0xC000).
        let to_span_end = spans[i] as u32 + 1 - i as u32;
        let to_page_end = (crate::regs::REGISTER_PAGE - i % crate::regs::REGISTER_PAGE) as u32;
        let mut limit = max_values;
        if to_span_end < limit {
            limit = to_span_end;
        }
        if to_page_end < limit {
            limit = to_page_end;
        }
        if marks[i] & CALLS_HANDLER != 0 {
            limit = 0;
        }
        t[i] = (limit as u64) << 32 | marks[i] as u64;
        i += 1;
    }
    t
}

pub(crate) static SH_RUN_SPANS: RunSpans<{ space::SH_SIZE as usize }> =
    run_spans_of(&marks_of(&sh_table()), RUN_MAX_VALUES);
pub(crate) static CONTEXT_RUN_SPANS: RunSpans<{ space::CONTEXT_SIZE as usize }> =
    run_spans_of(&marks_of(&context_table()), RUN_MAX_VALUES);
/// Uconfig registers are GPU-wide: the fast path stores one value.
pub(crate) static UCONFIG_RUN_SPANS: RunSpans<{ space::UCONFIG_SIZE as usize }> =
    run_spans_of(&marks_of(&uconfig_table()), 1);

/// The OR of the action words (see [`CALLS_HANDLER`]) of `count`
/// consecutive registers from `first` (absolute), clamped to the space
/// `first` is in; 0 outside the three tables.
#[inline]
pub(crate) fn register_run_marks(first: u32, count: usize) -> u32 {
    let clamp = |start: usize, size: u32| count.min((size as usize).saturating_sub(start));
    let marks = match first {
        0x2C00..=0x2FFF => {
            let start = (first - space::SH) as usize;
            run_marks(&SH_REGISTER_MARKS, &SH_MARK_SPANS, start, clamp(start, space::SH_SIZE))
        }
        0xA000..=0xA3FF => {
            let start = (first - space::CONTEXT) as usize;
            run_marks(&CONTEXT_REGISTER_MARKS, &CONTEXT_MARK_SPANS, start, clamp(start, space::CONTEXT_SIZE))
        }
        // Three UCONFIG registers have actions: runs there are short.
        0xC000..=0xFFFF => {
            let start = (first - space::UCONFIG) as usize;
            if count == 1 {
                UCONFIG_REGISTER_MARKS.get(start).copied()
            } else {
                let end = start.saturating_add(count).min(UCONFIG_REGISTER_MARKS.len());
                Some(UCONFIG_REGISTER_MARKS.get(start..end).unwrap_or(&[]).iter().fold(0, |acc, m| acc | m))
            }
        }
        _ => None,
    };
    marks.unwrap_or(0)
}

/// True when writing `register` (absolute) does more than store the value:
/// evaluated at compile time for the registers handlers write by name.
pub(crate) const fn has_action(register: u32) -> bool {
    let action = match register {
        0x2C00..=0x2FFF => sh_table()[(register - space::SH) as usize],
        0xA000..=0xA3FF => context_table()[(register - space::CONTEXT) as usize],
        0xC000..=0xFFFF => uconfig_table()[(register - space::UCONFIG) as usize],
        _ => RegisterAction::None,
    };
    !matches!(action, RegisterAction::None)
}

/// The actions of `count` consecutive registers from `first` (absolute),
/// clamped to the space `first` is in; empty outside the three tables.
#[inline]
pub fn register_actions(first: u32, count: usize) -> &'static [RegisterAction] {
    let (table, base): (&'static [RegisterAction], u32) = match first {
        0x2C00..=0x2FFF => (&SH_REGISTER_ACTIONS, space::SH),
        0xA000..=0xA3FF => (&CONTEXT_REGISTER_ACTIONS, space::CONTEXT),
        0xC000..=0xFFFF => (&UCONFIG_REGISTER_ACTIONS, space::UCONFIG),
        _ => return &[],
    };
    let start = (first - base) as usize;
    let end = start.saturating_add(count).min(table.len());
    table.get(start..end).unwrap_or(&[])
}

/// The action of an absolute register index.
#[inline]
pub fn register_action(register: u32) -> RegisterAction {
    register_actions(register, 1).first().copied().unwrap_or(RegisterAction::None)
}
