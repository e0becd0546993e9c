//! Semantics the hardware defines (packets.md, cited per test): DMA_DATA in
//! register space, predication HINT, GPU-wide UCONFIG registers, the
//! stream-out "draw auto", RELEASE_MEM interrupt compares, COND_EXEC dword
//! skips, CLEAR_STATE values, graphics-only packets on compute queues, GDS,
//! the indirect register loaders, mesh/task dispatches and the 0x3A draw.
//! Every test asserts the exact effect: memory bytes, register values or
//! the backend's event log.

mod common;

use common::{Cmd, Harness, SCRATCH};
use pm4core::backend::{QueueId, RecordingBackend};
use pm4core::gpu::{Gpu, GpuConfig, RunStatus};
use pm4core::memory::{GuestMemory, SparseMemory};
use pm4core::packet::{Header, Opcode};
use pm4core::processor::{GlobalState, Pm4Error, ProcessStatus, ProcessorConfig};
use pm4core::regs::gfx103 as r;

fn lo(a: u64) -> u32 {
    a as u32
}

fn compute() -> QueueId {
    QueueId::compute(0, 0).unwrap()
}

/// DMA_DATA dw0 with SRC_SEL / DST_SEL.
fn dma_dw0(src_sel: u32, dst_sel: u32) -> u32 {
    (src_sel << 29) | (dst_sel << 20)
}

const SAS: u32 = 1 << 26;
const DAS: u32 = 1 << 27;
const SAIC: u32 = 1 << 28;
const DAIC: u32 = 1 << 29;

// ------------------------------------------------------------ 1. DMA_DATA

