//! The command processor of one queue and its ProcessPm4 loop.
//!
//! A [`Processor`] owns a queue's register file and its resumable
//! [`Pm4Execution`]s (the drawing engine's and the constant engine's).
//! [`Processor::process`] walks packets from the cursor: read the header,
//! check the length against the buffer, find the handler in the
//! compile-time [`tables`], run it, advance. It returns when the submission
//! ends, when a packet must wait ([`ProcessStatus::Suspended`]) or when a
//! slice's packet budget is spent; calling it again resumes exactly there.
//! It never blocks a thread.

mod context;
pub mod error;
pub mod execution;
pub mod global;
pub(crate) mod handlers;
pub mod tables;
mod window;

pub use error::Pm4Error;
pub use execution::{Cursor, Pm4Execution, Predication, SuspendReason};
pub use global::{GdsError, GlobalState, DEFAULT_GDS_BYTES};
pub use handlers::nop::convention_name as nop_convention;
use handlers::Fast;

use crate::backend::{Backend, ProgramBinding, QueueId, UnknownPacket};
use crate::memory::GuestMemory;
use crate::packet::reader::{self, FrameError, FrameErrorKind};
use crate::packet::{Header, Opcode, Packet, PacketLocation, PacketType};
use crate::regs::gfx103 as r;
use crate::regs::{space, RegisterFile};
use crate::shader::ShaderRegistry;
use context::{Ctx, Flow, WatchedMemory};
use std::sync::Arc;
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

/// Everything handlers may change besides the executions.
pub struct ProcessorState {
    pub queue: QueueId,
    pub regs: RegisterFile,
    pub config: ProcessorConfig,
    pub stats: ProcessorStats,
    pub bases: Bases,
    /// INDEX_BASE.
    pub index_base: u64,
    /// INDEX_BUFFER_SIZE (indices).
    pub index_buffer_size: u32,
    /// State groups changed since the last draw.
    pub dirty: u32,
    /// Programs bound per graphics stage (resolved lazily at draws).
    pub programs: [ProgramBinding; 4],
    /// The compute program (resolved lazily at dispatches).
    pub compute_program: ProgramBinding,
    /// Registry generation the graphics bindings were resolved against.
    pub(crate) programs_generation: u64,
    /// Registry generation the compute binding was resolved against.
    pub(crate) compute_program_generation: u64,
    /// The constant engine's RAM, allocated by its first use.
    pub ce_ram: Vec<u8>,
    pub ce_counter: u32,
    pub de_counter: u32,
    /// CE buffers launched by INDIRECT_BUFFER_CONST and not started yet.
    pub(crate) ce_pending: Vec<(u64, u32)>,
    /// Context registers saved by CLEAR_STATE push / host ContextPush.
    pub(crate) context_stack: Vec<Box<[u32]>>,
    /// CONTEXT_CONTROL load/shadow enables.
    pub context_control: (u32, u32),
    /// Queue registers set by SET_QUEUE_REG (compute queues; 256 entries
    /// once written).
    pub queue_registers: Vec<u32>,
    /// Deterministic clock for timestamps when the backend has none.
    pub clock: u64,
    /// The task control buffer set by DISPATCH_TASK_STATE_INIT.
    pub task_control_buffer: u64,
    /// The GPU-wide UCONFIG registers and GDS (shared with every queue of
    /// the same GPU).
    pub global: Arc<GlobalState>,
    /// The host had `&mut` access to the register file: its UCONFIG values
    /// are published to [`GlobalState`] before the next packet runs.
    pub(crate) host_registers: bool,
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

/// How one stream's run ended.
enum StreamStatus {
    Completed,
    Suspended(SuspendReason),
    Yielded,
    /// The drawing engine launched or unblocked the constant engine.
    RunConstantEngine,
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

/// What the loop counts per packet, kept in locals while packets run and
/// added to [`ProcessorStats`] when the stream stops (handlers never read
/// these counters).
struct Tally<'a> {
    packets: u64,
    dwords: u64,
    type0: u64,
    type2: u64,
    /// `ProcessorStats::by_opcode`, taken out of the stats for the run.
    by_opcode: &'a mut [u64; 256],
    /// Whether the backend gets a call per packet.
    report: bool,
}

impl Tally<'_> {
    /// Counts a type-3 packet of `length` dwords.
    #[inline(always)]
    fn type3(&mut self, header: Header, length: u32) {
        self.packets += 1;
        self.dwords += u64::from(length);
        self.by_opcode[usize::from(header.opcode().0)] += 1;
    }

