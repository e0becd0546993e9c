//! What a packet handler works with: the execution, the processor state,
//! guest memory (watched, so writes to the prefetched stream are noticed),
//! the backend and the shader registry.

use std::sync::atomic::{AtomicBool, Ordering};

use super::{tables, Engine, Pm4Error, ProcessorState, SuspendReason};
use crate::backend::Backend;
use crate::memory::{GuestMemory, MemoryError, ObservedMemory, WriteObserver};
use crate::packet::body::{Body, BodyError};
use crate::packet::{Opcode, Packet, PacketLocation};
use crate::regs::space;
use crate::shader::ShaderRegistry;

use super::execution::Pm4Execution;

/// What the loop does after a handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Go on with the next packet.
    Continue,
    /// Stop here; the packet runs again on resume. Why it stopped is in
    /// the execution (`Pm4Execution::suspended`, set by [`Ctx::suspend`]).
    Suspend,
    /// Go on, but let the constant engine run first.
    RunConstantEngine,
}

/// What a handler returns: the loop's next step, or the error that stops
/// the stream. The error is boxed so that the common outcome (a [`Flow`])
/// comes back in registers rather than through a 56-byte slot in memory;
/// an error ends the stream, so its one allocation is never per packet.
pub(crate) type HandlerResult = Result<Flow, Box<Pm4Error>>;

/// Notes whether a write hit the prefetch window `[start, end)`.
pub(crate) struct WindowWatch {
    window: (u64, u64),
    /// Per packet, on the processor's thread; atomic only so that the view
    /// is `Sync` like every [`GuestMemory`] (a relaxed store is a plain move).
    touched: AtomicBool,
}

impl WindowWatch {
    /// Whether a write of `len` bytes at `address` hits the window.
    #[inline]
    fn hits(&self, address: u64, len: u64) -> bool {
        address < self.window.1 && address.saturating_add(len) > self.window.0
    }
}

impl WriteObserver for WindowWatch {
    #[inline]
    fn wrote(&self, address: u64, len: u64) {
        if self.hits(address, len) {
            self.touched.store(true, Ordering::Relaxed);
        }
    }
}

/// Guest memory with a note of whether a write hit the prefetch window.
pub(crate) type WatchedMemory<'a> = ObservedMemory<'a, dyn GuestMemory + 'a, WindowWatch>;

impl<'a> WatchedMemory<'a> {
    #[inline]
    pub(crate) fn new(inner: &'a dyn GuestMemory, window: (u64, u64)) -> Self {
        ObservedMemory { inner, observer: WindowWatch { window, touched: AtomicBool::new(false) } }
    }

    /// Starts a packet: no write has hit the window yet.
    #[inline]
    pub(crate) fn begin_packet(&self) {
        self.observer.touched.store(false, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn touched_window(&self) -> bool {
        self.observer.touched.load(Ordering::Relaxed)
    }

    /// Whether a write of `len` bytes at `address` would hit the window.
    #[inline]
    pub(crate) fn overlaps_window(&self, address: u64, len: u64) -> bool {
        self.observer.hits(address, len)
    }
}

/// A handler's view of the processor for one packet.
pub(crate) struct Ctx<'a> {
    pub engine: Engine,
    pub exec: &'a mut Pm4Execution,
    pub state: &'a mut ProcessorState,
    pub memory: WatchedMemory<'a>,
    pub backend: &'a mut dyn Backend,
    pub shaders: &'a ShaderRegistry,
    /// Where the packet being run sits.
    pub location: PacketLocation,
    pub opcode: Opcode,
}

impl Ctx<'_> {
    /// Suspends the stream at this packet for `reason`: the packet runs
    /// again on resume.
    #[inline]
    pub fn suspend(&mut self, reason: SuspendReason) -> Flow {
        self.exec.suspended = Some(reason);
        Flow::Suspend
    }

    /// A memory error at this packet.
    #[inline]
    pub fn mem_err(&self, source: MemoryError) -> Pm4Error {
        Pm4Error::Memory { location: self.location, opcode: self.opcode, source }
    }

    /// A GDS access error at this packet.
    #[inline]
    pub fn gds_err(&self, source: super::GdsError) -> Pm4Error {
        Pm4Error::Gds { location: self.location, opcode: self.opcode, source }
    }

