//! The command processor of one queue and its ProcessPm4 loop.
//!
//! A [`Processor`] owns a queue's register file and its resumable
//! [`Pm4Execution`]s (the drawing engine's and the constant engine's).
//! [`Processor::process`] walks packets from the cursor and returns when
//! the submission ends, when a packet must wait
//! ([`ProcessStatus::Suspended`]) or when a slice's packet budget is spent;
//! calling it again resumes exactly there. It never blocks a thread.
//!
//! The modules, by concept:
//! - this one: the API and the engine driver (which engine runs when: the
//!   drawing engine, and the constant engine it launches or waits for);
//! - `stream`: one engine's stream: buffers off the IB stack, framing, the
//!   packets that are not type 3 or that predication skips;
//! - `view`: the view loop over the prefetch window (pads and register runs
//!   inline, one handler call for everything else) and `view::context`,
//!   what a handler sees (`Ctx`) and answers (`Step`);
//! - `opcodes`: the dispatch declaration, one line per opcode, and the
//!   table of each queue kind built from it;
//! - `register_store`: every register store and what a write marks;
//! - `handlers`: one module per packet family;
//! - [`execution`] (cursor, IB stack, predication), [`global`] (what the
//!   whole GPU shares), `window` (the prefetch window), [`error`].

pub mod error;
pub mod execution;
pub mod global;
pub(crate) mod handlers;
mod opcodes;
pub(crate) mod register_store;
mod stream;
pub(crate) mod view;
mod window;

pub use error::Pm4Error;
pub use execution::{Cursor, Pm4Execution, Predication, SuspendReason};
pub use global::{GdsError, GlobalState, DEFAULT_GDS_BYTES};
pub use handlers::nop::convention_name as nop_convention;
pub(crate) use opcodes::private_entry;
pub use opcodes::{is_emulated, is_graphics_only};

use crate::backend::{Backend, ProgramBinding, QueueId, UnknownPacket};
use crate::memory::GuestMemory;
use crate::packet::private::PrivatePackets;
use crate::packet::{Opcode, Packet, PacketLocation};
use crate::regs::{space, RegisterFile};
use crate::shader::ShaderRegistry;
use std::sync::Arc;
use stream::{run_stream, StreamStatus};
use window::PrefetchWindow;

/// What to do with a packet whose opcode the gfx10.3 map does not name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum UnknownPacketPolicy {
    /// Report it (with its hex dump) and skip it by its length.
    #[default]
    Skip,
    /// Report it and stop the submission with [`Pm4Error::UnknownPacket`].
    Stop,
}

/// What a host-command NOP asks for (see [`HOST_COMMAND_SIGNATURE`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostCommand {
    /// Present a frame: [`Backend::flip`].
    Flip,
    /// Push a debug marker; the payload after the code dword is its text.
    PushMarker,
    /// Pop a debug marker.
    PopMarker,
    /// Save the context registers (0xA000..0xA400) on the context stack.
    ContextPush,
    /// Restore the context registers saved by the last `ContextPush`.
    ContextPop,
    /// Handed to [`Backend::host_command`] with its payload.
    Custom,
}

/// The first body dword of a host-command NOP is `HOST_COMMAND_SIGNATURE |
/// code` (code = low 16 bits); the embedding emulator maps codes to
/// [`HostCommand`]s in [`ProcessorConfig::host_commands`]. A NOP with the
/// signature and an unregistered code is a plain NOP.
pub const HOST_COMMAND_SIGNATURE: u32 = 0x504D_0000;

