//! The processor loop's inline path (one-dword NOP pads, counted in runs,
//! and SET_SH_REG / SET_CONTEXT_REG / SET_UCONFIG_REG runs stored in the
//! view loop; every other packet calls its handler and goes on without
//! settling the counts) against its general path (every packet through
//! its handler, one at a time, which `report_packets` forces): random
//! streams of register writers, pads, draws (multi-draws charging their
//! sub-draws), events, releases, memory writes, fills, copies, waits,
//! COND_EXEC skips, predication and NOPs (some of them an embedder's
//! private packets), well formed or not, writing memory, the command
//! buffer or nowhere mapped, cut into random slices under random work
//! budgets, must have the same effects on both: the backend's calls, every
//! register, the GPU-wide UCONFIG file, memory, the counts and each
//! slice's result and cursor.

use proptest::prelude::*;

use pm4core::backend::{Call, Forward, QueueId, RecordingBackend};
use pm4core::memory::SparseMemory;
use pm4core::packet::private::{PrivatePacketEntry, PrivatePackets};
use pm4core::packet::{Opcode, NOP_PAD};
use pm4core::processor::{Env, ProcessStatus, Processor, ProcessorConfig};
use pm4core::regs::gfx103 as r;
use pm4core::regs::space;
use pm4core::shader::ShaderRegistry;

/// One packet of a generated stream.
#[derive(Clone, Debug)]
enum Packet {
    /// A run of one-dword NOP pads.
    Pads(usize),
    /// A type-3 packet: opcode, predicate bit, body (a count of 0x3FFF when
    /// empty: a one-dword packet).
    Type3(Opcode, bool, Vec<u32>),
    /// Any dword (a header of any type and count, or body-like data).
    Raw(u32),
    /// Dwords as they are.
    Words(Vec<u32>),
}

impl Packet {
    fn encode(&self, out: &mut Vec<u32>) {
        match self {
            Packet::Pads(n) => out.extend(std::iter::repeat_n(NOP_PAD, *n)),
            Packet::Type3(opcode, predicate, body) => {
                let count = if body.is_empty() { 0x3FFF } else { body.len() as u32 - 1 };
                out.push(0xC000_0000 | count << 16 | u32::from(opcode.0) << 8 | u32::from(*predicate));
                out.extend_from_slice(body);
            }
            Packet::Raw(dword) => out.push(*dword),
            Packet::Words(words) => out.extend_from_slice(words),
        }
    }
}

/// A register offset in a space of `size` registers: mostly where the
/// loop's checks are (page ends, the space's end, past it).
fn offset(size: u32) -> impl Strategy<Value = u32> {
    prop_oneof![
        4 => 0..0x20u32,
        4 => (0..size / 256).prop_flat_map(|page| (page * 256 + 0xF6)..(page * 256 + 0x100)),
        2 => (size - 8)..(size + 8),
        2 => 0..size,
        1 => any::<u16>().prop_map(u32::from),
    ]
}

/// The body of a register writer: the offset dword (with an _INDEX form's
/// index bits sometimes set) and 0 to 10 values.
fn register_body(size: u32) -> impl Strategy<Value = Vec<u32>> {
    (offset(size), 0..4u32, prop::collection::vec(any::<u32>(), 0..=10)).prop_map(|(offset, index, values)| {
        let mut body = vec![offset | index << 28];
        body.extend(values);
        body
    })
}

/// A body of 0 to 6 small or random dwords.
fn small_body() -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(prop_oneof![3 => 0..16u32, 1 => any::<u32>()], 0..=6)
}

const UCONFIG_REGISTERS: [u32; 4] =
    [r::VGT_PRIMITIVE_TYPE, r::VGT_INDEX_TYPE, r::VGT_NUM_INDICES, r::VGT_NUM_INSTANCES];

