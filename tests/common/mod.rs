//! Helpers shared by the tests: the packet builder, a harness that runs one
//! processor over sparse memory with a recording backend, and the shader
//! container writers ([`shader_builder`]).
#![allow(dead_code)]

pub mod shader_builder;

use pm4core::backend::{QueueId, RecordingBackend};
use pm4core::memory::{GuestMemory, SparseMemory};
use pm4core::processor::{Env, Pm4Error, ProcessStatus, Processor, ProcessorConfig};
use pm4core::shader::ShaderRegistry;

/// The public command-buffer builder, under the name the tests use.
pub use pm4core::packet::builder::CommandBuffer as Cmd;

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
