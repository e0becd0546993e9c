//! Helpers shared by the tests: the packet builder, a harness that runs one
//! processor over sparse memory with a recording backend, and the shader
//! container writers ([`shader_builder`]).
#![allow(dead_code)]

pub mod shader_builder;

use pm4core::backend::{QueueId, RecordingBackend};
use pm4core::memory::{GuestMemory, SparseMemory};
use pm4core::packet::body::{Body, CompareFunction, WaitRegMem};
use pm4core::packet::builder::{BuildError, CommandBuffer, Label, Signal};
use pm4core::packet::Opcode;
use pm4core::processor::{Env, Pm4Error, ProcessStatus, Processor, ProcessorConfig};
use pm4core::shader::ShaderRegistry;

/// The tests' command-buffer builder: the public [`CommandBuffer`] in the
/// by-value chain the tests are written in, a test failing on any
/// [`BuildError`](pm4core::packet::builder::BuildError). What the public
/// builder refuses by design (a register offset wrapped into another space,
/// an indirect buffer with VALID clear) is written as raw dwords here,
/// since tests feed the processor malformed streams on purpose.
#[derive(Clone, Debug, Default)]
pub struct Cmd(CommandBuffer);

impl Cmd {
    pub fn new() -> Self {
        Self(CommandBuffer::new())
    }

    fn with(mut self, build: impl FnOnce(&mut CommandBuffer) -> Result<&mut CommandBuffer, BuildError>) -> Self {
        if let Err(e) = build(&mut self.0) {
            panic!("test stream: {e}");
        }
        self
    }

    pub fn dwords(&self) -> &[u32] {
        self.0.dwords()
    }

    pub fn into_dwords(self) -> Vec<u32> {
        self.0.into_dwords()
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        self.0.to_bytes()
    }

    pub fn len_dw(&self) -> u32 {
        self.0.len_dw()
    }