fn packet() -> impl Strategy<Value = Packet> {
    let predicate = prop::bool::weighted(0.1);
    prop_oneof![
        3 => (1..40usize).prop_map(Packet::Pads),
        6 => (predicate, register_body(space::SH_SIZE))
            .prop_map(|(p, body)| Packet::Type3(Opcode::SET_SH_REG, p, body)),
        4 => (predicate, register_body(space::CONTEXT_SIZE))
            .prop_map(|(p, body)| Packet::Type3(Opcode::SET_CONTEXT_REG, p, body)),
        1 => (predicate, register_body(space::SH_SIZE))
            .prop_map(|(p, body)| Packet::Type3(Opcode::SET_SH_REG_INDEX, p, body)),
        3 => (
            predicate,
            prop::sample::select(vec![Opcode::SET_UCONFIG_REG, Opcode::SET_UCONFIG_REG_INDEX]),
            prop_oneof![
                3 => prop::sample::select(UCONFIG_REGISTERS.to_vec()).prop_map(|reg| reg - space::UCONFIG),
                1 => offset(space::UCONFIG_SIZE),
            ],
            prop::collection::vec(any::<u32>(), 0..=3),
        )
            .prop_map(|(p, opcode, offset, values)| {
                let mut body = vec![offset];
                body.extend(values);
                Packet::Type3(opcode, p, body)
            }),
        2 => (predicate, prop::collection::vec(0..4u32, 0..=2))
            .prop_map(|(p, body)| Packet::Type3(Opcode::NUM_INSTANCES, p, body)),
        4 => (
            predicate,
            prop::sample::select(vec![
                Opcode::DRAW_INDEX_AUTO,
                Opcode::DRAW_INDEX_2,
                Opcode::DRAW_INDEX_OFFSET_2,
                Opcode::DRAW_INDEX_MULTI_AUTO,
                Opcode::DISPATCH_DIRECT,
                Opcode::INDEX_TYPE,
                Opcode::INDEX_BASE,
                Opcode::INDEX_BUFFER_SIZE,
                Opcode::NOP,
            ]),
            small_body(),
        )
            .prop_map(|(p, opcode, body)| Packet::Type3(opcode, p, body)),
        1 => (prop::sample::select(vec![0u32, 3, 4]), any::<bool>()).prop_map(|(op, visible)| {
            // Predication on the zeroed scratch: from here on, predicated
            // packets are skipped (or not), and the fast path stands aside.
            let flags = op << 16 | u32::from(visible) << 8;
            Packet::Type3(Opcode::SET_PREDICATION, false, vec![flags, SCRATCH as u32, (SCRATCH >> 32) as u32])
        }),
        3 => (predicate, memory_packet()).prop_map(|(p, (opcode, body))| Packet::Type3(opcode, p, body)),
        2 => (predicate, moving_packet()).prop_map(|(p, (opcode, body))| Packet::Type3(opcode, p, body)),
        2 => private_nop(),
        1 => any::<u32>().prop_map(Packet::Raw),
    ]
}

/// The embedder's private NOPs the runs register: a code in header bits
/// [7:2], or a signature in the first body dword.
fn private_packets() -> PrivatePackets {
    PrivatePackets::new([
        PrivatePacketEntry::new("HEADER_CODE", 0x17).header(0xC000_FFFC, 0xC000_1000 | 0x17 << 2),
        PrivatePacketEntry::new("SIGNED", 0x42).first_dword(0xFFFF_0000, 0x5249_0000),
    ])
}

/// NOPs with a code in header bits [7:2] (one dword, or with a body) or a
/// signed first dword: private packets or not, on both paths alike.
fn private_nop() -> impl Strategy<Value = Packet> {
    prop_oneof![
        (prop::sample::select(vec![0x17u32, 0x05, 0x3F]), 0..3usize).prop_map(|(code, len)| {
            let count = if len == 0 { 0x3FFF } else { len as u32 - 1 };
            let mut words = vec![0xC000_1000 | count << 16 | code << 2];
            words.extend(std::iter::repeat_n(code, len));
            Packet::Words(words)
        }),
        (prop::sample::select(vec![0x5249_0001u32, 0x5249_FFFF, 0x5248_0000]), 0..3usize).prop_map(|(first, extra)| {
            let mut body = vec![first];
            body.extend(std::iter::repeat_n(7, extra));
            Packet::Type3(Opcode::NOP, false, body)
        }),
    ]
}

