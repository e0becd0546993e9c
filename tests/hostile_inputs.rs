//! A catalogue of hostile inputs, each refused (or survived) with the exact
//! error and bounded work, by construction: small work budgets, a bounded
//! number of calls.
//!
//! Already catalogued elsewhere, and not repeated here:
//! - traces (`tests/trace_format.rs`): bad magic, version, flags, reserved
//!   fields, CRC, truncation, chunk length past the end (and of all ones),
//!   unknown critical chunks, invalid tags, overlapping regions, regions past
//!   the address space, misalignment, `WRIT` outside memory, `SUBM` outside
//!   memory, queue out of range, shader rules, payload lengths, missing
//!   `END`, bytes after it, its count, `INFO` rules;
//! - the processor (`tests/processor_loop.rs`, `tests/processor_handlers.rs`):
//!   an IB calling itself (`IbStackOverflow`), a chain to itself
//!   (`WorkBudgetExhausted`), a configured depth limit, a packet past its
//!   buffer (`PacketOverrun`), a type-1 header, an unmapped IB, COND_EXEC
//!   past the end, a WAIT_REG_MEM that stays suspended until the host
//!   writes, a DMA fill of 64 MiB into 1 MiB, unknown packets under both
//!   policies;
//! - shader containers (`tests/shader_containers.rs`): every pointer out of
//!   bounds (and overflowing), tables that do not fit, null tables with
//!   entries, bad magic, version, sizes and type, split program pairs,
//!   relocated headers read at another base.

mod common;

use common::shader_builder::{corrupt, AgcBuilder};
use common::{Cmd, Harness, SCRATCH};
use pm4core::backend::QueueId;
use pm4core::memory::{GuestMemory, MemoryError, SparseMemory, ADDRESS_SPACE_END};
use pm4core::packet::body::{BodyError, CompareFunction, PollTarget};
use pm4core::packet::{Opcode, PacketLocation, NOP_PAD};
use pm4core::processor::{Pm4Error, ProcessStatus, ProcessorConfig, SuspendReason};
use pm4core::regs::gfx103 as r;
use pm4core::shader::agc::{offsets, AgcShader, RegisterEntry, Semantic, ShaderType};
use pm4core::shader::{create_shader, ShaderError};
use pm4core::trace::{Trace, TraceEvent, TraceWriter};

fn at(buffer: u64, buffer_size_dw: u32, offset_dw: u32) -> PacketLocation {
    PacketLocation { buffer, buffer_size_dw, offset_dw }
}

fn with_budget(work_budget: u64) -> Harness {
    Harness::with_config(QueueId::GRAPHICS, ProcessorConfig { work_budget, ..Default::default() })
}

fn lo(a: u64) -> u32 {
    a as u32
}

// ------------------------------------------------------------------ traces

#[test]
fn empty_host_writes_and_submissions_outside_memory_are_accepted_and_harmless() {
    // An empty range holds no byte, so it lies inside declared memory
    // wherever it is (inside the 48-bit space).
    let mut w = TraceWriter::new();
    w.host_write(0xDEAD_0000, &[]).unwrap();
    w.submit(5, 0xBEEF_0000, 0).unwrap();
    let trace = w.finish_trace().unwrap();
    let memory = trace.memory_before(trace.events().len()).unwrap();
    assert_eq!(memory.regions().count(), 0);
    let mut h = Harness::new();
    h.submit(0xBEEF_0000, 0);
    assert_eq!(h.process(), Ok(ProcessStatus::Completed));
    assert_eq!(h.processor.stats().packets, 0);
}

