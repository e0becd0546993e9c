//! The backend: where the processor's effects other than memory and
//! register writes go (draws, dispatches, flips, events, cache actions,
//! fences and interrupts, markers, diagnostics).
//!
//! Every method has a default, so a backend implements only what it needs.
//! The defaults of the "hardware writes memory" hooks
//! ([`Backend::sample_event`]) write well-formed results, so real streams
//! that wait on occlusion or statistics records complete.

use std::fmt::Write as _;
use std::sync::Arc;

use crate::memory::{GuestMemory, MemoryError};
use crate::packet::private::PrivatePacket;
use crate::packet::{Header, Opcode, PacketLocation};
use crate::regs::RegisterFile;
use crate::shader::AgcShader;

/// Identity of a queue: 0 = graphics, 1 + pipe*8 + queue for compute.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QueueId(pub u32);

impl QueueId {
    /// The graphics queue.
    pub const GRAPHICS: QueueId = QueueId(0);
    /// Number of queues: graphics plus 7 pipes × 8 compute queues.
    pub const COUNT: u32 = 57;

    /// Compute queue `queue` of `pipe`, if both are in range.
    pub fn compute(pipe: u32, queue: u32) -> Option<QueueId> {
        (pipe < 7 && queue < 8).then_some(QueueId(1 + pipe * 8 + queue))
    }

    /// True for the graphics queue.
    pub fn is_graphics(self) -> bool {
        self.0 == 0
    }

    /// `(pipe, queue)` of a compute queue.
    pub fn pipe_queue(self) -> Option<(u32, u32)> {
        (self.0 >= 1 && self.0 < Self::COUNT).then(|| ((self.0 - 1) / 8, (self.0 - 1) % 8))
    }
}

impl std::fmt::Display for QueueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.pipe_queue() {
            None if self.0 == 0 => f.write_str("gfx"),
            Some((p, q)) => write!(f, "comp{p}.{q}"),
            None => write!(f, "queue{}", self.0),
        }
    }
}

/// A queue name that is not `gfx`, `comp`, `compP.Q` or a number below 57.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bad queue '{0}': expected gfx, compP.Q (pipe 0-6, queue 0-7) or a number 0..=56")]
pub struct ParseQueueError(pub String);

/// Parses the names [`QueueId`]'s `Display` writes (`gfx`, `compP.Q`), and
/// `graphics`, `comp`/`compute` (compute queue 0.0), `computeP.Q` and a
/// queue number (decimal or `0x` hex), case-insensitively: the one place
/// queue names are read.
///
/// ```
/// use pm4core::backend::QueueId;
///
/// assert_eq!("gfx".parse(), Ok(QueueId::GRAPHICS));
/// assert_eq!("comp1.2".parse(), Ok(QueueId::compute(1, 2).unwrap()));
/// assert_eq!("11".parse::<QueueId>().map(|q| q.to_string()), Ok("comp1.2".to_owned()));
/// assert!("comp7.0".parse::<QueueId>().is_err());
/// ```
impl std::str::FromStr for QueueId {
    type Err = ParseQueueError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || ParseQueueError(text.to_owned());
        let lower = text.trim().to_ascii_lowercase();
        match lower.as_str() {
            "gfx" | "graphics" => return Ok(QueueId::GRAPHICS),
            "comp" | "compute" => return Ok(QueueId(1)),
            _ => {}
        }
        if let Some(rest) = lower.strip_prefix("compute").or_else(|| lower.strip_prefix("comp")) {
            let (pipe, queue) = rest.split_once('.').ok_or_else(bad)?;
            let pipe = pipe.parse().map_err(|_| bad())?;
            let queue = queue.parse().map_err(|_| bad())?;
            return QueueId::compute(pipe, queue).ok_or_else(bad);
        }
        let digits = lower.replace('_', "");
        let n = match digits.strip_prefix("0x") {
            Some(hex) => u32::from_str_radix(hex, 16),
            None => digits.parse(),
        }
        .map_err(|_| bad())?;
        (n < QueueId::COUNT).then_some(QueueId(n)).ok_or_else(bad)
    }
}

/// The program stages (they live with the registers that bind them).
pub use crate::regs::ProgramStage;

/// A program bound to a stage: its code address and, when the code address
/// belongs to a registered shader container, the decoded container.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProgramBinding {
    /// Code address from PGM_LO/HI (0 = nothing bound).
    pub address: u64,
    /// The decoded container; `None` for raw code.
    pub container: Option<Arc<AgcShader>>,
}

/// Index buffer used by an indexed draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexBuffer {
    /// Address of the first index the draw fetches.
    pub address: u64,
    /// VGT_INDEX_TYPE: 0 = 16-bit, 1 = 32-bit, 2 = 8-bit.
    pub index_type: u32,
    /// Indices available from `address` on (reads past return 0).
    pub max_indices: u32,
}

impl IndexBuffer {
    /// Size of one index in bytes.
    pub fn index_size(&self) -> u32 {
        match self.index_type {
            1 => 4,
            2 => 1,
            _ => 2,
        }
    }
}