/// Settings of a processor.
#[derive(Clone, Debug)]
pub struct ProcessorConfig {
    /// Most buffers on the IB stack at once (the submitted buffer counts).
    pub max_ib_depth: usize,
    /// Most packets one submission may run: stops IB cycles.
    pub work_budget: u64,
    /// Unknown packets: skip or stop.
    pub unknown_packet_policy: UnknownPacketPolicy,
    /// Render backends writing ZPASS counts (16 on gfx10.3 parts).
    pub render_backends: u32,
    /// Host-command codes the embedding emulator registered.
    pub host_commands: Vec<(u16, HostCommand)>,
    /// Most unknown-packet reports kept in [`ProcessorStats::unknown_packets`].
    pub max_unknown_reports: usize,
    /// Calls [`Backend::packet`] for every packet decoded (timelines,
    /// recorders); off by default: it costs a call per packet.
    pub report_packets: bool,
    /// An indirect buffer whose memory is not mapped (command-only captures)
    /// is reported ([`Backend::skipped_indirect_buffer`]) and skipped instead
    /// of stopping the submission with a memory error.
    pub skip_unmapped_ibs: bool,
    /// Size of the global data share in bytes (64 KiB on gfx10.3 parts).
    pub gds_bytes: u32,
    /// The GPU family whose register map and packet forms this processor uses (default gfx10.3).
    pub family: crate::regs::db::GpuFamily,
    /// The embedder's own packets (its private NOPs and opcodes): a packet
    /// the table matches reaches [`crate::backend::Backend::private_packet`]
    /// instead of running as a NOP or being reported as unknown. Shared,
    /// cheap to clone.
    pub private_packets: PrivatePackets,
}

impl Default for ProcessorConfig {
    fn default() -> Self {
        Self {
            max_ib_depth: 8,
            work_budget: 1 << 26,
            unknown_packet_policy: UnknownPacketPolicy::Skip,
            render_backends: 16,
            host_commands: Vec::new(),
            max_unknown_reports: 64,
            report_packets: false,
            skip_unmapped_ibs: false,
            gds_bytes: DEFAULT_GDS_BYTES,
            family: crate::regs::db::GpuFamily::Gfx103,
            private_packets: PrivatePackets::default(),
        }
    }
}

/// Where a processor's effects go: guest memory, the backend and the shader
/// registry, all borrowed for one call.
///
/// Memory and shader registry are shared (`&`): other threads (the emulated
/// CPU, other queues) may use them during the call. The backend is the
/// caller's for the call.
///
/// # Example
///
/// ```
/// use pm4core::backend::{QueueId, RecordingBackend};
/// use pm4core::memory::{GuestMemory, SparseMemory};
/// use pm4core::packet::{Header, Opcode};
/// use pm4core::processor::{Env, ProcessStatus, Processor};
/// use pm4core::shader::ShaderRegistry;
///
/// // WRITE_DATA of 0x1234 to 0x2000 (dst_sel = memory, WR_CONFIRM).
/// let words = [Header::type3(Opcode::WRITE_DATA, 4).0, 5 << 8 | 1 << 20, 0x2000, 0, 0x1234];
/// let memory = SparseMemory::new();
/// memory.map_dwords(0x1000, &words).unwrap();
/// memory.map_zeroed(0x2000, 0x1000).unwrap();
/// let (mut backend, shaders) = (RecordingBackend::new(), ShaderRegistry::new());
/// let mut processor = Processor::new(QueueId::GRAPHICS);
/// processor.submit(0x1000, words.len() as u32).unwrap();
/// let mut env = Env { memory: &memory, backend: &mut backend, shaders: &shaders };
/// assert_eq!(processor.process(&mut env).unwrap(), ProcessStatus::Completed);
/// assert_eq!(memory.read_u32(0x2000).unwrap(), 0x1234);
/// ```
pub struct Env<'a> {
    pub memory: &'a dyn GuestMemory,
    pub backend: &'a mut dyn Backend,
    pub shaders: &'a ShaderRegistry,
}

/// How a call to [`Processor::process`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessStatus {
    /// Nothing to run.
    Idle,
    /// The submission ran to its end.
    Completed,
    /// A packet must wait; call again when the reason may have changed.
    Suspended(SuspendReason),
    /// The slice's packet budget is spent; call again to go on.
    Yielded,
}

/// Counters of one processor, over its lifetime.
#[derive(Clone, Debug, Default)]
pub struct ProcessorStats {
    /// Every packet decoded (executed or skipped).
    pub packets: u64,
    /// Type-3 packets by opcode (executed or skipped): 256 entries once the
    /// processor has had a submission, empty before (idle queues cost nothing).
    pub by_opcode: Vec<u64>,
    /// Type-0 packets.
    pub type0: u64,
    /// Type-2 fillers.
    pub type2: u64,
    /// Draw packets executed (a multi-draw packet counts once).
    pub draws: u64,
    /// Dispatch packets executed.
    pub dispatches: u64,
    /// Packets skipped by predication, plus one per run of dwords skipped
    /// by COND_EXEC or PRED_EXEC (those dwords are not parsed as packets).
    pub skipped: u64,
    /// Releases that retired (RELEASE_MEM, EVENT_WRITE_EOP/EOS).
    pub fences: u64,
    /// Times a packet suspended the processor.
    pub waits: u64,
    /// Known packets that are decoded but not emulated, by opcode (256
    /// entries once the processor has had a submission).
    pub not_emulated: Vec<u64>,
    /// Unknown packets seen.
    pub unknown: u64,
    /// The first reports of unknown packets.
    pub unknown_packets: Vec<UnknownPacket>,
    /// Dwords consumed.
    pub dwords: u64,
}