    /// Counts a packet of any type.
    #[inline]
    fn any(&mut self, header: Header, length: u32) {
        match header.packet_type() {
            PacketType::Type3 => self.type3(header, length),
            PacketType::Type2 => {
                self.packets += 1;
                self.dwords += u64::from(length);
                self.type2 += 1;
            }
            PacketType::Type0 | PacketType::Type1 => {
                self.packets += 1;
                self.dwords += u64::from(length);
                self.type0 += 1;
            }
        }
    }
}

/// The ProcessPm4 loop over one stream, with the packet counters kept in
/// locals for the run (see [`Tally`]).
fn run_stream(
    engine: Engine,
    exec: &mut Pm4Execution,
    window: &mut PrefetchWindow,
    state: &mut ProcessorState,
    env: &mut Env<'_>,
    budget: &mut u64,
) -> Result<StreamStatus, Pm4Error> {
    let mut by_opcode = std::mem::take(&mut state.stats.by_opcode);
    by_opcode.resize(256, 0);
    let result = match <&mut [u64; 256]>::try_from(by_opcode.as_mut_slice()) {
        Ok(counts) => {
            let report = state.config.report_packets;
            let mut tally = Tally { packets: 0, dwords: 0, type0: 0, type2: 0, by_opcode: counts, report };
            let result = run_packets(engine, exec, window, state, env, budget, &mut tally);
            let stats = &mut state.stats;
            stats.packets += tally.packets;
            stats.dwords += tally.dwords;
            stats.type0 += tally.type0;
            stats.type2 += tally.type2;
            result
        }
        Err(_) => Ok(StreamStatus::Completed),
    };
    state.stats.by_opcode = by_opcode;
    result
}

