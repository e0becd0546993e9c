//! The framing rule every consumer of a command buffer shares (packets.md
//! §1.4): a type-3 header with COUNT 0x3FFF is a one-dword packet, whatever
//! its opcode, in the packet reader, the processor loop and the
//! disassembler; and a header that cannot be read is reported as such.

mod common;

use common::{Cmd, Harness, SCRATCH};
use pm4core::backend::QueueId;
use pm4core::disasm::{DisasmOptions, Disassembler};
use pm4core::memory::MemoryError;
use pm4core::packet::reader::{PacketReader, SliceSource};
use pm4core::packet::{Opcode, PacketLocation, NOP_PAD};
use pm4core::processor::{Pm4Error, ProcessStatus, ProcessorConfig, SuspendReason};

/// A type-3 header with COUNT = 0x3FFF.
fn one_dword(op: Opcode) -> u32 {
    0xC000_0000 | (0x3FFF << 16) | (u32::from(op.0) << 8)
}

/// Every opcode value: the named ones and the rest.
fn every_opcode() -> impl Iterator<Item = Opcode> {
    (0..=255u8).map(Opcode)
}

#[test]
fn the_reader_frames_count_0x3fff_as_one_dword_for_every_opcode() {
    for op in every_opcode() {
        let words = [one_dword(op), NOP_PAD];
        let mut source = SliceSource::new(0x1000, &words);
        let mut reader = PacketReader::new(0x1000, 2);
        let packet = reader.read(&mut source).unwrap().unwrap();
        assert_eq!((packet.opcode(), packet.body, packet.location.offset_dw), (op, &[][..], 0), "{op}");
        let next = reader.read(&mut source).unwrap().unwrap();
        assert_eq!((next.header.0, next.location.offset_dw), (NOP_PAD, 1), "{op}");
        assert!(reader.read(&mut source).is_none(), "{op}");
    }
}

#[test]
fn the_loop_runs_count_0x3fff_as_one_dword_for_every_opcode() {
    // The one-dword packet, then a write the next dword starts: on the
    // inline path and on the general one (`report_packets`), on the
    // graphics queue and a compute one, no opcode's one-dword form stops
    // the submission, and the write after it always runs.
    for queue in [QueueId::GRAPHICS, QueueId::compute(0, 0).unwrap()] {
        for report_packets in [false, true] {
            for op in every_opcode() {
                let config = ProcessorConfig { report_packets, ..ProcessorConfig::default() };
                let mut h = Harness::with_config(queue, config);
                let cmd = Cmd::new().raw(&[one_dword(op)]).write_mem(SCRATCH, &[0x100 | u32::from(op.0)]);
                let result = h.run(&cmd);
                let context = format!("{op} on {queue}, report_packets {report_packets}");
                if op == Opcode::WAIT_ON_CE_COUNTER {
                    // It needs no body: it waits for a constant engine that
                    // never counts.
                    assert_eq!(result, Ok(ProcessStatus::Suspended(SuspendReason::WaitOnCeCounter { ce: 0, de: 0 })));
                    continue;
                }
                assert_eq!(result, Ok(ProcessStatus::Completed), "{context}");
                assert_eq!(h.read32(SCRATCH), 0x100 | u32::from(op.0), "{context}");
                let stats = h.processor.stats();
                assert_eq!((stats.packets, stats.dwords), (2, 1 + 5), "{context}");
            }
        }
    }
}

#[test]
fn a_one_dword_packet_that_needs_a_body_is_reported_as_not_emulated() {
    // SET_SH_REG (a register run the loop stores inline), a draw and a
    // release: none has its operands, so none has an effect; each is
    // counted under its opcode and as not emulated, and the backend hears
    // of it.
    for report_packets in [false, true] {
        let config = ProcessorConfig { report_packets, ..ProcessorConfig::default() };
        let mut h = Harness::with_config(QueueId::GRAPHICS, config);
        let ops = [Opcode::SET_SH_REG, Opcode::DRAW_INDEX_AUTO, Opcode::RELEASE_MEM];
        let cmd = Cmd::new().raw(&ops.map(one_dword));
        assert_eq!(h.run(&cmd), Ok(ProcessStatus::Completed));
        let log: Vec<String> = h.log().into_iter().filter(|l| !l.contains(" packet ")).collect();
        assert_eq!(
            log,
            [
                "gfx not_emulated SET_SH_REG at 0x1000",
                "gfx not_emulated DRAW_INDEX_AUTO at 0x1004",
                "gfx not_emulated RELEASE_MEM at 0x1008"
            ]
        );
        let stats = h.processor.stats();
        for op in ops {
            assert_eq!((stats.opcode_count(op), stats.not_emulated_count(op)), (1, 1), "{op}");
        }
        assert_eq!((stats.draws, stats.fences), (0, 0));
        assert!(h.processor.registers().iter_nonzero().next().is_none(), "no register written");
    }
}

#[test]
fn the_disassembler_lists_count_0x3fff_as_one_dword_for_every_opcode() {
    for op in every_opcode() {
        let bytes: Vec<u8> = [one_dword(op), NOP_PAD].iter().flat_map(|w| w.to_le_bytes()).collect();
        let listing = Disassembler::for_raw(&bytes, 0x1000, DisasmOptions::default()).unwrap().listing();
        assert_eq!(listing.packets.len(), 2, "{op}");
        let (first, second) = (&listing.packets[0], &listing.packets[1]);
        assert_eq!(
            (first.address, first.dwords.as_slice(), first.problem.as_deref()),
            (0x1000, &[one_dword(op)][..], None),
            "{op}"
        );
        assert_eq!(first.opcode, op.to_string());
        assert_eq!((second.address, second.opcode.as_str()), (0x1004, "NOP"), "{op}");
        assert!(listing.diagnostics.is_empty(), "{op}: {:?}", listing.diagnostics);
    }
}

#[test]
fn an_unreadable_header_is_reported_as_an_unreadable_header() {
    // A call into a buffer of 8 dwords whose first two are mapped: the
    // header at its third dword cannot be read.
    let mut h = Harness::new();
    h.memory.map_dwords(0x8000, &[NOP_PAD, NOP_PAD]).unwrap();
    let err = h.run(&Cmd::new().ib(0x8000, 8, false)).unwrap_err();
    let location = PacketLocation { buffer: 0x8000, buffer_size_dw: 8, offset_dw: 2 };
    assert_eq!(err, Pm4Error::UnreadableHeader { location, source: MemoryError::Unmapped { address: 0x8008, len: 4 } });
    assert_eq!(err.kind(), "unreadable_header");
    assert_eq!(err.location(), Some(location));
    let text = err.to_string();
    assert!(text.starts_with("packet header at 0x8008 (buffer 0x8000 + dword 2) is not readable: "), "{text}");
    assert!(!text.contains("NOP"), "{text}");
}