/// One draw, as the backend receives it.
#[derive(Clone, Copy, Debug)]
pub struct Draw<'a> {
    pub queue: QueueId,
    /// The draw packet.
    pub opcode: Opcode,
    pub location: PacketLocation,
    /// Vertices (auto-indexed) or indices (indexed) per instance.
    pub count: u32,
    pub instance_count: u32,
    /// First index (indexed) or first vertex (indirect non-indexed).
    pub first: u32,
    /// Base vertex (indexed indirect draws).
    pub base_vertex: i32,
    pub first_instance: u32,
    /// Sub-draw index inside a multi-draw packet.
    pub draw_index: u32,
    pub index_buffer: Option<IndexBuffer>,
    pub primitive_type: u32,
    pub draw_initiator: u32,
    /// Address of the indirect argument record, for indirect draws.
    pub indirect_args: Option<u64>,
    /// Mesh-shader thread-group counts X, Y, Z of a mesh dispatch
    /// (DISPATCH_MESH_INDIRECT_MULTI; `count` is 0 then). DISPATCH_TASKMESH_GFX
    /// draws have `None`: their counts come from the task ring.
    pub mesh_groups: Option<[u32; 3]>,
    /// Programs per graphics stage, in [`ProgramStage::GRAPHICS`] order.
    pub programs: &'a [ProgramBinding; 4],
    /// State groups ([`crate::processor::state_group`]) written since the
    /// previous draw of this queue.
    pub changed: u32,
    /// The register state at the draw.
    pub registers: &'a RegisterFile,
}

/// One dispatch, as the backend receives it.
#[derive(Clone, Copy, Debug)]
pub struct Dispatch<'a> {
    pub queue: QueueId,
    pub opcode: Opcode,
    pub location: PacketLocation,
    /// Thread-group counts (end coordinates when `start` is non-zero).
    pub dims: [u32; 3],
    pub start: [u32; 3],
    pub threads_per_group: [u32; 3],
    pub initiator: u32,
    pub indirect_args: Option<u64>,
    pub program: &'a ProgramBinding,
    pub registers: &'a RegisterFile,
}

/// What a cache or synchronisation action asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheAction {
    /// ACQUIRE_MEM: invalidate/write back over `[base, base + size)` (256-byte units
    /// converted to bytes; `size == u64::MAX` for everything).
    AcquireMem { base: u64, size: u64, coher_cntl: u32, gcr_cntl: u32 },
    /// SURFACE_SYNC (gfx7).
    SurfaceSync { base: u64, size: u64, coher_cntl: u32 },
    /// The GCR/cache bits carried by a release (RELEASE_MEM / EVENT_WRITE_EOP).
    Release { cache_control: u32 },
}

/// Fields as the event log prints them: `acquire_mem base=0x0 size=all
/// coher_cntl=0x0 gcr_cntl=0x4000`.
impl std::fmt::Display for CacheAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let size = |size: u64| if size == u64::MAX { "all".to_string() } else { format!("{size:#x}") };
        match *self {
            CacheAction::AcquireMem { base, size: n, coher_cntl, gcr_cntl } => write!(
                f,
                "acquire_mem base={base:#x} size={} coher_cntl={coher_cntl:#x} gcr_cntl={gcr_cntl:#x}",
                size(n)
            ),
            CacheAction::SurfaceSync { base, size: n, coher_cntl } => {
                write!(f, "surface_sync base={base:#x} size={} coher_cntl={coher_cntl:#x}", size(n))
            }
            CacheAction::Release { cache_control } => write!(f, "release cache_control={cache_control:#x}"),
        }
    }
}

/// A non-sampling event (EVENT_WRITE of a flush/control event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub queue: QueueId,
    pub event_type: u32,
    pub event_index: u32,
    pub location: PacketLocation,
}

/// Events whose hardware writes memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleKind {
    /// ZPASS_DONE / PIXEL_PIPE_STAT_DUMP: one 64-bit count per render backend
    /// at a 16-byte stride, bit 63 = valid.
    ZpassDone,
    /// SAMPLE_PIPELINESTAT: 11 64-bit counters.
    PipelineStats,
    /// SAMPLE_STREAMOUTSTATS(n): {storage needed, written}, bit 63 valid.
    StreamoutStats(u32),
}

/// `zpass_done`, `pipeline_stats`, `streamout_stats stream=N`.
impl std::fmt::Display for SampleKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SampleKind::ZpassDone => f.write_str("zpass_done"),
            SampleKind::PipelineStats => f.write_str("pipeline_stats"),
            SampleKind::StreamoutStats(n) => write!(f, "streamout_stats stream={n}"),
        }
    }
}

/// A fence: a release that retired (data written and/or interrupt raised).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fence {
    pub queue: QueueId,
    pub opcode: Opcode,
    pub event_type: u32,
    pub address: u64,
    /// The data written (0 when DATA_SEL wrote nothing).
    pub data: u64,
    pub data_sel: u32,
    pub int_sel: u32,
    pub int_ctxid: u32,
    /// True when INT_SEL raises an interrupt the host should see.
    pub interrupt: bool,
}

/// A flip request carried by a NOP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flip {
    pub queue: QueueId,
    /// The marker id (`0x777`, `0x778`, … for the 0x6875 convention, or the
    /// host-command code).
    pub kind: u32,
    /// Label address and value for the forms that carry one.
    pub label: Option<(u64, u64)>,
    pub location: PacketLocation,
}

