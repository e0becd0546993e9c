//! What a packet handler works with ([`Ctx`]) and what it answers
//! ([`Step`]).
//!
//! A handler gets the processor state, guest memory (watched, so a write
//! into the dwords the loop holds is noticed), the backend, the shader
//! registry, and the packet's place and header. It does not get the IB
//! stack, the cursor, predication or the loop's counts: a handler that
//! calls, chains or skips says so in its [`Step`] and the loop applies it;
//! so does one that changes predication; a wait suspends through
//! [`Ctx::suspend`], the only way to make a [`Step::Suspend`]; a multi-draw
//! charges its sub-draws through [`Ctx::charge`]. What a handler cannot
//! touch, it cannot change behind the loop's back.

use std::sync::atomic::{AtomicU8, Ordering};

use crate::backend::Backend;
use crate::memory::{GuestMemory, MemoryError, ObservedMemory, WriteObserver};
use crate::packet::body::{Body, BodyError};
use crate::packet::{Header, Opcode, Packet, PacketLocation};
use crate::processor::execution::Predication;
use crate::processor::register_store;
use crate::processor::{Engine, GdsError, Pm4Error, ProcessorState, SuspendReason};
use crate::shader::ShaderRegistry;

/// What the loop does after a handler: go on, or what the handler asks of
/// the stream. The details of a request are in the context, where the one
/// method that makes each request noted them (the [`Request`] proof can be
/// made nowhere else). A word with no fields of its own, so that a
/// handler's `Result<Step, Box<_>>` is two words and comes back in two
/// registers (a byte-sized `Step` would sit beside the result's own tag,
/// and the result would go through memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub(crate) enum Step {
    /// Go on with the next packet.
    Next,
    /// Stop here; the packet runs again on resume ([`Ctx::suspend`], which
    /// notes why).
    Suspend(Request),
    /// Go on, but let the constant engine run first.
    RunConstantEngine,
    /// Move the cursor ([`Ctx::call`], [`Ctx::chain`], [`Ctx::skip`]).
    Move(Request),
    /// Predication changes ([`Ctx::predicate`]).
    Predicate(Request),
}

/// The proof that a [`Step`] that asks something of the loop came from the
/// context's method for it (its field is private to this module).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Request(());

/// A move of the cursor a handler asked for ([`Step::Move`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Move {
    /// Call the buffer of `size_dw` dwords at `address` (INDIRECT_BUFFER):
    /// the stream returns past this packet when it ends.
    Call { address: u64, size_dw: u32 },
    /// Jump to the buffer (INDIRECT_BUFFER with CHAIN): the current one is
    /// left for good.
    Chain { address: u64, size_dw: u32 },
    /// Skip the next `dwords` dwords unparsed (COND_EXEC, PRED_EXEC).
    Skip { dwords: u32 },
}

/// What a handler returns: the loop's next step, or the error that stops
/// the stream. The error is boxed so that the common outcome comes back in
/// registers; an error ends the stream (or, the one-dword form of a packet
/// that needs a body, is reported and passed), so its allocation is never
/// per packet of a well-formed stream.
pub(crate) type HandlerResult = Result<Step, Box<Pm4Error>>;

/// A packet handler: the one signature of every entry of the opcode
/// tables (`processor::opcodes`). `body` is the packet's body, every dword
/// after the header (empty for the one-dword form).
pub(crate) type Handler = for<'a, 'b, 'c> fn(&'a mut Ctx<'b>, &'c [u32]) -> HandlerResult;

/// [`WindowWatch::attention`] bit: a write hit the window.
const WINDOW_WRITTEN: u8 = 1;
/// [`WindowWatch::attention`] bit: the handler charged sub-packets.
const CHARGED: u8 = 2;

/// Notes whether a write hit the prefetch window `[start, end)`, and
/// anything else the loop must look at after a handler.
pub(crate) struct WindowWatch {
    window: (u64, u64),
    /// [`WINDOW_WRITTEN`] | [`CHARGED`]: zero after almost every handler,
    /// so the loop's one check after a call is one load. Per view, on the
    /// processor's thread; atomic only so that the watched memory is `Sync`
    /// like every [`GuestMemory`] (a relaxed load or store is a plain move).
    attention: AtomicU8,
}