#[test]
fn a_host_write_straddling_two_adjacent_regions_applies_to_both() {
    let mut w = TraceWriter::new();
    w.mem(0x1000, &[0xAA; 8]).unwrap();
    w.zero(0x1008, 8).unwrap();
    w.host_write(0x1004, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    let trace = w.finish_trace().unwrap();
    let memory = trace.memory_before(trace.events().len()).unwrap();
    assert_eq!(memory.read_u64(0x1000).unwrap(), 0x0403_0201_AAAA_AAAA);
    assert_eq!(memory.read_u64(0x1008).unwrap(), 0x0000_0000_0807_0605);
    // Declared memory is the union of the regions: a write one byte past
    // the second is refused.
    let mut w = TraceWriter::new();
    w.mem(0x1000, &[0xAA; 8]).unwrap();
    w.zero(0x1008, 8).unwrap();
    let err = w.host_write(0x100C, &[0; 8]).unwrap_err();
    assert_eq!(err.rule, pm4core::trace::TraceRule::WriteOutsideMemory { address: 0x100C, len: 8 });
}

#[test]
fn a_submission_into_a_zero_region_runs_type0_writes_of_register_zero() {
    // Zero dwords are type-0 headers (COUNT 0, BASE 0): two-dword packets.
    let mut w = TraceWriter::new();
    w.zero(0x1000, 0x1000).unwrap();
    w.submit(0, 0x1000, 0x400).unwrap();
    let trace = w.finish_trace().unwrap();
    let TraceEvent::Submit { address, size_dw, .. } = trace.events()[1] else { panic!() };
    let mut h = Harness::new();
    h.memory = trace.build_memory().unwrap();
    h.submit(address, size_dw);
    assert_eq!(h.process(), Ok(ProcessStatus::Completed));
    assert_eq!(h.processor.stats().type0, 0x200);
    assert_eq!(h.reg(0), 0);
}

#[test]
fn ten_thousand_empty_chunks_then_garbage_are_refused_at_the_garbage() {
    // Thousands of empty ancillary chunks then garbage: parsing stops at
    // the garbage, in proportion to the file.
    let mut w = TraceWriter::new();
    for _ in 0..10_000 {
        w.ancillary(pm4core::trace::Tag(*b"zzzz"), &[]).unwrap();
    }
    let mut bytes = w.finish();
    let end = bytes.len() - 16;
    bytes.truncate(end);
    bytes.extend_from_slice(b"XXXX");
    let err = Trace::from_bytes(bytes).unwrap_err();
    assert_eq!(err.chunk, Some(10_000));
    assert!(matches!(err.rule, pm4core::trace::TraceRule::Truncated { needed: 12, available: 4 }));
}

// ---------------------------------------------------------- indirect buffers

#[test]
fn an_unmapped_ib_fails_at_the_indirect_buffer_packet_with_the_exact_address() {
    let mut h = Harness::new();
    let err = h.run(&Cmd::new().ib(0xDEAD_0000, 16, false)).unwrap_err();
    assert_eq!(
        err,
        Pm4Error::Memory {
            location: at(0x1000, 4, 0),
            opcode: Opcode::INDIRECT_BUFFER,
            source: MemoryError::Unmapped { address: 0xDEAD_0000, len: 4 },
        }
    );
    assert!(err.to_string().contains("INDIRECT_BUFFER"), "{err}");
    assert!(h.processor.is_idle());
}

#[test]
fn an_unmapped_ib_is_skipped_and_reported_when_asked() {
    let config = ProcessorConfig { skip_unmapped_ibs: true, ..Default::default() };
    let mut h = Harness::with_config(QueueId::GRAPHICS, config);
    let cmd = Cmd::new().ib(0xDEAD_0000, 16, false).raw(&[NOP_PAD]);
    assert_eq!(h.run(&cmd).unwrap(), ProcessStatus::Completed);
    assert_eq!(h.processor.stats().packets, 2, "the IB packet and the NOP after it ran");
    assert_eq!(h.log(), vec!["gfx skipped_ib addr=0xdead0000 size_dw=16 packet=0x1000"]);
}

#[test]
fn an_ib_whose_tail_is_unmapped_runs_up_to_the_hole() {
    let mut h = Harness::new();
    h.memory.map_dwords(0x8000, &[NOP_PAD, NOP_PAD]).unwrap();
    let err = h.run(&Cmd::new().ib(0x8000, 16, false)).unwrap_err();
    assert_eq!(
        err,
        Pm4Error::UnreadableHeader {
            location: at(0x8000, 16, 2),
            source: MemoryError::Unmapped { address: 0x8008, len: 4 },
        }
    );
    assert_eq!(err.kind(), "unreadable_header");
    assert_eq!(
        err.to_string(),
        "packet header at 0x8008 (buffer 0x8000 + dword 2) is not readable: unmapped guest memory at 0x8008 (access of 4 bytes)"
    );
    assert_eq!(h.processor.stats().packets, 3, "the IB packet and the two mapped NOPs ran");
}

#[test]
fn an_ib_running_off_the_top_of_the_address_space_is_out_of_range() {
    let mut h = Harness::new();
    let top = ADDRESS_SPACE_END - 4;
    h.memory.map_dwords(top, &[NOP_PAD]).unwrap();
    let err = h.run(&Cmd::new().ib(top, 4, false)).unwrap_err();
    assert_eq!(
        err,
        Pm4Error::UnreadableHeader {
            location: at(top, 4, 1),
            source: MemoryError::OutOfRange { address: ADDRESS_SPACE_END, len: 4 },
        }
    );
}

#[test]
fn two_buffers_chaining_to_each_other_stop_at_the_budget_exactly() {
    let mut h = with_budget(1_000);
    // A: NOP, chain to B; B: chain to A. 1.5 packets per hop on average.
    let a = Cmd::new().raw(&[NOP_PAD]).ib(0x2000, 4, true);
    let b = Cmd::new().ib(0x1000, a.len(), true);
    h.map(0x2000, &b);
    let err = h.run(&a).unwrap_err();
    let Pm4Error::WorkBudgetExhausted { location, budget: 1_000 } = err else { panic!("{err}") };
    // Rounds of 3 packets (A's NOP, A's chain, B's chain): packet 1000 is
    // the NOP opening round 334, packet 1001 A's chain after it.
    assert_eq!(location, at(0x1000, 5, 1));
    assert_eq!(h.processor.stats().packets, 1_000);
    assert!(h.processor.is_idle());
}

#[test]
fn an_endless_chain_in_slices_yields_until_the_budget_ends_it() {
    let mut h = with_budget(100);
    let cmd = Cmd::new().ib(0x1000, 4, true);
    h.map(0x1000, &cmd);
    h.submit(0x1000, cmd.len());
    let mut calls = 0;
    let err = loop {
        calls += 1;
        assert!(calls <= 100, "bounded by the work budget");
        let mut env =
            pm4core::processor::Env { memory: &mut h.memory, backend: &mut h.backend, shaders: &mut h.shaders };
        match h.processor.process_slice(&mut env, 7) {
            Ok(ProcessStatus::Yielded) => continue,
            Ok(other) => panic!("{other:?}"),
            Err(e) => break e,
        }
    };
    assert_eq!(err, Pm4Error::WorkBudgetExhausted { location: at(0x1000, 4, 0), budget: 100 });
    assert_eq!(calls, 15, "14 slices of 7 packets, then packet 101 in the 15th");
}

#[test]
fn nesting_one_past_a_depth_of_one_overflows() {
    // A limit of 0 means 1: the submitted buffer alone.
    let config = ProcessorConfig { max_ib_depth: 0, ..Default::default() };
    let mut h = Harness::with_config(QueueId::GRAPHICS, config);
    h.map(0x2000, &Cmd::new().raw(&[NOP_PAD]));
    let err = h.run(&Cmd::new().ib(0x2000, 1, false)).unwrap_err();
    assert_eq!(err, Pm4Error::IbStackOverflow { location: at(0x1000, 4, 0), target: 0x2000, depth: 2, limit: 1 });
}

#[test]
fn nesting_past_the_limit_through_different_buffers() {
    // Buffers each calling the next: the root is depth 1, 0x2000 depth 2,
    // so 0x2600 is depth 8 and its call is the one that overflows.
    let mut h = Harness::new();
    for level in 0..9u64 {
        h.map(0x2000 + level * 0x100, &Cmd::new().ib(0x2100 + level * 0x100, 4, false));
    }
    let err = h.run(&Cmd::new().ib(0x2000, 4, false)).unwrap_err();
    assert_eq!(err, Pm4Error::IbStackOverflow { location: at(0x2600, 4, 0), target: 0x2700, depth: 9, limit: 8 });
}

#[test]
fn empty_indirect_buffers_are_skipped() {
    let mut h = Harness::new();
    let cmd = Cmd::new()
        .ib(0xDEAD_0000, 0, false)
        .ib(0xDEAD_0000, 0, true)
        .pkt3(Opcode::INDIRECT_BUFFER_CONST, &[0xDEAD_0000, 0, 0])
        .write_mem(SCRATCH, &[1]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.read32(SCRATCH), 1);
}

// ------------------------------------------------------------- packet shape

#[test]
fn a_packet_overrunning_an_ib_names_the_ib() {
    let mut h = Harness::new();
    h.map(0x2000, &Cmd::new().raw(&[NOP_PAD, 0xC004_3700, 5 << 8, 0]));
    let err = h.run(&Cmd::new().ib(0x2000, 4, false)).unwrap_err();
    assert_eq!(
        err,
        Pm4Error::PacketOverrun { location: at(0x2000, 4, 1), header: 0xC004_3700, length_dw: 6, remaining_dw: 3 }
    );
}

#[test]
fn a_type0_packet_overrunning_its_buffer() {
    let mut h = Harness::new();
    let err = h.run(&Cmd::new().raw(&[(5 << 16) | r::PA_SC_WINDOW_OFFSET, 1, 2])).unwrap_err();
    assert_eq!(
        err,
        Pm4Error::PacketOverrun {
            location: at(0x1000, 3, 0),
            header: (5 << 16) | r::PA_SC_WINDOW_OFFSET,
            length_dw: 7,
            remaining_dw: 3
        }
    );
}

#[test]
fn a_type0_run_past_the_register_file_is_dropped() {
    let mut h = Harness::new();
    let cmd = Cmd::new().raw(&[(2 << 16) | 0xFFFF, 1, 2, 3]).write_mem(SCRATCH, &[9]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.reg(0xFFFF), 1);
    assert_eq!(h.reg(0), 0, "no wrap to register 0");
    assert_eq!(h.read32(SCRATCH), 9);
}

/// A type-3 header with COUNT = 0x3FFF: a one-dword packet, whatever the opcode.
fn one_dword(op: Opcode) -> u32 {
    0xC000_0000 | (0x3FFF << 16) | (u32::from(op.0) << 8)
}

#[test]
fn count_0x3fff_is_one_dword_for_every_opcode() {
    // Opcodes whose body is required: the one-dword form carries none of
    // their operands; it is reported as not emulated and passed, and the
    // next dword is the next header (packets.md §1.4).
    for op in [
        Opcode::WRITE_DATA,
        Opcode::SET_CONTEXT_REG,
        Opcode::SET_SH_REG,
        Opcode::SET_UCONFIG_REG,
        Opcode::INDIRECT_BUFFER,
        Opcode::DRAW_INDEX_AUTO,
        Opcode::WAIT_REG_MEM,
        Opcode::DMA_DATA,
        Opcode::COND_EXEC,
    ] {
        let mut h = Harness::new();
        let cmd = Cmd::new().raw(&[one_dword(op)]).write_mem(SCRATCH, &[op.0.into()]);
        assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed), "{op}");
        assert_eq!(h.read32(SCRATCH), u32::from(op.0));
        assert_eq!(h.processor.stats().not_emulated_count(op), 1, "{op}");
        // (The write after it is a WRITE_DATA too.)
        let written = u64::from(op == Opcode::WRITE_DATA);
        assert_eq!(h.processor.stats().opcode_count(op), 1 + written, "{op}");
        assert_eq!(h.processor.stats().packets, 2);
        assert_eq!(h.processor.stats().dwords, 1 + 5);
        assert_eq!(h.log(), vec![format!("gfx not_emulated {op} at 0x1000")], "{op}");
    }
    // Opcodes that need no body, unknown and not-emulated ones: one dword,
    // and the next dword is the next header.
    for op in [Opcode::NOP, Opcode::PFP_SYNC_ME, Opcode(0x01), Opcode::GET_LOD_STATS] {
        let mut h = Harness::new();
        let cmd = Cmd::new().raw(&[one_dword(op)]).write_mem(SCRATCH, &[op.0.into()]);
        assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed), "{op}");
        assert_eq!(h.read32(SCRATCH), u32::from(op.0));
        assert_eq!(h.processor.stats().packets, 2);
        assert_eq!(h.processor.stats().dwords, 1 + 5);
    }
}

