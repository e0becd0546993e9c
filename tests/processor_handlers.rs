//! Exact effects of every emulated packet: register values, memory bytes and
//! the backend's event log.

mod common;

use common::{Cmd, Harness, SCRATCH};
use pm4core::backend::{ProgramStage, QueueId};
use pm4core::memory::GuestMemory;
use pm4core::packet::Opcode;
use pm4core::processor::{
    state_group, HostCommand, ProcessStatus, ProcessorConfig, SuspendReason, HOST_COMMAND_SIGNATURE,
};
use pm4core::regs::gfx103 as r;

fn run(cmd: &Cmd) -> Harness {
    let mut h = Harness::new();
    assert_eq!(h.run(cmd), Ok(ProcessStatus::Completed));
    h
}

fn lo(a: u64) -> u32 {
    a as u32
}

#[test]
fn set_reg_packets_write_each_space() {
    let h = run(&Cmd::new()
        .set_context(r::DB_RENDER_CONTROL, &[1, 2])
        .set_sh(r::SPI_SHADER_PGM_LO_PS, &[0x1234, 0x56])
        .set_uconfig(r::VGT_PRIMITIVE_TYPE, &[4])
        .set_reg(Opcode::SET_CONFIG_REG, 0x2000, 0x263E, &[0xABC])
        // _INDEX forms keep INDEX in dw0 [31:28]; the offset is [15:0].
        .pkt3(Opcode::SET_UCONFIG_REG_INDEX, &[(2 << 28) | (r::VGT_INDEX_TYPE - 0xC000), 1])
        .pkt3(Opcode::SET_UCONFIG_REG, &[(3 << 28) | (r::VGT_NUM_INSTANCES - 0xC000), 9])
        .pkt3(Opcode::SET_SH_REG_INDEX, &[(3 << 28) | (r::COMPUTE_PGM_LO - 0x2C00), 0x77]));
    assert_eq!((h.reg(r::DB_RENDER_CONTROL), h.reg(r::DB_RENDER_CONTROL + 1)), (1, 2));
    assert_eq!(h.reg(r::SPI_SHADER_PGM_LO_PS), 0x1234);
    assert_eq!(h.reg(r::SPI_SHADER_PGM_LO_PS + 1), 0x56);
    assert_eq!(h.processor.registers().view().program_address(ProgramStage::Ps), (0x56 << 40) | (0x1234 << 8));
    assert_eq!(h.reg(r::VGT_PRIMITIVE_TYPE), 4);
    assert_eq!(h.reg(0x263E), 0xABC);
    assert_eq!(h.reg(r::VGT_INDEX_TYPE), 1);
    assert_eq!(h.reg(r::VGT_NUM_INSTANCES), 9);
    assert_eq!(h.reg(r::COMPUTE_PGM_LO), 0x77);
}

#[test]
fn a_register_run_stops_at_the_end_of_its_space() {
    let h = run(&Cmd::new().pkt3(Opcode::SET_SH_REG, &[0x3FF, 1, 2, 3]));
    assert_eq!(h.reg(0x2FFF), 1);
    assert_eq!(h.reg(0x3000), 0);
}

#[test]
fn rmw_packets() {
    let h = run(&Cmd::new()
        .set_context(r::DB_RENDER_CONTROL, &[0xFF00_FF00])
        .pkt3(Opcode::CONTEXT_REG_RMW, &[0, 0x0000_FFFF, 0x1234_5678])
        .set_uconfig(r::VGT_PRIMITIVE_TYPE, &[0xF0])
        .pkt3(Opcode::REG_RMW, &[r::VGT_PRIMITIVE_TYPE, 0x30, 0x01]));
    assert_eq!(h.reg(r::DB_RENDER_CONTROL), 0xFF00_5678);
    assert_eq!(h.reg(r::VGT_PRIMITIVE_TYPE), 0x31);
}

