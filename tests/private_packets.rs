//! Embedders' private packets (`packet::private`): a table registered in
//! `ProcessorConfig::private_packets` sends the NOPs and unhandled packets
//! it matches to `Backend::private_packet` (by default a host command), not
//! through the NOP conventions or as unknown packets; the loop never asks it
//! for a pad, a register write or an emulated packet; the disassembler
//! names what it matches.

mod common;

use common::{Cmd, Harness, SCRATCH};
use pm4core::backend::{Backend, QueueId, RecordingBackend};
use pm4core::disasm::{DisasmOptions, Disassembler};
use pm4core::memory::{GuestMemory, SparseMemory};
use pm4core::packet::private::{PrivatePacket, PrivatePacketEntry, PrivatePackets};
use pm4core::packet::{Header, Opcode, PacketLocation, NOP_PAD};
use pm4core::processor::{Env, HostCommand, ProcessStatus, Processor, ProcessorConfig, HOST_COMMAND_SIGNATURE};
use pm4core::regs::gfx103 as r;
use pm4core::shader::ShaderRegistry;

/// A KytyPS5-like code in NOP header bits [7:2].
fn header_code(code: u32) -> PrivatePacketEntry {
    PrivatePacketEntry::new(format!("CODE_{code:#x}"), code).header(0xC000_FFFC, 0xC000_1000 | code << 2)
}

/// A NOP with `body` and header bits [7:2] = `code`.
fn coded_nop(code: u32, body: &[u32]) -> Vec<u32> {
    let mut words = vec![Header::type3(Opcode::NOP, body.len() as u32).0 | code << 2];
    words.extend_from_slice(body);
    words
}

/// Every private packet a backend gets, as it gets it.
#[derive(Default)]
struct Private {
    seen: Vec<(QueueId, String, u32, u32, Vec<u32>, PacketLocation)>,
    log: RecordingBackend,
}

impl Backend for Private {
    fn private_packet(&mut self, p: &PrivatePacket<'_>) {
        self.seen.push((p.queue, p.name.to_owned(), p.code, p.header.0, p.payload.to_vec(), p.location));
    }
    fn unknown_packet(&mut self, report: &pm4core::backend::UnknownPacket) {
        self.log.unknown_packet(report);
    }
    fn not_emulated(&mut self, packet: &pm4core::backend::NotEmulated) {
        self.log.not_emulated(packet);
    }
    fn marker(&mut self, queue: QueueId, marker: &pm4core::backend::Marker<'_>) {
        self.log.marker(queue, marker);
    }
    fn draw(&mut self, draw: &pm4core::backend::Draw<'_>) {
        self.log.draw(draw);
    }
}

/// Runs `words` at 0x1000 on `queue` with `table`; the backend and the
/// processor after.
fn run(queue: QueueId, table: PrivatePackets, words: &[u32]) -> (Private, Processor) {
    let memory = SparseMemory::new();
    memory.map_dwords(0x1000, words).unwrap();
    memory.map_zeroed(SCRATCH, 0x1000).unwrap();
    let config = ProcessorConfig { private_packets: table, ..ProcessorConfig::default() };
    let mut processor = Processor::with_config(queue, config);
    let (mut backend, shaders) = (Private::default(), ShaderRegistry::new());
    processor.submit(0x1000, words.len() as u32).unwrap();
    let mut env = Env { memory: &memory, backend: &mut backend, shaders: &shaders };
    assert_eq!(processor.process(&mut env), Ok(ProcessStatus::Completed));
    (backend, processor)
}

fn at(offset_dw: u32, size: usize) -> PacketLocation {
    PacketLocation { buffer: 0x1000, buffer_size_dw: size as u32, offset_dw }
}

#[test]
fn a_nop_with_a_code_in_its_header_reaches_the_backend_with_its_payload() {
    let table = PrivatePackets::new([header_code(0x17), header_code(0x18)]);
    let mut words = coded_nop(0x17, &[7, 8]);
    words.extend(coded_nop(0x18, &[9]));
    words.extend(coded_nop(0x19, &[1]));
    let (backend, processor) = run(QueueId::GRAPHICS, table, &words);
    assert_eq!(
        backend.seen,
        [
            (QueueId::GRAPHICS, "CODE_0x17".to_owned(), 0x17, 0xC001_105C, vec![7, 8], at(0, words.len())),
            (QueueId::GRAPHICS, "CODE_0x18".to_owned(), 0x18, 0xC000_1060, vec![9], at(3, words.len())),
        ]
    );
    // The code nobody registered is a plain NOP.
    assert!(backend.log.lines.is_empty(), "{:?}", backend.log.lines);
    assert_eq!(processor.stats().opcode_count(Opcode::NOP), 3);
    assert_eq!((processor.stats().unknown, processor.stats().packets), (0, 3));
}