/// Packets whose handler asks the loop for more than going on: COND_EXEC
/// skipping dwords (the zeroed scratch region says skip; sometimes past
/// the buffer's end), and multi-draws charging their sub-draws to the work
/// budget (their records in the zeroed scratch region, after a SET_BASE
/// of it; without one, their records are not mapped and they fail).
fn moving_packet() -> impl Strategy<Value = (Opcode, Vec<u32>)> {
    let lo_hi = |a: u64| [a as u32, (a >> 32) as u32];
    prop_oneof![
        (target(), 0..12u32).prop_map(move |(a, skip)| {
            let mut body = lo_hi(a).to_vec();
            body.extend([0, skip]);
            (Opcode::COND_EXEC, body)
        }),
        Just((Opcode::SET_BASE, vec![1, SCRATCH as u32, (SCRATCH >> 32) as u32])),
        (
            prop::sample::select(vec![Opcode::DRAW_INDIRECT_MULTI, Opcode::DRAW_INDEX_INDIRECT_MULTI]),
            0..6u32,
            any::<bool>()
        )
            .prop_map(|(opcode, count, draw_index)| {
                // DATA_OFFSET 0, no SGPR locations but DRAW_INDEX_LOC 0x20,
                // COUNT, no count address, stride 16, initiator 2.
                let enable = u32::from(draw_index) << 31;
                (opcode, vec![0, 0, 0, 0x20 | enable, count, 0, 0, 16, 2])
            }),
    ]
}

/// Where a generated packet writes: the scratch region, the command
/// buffer itself (which makes the loop drop the dwords it holds), the
/// scratch region's last bytes (a copy or fill of more runs past its end)
/// or nowhere mapped (the packet fails).
fn target() -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => (0..16u64).prop_map(|k| SCRATCH + 4 * k),
        2 => (0..256u64).prop_map(|k| COMMANDS + 4 * k),
        1 => (1..8u64).prop_map(|k| SCRATCH + SCRATCH_SIZE - 4 * k),
        1 => Just(UNMAPPED),
    ]
}

