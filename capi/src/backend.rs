//! The backend from C: a struct of callbacks (`pm4_backend`), each effect
//! handed over as a C struct, and the trampolines that make such a struct a
//! `pm4core` backend.

use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pm4core::backend::{
    Backend, CacheAction, Dispatch, Draw, Event, Fence, Flip, Marker, NotEmulated, QueueId, UnknownPacket,
};
use pm4core::packet::private::PrivatePacket;
use pm4core::packet::{Header, PacketLocation};

use crate::registers::{pm4_registers, CallbackRegisters};

/// Where a packet sits: the command buffer holding it and its offset.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct pm4_packet_location {
    /// GPU address of the header dword.
    pub address: u64,
    /// GPU address of the first dword of the buffer (IB) holding it.
    pub buffer: u64,
    /// Size of that buffer in dwords.
    pub buffer_size_dw: u32,
    /// Dword offset of the header in the buffer.
    pub offset_dw: u32,
}

impl From<&PacketLocation> for pm4_packet_location {
    #[inline]
    fn from(l: &PacketLocation) -> Self {
        pm4_packet_location {
            address: l.address(),
            buffer: l.buffer,
            buffer_size_dw: l.buffer_size_dw,
            offset_dw: l.offset_dw,
        }
    }
}

/// The index buffer of an indexed draw.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct pm4_index_buffer {
    /// Address of the first index the draw fetches.
    pub address: u64,
    /// VGT_INDEX_TYPE: 0 = 16-bit, 1 = 32-bit, 2 = 8-bit.
    pub index_type: u32,
    /// Size of one index in bytes (2, 4 or 1).
    pub index_size: u32,
    /// Indices available from `address` on.
    pub max_indices: u32,
}

/// One draw (one sub-draw of a multi-draw packet).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_draw {
    /// The queue (0 = graphics).
    pub queue: u32,
    /// The draw packet's opcode (`pm4_opcode_name` names it).
    pub opcode: u32,
    pub location: pm4_packet_location,
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
    /// Nonzero when `index_buffer` is set (an indexed draw).
    pub has_index_buffer: u8,
    /// Nonzero when `indirect_args` is set (an indirect draw).
    pub has_indirect_args: u8,
    /// Nonzero when `mesh_groups` is set (a mesh dispatch).
    pub has_mesh_groups: u8,
    pub index_buffer: pm4_index_buffer,
    pub primitive_type: u32,
    pub draw_initiator: u32,
    /// Address of the indirect argument record.
    pub indirect_args: u64,
    /// Mesh thread-group counts X, Y, Z.
    pub mesh_groups: [u32; 3],
    /// State groups written since the queue's previous draw (bit set).
    pub changed: u32,
    /// Code addresses of the programs bound to PS, VS, ES and LS (the
    /// `PM4_STAGE_*` order; 0 = none).
    pub programs: [u64; 4],
    /// The queue's registers at the draw, readable with `pm4_registers_*`
    /// during this callback only.
    pub registers: *const pm4_registers,
}

/// One compute dispatch.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_dispatch {
    pub queue: u32,
    pub opcode: u32,
    pub location: pm4_packet_location,
    /// Thread-group counts (end coordinates when `start` is not zero).
    pub dims: [u32; 3],
    pub start: [u32; 3],
    pub threads_per_group: [u32; 3],
    pub initiator: u32,
    /// Nonzero when `indirect_args` is set.
    pub has_indirect_args: u8,
    pub indirect_args: u64,
    /// Code address of the bound compute program (0 = none).
    pub program: u64,
    /// The queue's registers at the dispatch, readable with
    /// `pm4_registers_*` during this callback only.
    pub registers: *const pm4_registers,
}

/// A non-sampling event (EVENT_WRITE of a flush or control event).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_event {
    pub queue: u32,
    pub event_type: u32,
    pub event_index: u32,
    pub location: pm4_packet_location,
}