/// The packets of one stream.
///
/// The outer loop picks the current buffer off the IB stack. The middle
/// loop takes a view of that buffer in the prefetch window: it frames the
/// packet at the cursor the general way (frame errors, type-0/2 packets
/// and predicated skips are handled there, one at a time) and makes sure
/// the window holds it whole. The inner loop then walks type-3 packets
/// straight from the view while it holds them whole: register writers and
/// one-dword pads are stored inline, everything else calls its handler.
/// The cursor offset is kept in a local and written back before a handler
/// runs (handlers see an up-to-date IB stack); the inner loop ([`run_view`])
/// leaves for the middle one whenever a handler moved the cursor, changed
/// the stack or wrote the dwords the window holds.
fn run_packets(
    engine: Engine,
    exec: &mut Pm4Execution,
    window: &mut PrefetchWindow,
    state: &mut ProcessorState,
    env: &mut Env<'_>,
    budget: &mut u64,
    tally: &mut Tally<'_>,
) -> Result<StreamStatus, Pm4Error> {
    exec.suspended = None;
    let work_budget = state.config.work_budget;
    // Compute queues have their own tables: graphics-only packets marked,
    // and no inline register runs for graphics-only register writers.
    let graphics = state.queue.is_graphics();
    let handlers = if graphics { &tables::HANDLERS } else { &tables::COMPUTE_HANDLERS };
    let register_runs = if graphics { &tables::REGISTER_RUNS } else { &tables::COMPUTE_REGISTER_RUNS };
    let fast_classes = if graphics { &tables::FAST_CLASSES } else { &tables::COMPUTE_FAST_CLASSES };
    'buffers: loop {
        if !exec.pop_finished() {
            exec.reset();
            return Ok(StreamStatus::Completed);
        }
        let depth = exec.depth() - 1;
        let (buffer, size, mut offset) = match exec.top() {
            Some(c) => (c.buffer, c.size_dw, c.offset_dw),
            None => return Ok(StreamStatus::Completed),
        };

        while offset < size {
            if *budget == 0 {
                set_offset(exec, depth, offset);
                return Ok(StreamStatus::Yielded);
            }
            let location = PacketLocation { buffer, buffer_size_dw: size, offset_dw: offset };
            let remaining = size - offset;
            let address = buffer.wrapping_add(u64::from(offset) * 4);

            // Framing: the header from the prefetch window, then the
            // reader's rule (type 1 and overruns are frame errors).
            let start = match window.ensure(env.memory, address, 1, remaining) {
                Ok(start) => start,
                Err(source) => {
                    return Err(Pm4Error::from_frame(FrameError { location, kind: FrameErrorKind::Unreadable(source) }))
                }
            };
            let header = Header(window.word(start));
            let length = match reader::frame_length(header, remaining) {
                Ok(length) => length,
                Err(kind) => return Err(Pm4Error::from_frame(FrameError { location, kind })),
            };

            // Anything but an unpredicated (or not skipped) type-3 packet:
            // the rare cases, out of line. (COND_EXEC and PRED_EXEC skips
            // move the cursor in their handler: skipped dwords never get here.)
            if header.0 < 0xC000_0000 || (header.predicate() && exec.predication.skip) {
                exec.packets += 1;
                if exec.packets > work_budget {
                    return Err(Pm4Error::WorkBudgetExhausted { location, budget: work_budget });
                }
                *budget -= 1;
                offset += skip_or_type0(window, state, env, header, length, location, tally)?;
                continue;
            }
            if exec.packets >= work_budget {
                return Err(Pm4Error::WorkBudgetExhausted { location, budget: work_budget });
            }
            let start = if window.holds(start, length) {
                start
            } else {
                window.ensure(env.memory, address, length, remaining).map_err(|source| Pm4Error::Memory {
                    location,
                    opcode: header.opcode(),
                    source,
                })?
            };

            // The view: this packet (held whole) and whatever follows it
            // in the window, up to the end of the buffer.
            let window_range = window.range();
            let words = window.held(start, remaining);
            // Packets this view may run before the slice's budget or the
            // work budget runs out (the view's first packet passed both
            // checks above).
            let left = (*budget).min(work_budget.saturating_sub(exec.packets));
            let skip = exec.predication.skip;
            let mut view = View {
                // What handlers see: built once per view; each packet sets
                // its location and opcode.
                ctx: Ctx {
                    engine,
                    exec: &mut *exec,
                    state: &mut *state,
                    memory: WatchedMemory::new(env.memory, window_range),
                    backend: &mut *env.backend,
                    shaders: env.shaders,
                    // The view's buffer, for every packet of the view:
                    // each packet sets only its offset (the view ends
                    // when a handler moves to another buffer).
                    location: location_at(buffer, size, offset, 0),
                    opcode: header.opcode(),
                },
                packets: &mut tally.packets,
                by_opcode: &mut *tally.by_opcode,
                report: tally.report,
                budget: &mut *budget,
                work_budget,
                handlers,
                runs: register_runs,
                buffer,
                size,
                offset,
                depth,
                settled: left,
                left,
                skip,
                classes: fast_classes,
            };
            let (at, stop) = run_view(words, &mut view);
            tally.dwords += at as u64;
            match stop {
                ViewStop::Next => offset += at as u32,
                ViewStop::MissingBody => {
                    // Charged like any packet, but not counted as run.
                    tally.packets -= 1;
                    let location = location_at(buffer, size, offset, at);
                    let opcode = Header(words.get(at).copied().unwrap_or(0)).opcode();
                    return Err(Pm4Error::MalformedPacket {
                        location,
                        source: crate::packet::body::BodyError::Missing { opcode, index: 0, body_len: 0 },
                    });
                }
                ViewStop::Failed(e) => return Err(*e),
                ViewStop::Return { stale, status } => {
                    if stale {
                        window.invalidate();
                    }
                    return Ok(status);
                }
                ViewStop::Moved { stale } => {
                    if stale {
                        window.invalidate();
                    }
                    // A handler that called, chained or returned changed the
                    // stack; one that skipped moved the cursor in this buffer.
                    if exec.depth() != depth + 1 {
                        continue 'buffers;
                    }
                    match exec.top() {
                        Some(c) if c.buffer == buffer && c.size_dw == size => offset = c.offset_dw,
                        _ => continue 'buffers,
                    }
                }
            }
        }
        if exec.depth() == depth + 1 && exec.top().is_some_and(|c| c.buffer == buffer && c.size_dw == size) {
            set_offset(exec, depth, offset);
        }
    }
}

/// One view of the prefetch window while [`run_view`] walks it: the
/// context handlers see, the counters, and what the view is.
struct View<'v, 'c> {
    ctx: Ctx<'c>,
    /// The tally's packet count and counts by opcode (see [`Tally`]).
    packets: &'v mut u64,
    by_opcode: &'v mut [u64; 256],
    /// Whether the backend gets a call per packet.
    report: bool,
    /// The slice's budget (packets), charged when the view settles.
    budget: &'v mut u64,
    work_budget: u64,
    handlers: &'static [tables::OpcodeHandler; 256],
    runs: &'static [tables::RegisterRun; 256],
    /// The buffer the view is in, and the view's first dword in it.
    buffer: u64,
    size: u32,
    offset: u32,
    /// The buffer's entry on the IB stack.
    depth: usize,
    /// Packets the view could still run when it last settled (see
    /// [`View::settle`]): the packets run since are this minus the loop's
    /// count of packets left.
    settled: u64,
    /// The loop's count of packets left, while [`run_one`] runs.
    left: u64,
    /// Whether predication skips (predicated packets go to the caller).
    skip: bool,
    /// What the fast path does by opcode (`tables::fast_class`).
    classes: &'static [u8; 256],
}