/// The plain handlers' packets (events, releases, memory writes, fills
/// and copies, context control, clear state), well formed or not.
fn memory_packet() -> impl Strategy<Value = (Opcode, Vec<u32>)> {
    let lo_hi = |a: u64| [a as u32, (a >> 32) as u32];
    prop_oneof![
        (target(), prop::collection::vec(any::<u32>(), 1..4)).prop_map(move |(a, values)| {
            let mut body = vec![5 << 8 | 1 << 20];
            body.extend(lo_hi(a));
            body.extend(values);
            (Opcode::WRITE_DATA, body)
        }),
        (target(), target(), 0..40u32, any::<bool>(), any::<u32>()).prop_map(move |(dst, src, len, fill, data)| {
            // A fill of DATA, or a copy from memory; the count in bytes.
            let (word0, src) = if fill { (2 << 29, [data, 0]) } else { (0, lo_hi(src)) };
            let mut body = vec![word0, src[0], src[1]];
            body.extend(lo_hi(dst));
            body.push(len * 4);
            (Opcode::DMA_DATA, body)
        }),
        // A DMA_DATA that moves nothing: DST_SEL NOWHERE, or the write of
        // CP_DMA_READ_TAGS (a register destination), of any count.
        (target(), target(), 0..40u32, any::<bool>()).prop_map(move |(dst, src, len, tags)| {
            let (word0, dst, das) =
                if tags { (0, u64::from(r::CP_DMA_READ_TAGS) << 2, 1 << 27) } else { (2 << 20, dst, 0) };
            let mut body = vec![word0, src as u32, (src >> 32) as u32];
            body.extend(lo_hi(dst));
            body.push((len * 4) | das);
            (Opcode::DMA_DATA, body)
        }),
        // Waits on memory (the scratch region is zeros, and the packets
        // above write it) or on a register, met or not (a wait that is not
        // met suspends the stream); sometimes 64-bit, sometimes writing a
        // register first (OPERATION 1), sometimes cut short.
        (
            target(),
            0..8u32,
            0..3u32,
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            prop::sample::select(vec![r::COMPUTE_USER_DATA_0, r::VGT_NUM_INSTANCES, 0xA000]),
            0..8usize,
        )
            .prop_map(move |(a, function, reference, memory, wide, write_first, register, cut)| {
                let operation = if write_first && !memory { 1 } else { 0 };
                let word0 = function | u32::from(memory) << 4 | operation << 6;
                let mut body =
                    if memory { vec![word0, a as u32, (a >> 32) as u32] } else { vec![word0, register, register + 1] };
                body.push(reference);
                if wide {
                    body.push(0);
                }
                body.extend([0xFFFF_FFFF, 0]);
                if wide {
                    body.push(0);
                }
                body.push(10);
                if cut < 2 {
                    body.truncate(cut + 2);
                }
                (if wide { Opcode::WAIT_REG_MEM64 } else { Opcode::WAIT_REG_MEM }, body)
            }),
        (target(), any::<u32>(), 0..4u32).prop_map(move |(a, data, int_sel)| {
            let mut body = vec![0x28 | 5 << 8, 1 << 29 | int_sel << 24];
            body.extend(lo_hi(a));
            body.extend([data, 0, 0]);
            (Opcode::RELEASE_MEM, body)
        }),
        (target(), prop::sample::select(vec![0x15u32, 0x16, 0x28, 0x04, 0x1F, 0x1E, 0x02])).prop_map(
            move |(a, event)| {
                let mut body = vec![event | 1 << 8];
                body.extend(lo_hi(a));
                (Opcode::EVENT_WRITE, body)
            }
        ),
        (
            prop::sample::select(vec![
                Opcode::EVENT_WRITE,
                Opcode::ACQUIRE_MEM,
                Opcode::PFP_SYNC_ME,
                Opcode::CONTEXT_CONTROL,
                Opcode::CLEAR_STATE,
                Opcode::SURFACE_SYNC,
                Opcode::PREAMBLE_CNTL,
                Opcode::PRIME_UTCL2,
                Opcode::SWITCH_BUFFER,
                Opcode::FRAME_CONTROL,
                Opcode::WAIT_FOR_WRITE_CONFIRM,
            ]),
            small_body(),
        ),
        Just((Opcode::CONTEXT_CONTROL, vec![0x8000_0001, 0x8000_0001])),
        // Load, push, pop, push and load.
        (0..4u32).prop_map(|cmd| (Opcode::CLEAR_STATE, vec![cmd])),
        // Plain events (no address: no sample), and the stream-out flush.
        prop::sample::select(vec![0x16u32, 0x28, 0x04, 0x1F])
            .prop_map(|event| (Opcode::EVENT_WRITE, vec![event | 1 << 8])),
    ]
}

/// A zeroed region, where predication reads its value and generated
/// packets write.
const SCRATCH: u64 = 0x10_0000;
/// Where the stream is mapped.
const COMMANDS: u64 = 0x1000;
/// The scratch region's size.
const SCRATCH_SIZE: u64 = 0x1_0000;
/// An address nothing maps.
const UNMAPPED: u64 = 0x7000_0000;