/// `pm4_cache_action.kind`: ACQUIRE_MEM.
pub const PM4_CACHE_ACQUIRE_MEM: u32 = 0;
/// `pm4_cache_action.kind`: SURFACE_SYNC (gfx7).
pub const PM4_CACHE_SURFACE_SYNC: u32 = 1;
/// `pm4_cache_action.kind`: the cache bits of a release.
pub const PM4_CACHE_RELEASE: u32 = 2;

/// A cache or synchronisation action.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_cache_action {
    pub queue: u32,
    /// `PM4_CACHE_ACQUIRE_MEM`, `PM4_CACHE_SURFACE_SYNC` or `PM4_CACHE_RELEASE`.
    pub kind: u32,
    /// Range in bytes (`size` = UINT64_MAX: everything); acquire and surface sync.
    pub base: u64,
    pub size: u64,
    pub coher_cntl: u32,
    /// ACQUIRE_MEM's GCR_CNTL.
    pub gcr_cntl: u32,
    /// A release's cache-control bits.
    pub cache_control: u32,
}

/// A fence: a release that retired (data written and/or interrupt raised).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_fence {
    pub queue: u32,
    pub opcode: u32,
    pub event_type: u32,
    pub data_sel: u32,
    pub address: u64,
    /// The data written (0 when DATA_SEL wrote nothing).
    pub data: u64,
    pub int_sel: u32,
    pub int_ctxid: u32,
    /// Nonzero when the release raises an interrupt the host should see.
    pub interrupt: u8,
}

impl From<&Fence> for pm4_fence {
    fn from(f: &Fence) -> Self {
        pm4_fence {
            queue: f.queue.0,
            opcode: u32::from(f.opcode.0),
            event_type: f.event_type,
            data_sel: f.data_sel,
            address: f.address,
            data: f.data,
            int_sel: f.int_sel,
            int_ctxid: f.int_ctxid,
            interrupt: u8::from(f.interrupt),
        }
    }
}

/// A flip request.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_flip {
    pub queue: u32,
    /// The marker id (0x777, 0x778, … of the 0x6875 convention, or the
    /// host-command code).
    pub kind: u32,
    /// Nonzero when the flip carries a label to write.
    pub has_label: u8,
    pub label_address: u64,
    pub label_value: u64,
    pub location: pm4_packet_location,
}

/// `pm4_marker.kind`: push a debug marker (`text`).
pub const PM4_MARKER_PUSH: u32 = 0;
/// `pm4_marker.kind`: pop a debug marker.
pub const PM4_MARKER_POP: u32 = 1;
/// `pm4_marker.kind`: set a debug marker (`text`).
pub const PM4_MARKER_SET: u32 = 2;
/// `pm4_marker.kind`: a driver trace point (`id`).
pub const PM4_MARKER_TRACE_POINT: u32 = 3;
/// `pm4_marker.kind`: a comment packet's text (`text`).
pub const PM4_MARKER_COMMENT: u32 = 4;
/// `pm4_marker.kind`: a hint marker (`id`).
pub const PM4_MARKER_HINT: u32 = 5;

/// A debug marker or trace point.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_marker {
    pub queue: u32,
    /// One of `PM4_MARKER_*`.
    pub kind: u32,
    /// The marker's text (UTF-8, NOT NUL-terminated: print it with
    /// `"%.*s", (int)text_len, text`); NULL with `text_len` 0 when none.
    pub text: *const c_char,
    pub text_len: usize,
    /// The trace-point or hint id.
    pub id: u32,
}

/// A NOP carrying a registered host-command code.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_host_command {
    pub queue: u32,
    pub code: u32,
    /// The payload after the code dword (valid during the callback).
    pub payload: *const u32,
    pub payload_dw: usize,
}