impl View<'_, '_> {
    /// Charges the packets run since the last settle (`settled - left`)
    /// to the work budget, the slice's budget and the count.
    #[inline(always)]
    fn settle(&mut self, left: u64) {
        let ran = self.settled - left;
        self.ctx.exec.packets += ran;
        *self.budget -= ran;
        *self.packets += ran;
        self.settled = left;
    }
}

/// The inner loop of [`run_packets`]: walks type-3 packets straight from
/// `words` (a view of the window, its first packet held whole and within
/// both budgets) while it holds them whole. Its fast path, picked by
/// opcode from `tables::FAST_CLASSES`: one-dword NOP pads, plain register
/// writers of 1 to 8 values that only store and mark state groups (see
/// [`store_register_run`]), NUM_INSTANCES and packets with no effect
/// (`tables::NO_EFFECT_PACKETS`) are run right here, a direct draw goes
/// to the draw handler's fast entry (`handlers::draw::direct_draw`) and an
/// EVENT_WRITE to the events handler's
/// (`handlers::events::plain_event_write`), and a packet with no register run goes
/// straight to its handler
/// ([`run_handler_packet`]); everything else (a writer the fast path
/// leaves, a packet the view does not hold whole) goes through
/// [`run_one`]. The fast path's stores call nothing, so the loop's few
/// variables stay in registers. No fast path while predication skips (a
/// predicated packet must then be skipped, by the caller) or for a
/// backend that sees every packet. Returns the dwords walked and why it
/// stopped, with the packets run settled.
#[inline(never)]
fn run_view(words: &[u32], view: &mut View<'_, '_>) -> (usize, ViewStop) {
    let runs = view.runs;
    let classes = view.classes;
    let mut at = 0usize;
    let mut left = view.settled;
    let stop = 'view: loop {
        // The fast path's own loop, which only a packet it leaves (to the
        // general step below) or a handler's call (back to the top) ends.
        let h = if !view.report && !view.skip {
            loop {
                let Some(&h) = words.get(at) else { break 'view ViewStop::Next };
                // The view from the packet at the cursor on (never empty:
                // `at` is in it).
                let packet = words.get(at..).unwrap_or_default();
                if h < 0xC000_0000 || left == 0 {
                    break 'view ViewStop::Next;
                }
                // One-dword NOP pads (count 0x3FFF), the most common packet of
                // some streams: one compare each, and a run of them (a buffer's
                // padding) counted in one go, within the packets left.
                if h >> 8 == PAD_HEADER >> 8 {
                    let limit = usize::try_from(left).unwrap_or(usize::MAX).min(packet.len());
                    let run = 1 + pad_run(packet.get(1..limit).unwrap_or_default());
                    view.by_opcode[usize::from(Opcode::NOP.0)] += run as u64;
                    at += run;
                    left -= run as u64;
                    continue;
                }
                let count = ((h >> 16) & 0x3FFF) as usize;
                let opcode = ((h >> 8) & 0xFF) as usize;
                // One bit per case, tested in turn (see `tables::fast_class`).
                let class = classes[opcode];
                let stored = if class & tables::fast_class::SH != 0 {
                    // The two writers of most packets, with their space's base
                    // and table as constants.
                    store_register_run(packet, count, space::SH, &tables::SH_RUN_SPANS, view.ctx.state)
                } else if class & tables::fast_class::DIRECT_DRAW != 0 {
                    // A direct draw: the draw handler's fast entry, with the
                    // packet's place and opcode in the context (the view set
                    // its buffer), none of a handler call's bookkeeping.
                    let length = Header(h).type3_length_dw() as usize;
                    match packet.get(1..length) {
                        Some(body) => {
                            view.ctx.location.offset_dw = view.offset + at as u32;
                            view.ctx.opcode = Opcode(opcode as u8);
                            handlers::draw::direct_draw(&mut view.ctx, opcode as u8, body).then_some(length)
                        }
                        None => None,
                    }
                } else if class & tables::fast_class::CONTEXT != 0 {
                    store_register_run(packet, count, space::CONTEXT, &tables::CONTEXT_RUN_SPANS, view.ctx.state)
                } else if class & tables::fast_class::UCONFIG != 0 {
                    store_uconfig(packet, count, view.ctx.state)
                } else if class & tables::fast_class::NUM_INSTANCES != 0 {
                    // NUM_INSTANCES with its one body dword, as its handler
                    // (`handlers::draw::num_instances`) writes it.
                    match packet.get(1) {
                        Some(&instances) if count == 0 => {
                            const OFFSET: u32 = r::VGT_NUM_INSTANCES - space::UCONFIG;
                            store_uconfig_value(view.ctx.state, OFFSET, instances).then_some(2)
                        }
                        _ => None,
                    }
                } else if class & tables::fast_class::OTHER_RUN != 0 {
                    let run = &runs[opcode];
                    store_register_run(packet, count, run.base, run.spans, view.ctx.state)
                } else if class & tables::fast_class::EVENT_WRITE != 0 {
                    let length = Header(h).type3_length_dw() as usize;
                    if class == tables::fast_class::NO_EFFECT {
                        // A packet with no effect: passed by its length,
                        // when the view holds it whole.
                        (length <= packet.len()).then_some(length)
                    } else {
                        // An event: the events handler's fast entry, like
                        // a direct draw's.
                        match packet.get(1..length) {
                            Some(body) => {
                                view.ctx.location.offset_dw = view.offset + at as u32;
                                view.ctx.opcode = Opcode::EVENT_WRITE;
                                handlers::events::plain_event_write(&mut view.ctx, body).then_some(length)
                            }
                            None => None,
                        }
                    }
                } else {
                    // No register run: a plain handler's fast entry when it
                    // has one (`tables::FAST_ENTRIES`: like a direct draw's),
                    // else, or when the entry does not take the packet, its
                    // handler.
                    let length = Header(h).type3_length_dw() as usize;
                    let fast = match (class, tables::FAST_ENTRIES.get(opcode), packet.get(1..length)) {
                        (tables::fast_class::PLAIN_HANDLER, Some(Some(entry)), Some(body)) => {
                            view.ctx.location.offset_dw = view.offset + at as u32;
                            view.ctx.opcode = Opcode(opcode as u8);
                            entry(&mut view.ctx, body)
                        }
                        _ => Fast::General,
                    };
                    match fast {
                        Fast::Done => Some(length),
                        stop @ (Fast::Failed(_) | Fast::Suspended) => {
                            // As a plain handler's failure (the submission
                            // then ends: `process_slice` aborts it) or
                            // suspension: charged, not counted as run.
                            left -= 1;
                            view.settle(left);
                            *view.packets -= 1;
                            break 'view match stop {
                                Fast::Failed(e) => ViewStop::Failed(e),
                                _ => suspended(view, view.offset + at as u32, false),
                            };
                        }
                        Fast::General => {
                            view.left = left;
                            let step = if class == tables::fast_class::NONE {
                                run_handler_packet::<false>(words, at, h, view)
                            } else {
                                run_handler_packet::<true>(words, at, h, view)
                            };
                            left = view.left;
                            match step {
                                // Back to the top: the handler may have
                                // changed predication.
                                Ok(next) => {
                                    at = next;
                                    continue 'view;
                                }
                                Err((next, stop)) => {
                                    at = next;
                                    break 'view stop;
                                }
                            }
                        }
                    }
                };
                if let Some(length) = stored {
                    view.by_opcode[opcode] += 1;
                    at += length;
                    left -= 1;
                    continue;
                }
                break h;
            }
        } else {
            let Some(&h) = words.get(at) else { break ViewStop::Next };
            if h < 0xC000_0000 || left == 0 {
                break ViewStop::Next;
            }
            h
        };
        // The general step, one packet. `left` goes through the view, so
        // that its address never escapes this loop (where it stays in a
        // register).
        view.left = left;
        let step = run_one(words, at, h, view);
        left = view.left;
        match step {
            Ok(next) => at = next,
            Err((next, stop)) => {
                at = next;
                break stop;
            }
        }
    };
    view.settle(left);
    (at, stop)
}