/// What a run did, compared between the two paths.
#[derive(Debug, PartialEq)]
struct Effects {
    /// Each slice's result, and the cursor after it.
    results: Vec<String>,
    /// The backend's log, and what each draw saw beyond it.
    log: Vec<String>,
    /// Every non-zero register of the queue.
    registers: Vec<(u32, u32)>,
    /// Every non-zero register of the GPU-wide UCONFIG file.
    uconfig: Vec<(u32, u32)>,
    /// The processor's counts.
    stats: String,
    /// The first and last bytes of the scratch region and the first of the
    /// command buffer.
    memory: Vec<u32>,
}

/// The recording backend, plus each draw's place, changed state groups
/// and initiator, and each event's place (their log lines have none of
/// these).
#[derive(Default)]
struct Recorder {
    inner: RecordingBackend,
    places: Vec<String>,
}

impl Forward for Recorder {
    type Target = RecordingBackend;

    fn forward<R>(&mut self, _queue: QueueId, call: impl FnOnce(&mut RecordingBackend) -> R) -> Option<R> {
        Some(call(&mut self.inner))
    }

    fn forwarded(&mut self, call: Call<'_>) {
        match call {
            Call::Draw(d) => self
                .places
                .push(format!("draw at {:?} changed={:#x} initiator={:#x}", d.location, d.changed, d.draw_initiator)),
            Call::Event(e) => self.places.push(format!("event at {:?}", e.location)),
            Call::PrivatePacket(p) => {
                self.places.push(format!("private {} {:#x} at {:?}", p.name, p.header.0, p.location))
            }
            _ => {}
        }
    }
}