impl ProcessorStats {
    /// Type-3 packets of `opcode` decoded.
    pub fn opcode_count(&self, opcode: Opcode) -> u64 {
        self.by_opcode.get(opcode.0 as usize).copied().unwrap_or(0)
    }

    /// Packets of `opcode` decoded but not emulated.
    pub fn not_emulated_count(&self, opcode: Opcode) -> u64 {
        self.not_emulated.get(opcode.0 as usize).copied().unwrap_or(0)
    }

    fn ensure_tables(&mut self) {
        if self.by_opcode.len() != 256 {
            self.by_opcode.resize(256, 0);
        }
        if self.not_emulated.len() != 256 {
            self.not_emulated.resize(256, 0);
        }
    }
}

/// Which engine a stream runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The drawing engine (PFP + ME), or the MEC on compute queues.
    De,
    /// The constant engine (graphics queue, INDIRECT_BUFFER_CONST).
    Ce,
}

/// Base addresses set by SET_BASE.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bases {
    /// Index 0: display-list patch table.
    pub patch_table: u64,
    /// Index 1 with SHADER_TYPE = 0: draw indirect arguments.
    pub draw_indirect: u64,
    /// Index 1 with SHADER_TYPE = 1: dispatch indirect arguments.
    pub dispatch_indirect: u64,
    /// Index 4: LOAD_*_REG_INDEX base.
    pub load_index: u64,
    /// Index 5: SET_SH_REG_OFFSET indirect data.
    pub sh_offset: u64,
    /// CE index 2: DUMP_CONST_RAM_OFFSET base.
    pub ce_dst: u64,
}

/// Size of the constant engine's RAM.
pub const CE_RAM_BYTES: usize = 48 * 1024;

/// State groups a register write can touch; a draw reports which changed
/// since the previous draw.
pub mod state_group {
    pub const VIEWPORT: u32 = 1 << 0;
    pub const SCISSOR: u32 = 1 << 1;
    pub const RENDER_TARGETS: u32 = 1 << 2;
    pub const DEPTH: u32 = 1 << 3;
    pub const PROGRAMS: u32 = 1 << 4;
    pub const USER_DATA: u32 = 1 << 5;
    pub const PRIMITIVE: u32 = 1 << 6;
    pub const INDEX: u32 = 1 << 7;
    pub const INSTANCES: u32 = 1 << 8;
    pub const COMPUTE_PROGRAM: u32 = 1 << 9;
    pub const STREAMOUT: u32 = 1 << 10;
}

/// Everything handlers may change besides the executions: the queue's
/// registers, counters, bases and the state its packets keep. The host
/// reads it through [`Processor::state`]; only packets change it.
pub struct ProcessorState {
    pub(crate) queue: QueueId,
    pub(crate) regs: RegisterFile,
    pub(crate) config: ProcessorConfig,
    pub(crate) stats: ProcessorStats,
    pub(crate) bases: Bases,
    /// INDEX_BASE.
    pub(crate) index_base: u64,
    /// INDEX_BUFFER_SIZE (indices).
    pub(crate) index_buffer_size: u32,
    /// State groups changed since the last draw.
    pub(crate) dirty: u32,
    /// Programs bound per graphics stage (resolved lazily at draws).
    pub(crate) programs: [ProgramBinding; 4],
    /// The compute program (resolved lazily at dispatches).
    pub(crate) compute_program: ProgramBinding,
    /// Registry generation the graphics bindings were resolved against.
    pub(crate) programs_generation: u64,
    /// Registry generation the compute binding was resolved against.
    pub(crate) compute_program_generation: u64,
    /// The constant engine's RAM, allocated by its first use.
    pub(crate) ce_ram: Vec<u8>,
    pub(crate) ce_counter: u32,
    pub(crate) de_counter: u32,
    /// CE buffers launched by INDIRECT_BUFFER_CONST and not started yet.
    pub(crate) ce_pending: Vec<(u64, u32)>,
    /// Context registers saved by CLEAR_STATE push / host ContextPush.
    pub(crate) context_stack: Vec<Box<[u32]>>,
    /// CONTEXT_CONTROL load/shadow enables.
    pub(crate) context_control: (u32, u32),
    /// Queue registers set by SET_QUEUE_REG (compute queues; 256 entries
    /// once written).
    pub(crate) queue_registers: Vec<u32>,
    /// Deterministic clock for timestamps when the backend has none.
    pub(crate) clock: u64,
    /// The task control buffer set by DISPATCH_TASK_STATE_INIT.
    pub(crate) task_control_buffer: u64,
    /// The GPU-wide UCONFIG registers and GDS (shared with every queue of
    /// the same GPU).
    pub(crate) global: Arc<GlobalState>,
    /// The host had `&mut` access to the register file: its UCONFIG values
    /// are published to [`GlobalState`] before the next packet runs.
    pub(crate) host_registers: bool,
}