/// A packet an embedder-private classifier matched (see
/// `pm4_private_packet_class`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_private_packet {
    pub queue: u32,
    /// The matching entry's code.
    pub code: u32,
    /// The matching entry's name (UTF-8, not NUL-terminated).
    pub name: *const c_char,
    pub name_len: usize,
    /// The packet's header dword.
    pub header: u32,
    /// The body dwords after the header (valid during the callback).
    pub payload: *const u32,
    pub payload_dw: usize,
    pub location: pm4_packet_location,
}

/// A packet with a known opcode that pm4core decodes but does not emulate.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_not_emulated {
    pub queue: u32,
    pub opcode: u32,
    pub location: pm4_packet_location,
}

/// A packet the processor does not know, with its surroundings.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_unknown_packet {
    pub queue: u32,
    pub header: u32,
    /// Address of the header.
    pub address: u64,
    pub opcode: u32,
    pub length_dw: u32,
    /// Hex dump: up to 16 dwords before and after the header, one line
    /// each, the header's line marked with `>` (UTF-8, not NUL-terminated).
    pub dump: *const c_char,
    pub dump_len: usize,
}

/// An indirect buffer whose memory is not mapped, skipped because
/// `pm4_gpu_config.skip_unmapped_ibs` is on.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_skipped_ib {
    pub queue: u32,
    /// The INDIRECT_BUFFER packet.
    pub location: pm4_packet_location,
    /// The buffer it names.
    pub address: u64,
    pub size_dw: u32,
}

/// A backend: what the GPU calls for each effect of a queue's packets. A
/// NULL entry is the default (nothing; no clock; no own backend). Every
/// callback takes `user_data` first.
///
/// Threads: a queue's calls come in its packet order, on the GPU worker
/// running the queue (threaded mode) or on the thread driving the GPU
/// (deterministic mode). With `queue_backend` NULL (or answering 0), every
/// queue's calls go to this one backend, never two at once (one lock). A
/// backend that gives each queue its own (`queue_backend` fills `*out` and
/// returns nonzero) has each queue's calls go to that queue's backend with
/// no lock: queues on different workers call their backends in parallel.
///
/// A callback may call back into its GPU (submit, write memory, notify,
/// read counters, shut down): what would wait for the calling slice itself
/// answers `PM4_STATUS_CALLED_FROM_CALLBACK` (see each function's
/// "Threads" line). A callback must not let a C++ exception (or a longjmp)
/// leave it: catch everything inside.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_backend {
    /// Passed first to every callback.
    pub user_data: *mut c_void,
    pub draw: Option<unsafe extern "C" fn(user_data: *mut c_void, draw: *const pm4_draw)>,
    pub dispatch: Option<unsafe extern "C" fn(user_data: *mut c_void, dispatch: *const pm4_dispatch)>,
    pub event: Option<unsafe extern "C" fn(user_data: *mut c_void, event: *const pm4_event)>,
    pub cache_action: Option<unsafe extern "C" fn(user_data: *mut c_void, action: *const pm4_cache_action)>,
    /// A release that retired (RELEASE_MEM, EVENT_WRITE_EOP/EOS).
    pub fence: Option<unsafe extern "C" fn(user_data: *mut c_void, fence: *const pm4_fence)>,
    pub flip: Option<unsafe extern "C" fn(user_data: *mut c_void, flip: *const pm4_flip)>,
    pub marker: Option<unsafe extern "C" fn(user_data: *mut c_void, marker: *const pm4_marker)>,
    /// A NOP with a host-command code registered in
    /// `pm4_gpu_config.host_commands` as `PM4_HOST_COMMAND_CUSTOM`.
    pub host_command: Option<unsafe extern "C" fn(user_data: *mut c_void, command: *const pm4_host_command)>,
    /// A packet the config's private-packet classifier matched. NULL: it
    /// goes to `host_command` with the entry's code and the payload.
    pub private_packet: Option<unsafe extern "C" fn(user_data: *mut c_void, packet: *const pm4_private_packet)>,
    pub not_emulated: Option<unsafe extern "C" fn(user_data: *mut c_void, packet: *const pm4_not_emulated)>,
    /// A packet pm4core does not know, with its hex dump.
    pub unknown_packet: Option<unsafe extern "C" fn(user_data: *mut c_void, packet: *const pm4_unknown_packet)>,
    pub skipped_indirect_buffer: Option<unsafe extern "C" fn(user_data: *mut c_void, ib: *const pm4_skipped_ib)>,
    /// Every packet decoded, when `pm4_gpu_config.report_packets` is on.
    pub packet: Option<
        unsafe extern "C" fn(user_data: *mut c_void, queue: u32, header: u32, location: *const pm4_packet_location),
    >,
    /// The GPU clock for timestamps: write it to `*clock` and return
    /// nonzero, or return 0 for the processor's own deterministic counter.
    pub gpu_clock: Option<unsafe extern "C" fn(user_data: *mut c_void, clock: *mut u64) -> u8>,
    /// Asked once per queue at its first slice: fill `*out` with that
    /// queue's own backend and return nonzero, or return 0 to have the
    /// queue's calls come to this backend. `*out` starts zeroed. The
    /// filled backend's own `queue_backend` is not used.
    pub queue_backend: Option<unsafe extern "C" fn(user_data: *mut c_void, queue: u32, out: *mut pm4_backend) -> u8>,
    /// Called once when the GPU no longer uses this backend (when the GPU
    /// goes; for a queue's own backend, likewise). Not called when
    /// `pm4_gpu_new` fails: the backend then stays the caller's.
    pub release: Option<unsafe extern "C" fn(user_data: *mut c_void)>,
}

