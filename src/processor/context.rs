//! What a packet handler works with: the execution, the processor state,
//! guest memory (watched, so writes to the prefetched stream are noticed),
//! the backend and the shader registry.

use std::sync::atomic::{AtomicBool, Ordering};

use super::{tables, Engine, Pm4Error, ProcessorState, SuspendReason};
use crate::backend::Backend;
use crate::memory::{GuestMemory, MemoryError};
use crate::packet::body::{Body, BodyError};
use crate::packet::{Opcode, Packet, PacketLocation};
use crate::shader::ShaderRegistry;

use super::execution::Pm4Execution;

/// What the loop does after a handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Go on with the next packet.
    Continue,
    /// Stop here; the packet runs again on resume.
    Suspend(SuspendReason),
    /// Go on, but let the constant engine run first.
    RunConstantEngine,
}

/// Guest memory with a note of whether a write hit the prefetch window.
pub(crate) struct WatchedMemory<'a> {
    inner: &'a dyn GuestMemory,
    window: (u64, u64),
    /// Per packet, on the processor's thread; atomic only so that the view
    /// is `Sync` like every [`GuestMemory`] (a relaxed store is a plain move).
    touched: AtomicBool,
}

impl<'a> WatchedMemory<'a> {
    #[inline]
    pub(crate) fn new(inner: &'a dyn GuestMemory, window: (u64, u64)) -> Self {
        Self { inner, window, touched: AtomicBool::new(false) }
    }

    #[inline]
    pub(crate) fn touched_window(&self) -> bool {
        self.touched.load(Ordering::Relaxed)
    }

    #[inline]
    fn note(&self, address: u64, len: u64) {
        let end = address.saturating_add(len);
        if address < self.window.1 && end > self.window.0 {
            self.touched.store(true, Ordering::Relaxed);
        }
    }
}

impl GuestMemory for WatchedMemory<'_> {
    #[inline]
    fn read_bytes(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError> {
        self.inner.read_bytes(address, out)
    }

    #[inline]
    fn read_dwords(&self, address: u64, out: &mut [u32]) -> Result<(), MemoryError> {
        self.inner.read_dwords(address, out)
    }

    #[inline]
    fn read_u32(&self, address: u64) -> Result<u32, MemoryError> {
        self.inner.read_u32(address)
    }

    #[inline]
    fn read_u64(&self, address: u64) -> Result<u64, MemoryError> {
        self.inner.read_u64(address)
    }

    #[inline]
    fn is_mapped(&self, address: u64, len: u64) -> bool {
        self.inner.is_mapped(address, len)
    }

    #[inline]
    fn write_bytes(&self, address: u64, data: &[u8]) -> Result<(), MemoryError> {
        self.note(address, data.len() as u64);
        self.inner.write_bytes(address, data)
    }

    #[inline]
    fn write_u32(&self, address: u64, value: u32) -> Result<(), MemoryError> {
        self.note(address, 4);
        self.inner.write_u32(address, value)
    }

    #[inline]
    fn write_u64(&self, address: u64, value: u64) -> Result<(), MemoryError> {
        self.note(address, 8);
        self.inner.write_u64(address, value)
    }

    fn atomic_update_u32(&self, address: u64, update: &mut dyn FnMut(u32) -> u32) -> Result<u32, MemoryError> {
        self.note(address, 4);
        self.inner.atomic_update_u32(address, update)
    }

    fn atomic_update_u64(&self, address: u64, update: &mut dyn FnMut(u64) -> u64) -> Result<u64, MemoryError> {
        self.note(address, 8);
        self.inner.atomic_update_u64(address, update)
    }

    fn fill(&self, address: u64, len: u64, pattern: u32) -> Result<(), MemoryError> {
        self.note(address, len);
        self.inner.fill(address, len, pattern)
    }

    fn copy(&self, dst: u64, src: u64, len: u64) -> Result<(), MemoryError> {
        self.note(dst, len);
        self.inner.copy(dst, src, len)
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
    pub location: &'a PacketLocation,
    pub opcode: Opcode,
}

impl Ctx<'_> {
    /// A memory error at this packet.
    #[inline]
    pub fn mem_err(&self, source: MemoryError) -> Pm4Error {
        Pm4Error::Memory { location: *self.location, opcode: self.opcode, source }
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
        Pm4Error::MalformedPacket { location: *self.location, source }
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

    /// [`Self::write_register`] for a register named at compile time: one
    /// without an action is stored with no table lookup.
    #[inline]
    pub fn write_named_register<const REGISTER: u32>(&mut self, value: u32) {
        if const { tables::has_action(REGISTER) } {
            write_register(self.state, REGISTER, value);
        } else if !self.state.regs.set(REGISTER, value) {
            outside_register_file(self.state, REGISTER);
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
    match tables::register_action(register) {
        tables::RegisterAction::None => {}
        tables::RegisterAction::Mark(groups) => state.dirty |= groups,
        tables::RegisterAction::Call(handler) => handler(state, register, value),
    }
}