/// What the host reads of a queue's state.
///
/// ```
/// use pm4core::backend::{NullBackend, QueueId};
/// use pm4core::memory::{GuestMemory, SparseMemory};
/// use pm4core::packet::{Header, Opcode};
/// use pm4core::processor::{Env, Processor};
/// use pm4core::shader::ShaderRegistry;
///
/// // INDEX_BASE 0x12_3400, then CONTEXT_CONTROL with both enables updated.
/// let words = [
///     Header::type3(Opcode::INDEX_BASE, 2).0, 0x12_3400, 0,
///     Header::type3(Opcode::CONTEXT_CONTROL, 2).0, 0x8000_0001, 0x8000_0000,
/// ];
/// let memory = SparseMemory::new();
/// memory.map_dwords(0x1000, &words).unwrap();
/// let mut processor = Processor::new(QueueId::GRAPHICS);
/// processor.submit(0x1000, words.len() as u32).unwrap();
/// let shaders = ShaderRegistry::new();
/// processor.process(&mut Env { memory: &memory, backend: &mut NullBackend, shaders: &shaders }).unwrap();
/// let state = processor.state();
/// assert_eq!(state.index_base(), 0x12_3400);
/// assert_eq!(state.context_control(), (0x8000_0001, 0x8000_0000));
/// ```
impl ProcessorState {
    /// The queue.
    pub fn queue(&self) -> QueueId {
        self.queue
    }

    /// Base addresses set by SET_BASE.
    pub fn bases(&self) -> &Bases {
        &self.bases
    }

    /// INDEX_BASE's address.
    pub fn index_base(&self) -> u64 {
        self.index_base
    }

    /// INDEX_BUFFER_SIZE (indices).
    pub fn index_buffer_size(&self) -> u32 {
        self.index_buffer_size
    }

    /// The [`state_group`]s changed since the last draw.
    pub fn changed_groups(&self) -> u32 {
        self.dirty
    }

    /// The programs bound per graphics stage at the last draw.
    pub fn programs(&self) -> &[ProgramBinding; 4] {
        &self.programs
    }

    /// The compute program bound at the last dispatch.
    pub fn compute_program(&self) -> &ProgramBinding {
        &self.compute_program
    }

    /// The constant engine's RAM (empty until its first use).
    pub fn ce_ram(&self) -> &[u8] {
        &self.ce_ram
    }

    /// The constant engine's counter.
    pub fn ce_counter(&self) -> u32 {
        self.ce_counter
    }

    /// The drawing engine's counter.
    pub fn de_counter(&self) -> u32 {
        self.de_counter
    }

    /// CONTEXT_CONTROL's load and shadow enables.
    pub fn context_control(&self) -> (u32, u32) {
        self.context_control
    }

    /// The queue registers SET_QUEUE_REG wrote (256 once written).
    pub fn queue_registers(&self) -> &[u32] {
        &self.queue_registers
    }

    /// The task control buffer set by DISPATCH_TASK_STATE_INIT.
    pub fn task_control_buffer(&self) -> u64 {
        self.task_control_buffer
    }
}

