//! The ProcessPm4 loop: indirect buffers, predication, COND_EXEC, suspend
//! and resume, limits, unknown packets.

mod common;

use common::{Cmd, Harness, SCRATCH};
use pm4core::backend::QueueId;
use pm4core::memory::GuestMemory;
use pm4core::packet::body::{CompareFunction, PollTarget};
use pm4core::packet::{Opcode, NOP_PAD, TYPE2_FILLER};
use pm4core::processor::{Pm4Error, ProcessStatus, ProcessorConfig, SuspendReason, UnknownPacketPolicy};
use pm4core::regs::gfx103 as r;

#[test]
fn three_deep_nested_ibs_and_a_chain_run_in_order() {
    let mut h = Harness::new();
    // Level 3 writes 3; level 2 writes 2a, calls level 3, writes 2b;
    // level 1 calls level 2 then chains to a tail that writes 4.
    let l3 = Cmd::new().write_mem(SCRATCH, &[3]).set_context(r::DB_RENDER_CONTROL, &[0x33]);
    let l2 = Cmd::new().write_mem(SCRATCH + 4, &[0x2a]).ib(0x3000, l3.len(), false).write_mem(SCRATCH + 8, &[0x2b]);
    let tail = Cmd::new().write_mem(SCRATCH + 12, &[4]);
    let l1 = Cmd::new()
        .ib(0x2000, l2.len(), false)
        .ib(0x5000, tail.len(), true)
        // Never reached: the chain does not return.
        .write_mem(SCRATCH + 16, &[0xdead]);
    let root = Cmd::new().ib(0x4000, l1.len(), false).write_mem(SCRATCH + 20, &[5]);
    h.map(0x2000, &l2);
    h.map(0x3000, &l3);
    h.map(0x4000, &l1);
    h.map(0x5000, &tail);
    assert_eq!(h.run(&root), Ok(ProcessStatus::Completed));
    assert_eq!(
        [h.read32(SCRATCH), h.read32(SCRATCH + 4), h.read32(SCRATCH + 8), h.read32(SCRATCH + 12)],
        [3, 0x2a, 0x2b, 4]
    );
    assert_eq!(h.read32(SCRATCH + 16), 0, "the packet after a chain must not run");
    assert_eq!(h.read32(SCRATCH + 20), 5, "the root resumes after its IB returns");
    assert_eq!(h.reg(r::DB_RENDER_CONTROL), 0x33);
    assert_eq!(h.processor.stats().by_opcode[Opcode::INDIRECT_BUFFER.0 as usize], 4);
    assert!(h.processor.is_idle());
}

#[test]
fn sign_extended_ib_addresses_use_48_bits() {
    let mut h = Harness::new();
    let child = Cmd::new().write_mem(SCRATCH, &[7]);
    h.map(0x8001_0000_2000, &child);
    let root = Cmd::new().pkt3(Opcode::INDIRECT_BUFFER, &[0x2000, 0xFFFF_8001, child.len()]);
    assert_eq!(h.run(&root), Ok(ProcessStatus::Completed));
    assert_eq!(h.read32(SCRATCH), 7);
}