/// How many one-dword NOP pads `words` starts with: one at a time up to
/// eight (most runs are short), then eight at a time while eight in a row
/// are pads (one vector compare, where the target has them), then one at
/// a time again.
#[inline(always)]
fn pad_run(words: &[u32]) -> usize {
    let is_pad = |w: u32| w >> 8 == PAD_HEADER >> 8;
    let short = words.iter().take(8).take_while(|&&w| is_pad(w)).count();
    if short < 8 {
        return short;
    }
    let mut run = short;
    let rest = words.get(run..).unwrap_or_default();
    for chunk in rest.chunks_exact(8) {
        if !chunk.iter().fold(true, |all, &w| all & is_pad(w)) {
            break;
        }
        run += 8;
    }
    run + words.get(run..).unwrap_or_default().iter().take_while(|&&w| is_pad(w)).count()
}

/// The header of a one-dword NOP pad: type 3, count 0x3FFF, NOP (the low
/// byte, predicate and shader type, may be anything).
const PAD_HEADER: u32 = 0xC000_0000 | 0x3FFF << 16 | (Opcode::NOP.0 as u32) << 8;

/// The fast path's store: the register writer that `packet` (the view from
/// its header on) starts (header count `count`, not 0x3FFF), writing the
/// space at `base` whose run table is `spans`, when it is 1 to 8 values in
/// one span of equal marks and one register page, none calling a handler
/// (one compare against the register's limit, see `tables::RunSpans`),
/// into an allocated page: stores the values, marks the state groups and
/// returns the packet's length. Anything else (a packet the view does not
/// hold whole, no body, more values, a handler, an unallocated page)
/// returns `None` having changed nothing, for [`run_one`] (through
/// `write_run`). Never a uconfig writer: those are GPU-wide and have a case
/// of their own ([`store_uconfig`]; `tables` checks it at compile time).
/// Inlined where the space is a constant (SET_SH_REG, SET_CONTEXT_REG),
/// its checks fold with it.
#[inline(always)]
fn store_register_run(
    packet: &[u32],
    count: usize,
    base: u32,
    spans: &[u64],
    state: &mut ProcessorState,
) -> Option<usize> {
    // The body: the register offset, then `count` values.
    let length = count + 2;
    let (first, values) = packet.get(1..length)?.split_first()?;
    let offset = (first & 0xFFFF) as usize;
    let span = *spans.get(offset)?;
    let n = values.len();
    if (n as u32).wrapping_sub(1) >= (span >> 32) as u32 {
        return None;
    }
    let slots = state.regs.allocated_range_mut(base + offset as u32, n as u32)?;
    if !store_up_to_8(slots, values) {
        return None;
    }
    state.dirty |= span as u32;
    Some(length)
}