impl ProcessorState {
    fn new(queue: QueueId, config: ProcessorConfig, global: Arc<GlobalState>) -> Self {
        Self {
            queue,
            regs: RegisterFile::new(),
            config,
            stats: ProcessorStats::default(),
            bases: Bases::default(),
            index_base: 0,
            index_buffer_size: 0,
            dirty: u32::MAX,
            programs: Default::default(),
            compute_program: ProgramBinding::default(),
            programs_generation: u64::MAX,
            compute_program_generation: u64::MAX,
            ce_ram: Vec::new(),
            ce_counter: 0,
            de_counter: 0,
            ce_pending: Vec::new(),
            context_stack: Vec::new(),
            context_control: (0, 0),
            queue_registers: Vec::new(),
            clock: 0,
            task_control_buffer: 0,
            global,
            host_registers: false,
        }
    }

    /// Copies the GPU-wide UCONFIG values into this register file, where
    /// they differ (so the host sees and edits current values).
    fn pull_uconfig(&mut self) {
        for register in space::UCONFIG..space::END {
            let value = self.global.uconfig(register);
            if self.regs.get(register) != value {
                self.regs.set(register, value);
            }
        }
    }

    /// Publishes the UCONFIG values the host changed in this register file.
    fn push_uconfig(&mut self) {
        self.host_registers = false;
        for register in space::UCONFIG..space::END {
            let value = self.regs.get(register);
            if self.global.uconfig(register) != value {
                self.global.set_uconfig(register, value);
            }
        }
    }
}

/// The command processor of one queue.
///
/// An emulator that schedules queues itself keeps one `Processor` per
/// queue, submits the guest's command buffers to it and calls
/// [`Processor::process`] (or [`Processor::process_slice`]) from whichever
/// thread runs that queue. A wait suspends the processor without blocking
/// the thread: call `process` again once the memory it watches may have
/// changed, and it resumes at the waiting packet.
///
/// # Example
///
/// ```
/// use pm4core::backend::{QueueId, RecordingBackend};
/// use pm4core::memory::{FlatMemory, GuestMemory};
/// use pm4core::packet::body::CompareFunction;
/// use pm4core::packet::builder::CommandBuffer;
/// use pm4core::processor::{Env, ProcessStatus, Processor, SuspendReason};
/// use pm4core::shader::ShaderRegistry;
///
/// // The emulator's RAM; a command buffer at 0x1000 that waits until the
/// // label at 0x2000 equals 1, then writes 7 to 0x2004.
/// let ram = FlatMemory::new(0, 0x10000).unwrap();
/// let mut commands = CommandBuffer::new();
/// commands.wait_mem(0x2000, CompareFunction::Equal, 1, 0xFFFF_FFFF).unwrap().write_mem(0x2004, &[7]).unwrap();
/// for (i, dword) in commands.dwords().iter().enumerate() {
///     ram.write_u32(0x1000 + 4 * i as u64, *dword).unwrap();
/// }
///
/// let (mut renderer, shaders) = (RecordingBackend::new(), ShaderRegistry::new());
/// let mut processor = Processor::new(QueueId::GRAPHICS);
/// processor.submit(0x1000, commands.len_dw()).unwrap();
/// let mut env = Env { memory: &ram, backend: &mut renderer, shaders: &shaders };
/// // The label is still 0: the queue suspends on its wait, no thread blocks.
/// assert!(matches!(processor.process(&mut env).unwrap(), ProcessStatus::Suspended(_)));
/// // The emulated CPU writes the label; the queue resumes where it stopped.
/// ram.write_u32(0x2000, 1).unwrap();
/// assert_eq!(processor.process(&mut env).unwrap(), ProcessStatus::Completed);
/// assert_eq!(ram.read_u32(0x2004).unwrap(), 7);
/// ```
pub struct Processor {
    de: Pm4Execution,
    ce: Pm4Execution,
    window: PrefetchWindow,
    state: ProcessorState,
}

impl std::fmt::Debug for Processor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Processor")
            .field("queue", &self.state.queue)
            .field("de", &self.de)
            .field("ce", &self.ce)
            .finish_non_exhaustive()
    }
}

impl Processor {
    /// A processor for `queue` with the default configuration.
    pub fn new(queue: QueueId) -> Self {
        Self::with_config(queue, ProcessorConfig::default())
    }