#[test]
fn the_longest_packet_fits_its_window() {
    // COUNT 0x3FFE: 0x4000 dwords in all, the prefetch window's capacity
    // (COUNT 0x3FFF is the one-dword form, so nothing longer exists).
    let mut body = vec![5 << 8, lo(SCRATCH), 0];
    body.resize(0x3FFF, 0xAB);
    let mut h = Harness::new();
    let cmd = Cmd::new().pkt3(Opcode::WRITE_DATA, &body);
    assert_eq!(cmd.len(), 0x4000);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.read32(SCRATCH + 4 * 0x3FFB), 0xAB);
    assert_eq!(h.read32(SCRATCH + 4 * 0x3FFC), 0);
}

// ------------------------------------------------------ addresses in packets

#[test]
fn misaligned_addresses_are_masked_to_their_field_alignment() {
    let mut h = Harness::new();
    h.memory.write_u64(SCRATCH + 0x100, 0x1111_2222_3333_4444).unwrap();
    let cmd = Cmd::new()
        // WRITE_DATA: bits 0-1 cleared.
        .pkt3(Opcode::WRITE_DATA, &[5 << 8, lo(SCRATCH) | 3, 0, 0xA1])
        // COPY_DATA 64-bit: bits 0-2 cleared on both sides.
        .pkt3(Opcode::COPY_DATA, &[1 | (5 << 8) | (1 << 16), lo(SCRATCH + 0x100) | 7, 0, lo(SCRATCH + 0x10) | 5, 0])
        // RELEASE_MEM 32-bit data: bits 0-1; 64-bit data: bits 0-2.
        .pkt3(Opcode::RELEASE_MEM, &[0x28 | (5 << 8), 1 << 29, lo(SCRATCH + 0x20) | 3, 0, 0xB2, 0, 0])
        .pkt3(Opcode::RELEASE_MEM, &[0x28 | (5 << 8), 2 << 29, lo(SCRATCH + 0x28) | 7, 0, 0xC3, 0, 0])
        // ATOMIC_MEM 64-bit: bits 0-2.
        .pkt3(Opcode::ATOMIC_MEM, &[0x2F, lo(SCRATCH + 0x30) | 6, 0, 1, 0, 0, 0, 0])
        // The high dword keeps bits 32-47 only.
        .pkt3(Opcode::WRITE_DATA, &[5 << 8, lo(SCRATCH + 0x40), 0xFFFF_0000, 0xD4]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.read32(SCRATCH), 0xA1);
    assert_eq!(h.read64(SCRATCH + 0x10), 0x1111_2222_3333_4444);
    assert_eq!(h.read32(SCRATCH + 0x20), 0xB2);
    assert_eq!(h.read64(SCRATCH + 0x28), 0xC3);
    assert_eq!(h.read64(SCRATCH + 0x30), 1);
    assert_eq!(h.read32(SCRATCH + 0x40), 0xD4);
}