    pub fn len(&self) -> u32 {
        self.0.len_dw()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn label(&self) -> Label {
        self.0.label()
    }

    pub fn patch(&mut self, label: Label, index: u32, value: u32) {
        self.0.patch(label, index, value).expect("patch inside the buffer");
    }

    pub fn packet<'a, B: Body<'a>>(self, body: &B) -> Self {
        self.with(|cb| cb.packet(body))
    }

    pub fn predicated<'a, B: Body<'a>>(self, body: &B) -> Self {
        self.with(|cb| cb.predicated(body))
    }

    pub fn compute<'a, B: Body<'a>>(self, body: &B) -> Self {
        self.with(|cb| cb.compute(body))
    }

    pub fn pkt3(self, opcode: Opcode, body: &[u32]) -> Self {
        self.with(|cb| cb.pkt3(opcode, body))
    }

    pub fn pkt3_pred(self, opcode: Opcode, body: &[u32]) -> Self {
        self.with(|cb| cb.pkt3_pred(opcode, body))
    }

    pub fn raw(self, words: &[u32]) -> Self {
        self.with(|cb| cb.raw(words))
    }

    pub fn set_registers(self, register: u32, values: &[u32]) -> Self {
        self.with(|cb| cb.set_registers(register, values))
    }

    pub fn set_context(self, register: u32, values: &[u32]) -> Self {
        self.with(|cb| cb.set_context(register, values))
    }

    pub fn set_sh(self, register: u32, values: &[u32]) -> Self {
        self.with(|cb| cb.set_sh(register, values))
    }

    pub fn set_uconfig(self, register: u32, values: &[u32]) -> Self {
        self.with(|cb| cb.set_uconfig(register, values))
    }

    /// A SET_*_REG of `opcode` whose offset is `register - base` kept to 16
    /// bits, as a malformed stream may carry it.
    pub fn set_reg(self, opcode: Opcode, base: u32, register: u32, values: &[u32]) -> Self {
        let mut body = vec![register.wrapping_sub(base) & 0xFFFF];
        body.extend_from_slice(values);
        self.pkt3(opcode, &body)
    }

    pub fn write_mem(self, address: u64, data: &[u32]) -> Self {
        self.with(|cb| cb.write_mem(address, data))
    }

    /// WAIT_REG_MEM on memory with FUNCTION as its 3-bit code (any
    /// address, aligned or not, as a hostile stream may carry it).
    pub fn wait_mem(self, address: u64, function: u32, reference: u32, mask: u32) -> Self {
        let wait = WaitRegMem {
            poll_interval: 10,
            ..WaitRegMem::memory(address, CompareFunction::from_bits(function), reference, mask)
        };
        let mut body = Vec::new();
        wait.encode_body(&mut body);
        self.pkt3(Opcode::WAIT_REG_MEM, &body)
    }

    /// INDIRECT_BUFFER in its minimal form: VALID set only on a chain (the
    /// CP does not check it on a call).
    pub fn ib(self, address: u64, size_dw: u32, chain: bool) -> Self {
        let control = (size_dw & 0xF_FFFF) | if chain { (1 << 20) | (1 << 23) } else { 0 };
        self.pkt3(Opcode::INDIRECT_BUFFER, &[address as u32, (address >> 32) as u32, control])
    }

    pub fn call(self, address: u64, size_dw: u32) -> Self {
        self.with(|cb| cb.call(address, size_dw))
    }

    pub fn chain(self, address: u64, size_dw: u32) -> Self {
        self.with(|cb| cb.chain(address, size_dw))
    }

    /// RELEASE_MEM writing `data` with an interrupt.
    pub fn release32(self, address: u64, data: u32) -> Self {
        self.with(|cb| cb.release32(address, data, Signal::Interrupt))
    }
}

/// One processor, its memory and a recording backend.
pub struct Harness {
    pub memory: SparseMemory,
    pub backend: RecordingBackend,
    pub shaders: ShaderRegistry,
    pub processor: Processor,
}

impl Harness {
    pub fn new() -> Self {
        Self::with_config(QueueId::GRAPHICS, ProcessorConfig::default())
    }

    pub fn with_config(queue: QueueId, config: ProcessorConfig) -> Self {
        let memory = SparseMemory::new();
        // Scratch memory for labels and data at 0x10_0000.
        memory.map_zeroed(0x10_0000, 0x10_0000).unwrap();
        Self {
            memory,
            backend: RecordingBackend::new(),
            shaders: ShaderRegistry::default(),
            processor: Processor::with_config(queue, config),
        }
    }

    /// Maps `cmd` at `addr`.
    pub fn map(&mut self, addr: u64, cmd: &Cmd) {
        self.memory.map_dwords(addr, cmd.dwords()).unwrap();
    }

    pub fn submit(&mut self, addr: u64, size_dw: u32) {
        self.processor.submit(addr, size_dw).unwrap();
    }

    pub fn process(&mut self) -> Result<ProcessStatus, Pm4Error> {
        let mut env = Env { memory: &mut self.memory, backend: &mut self.backend, shaders: &mut self.shaders };
        self.processor.process(&mut env)
    }

    /// Maps `cmd` at 0x1000, submits it and runs it.
    pub fn run(&mut self, cmd: &Cmd) -> Result<ProcessStatus, Pm4Error> {
        self.map(0x1000, cmd);
        self.submit(0x1000, cmd.len());
        self.process()
    }

    pub fn reg(&self, r: u32) -> u32 {
        self.processor.registers().get(r)
    }

    pub fn read32(&self, addr: u64) -> u32 {
        self.memory.read_u32(addr).unwrap()
    }

    pub fn read64(&self, addr: u64) -> u64 {
        self.memory.read_u64(addr).unwrap()
    }

    pub fn log(&self) -> Vec<String> {
        self.backend.lines.clone()
    }
}

/// Address of scratch memory.
pub const SCRATCH: u64 = 0x10_0000;