/// [`store_register_run`] for SET_UCONFIG_REG and its _INDEX form: one
/// value (the fast path's limit for the space), stored in the GPU-wide
/// file's allocated page and then in the queue's own copy.
#[inline(always)]
fn store_uconfig(packet: &[u32], count: usize, state: &mut ProcessorState) -> Option<usize> {
    let [first, value] = *packet.get(1..3)?.first_chunk::<2>()?;
    (count == 1 && store_uconfig_value(state, first & 0xFFFF, value)).then_some(3)
}

/// The store of [`store_uconfig`]: the uconfig register at `offset` (from
/// 0xC000) unless its write calls a handler or its page is not allocated
/// (false, having changed nothing).
#[inline(always)]
fn store_uconfig_value(state: &mut ProcessorState, offset: u32, value: u32) -> bool {
    let Some(&span) = tables::UCONFIG_RUN_SPANS.get(offset as usize) else { return false };
    if (span >> 32) as u32 == 0 {
        return false;
    }
    let register = space::UCONFIG + offset;
    let Some(slot) = state.regs.allocated_range_mut(register, 1).and_then(|slots| slots.first_mut()) else {
        return false;
    };
    if !state.global.set_uconfig_allocated(register, value) {
        return false;
    }
    *slot = value;
    state.dirty |= span as u32;
    true
}

/// Copies 1 to 8 values into as many slots without a loop or a call
/// (false, copying nothing, for any other length): two stores that may
/// overlap (the first and last one, two or four values), so a mix of
/// lengths costs two branches, not an indirect jump per length.
#[inline(always)]
fn store_up_to_8(slots: &mut [u32], values: &[u32]) -> bool {
    fn two<const K: usize>(slots: &mut [u32], values: &[u32]) -> bool {
        match (slots.first_chunk_mut::<K>(), values.first_chunk::<K>()) {
            (Some(s), Some(v)) => *s = *v,
            _ => return false,
        }
        match (slots.last_chunk_mut::<K>(), values.last_chunk::<K>()) {
            (Some(s), Some(v)) => *s = *v,
            _ => return false,
        }
        true
    }
    if slots.len() != values.len() {
        return false;
    }
    match values.len() {
        1..=2 => two::<1>(slots, values),
        3..=4 => two::<2>(slots, values),
        5..=8 => two::<4>(slots, values),
        _ => false,
    }
}

/// One packet [`run_view`]'s fast path did not take, at `at` (header
/// `h`, type 3): returns where the view goes on, or where it stopped
/// (past a packet that ran, else at it) and why (a packet
/// the view does not hold whole, a predicated packet while predication
/// skips, a missing body, a failed or suspended handler, a moved cursor or
/// a written window). A register writer or pad is stored through
/// `write_run`; anything else runs its handler, and counts as a packet run
/// once its handler has run (not when it fails or waits).
#[inline(never)]
fn run_one(words: &[u32], at: usize, h: u32, view: &mut View<'_, '_>) -> Result<usize, (usize, ViewStop)> {
    if h & 1 != 0 && view.skip {
        return Err((at, ViewStop::Next));
    }
    let Some((length, end)) = held_type3(words, at, h) else { return Err((at, ViewStop::Next)) };
    let opcode = (h >> 8) as u8;
    let entry = usize::from(opcode);
    let (buffer, size, offset) = (view.buffer, view.size, view.offset);

    // A register writer or pad the fast path left, or any while it does
    // not run: one at a time.
    let run = view.runs[entry];
    if run.size != 0 || (length == 1 && opcode == Opcode::NOP.0) {
        view.left -= 1;
        if run.size != 0 {
            let Some((first, values)) = words.get(at + 1..end).and_then(|body| body.split_first()) else {
                return Err((at, ViewStop::MissingBody));
            };
            handlers::registers::write_run(view.ctx.state, run.base, run.size, first & 0xFFFF, values);
        }
        view.by_opcode[entry] += 1;
        if view.report {
            report_packet(view.ctx.backend, view.ctx.state.queue, Header(h), location_at(buffer, size, offset, at));
        }
        return Ok(end);
    }

    // Everything else runs its handler.
    run_handler::<false>(words, at, end, length, h, view)
}