#[test]
fn dma_addresses_are_byte_addresses() {
    // DMA_DATA keeps every address bit: a copy to an odd address lands there.
    let mut h = Harness::new();
    h.memory.map_bytes(0x9000, &[1, 2, 3, 4]).unwrap();
    let cmd = Cmd::new().pkt3(Opcode::DMA_DATA, &[0, 0x9001, 0, lo(SCRATCH) | 3, 0, 3]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    let mut out = [0u8; 8];
    h.memory.read_bytes(SCRATCH, &mut out).unwrap();
    assert_eq!(out, [0, 0, 0, 2, 3, 4, 0, 0]);
}

#[test]
fn a_wait_on_a_misaligned_label_polls_the_aligned_dword() {
    let mut h = Harness::new();
    let cmd = Cmd::new().wait_mem(SCRATCH + 0x41, 3, 1, 0xFFFF_FFFF);
    let status = h.run(&cmd).unwrap();
    let ProcessStatus::Suspended(SuspendReason::WaitRegMem { target, .. }) = status else { panic!("{status:?}") };
    assert_eq!(target, PollTarget::Memory(SCRATCH + 0x40));
}

// -------------------------------------------------------------------- DMA

#[test]
fn a_huge_dma_copy_fails_before_writing_anything() {
    let mut h = Harness::new();
    let generation = h.memory.write_generation();
    let cmd = Cmd::new().pkt3(Opcode::DMA_DATA, &[0, lo(SCRATCH), 0, lo(SCRATCH + 0x10), 0, 0x3FF_FFFF]);
    let err = h.run(&cmd).unwrap_err();
    assert_eq!(
        err,
        Pm4Error::Memory {
            location: at(0x1000, 7, 0),
            opcode: Opcode::DMA_DATA,
            source: MemoryError::Unmapped { address: SCRATCH, len: 0x3FF_FFFF },
        }
    );
    assert_eq!(h.memory.write_generation(), generation, "nothing written");
}

#[test]
fn a_huge_dma_fill_names_its_destination_and_writes_nothing() {
    let mut h = Harness::new();
    let generation = h.memory.write_generation();
    let cmd = Cmd::new().pkt3(Opcode::DMA_DATA, &[2 << 29, 0x5A5A_5A5A, 0, lo(SCRATCH + 0x80), 0, 0x3FF_FFFF]);
    let err = h.run(&cmd).unwrap_err();
    assert_eq!(
        err,
        Pm4Error::Memory {
            location: at(0x1000, 7, 0),
            opcode: Opcode::DMA_DATA,
            source: MemoryError::Unmapped { address: SCRATCH + 0x80, len: 0x3FF_FFFF },
        }
    );
    assert_eq!(h.memory.write_generation(), generation, "nothing written");
}

#[test]
fn a_dma_copy_to_the_top_of_the_address_space_is_out_of_range() {
    let mut h = Harness::new();
    let top = ADDRESS_SPACE_END - 0x10;
    let cmd = Cmd::new().pkt3(Opcode::DMA_DATA, &[0, lo(SCRATCH), 0, lo(top), (top >> 32) as u32, 0x20]);
    let err = h.run(&cmd).unwrap_err();
    assert_eq!(
        err,
        Pm4Error::Memory {
            location: at(0x1000, 7, 0),
            opcode: Opcode::DMA_DATA,
            source: MemoryError::OutOfRange { address: top, len: 0x20 },
        }
    );
}

// ------------------------------------------------------------------ waits

#[test]
fn a_wait_with_the_reserved_function_never_passes() {
    let mut h = with_budget(10);
    // FUNCTION 7 is reserved: never true, whatever memory holds.
    let cmd = Cmd::new().wait_mem(SCRATCH, 7, 0, 0);
    let reason = SuspendReason::WaitRegMem {
        target: PollTarget::Memory(SCRATCH),
        function: CompareFunction::Reserved,
        reference: 0,
        mask: 0,
        current: 0,
        is_64: false,
    };
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Suspended(reason)));
    // Every resume runs the wait once more but a failed attempt does not
    // charge the work budget: the wait stays suspended however long it lasts.
    for _ in 0..50 {
        assert_eq!(h.process(), Ok(ProcessStatus::Suspended(reason)));
    }
    assert_eq!(h.processor.execution().packets(), 0);
    assert_eq!(h.processor.stats().waits, 51);
}