    /// Reads dwords of the GPU-wide GDS from byte `offset`.
    pub fn read_gds(&self, offset: u64, out: &mut [u32]) -> Result<(), Pm4Error> {
        self.state.global.read_gds(offset, out).map_err(|e| self.gds_err(e))
    }

    /// Writes dwords to the GPU-wide GDS from byte `offset`.
    pub fn write_gds(&self, offset: u64, data: &[u32]) -> Result<(), Pm4Error> {
        self.state.global.write_gds(offset, data).map_err(|e| self.gds_err(e))
    }

    /// Copies `dwords` dwords of GDS from byte `offset` to guest memory.
    pub fn copy_gds_to_memory(&mut self, offset: u64, dwords: u32, address: u64) -> Result<(), Pm4Error> {
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
    pub fn decode<'p, B: Body<'p>>(&self, p: &Packet<'p>) -> Result<B, Pm4Error> {
        B::decode(p).map_err(|e| self.body_err(e))
    }

    /// A malformed body at this packet.
    #[inline]
    pub fn body_err(&self, source: BodyError) -> Pm4Error {
        Pm4Error::MalformedPacket { location: self.location, source }
    }

    pub fn read_u32(&self, address: u64) -> Result<u32, Pm4Error> {
        self.memory.read_u32(address).map_err(|e| self.mem_err(e))
    }

    pub fn read_u64(&self, address: u64) -> Result<u64, Pm4Error> {
        self.memory.read_u64(address).map_err(|e| self.mem_err(e))
    }

    pub fn write_u32(&mut self, address: u64, value: u32) -> Result<(), Pm4Error> {
        let r = self.memory.write_u32(address, value);
        r.map_err(|e| self.mem_err(e))
    }

    pub fn write_u64(&mut self, address: u64, value: u64) -> Result<(), Pm4Error> {
        let r = self.memory.write_u64(address, value);
        r.map_err(|e| self.mem_err(e))
    }

    /// Writes a register through the register tables.
    #[inline]
    pub fn write_register(&mut self, register: u32, value: u32) {
        write_register(self.state, register, value);
    }

    /// Reads a register as a packet sees it (UCONFIG from the GPU-wide file).
    #[inline]
    pub fn read_register(&mut self, register: u32) -> u32 {
        read_register(self.state, register)
    }

    /// [`Self::write_register`] for a register named at compile time: one
    /// without an action is stored with no table lookup.
    #[inline]
    pub fn write_named_register<const REGISTER: u32>(&mut self, value: u32) {
        if const { tables::has_action(REGISTER) } {
            write_register(self.state, REGISTER, value);
        } else if !self.state.regs.set(REGISTER, value) {
            outside_register_file(self.state, REGISTER);
        } else if REGISTER >= space::UCONFIG {
            // UCONFIG registers are GPU-wide.
            self.state.global.set_uconfig(REGISTER, value);
        }
    }

    /// The next timestamp: the backend's clock or the deterministic one.
    pub fn gpu_clock(&mut self) -> u64 {
        match self.backend.gpu_clock() {
            Some(t) => t,
            None => {
                self.state.clock = self.state.clock.wrapping_add(1);
                self.state.clock
            }
        }
    }
}

#[cold]
#[inline(never)]
fn outside_register_file(state: &ProcessorState, register: u32) {
    tracing::warn!(queue = %state.queue, "register write to {register:#x} is outside the register file");
}

/// Stores a register value and applies the register's action.
/// Indices past the register file are dropped (and logged).
#[inline]
pub(crate) fn write_register(state: &mut ProcessorState, register: u32, value: u32) {
    if !state.regs.set(register, value) {
        outside_register_file(state, register);
        return;
    }
    if register >= space::UCONFIG {
        state.global.set_uconfig(register, value);
    }
    match tables::register_action(register) {
        tables::RegisterAction::None => {}
        tables::RegisterAction::Mark(groups) => state.dirty |= groups,
        tables::RegisterAction::Call(handler) => handler(state, register, value),
    }
}

/// Reads a register as a packet sees it: UCONFIG registers are GPU-wide
/// (another queue may have written them), everything else is this queue's.
/// The value read is kept in this queue's register file too.
#[inline]
pub(crate) fn read_register(state: &mut ProcessorState, register: u32) -> u32 {
    if (space::UCONFIG..space::END).contains(&register) {
        let value = state.global.uconfig(register);
        if state.regs.get(register) != value {
            state.regs.set(register, value);
        }
        value
    } else {
        state.regs.get(register)
    }
}
