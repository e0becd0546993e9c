//! The front end as an emulator embeds it: shared guest memory, program
//! bindings that follow shader re-creation, host writes that invalidate
//! what was cached.

use std::sync::Arc;

use pm4core::backend::{Backend, Dispatch, Draw, QueueId};
use pm4core::memory::{FlatMemory, GuestMemory, SparseMemory};
use pm4core::packet::{Header, Opcode};
use pm4core::processor::{Env, ProcessStatus, Processor};
use pm4core::regs::gfx103 as r;
use pm4core::shader::builder::AgcBuilder;
use pm4core::shader::{ShaderRegistry, ShaderType};

const CMD: u64 = 0x1000;
const HEADER_A: u64 = 0x10_0000;
const HEADER_B: u64 = 0x11_0000;
const CS_CODE: u64 = 0x20_0000;

fn pkt3(out: &mut Vec<u32>, op: Opcode, body: &[u32]) {
    out.push(Header::type3(op, body.len() as u32).0);
    out.extend_from_slice(body);
}

/// The header address of every program a dispatch or draw saw.
#[derive(Default)]
struct Programs {
    dispatches: Vec<Option<u64>>,
    draws: usize,
}

impl Backend for Programs {
    fn dispatch(&mut self, d: &Dispatch<'_>) {
        self.dispatches.push(d.program.container.as_ref().map(|c| c.header_address()));
    }
    fn draw(&mut self, _: &Draw<'_>) {
        self.draws += 1;
    }
}

fn dispatch(cmd: &mut Vec<u32>) {
    pkt3(cmd, Opcode::DISPATCH_DIRECT, &[1, 1, 1, 1]);
}

#[test]
fn a_compute_shader_recreated_at_the_same_code_address_is_seen_after_a_draw() {
    let memory = SparseMemory::new();
    let container = AgcBuilder::new(ShaderType::Compute).build();
    memory.map_bytes(HEADER_A, &container).unwrap();
    memory.map_bytes(HEADER_B, &container).unwrap();
    memory.map_zeroed(CS_CODE, 0x1000).unwrap();
    let shaders = ShaderRegistry::new();
    shaders.create(&memory, HEADER_A, CS_CODE, false).unwrap();

    let mut first = Vec::new();
    pkt3(&mut first, Opcode::SET_SH_REG, &[r::COMPUTE_PGM_LO - 0x2C00, (CS_CODE >> 8) as u32, 0]);
    dispatch(&mut first);
    let mut second = Vec::new();
    pkt3(&mut second, Opcode::DRAW_INDEX_AUTO, &[3, 2]);
    dispatch(&mut second);
    memory.map_dwords(CMD, &first).unwrap();
    memory.map_dwords(CMD + 0x1000, &second).unwrap();

    let mut backend = Programs::default();
    let mut p = Processor::new(QueueId::GRAPHICS);
    p.submit(CMD, first.len() as u32).unwrap();
    let mut env = Env { memory: &memory, backend: &mut backend, shaders: &shaders };
    assert_eq!(p.process(&mut env).unwrap(), ProcessStatus::Completed);
    // The guest re-creates the compute shader at the same code address from
    // another header; the next draw resolves the graphics stages first.
    shaders.create(&memory, HEADER_B, CS_CODE, false).unwrap();
    p.submit(CMD + 0x1000, second.len() as u32).unwrap();
    let mut env = Env { memory: &memory, backend: &mut backend, shaders: &shaders };
    assert_eq!(p.process(&mut env).unwrap(), ProcessStatus::Completed);
    assert_eq!(backend.draws, 1);
    assert_eq!(backend.dispatches, [Some(HEADER_A), Some(HEADER_B)]);
}

#[test]
fn flat_memory_behind_an_arc_serves_the_processor_and_the_cpu() {
    let ram = Arc::new(FlatMemory::new(0, 1 << 20).unwrap());
    let mut cmd = Vec::new();
    // ATOMIC_MEM add 5 (32-bit) at 0x8000, then WRITE_DATA 0x77 to 0x8008.
    pkt3(&mut cmd, Opcode::ATOMIC_MEM, &[0x0F, 0x8000, 0, 5, 0, 0, 0, 0]);
    pkt3(&mut cmd, Opcode::WRITE_DATA, &[5 << 8 | 1 << 20, 0x8008, 0, 0x77]);
    for (i, w) in cmd.iter().enumerate() {
        ram.write_u32(CMD + i as u64 * 4, *w).unwrap();
    }
    ram.write_u32(0x8000, 10).unwrap();
    let cpu = Arc::clone(&ram);
    let (mut backend, shaders) = (Programs::default(), ShaderRegistry::new());
    let mut p = Processor::new(QueueId::GRAPHICS);
    p.submit(CMD, cmd.len() as u32).unwrap();
    let memory: &dyn GuestMemory = &*ram;
    let mut env = Env { memory, backend: &mut backend, shaders: &shaders };
    assert_eq!(p.process(&mut env).unwrap(), ProcessStatus::Completed);
    assert_eq!(cpu.read_u32(0x8000).unwrap(), 15);
    assert_eq!(cpu.read_u32(0x8008).unwrap(), 0x77);
}