/// Debug markers and trace points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker<'a> {
    Push(&'a str),
    Pop,
    Set(&'a str),
    /// A driver trace point (`0xCAFE0000 | id`).
    TracePoint(u32),
    /// A comment packet's text.
    Comment(&'a str),
    /// A hint marker with its id (0x6875 ids 0x004-0x006, 0x00D, …).
    Hint(u32),
}

/// `push "name"`, `pop`, `set "name"`, `trace_point 0x42`, `comment "text"`,
/// `hint 0xd` (text quoted with escapes).
impl std::fmt::Display for Marker<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Marker::Push(t) => write!(f, "push \"{}\"", t.escape_debug()),
            Marker::Pop => f.write_str("pop"),
            Marker::Set(t) => write!(f, "set \"{}\"", t.escape_debug()),
            Marker::TracePoint(id) => write!(f, "trace_point {id:#x}"),
            Marker::Comment(t) => write!(f, "comment \"{}\"", t.escape_debug()),
            Marker::Hint(id) => write!(f, "hint {id:#x}"),
        }
    }
}

/// A packet the processor does not know, reported with its surroundings.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct UnknownPacket {
    pub queue: u32,
    /// Address of the header.
    pub address: u64,
    pub header: u32,
    pub opcode: u8,
    pub length_dw: u32,
    /// Hex dump: up to 16 dwords before and after the header, one line each,
    /// the header's line marked with `>`.
    pub dump: String,
}

/// A packet with a known opcode that pm4core decodes but does not emulate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotEmulated {
    pub queue: QueueId,
    pub opcode: Opcode,
    pub location: PacketLocation,
}