/// A packet that calls its handler, at `at` (header `h`, held whole by
/// the view or not): for [`run_view`] when its fast path knows the opcode
/// has no register run. `PLAIN` for an opcode whose handler is plain (see
/// `tables::fast_class::PLAIN_HANDLER`). Returns like [`run_one`].
#[inline(never)]
fn run_handler_packet<const PLAIN: bool>(
    words: &[u32],
    at: usize,
    h: u32,
    view: &mut View<'_, '_>,
) -> Result<usize, (usize, ViewStop)> {
    let Some((length, end)) = held_type3(words, at, h) else { return Err((at, ViewStop::Next)) };
    run_handler::<PLAIN>(words, at, end, length, h, view)
}

/// The handler call of [`run_one`] and [`run_handler_packet`]: it counts
/// as a packet run once its handler has run (not when it fails or waits).
///
/// The counts are settled before the call (the handler sees the work
/// budget it used), except for a plain handler (`PLAIN`), which reads none
/// of them: its packet is counted like a fast-path packet when it went on
/// in the view as it always does, and the counts are settled after the
/// call, as they would have been before it, when it did anything else.
#[inline(always)]
fn run_handler<const PLAIN: bool>(
    words: &[u32],
    at: usize,
    end: usize,
    length: u32,
    h: u32,
    view: &mut View<'_, '_>,
) -> Result<usize, (usize, ViewStop)> {
    let opcode = (h >> 8) as u8;
    let entry = usize::from(opcode);
    let (buffer, size, offset) = (view.buffer, view.size, view.offset);
    view.left -= 1;
    if !PLAIN {
        view.settle(view.left);
        *view.packets -= 1;
    }
    let ctx = &mut view.ctx;
    // The location field by field, from locals (a copy of a struct just
    // stored field by field is slow), in the context (whose buffer the view
    // set) and in the packet.
    let offset_dw = offset + at as u32;
    ctx.location.offset_dw = offset_dw;
    ctx.opcode = Opcode(opcode);
    let mut packet =
        Packet { header: Header(h), body: words.get(at + 1..end).unwrap_or(&[]), location: PacketLocation::default() };
    packet.location.buffer = buffer;
    packet.location.buffer_size_dw = size;
    packet.location.offset_dw = offset_dw;
    // Advance before running: a call (INDIRECT_BUFFER) returns past it.
    set_offset(ctx.exec, view.depth, offset_dw + length);
    ctx.memory.begin_packet();
    let moves = ctx.exec.moves();
    let charged = ctx.exec.packets;
    let result = view.handlers[entry](ctx, &packet);
    let stale = ctx.memory.touched_window();
    if PLAIN {
        // What a plain handler does: it went on in this view.
        if matches!(result, Ok(Flow::Continue)) && !stale && ctx.exec.moves() == moves {
            view.by_opcode[entry] += 1;
            return Ok(end);
        }
        // Anything else: the counts as the general way settles them.
        view.settle(view.left);
        *view.packets -= 1;
    }
    let ctx = &mut view.ctx;
    let flow = match result {
        Ok(flow) => flow,
        Err(e) => return Err((at, ViewStop::Failed(e))),
    };
    if let Flow::Suspend = flow {
        return Err((at, suspended(view, offset_dw, stale)));
    }
    *view.packets += 1;
    view.by_opcode[entry] += 1;
    if view.report {
        let location = PacketLocation { buffer, buffer_size_dw: size, offset_dw };
        report_packet(ctx.backend, ctx.state.queue, Header(h), location);
    }
    if let Flow::RunConstantEngine = flow {
        return Err((end, ViewStop::Return { stale, status: StreamStatus::RunConstantEngine }));
    }
    // Go on in this view unless the handler wrote the window's dwords or
    // moved the cursor (a call, chain, skip or return).
    if stale || ctx.exec.moves() != moves {
        return Err((end, ViewStop::Moved { stale }));
    }
    view.skip = ctx.exec.predication.skip;
    // The slice's budget and the work budget went down together since the
    // view began, so the packets left stay right unless the handler
    // charged sub-packets of its own (a multi-draw).
    if PLAIN || ctx.exec.packets != charged {
        view.left = (*view.budget).min(view.work_budget.saturating_sub(ctx.exec.packets));
        view.settled = view.left;
    }
    Ok(end)
}

