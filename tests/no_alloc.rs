//! The hot loop allocates nothing per packet: a counting global allocator
//! watches a full run over a mixed stream (register writes, draws,
//! multi-draws, dispatches, memory writes, nested IBs, COND_EXEC skips,
//! predication, events, releases and an embedder's private packets).

mod common;

use common::{Cmd, SCRATCH};
use pm4core::backend::{NullBackend, QueueId};
use pm4core::memory::SparseMemory;
use pm4core::packet::private::{PrivatePacketEntry, PrivatePackets};
use pm4core::packet::{Opcode, NOP_PAD};
use pm4core::processor::{Env, ProcessStatus, Processor, ProcessorConfig};
use pm4core::regs::gfx103 as r;
use pm4core::shader::ShaderRegistry;

#[path = "support/counting_alloc.rs"]
mod counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

fn frame() -> Cmd {
    let mut cmd = Cmd::new();
    for i in 0..200u32 {
        cmd = cmd
            .set_context(r::PA_CL_VPORT_XSCALE, &[i, i + 1, i + 2, i + 3, i + 4, i + 5])
            .set_sh(r::SPI_SHADER_USER_DATA_PS_0, &[i; 8])
            .set_sh(r::SPI_SHADER_PGM_LO_PS, &[0x100 + (i & 3), 0])
            .set_uconfig(r::VGT_PRIMITIVE_TYPE, &[4])
            .pkt3(Opcode::NUM_INSTANCES, &[1])
            .pkt3(Opcode::DRAW_INDEX_AUTO, &[3, 2])
            .pkt3(Opcode::DRAW_INDEX_2, &[100, 0xA000, 0, 6, 0])
            .write_mem(SCRATCH + u64::from(i % 64) * 4, &[i])
            // A release and a wait it meets, a fill and a copy (the fast
            // entries of plain handlers).
            .release32(SCRATCH + 0xA00, i)
            .wait_mem(SCRATCH + 0xA00, 3, i, 0xFFFF_FFFF)
            .pkt3(Opcode::DMA_DATA, &[2 << 29, i, 0, SCRATCH as u32 + 0xC00, 0, 0x40])
            .pkt3(Opcode::DMA_DATA, &[0, SCRATCH as u32 + 0xC00, 0, SCRATCH as u32 + 0xE00, 0, 0x40])
            .pkt3(Opcode::EVENT_WRITE, &[0x10 | (4 << 8)])
            .pkt3(Opcode::DISPATCH_DIRECT, &[1, 1, 1, 1])
            .raw(&[NOP_PAD, NOP_PAD])
            // A private NOP (a code in header bits [7:2]), a multi-draw of
            // two records, a COND_EXEC skipping the NOP after it.
            .raw(&[0xC001_1000 | 0x17 << 2, i, i])
            .pkt3(Opcode::SET_BASE, &[1, SCRATCH as u32 + 0xD00, 0])
            .pkt3(Opcode::DRAW_INDIRECT_MULTI, &[0, 0, 0, 0, 2, 0, 0, 16, 2])
            .pkt3(Opcode::COND_EXEC, &[SCRATCH as u32 + 0xF00, 0, 0, 2])
            .pkt3(Opcode::NOP, &[0])
            .ib(0x8_0000, 8, false);
    }
    cmd.pkt3(Opcode::SET_PREDICATION, &[4 << 16 | 1 << 8, SCRATCH as u32 + 0x800, 0])
        .pkt3_pred(Opcode::DRAW_INDEX_AUTO, &[3, 2])
        .release32(SCRATCH + 0x900, 1)
        .wait_mem(SCRATCH + 0x900, 3, 1, 0xFFFF_FFFF)
        // Predication off again (PRED_OP 0): it outlives the submission,
        // and the next run's packets would all go the general way.
        .pkt3(Opcode::SET_PREDICATION, &[0, 0, 0])
}

#[test]
fn the_processor_loop_does_not_allocate_per_packet() {
    let cmd = frame();
    let child = Cmd::new().write_mem(SCRATCH + 0x400, &[1]).set_context(r::DB_RENDER_CONTROL, &[2]);
    assert_eq!(child.len(), 9 - 1);
    let mut memory = SparseMemory::new();
    memory.map_zeroed(SCRATCH, 0x10_0000).unwrap();
    memory.map_dwords(0x1000, cmd.dwords()).unwrap();
    memory.map_dwords(0x8_0000, child.dwords()).unwrap();
    let mut backend = NullBackend;
    let mut shaders = ShaderRegistry::default();
    let private = PrivatePackets::new([PrivatePacketEntry::new("EMU_FLIP", 0x17).header(0xC000_FFFC, 0xC000_105C)]);
    let config = ProcessorConfig { private_packets: private, ..ProcessorConfig::default() };
    let mut processor = Processor::with_config(QueueId::GRAPHICS, config);
    // Warm-up run: touches every copy-on-write page the stream writes.
    for round in 0..2 {
        processor.submit(0x1000, cmd.len()).unwrap();
        let before = counting_alloc::allocations();
        let mut env = Env { memory: &mut memory, backend: &mut backend, shaders: &mut shaders };
        assert_eq!(processor.process(&mut env), Ok(ProcessStatus::Completed));
        let allocations = counting_alloc::allocations() - before;
        if round == 1 {
            assert_eq!(allocations, 0, "allocations during a {}-packet run", processor.stats().packets / 2);
        }
    }
    assert!(processor.stats().packets > 5000);
}