#[test]
fn pads_and_fillers_are_one_dword() {
    let mut h = Harness::new();
    let cmd = Cmd::new().raw(&[NOP_PAD, TYPE2_FILLER, 0x8123_4567, NOP_PAD]).write_mem(SCRATCH, &[1]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    let s = h.processor.stats();
    assert_eq!(s.by_opcode[Opcode::NOP.0 as usize], 2);
    assert_eq!(s.type2, 2);
    assert_eq!(s.packets, 5);
    assert_eq!(h.read32(SCRATCH), 1);
}

#[test]
fn type0_packets_write_registers() {
    let mut h = Harness::new();
    // Type 0: COUNT = values - 1, BASE = register index.
    let cmd = Cmd::new().raw(&[(1 << 16) | r::PA_SC_WINDOW_OFFSET, 0x11, 0x22]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.reg(r::PA_SC_WINDOW_OFFSET), 0x11);
    assert_eq!(h.reg(r::PA_SC_WINDOW_OFFSET + 1), 0x22);
    assert_eq!(h.processor.stats().type0, 1);
}

fn predication_cmd(value_addr: u64, draw_if_visible: bool) -> Cmd {
    // SET_PREDICATION bool32 (op 4), then a predicated and an unpredicated write.
    let flags = (4 << 16) | if draw_if_visible { 1 << 8 } else { 0 };
    Cmd::new()
        .pkt3(Opcode::SET_PREDICATION, &[flags, value_addr as u32, (value_addr >> 32) as u32])
        .pkt3_pred(Opcode::WRITE_DATA, &[5 << 8, SCRATCH as u32 + 0x100, 0, 0xAA])
        .write_mem(SCRATCH + 0x104, &[0xBB])
        .pkt3(Opcode::SET_PREDICATION, &[0, 0, 0])
        .pkt3_pred(Opcode::WRITE_DATA, &[5 << 8, SCRATCH as u32 + 0x108, 0, 0xCC])
}

#[test]
fn predication_skips_predicated_packets_when_false() {
    let mut h = Harness::new();
    // Value 0 with "draw if visible": predicated packets are skipped.
    assert_eq!(h.run(&predication_cmd(SCRATCH + 0x200, true)), Ok(ProcessStatus::Completed));
    assert_eq!(h.read32(SCRATCH + 0x100), 0, "skipped");
    assert_eq!(h.read32(SCRATCH + 0x104), 0xBB, "unpredicated packets always run");
    assert_eq!(h.read32(SCRATCH + 0x108), 0xCC, "op 0 clears predication");
    assert_eq!(h.processor.stats().skipped, 1);
    assert_eq!(h.processor.stats().by_opcode[Opcode::WRITE_DATA.0 as usize], 3, "skipped packets are counted");
}

#[test]
fn predication_runs_predicated_packets_when_true() {
    let mut h = Harness::new();
    h.memory.map_dwords(0x9000, &[1]).unwrap();
    assert_eq!(h.run(&predication_cmd(0x9000, true)), Ok(ProcessStatus::Completed));
    assert_eq!(h.read32(SCRATCH + 0x100), 0xAA);
    assert_eq!(h.processor.stats().skipped, 0);
    // Inverted polarity: a non-zero value skips.
    let mut h = Harness::new();
    h.memory.map_dwords(0x9000, &[1]).unwrap();
    assert_eq!(h.run(&predication_cmd(0x9000, false)), Ok(ProcessStatus::Completed));
    assert_eq!(h.read32(SCRATCH + 0x100), 0);
}

#[test]
fn zpass_predication_uses_render_backend_records() {
    // 16 records {begin, end} with bit 63 valid; one backend counted 5.
    let mut h = Harness::new();
    let valid = 1u64 << 63;
    let mut words = Vec::new();
    for rb in 0..16u64 {
        let (begin, end) = (valid | 10, valid | if rb == 3 { 15 } else { 10 });
        words.extend_from_slice(&[begin as u32, (begin >> 32) as u32, end as u32, (end >> 32) as u32]);
    }
    h.memory.map_dwords(0x9000, &words).unwrap();
    let cmd = Cmd::new()
        .pkt3(Opcode::SET_PREDICATION, &[(1 << 16) | (1 << 8), 0x9000, 0])
        .pkt3_pred(Opcode::WRITE_DATA, &[5 << 8, SCRATCH as u32, 0, 1]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.read32(SCRATCH), 1, "visible: the predicated write runs");
}

#[test]
fn cond_exec_skips_when_zero_and_runs_when_not() {
    for (value, expect) in [(0u32, 0u32), (1, 0x55)] {
        let mut h = Harness::new();
        h.memory.map_dwords(0x9000, &[value]).unwrap();
        let guarded = Cmd::new().write_mem(SCRATCH, &[0x55]);
        let cmd = Cmd::new()
            .pkt3(Opcode::COND_EXEC, &[0x9000, 0, 0, guarded.len()])
            .raw(guarded.dwords())
            .write_mem(SCRATCH + 4, &[0x66]);
        assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
        assert_eq!(h.read32(SCRATCH), expect);
        assert_eq!(h.read32(SCRATCH + 4), 0x66);
        assert_eq!(h.processor.stats().skipped, u64::from(value == 0));
    }
}

#[test]
fn cond_exec_past_the_end_is_an_error() {
    let mut h = Harness::new();
    h.memory.map_dwords(0x9000, &[0]).unwrap();
    let cmd = Cmd::new().pkt3(Opcode::COND_EXEC, &[0x9000, 0, 0, 100]).write_mem(SCRATCH, &[1]);
    let err = h.run(&cmd).unwrap_err();
    assert!(matches!(err, Pm4Error::SkipPastEnd { skip_dw: 100, remaining_dw: 5, .. }), "{err}");
    assert!(h.processor.is_idle());
}

#[test]
fn pred_exec_runs_only_for_device_zero() {
    let mut h = Harness::new();
    let guarded = Cmd::new().write_mem(SCRATCH, &[1]);
    let cmd = Cmd::new()
        .pkt3(Opcode::PRED_EXEC, &[(0b10 << 24) | guarded.len()])
        .raw(guarded.dwords())
        .pkt3(Opcode::PRED_EXEC, &[(0b01 << 24) | guarded.len()])
        .write_mem(SCRATCH + 4, &[2]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.read32(SCRATCH), 0);
    assert_eq!(h.read32(SCRATCH + 4), 2);
}

#[test]
fn wait_reg_mem_suspends_then_resumes_after_a_write() {
    let mut h = Harness::new();
    let label = SCRATCH + 0x40;
    let inner = Cmd::new().wait_mem(label, 3, 1, 0xFFFF_FFFF).write_mem(SCRATCH, &[0x99]);
    h.map(0x2000, &inner);
    let cmd = Cmd::new().ib(0x2000, inner.len(), false).write_mem(SCRATCH + 4, &[0x77]);
    let status = h.run(&cmd).unwrap();
    let ProcessStatus::Suspended(reason) = status else { panic!("{status:?}") };
    assert_eq!(
        reason,
        SuspendReason::WaitRegMem {
            target: PollTarget::Memory(label),
            function: CompareFunction::Equal,
            reference: 1,
            mask: 0xFFFF_FFFF,
            current: 0,
            is_64: false
        }
    );
    assert_eq!(h.processor.execution().depth(), 2, "suspended inside the IB");
    assert_eq!(h.read32(SCRATCH), 0);
    // Still false: stays suspended, nothing runs twice.
    assert_eq!(h.process(), Ok(ProcessStatus::Suspended(reason)));
    // The host writes the label: the wait passes and the rest runs once.
    use pm4core::memory::GuestMemory;
    h.memory.write_u32(label, 1).unwrap();
    assert_eq!(h.process(), Ok(ProcessStatus::Completed));
    assert_eq!((h.read32(SCRATCH), h.read32(SCRATCH + 4)), (0x99, 0x77));
    assert_eq!(h.processor.stats().waits, 2);
    assert_eq!(h.processor.stats().by_opcode[Opcode::WAIT_REG_MEM.0 as usize], 1);
    assert_eq!(h.processor.stats().by_opcode[Opcode::WRITE_DATA.0 as usize], 2);
}

#[test]
fn an_ib_cycle_exhausts_the_work_budget() {
    let config = ProcessorConfig { work_budget: 10_000, ..Default::default() };
    let mut h = Harness::with_config(QueueId::GRAPHICS, config);
    // A buffer that chains to itself.
    let cmd = Cmd::new().write_mem(SCRATCH, &[1]).ib(0x1000, 9, true);
    assert_eq!(cmd.len(), 9);
    let err = h.run(&cmd).unwrap_err();
    assert!(matches!(err, Pm4Error::WorkBudgetExhausted { budget: 10_000, .. }), "{err}");
}

#[test]
fn an_ib_calling_itself_overflows_the_stack() {
    let mut h = Harness::new();
    let cmd = Cmd::new().ib(0x1000, 4, false);
    let err = h.run(&cmd).unwrap_err();
    assert_eq!(
        err,
        Pm4Error::IbStackOverflow {
            location: pm4core::packet::PacketLocation { buffer: 0x1000, buffer_size_dw: 4, offset_dw: 0 },
            target: 0x1000,
            depth: 9,
            limit: 8
        }
    );
}

#[test]
fn a_deeper_limit_is_configurable() {
    let config = ProcessorConfig { max_ib_depth: 2, ..Default::default() };
    let mut h = Harness::with_config(QueueId::GRAPHICS, config);
    let l2 = Cmd::new().ib(0x3000, 2, false);
    h.map(0x2000, &l2);
    h.map(0x3000, &Cmd::new().raw(&[NOP_PAD, NOP_PAD]));
    let err = h.run(&Cmd::new().ib(0x2000, l2.len(), false)).unwrap_err();
    assert!(matches!(err, Pm4Error::IbStackOverflow { depth: 3, limit: 2, .. }), "{err}");
}

#[test]
fn unknown_opcode_is_dumped_and_skipped() {
    let mut h = Harness::new();
    let cmd = Cmd::new()
        .write_mem(SCRATCH, &[1])
        .raw(&[0xC001_0100, 0xAAAA_AAAA, 0xBBBB_BBBB]) // opcode 0x01: not in the map
        .write_mem(SCRATCH + 4, &[2]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!((h.read32(SCRATCH), h.read32(SCRATCH + 4)), (1, 2), "packets after it still run");
    let stats = h.processor.stats();
    assert_eq!(stats.unknown, 1);
    let report = &stats.unknown_packets[0];
    assert_eq!((report.address, report.header, report.opcode, report.length_dw), (0x1014, 0xC001_0100, 1, 3));
    let lines: Vec<&str> = report.dump.lines().collect();
    // 5 dwords before it (the buffer starts there), the header, 12 after (buffer end).
    assert_eq!(lines.len(), 5 + 1 + 7);
    assert_eq!(lines[5], ">0x000000001014: c0010100");
    assert_eq!(lines[6], " 0x000000001018: aaaaaaaa");
    assert_eq!(lines[0], " 0x000000001000: c0033700");
    assert_eq!(h.backend.unknown.len(), 1);
}

#[test]
fn unknown_opcode_can_stop_the_submission() {
    let config = ProcessorConfig { unknown_packet_policy: UnknownPacketPolicy::Stop, ..Default::default() };
    let mut h = Harness::with_config(QueueId::GRAPHICS, config);
    let cmd = Cmd::new().raw(&[0xC000_0200, 0]).write_mem(SCRATCH, &[2]);
    let err = h.run(&cmd).unwrap_err();
    assert!(matches!(err, Pm4Error::UnknownPacket { header: 0xC000_0200, opcode: 2, .. }));
    assert_eq!(h.read32(SCRATCH), 0);
}

#[test]
fn known_but_not_emulated_opcodes_are_counted_and_skipped() {
    let mut h = Harness::new();
    let cmd = Cmd::new().pkt3(Opcode::GET_LOD_STATS, &[0, 0, 0, 0]).write_mem(SCRATCH, &[3]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.processor.stats().not_emulated[Opcode::GET_LOD_STATS.0 as usize], 1);
    assert_eq!(h.read32(SCRATCH), 3);
    assert_eq!(h.log()[0], "gfx not_emulated GET_LOD_STATS at 0x1000");
}

#[test]
fn a_packet_running_past_its_buffer_is_an_error() {
    let mut h = Harness::new();
    let cmd = Cmd::new().raw(&[0xC005_1000, 1, 2]);
    let err = h.run(&cmd).unwrap_err();
    assert_eq!(
        err,
        Pm4Error::PacketOverrun {
            location: pm4core::packet::PacketLocation { buffer: 0x1000, buffer_size_dw: 3, offset_dw: 0 },
            header: 0xC005_1000,
            length_dw: 7,
            remaining_dw: 3
        }
    );
}

#[test]
fn a_type1_header_is_an_error() {
    let mut h = Harness::new();
    let err = h.run(&Cmd::new().raw(&[NOP_PAD, 0x4000_0000])).unwrap_err();
    assert!(matches!(err, Pm4Error::Type1Header { header: 0x4000_0000, location } if location.offset_dw == 1));
}

#[test]
fn an_unmapped_ib_is_an_error_naming_the_address() {
    let mut h = Harness::new();
    let err = h.run(&Cmd::new().ib(0xDEAD_0000, 16, false)).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("0xdead0000"), "{text}");
    assert!(matches!(err, Pm4Error::Memory { .. }));
}

#[test]
fn yielded_slices_resume_exactly() {
    let mut h = Harness::new();
    let mut cmd = Cmd::new();
    for i in 0..10 {
        cmd = cmd.write_mem(SCRATCH + 4 * i, &[i as u32 + 1]);
    }
    h.map(0x1000, &cmd);
    h.submit(0x1000, cmd.len());
    let mut slices = 0;
    loop {
        let mut env =
            pm4core::processor::Env { memory: &mut h.memory, backend: &mut h.backend, shaders: &mut h.shaders };
        match h.processor.process_slice(&mut env, 3).unwrap() {
            ProcessStatus::Yielded => slices += 1,
            ProcessStatus::Completed => break,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(slices, 3);
    for i in 0..10 {
        assert_eq!(h.read32(SCRATCH + 4 * i), i as u32 + 1);
    }
}

#[test]
fn a_write_into_the_stream_ahead_is_seen() {
    // WRITE_DATA patches the next packet's data dword: the prefetch window
    // must not serve the stale copy.
    let mut h = Harness::new();
    let cmd = Cmd::new().write_mem(0x1000 + 4 * 9, &[0x1234]).write_mem(SCRATCH, &[0]);
    assert_eq!(cmd.len(), 10);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.read32(SCRATCH), 0x1234);
}

#[test]
fn a_host_write_between_slices_into_a_lent_stream_is_seen() {
    // The stream is mapped from shared bytes, so the prefetch window reads
    // it in place (lent, not copied). The host patches the data dword of
    // the last packet while the queue is between slices: the next slice
    // must write the patched value.
    let mut h = Harness::new();
    let cmd = Cmd::new().write_mem(SCRATCH, &[1]).write_mem(SCRATCH + 4, &[2]).write_mem(SCRATCH + 8, &[3]);
    assert_eq!(cmd.len(), 15);
    h.map(0x1000, &cmd);
    h.submit(0x1000, cmd.len());
    let mut env = pm4core::processor::Env { memory: &mut h.memory, backend: &mut h.backend, shaders: &mut h.shaders };
    assert_eq!(h.processor.process_slice(&mut env, 1), Ok(ProcessStatus::Yielded));
    h.memory.write_u32(0x1000 + 4 * 14, 0x3333).unwrap();
    assert_eq!(h.process(), Ok(ProcessStatus::Completed));
    assert_eq!((h.read32(SCRATCH), h.read32(SCRATCH + 4), h.read32(SCRATCH + 8)), (1, 2, 0x3333));
}

/// Runs `cmd` in slices of `slice` packets: after each, the packets run,
/// the NOPs among them and SPI_SHADER_USER_DATA_GS_0.
fn counts_per_slice(cmd: &Cmd, slice: u64) -> Vec<(u64, u64, u32)> {
    let mut h = Harness::new();
    h.map(0x1000, cmd);
    h.submit(0x1000, cmd.len());
    let mut counts = Vec::new();
    loop {
        let mut env =
            pm4core::processor::Env { memory: &mut h.memory, backend: &mut h.backend, shaders: &mut h.shaders };
        let status = h.processor.process_slice(&mut env, slice).unwrap();
        let s = h.processor.stats();
        counts.push((s.packets, s.opcode_count(Opcode::NOP), h.processor.register(r::SPI_SHADER_USER_DATA_GS_0)));
        if status == ProcessStatus::Completed {
            return counts;
        }
        assert_eq!(status, ProcessStatus::Yielded);
    }
}

/// Runs `cmd` under a work budget of `budget` packets: it must end at the
/// packet past the budget, a pad, with `budget` NOPs run.
fn assert_budget_ends_in_pads(cmd: &Cmd, budget: u64) {
    let config = ProcessorConfig { work_budget: budget, ..Default::default() };
    let mut h = Harness::with_config(QueueId::GRAPHICS, config);
    let err = h.run(cmd).unwrap_err();
    assert!(
        matches!(err, Pm4Error::WorkBudgetExhausted { location, budget: b } if b == budget && u64::from(location.offset_dw) == budget),
        "{err}"
    );
    assert_eq!(h.processor.stats().opcode_count(Opcode::NOP), budget);
}

#[test]
fn a_run_of_pads_is_cut_by_the_slice_and_the_work_budget() {
    // Ten pads, then a register write: slices of 4 packets stop inside the
    // run of pads (taken in one go by the loop) and resume after it.
    let cmd = Cmd::new().raw(&[NOP_PAD; 10]).set_sh(r::SPI_SHADER_USER_DATA_GS_0, &[7]).raw(&[NOP_PAD; 2]);
    assert_eq!(counts_per_slice(&cmd, 4), [(4, 4, 0), (8, 8, 0), (12, 11, 7), (13, 12, 7)]);
    // A work budget of 6 packets ends the submission in the run, naming
    // the seventh pad.
    assert_budget_ends_in_pads(&cmd, 6);

    // Long runs (counted eight at a time past the first eight): 45 pads,
    // a register write, 3 pads, in slices of 19 packets, then a budget
    // ending inside the eight-at-a-time part and inside its tail.
    let cmd = Cmd::new().raw(&[NOP_PAD; 45]).set_sh(r::SPI_SHADER_USER_DATA_GS_0, &[9]).raw(&[NOP_PAD; 3]);
    assert_eq!(counts_per_slice(&cmd, 19), [(19, 19, 0), (38, 38, 0), (49, 48, 9)]);
    assert_budget_ends_in_pads(&cmd, 21);
    assert_budget_ends_in_pads(&cmd, 43);
}

#[test]
fn busy_processor_refuses_a_second_submission() {
    let mut h = Harness::new();
    let cmd = Cmd::new().wait_mem(SCRATCH, 3, 1, 1);
    assert!(matches!(h.run(&cmd), Ok(ProcessStatus::Suspended(_))));
    assert_eq!(h.processor.submit(0x1000, 1), Err(Pm4Error::Busy));
}

/// What a draw saw: its instance count, the state groups changed since
/// the previous draw, its packet's place (dwords into its buffer) and
/// opcode, its count and its index buffer's address.
#[derive(Debug, PartialEq)]
struct DrawState {
    instances: u32,
    changed: u32,
    offset_dw: u32,
    opcode: Opcode,
    count: u32,
    index_address: Option<u64>,
}

/// A backend that keeps what each draw saw.
#[derive(Default)]
struct DrawStates(Vec<DrawState>);

impl pm4core::backend::Backend for DrawStates {
    fn draw(&mut self, draw: &pm4core::backend::Draw<'_>) {
        self.0.push(DrawState {
            instances: draw.instance_count,
            changed: draw.changed,
            offset_dw: draw.location.offset_dw,
            opcode: draw.opcode,
            count: draw.count,
            index_address: draw.index_buffer.map(|ib| ib.address),
        });
    }
}

/// Runs `cmd` on a fresh processor and returns what the draws saw, with the
/// processor (for its registers and counts).
fn draw_states(cmd: &Cmd, config: ProcessorConfig) -> (Vec<DrawState>, pm4core::processor::Processor) {
    let memory = pm4core::memory::SparseMemory::new();
    memory.map_dwords(0x1000, cmd.dwords()).unwrap();
    let mut processor = pm4core::processor::Processor::with_config(QueueId::GRAPHICS, config);
    let mut backend = DrawStates::default();
    let mut shaders = pm4core::shader::ShaderRegistry::default();
    processor.submit(0x1000, cmd.len()).unwrap();
    let mut env = pm4core::processor::Env { memory: &memory, backend: &mut backend, shaders: &mut shaders };
    assert_eq!(processor.process(&mut env), Ok(ProcessStatus::Completed));
    (backend.0, processor)
}

#[test]
fn the_fast_path_has_the_effects_of_the_handlers() {
    // Register writers of the three spaces, pads and NUM_INSTANCES, each
    // written twice (the first write of a register page goes the general
    // way, the second the loop's fast path) with draws between them. With
    // `report_packets` every packet goes the general way (write_run and
    // the handlers): the draws, registers and counts must be the same.
    use pm4core::processor::state_group;
    let mut cmd = Cmd::new();
    for i in 1..=2u32 {
        cmd = cmd
            .set_sh(r::SPI_SHADER_USER_DATA_GS_0, &[i, 2 * i, 3 * i])
            .set_context(r::DB_RENDER_CONTROL, &[i])
            .set_uconfig(r::VGT_PRIMITIVE_TYPE, &[4 + i])
            .raw(&[NOP_PAD])
            .pkt3(Opcode::NUM_INSTANCES, &[10 * i])
            .pkt3(Opcode::DRAW_INDEX_AUTO, &[3, 2])
            .pkt3(Opcode::INDEX_TYPE, &[1])
            .pkt3(Opcode::INDEX_BASE, &[0xB000 * i, 0])
            .pkt3(Opcode::DRAW_INDEX_2, &[100, 0xA000, 0, 6, 0])
            .pkt3(Opcode::DRAW_INDEX_OFFSET_2, &[100, 8, 9, 0]);
    }
    let (fast, fast_processor) = draw_states(&cmd, ProcessorConfig::default());
    let (general, general_processor) =
        draw_states(&cmd, ProcessorConfig { report_packets: true, ..ProcessorConfig::default() });
    assert_eq!(fast, general);
    assert_eq!(fast.len(), 6);
    for (i, draw) in fast.iter().enumerate().step_by(3) {
        assert_eq!(draw.instances, 10 * (i as u32 / 3 + 1));
        assert_ne!(draw.changed & state_group::INSTANCES, 0, "draw {i}: {:#x}", draw.changed);
    }
    // Each draw where its packet is (a round is 33 dwords; its draws are
    // 14, 22 and 28 dwords in), with its own count and index buffer
    // (INDEX_TYPE 1: 4-byte indices, so DRAW_INDEX_OFFSET_2's 8 indices
    // in are 32 bytes in).
    let places: Vec<_> = fast.iter().map(|d| (d.offset_dw, d.opcode, d.count, d.index_address)).collect();
    assert_eq!(
        places,
        [
            (14, Opcode::DRAW_INDEX_AUTO, 3, None),
            (22, Opcode::DRAW_INDEX_2, 6, Some(0xA000)),
            (28, Opcode::DRAW_INDEX_OFFSET_2, 9, Some(0xB000 + 32)),
            (47, Opcode::DRAW_INDEX_AUTO, 3, None),
            (55, Opcode::DRAW_INDEX_2, 6, Some(0xA000)),
            (61, Opcode::DRAW_INDEX_OFFSET_2, 9, Some(0x16000 + 32)),
        ]
    );
    for p in [&fast_processor, &general_processor] {
        assert_eq!(p.register(r::SPI_SHADER_USER_DATA_GS_2), 6);
        assert_eq!(p.register(r::DB_RENDER_CONTROL), 2);
        assert_eq!(p.register(r::VGT_PRIMITIVE_TYPE), 6);
        assert_eq!(p.global().uconfig(r::VGT_PRIMITIVE_TYPE), 6);
        assert_eq!(p.register(r::VGT_NUM_INSTANCES), 20);
        assert_eq!(p.global().uconfig(r::VGT_NUM_INSTANCES), 20);
        assert_eq!(p.stats().opcode_count(Opcode::NUM_INSTANCES), 2);
        assert_eq!(p.stats().opcode_count(Opcode::NOP), 2);
        assert_eq!(p.stats().opcode_count(Opcode::DRAW_INDEX_2), 2);
        assert_eq!(p.register(r::VGT_DMA_BASE), 0xA000);
        assert_eq!(p.register(r::VGT_INDEX_TYPE), 1);
        assert_eq!(p.stats().draws, 6);
        assert_eq!(p.stats().packets, 20);
        assert_eq!(p.stats().dwords, u64::from(cmd.len()));
    }
}

#[test]
fn a_failing_handler_is_counted_alike_on_the_fast_path_and_the_general_one() {
    // A draw, then a DRAW_INDEX_2 whose body is too short: the submission
    // fails at the second packet on both paths, with the same counts.
    let cmd = Cmd::new().pkt3(Opcode::DRAW_INDEX_AUTO, &[3, 2]).pkt3(Opcode::DRAW_INDEX_2, &[100, 0xA000]);
    let mut results = Vec::new();
    for report_packets in [false, true] {
        let memory = pm4core::memory::SparseMemory::new();
        memory.map_dwords(0x1000, cmd.dwords()).unwrap();
        let config = ProcessorConfig { report_packets, ..ProcessorConfig::default() };
        let mut processor = pm4core::processor::Processor::with_config(QueueId::GRAPHICS, config);
        let mut shaders = pm4core::shader::ShaderRegistry::default();
        processor.submit(0x1000, cmd.len()).unwrap();
        let mut backend = DrawStates::default();
        let mut env = pm4core::processor::Env { memory: &memory, backend: &mut backend, shaders: &mut shaders };
        let err = processor.process(&mut env).unwrap_err();
        assert!(matches!(err, Pm4Error::MalformedPacket { location, .. } if location.offset_dw == 3), "{err}");
        let stats = processor.stats();
        results.push((backend.0.len(), stats.packets, stats.draws, stats.opcode_count(Opcode::DRAW_INDEX_2)));
    }
    assert_eq!(results[0], results[1]);
    assert_eq!(results[0], (1, 1, 1, 0));
}