impl WindowWatch {
    #[inline]
    fn note(&self, bit: u8) {
        let bits = self.attention.load(Ordering::Relaxed);
        self.attention.store(bits | bit, Ordering::Relaxed);
    }
}

impl WriteObserver for WindowWatch {
    #[inline]
    fn wrote(&self, address: u64, len: u64) {
        if address < self.window.1 && address.saturating_add(len) > self.window.0 {
            self.note(WINDOW_WRITTEN);
        }
    }
}

/// Guest memory with a note of whether a write hit the prefetch window.
pub(crate) type WatchedMemory<'a> = ObservedMemory<'a, dyn GuestMemory + 'a, WindowWatch>;

impl<'a> WatchedMemory<'a> {
    /// `inner`, watched for writes into `window` (the loop's view).
    #[inline]
    pub(crate) fn new(inner: &'a dyn GuestMemory, window: (u64, u64)) -> Self {
        ObservedMemory { inner, observer: WindowWatch { window, attention: AtomicU8::new(0) } }
    }
}

/// A handler's view of the processor while the loop walks one view of a
/// buffer: built once per view, placed on each packet by the loop.
pub(crate) struct Ctx<'a> {
    pub(crate) engine: Engine,
    pub(crate) state: &'a mut ProcessorState,
    pub(crate) memory: WatchedMemory<'a>,
    pub(crate) backend: &'a mut dyn Backend,
    pub(crate) shaders: &'a ShaderRegistry,
    /// Where the view starts: its buffer, and the dword the view starts at.
    pub(super) view: PacketLocation,
    /// Where the packet being run sits: dwords from the view's start (the
    /// loop sets it).
    pub(super) at: usize,
    /// Its header.
    pub(super) header: Header,
    /// Predication as the stream has it (the loop keeps it), or as the
    /// packet asks ([`Ctx::predicate`]).
    pub(super) predication: Predication,
    /// Why the packet suspended ([`Ctx::suspend`]), for the loop.
    pub(super) suspended: Option<SuspendReason>,
    /// The move the packet asked for ([`Ctx::call`], [`Ctx::chain`],
    /// [`Ctx::skip`]), for the loop.
    pub(super) movement: Move,
    /// Sub-packets charged by the packet being run ([`Ctx::charge`]).
    pub(super) charged: u64,
    /// Sub-packets the work budget allows the packet being run: the loop
    /// keeps `charge_base` at each settling of its counts and stores its
    /// count of packets left in `left` before each call; the sum is what is
    /// left of the work budget (see `View::settle`).
    pub(super) charge_base: u64,
    pub(super) left: u64,
}