/// A backend with no callbacks (for Rust callers of the C ABI).
impl Default for pm4_backend {
    fn default() -> Self {
        pm4_backend::EMPTY
    }
}

impl pm4_backend {
    /// A backend with no callbacks.
    pub(crate) const EMPTY: pm4_backend = pm4_backend {
        user_data: std::ptr::null_mut(),
        draw: None,
        dispatch: None,
        event: None,
        cache_action: None,
        fence: None,
        flip: None,
        marker: None,
        host_command: None,
        private_packet: None,
        not_emulated: None,
        unknown_packet: None,
        skipped_indirect_buffer: None,
        packet: None,
        gpu_clock: None,
        queue_backend: None,
        release: None,
    };

    fn is_empty(&self) -> bool {
        self.draw.is_none()
            && self.dispatch.is_none()
            && self.event.is_none()
            && self.cache_action.is_none()
            && self.fence.is_none()
            && self.flip.is_none()
            && self.marker.is_none()
            && self.host_command.is_none()
            && self.private_packet.is_none()
            && self.not_emulated.is_none()
            && self.unknown_packet.is_none()
            && self.skipped_indirect_buffer.is_none()
            && self.packet.is_none()
            && self.gpu_clock.is_none()
            && self.queue_backend.is_none()
    }
}

/// A `pm4_backend` as a pm4core backend: each method builds the C struct
/// on the stack and calls the callback.
pub(crate) struct CBackend {
    table: pm4_backend,
    /// Whether dropping it calls `release`: not until the GPU that takes
    /// it exists (a `pm4_gpu_new` that fails leaves the table the caller's).
    armed: Arc<AtomicBool>,
}

// SAFETY: `pm4_gpu_new`'s contract: the callbacks may be called from the
// GPU's worker threads (one at a time for a shared backend, as the GPU
// guarantees), and `user_data` is only passed to them.
unsafe impl Send for CBackend {}

impl CBackend {
    /// A queue's own backend: released when the queue's processor goes.
    pub(crate) fn new(table: pm4_backend) -> Self {
        CBackend { table, armed: Arc::new(AtomicBool::new(true)) }
    }

    /// The GPU's backend, released only once `arm`'s flag is set.
    pub(crate) fn unarmed(table: pm4_backend) -> (Self, Arc<AtomicBool>) {
        let armed = Arc::new(AtomicBool::new(false));
        (CBackend { table, armed: Arc::clone(&armed) }, armed)
    }
}