fn run(words: &[u32], general: bool, graphics: bool, slice: u64, work_budget: u64) -> Effects {
    let memory = SparseMemory::new();
    memory.map_dwords(COMMANDS, words).unwrap();
    memory.map_zeroed(SCRATCH, SCRATCH_SIZE).unwrap();
    let queue = if graphics { QueueId::GRAPHICS } else { QueueId::compute(0, 0).unwrap() };
    let config = ProcessorConfig {
        report_packets: general,
        work_budget,
        private_packets: private_packets(),
        ..ProcessorConfig::default()
    };
    let mut processor = Processor::with_config(queue, config);
    let mut backend = Recorder::default();
    let shaders = ShaderRegistry::new();
    processor.submit(COMMANDS, words.len() as u32).unwrap();
    let mut results = Vec::new();
    for _ in 0..64 {
        let mut env = Env { memory: &memory, backend: &mut backend, shaders: &shaders };
        let result = processor.process_slice(&mut env, slice);
        // Where the stream stands after the slice: where it resumes, or
        // past a packet that failed.
        let cursor = processor.execution().top().map(|c| c.address());
        results.push(format!("{result:?} at {cursor:x?}"));
        if result != Ok(ProcessStatus::Yielded) {
            break;
        }
    }
    let uconfig = (space::UCONFIG..space::END)
        .map(|register| (register, processor.global().uconfig(register)))
        .filter(|&(_, value)| value != 0)
        .collect();
    let mut log = backend.inner.lines;
    log.extend(backend.places);
    log.extend(backend.inner.unknown.iter().map(|u| format!("{u:?}")));
    Effects {
        results,
        log,
        registers: processor.registers().iter_nonzero().collect(),
        uconfig,
        stats: format!("{:?}", processor.stats()),
        memory: [(SCRATCH, 32), (SCRATCH + SCRATCH_SIZE - 64, 16), (COMMANDS, 32.min(words.len()))]
            .iter()
            .flat_map(|&(a, n)| {
                let mut dwords = vec![0u32; n];
                pm4core::memory::GuestMemory::read_dwords(&memory, a, &mut dwords).unwrap();
                dwords
            })
            .collect(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn the_fast_path_has_the_effects_of_the_general_path(
        packets in prop::collection::vec(packet(), 0..60),
        graphics in prop::bool::weighted(0.8),
        slice in prop::sample::select(vec![1u64, 2, 5, 17, u64::MAX]),
        work_budget in prop::sample::select(vec![3u64, 20, 1 << 26]),
    ) {
        let mut words = Vec::new();
        for packet in &packets {
            packet.encode(&mut words);
        }
        let fast = run(&words, false, graphics, slice, work_budget);
        let general = run(&words, true, graphics, slice, work_budget);
        prop_assert_eq!(fast, general);
    }
}

#[test]
fn num_instances_on_a_compute_queue_goes_the_general_way() {
    // Found by the property above: the fast path stored NUM_INSTANCES on
    // compute queues, where it is graphics-only (the general path reports
    // it as a packet the queue does not run, and stores nothing).
    let mut words = Vec::new();
    Packet::Type3(Opcode::NUM_INSTANCES, false, vec![7]).encode(&mut words);
    Packet::Type3(Opcode::SET_UCONFIG_REG, false, vec![r::VGT_PRIMITIVE_TYPE - space::UCONFIG, 4]).encode(&mut words);
    for general in [false, true] {
        let effects = run(&words, general, false, u64::MAX, 1 << 26);
        assert_eq!(effects.results, ["Ok(Completed) at None"]);
        assert_eq!(effects.registers, [(r::VGT_PRIMITIVE_TYPE, 4)], "general path: {general}");
        assert_eq!(effects.uconfig, [(r::VGT_PRIMITIVE_TYPE, 4)]);
        assert_eq!(effects.log.len(), 2, "{:?}", effects.log);
        assert!(effects.log[0].starts_with("comp0.0 unknown_packet header=0xc0002f00 at 0x1000"), "{:?}", effects.log);
    }
}

#[test]
fn a_write_into_the_dwords_ahead_is_seen_by_the_packets_there() {
    // A release, a memory write, a fill and a copy that rewrite the value of a register
    // write further on in the same buffer: the loop drops the dwords it
    // holds and reads the new ones, on both paths.
    /// A packet's body that writes at the address given.
    type Writer = fn(u64) -> Vec<u32>;
    let writers: [(Opcode, Writer); 4] = [
        (Opcode::RELEASE_MEM, |at| vec![0x28 | 5 << 8, 1 << 29, at as u32, (at >> 32) as u32, 0x5A5A, 0, 0]),
        (Opcode::WRITE_DATA, |at| vec![5 << 8 | 1 << 20, at as u32, (at >> 32) as u32, 0x5A5A]),
        // A fill of DATA, 4 bytes.
        (Opcode::DMA_DATA, |at| vec![2 << 29, 0x5A5A, 0, at as u32, (at >> 32) as u32, 4]),
        // A copy of 4 bytes from the scratch dword the stream's first
        // packet writes.
        (Opcode::DMA_DATA, |at| vec![0, SCRATCH as u32 + 0x40, 0, at as u32, (at >> 32) as u32, 4]),
    ];
    for (opcode, writer) in writers {
        let mut words = Vec::new();
        let source = vec![5 << 8 | 1 << 20, SCRATCH as u32 + 0x40, 0, 0x5A5A];
        Packet::Type3(Opcode::WRITE_DATA, false, source).encode(&mut words);
        // The register write's value: its header and offset dword after
        // the writer.
        let value_at = COMMANDS + 4 * (words.len() + 1 + writer(0).len() + 2) as u64;
        Packet::Type3(opcode, false, writer(value_at)).encode(&mut words);
        Packet::Type3(Opcode::SET_SH_REG, false, vec![r::COMPUTE_USER_DATA_0 - space::SH, 7]).encode(&mut words);
        for general in [false, true] {
            let effects = run(&words, general, true, u64::MAX, 1 << 26);
            assert_eq!(effects.results, ["Ok(Completed) at None"], "{opcode} general path: {general}");
            let value = effects.registers.iter().find(|&&(register, _)| register == r::COMPUTE_USER_DATA_0);
            assert_eq!(value, Some(&(r::COMPUTE_USER_DATA_0, 0x5A5A)), "{opcode} general path: {general}");
        }
    }
}
