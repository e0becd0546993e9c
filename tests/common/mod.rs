//! Helpers shared by the processor tests: a packet builder and a harness
//! that runs one processor over sparse memory with a recording backend.
#![allow(dead_code)]

use pm4core::backend::{QueueId, RecordingBackend};
use pm4core::memory::{GuestMemory, SparseMemory};
use pm4core::packet::{Header, Opcode};
use pm4core::processor::{Env, Pm4Error, ProcessStatus, Processor, ProcessorConfig};
use pm4core::shader::ShaderRegistry;

/// Builds a command buffer dword by dword.
#[derive(Default, Clone)]
pub struct Cmd {
    pub dw: Vec<u32>,
}

impl Cmd {
    pub fn new() -> Self {
        Self::default()
    }

    /// A type-3 packet with `body`.
    pub fn pkt3(mut self, op: Opcode, body: &[u32]) -> Self {
        self.dw.push(Header::type3(op, body.len().max(1) as u32).0);
        if body.is_empty() {
            self.dw.push(0);
        }
        self.dw.extend_from_slice(body);
        self
    }

    /// A type-3 packet with the predicate bit set.
    pub fn pkt3_pred(mut self, op: Opcode, body: &[u32]) -> Self {
        self.dw.push(Header::type3(op, body.len() as u32).0 | 1);
        self.dw.extend_from_slice(body);
        self
    }

    pub fn raw(mut self, words: &[u32]) -> Self {
        self.dw.extend_from_slice(words);
        self
    }

    pub fn set_reg(self, op: Opcode, base: u32, reg: u32, values: &[u32]) -> Self {
        let mut body = vec![reg - base];
        body.extend_from_slice(values);
        self.pkt3(op, &body)
    }

    pub fn set_context(self, reg: u32, values: &[u32]) -> Self {
        self.set_reg(Opcode::SET_CONTEXT_REG, 0xA000, reg, values)
    }

    pub fn set_sh(self, reg: u32, values: &[u32]) -> Self {
        self.set_reg(Opcode::SET_SH_REG, 0x2C00, reg, values)
    }

    pub fn set_uconfig(self, reg: u32, values: &[u32]) -> Self {
        self.set_reg(Opcode::SET_UCONFIG_REG, 0xC000, reg, values)
    }

    /// WRITE_DATA of `data` to memory (DST_SEL 5).
    pub fn write_mem(self, addr: u64, data: &[u32]) -> Self {
        let mut body = vec![5 << 8, addr as u32, (addr >> 32) as u32];
        body.extend_from_slice(data);
        self.pkt3(Opcode::WRITE_DATA, &body)
    }

    /// WAIT_REG_MEM on memory: `(*addr & mask) function reference`.
    pub fn wait_mem(self, addr: u64, function: u32, reference: u32, mask: u32) -> Self {
        self.pkt3(Opcode::WAIT_REG_MEM, &[function | (1 << 4), addr as u32, (addr >> 32) as u32, reference, mask, 10])
    }

    /// INDIRECT_BUFFER to `addr` of `size` dwords.
    pub fn ib(self, addr: u64, size: u32, chain: bool) -> Self {
        let control = size | if chain { (1 << 20) | (1 << 23) } else { 0 };
        self.pkt3(Opcode::INDIRECT_BUFFER, &[addr as u32, (addr >> 32) as u32, control])
    }

    /// RELEASE_MEM BOTTOM_OF_PIPE_TS writing 32-bit `data` with INT_SEL 2.
    pub fn release32(self, addr: u64, data: u32) -> Self {
        self.pkt3(
            Opcode::RELEASE_MEM,
            &[0x28 | (5 << 8), (1 << 29) | (2 << 24), addr as u32, (addr >> 32) as u32, data, 0, 0x77],
        )
    }

    pub fn len(&self) -> u32 {
        self.dw.len() as u32
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
        self.memory.map_dwords(addr, &cmd.dw).unwrap();
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