#[test]
fn a_register_wait_whose_mask_hides_the_reference_never_passes() {
    let mut h = Harness::new();
    // (reg & 0) == 1 is never true.
    let cmd = Cmd::new().pkt3(Opcode::WAIT_REG_MEM, &[3, r::VGT_PRIMITIVE_TYPE, 0, 1, 0, 10]);
    let reason = SuspendReason::WaitRegMem {
        target: PollTarget::Register(r::VGT_PRIMITIVE_TYPE),
        function: CompareFunction::Equal,
        reference: 1,
        mask: 0,
        current: 0,
        is_64: false,
    };
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Suspended(reason)));
    h.processor.registers_mut().set(r::VGT_PRIMITIVE_TYPE, 1);
    let again = SuspendReason::WaitRegMem {
        target: PollTarget::Register(r::VGT_PRIMITIVE_TYPE),
        function: CompareFunction::Equal,
        reference: 1,
        mask: 0,
        current: 1,
        is_64: false,
    };
    assert_eq!(h.process(), Ok(ProcessStatus::Suspended(again)));
    assert_eq!(h.processor.suspended(), Some(again));
}

#[test]
fn a_wait_on_unmapped_memory_is_an_error_not_a_wait() {
    let mut h = Harness::new();
    let err = h.run(&Cmd::new().wait_mem(0xDEAD_0000, 3, 1, 1)).unwrap_err();
    assert_eq!(
        err,
        Pm4Error::Memory {
            location: at(0x1000, 7, 0),
            opcode: Opcode::WAIT_REG_MEM,
            source: MemoryError::Unmapped { address: 0xDEAD_0000, len: 4 },
        }
    );
    assert!(h.processor.is_idle());
}