impl Drop for CBackend {
    fn drop(&mut self) {
        if !self.armed.load(Ordering::Acquire) {
            return;
        }
        if let Some(release) = self.table.release {
            // SAFETY: the contract of `pm4_backend.release`: called once,
            // when the GPU no longer uses the backend.
            unsafe { release(self.table.user_data) }
        }
    }
}

thread_local! {
    /// How many GPU callbacks (backend or memory) this thread is inside.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Marks the thread as inside a callback until dropped.
pub(crate) struct InCallback(());

impl InCallback {
    #[inline]
    pub(crate) fn enter() -> Self {
        DEPTH.with(|d| d.set(d.get() + 1));
        InCallback(())
    }
}

impl Drop for InCallback {
    #[inline]
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// True inside a backend or memory callback on this thread.
pub(crate) fn in_callback() -> bool {
    DEPTH.with(Cell::get) > 0
}

/// `Some(x)` as a flag and a value.
#[inline]
fn split<T: Default>(value: Option<T>) -> (u8, T) {
    match value {
        Some(v) => (1, v),
        None => (0, T::default()),
    }
}

/// A text as the pointer and length a C struct carries.
#[inline]
fn text(s: &str) -> (*const c_char, usize) {
    if s.is_empty() {
        (std::ptr::null(), 0)
    } else {
        (s.as_ptr().cast(), s.len())
    }
}

impl Backend for CBackend {
    fn packet(&mut self, queue: QueueId, header: Header, location: &PacketLocation) {
        if let Some(f) = self.table.packet {
            let location = pm4_packet_location::from(location);
            let _in = InCallback::enter();
            // SAFETY: the callback's contract; `location` lives for the call.
            unsafe { f(self.table.user_data, queue.0, header.0, &location) }
        }
    }

    #[inline]
    fn draw(&mut self, d: &Draw<'_>) {
        let Some(f) = self.table.draw else { return };
        let registers = CallbackRegisters::new(d.registers);
        let (has_index_buffer, index_buffer) = split(d.index_buffer.map(|ib| pm4_index_buffer {
            address: ib.address,
            index_type: ib.index_type,
            index_size: ib.index_size(),
            max_indices: ib.max_indices,
        }));
        let (has_indirect_args, indirect_args) = split(d.indirect_args);
        let (has_mesh_groups, mesh_groups) = split(d.mesh_groups);
        let draw = pm4_draw {
            queue: d.queue.0,
            opcode: u32::from(d.opcode.0),
            location: pm4_packet_location::from(&d.location),
            count: d.count,
            instance_count: d.instance_count,
            first: d.first,
            base_vertex: d.base_vertex,
            first_instance: d.first_instance,
            draw_index: d.draw_index,
            has_index_buffer,
            has_indirect_args,
            has_mesh_groups,
            index_buffer,
            primitive_type: d.primitive_type,
            draw_initiator: d.draw_initiator,
            indirect_args,
            mesh_groups,
            changed: d.changed,
            programs: [d.programs[0].address, d.programs[1].address, d.programs[2].address, d.programs[3].address],
            registers: registers.as_ptr(),
        };
        let _in = InCallback::enter();
        // SAFETY: the callback's contract; `draw` and the registers it
        // points to live (and are marked live for this thread) for the call.
        registers.during(|| unsafe { f(self.table.user_data, &draw) });
    }

    fn dispatch(&mut self, d: &Dispatch<'_>) {
        let Some(f) = self.table.dispatch else { return };
        let registers = CallbackRegisters::new(d.registers);
        let (has_indirect_args, indirect_args) = split(d.indirect_args);
        let dispatch = pm4_dispatch {
            queue: d.queue.0,
            opcode: u32::from(d.opcode.0),
            location: pm4_packet_location::from(&d.location),
            dims: d.dims,
            start: d.start,
            threads_per_group: d.threads_per_group,
            initiator: d.initiator,
            has_indirect_args,
            indirect_args,
            program: d.program.address,
            registers: registers.as_ptr(),
        };
        let _in = InCallback::enter();
        // SAFETY: as for `draw`.
        registers.during(|| unsafe { f(self.table.user_data, &dispatch) });
    }

    fn event(&mut self, e: &Event) {
        if let Some(f) = self.table.event {
            let event = pm4_event {
                queue: e.queue.0,
                event_type: e.event_type,
                event_index: e.event_index,
                location: pm4_packet_location::from(&e.location),
            };
            let _in = InCallback::enter();
            // SAFETY: the callback's contract; `event` lives for the call.
            unsafe { f(self.table.user_data, &event) }
        }
    }

    fn cache_action(&mut self, queue: QueueId, action: &CacheAction) {
        if let Some(f) = self.table.cache_action {
            let mut c = pm4_cache_action {
                queue: queue.0,
                kind: PM4_CACHE_ACQUIRE_MEM,
                base: 0,
                size: 0,
                coher_cntl: 0,
                gcr_cntl: 0,
                cache_control: 0,
            };
            match *action {
                CacheAction::AcquireMem { base, size, coher_cntl, gcr_cntl } => {
                    (c.base, c.size, c.coher_cntl, c.gcr_cntl) = (base, size, coher_cntl, gcr_cntl);
                }
                CacheAction::SurfaceSync { base, size, coher_cntl } => {
                    (c.kind, c.base, c.size, c.coher_cntl) = (PM4_CACHE_SURFACE_SYNC, base, size, coher_cntl);
                }
                CacheAction::Release { cache_control } => {
                    (c.kind, c.cache_control) = (PM4_CACHE_RELEASE, cache_control)
                }
            }
            let _in = InCallback::enter();
            // SAFETY: the callback's contract; `c` lives for the call.
            unsafe { f(self.table.user_data, &c) }
        }
    }

    fn fence(&mut self, fence: &Fence) {
        if let Some(f) = self.table.fence {
            let fence = pm4_fence::from(fence);
            let _in = InCallback::enter();
            // SAFETY: the callback's contract; `fence` lives for the call.
            unsafe { f(self.table.user_data, &fence) }
        }
    }

    fn flip(&mut self, flip: &Flip) {
        if let Some(f) = self.table.flip {
            let (has_label, (label_address, label_value)) = split(flip.label);
            let flip = pm4_flip {
                queue: flip.queue.0,
                kind: flip.kind,
                has_label,
                label_address,
                label_value,
                location: pm4_packet_location::from(&flip.location),
            };
            let _in = InCallback::enter();
            // SAFETY: the callback's contract; `flip` lives for the call.
            unsafe { f(self.table.user_data, &flip) }
        }
    }

    fn marker(&mut self, queue: QueueId, marker: &Marker<'_>) {
        if let Some(f) = self.table.marker {
            let (kind, body, id) = match *marker {
                Marker::Push(t) => (PM4_MARKER_PUSH, t, 0),
                Marker::Pop => (PM4_MARKER_POP, "", 0),
                Marker::Set(t) => (PM4_MARKER_SET, t, 0),
                Marker::TracePoint(id) => (PM4_MARKER_TRACE_POINT, "", id),
                Marker::Comment(t) => (PM4_MARKER_COMMENT, t, 0),
                Marker::Hint(id) => (PM4_MARKER_HINT, "", id),
            };
            let (text, text_len) = text(body);
            let marker = pm4_marker { queue: queue.0, kind, text, text_len, id };
            let _in = InCallback::enter();
            // SAFETY: the callback's contract; `marker` and its text live
            // for the call.
            unsafe { f(self.table.user_data, &marker) }
        }
    }

    fn host_command(&mut self, queue: QueueId, code: u32, payload: &[u32]) {
        if let Some(f) = self.table.host_command {
            let command = pm4_host_command {
                queue: queue.0,
                code,
                payload: if payload.is_empty() { std::ptr::null() } else { payload.as_ptr() },
                payload_dw: payload.len(),
            };
            let _in = InCallback::enter();
            // SAFETY: the callback's contract; `command` and the payload
            // live for the call.
            unsafe { f(self.table.user_data, &command) }
        }
    }

    fn private_packet(&mut self, packet: &PrivatePacket<'_>) {
        let Some(f) = self.table.private_packet else {
            self.host_command(packet.queue, packet.code, packet.payload);
            return;
        };
        let private = pm4_private_packet {
            queue: packet.queue.0,
            code: packet.code,
            name: packet.name.as_ptr().cast(),
            name_len: packet.name.len(),
            header: packet.header.0,
            payload: if packet.payload.is_empty() { std::ptr::null() } else { packet.payload.as_ptr() },
            payload_dw: packet.payload.len(),
            location: pm4_packet_location::from(&packet.location),
        };
        let _in = InCallback::enter();
        // SAFETY: the callback's contract; `private`, the name and the
        // payload live for the call.
        unsafe { f(self.table.user_data, &private) }
    }

    fn not_emulated(&mut self, packet: &NotEmulated) {
        if let Some(f) = self.table.not_emulated {
            let packet = pm4_not_emulated {
                queue: packet.queue.0,
                opcode: u32::from(packet.opcode.0),
                location: pm4_packet_location::from(&packet.location),
            };
            let _in = InCallback::enter();
            // SAFETY: the callback's contract; `packet` lives for the call.
            unsafe { f(self.table.user_data, &packet) }
        }
    }

    fn unknown_packet(&mut self, report: &UnknownPacket) {
        if let Some(f) = self.table.unknown_packet {
            let (dump, dump_len) = text(&report.dump);
            let packet = pm4_unknown_packet {
                queue: report.queue,
                header: report.header,
                address: report.address,
                opcode: u32::from(report.opcode),
                length_dw: report.length_dw,
                dump,
                dump_len,
            };
            let _in = InCallback::enter();
            // SAFETY: the callback's contract; `packet` and the dump live
            // for the call.
            unsafe { f(self.table.user_data, &packet) }
        }
    }

    fn skipped_indirect_buffer(&mut self, queue: QueueId, location: &PacketLocation, address: u64, size_dw: u32) {
        if let Some(f) = self.table.skipped_indirect_buffer {
            let ib = pm4_skipped_ib { queue: queue.0, location: pm4_packet_location::from(location), address, size_dw };
            let _in = InCallback::enter();
            // SAFETY: the callback's contract; `ib` lives for the call.
            unsafe { f(self.table.user_data, &ib) }
        }
    }

    fn gpu_clock(&mut self) -> Option<u64> {
        let f = self.table.gpu_clock?;
        let mut clock = 0u64;
        let _in = InCallback::enter();
        // SAFETY: the callback's contract; `clock` is a valid `u64`.
        let given = unsafe { f(self.table.user_data, &mut clock) };
        (given != 0).then_some(clock)
    }

    fn queue_backend(&mut self, queue: QueueId) -> Option<Box<dyn Backend + Send>> {
        match self.table.queue_backend {
            Some(f) => {
                let mut out = pm4_backend::EMPTY;
                let _in = InCallback::enter();
                // SAFETY: the callback's contract; `out` is a valid,
                // zeroed backend it may fill.
                let own = unsafe { f(self.table.user_data, queue.0, &mut out) };
                if own == 0 {
                    // Nothing taken: a filled `release` is not ours to call.
                    return None;
                }
                out.queue_backend = None;
                Some(Box::new(CBackend::new(out)))
            }
            // No callbacks at all: each queue its own empty backend, no lock.
            None if self.table.is_empty() => Some(Box::new(CBackend::new(pm4_backend::EMPTY))),
            None => None,
        }
    }
}