/// Receives everything the processor does besides register and memory writes.
///
/// An emulator implements it for its renderer: every method has a default
/// that does nothing, so a backend overrides only what it draws or tracks.
/// The callbacks borrow the processor's state for the call (the register
/// file at a draw, the bound programs); a renderer copies what it keeps.
///
/// **Threading contract** (a [`crate::gpu::Gpu`]): each queue's calls come
/// from the worker running that queue's slice, in that queue's packet order.
/// A `Gpu` owns one backend `B: Send` and, at each queue's first slice, asks
/// it for that queue's own backend ([`Backend::queue_backend`]): a renderer
/// that returns one (its per-queue command recorder, say) has that queue's
/// calls go there, on that queue's worker, without any lock, so queues on
/// different workers call their backends in parallel. A backend that returns
/// `None` (the default: one ordered event log, a replay) gets every queue's
/// calls itself, behind one lock taken per call (per slice in deterministic
/// mode), never two at once.
///
/// # Example
///
/// ```
/// use pm4core::backend::{Backend, Draw, QueueId};
/// use pm4core::memory::{FlatMemory, GuestMemory};
/// use pm4core::packet::builder::CommandBuffer;
/// use pm4core::packet::Opcode;
/// use pm4core::processor::{Env, ProcessStatus, Processor};
/// use pm4core::shader::ShaderRegistry;
///
/// /// A renderer that records the vertex count of each draw.
/// #[derive(Default)]
/// struct Renderer {
///     vertex_counts: Vec<u32>,
/// }
///
/// impl Backend for Renderer {
///     fn draw(&mut self, draw: &Draw<'_>) {
///         self.vertex_counts.push(draw.count * draw.instance_count.max(1));
///     }
/// }
///
/// // DRAW_INDEX_AUTO of 3 vertices (VGT_DRAW_INITIATOR = auto-index, 2).
/// let mut commands = CommandBuffer::new();
/// commands.pkt3(Opcode::DRAW_INDEX_AUTO, &[3, 2]).unwrap();
/// let ram = FlatMemory::new(0, 0x1000).unwrap();
/// for (i, dword) in commands.dwords().iter().enumerate() {
///     ram.write_u32(4 * i as u64, *dword).unwrap();
/// }
/// let (mut renderer, shaders) = (Renderer::default(), ShaderRegistry::new());
/// let mut processor = Processor::new(QueueId::GRAPHICS);
/// processor.submit(0, commands.len_dw()).unwrap();
/// let mut env = Env { memory: &ram, backend: &mut renderer, shaders: &shaders };
/// assert_eq!(processor.process(&mut env).unwrap(), ProcessStatus::Completed);
/// assert_eq!(renderer.vertex_counts, [3]);
/// ```
#[allow(unused_variables)]
pub trait Backend {
    /// Every packet decoded (executed or skipped), when
    /// [`crate::processor::ProcessorConfig::report_packets`] is on.
    fn packet(&mut self, queue: QueueId, header: Header, location: &PacketLocation) {}
    fn draw(&mut self, draw: &Draw<'_>) {}
    fn dispatch(&mut self, dispatch: &Dispatch<'_>) {}
    fn event(&mut self, event: &Event) {}
    fn cache_action(&mut self, queue: QueueId, action: &CacheAction) {}
    fn fence(&mut self, fence: &Fence) {}
    fn flip(&mut self, flip: &Flip) {}
    fn marker(&mut self, queue: QueueId, marker: &Marker<'_>) {}
    /// A NOP with a registered host-command code ([`crate::processor::HostCommand::Custom`]).
    fn host_command(&mut self, queue: QueueId, code: u32, payload: &[u32]) {}
    /// A packet the embedder's private-packet table matched
    /// ([`crate::processor::ProcessorConfig::private_packets`]); the default
    /// hands it on as a host command with its entry's code and payload.
    fn private_packet(&mut self, packet: &PrivatePacket<'_>) {
        self.host_command(packet.queue, packet.code, packet.payload);
    }
    fn not_emulated(&mut self, packet: &NotEmulated) {}
    fn unknown_packet(&mut self, report: &UnknownPacket) {}
    /// An indirect buffer whose memory is not mapped, skipped because
    /// [`crate::processor::ProcessorConfig::skip_unmapped_ibs`] is on:
    /// `location` is the INDIRECT_BUFFER packet, `address`/`size_dw` the
    /// buffer it names.
    fn skipped_indirect_buffer(&mut self, queue: QueueId, location: &PacketLocation, address: u64, size_dw: u32) {}

    /// The GPU clock for timestamps; `None` lets the processor use its own
    /// deterministic counter.
    fn gpu_clock(&mut self) -> Option<u64> {
        None
    }

    /// Fixed-function hardware writing a sample record at `address`. The
    /// default writes well-formed, valid results: `render_backends` counts of
    /// zero samples with bit 63 set for ZPASS, zeroed statistics, and
    /// stream-out counters with bit 63 set.
    fn sample_event(
        &mut self,
        queue: QueueId,
        kind: SampleKind,
        address: u64,
        render_backends: u32,
        memory: &dyn GuestMemory,
    ) -> Result<(), MemoryError> {
        write_default_sample(kind, address, render_backends, memory)
    }

    /// Asked by a [`crate::gpu::Gpu`] once per queue, at the queue's first
    /// slice: a backend of its own for `queue`'s calls (owned by the queue,
    /// called on its worker without the GPU's backend lock, dropped with the
    /// `Gpu`), or `None` (the default) to have `queue`'s calls come to
    /// `self` behind the lock. A renderer returns its per-queue recorder,
    /// sharing what queues share (a device, a log) through an `Arc`; a
    /// backend whose log orders every queue's calls keeps the default.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    /// use pm4core::backend::{Backend, Dispatch, QueueId};
    ///
    /// /// One queue's recorder: counts its dispatches' thread groups.
    /// struct Recorder {
    ///     groups: u64,
    ///     total: Arc<AtomicU64>,
    /// }
    ///
    /// impl Backend for Recorder {
    ///     fn dispatch(&mut self, d: &Dispatch<'_>) {
    ///         self.groups += u64::from(d.dims[0] * d.dims[1] * d.dims[2]);
    ///     }
    /// }
    ///
    /// impl Drop for Recorder {
    ///     fn drop(&mut self) {
    ///         self.total.fetch_add(self.groups, Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// /// The renderer a `Gpu` is given: one recorder per queue.
    /// struct Renderer {
    ///     total: Arc<AtomicU64>,
    /// }
    ///
    /// impl Backend for Renderer {
    ///     fn queue_backend(&mut self, _queue: QueueId) -> Option<Box<dyn Backend + Send>> {
    ///         Some(Box::new(Recorder { groups: 0, total: Arc::clone(&self.total) }))
    ///     }
    /// }
    ///
    /// let mut renderer = Renderer { total: Arc::default() };
    /// let mut queue = renderer.queue_backend(QueueId::GRAPHICS).unwrap();
    /// # let registers = pm4core::regs::RegisterFile::new();
    /// # let program = Default::default();
    /// # let location = Default::default();
    /// let dispatch = Dispatch {
    ///     queue: QueueId::GRAPHICS,
    ///     opcode: pm4core::packet::Opcode::DISPATCH_DIRECT,
    ///     location,
    ///     dims: [4, 2, 1],
    ///     start: [0; 3],
    ///     threads_per_group: [64, 1, 1],
    ///     initiator: 1,
    ///     indirect_args: None,
    ///     program: &program,
    ///     registers: &registers,
    /// };
    /// queue.dispatch(&dispatch);
    /// drop(queue);
    /// assert_eq!(renderer.total.load(Ordering::Relaxed), 8);
    /// ```
    fn queue_backend(&mut self, queue: QueueId) -> Option<Box<dyn Backend + Send>> {
        None
    }
}

/// One backend call with its arguments, as [`Forward::forwarded`] sees it
/// (the example of [`Forward`] counts fences by it).
#[derive(Clone, Copy, Debug)]
pub enum Call<'a> {
    Packet { queue: QueueId, header: Header, location: &'a PacketLocation },
    Draw(&'a Draw<'a>),
    Dispatch(&'a Dispatch<'a>),
    Event(&'a Event),
    CacheAction { queue: QueueId, action: &'a CacheAction },
    Fence(&'a Fence),
    Flip(&'a Flip),
    Marker { queue: QueueId, marker: &'a Marker<'a> },
    HostCommand { queue: QueueId, code: u32, payload: &'a [u32] },
    PrivatePacket(&'a PrivatePacket<'a>),
    NotEmulated(&'a NotEmulated),
    UnknownPacket(&'a UnknownPacket),
    SkippedIndirectBuffer { queue: QueueId, location: &'a PacketLocation, address: u64, size_dw: u32 },
    GpuClock,
    SampleEvent { queue: QueueId, kind: SampleKind, address: u64, render_backends: u32 },
}

impl Call<'_> {
    /// The queue whose packet made the call (`None` for a GPU clock
    /// request, which names none).
    ///
    /// ```
    /// use pm4core::backend::{Call, QueueId};
    ///
    /// let code = [7u32];
    /// let call = Call::HostCommand { queue: QueueId(3), code: 0x42, payload: &code };
    /// assert_eq!(call.queue(), Some(QueueId(3)));
    /// assert_eq!(Call::GpuClock.queue(), None);
    /// ```
    pub fn queue(&self) -> Option<QueueId> {
        Some(match *self {
            Call::Packet { queue, .. }
            | Call::CacheAction { queue, .. }
            | Call::Marker { queue, .. }
            | Call::HostCommand { queue, .. }
            | Call::SkippedIndirectBuffer { queue, .. }
            | Call::SampleEvent { queue, .. } => queue,
            Call::Draw(d) => d.queue,
            Call::Dispatch(d) => d.queue,
            Call::Event(e) => e.queue,
            Call::Fence(f) => f.queue,
            Call::Flip(f) => f.queue,
            Call::NotEmulated(p) => p.queue,
            Call::PrivatePacket(p) => p.queue,
            Call::UnknownPacket(r) => QueueId(r.queue),
            Call::GpuClock => return None,
        })
    }
}

/// A backend that hands every call on to another one: implement `Forward`
/// and the type is a [`Backend`] (a blanket implementation) whose every
/// method calls [`Forward::forward`] with the same call on the target, then
/// [`Forward::forwarded`]. A wrapper (a lock, a log filter, a counter)
/// writes only what it changes. When `forward` drops a call (`None`), the
/// trait's default effect applies: nothing, no GPU clock, the default
/// sample record.
///
/// # Example
///
/// A wrapper counting the fences a renderer sees:
///
/// ```
/// use pm4core::backend::{Backend, Call, Forward, NullBackend, QueueId};
///
/// struct CountFences<B> {
///     inner: B,
///     fences: u64,
/// }
///
/// impl<B: Backend> Forward for CountFences<B> {
///     type Target = B;
///     fn forward<R>(&mut self, _queue: QueueId, call: impl FnOnce(&mut B) -> R) -> Option<R> {
///         Some(call(&mut self.inner))
///     }
///     fn forwarded(&mut self, call: Call<'_>) {
///         if let Call::Fence(_) = call {
///             self.fences += 1;
///         }
///     }
/// }
///
/// let mut backend = CountFences { inner: NullBackend, fences: 0 };
/// let fence = pm4core::backend::Fence {
///     queue: QueueId::GRAPHICS,
///     opcode: pm4core::packet::Opcode::RELEASE_MEM,
///     event_type: 0x28,
///     address: 0x1000,
///     data: 1,
///     data_sel: 1,
///     int_sel: 0,
///     int_ctxid: 0,
///     interrupt: false,
/// };
/// backend.fence(&fence);
/// assert_eq!(backend.fences, 1);
/// ```
pub trait Forward {
    /// The backend calls go on to.
    type Target: Backend + ?Sized;

    /// Runs `call` on the target for an effect of `queue`, or drops it
    /// (`None`).
    fn forward<R>(&mut self, queue: QueueId, call: impl FnOnce(&mut Self::Target) -> R) -> Option<R>;

    /// Sees each call after it was forwarded (or dropped); the default does
    /// nothing.
    #[allow(unused_variables)]
    fn forwarded(&mut self, call: Call<'_>) {}
}

/// The forwarding, written once for every [`Forward`] wrapper. The queue of
/// a GPU clock request is not known: it is forwarded as the graphics queue's.
impl<T: Forward> Backend for T {
    fn packet(&mut self, queue: QueueId, header: Header, location: &PacketLocation) {
        self.forward(queue, |b| b.packet(queue, header, location));
        self.forwarded(Call::Packet { queue, header, location });
    }
    fn draw(&mut self, draw: &Draw<'_>) {
        self.forward(draw.queue, |b| b.draw(draw));
        self.forwarded(Call::Draw(draw));
    }
    fn dispatch(&mut self, dispatch: &Dispatch<'_>) {
        self.forward(dispatch.queue, |b| b.dispatch(dispatch));
        self.forwarded(Call::Dispatch(dispatch));
    }
    fn event(&mut self, event: &Event) {
        self.forward(event.queue, |b| b.event(event));
        self.forwarded(Call::Event(event));
    }
    fn cache_action(&mut self, queue: QueueId, action: &CacheAction) {
        self.forward(queue, |b| b.cache_action(queue, action));
        self.forwarded(Call::CacheAction { queue, action });
    }
    fn fence(&mut self, fence: &Fence) {
        self.forward(fence.queue, |b| b.fence(fence));
        self.forwarded(Call::Fence(fence));
    }
    fn flip(&mut self, flip: &Flip) {
        self.forward(flip.queue, |b| b.flip(flip));
        self.forwarded(Call::Flip(flip));
    }
    fn marker(&mut self, queue: QueueId, marker: &Marker<'_>) {
        self.forward(queue, |b| b.marker(queue, marker));
        self.forwarded(Call::Marker { queue, marker });
    }
    fn host_command(&mut self, queue: QueueId, code: u32, payload: &[u32]) {
        self.forward(queue, |b| b.host_command(queue, code, payload));
        self.forwarded(Call::HostCommand { queue, code, payload });
    }
    fn private_packet(&mut self, packet: &PrivatePacket<'_>) {
        self.forward(packet.queue, |b| b.private_packet(packet));
        self.forwarded(Call::PrivatePacket(packet));
    }
    fn not_emulated(&mut self, packet: &NotEmulated) {
        self.forward(packet.queue, |b| b.not_emulated(packet));
        self.forwarded(Call::NotEmulated(packet));
    }
    fn unknown_packet(&mut self, report: &UnknownPacket) {
        self.forward(QueueId(report.queue), |b| b.unknown_packet(report));
        self.forwarded(Call::UnknownPacket(report));
    }
    fn skipped_indirect_buffer(&mut self, queue: QueueId, location: &PacketLocation, address: u64, size_dw: u32) {
        self.forward(queue, |b| b.skipped_indirect_buffer(queue, location, address, size_dw));
        self.forwarded(Call::SkippedIndirectBuffer { queue, location, address, size_dw });
    }
    fn gpu_clock(&mut self) -> Option<u64> {
        let clock = self.forward(QueueId::GRAPHICS, |b| b.gpu_clock()).flatten();
        self.forwarded(Call::GpuClock);
        clock
    }
    fn sample_event(
        &mut self,
        queue: QueueId,
        kind: SampleKind,
        address: u64,
        render_backends: u32,
        memory: &dyn GuestMemory,
    ) -> Result<(), MemoryError> {
        let result = self
            .forward(queue, |b| b.sample_event(queue, kind, address, render_backends, memory))
            .unwrap_or_else(|| write_default_sample(kind, address, render_backends, memory));
        self.forwarded(Call::SampleEvent { queue, kind, address, render_backends });
        result
    }
}

/// What [`Backend::sample_event`] writes by default.
pub fn write_default_sample(
    kind: SampleKind,
    address: u64,
    render_backends: u32,
    memory: &dyn GuestMemory,
) -> Result<(), MemoryError> {
    const VALID: u64 = 1 << 63;
    match kind {
        SampleKind::ZpassDone => {
            for rb in 0..u64::from(render_backends) {
                memory.write_u64(address.wrapping_add(rb * 16), VALID)?;
            }
        }
        SampleKind::PipelineStats => {
            for i in 0..11u64 {
                memory.write_u64(address.wrapping_add(i * 8), 0)?;
            }
        }
        SampleKind::StreamoutStats(_) => {
            memory.write_u64(address, VALID)?;
            memory.write_u64(address.wrapping_add(8), VALID)?;
        }
    }
    Ok(())
}

/// A backend that does nothing (defaults only).
#[derive(Clone, Copy, Debug, Default)]
pub struct NullBackend;

/// Each queue gets its own (nothing to share, nothing to lock).
impl Backend for NullBackend {
    fn queue_backend(&mut self, _queue: QueueId) -> Option<Box<dyn Backend + Send>> {
        Some(Box::new(NullBackend))
    }
}

/// A backend that records a deterministic, human-readable event log, one
/// line per effect, for tests and `pm4 replay --log`.
///
/// The log is bounded: it holds at most [`max_lines`](Self::max_lines)
/// lines ([`Limits::max_events`](crate::limits::Limits::max_events) by
/// default, 2^20), then one final `truncated at N events` line; effects past
/// it are counted ([`lines_dropped`](Self::lines_dropped), and the `draws`,
/// `dispatches` and `fences` counters) but not formatted, so that one
/// multi-draw packet of 2^26 draws cannot fill the host's memory with its
/// lines.
///
/// ```
/// use pm4core::backend::{Backend, Marker, QueueId, RecordingBackend};
/// use pm4core::limits::{Limit, Limits};
///
/// let mut log = RecordingBackend::with_limits(&Limits { max_events: 2, ..Limits::default() });
/// for _ in 0..5 {
///     log.marker(QueueId::GRAPHICS, &Marker::Push("frame"));
/// }
/// assert_eq!(log.lines, [r#"gfx marker push "frame""#, r#"gfx marker push "frame""#, "truncated at 2 events"]);
/// assert_eq!(log.lines_dropped, 3);
/// assert_eq!(log.truncated().map(|e| e.limit), Some(Limit::Events));
/// ```
#[derive(Clone, Debug)]
pub struct RecordingBackend {
    /// The log lines, in order.
    pub lines: Vec<String>,
    /// Unknown-packet reports, in order (at most `max_lines`).
    pub unknown: Vec<UnknownPacket>,
    /// Count of draws (callbacks, one per sub-draw).
    pub draws: u64,
    pub dispatches: u64,
    pub fences: u64,
    /// Most lines [`lines`](Self::lines) holds; the first line refused adds
    /// a final `truncated at N events` line.
    pub max_lines: u64,
    /// Lines not recorded because [`lines`](Self::lines) was full.
    pub lines_dropped: u64,
}

impl Default for RecordingBackend {
    fn default() -> Self {
        Self::with_limits(&crate::limits::Limits::default())
    }
}

impl RecordingBackend {
    /// An empty log of at most [`Limits::max_events`](crate::limits::Limits::max_events)'s
    /// default of lines.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty log of at most `limits.max_events` lines.
    pub fn with_limits(limits: &crate::limits::Limits) -> Self {
        RecordingBackend {
            lines: Vec::new(),
            unknown: Vec::new(),
            draws: 0,
            dispatches: 0,
            fences: 0,
            max_lines: limits.max_events,
            lines_dropped: 0,
        }
    }

    /// The log as one string, one line per event.
    pub fn log(&self) -> String {
        let mut s = String::new();
        for line in &self.lines {
            s.push_str(line);
            s.push('\n');
        }
        s
    }

    /// Appends a line (host-side events such as submissions), unless the
    /// log is full.
    pub fn push(&mut self, line: String) {
        if self.accepts() {
            self.lines.push(line);
        }
    }

    /// The limit the log reached, if it did: lines were dropped.
    pub fn truncated(&self) -> Option<crate::limits::LimitExceeded> {
        (self.lines_dropped > 0)
            .then_some(crate::limits::LimitExceeded { limit: crate::limits::Limit::Events, value: self.max_lines })
    }

    /// Bytes the log's lines and reports hold on the heap (what a harness
    /// checks against the bound).
    pub fn heap_bytes(&self) -> usize {
        let lines: usize = self.lines.iter().map(String::capacity).sum();
        let unknown: usize = self.unknown.iter().map(|u| u.dump.capacity()).sum();
        lines
            + unknown
            + self.lines.capacity() * std::mem::size_of::<String>()
            + self.unknown.capacity() * std::mem::size_of::<UnknownPacket>()
    }

    /// True while the log takes a line; at the bound, writes the final line
    /// once, counts the refused one and returns false (the caller then does
    /// not format it).
    #[inline]
    fn accepts(&mut self) -> bool {
        let held = (self.lines.len() as u64).saturating_sub(u64::from(self.lines_dropped > 0));
        if held < self.max_lines {
            return true;
        }
        if self.lines_dropped == 0 {
            self.lines.push(format!("truncated at {} events", self.max_lines));
        }
        self.lines_dropped += 1;
        false
    }
}

/// An event type as the recording backend's log writes it: its
/// VGT_EVENT_TYPE name (`CS_PARTIAL_FLUSH`, as the disassembler shows it),
/// or the number for a type the register database does not name.
struct EventName(u32);

impl std::fmt::Display for EventName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match crate::regs::db::event_name(crate::regs::db::GpuFamily::Gfx103, self.0) {
            Some(name) => f.write_str(name),
            None => write!(f, "{:#x}", self.0),
        }
    }
}

fn program_summary(programs: &[ProgramBinding; 4]) -> String {
    let mut s = String::new();
    for (stage, p) in ProgramStage::GRAPHICS.iter().zip(programs.iter()) {
        if p.address != 0 {
            let _ = write!(s, " {}={:#x}", stage.name(), p.address);
            if let Some(c) = &p.container {
                let _ = write!(s, "[{}]", c.shader_type().name());
            }
        }
    }
    s
}

impl Backend for RecordingBackend {
    fn draw(&mut self, d: &Draw<'_>) {
        self.draws += 1;
        if !self.accepts() {
            return;
        }
        let mut line = format!(
            "{} draw {} count={} instances={} first={} base_vertex={} first_instance={} prim={}",
            d.queue, d.opcode, d.count, d.instance_count, d.first, d.base_vertex, d.first_instance, d.primitive_type
        );
        if let Some(ib) = d.index_buffer {
            let _ = write!(line, " index={:#x}/{}b/max={}", ib.address, ib.index_size(), ib.max_indices);
        }
        if let Some(a) = d.indirect_args {
            let _ = write!(line, " args={a:#x} draw_index={}", d.draw_index);
        }
        if let Some([x, y, z]) = d.mesh_groups {
            let _ = write!(line, " mesh={x},{y},{z}");
        }
        line.push_str(&program_summary(d.programs));
        self.lines.push(line);
    }

    fn dispatch(&mut self, d: &Dispatch<'_>) {
        self.dispatches += 1;
        if !self.accepts() {
            return;
        }
        let mut line = format!(
            "{} dispatch {} dims={},{},{} start={},{},{} group={},{},{}",
            d.queue,
            d.opcode,
            d.dims[0],
            d.dims[1],
            d.dims[2],
            d.start[0],
            d.start[1],
            d.start[2],
            d.threads_per_group[0],
            d.threads_per_group[1],
            d.threads_per_group[2]
        );
        if let Some(a) = d.indirect_args {
            let _ = write!(line, " args={a:#x}");
        }
        if d.program.address != 0 {
            let _ = write!(line, " cs={:#x}", d.program.address);
            if let Some(c) = &d.program.container {
                let _ = write!(line, "[{}]", c.shader_type().name());
            }
        }
        self.lines.push(line);
    }

    fn event(&mut self, e: &Event) {
        if !self.accepts() {
            return;
        }
        let kind = EventName(e.event_type);
        self.lines.push(format!("{} event type={kind} index={}", e.queue, e.event_index));
    }

    fn cache_action(&mut self, queue: QueueId, action: &CacheAction) {
        if !self.accepts() {
            return;
        }
        self.lines.push(format!("{queue} cache {action}"));
    }

    fn fence(&mut self, f: &Fence) {
        self.fences += 1;
        if !self.accepts() {
            return;
        }
        self.lines.push(format!(
            "{} fence {} event={} addr={:#x} data={:#x} data_sel={} int_sel={} ctxid={:#x} interrupt={}",
            f.queue,
            f.opcode,
            EventName(f.event_type),
            f.address,
            f.data,
            f.data_sel,
            f.int_sel,
            f.int_ctxid,
            f.interrupt
        ));
    }

    fn flip(&mut self, f: &Flip) {
        if !self.accepts() {
            return;
        }
        let mut line = format!("{} flip kind={:#x}", f.queue, f.kind);
        if let Some((a, v)) = f.label {
            let _ = write!(line, " label={a:#x}={v:#x}");
        }
        self.lines.push(line);
    }

    fn marker(&mut self, queue: QueueId, m: &Marker<'_>) {
        if !self.accepts() {
            return;
        }
        self.lines.push(format!("{queue} marker {m}"));
    }

    fn host_command(&mut self, queue: QueueId, code: u32, payload: &[u32]) {
        if !self.accepts() {
            return;
        }
        let mut line = format!("{queue} host_command code={code:#x} payload=");
        if payload.is_empty() {
            line.push_str("none");
        }
        for (i, w) in payload.iter().enumerate() {
            let _ = write!(line, "{}{w:#x}", if i == 0 { "" } else { "," });
        }
        self.lines.push(line);
    }

    fn not_emulated(&mut self, p: &NotEmulated) {
        if !self.accepts() {
            return;
        }
        self.lines.push(format!("{} not_emulated {} at {:#x}", p.queue, p.opcode, p.location.address()));
    }

    fn sample_event(
        &mut self,
        queue: QueueId,
        kind: SampleKind,
        address: u64,
        render_backends: u32,
        memory: &dyn GuestMemory,
    ) -> Result<(), MemoryError> {
        if self.accepts() {
            self.lines.push(format!("{queue} sample {kind} at {address:#x}"));
        }
        write_default_sample(kind, address, render_backends, memory)
    }

    fn unknown_packet(&mut self, r: &UnknownPacket) {
        if !self.accepts() {
            return;
        }
        self.lines.push(format!("{} unknown_packet header={:#010x} at {:#x}", QueueId(r.queue), r.header, r.address));
        self.unknown.push(r.clone());
    }

    fn skipped_indirect_buffer(&mut self, queue: QueueId, location: &PacketLocation, address: u64, size_dw: u32) {
        if !self.accepts() {
            return;
        }
        self.lines
            .push(format!("{queue} skipped_ib addr={address:#x} size_dw={size_dw} packet={:#x}", location.address()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::FlatMemory;

    /// Drops every call (a log that is full), noting what it saw.
    struct Dropping {
        seen: Vec<Option<QueueId>>,
    }

    impl Forward for Dropping {
        type Target = RecordingBackend;
        fn forward<R>(&mut self, _queue: QueueId, _call: impl FnOnce(&mut RecordingBackend) -> R) -> Option<R> {
            None
        }
        fn forwarded(&mut self, call: Call<'_>) {
            self.seen.push(call.queue());
        }
    }

    #[test]
    fn a_dropped_call_has_the_default_effect_and_is_still_seen() {
        let memory = FlatMemory::new(0, 0x1000).unwrap();
        let mut backend = Dropping { seen: Vec::new() };
        let queue = QueueId(5);
        backend.sample_event(queue, SampleKind::StreamoutStats(1), 0x100, 4, &memory).unwrap();
        assert_eq!(memory.read_u64(0x100).unwrap(), 1 << 63);
        assert_eq!(memory.read_u64(0x108).unwrap(), 1 << 63);
        assert_eq!(backend.gpu_clock(), None);
        backend.host_command(queue, 0x42, &[1, 2]);
        assert_eq!(backend.seen, [Some(queue), None, Some(queue)]);
    }

    #[test]
    fn a_forwarded_call_reaches_the_target_with_its_arguments() {
        struct Through(RecordingBackend);
        impl Forward for Through {
            type Target = RecordingBackend;
            fn forward<R>(&mut self, _queue: QueueId, call: impl FnOnce(&mut RecordingBackend) -> R) -> Option<R> {
                Some(call(&mut self.0))
            }
        }
        let mut backend = Through(RecordingBackend::new());
        let mut direct = RecordingBackend::new();
        let location = PacketLocation::default();
        for b in [&mut backend as &mut dyn Backend, &mut direct] {
            b.marker(QueueId(1), &Marker::Push("frame"));
            b.skipped_indirect_buffer(QueueId(2), &location, 0x4000, 16);
            b.host_command(QueueId(3), 7, &[9]);
        }
        assert!(!direct.lines.is_empty());
        assert_eq!(backend.0.lines, direct.lines);
    }
}