// ------------------------------------------------------- skips and predicates

#[test]
fn pred_exec_past_the_end_is_an_error() {
    let mut h = Harness::new();
    let err = h.run(&Cmd::new().pkt3(Opcode::PRED_EXEC, &[(0b10 << 24) | 3]).raw(&[NOP_PAD])).unwrap_err();
    assert_eq!(
        err,
        Pm4Error::SkipPastEnd { location: at(0x1000, 3, 0), opcode: Opcode::PRED_EXEC, skip_dw: 3, remaining_dw: 1 }
    );
}

#[test]
fn cond_exec_may_skip_exactly_to_the_end_of_an_ib_but_not_one_more() {
    let mut h = Harness::new();
    // In the IB: COND_EXEC (5 dwords) then 3 NOPs.
    let ib = Cmd::new().pkt3(Opcode::COND_EXEC, &[lo(SCRATCH), 0, 0, 3]).raw(&[NOP_PAD; 3]);
    h.map(0x2000, &ib);
    let cmd = Cmd::new().ib(0x2000, ib.len(), false).write_mem(SCRATCH + 4, &[1]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.read32(SCRATCH + 4), 1, "the skip ended with the IB; the caller went on");
    // One run of 3 dwords: skipped dwords are not parsed as packets.
    assert_eq!(h.processor.stats().skipped, 1);

    let mut h = Harness::new();
    let ib = Cmd::new().pkt3(Opcode::COND_EXEC, &[lo(SCRATCH), 0, 0, 4]).raw(&[NOP_PAD; 3]);
    h.map(0x2000, &ib);
    let err = h.run(&Cmd::new().ib(0x2000, ib.len(), false)).unwrap_err();
    assert_eq!(
        err,
        Pm4Error::SkipPastEnd { location: at(0x2000, 8, 0), opcode: Opcode::COND_EXEC, skip_dw: 4, remaining_dw: 3 }
    );
}