#[test]
fn a_nop_signed_in_its_first_body_dword_passes_the_rest_as_payload() {
    // A prosper-like signature: 0x5249xxxx ("RI") in the first body dword.
    let table = PrivatePackets::new([PrivatePacketEntry::new("R_SIGNED", 0x42).first_dword(0xFFFF_0000, 0x5249_0000)]);
    let words = Cmd::new().pkt3(Opcode::NOP, &[0x5249_0003, 10, 11]).pkt3(Opcode::NOP, &[0x5248_0003, 10]);
    let (backend, _) = run(QueueId::GRAPHICS, table, words.dwords());
    assert_eq!(backend.seen, [(QueueId::GRAPHICS, "R_SIGNED".to_owned(), 0x42, 0xC002_1000, vec![10, 11], at(0, 7))]);
}

#[test]
fn an_unknown_opcode_a_packet_not_emulated_and_a_graphics_only_one_on_compute_are_private_when_matched() {
    let entry = |name: &str, code: u32, op: u8| {
        PrivatePacketEntry::new(name, code).header(0xC000_FF00, 0xC000_0000 | u32::from(op) << 8)
    };
    let table = PrivatePackets::new([
        entry("EMU_0x01", 1, 0x01),
        entry("EMU_LOD", 2, Opcode::GET_LOD_STATS.0),
        entry("EMU_CONTEXT", 3, Opcode::SET_CONTEXT_REG.0),
    ]);
    let words = Cmd::new()
        .pkt3(Opcode(0x01), &[5])
        .pkt3(Opcode::GET_LOD_STATS, &[6])
        .pkt3(Opcode::SET_CONTEXT_REG, &[r::DB_RENDER_CONTROL - 0xA000, 7]);
    // On a compute queue all three are private; nothing is unknown or not
    // emulated, and no context register is written.
    let compute = QueueId::compute(0, 1).unwrap();
    let (backend, processor) = run(compute, table.clone(), words.dwords());
    let names: Vec<_> = backend.seen.iter().map(|s| (s.1.as_str(), s.2, s.4.clone())).collect();
    assert_eq!(
        names,
        [("EMU_0x01", 1, vec![5]), ("EMU_LOD", 2, vec![6]), ("EMU_CONTEXT", 3, vec![r::DB_RENDER_CONTROL - 0xA000, 7])]
    );
    assert!(backend.log.lines.is_empty() && backend.log.unknown.is_empty(), "{:?}", backend.log.lines);
    let stats = processor.stats();
    assert_eq!((stats.unknown, stats.not_emulated_count(Opcode::GET_LOD_STATS)), (0, 0));
    assert_eq!(processor.register(r::DB_RENDER_CONTROL), 0);
    // On the graphics queue SET_CONTEXT_REG is a register write: the table
    // is not asked, the register is written.
    let (backend, processor) = run(QueueId::GRAPHICS, table, words.dwords());
    assert_eq!(backend.seen.len(), 2);
    assert_eq!(processor.register(r::DB_RENDER_CONTROL), 7);
}