    /// A processor for `queue` with its own [`GlobalState`] (UCONFIG
    /// registers and a GDS of `config.gds_bytes`), as when it is the only
    /// queue an embedder drives.
    pub fn with_config(queue: QueueId, config: ProcessorConfig) -> Self {
        let global = Arc::new(GlobalState::new(config.gds_bytes));
        Self::with_global(queue, config, global)
    }

    /// A processor for `queue` that shares the UCONFIG registers and the
    /// GDS of `global` with every other processor given the same one.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pm4core::backend::QueueId;
    /// use pm4core::processor::{GlobalState, Processor, ProcessorConfig};
    ///
    /// let global = Arc::new(GlobalState::default());
    /// let gfx = Processor::with_global(QueueId::GRAPHICS, ProcessorConfig::default(), Arc::clone(&global));
    /// let queue = QueueId::compute(0, 0).unwrap();
    /// let comp = Processor::with_global(queue, ProcessorConfig::default(), Arc::clone(&global));
    /// assert!(Arc::ptr_eq(gfx.global(), comp.global()));
    /// ```
    pub fn with_global(queue: QueueId, config: ProcessorConfig, global: Arc<GlobalState>) -> Self {
        let depth = config.max_ib_depth;
        Self {
            de: Pm4Execution::new(depth),
            ce: Pm4Execution::new(depth),
            window: PrefetchWindow::new(),
            state: ProcessorState::new(queue, config, global),
        }
    }

    /// The GPU-wide state this processor shares: UCONFIG registers, GDS.
    pub fn global(&self) -> &Arc<GlobalState> {
        &self.state.global
    }

    /// The queue this processor serves.
    pub fn queue(&self) -> QueueId {
        self.state.queue
    }

    /// The register file: context and SH registers of this queue; UCONFIG
    /// registers as this queue last wrote or read them (the GPU-wide values
    /// are [`Processor::register`] or [`Processor::global`]).
    pub fn registers(&self) -> &RegisterFile {
        &self.state.regs
    }

    /// Register `index` as a packet of this queue reads it: UCONFIG from
    /// the GPU-wide file, everything else from this queue's.
    pub fn register(&self, index: u32) -> u32 {
        if GlobalState::is_uconfig(index) {
            self.state.global.uconfig(index)
        } else {
            self.state.regs.get(index)
        }
    }

    /// The register file, for host-side set-up. UCONFIG registers are
    /// GPU-wide: the file shows their current values, and those the host
    /// changes are published to [`GlobalState`] before the next packet runs
    /// (or at once with [`Processor::publish_host_registers`]).
    pub fn registers_mut(&mut self) -> &mut RegisterFile {
        if !self.state.host_registers {
            self.state.pull_uconfig();
            self.state.host_registers = true;
        }
        &mut self.state.regs
    }

    /// Publishes the UCONFIG values changed through
    /// [`Processor::registers_mut`] to the GPU-wide registers now.
    pub fn publish_host_registers(&mut self) {
        if self.state.host_registers {
            self.state.push_uconfig();
        }
    }

    /// Counters.
    pub fn stats(&self) -> &ProcessorStats {
        &self.state.stats
    }

    /// All handler-visible state.
    pub fn state(&self) -> &ProcessorState {
        &self.state
    }

    /// The configuration.
    pub fn config(&self) -> &ProcessorConfig {
        &self.state.config
    }

    /// The drawing engine's execution (cursor, IB stack, predication).
    pub fn execution(&self) -> &Pm4Execution {
        &self.de
    }

    /// The constant engine's execution.
    pub fn constant_engine(&self) -> &Pm4Execution {
        &self.ce
    }

    /// True when no submission is running.
    pub fn is_idle(&self) -> bool {
        self.de.is_idle() && self.ce.is_idle() && self.state.ce_pending.is_empty()
    }

    /// Why the processor is suspended, if it is.
    pub fn suspended(&self) -> Option<SuspendReason> {
        self.de.suspended.or(self.ce.suspended)
    }

    /// Starts a submission of `size_dw` dwords at `address`.
    pub fn submit(&mut self, address: u64, size_dw: u32) -> Result<(), Pm4Error> {
        if !self.is_idle() {
            return Err(Pm4Error::Busy);
        }
        self.state.stats.ensure_tables();
        self.de.start(address & crate::memory::ADDRESS_MASK, size_dw);
        Ok(())
    }