#[test]
fn a_skip_splits_a_packet_and_runs_its_tail_as_headers() {
    // COND_EXEC counts dwords, not packets: skipping 2 dwords of a 5-dword
    // WRITE_DATA leaves its last 3 dwords to be read as headers.
    let mut h = Harness::new();
    let cmd = Cmd::new()
        .pkt3(Opcode::COND_EXEC, &[lo(SCRATCH), 0, 0, 2])
        .pkt3(Opcode::WRITE_DATA, &[5 << 8, NOP_PAD, NOP_PAD, NOP_PAD]);
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.processor.stats().skipped, 1, "the skip ends inside the first packet");
    assert_eq!(h.processor.stats().by_opcode[Opcode::NOP.0 as usize], 3);
}

#[test]
fn reserved_predication_and_semaphore_fields_are_malformed() {
    let mut h = Harness::new();
    let err = h.run(&Cmd::new().pkt3(Opcode::SET_PREDICATION, &[5 << 16, lo(SCRATCH), 0])).unwrap_err();
    assert_eq!(
        err,
        Pm4Error::MalformedPacket {
            location: at(0x1000, 4, 0),
            source: BodyError::Invalid { opcode: Opcode::SET_PREDICATION, what: "PRED_OP is reserved" }
        }
    );
    let mut h = Harness::new();
    let err = h.run(&Cmd::new().pkt3(Opcode::MEM_SEMAPHORE, &[lo(SCRATCH), 0, 5 << 29])).unwrap_err();
    assert!(matches!(
        err,
        Pm4Error::MalformedPacket { source: BodyError::Invalid { opcode: Opcode::MEM_SEMAPHORE, .. }, .. }
    ));
}

// ----------------------------------------------------------- bounded loops

#[test]
fn a_multi_draw_of_four_billion_draws_is_bounded_by_the_work_budget() {
    let mut h = with_budget(1_000);
    h.memory.map_dwords(0x9000, &[3, 1, 0, 0]).unwrap();
    let cmd = Cmd::new()
        .pkt3(Opcode::SET_BASE, &[1, 0x9000, 0])
        // COUNT u32::MAX, STRIDE 0: every draw reads the same record.
        .pkt3(Opcode::DRAW_INDIRECT_MULTI, &[0, 0x20, 0x21, 0x22, u32::MAX, 0, 0, 0, 2]);
    let err = h.run(&cmd).unwrap_err();
    assert_eq!(err, Pm4Error::WorkBudgetExhausted { location: at(0x1000, 14, 4), budget: 1_000 });
    // SET_BASE is packet 1, the draw packet (and its first draw) packet 2;
    // each further draw is charged as a packet: 998 more fit.
    assert_eq!(h.backend.draws, 999);
}

#[test]
fn load_reg_of_many_dwords_from_unmapped_memory_fails_cleanly() {
    let mut h = Harness::new();
    let err = h.run(&Cmd::new().pkt3(Opcode::LOAD_SH_REG, &[0xDEAD_0000, 0, 0, 0x3FFF])).unwrap_err();
    assert_eq!(err.kind(), "memory");
    assert_eq!(err.location(), Some(at(0x1000, 5, 0)));
    assert!(h.processor.is_idle());
}

#[test]
fn the_context_stack_is_bounded() {
    // 100 pushes keep at most 8 saved contexts; 100 pops then restore what
    // is there and ignore the rest.
    let mut cmd = Cmd::new().set_context(r::DB_RENDER_CONTROL, &[7]);
    for _ in 0..100 {
        cmd = cmd.pkt3(Opcode::CLEAR_STATE, &[3]);
    }
    cmd = cmd.set_context(r::DB_RENDER_CONTROL, &[9]);
    for _ in 0..100 {
        cmd = cmd.pkt3(Opcode::CLEAR_STATE, &[2]);
    }
    let mut h = Harness::new();
    assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
    assert_eq!(h.reg(r::DB_RENDER_CONTROL), 7);
}

// ------------------------------------------------------------------ shaders

/// A pixel container with two SH entries (the program pair) and three
/// context entries, so tables are 0x10 and 0x18 bytes.
fn pixel() -> Vec<u8> {
    AgcBuilder::new(ShaderType::Pixel)
        .context_register(0x1C4, 1)
        .context_register(0x1C5, 2)
        .context_register(0x1B3, 3)
        .input_semantic(Semantic(0x0F))
        .no_specials()
        .no_user_data()
        .build()
}

/// The header offset a self-relative pointer field points at.
fn target(bytes: &[u8], field: u32) -> u64 {
    let at = field as usize;
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) + u64::from(field)
}