#[test]
fn pads_register_writes_and_emulated_packets_are_never_asked() {
    // An entry that would match every type-3 header: only the NOP with a
    // body and the packet with no handler are private; the pads, the
    // register write, the draw and the write are what they are.
    let table = PrivatePackets::new([PrivatePacketEntry::new("ANY", 9).header(0xC000_0000, 0xC000_0000)]);
    let cmd = Cmd::new()
        .raw(&[NOP_PAD, NOP_PAD | 3])
        .set_sh(r::SPI_SHADER_USER_DATA_PS_0, &[0x55])
        .pkt3(Opcode::NOP, &[1])
        .pkt3(Opcode::DRAW_INDEX_AUTO, &[3, 2])
        .raw(&[0xFFFF_8E00])
        .write_mem(SCRATCH, &[0x77]);
    for report_packets in [false, true] {
        let memory = SparseMemory::new();
        memory.map_dwords(0x1000, cmd.dwords()).unwrap();
        memory.map_zeroed(SCRATCH, 0x1000).unwrap();
        let config = ProcessorConfig { private_packets: table.clone(), report_packets, ..ProcessorConfig::default() };
        let mut processor = Processor::with_config(QueueId::GRAPHICS, config);
        let (mut backend, shaders) = (Private::default(), ShaderRegistry::new());
        processor.submit(0x1000, cmd.len()).unwrap();
        let mut env = Env { memory: &memory, backend: &mut backend, shaders: &shaders };
        assert_eq!(processor.process(&mut env), Ok(ProcessStatus::Completed));
        let seen: Vec<_> = backend.seen.iter().map(|s| (s.3, s.4.clone(), s.5.offset_dw)).collect();
        assert_eq!(seen, [(0xC000_1000, vec![1], 5), (0xFFFF_8E00, vec![], 10)], "report_packets {report_packets}");
        assert_eq!(processor.register(r::SPI_SHADER_USER_DATA_PS_0), 0x55);
        assert_eq!(backend.log.lines.len(), 1, "the draw: {:?}", backend.log.lines);
        assert_eq!(memory.read_u32(SCRATCH).unwrap(), 0x77);
        assert_eq!(processor.stats().opcode_count(Opcode::NOP), 3);
    }
}

#[test]
fn by_default_a_private_packet_is_a_host_command_and_the_host_command_convention_still_works() {
    let config = ProcessorConfig {
        private_packets: PrivatePackets::new([header_code(0x17)]),
        host_commands: vec![(0x0042, HostCommand::Custom), (0x0043, HostCommand::PushMarker)],
        ..ProcessorConfig::default()
    };
    let mut h = Harness::with_config(QueueId::GRAPHICS, config);
    let text = u32::from_le_bytes(*b"hi\0\0");
    let mut words = coded_nop(0x17, &[7, 8]);
    words.extend(Cmd::new().pkt3(Opcode::NOP, &[HOST_COMMAND_SIGNATURE | 0x42, 5, 6]).dwords());
    words.extend(Cmd::new().pkt3(Opcode::NOP, &[HOST_COMMAND_SIGNATURE | 0x43, text]).dwords());
    assert_eq!(h.run(&Cmd::new().raw(&words)), Ok(ProcessStatus::Completed));
    assert_eq!(
        h.log(),
        [
            "gfx host_command code=0x17 payload=0x7,0x8",
            "gfx host_command code=0x42 payload=0x5,0x6",
            "gfx marker push \"hi\""
        ]
    );
}

#[test]
fn the_disassembler_names_what_the_table_matches() {
    let table = PrivatePackets::new([header_code(0x17)]);
    let mut words = coded_nop(0x17, &[7]);
    words.extend([NOP_PAD]);
    words.extend(Cmd::new().pkt3(Opcode::NOP, &[0]).dwords());
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let named = |options: DisasmOptions| -> Vec<String> {
        Disassembler::for_raw(&bytes, 0x1000, options)
            .unwrap()
            .listing()
            .packets
            .iter()
            .map(|p| p.opcode.clone())
            .collect()
    };
    let options = DisasmOptions { private_packets: table.clone(), ..DisasmOptions::default() };
    assert_eq!(named(options.clone()), ["CODE_0x17", "NOP", "NOP"]);
    assert_eq!(named(DisasmOptions::default()), ["NOP", "NOP", "NOP"]);
    let mut text = Vec::new();
    Disassembler::for_raw(&bytes, 0x1000, options).unwrap().write_text(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    let first = text.lines().find(|l| l.starts_with("0x000000001000 ")).unwrap();
    assert!(first.starts_with("0x000000001000  c000105c 00000007 "), "{text}");
    assert!(first.ends_with(" CODE_0x17"), "{text}");
}

#[test]
fn a_table_is_shared_by_its_clones() {
    let table = PrivatePackets::new([header_code(1), header_code(2)]);
    let config = ProcessorConfig { private_packets: table, ..ProcessorConfig::default() };
    let copy = config.clone();
    assert!(std::ptr::eq(config.private_packets.entries(), copy.private_packets.entries()));
    assert_eq!(copy.private_packets.entries().len(), 2);
    assert!(ProcessorConfig::default().private_packets.is_empty());
}