    /// Drops the running submission.
    pub fn abort(&mut self) {
        self.de.reset();
        self.ce.reset();
        self.state.ce_pending.clear();
    }

    /// Runs until the submission ends or must wait.
    pub fn process(&mut self, env: &mut Env<'_>) -> Result<ProcessStatus, Pm4Error> {
        self.process_slice(env, u64::MAX)
    }

    /// Runs at most `max_packets` packets.
    pub fn process_slice(&mut self, env: &mut Env<'_>, max_packets: u64) -> Result<ProcessStatus, Pm4Error> {
        if self.is_idle() {
            return Ok(ProcessStatus::Idle);
        }
        // The host may have written memory since the last call.
        self.window.invalidate();
        self.publish_host_registers();
        let mut budget = max_packets;
        let result = self.drive(env, &mut budget);
        if result.is_err() {
            self.abort();
        }
        result
    }

    fn run(&mut self, engine: Engine, env: &mut Env<'_>, budget: &mut u64) -> Result<StreamStatus, Pm4Error> {
        let exec = match engine {
            Engine::De => &mut self.de,
            Engine::Ce => {
                if self.ce.is_idle() && !self.state.ce_pending.is_empty() {
                    let (address, size) = self.state.ce_pending.remove(0);
                    self.ce.start(address, size);
                }
                &mut self.ce
            }
        };
        run_stream(engine, exec, &mut self.window, &mut self.state, env, budget)
    }

    fn ce_has_work(&self) -> bool {
        !self.ce.is_idle() || !self.state.ce_pending.is_empty()
    }

    fn drive(&mut self, env: &mut Env<'_>, budget: &mut u64) -> Result<ProcessStatus, Pm4Error> {
        loop {
            if self.de.is_idle() {
                // The drawing engine is done; let the constant engine finish.
                if !self.ce_has_work() {
                    return Ok(ProcessStatus::Completed);
                }
                match self.run(Engine::Ce, env, budget)? {
                    StreamStatus::Completed | StreamStatus::RunConstantEngine => continue,
                    StreamStatus::Suspended(r) => return Ok(ProcessStatus::Suspended(r)),
                    StreamStatus::Yielded => return Ok(ProcessStatus::Yielded),
                }
            }
            match self.run(Engine::De, env, budget)? {
                StreamStatus::Completed => continue,
                StreamStatus::Yielded => return Ok(ProcessStatus::Yielded),
                StreamStatus::RunConstantEngine => {
                    if self.ce_has_work() {
                        if let StreamStatus::Yielded = self.run(Engine::Ce, env, budget)? {
                            return Ok(ProcessStatus::Yielded);
                        }
                    }
                }
                StreamStatus::Suspended(reason) => {
                    if let SuspendReason::WaitOnCeCounter { .. } = reason {
                        if self.ce_has_work() {
                            let before = self.ce.packets;
                            let status = self.run(Engine::Ce, env, budget)?;
                            if let StreamStatus::Yielded = status {
                                return Ok(ProcessStatus::Yielded);
                            }
                            if self.ce.packets != before || self.ce.is_idle() {
                                continue;
                            }
                        }
                    }
                    return Ok(ProcessStatus::Suspended(reason));
                }
            }
        }
    }
}

/// A report of an unknown packet: its surroundings as a hex dump.
pub(crate) fn unknown_packet_report(queue: QueueId, memory: &dyn GuestMemory, packet: &Packet<'_>) -> UnknownPacket {
    let loc: PacketLocation = packet.location;
    let first = loc.offset_dw.saturating_sub(16);
    let last = loc.offset_dw.saturating_add(17).min(loc.buffer_size_dw);
    let mut dump = String::new();
    for offset in first..last {
        let address = loc.buffer.wrapping_add(u64::from(offset) * 4);
        let marker = if offset == loc.offset_dw { '>' } else { ' ' };
        let word = match memory.read_u32(address) {
            Ok(w) => hex::encode(w.to_be_bytes()),
            Err(_) => "????????".to_string(),
        };
        dump.push_str(&format!("{marker}{address:#014x}: {word}\n"));
    }
    UnknownPacket {
        queue: queue.0,
        address: loc.address(),
        header: packet.header.0,
        opcode: packet.header.opcode().0,
        length_dw: packet.header.length_dw().unwrap_or(1),
        dump,
    }
}