#[test]
fn a_pointer_into_the_fixed_header_is_out_of_bounds() {
    // Tables live after the 0x60-byte header; a pointer at the header's own
    // fields (here the SH table at the magic) is refused.
    let mut b = pixel();
    corrupt::pointer(&mut b, offsets::SH_REGISTERS, 0u64.wrapping_sub(u64::from(offsets::SH_REGISTERS)));
    let err = AgcShader::parse(&b, 0).unwrap_err();
    assert!(matches!(err, ShaderError::PointerOutOfBounds { field: "sh_registers", offset: 0x20, .. }), "{err}");
}

#[test]
fn two_tables_at_the_same_place_decode_as_the_same_bytes() {
    // The context table pointed at the SH table: both read the same entries
    // (tables may overlap; only their bounds are checked).
    let mut b = pixel();
    let sh = target(&b, offsets::SH_REGISTERS);
    corrupt::pointer(&mut b, offsets::CX_REGISTERS, sh - u64::from(offsets::CX_REGISTERS));
    corrupt::num_cx_registers(&mut b, 2);
    let s = AgcShader::parse(&b, 0).unwrap();
    assert_eq!(s.context_registers(), s.sh_registers());
    // Relocation rewrites the pair in the shared bytes once; both tables
    // see the code address.
    let m = SparseMemory::new();
    m.map_bytes(0x10_0000, &b).unwrap();
    let created = create_shader(&m, 0x10_0000, 0x20_0000).unwrap();
    assert_eq!(created.program_address(), Some(0x20_0000));
    assert_eq!(created.context_registers(), created.sh_registers());
}

#[test]
fn a_semantics_table_inside_the_context_table_reads_its_bytes() {
    // The input semantics pointed into the middle of the context table.
    let mut b = pixel();
    let cx = target(&b, offsets::CX_REGISTERS);
    corrupt::pointer(&mut b, offsets::INPUT_SEMANTICS, cx + 4 - u64::from(offsets::INPUT_SEMANTICS));
    corrupt::num_input_semantics(&mut b, 4);
    let s = AgcShader::parse(&b, 0).unwrap();
    let values: Vec<u32> = s.input_semantics().iter().map(|x| x.0).collect();
    assert_eq!(values, [1, 0x1C5, 2, 0x1B3]);
}

/// A pixel container whose SH table lies over the user-data pointers: the
/// direct-resources pointer (value 8) reads as SH entry (0x008 = LO_PS, 0)
/// and the first sharp pointer (value 9) as (0x009 = HI_PS, 0). As
/// self-relative pointers both stay inside the header, so the container
/// decodes; relocation turns them into absolute addresses, which the program
/// patch then partly overwrites.
fn sh_table_over_user_data_pointers() -> Vec<u8> {
    let mut b = AgcBuilder::new(ShaderType::Pixel).no_specials().build();
    let ud = AgcShader::parse(&b, 0).unwrap().layout().user_data.unwrap();
    corrupt::set_u64(&mut b, ud, 8);
    corrupt::set_u16(&mut b, ud + 0x2C, 0);
    corrupt::set_u64(&mut b, ud + 8, 9);
    corrupt::set_u16(&mut b, ud + 0x2E, 0);
    corrupt::pointer(&mut b, offsets::SH_REGISTERS, u64::from(ud) - u64::from(offsets::SH_REGISTERS));
    corrupt::num_sh_registers(&mut b, 2);
    b
}

#[test]
fn an_sh_table_over_user_data_pointers_decodes_self_relative() {
    let b = sh_table_over_user_data_pointers();
    let s = AgcShader::parse(&b, 0).unwrap();
    assert_eq!(s.sh_registers(), [RegisterEntry::new(8, 0), RegisterEntry::new(9, 0)]);
    assert_eq!(s.layout().sh_registers, s.layout().user_data);
}

#[test]
fn an_sh_table_over_user_data_pointers_is_refused_untouched() {
    let b = sh_table_over_user_data_pointers();
    let m = SparseMemory::new();
    m.map_bytes(0x10_0000, &b).unwrap();
    let generation = m.write_generation();
    let err = create_shader(&m, 0x10_0000, 0x20_0000).unwrap_err();
    // The relocated direct-resources pointer 0x10_0078, its high half
    // overwritten by the program LO value 0x2000.
    assert_eq!(
        err,
        ShaderError::PointerOutOfBounds {
            field: "user_data.direct_resources",
            offset: 0x70,
            raw: 0x2000_0010_0078,
            header_size: 0xC0
        }
    );
    assert_eq!(m.write_generation(), generation, "a rejected header is left untouched");
}