/// The stop of a view whose packet at `offset_dw` (in the view's buffer)
/// suspended, its counts settled (`Ctx::suspend`, the one way to suspend,
/// noted why): the packet runs again on resume, so the cursor goes back on
/// it and the attempt is not charged to the work budget (a long wait must
/// not end in WorkBudgetExhausted).
fn suspended(view: &mut View<'_, '_>, offset_dw: u32, stale: bool) -> ViewStop {
    let ctx = &mut view.ctx;
    let exec = &mut *ctx.exec;
    let location = PacketLocation { buffer: view.buffer, buffer_size_dw: view.size, offset_dw };
    let reason = exec.suspended.unwrap_or(SuspendReason::Rewind { address: location.address() });
    set_offset(exec, view.depth, offset_dw);
    exec.packets = exec.packets.saturating_sub(1);
    exec.suspended = Some(reason);
    ctx.state.stats.waits += 1;
    ViewStop::Return { stale, status: StreamStatus::Suspended(reason) }
}

/// The length and end of the type-3 packet with header `h` at `at` in
/// `words` (the reader's framing rule, against the view), when the view
/// holds it whole.
#[inline(always)]
fn held_type3(words: &[u32], at: usize, h: u32) -> Option<(u32, usize)> {
    let length = Header(h).type3_length_dw();
    let end = at + length as usize;
    (end <= words.len()).then_some((length, end))
}

/// Where the packet `at` dwords into a view that starts `offset` dwords
/// into its buffer sits.
#[inline(always)]
fn location_at(buffer: u64, size: u32, offset: u32, at: usize) -> PacketLocation {
    PacketLocation { buffer, buffer_size_dw: size, offset_dw: offset + at as u32 }
}

/// Why the inner loop of [`run_packets`] left its view of the window.
enum ViewStop {
    /// The view ended, its next packet is not a type-3 packet it holds
    /// whole, or the budgets ran out: go on at the cursor with a new view.
    Next,
    /// A register writer with no body (at the cursor).
    MissingBody,
    /// A handler failed.
    Failed(Box<Pm4Error>),
    /// A handler moved the cursor or changed the IB stack, or wrote the
    /// dwords the window holds (`stale`).
    Moved { stale: bool },
    /// The stream stops here with `status`.
    Return { stale: bool, status: StreamStatus },
}

/// A packet consumed by its length without a handler: a type-2 filler, a type-0 register run, or a
/// predicated packet while predication says "skip". Returns the dwords
/// consumed.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn skip_or_type0(
    window: &mut PrefetchWindow,
    state: &mut ProcessorState,
    env: &mut Env<'_>,
    header: Header,
    length: u32,
    location: PacketLocation,
    tally: &mut Tally<'_>,
) -> Result<u32, Pm4Error> {
    let consumed = match header.packet_type() {
        PacketType::Type3 => {
            // Predicated while predication says "skip".
            tally.type3(header, length);
            state.stats.skipped += 1;
            length
        }
        PacketType::Type2 => {
            tally.any(header, 1);
            1
        }
        PacketType::Type0 | PacketType::Type1 => {
            let remaining = location.buffer_size_dw - location.offset_dw;
            let start = window
                .ensure(env.memory, location.address(), length, remaining)
                .map_err(|source| Pm4Error::Memory { location, opcode: Opcode::NOP, source })?;
            let base = header.type0_base();
            for (i, value) in window.slice(start, length).iter().skip(1).enumerate() {
                context::write_register(state, base.wrapping_add(i as u32), *value);
            }
            tracing::debug!(queue = %state.queue, %location, "type-0 packet writes registers from {base:#x}");
            tally.any(header, length);
            length
        }
    };
    if tally.report {
        report_packet(env.backend, state.queue, header, location);
    }
    Ok(consumed)
}

/// [`Backend::packet`] for a packet counted (when the configuration asks).
#[cold]
#[inline(never)]
fn report_packet(backend: &mut dyn Backend, queue: QueueId, header: Header, location: PacketLocation) {
    backend.packet(queue, header, &location);
}

#[inline]
fn set_offset(exec: &mut Pm4Execution, depth: usize, offset: u32) {
    if let Some(c) = exec.at_mut(depth) {
        c.offset_dw = offset;
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