impl<'a> Ctx<'a> {
    /// A context for a view that starts at `location`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        engine: Engine,
        state: &'a mut ProcessorState,
        memory: WatchedMemory<'a>,
        backend: &'a mut dyn Backend,
        shaders: &'a ShaderRegistry,
        location: PacketLocation,
        header: Header,
        predication: Predication,
    ) -> Self {
        Ctx {
            engine,
            state,
            memory,
            backend,
            shaders,
            view: location,
            at: 0,
            header,
            predication,
            suspended: None,
            movement: Move::Skip { dwords: 0 },
            charged: 0,
            charge_base: 0,
            left: 0,
        }
    }

    /// Places the context on the packet `at` dwords into the view, with
    /// header `h` and `left` packets left to the loop, and runs `handler`
    /// on its body.
    #[inline(always)]
    pub(super) fn run(&mut self, handler: Handler, at: usize, h: u32, left: u64, body: &[u32]) -> HandlerResult {
        self.at = at;
        self.header = Header(h);
        self.left = left;
        handler(self, body)
    }

    /// Whether the last handler wrote the window or charged sub-packets
    /// (one load: the loop's one check after a call).
    #[inline(always)]
    pub(super) fn attention(&self) -> bool {
        self.memory.observer.attention.load(Ordering::Relaxed) != 0
    }

    /// Whether a write of this view hit the window.
    #[inline]
    pub(super) fn window_written(&self) -> bool {
        self.memory.observer.attention.load(Ordering::Relaxed) & WINDOW_WRITTEN != 0
    }

    /// Takes the sub-packets the last handler charged (clearing the note).
    #[inline]
    pub(super) fn take_charged(&mut self) -> u64 {
        let bits = self.memory.observer.attention.load(Ordering::Relaxed);
        self.memory.observer.attention.store(bits & !CHARGED, Ordering::Relaxed);
        std::mem::take(&mut self.charged)
    }

    /// Where the packet sits.
    #[inline]
    pub(crate) fn location(&self) -> PacketLocation {
        PacketLocation { offset_dw: self.view.offset_dw + self.at as u32, ..self.view }
    }

    /// The packet's header.
    #[inline]
    pub(crate) fn header(&self) -> Header {
        self.header
    }

    /// The packet's opcode.
    #[inline]
    pub(crate) fn opcode(&self) -> Opcode {
        self.header.opcode()
    }

    /// The packet, with `body` (for what takes a whole packet).
    #[inline]
    pub(crate) fn packet<'p>(&self, body: &'p [u32]) -> Packet<'p> {
        Packet { header: self.header, body, location: self.location() }
    }

    /// Predication as the stream has it before this packet.
    #[inline]
    pub(crate) fn predication(&self) -> Predication {
        self.predication
    }

    /// Suspends the stream at this packet for `reason`: the packet runs
    /// again on resume.
    #[inline]
    pub(crate) fn suspend(&mut self, reason: SuspendReason) -> Step {
        self.suspended = Some(reason);
        Step::Suspend(Request(()))
    }

    /// Calls the buffer of `size_dw` dwords at `address`: the loop moves
    /// the cursor past this packet (where the call returns) and pushes the
    /// buffer (an IB stack already full is an error at this packet).
    #[inline]
    pub(crate) fn call(&mut self, address: u64, size_dw: u32) -> Step {
        self.movement = Move::Call { address, size_dw };
        Step::Move(Request(()))
    }

    /// Jumps to the buffer of `size_dw` dwords at `address` (the current
    /// one is left).
    #[inline]
    pub(crate) fn chain(&mut self, address: u64, size_dw: u32) -> Step {
        self.movement = Move::Chain { address, size_dw };
        Step::Move(Request(()))
    }

    /// Skips the `dwords` dwords after this packet, unparsed (more than
    /// the buffer has is an error at this packet).
    #[inline]
    pub(crate) fn skip(&mut self, dwords: u32) -> Step {
        self.movement = Move::Skip { dwords };
        Step::Move(Request(()))
    }

    /// Predication from the next packet on.
    #[inline]
    pub(crate) fn predicate(&mut self, predication: Predication) -> Step {
        self.predication = predication;
        Step::Predicate(Request(()))
    }

    /// Charges one more sub-packet of a multi-draw to the work budget (its
    /// first counts as the packet): an error at this packet when the budget
    /// is spent.
    #[inline]
    pub(crate) fn charge(&mut self) -> Result<(), Box<Pm4Error>> {
        if self.charged >= self.charge_base.saturating_add(self.left) {
            let budget = self.state.config.work_budget;
            return Err(Box::new(Pm4Error::WorkBudgetExhausted { location: self.location(), budget }));
        }
        self.charged += 1;
        self.memory.observer.note(CHARGED);
        Ok(())
    }

    /// A memory error at this packet.
    #[inline]
    pub(crate) fn mem_err(&self, source: MemoryError) -> Pm4Error {
        Pm4Error::Memory { location: self.location(), opcode: self.opcode(), source }
    }

    /// A GDS access error at this packet.
    #[inline]
    pub(crate) fn gds_err(&self, source: GdsError) -> Pm4Error {
        Pm4Error::Gds { location: self.location(), opcode: self.opcode(), source }
    }

    /// Reads dwords of the GPU-wide GDS from byte `offset`.
    pub(crate) fn read_gds(&self, offset: u64, out: &mut [u32]) -> Result<(), Pm4Error> {
        self.state.global.read_gds(offset, out).map_err(|e| self.gds_err(e))
    }

    /// Writes dwords to the GPU-wide GDS from byte `offset`.
    pub(crate) fn write_gds(&self, offset: u64, data: &[u32]) -> Result<(), Pm4Error> {
        self.state.global.write_gds(offset, data).map_err(|e| self.gds_err(e))
    }

    /// Copies `dwords` dwords of GDS from byte `offset` to guest memory.
    pub(crate) fn copy_gds_to_memory(&mut self, offset: u64, dwords: u32, address: u64) -> Result<(), Pm4Error> {
        let mut buf = [0u32; 64];
        let mut bytes = [0u8; 256];
        let mut done = 0u32;
        while done < dwords {
            let n = (dwords - done).min(64) as usize;
            let chunk = &mut buf[..n];
            self.read_gds(offset + u64::from(done) * 4, chunk)?;
            for (slot, value) in bytes.chunks_exact_mut(4).zip(chunk.iter()) {
                slot.copy_from_slice(&value.to_le_bytes());
            }
            let r = self.memory.write_bytes(address.wrapping_add(u64::from(done) * 4), &bytes[..n * 4]);
            r.map_err(|e| self.mem_err(e))?;
            done += n as u32;
        }
        Ok(())
    }

    /// The packet's typed body; a body too short for its layout is an
    /// error at this packet.
    #[inline]
    pub(crate) fn decode<'p, B: Body<'p>>(&self, body: &'p [u32]) -> Result<B, Pm4Error> {
        B::decode_body(self.opcode(), body).map_err(|e| self.body_err(e))
    }

    /// A malformed body at this packet.
    #[inline]
    pub(crate) fn body_err(&self, source: BodyError) -> Pm4Error {
        Pm4Error::MalformedPacket { location: self.location(), source }
    }

    pub(crate) fn read_u32(&self, address: u64) -> Result<u32, Pm4Error> {
        self.memory.read_u32(address).map_err(|e| self.mem_err(e))
    }

    pub(crate) fn read_u64(&self, address: u64) -> Result<u64, Pm4Error> {
        self.memory.read_u64(address).map_err(|e| self.mem_err(e))
    }

    pub(crate) fn write_u32(&mut self, address: u64, value: u32) -> Result<(), Pm4Error> {
        let r = self.memory.write_u32(address, value);
        r.map_err(|e| self.mem_err(e))
    }

    pub(crate) fn write_u64(&mut self, address: u64, value: u64) -> Result<(), Pm4Error> {
        let r = self.memory.write_u64(address, value);
        r.map_err(|e| self.mem_err(e))
    }

    /// Writes a register: the store, then what the register's write marks.
    #[inline]
    pub(crate) fn write_register(&mut self, register: u32, value: u32) {
        register_store::write_register(self.state, register, value);
    }

    /// Reads a register as a packet sees it (UCONFIG from the GPU-wide file).
    #[inline]
    pub(crate) fn read_register(&mut self, register: u32) -> u32 {
        register_store::read_register(self.state, register)
    }

    /// [`Self::write_register`] for a register named at compile time: one
    /// that marks nothing is stored with no table lookup.
    #[inline]
    pub(crate) fn write_named_register<const REGISTER: u32>(&mut self, value: u32) {
        register_store::write_named_register::<REGISTER>(self.state, value);
    }

    /// The next timestamp: the backend's clock or the deterministic one.
    pub(crate) fn gpu_clock(&mut self) -> u64 {
        match self.backend.gpu_clock() {
            Some(t) => t,
            None => {
                self.state.clock = self.state.clock.wrapping_add(1);
                self.state.clock
            }
        }
    }
}