#[test]
fn dma_data_to_registers_with_increment_writes_consecutive_registers() {
    // §3.36: DAS = register, DAIC = 0: BYTE_COUNT / 4 consecutive registers.
    let mut h = Harness::new();
    h.memory.write_bytes(SCRATCH, &[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]).unwrap();
    let dst = u64::from(r::SCRATCH_REG0) * 4;
    let cmd = Cmd::new().pkt3(Opcode::DMA_DATA, &[dma_dw0(0, 0), lo(SCRATCH), 0, lo(dst), 0, 12 | DAS]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!([h.reg(r::SCRATCH_REG0), h.reg(r::SCRATCH_REG1), h.reg(r::SCRATCH_REG2)], [1, 2, 3]);
    assert_eq!(h.reg(r::SCRATCH_REG3), 0);
}

#[test]
fn dma_data_to_one_register_without_increment_keeps_the_last_dword() {
    let mut h = Harness::new();
    h.memory.write_bytes(SCRATCH, &[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]).unwrap();
    let dst = u64::from(r::SCRATCH_REG0) * 4;
    let cmd = Cmd::new().pkt3(Opcode::DMA_DATA, &[dma_dw0(0, 0), lo(SCRATCH), 0, lo(dst), 0, 12 | DAS | DAIC]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!([h.reg(r::SCRATCH_REG0), h.reg(r::SCRATCH_REG1)], [3, 0]);
}

#[test]
fn dma_data_from_registers_reads_consecutive_registers_unless_saic() {
    let mut h = Harness::new();
    let src = u64::from(r::SCRATCH_REG0) * 4;
    let cmd = Cmd::new()
        .set_uconfig(r::SCRATCH_REG0, &[0x11, 0x22, 0x33])
        .pkt3(Opcode::DMA_DATA, &[dma_dw0(0, 0), lo(src), 0, lo(SCRATCH), 0, 12 | SAS])
        .pkt3(Opcode::DMA_DATA, &[dma_dw0(0, 0), lo(src), 0, lo(SCRATCH + 0x10), 0, 12 | SAS | SAIC]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!([h.read32(SCRATCH), h.read32(SCRATCH + 4), h.read32(SCRATCH + 8)], [0x11, 0x22, 0x33]);
    assert_eq!([h.read32(SCRATCH + 0x10), h.read32(SCRATCH + 0x14), h.read32(SCRATCH + 0x18)], [0x11; 3]);
}

#[test]
fn dma_data_fill_of_registers_and_the_read_tags_idiom() {
    let mut h = Harness::new();
    let dst = u64::from(r::SCRATCH_REG4) * 4;
    let tags = u64::from(r::CP_DMA_READ_TAGS) * 4;
    let cmd = Cmd::new()
        .pkt3(Opcode::DMA_DATA, &[dma_dw0(2, 0), 0xABCD, 0, lo(dst), 0, 8 | DAS])
        .pkt3(Opcode::DMA_DATA, &[dma_dw0(0, 0), lo(SCRATCH), 0, lo(tags), 0, 4 | DAS | DAIC]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!([h.reg(r::SCRATCH_REG4), h.reg(r::SCRATCH_REG5), h.reg(r::SCRATCH_REG6)], [0xABCD, 0xABCD, 0]);
    assert_eq!(h.reg(r::CP_DMA_READ_TAGS), 0, "the synchronisation idiom writes nothing");
}

// ------------------------------------------------------- 2. predication

/// ZPASS records of 16 render backends at SCRATCH + 0x200 with "begin"
/// valid and "end" not written yet.
fn zpass_not_final(h: &mut Harness) {
    for rb in 0..16u64 {
        h.memory.write_u64(SCRATCH + 0x200 + rb * 16, 1 << 63).unwrap();
        h.memory.write_u64(SCRATCH + 0x208 + rb * 16, 0).unwrap();
    }
}

#[test]
fn hint_draws_while_zpass_data_is_not_final_whatever_pred_bool_says() {
    // §3.9: HINT = 1 and data not final: the CP draws, for both polarities.
    for pred_bool in [0u32, 1] {
        let mut h = Harness::new();
        zpass_not_final(&mut h);
        let d0 = (1 << 16) | (1 << 12) | (pred_bool << 8);
        let cmd = Cmd::new()
            .pkt3(Opcode::SET_PREDICATION, &[d0, lo(SCRATCH + 0x200), 0])
            .pkt3_pred(Opcode::WRITE_DATA, &[5 << 8, lo(SCRATCH), 0, 0x77]);
        assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
        assert_eq!(h.read32(SCRATCH), 0x77, "PRED_BOOL {pred_bool}");
        assert_eq!(h.processor.stats().skipped, 0);
    }
}

#[test]
fn without_hint_not_final_zpass_data_waits() {
    let mut h = Harness::new();
    zpass_not_final(&mut h);
    let cmd = Cmd::new().pkt3(Opcode::SET_PREDICATION, &[(1 << 16) | (1 << 8), lo(SCRATCH + 0x200), 0]);
    assert!(matches!(h.run(&cmd), Ok(ProcessStatus::Suspended(_))));
}

// ------------------------------------------------- 3. global UCONFIG

#[test]
fn uconfig_registers_are_one_set_for_every_processor_of_a_global_state() {
    use pm4core::processor::{Env, Processor};
    use pm4core::shader::ShaderRegistry;
    use std::sync::Arc;

    let global = Arc::new(GlobalState::default());
    let mut memory = SparseMemory::new();
    memory.map_zeroed(SCRATCH, 0x1000).unwrap();
    let gfx_cmd = Cmd::new().set_uconfig(r::SCRATCH_REG2, &[0x5A]).set_sh(r::COMPUTE_USER_DATA_0, &[9]);
    memory.map_dwords(0x1000, gfx_cmd.dwords()).unwrap();
    // Compute: copy the UCONFIG register to memory (COPY_DATA reg → mem).
    let comp_cmd = Cmd::new().pkt3(Opcode::COPY_DATA, &[5 << 8, r::SCRATCH_REG2, 0, lo(SCRATCH), 0]);
    memory.map_dwords(0x2000, comp_cmd.dwords()).unwrap();
    let mut backend = RecordingBackend::new();
    let mut shaders = ShaderRegistry::default();

    let mut gfx = Processor::with_global(QueueId::GRAPHICS, ProcessorConfig::default(), Arc::clone(&global));
    let mut comp = Processor::with_global(compute(), ProcessorConfig::default(), Arc::clone(&global));
    for (p, address, size) in [(&mut gfx, 0x1000, gfx_cmd.len()), (&mut comp, 0x2000, comp_cmd.len())] {
        p.submit(address, size).unwrap();
        let mut env = Env { memory: &mut memory, backend: &mut backend, shaders: &mut shaders };
        assert_eq!(p.process(&mut env), Ok(ProcessStatus::Completed));
    }
    assert_eq!(memory.read_u32(SCRATCH).unwrap(), 0x5A, "the compute queue read the graphics queue's write");
    assert_eq!(global.uconfig(r::SCRATCH_REG2), 0x5A);
    assert_eq!(comp.registers().get(r::SCRATCH_REG2), 0x5A);
    // SH registers stay per queue.
    assert_eq!(gfx.registers().get(r::COMPUTE_USER_DATA_0), 9);
    assert_eq!(comp.registers().get(r::COMPUTE_USER_DATA_0), 0);
}

#[test]
fn a_compute_queue_waiting_on_a_uconfig_register_wakes_when_graphics_writes_it() {
    const CMD: u64 = 0x10_0000;
    const DATA: u64 = 0x20_0000;
    let mem = SparseMemory::new();
    mem.map_zeroed(CMD, 0x1_0000).unwrap();
    mem.map_zeroed(DATA, 0x1000).unwrap();
    // Compute: WAIT_REG_MEM on SCRATCH_REG0 == 7 (register space), then a label.
    let comp = Cmd::new()
        .pkt3(Opcode::WAIT_REG_MEM, &[3, r::SCRATCH_REG0, 0, 7, 0xFFFF_FFFF, 4])
        .pkt3(Opcode::WRITE_DATA, &[5 << 8, lo(DATA), 0, 0xC0FFEE]);
    // Graphics: a long run of writes first, then the register.
    let mut gfx = Cmd::new();
    for i in 0..64 {
        gfx = gfx.pkt3(Opcode::WRITE_DATA, &[5 << 8, lo(DATA + 0x100), 0, i]);
    }
    let gfx = gfx.set_uconfig(r::SCRATCH_REG0, &[7]);
    let bytes = |c: &Cmd| c.dwords().iter().flat_map(|d| d.to_le_bytes()).collect::<Vec<u8>>();
    mem.write_bytes(CMD, &bytes(&comp)).unwrap();
    mem.write_bytes(CMD + 0x1000, &bytes(&gfx)).unwrap();
    for threaded in [false, true] {
        let config = GpuConfig { slice_packets: 4, ..GpuConfig::default() };
        let gpu = if threaded {
            Gpu::threaded(mem.clone(), RecordingBackend::new(), config).unwrap()
        } else {
            Gpu::deterministic(mem.clone(), RecordingBackend::new(), config)
        };
        let c = gpu.submit(compute(), CMD, comp.len()).unwrap();
        let g = gpu.submit(QueueId::GRAPHICS, CMD + 0x1000, gfx.len()).unwrap();
        assert_eq!(gpu.run_until_stalled().unwrap(), RunStatus::Idle, "threaded: {threaded}");
        assert!(c.wait().is_ok());
        assert!(g.wait().is_ok());
        assert_eq!(gpu.with_memory_ref(|m| m.read_u32(DATA).unwrap()), 0xC0FFEE);
        assert_eq!(gpu.global().uconfig(r::SCRATCH_REG0), 7);
    }
}

// ------------------------------------------- 4. stream-out draw auto

#[test]
fn draw_index_auto_with_use_opaque_counts_filled_size_over_stride() {
    // §3.19 and §3.22: save the filled size, load it into the opaque state,
    // draw with USE_OPAQUE.
    let mut h = Harness::new();
    h.memory.write_u32(SCRATCH + 0x40, 0x180).unwrap();
    let cmd = Cmd::new()
        // buffer 0: offset (= filled size) loaded from memory
        .pkt3(Opcode::STRMOUT_BUFFER_UPDATE, &[2 << 1, 0, 0, lo(SCRATCH + 0x40), 0])
        // saved to SCRATCH (UPDATE_MEMORY, SOURCE_SELECT 3)
        .pkt3(Opcode::STRMOUT_BUFFER_UPDATE, &[1 | (3 << 1), lo(SCRATCH), 0, 0, 0])
        // the filled size into the opaque state, stride 4 dwords
        // COPY_DATA memory (SRC_SEL 1) → register (DST_SEL 0)
        .pkt3(Opcode::COPY_DATA, &[1, lo(SCRATCH), 0, r::VGT_STRMOUT_DRAW_OPAQUE_BUFFER_FILLED_SIZE, 0])
        .set_context(r::VGT_STRMOUT_DRAW_OPAQUE_VERTEX_STRIDE, &[4])
        .pkt3(Opcode::DRAW_INDEX_AUTO, &[0, 2 | (1 << 6)]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.read32(SCRATCH), 0x180);
    assert_eq!(h.reg(r::VGT_STRMOUT_BUFFER_FILLED_SIZE_0), 0x180);
    assert_eq!(h.reg(r::VGT_NUM_INDICES), 0x180 / 16);
    assert_eq!(
        h.log(),
        vec!["gfx draw DRAW_INDEX_AUTO count=24 instances=0 first=0 base_vertex=0 first_instance=0 prim=0"]
    );
}

// ------------------------------------------------ 5. RELEASE_MEM INT_SEL

#[test]
fn release_mem_int_sel_5_and_6_interrupt_only_when_the_compare_passes() {
    let mut h = Harness::new();
    h.memory.write_u64(SCRATCH + 8, 0x1_0000_0005).unwrap();
    let release = |int_sel: u32, data_sel: u32, address: u64, cmp: u64| {
        [0x28 | (5 << 8), (data_sel << 29) | (int_sel << 24), lo(address), 0, cmp as u32, (cmp >> 32) as u32, 9]
    };
    let cmd = Cmd::new()
        // 32-bit atomic add of 2 to 5 = 7; compare with 7: interrupt
        .pkt3(Opcode::RELEASE_MEM, &release(5, 7, SCRATCH + 8, 2))
        .pkt3(Opcode::RELEASE_MEM, &release(5, 0, SCRATCH + 8, 7))
        // compare with 8: none
        .pkt3(Opcode::RELEASE_MEM, &release(5, 0, SCRATCH + 8, 8))
        // 64-bit compare
        .pkt3(Opcode::RELEASE_MEM, &release(6, 0, SCRATCH + 8, 0x1_0000_0007))
        .pkt3(Opcode::RELEASE_MEM, &release(6, 0, SCRATCH + 8, 7));
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    let interrupts: Vec<bool> = h.log().iter().map(|l| l.ends_with("interrupt=true")).collect();
    assert_eq!(interrupts, [false, true, false, true, false]);
    assert_eq!(h.read64(SCRATCH + 8), 0x1_0000_0007);
}

// ------------------------------------------------------ 6. COND_EXEC

#[test]
fn cond_exec_skips_dwords_without_parsing_them() {
    // §3.10: EXEC_COUNT dwords, not packets: a type-1 dword among them is
    // never decoded.
    let mut h = Harness::new();
    let skipped = [0x4000_0000u32, 0xDEAD_BEEF, 0x4123_4567];
    let cmd = Cmd::new()
        .pkt3(Opcode::COND_EXEC, &[lo(SCRATCH + 0x80), 0, 0, skipped.len() as u32])
        .raw(&skipped)
        .write_mem(SCRATCH, &[0x99]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.read32(SCRATCH), 0x99);
    let stats = h.processor.stats();
    assert_eq!((stats.skipped, stats.packets, stats.dwords), (1, 2, u64::from(cmd.len())));
}

// ---------------------------------------------------- 7. CLEAR_STATE

#[test]
fn clear_state_loads_the_clear_state_values() {
    let mut h = Harness::new();
    let cmd = Cmd::new()
        .set_context(r::CB_TARGET_MASK, &[0xF])
        .set_context(r::DB_RENDER_CONTROL, &[5])
        .set_context(r::PA_SC_VPORT_SCISSOR_7_BR, &[0x100])
        .pkt3(Opcode::CLEAR_STATE, &[0]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.reg(r::CB_TARGET_MASK), 0xFFFF_FFFF);
    assert_eq!(h.reg(r::DB_RENDER_CONTROL), 0);
    for i in 0..16 {
        assert_eq!(h.reg(r::PA_SC_VPORT_SCISSOR_0_BR + 2 * i), 0x4000_4000, "scissor {i} BR");
        assert_eq!(h.reg(r::PA_SC_VPORT_SCISSOR_0_TL + 2 * i), 0x8000_0000, "scissor {i} TL");
        assert_eq!(f32::from_bits(h.reg(r::PA_SC_VPORT_ZMAX_0 + 2 * i)), 1.0, "viewport {i} ZMAX");
    }
    assert_eq!(h.reg(r::PA_SC_SCREEN_SCISSOR_BR), 0x4000_4000);
    assert_eq!(h.reg(r::PA_SU_SC_MODE_CNTL), 4);
    assert_eq!(h.reg(r::VGT_MAX_VTX_INDX), 0xFFFF_FFFF);
    let nonzero = pm4core::regs::generated::clear_state::NONZERO;
    assert_eq!(nonzero.len(), 85);
    for &(register, value) in nonzero {
        assert_eq!(h.reg(register), value, "{register:#x}");
    }
}

// ------------------------------------- 8. graphics packets on compute

#[test]
fn graphics_only_packets_on_a_compute_queue_are_reported_like_unknown_packets() {
    let mut h = Harness::with_config(compute(), ProcessorConfig::default());
    let cmd = Cmd::new()
        .set_context(r::DB_RENDER_CONTROL, &[5])
        .pkt3(Opcode::DRAW_INDEX_AUTO, &[3, 2])
        .pkt3(Opcode::SET_PREDICATION, &[0, 0, 0])
        .write_mem(SCRATCH, &[1]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.reg(r::DB_RENDER_CONTROL), 0, "not written");
    assert_eq!(h.read32(SCRATCH), 1, "the stream went on");
    assert_eq!(
        h.log(),
        vec![
            "comp0.0 unknown_packet header=0xc0016900 at 0x1000",
            "comp0.0 unknown_packet header=0xc0012d00 at 0x100c",
            "comp0.0 unknown_packet header=0xc0022000 at 0x1018",
        ]
    );
    let stats = h.processor.stats();
    assert_eq!((stats.unknown, stats.draws), (3, 0));
    assert_eq!(stats.unknown_packets[1].opcode, Opcode::DRAW_INDEX_AUTO.0);
    assert!(stats.unknown_packets[1].dump.contains(">0x00000000100c: c0012d00"), "{}", stats.unknown_packets[1].dump);

    // And they stop the submission under the Stop policy.
    let config =
        ProcessorConfig { unknown_packet_policy: pm4core::processor::UnknownPacketPolicy::Stop, ..Default::default() };
    let mut h = Harness::with_config(compute(), config);
    let err = h.run(&Cmd::new().pkt3(Opcode::DRAW_INDEX_AUTO, &[3, 2])).unwrap_err();
    assert!(matches!(err, Pm4Error::UnknownPacket { opcode: 0x2D, .. }), "{err:?}");
}

// ------------------------------------------------------------ 9. GDS

#[test]
fn gds_through_write_data_copy_data_dma_data_and_releases() {
    let mut h = Harness::new();
    h.memory.write_bytes(SCRATCH + 0x100, &[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0]).unwrap();
    let cmd = Cmd::new()
        // WRITE_DATA DST_SEL 3: GDS bytes 0x10..0x18
        .pkt3(Opcode::WRITE_DATA, &[3 << 8, 0x10, 0, 0xA, 0xB])
        // COPY_DATA GDS 0x10 (64-bit) → memory SCRATCH
        .pkt3(Opcode::COPY_DATA, &[3 | (5 << 8) | (1 << 16), 0x10, 0, lo(SCRATCH), 0])
        // COPY_DATA immediate → GDS 0x20
        .pkt3(Opcode::COPY_DATA, &[5 | (3 << 8), 0x55, 0, 0x20, 0])
        // DMA_DATA memory → GDS 0x40 (16 bytes), GDS 0x40 → memory SCRATCH + 0x10
        .pkt3(Opcode::DMA_DATA, &[dma_dw0(0, 1), lo(SCRATCH + 0x100), 0, 0x40, 0, 16 | DAS | DAIC])
        .pkt3(Opcode::DMA_DATA, &[dma_dw0(1, 0), 0x40, 0, lo(SCRATCH + 0x10), 0, 16 | SAS | SAIC])
        // DMA_DATA fill of GDS 0x80 (8 bytes)
        .pkt3(Opcode::DMA_DATA, &[dma_dw0(2, 1), 0x77, 0, 0x80, 0, 8 | DAS | DAIC])
        // RELEASE_MEM DATA_SEL 5: 3 dwords from GDS dword 0x10 (byte 0x40)
        .pkt3(Opcode::RELEASE_MEM, &[0x28 | (5 << 8), 5 << 29, lo(SCRATCH + 0x20), 0, 0x10 | (3 << 16), 0, 0])
        // EVENT_WRITE_EOS COMMAND 1: 2 dwords from GDS dword 0x20 (byte 0x80)
        .pkt3(Opcode::EVENT_WRITE_EOS, &[0x2F | (6 << 8), lo(SCRATCH + 0x30), 1 << 29, 0x20 | (2 << 16)]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    let global = h.processor.global();
    let mut gds = [0u32; 2];
    global.read_gds(0x10, &mut gds).unwrap();
    assert_eq!(gds, [0xA, 0xB]);
    assert_eq!(h.read64(SCRATCH), 0xB_0000_000A);
    global.read_gds(0x20, &mut gds[..1]).unwrap();
    assert_eq!(gds[0], 0x55);
    let mem = |h: &Harness, a: u64, n: u64| (0..n).map(|i| h.read32(a + 4 * i)).collect::<Vec<_>>();
    assert_eq!(mem(&h, SCRATCH + 0x10, 4), [1, 2, 3, 4]);
    assert_eq!(mem(&h, SCRATCH + 0x20, 4), [1, 2, 3, 0]);
    assert_eq!(mem(&h, SCRATCH + 0x30, 3), [0x77, 0x77, 0]);
    assert_eq!(h.processor.stats().not_emulated.iter().sum::<u64>(), 0);
}

#[test]
fn gds_is_global_configurable_and_bounded() {
    let config = ProcessorConfig { gds_bytes: 0x100, ..Default::default() };
    let mut h = Harness::with_config(QueueId::GRAPHICS, config);
    let err = h.run(&Cmd::new().pkt3(Opcode::WRITE_DATA, &[3 << 8, 0xFC, 0, 1, 2])).unwrap_err();
    assert!(
        matches!(err, Pm4Error::Gds { source: pm4core::processor::GdsError { offset: 0xFC, len: 8, size: 0x100 }, .. }),
        "{err:?}"
    );
    assert_eq!(err.kind(), "gds");
}

#[test]
fn gds_append_count_store_is_reported_not_emulated() {
    let mut h = Harness::new();
    let cmd = Cmd::new().pkt3(Opcode::EVENT_WRITE_EOS, &[0x2F | (6 << 8), lo(SCRATCH), 0, 0]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.processor.stats().not_emulated_count(Opcode::EVENT_WRITE_EOS), 1);
    assert_eq!(h.log()[0], "gfx not_emulated EVENT_WRITE_EOS at 0x1000");
}

// --------------------------------------- 10. indirect register loaders

#[test]
fn set_context_reg_indirect_loads_from_the_patch_table() {
    let mut h = Harness::new();
    h.memory.write_bytes(SCRATCH + 0x40, &[0x11, 0, 0, 0, 0x22, 0, 0, 0]).unwrap();
    let cmd = Cmd::new()
        .pkt3(Opcode::SET_BASE, &[0, lo(SCRATCH), 0])
        // DB_RENDER_CONTROL, DB_COUNT_CONTROL ← table dwords 0x11 and 0x10
        .pkt3(Opcode::SET_CONTEXT_REG_INDIRECT, &[r::DB_RENDER_CONTROL - 0xA000, 0x11, 0x10]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!([h.reg(r::DB_RENDER_CONTROL), h.reg(r::DB_RENDER_CONTROL + 1)], [0x22, 0x11]);
}

#[test]
fn set_sh_reg_offset_forms() {
    let mut h = Harness::new();
    h.memory.write_bytes(SCRATCH + 0x20, &[0x11, 0, 0, 0, 0x22, 0, 0, 0]).unwrap();
    let ud = r::SPI_SHADER_USER_DATA_PS_0;
    let cmd = Cmd::new()
        .pkt3(Opcode::SET_BASE, &[5, lo(SCRATCH), 0])
        // INDEX 0: address of the current IB + IB_OFFSET × 4, DRIVER_DATA on top
        .pkt3(Opcode::SET_SH_REG_OFFSET, &[ud - 0x2C00, 0x40, 0xAB_0000])
        // INDEX 2: one dword from the SET_BASE index-5 base + 0x20
        .pkt3(Opcode::SET_SH_REG_OFFSET, &[(ud + 2 - 0x2C00) | (2 << 30), 0x20, 0])
        // INDEX 1: two dwords
        .pkt3(Opcode::SET_SH_REG_OFFSET, &[(ud + 4 - 0x2C00) | (1 << 30), 0x20, 0]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    let regs: Vec<u32> = (0..6).map(|i| h.reg(ud + i)).collect();
    assert_eq!(regs, [0x1000 + 0x100, 0xAB_0000, 0x11, 0, 0x11, 0x22]);
}

// ------------------------------------------------- 11. mesh and task

#[test]
fn mesh_dispatches_reach_the_backend_as_draws_counted_once() {
    let mut h = Harness::new();
    for (i, dims) in [[2u32, 3, 4], [5, 1, 1], [9, 9, 9]].iter().enumerate() {
        for (k, d) in dims.iter().enumerate() {
            h.memory.write_u32(SCRATCH + 0x100 + i as u64 * 16 + k as u64 * 4, *d).unwrap();
        }
    }
    h.memory.write_u32(SCRATCH + 0x80, 2).unwrap();
    let xyz = r::SPI_SHADER_USER_DATA_GS_0 - 0x2C00;
    let cmd = Cmd::new()
        .pkt3(Opcode::SET_BASE, &[1, lo(SCRATCH + 0x100), 0])
        // count 3, indirect count 2, draw index to user data 3
        .pkt3(
            Opcode::DISPATCH_MESH_INDIRECT_MULTI,
            &[0, xyz | ((xyz + 3) << 16), (1 << 30) | (1 << 31), 3, lo(SCRATCH + 0x80), 0, 16, 2],
        )
        .pkt3(Opcode::DISPATCH_TASKMESH_GFX, &[0, 0, 2]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(
        h.log(),
        vec![
            "gfx draw DISPATCH_MESH_INDIRECT_MULTI count=0 instances=1 first=0 base_vertex=0 first_instance=0 prim=0 \
             args=0x100100 draw_index=0 mesh=2,3,4",
            "gfx draw DISPATCH_MESH_INDIRECT_MULTI count=0 instances=1 first=0 base_vertex=0 first_instance=0 prim=0 \
             args=0x100110 draw_index=1 mesh=5,1,1",
            "gfx draw DISPATCH_TASKMESH_GFX count=0 instances=1 first=0 base_vertex=0 first_instance=0 prim=0",
        ]
    );
    let user: Vec<u32> = (0..4).map(|i| h.reg(r::SPI_SHADER_USER_DATA_GS_0 + i)).collect();
    assert_eq!(user, [5, 1, 1, 1]);
    assert_eq!(h.processor.stats().draws, 2, "a multi packet counts once");
}

#[test]
fn task_dispatches_reach_the_backend_as_dispatches_counted_once() {
    let mut h = Harness::with_config(compute(), ProcessorConfig::default());
    for (i, dims) in [[4u32, 1, 1], [2, 2, 1]].iter().enumerate() {
        for (k, d) in dims.iter().enumerate() {
            h.memory.write_u32(SCRATCH + 0x100 + i as u64 * 12 + k as u64 * 4, *d).unwrap();
        }
    }
    let xyz = r::COMPUTE_USER_DATA_0 - 0x2C00;
    let flags = (1 << 2) | (1 << 3) | ((xyz + 3) << 16);
    let cmd = Cmd::new()
        .pkt3(Opcode::DISPATCH_TASK_STATE_INIT, &[0x1234_5600, 0x12])
        .pkt3(Opcode::DISPATCH_TASKMESH_DIRECT_ACE, &[7, 1, 1, 1, 0])
        .pkt3(Opcode::DISPATCH_TASKMESH_INDIRECT_MULTI_ACE, &[lo(SCRATCH + 0x100), 0, 0, flags, xyz, 2, 0, 0, 12, 1]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(
        h.log(),
        vec![
            "comp0.0 dispatch DISPATCH_TASKMESH_DIRECT_ACE dims=7,1,1 start=0,0,0 group=0,0,0",
            "comp0.0 dispatch DISPATCH_TASKMESH_INDIRECT_MULTI_ACE dims=4,1,1 start=0,0,0 group=0,0,0 args=0x100100",
            "comp0.0 dispatch DISPATCH_TASKMESH_INDIRECT_MULTI_ACE dims=2,2,1 start=0,0,0 group=0,0,0 args=0x10010c",
        ]
    );
    let user: Vec<u32> = (0..4).map(|i| h.reg(r::COMPUTE_USER_DATA_0 + i)).collect();
    assert_eq!(user, [2, 2, 1, 1]);
    assert_eq!(h.processor.state().task_control_buffer(), 0x12_1234_5600);
    assert_eq!(h.processor.stats().dispatches, 2, "a multi packet counts once");
}

// -------------------------------------------- 12. 0x3A and decode-only

#[test]
fn multi_instance_draw_is_an_indexed_instanced_draw() {
    let mut h = Harness::new();
    let cmd = Cmd::new()
        .set_uconfig(r::VGT_INDEX_TYPE, &[1])
        .pkt3(Opcode::DRAW_INDEX_MULTI_INST, &[36, 0x0040_0000, 0x1, 8, 0x500, 0, 6, 0x80])
        .pkt3(Opcode::DRAW_INDEX_MULTI_INST, &[1, 2, 3]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(
        h.log(),
        vec![
            "gfx draw DRAW_INDEX_MULTI_INST count=36 instances=6 first=0 base_vertex=0 first_instance=0 prim=0 \
             index=0x100400000/4b/max=36",
            "gfx not_emulated DRAW_INDEX_MULTI_INST at 0x1030",
        ]
    );
    assert_eq!(h.reg(r::VGT_DRAW_INITIATOR), 0x80);
    assert_eq!(h.processor.stats().draws, 1);
}

#[test]
fn decode_only_packets_are_counted_as_not_emulated_with_no_effect() {
    let mut h = Harness::new();
    let cmd = Cmd::new()
        .pkt3(Opcode::GET_LOD_STATS, &[64, lo(SCRATCH), 0, 0])
        .pkt3(Opcode::PERFMON_CONTROL, &[1, 2])
        .pkt3(Opcode::DISPATCH_DRAW_PREAMBLE, &[0, 0, 0, 0, 0])
        .pkt3(Opcode::DISPATCH_DRAW, &[0, 4 << 16, 3, 0, 2]);
    h.memory.write_u32(SCRATCH, 0x1234).unwrap();
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.read32(SCRATCH), 0x1234, "GET_LOD_STATS writes nothing");
    for op in [Opcode::GET_LOD_STATS, Opcode::PERFMON_CONTROL, Opcode::DISPATCH_DRAW_PREAMBLE, Opcode::DISPATCH_DRAW] {
        assert_eq!(h.processor.stats().not_emulated_count(op), 1, "{op}");
    }
    assert_eq!(h.processor.stats().draws, 0);
}

#[test]
fn decode_only_packets_show_their_fields_in_the_disassembler() {
    use pm4core::disasm::decode_fields;
    use pm4core::packet::{Packet, PacketLocation};
    use pm4core::regs::db::GpuFamily;

    let fields = |op: Opcode, body: &[u32]| {
        let location = PacketLocation { buffer: 0, buffer_size_dw: body.len() as u32 + 1, offset_dw: 0 };
        let p = Packet { header: Header::type3(op, body.len() as u32), body, location };
        decode_fields(GpuFamily::Gfx103, &p)
            .unwrap()
            .into_iter()
            .map(|f| format!("{}={}", f.name, f.value))
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        fields(Opcode::GET_LOD_STATS, &[64, 0x1040, 0x2, (3 << 2) | (1 << 19)]),
        "BU_SIZE=64 BASE=0x200001040 INTERVAL=3 RESET_CNT=0 RESET_FORCE=0 REPORT_AND_RESET=1 CACHE_POLICY=0"
    );
    assert_eq!(fields(Opcode::PERFMON_CONTROL, &[1, 0x20]), "DWORDS=0x1,0x20");
    assert_eq!(
        fields(Opcode::DISPATCH_DRAW, &[5, 4 << 16, 3, 0, 2]).split(" DRAW_INITIATOR").next().unwrap(),
        "INDEX_OFFSET=5 PRIM_TYPE=4 INDEX_COUNT=3 VRB_CONTROL=0x0"
    );
    assert_eq!(
        fields(Opcode::DISPATCH_DRAW_PREAMBLE, &[1, 2, 0x100, 0, 64]),
        "KRB=0x1 CONTROL=0x2 IRB_ADDR=0x100 IRB_WRAP_SIZE=64"
    );
    assert_eq!(
        fields(Opcode::SET_SH_REG_OFFSET, &[0x0E | (2 << 30), 0x20, 0]),
        "REG=SPI_SHADER_USER_DATA_PS_2 INDEX=2(data_indirect_1dw) DATA_OFFSET=0x20 DRIVER_DATA=0x0"
    );
}