#[test]
fn load_reg_reads_ranges_from_a_register_image() {
    let mut h = Harness::new();
    // Image of the SH space at 0x9000: register 0x2C00 + i at 0x9000 + 4i.
    let mut image = vec![0u32; 0x100];
    image[8] = 0xAAAA;
    image[9] = 0xBB;
    h.memory.map_dwords(0x9000, &image).unwrap();
    let cmd = Cmd::new().pkt3(Opcode::LOAD_SH_REG, &[0x9000, 0, 8, 2]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!((h.reg(r::SPI_SHADER_PGM_LO_PS), h.reg(r::SPI_SHADER_PGM_LO_PS + 1)), (0xAAAA, 0xBB));
}

#[test]
fn load_reg_index_offset_and_size_and_pairs() {
    let mut h = Harness::new();
    h.memory.map_dwords(0x9000, &[0x11, 0x22]).unwrap();
    // Offset/value pairs with padding entries (0xFFFFFFFF and bit-31 ids).
    let pairs = [
        r::PA_SC_WINDOW_OFFSET - 0xA000,
        0x33,
        0xFFFF_FFFF,
        0xDEAD,
        0x8000_03FF,
        0xBEEF,
        r::DB_RENDER_CONTROL - 0xA000,
        0x44,
    ];
    h.memory.map_dwords(0xA000, &pairs).unwrap();
    let cmd = Cmd::new()
        .pkt3(Opcode::LOAD_CONTEXT_REG_INDEX, &[0x9000, 0, r::DB_DEPTH_CLEAR - 0xA000, 2])
        .pkt3(Opcode::LOAD_CONTEXT_REG_INDEX, &[0xA000, 0, 0x8000_0000, 4])
        // INDEX 1: address = SET_BASE index-4 base + ADDR_OFFSET.
        .pkt3(Opcode::SET_BASE, &[4, 0x9000, 0])
        .pkt3(Opcode::LOAD_SH_REG_INDEX, &[1, 4, r::COMPUTE_USER_DATA_0 - 0x2C00, 1]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!((h.reg(r::DB_DEPTH_CLEAR), h.reg(r::DB_DEPTH_CLEAR + 1)), (0x11, 0x22));
    assert_eq!(h.reg(r::PA_SC_WINDOW_OFFSET), 0x33);
    assert_eq!(h.reg(r::DB_RENDER_CONTROL), 0x44);
    assert_eq!(h.reg(0xA3FF), 0, "padding entries are skipped");
    assert_eq!(h.reg(r::COMPUTE_USER_DATA_0), 0x22);
}

#[test]
fn clear_state_clears_pushes_and_pops_context() {
    let h = run(&Cmd::new()
        .set_context(r::DB_RENDER_CONTROL, &[5])
        .set_sh(r::SPI_SHADER_PGM_LO_PS, &[6])
        .pkt3(Opcode::CLEAR_STATE, &[3]) // push, then clear
        .set_context(r::PA_SC_WINDOW_OFFSET, &[7]));
    assert_eq!(h.reg(r::DB_RENDER_CONTROL), 0);
    assert_eq!(h.reg(r::SPI_SHADER_PGM_LO_PS), 6, "SH registers are not context state");
    assert_eq!(h.reg(r::PA_SC_WINDOW_OFFSET), 7);
    let h = run(&Cmd::new()
        .set_context(r::DB_RENDER_CONTROL, &[5])
        .pkt3(Opcode::CLEAR_STATE, &[3])
        .pkt3(Opcode::CLEAR_STATE, &[2]));
    assert_eq!(h.reg(r::DB_RENDER_CONTROL), 5, "pop restores");
}

#[test]
fn context_control_keeps_the_enables() {
    let h = run(&Cmd::new().pkt3(Opcode::CONTEXT_CONTROL, &[0x8000_0001, 0x8000_0000]));
    assert_eq!(h.processor.state().context_control(), (0x8000_0001, 0x8000_0000));
}

#[test]
fn write_data_to_memory_registers_and_one_address() {
    let h = run(&Cmd::new()
        .write_mem(SCRATCH, &[1, 2, 3])
        .pkt3(Opcode::WRITE_DATA, &[0, r::CP_STRMOUT_CNTL, 0, 0x5])
        .pkt3(Opcode::WRITE_DATA, &[(5 << 8) | (1 << 16), lo(SCRATCH + 0x20), 0, 7, 8, 9]));
    assert_eq!([h.read32(SCRATCH), h.read32(SCRATCH + 4), h.read32(SCRATCH + 8)], [1, 2, 3]);
    assert_eq!(h.reg(r::CP_STRMOUT_CNTL), 5);
    assert_eq!((h.read32(SCRATCH + 0x20), h.read32(SCRATCH + 0x24)), (9, 0));
}

#[test]
fn write_data_to_unmapped_memory_names_the_address() {
    let mut h = Harness::new();
    let err = h.run(&Cmd::new().write_mem(0xBAD0_0000, &[1])).unwrap_err();
    assert_eq!(err.kind(), "memory");
    assert!(err.to_string().contains("unmapped guest memory at 0xbad00000"), "{err}");
}

#[test]
fn copy_data_sources_and_destinations() {
    let mut h = Harness::new();
    h.memory.write_u64(SCRATCH + 0x80, 0x1111_2222_3333_4444).unwrap();
    let cmd = Cmd::new()
        .set_uconfig(r::VGT_PRIMITIVE_TYPE, &[0x42])
        // register -> memory (32-bit)
        .pkt3(Opcode::COPY_DATA, &[(5 << 8), r::VGT_PRIMITIVE_TYPE, 0, lo(SCRATCH), 0])
        // memory -> register
        .pkt3(Opcode::COPY_DATA, &[1, lo(SCRATCH + 0x80), 0, r::VGT_NUM_INSTANCES, 0])
        // immediate 64 -> memory
        .pkt3(Opcode::COPY_DATA, &[5 | (5 << 8) | (1 << 16), 0xDDCC_BBAA, 0x1, lo(SCRATCH + 0x10), 0])
        // GPU clock -> memory (deterministic counter: 1)
        .pkt3(Opcode::COPY_DATA, &[9 | (5 << 8) | (1 << 16), 0, 0, lo(SCRATCH + 0x18), 0]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.read32(SCRATCH), 0x42);
    assert_eq!(h.reg(r::VGT_NUM_INSTANCES), 0x3333_4444);
    assert_eq!(h.read64(SCRATCH + 0x10), 0x1_DDCC_BBAA);
    assert_eq!(h.read64(SCRATCH + 0x18), 1);
}

#[test]
fn dma_data_copy_fill_and_register_idiom() {
    let mut h = Harness::new();
    h.memory.map_bytes(0x9000, &(0u8..64).collect::<Vec<_>>()).unwrap();
    let cmd = Cmd::new()
        // copy 64 bytes 0x9000 -> SCRATCH
        .pkt3(Opcode::DMA_DATA, &[0, 0x9000, 0, lo(SCRATCH), 0, 64])
        // fill 16 bytes with 0xA5A5A5A5 (SRC_SEL 2)
        .pkt3(Opcode::DMA_DATA, &[2 << 29, 0xA5A5_A5A5, 0, lo(SCRATCH + 0x100), 0, 16])
        // register destination CP_DMA_READ_TAGS (byte address): the sync idiom, no effect
        .pkt3(Opcode::DMA_DATA, &[2 << 29, 0, 0, 0x3022C, 0, (1 << 27) | 4]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    let mut out = [0u8; 64];
    h.memory.read_bytes(SCRATCH, &mut out).unwrap();
    assert_eq!(out.to_vec(), (0u8..64).collect::<Vec<_>>());
    assert_eq!(h.read32(SCRATCH + 0x10C), 0xA5A5_A5A5);
    assert_eq!(h.read32(SCRATCH + 0x110), 0);
    assert_eq!(h.reg(r::CP_DMA_READ_TAGS), 0);
}

#[test]
fn dma_data_of_huge_lengths_fails_cleanly_before_writing() {
    let mut h = Harness::new();
    // 64 MiB - 1 bytes into a 1 MiB region: unmapped, nothing written.
    let err = h.run(&Cmd::new().pkt3(Opcode::DMA_DATA, &[2 << 29, 0x1, 0, lo(SCRATCH), 0, 0x3FF_FFFF])).unwrap_err();
    assert_eq!(err.kind(), "memory");
    assert_eq!(h.read32(SCRATCH), 0);
}

#[test]
fn atomic_mem_operations_and_spin_lock() {
    let mut h = Harness::new();
    h.memory.write_u32(SCRATCH, 10).unwrap();
    h.memory.write_u64(SCRATCH + 8, 1 << 40).unwrap();
    let cmd = Cmd::new()
        .pkt3(Opcode::ATOMIC_MEM, &[0x0F, lo(SCRATCH), 0, 5, 0, 0, 0, 0]) // ADD 32
        .pkt3(Opcode::ATOMIC_MEM, &[0x2F, lo(SCRATCH + 8), 0, 1, 0, 0, 0, 0]) // ADD 64
        // CMPSWAP with loop: waits until *addr == 0
        .pkt3(Opcode::ATOMIC_MEM, &[0x48 | (1 << 8), lo(SCRATCH + 0x10), 0, 7, 0, 0, 0, 10]);
    h.memory.write_u32(SCRATCH + 0x10, 1).unwrap();
    let status = h.run(&cmd).unwrap();
    assert_eq!(
        status,
        ProcessStatus::Suspended(SuspendReason::AtomicLoop { address: SCRATCH + 0x10, compare: 0, current: 1 })
    );
    assert_eq!(h.read32(SCRATCH), 15);
    assert_eq!(h.read64(SCRATCH + 8), (1 << 40) + 1);
}

#[test]
fn atomic_cmpswap_loop_completes_when_the_value_matches() {
    let mut h = Harness::new();
    h.memory.write_u32(SCRATCH, 3).unwrap();
    let cmd = Cmd::new().pkt3(Opcode::ATOMIC_MEM, &[0x48 | (1 << 8), lo(SCRATCH), 0, 9, 0, 4, 0, 10]);
    assert!(matches!(h.run(&cmd), Ok(ProcessStatus::Suspended(_))));
    h.memory.write_u32(SCRATCH, 4).unwrap();
    assert_eq!(h.process(), Ok(ProcessStatus::Completed));
    assert_eq!(h.read32(SCRATCH), 9);
}

#[test]
fn cond_write_writes_only_when_true() {
    let mut h = Harness::new();
    h.memory.write_u32(SCRATCH, 5).unwrap();
    let cmd = Cmd::new()
        // (mem & 0xF) == 5 -> write 0x77 to SCRATCH+4
        .pkt3(Opcode::COND_WRITE, &[3 | (1 << 4) | (1 << 8), lo(SCRATCH), 0, 5, 0xF, lo(SCRATCH + 4), 0, 0x77])
        // (mem & 0xF) > 5 -> not written
        .pkt3(Opcode::COND_WRITE, &[6 | (1 << 4) | (1 << 8), lo(SCRATCH), 0, 5, 0xF, lo(SCRATCH + 8), 0, 0x88]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!((h.read32(SCRATCH + 4), h.read32(SCRATCH + 8)), (0x77, 0));
}

#[test]
fn zpass_events_write_one_valid_record_per_render_backend() {
    let h = run(&Cmd::new().pkt3(Opcode::EVENT_WRITE, &[0x15 | (1 << 8), lo(SCRATCH), 0]));
    for rb in 0..16 {
        assert_eq!(h.read64(SCRATCH + rb * 16), 1 << 63, "render backend {rb}");
        assert_eq!(h.read64(SCRATCH + rb * 16 + 8), 0);
    }
    assert_eq!(h.read64(SCRATCH + 16 * 16), 0, "only 16 render backends");
}

#[test]
fn streamout_flush_sets_offset_update_done_and_events_are_logged() {
    let h = run(&Cmd::new()
        .pkt3(Opcode::WRITE_DATA, &[0, r::CP_STRMOUT_CNTL, 0, 0])
        .pkt3(Opcode::EVENT_WRITE, &[0x1F])
        .pkt3(Opcode::EVENT_WRITE, &[0x07 | (4 << 8)])
        .pkt3(Opcode::WAIT_REG_MEM, &[3, r::CP_STRMOUT_CNTL, 0, 1, 1, 10]));
    assert_eq!(h.reg(r::CP_STRMOUT_CNTL), 1);
    assert_eq!(
        h.log(),
        vec!["gfx event type=SO_VGTSTREAMOUT_FLUSH index=0", "gfx event type=CS_PARTIAL_FLUSH index=4"]
    );
}

#[test]
fn release_mem_writes_data_and_reports_fences() {
    let h = run(&Cmd::new()
        .release32(SCRATCH, 0xFEED)
        // 64-bit data, no interrupt
        .pkt3(Opcode::RELEASE_MEM, &[0x28 | (5 << 8), 2 << 29, lo(SCRATCH + 8), 0, 0x1, 0x2, 0])
        // timestamp
        .pkt3(Opcode::RELEASE_MEM, &[0x28 | (5 << 8), 3 << 29, lo(SCRATCH + 16), 0, 0, 0, 0])
        // with GCR cache bits: a cache action first
        .pkt3(Opcode::RELEASE_MEM, &[0x14 | (5 << 8) | (1 << 20), 0, 0, 0, 0, 0, 0]));
    assert_eq!(h.read32(SCRATCH), 0xFEED);
    assert_eq!(h.read64(SCRATCH + 8), 0x2_0000_0001);
    assert_eq!(h.read64(SCRATCH + 16), 1);
    assert_eq!(h.processor.stats().fences, 4);
    assert_eq!(
        h.log(),
        vec![
            "gfx fence RELEASE_MEM event=BOTTOM_OF_PIPE_TS addr=0x100000 data=0xfeed data_sel=1 int_sel=2 ctxid=0x77 interrupt=true",
            "gfx fence RELEASE_MEM event=BOTTOM_OF_PIPE_TS addr=0x100008 data=0x200000001 data_sel=2 int_sel=0 ctxid=0x0 interrupt=false",
            "gfx fence RELEASE_MEM event=BOTTOM_OF_PIPE_TS addr=0x100010 data=0x1 data_sel=3 int_sel=0 ctxid=0x0 interrupt=false",
            "gfx cache release cache_control=0x100",
            "gfx fence RELEASE_MEM event=CACHE_FLUSH_AND_INV_TS_EVENT addr=0x0 data=0x0 data_sel=0 int_sel=0 ctxid=0x0 interrupt=false",
        ]
    );
}

#[test]
fn gfx7_eop_and_eos_packets() {
    let h = run(&Cmd::new()
        // EVENT_WRITE_EOP: DATA_SEL 1 (bits 31:29 of dw2), INT_SEL 2 (bits 25:24)
        .pkt3(Opcode::EVENT_WRITE_EOP, &[0x28 | (5 << 8), lo(SCRATCH), (1 << 29) | (2 << 24), 0xAB, 0])
        // EVENT_WRITE_EOS: COMMAND 2 stores DATA
        .pkt3(Opcode::EVENT_WRITE_EOS, &[0x2F | (6 << 8), lo(SCRATCH + 4), 2 << 29, 0xCD]));
    assert_eq!((h.read32(SCRATCH), h.read32(SCRATCH + 4)), (0xAB, 0xCD));
    assert_eq!(h.processor.stats().fences, 2);
    assert!(h.log()[0].contains("EVENT_WRITE_EOP") && h.log()[0].contains("interrupt=true"));
}

#[test]
fn acquire_mem_reports_a_cache_action() {
    let h = run(&Cmd::new().pkt3(Opcode::ACQUIRE_MEM, &[0, 0xFFFF_FFFF, 0, 0, 0, 10, 0x4000]));
    assert_eq!(h.log(), vec!["gfx cache acquire_mem base=0x0 size=all coher_cntl=0x0 gcr_cntl=0x4000"]);
}

#[test]
fn wait_reg_mem_on_registers_and_64_bit_memory() {
    let mut h = Harness::new();
    h.memory.write_u64(SCRATCH, 0x5_0000_0000).unwrap();
    let cmd = Cmd::new()
        .set_uconfig(r::VGT_PRIMITIVE_TYPE, &[3])
        .pkt3(Opcode::WAIT_REG_MEM, &[5, r::VGT_PRIMITIVE_TYPE, 0, 3, 0xFF, 10]) // reg >= 3
        .pkt3(Opcode::WAIT_REG_MEM64, &[6 | (1 << 4), lo(SCRATCH), 0, 0, 4, 0xFFFF_FFFF, 0xFFFF_FFFF, 10]) // > 4<<32
        .write_mem(SCRATCH + 8, &[1]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.read32(SCRATCH + 8), 1);
}

#[test]
fn rewind_waits_for_its_valid_bit() {
    let mut h = Harness::new();
    let cmd = Cmd::new().pkt3(Opcode::REWIND, &[0]).write_mem(SCRATCH, &[1]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Suspended(SuspendReason::Rewind { address: 0x1004 })));
    h.memory.write_u32(0x1004, 1 << 31).unwrap();
    assert_eq!(h.process(), Ok(ProcessStatus::Completed));
    assert_eq!(h.read32(SCRATCH), 1);
}

#[test]
fn mem_semaphore_signal_and_wait() {
    let mut h = Harness::new();
    let cmd = Cmd::new()
        .pkt3(Opcode::MEM_SEMAPHORE, &[lo(SCRATCH), 0, 6 << 29]) // signal: +1
        .pkt3(Opcode::MEM_SEMAPHORE, &[lo(SCRATCH), 0, 7 << 29]) // wait: 1 -> 0
        .pkt3(Opcode::MEM_SEMAPHORE, &[lo(SCRATCH), 0, 7 << 29]); // wait on 0: suspends
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Suspended(SuspendReason::MemSemaphore { address: SCRATCH })));
    assert_eq!(h.read64(SCRATCH), 0);
}

#[test]
fn constant_engine_ram_counters_and_ordering() {
    let mut h = Harness::new();
    // CE stream: write CE RAM, dump 2 dwords to memory, bump the CE counter.
    let ce = Cmd::new()
        .pkt3(Opcode::WRITE_CONST_RAM, &[0x100, 0xC0FFEE, 0xBEEF])
        .pkt3(Opcode::DUMP_CONST_RAM, &[0x100, 2, lo(SCRATCH), 0])
        .pkt3(Opcode::INCREMENT_CE_COUNTER, &[1]);
    h.map(0x6000, &ce);
    // DE: launch the CE IB, wait for the CE counter, copy what the CE dumped.
    let de = Cmd::new()
        .pkt3(Opcode::INDIRECT_BUFFER_CONST, &[0x6000, 0, ce.len()])
        .pkt3(Opcode::WAIT_ON_CE_COUNTER, &[0])
        .pkt3(Opcode::COPY_DATA, &[1 | (5 << 8), lo(SCRATCH), 0, lo(SCRATCH + 0x10), 0])
        .pkt3(Opcode::INCREMENT_DE_COUNTER, &[0]);
    assert_eq!(h.run(&de), Ok(ProcessStatus::Completed));
    assert_eq!((h.read32(SCRATCH), h.read32(SCRATCH + 4)), (0xC0FFEE, 0xBEEF));
    assert_eq!(h.read32(SCRATCH + 0x10), 0xC0FFEE);
    assert_eq!((h.processor.state().ce_counter(), h.processor.state().de_counter()), (1, 1));
}

#[test]
fn wait_on_ce_counter_without_constant_engine_work_suspends() {
    let mut h = Harness::new();
    let status = h.run(&Cmd::new().pkt3(Opcode::WAIT_ON_CE_COUNTER, &[0])).unwrap();
    assert_eq!(status, ProcessStatus::Suspended(SuspendReason::WaitOnCeCounter { ce: 0, de: 0 }));
}

#[test]
fn draws_carry_counts_index_buffers_and_indirect_arguments() {
    let mut h = Harness::new();
    // Indirect args: non-indexed {3 verts, 2 inst, first 5, first inst 1};
    // indexed {6, 4, start 2, base -1, first inst 7}; count buffer = 1.
    h.memory.map_dwords(0x9000, &[3, 2, 5, 1, 6, 4, 2, (-1i32) as u32, 7, 1]).unwrap();
    let cmd = Cmd::new()
        .set_uconfig(r::VGT_PRIMITIVE_TYPE, &[4])
        .pkt3(Opcode::NUM_INSTANCES, &[2])
        .pkt3(Opcode::DRAW_INDEX_AUTO, &[3, 2])
        .set_uconfig(r::VGT_INDEX_TYPE, &[1])
        .pkt3(Opcode::DRAW_INDEX_2, &[100, 0xA000, 0, 6, 0])
        .pkt3(Opcode::INDEX_BASE, &[0xB000, 0])
        .pkt3(Opcode::INDEX_BUFFER_SIZE, &[50])
        .pkt3(Opcode::DRAW_INDEX_OFFSET_2, &[50, 10, 12, 0])
        .pkt3(Opcode::SET_BASE, &[1, 0x9000, 0])
        .pkt3(Opcode::DRAW_INDIRECT, &[0, 0x20, 0x21, 2])
        .pkt3(Opcode::DRAW_INDEX_INDIRECT, &[16, 0x20, 0x21, 0])
        // multi: up to 5 draws, count from memory (1), stride 16, draw index to 0x22
        .pkt3(Opcode::DRAW_INDIRECT_MULTI, &[0, 0x20, 0x21, 0x22 | (1 << 30) | (1 << 31), 5, 0x9024, 0, 16, 2]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(
        h.log(),
        vec![
            "gfx draw DRAW_INDEX_AUTO count=3 instances=2 first=0 base_vertex=0 first_instance=0 prim=4",
            "gfx draw DRAW_INDEX_2 count=6 instances=2 first=0 base_vertex=0 first_instance=0 prim=4 index=0xa000/4b/max=100",
            "gfx draw DRAW_INDEX_OFFSET_2 count=12 instances=2 first=10 base_vertex=0 first_instance=0 prim=4 index=0xb028/4b/max=40",
            "gfx draw DRAW_INDIRECT count=3 instances=2 first=5 base_vertex=0 first_instance=1 prim=4 args=0x9000 draw_index=0",
            "gfx draw DRAW_INDEX_INDIRECT count=6 instances=4 first=2 base_vertex=-1 first_instance=7 prim=4 index=0xb008/4b/max=48 args=0x9010 draw_index=0",
            "gfx draw DRAW_INDIRECT_MULTI count=3 instances=2 first=5 base_vertex=0 first_instance=1 prim=4 args=0x9000 draw_index=0",
        ]
    );
    // *_LOC fields name SH registers relative to 0x2C00.
    assert_eq!(h.reg(0x2C20), 5);
    assert_eq!(h.reg(0x2C21), 1);
    assert_eq!(h.reg(0x2C22), 0);
    assert_eq!(h.processor.stats().draws, 6);
}

#[test]
fn draws_report_changed_state_groups_once() {
    struct Changes(Vec<u32>);
    impl pm4core::backend::Backend for Changes {
        fn draw(&mut self, d: &pm4core::backend::Draw<'_>) {
            self.0.push(d.changed);
        }
    }
    let mut h = Harness::new();
    let cmd = Cmd::new()
        .pkt3(Opcode::DRAW_INDEX_AUTO, &[3, 2])
        .set_context(r::PA_CL_VPORT_XSCALE + 6 * 15 + 5, &[0x3F80_0000]) // viewport 15, z offset
        .set_context(r::PA_SC_VPORT_SCISSOR_0_TL, &[0])
        .pkt3(Opcode::DRAW_INDEX_AUTO, &[3, 2])
        .pkt3(Opcode::DRAW_INDEX_AUTO, &[3, 2]);
    h.map(0x1000, &cmd);
    h.submit(0x1000, cmd.len());
    let mut backend = Changes(Vec::new());
    let mut env = pm4core::processor::Env { memory: &mut h.memory, backend: &mut backend, shaders: &mut h.shaders };
    assert_eq!(h.processor.process(&mut env), Ok(ProcessStatus::Completed));
    assert_eq!(backend.0[1], state_group::VIEWPORT | state_group::SCISSOR);
    assert_eq!(backend.0[2], 0);
    let vp = h.processor.registers().view().viewport(15).unwrap();
    assert_eq!(vp.z_offset, 1.0);
}

#[test]
fn dispatches_direct_and_indirect() {
    let mut h = Harness::with_config(QueueId::compute(0, 0).unwrap(), ProcessorConfig::default());
    h.memory.map_dwords(0x9000, &[4, 2, 1, 0, 8, 8, 8]).unwrap();
    let cmd = Cmd::new()
        .set_sh(r::COMPUTE_NUM_THREAD_X, &[64, 1, 1])
        .set_sh(r::COMPUTE_PGM_LO, &[0x100, 0])
        .pkt3(Opcode::DISPATCH_DIRECT, &[3, 2, 1, 1])
        // compute form: 64-bit address
        .pkt3(Opcode::DISPATCH_INDIRECT, &[0x9000, 0, 1]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(
        h.log(),
        vec![
            "comp0.0 dispatch DISPATCH_DIRECT dims=3,2,1 start=0,0,0 group=64,1,1 cs=0x10000",
            "comp0.0 dispatch DISPATCH_INDIRECT dims=4,2,1 start=0,0,0 group=64,1,1 args=0x9000 cs=0x10000",
        ]
    );
    // The graphics form (offset from the SET_BASE dispatch base, SHADER_TYPE
    // = 1) runs on the graphics queue: SET_BASE is a graphics-ring packet.
    let mut h = Harness::new();
    h.memory.map_dwords(0x9000, &[4, 2, 1, 0, 8, 8, 8]).unwrap();
    let cmd = Cmd::new()
        .set_sh(r::COMPUTE_NUM_THREAD_X, &[64, 1, 1])
        .set_sh(r::COMPUTE_PGM_LO, &[0x100, 0])
        .raw(&[pm4core::packet::Header::type3(Opcode::SET_BASE, 3).0 | 2, 1, 0x9000, 0])
        .raw(&[pm4core::packet::Header::type3(Opcode::DISPATCH_INDIRECT, 2).0 | 2, 16, 1]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(
        h.log(),
        vec!["gfx dispatch DISPATCH_INDIRECT dims=8,8,8 start=0,0,0 group=64,1,1 args=0x9010 cs=0x10000"]
    );
    assert_eq!(h.reg(r::COMPUTE_DIM_X), 8);
    assert_eq!(h.processor.stats().dispatches, 1);
}

#[test]
fn nop_payload_conventions() {
    fn text(s: &str) -> Vec<u32> {
        let mut b = s.as_bytes().to_vec();
        b.resize(b.len().div_ceil(4) * 4 + 4, 0);
        b.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    }
    let mut push = vec![0x6875_0001];
    push.extend(text("frame"));
    let mut comment = vec![0x1337_F77D, 5, 7];
    comment.extend(text("hello"));
    let h = run(&Cmd::new()
        .pkt3(Opcode::NOP, &push)
        .pkt3(Opcode::NOP, &[0x6875_0002])
        .pkt3(Opcode::NOP, &[0xCAFE_0042])
        .pkt3(Opcode::NOP, &comment)
        .pkt3(Opcode::NOP, &[0x6875_0778, lo(SCRATCH), 0, 0x51])
        .pkt3(Opcode::NOP, &[0x1234_5678, 1, 2]));
    assert_eq!(
        h.log(),
        vec![
            "gfx marker push \"frame\"",
            "gfx marker pop",
            "gfx marker trace_point 0x42",
            "gfx marker comment \"hello\"",
            "gfx flip kind=0x778 label=0x100000=0x51",
        ]
    );
    assert_eq!(h.read32(SCRATCH), 0x51, "the flip label is written");
}

#[test]
fn host_commands_registered_by_the_emulator() {
    let config = ProcessorConfig {
        host_commands: vec![
            (1, HostCommand::Flip),
            (2, HostCommand::ContextPush),
            (3, HostCommand::ContextPop),
            (9, HostCommand::Custom),
        ],
        ..Default::default()
    };
    let mut h = Harness::with_config(QueueId::GRAPHICS, config);
    let cmd = Cmd::new()
        .set_context(r::DB_RENDER_CONTROL, &[1])
        .pkt3(Opcode::NOP, &[HOST_COMMAND_SIGNATURE | 2])
        .set_context(r::DB_RENDER_CONTROL, &[2])
        .pkt3(Opcode::NOP, &[HOST_COMMAND_SIGNATURE | 3])
        .pkt3(Opcode::NOP, &[HOST_COMMAND_SIGNATURE | 1])
        .pkt3(Opcode::NOP, &[HOST_COMMAND_SIGNATURE | 9, 0xAB])
        .pkt3(Opcode::NOP, &[HOST_COMMAND_SIGNATURE | 4]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.reg(r::DB_RENDER_CONTROL), 1, "context pop restored the pushed value");
    assert_eq!(h.log(), vec!["gfx flip kind=0x1", "gfx host_command code=0x9 payload=0xab"]);
}

#[test]
fn strmout_buffer_update_sets_offsets_and_saves_filled_size() {
    let mut h = Harness::new();
    h.memory.write_u32(SCRATCH + 0x40, 0x300).unwrap();
    let cmd = Cmd::new()
        .set_uconfig(r::VGT_STRMOUT_BUFFER_FILLED_SIZE_0 + 1, &[0x120])
        // buffer 1: offset from memory (SOURCE_SELECT 2)
        .pkt3(Opcode::STRMOUT_BUFFER_UPDATE, &[(2 << 1) | (1 << 8), 0, 0, lo(SCRATCH + 0x40), 0])
        // buffer 1: save filled size (UPDATE_MEMORY), no offset change
        .pkt3(Opcode::STRMOUT_BUFFER_UPDATE, &[1 | (3 << 1) | (1 << 8), lo(SCRATCH), 0, 0, 0]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.reg(r::VGT_STRMOUT_BUFFER_OFFSET_1), 0x300);
    // The loaded offset is the buffer's filled size: the store gives it back
    // (the earlier 0x120 was replaced by the load).
    assert_eq!(h.read32(SCRATCH), 0x300);
}

#[test]
fn occlusion_query_accumulates_render_backend_deltas() {
    let mut h = Harness::new();
    let v = 1u64 << 63;
    for rb in 0..16u64 {
        h.memory.write_u64(SCRATCH + rb * 16, v | 100).unwrap();
        h.memory.write_u64(SCRATCH + rb * 16 + 8, v | (100 + rb)).unwrap();
    }
    h.memory.write_u64(SCRATCH + 0x200, 1000).unwrap();
    let cmd = Cmd::new().pkt3(Opcode::OCCLUSION_QUERY, &[lo(SCRATCH), 0, lo(SCRATCH + 0x200), 0]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.read64(SCRATCH + 0x200), 1000 + (0..16).sum::<u64>());
}

#[test]
fn no_effect_packets_are_emulated_not_reported() {
    let h = run(&Cmd::new()
        .pkt3(Opcode::PFP_SYNC_ME, &[0])
        .pkt3(Opcode::PREAMBLE_CNTL, &[0])
        .pkt3(Opcode::SWITCH_BUFFER, &[0]));
    assert!(h.log().is_empty());
    assert_eq!(h.processor.stats().not_emulated.iter().sum::<u64>(), 0);
}

#[test]
fn conditional_constant_engine_buffer_and_dump_increment() {
    let mut h = Harness::new();
    h.memory.write_u64(SCRATCH + 0x80, 5).unwrap();
    // IB1 (taken when *cmp == 5) dumps with INCREMENT_CE; IB2 would not.
    let ib1 = Cmd::new()
        .pkt3(Opcode::WRITE_CONST_RAM, &[0, 0xAB])
        .pkt3(Opcode::DUMP_CONST_RAM, &[1 << 30, 1, lo(SCRATCH), 0]);
    let ib2 = Cmd::new().pkt3(Opcode::WRITE_CONST_RAM, &[0, 0xBAD]);
    h.map(0x6000, &ib1);
    h.map(0x7000, &ib2);
    let cond = [
        2 | (3 << 8), // MODE if-then-else, FUNCTION ==
        lo(SCRATCH + 0x80),
        0,
        u32::MAX,
        u32::MAX,
        5,
        0,
        0x6000,
        0,
        ib1.len(),
        0x7000,
        0,
        ib2.len(),
    ];
    let de = Cmd::new().pkt3(Opcode::INDIRECT_BUFFER_CONST, &cond).pkt3(Opcode::WAIT_ON_CE_COUNTER, &[0]);
    assert_eq!(h.run(&de), Ok(ProcessStatus::Completed));
    assert_eq!(h.read32(SCRATCH), 0xAB);
    assert_eq!(h.processor.state().ce_counter(), 1);
}

#[test]
fn set_queue_reg_keeps_the_queue_registers() {
    let mut h = Harness::with_config(QueueId::compute(1, 2).unwrap(), ProcessorConfig::default());
    assert_eq!(h.run(&Cmd::new().pkt3(Opcode::SET_QUEUE_REG, &[0x10, 7, 8])), Ok(ProcessStatus::Completed));
    assert_eq!(&h.processor.state().queue_registers()[0x10..0x12], &[7, 8]);
    assert_eq!(h.processor.stats().not_emulated_count(Opcode::SET_QUEUE_REG), 0);
}
