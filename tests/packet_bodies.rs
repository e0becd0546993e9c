//! The typed packet bodies as one source of truth: the test vectors of
//! `tests/vectors/packets.txt` (gfx10.3) and `tests/vectors/packets-gfx7.txt`
//! (gfx7: dwords → disassembly line) checked through decode, the
//! disassembler, `--source` assembly and encode, each in its family's
//! forms; encoding what was decoded from every radv trace (navi21 and
//! Bonaire) gives back the same dwords; and for every body type and family,
//! `decode(encode(x)) == x`.

use std::path::{Path, PathBuf};

use pm4core::asm::assemble;
use pm4core::disasm::{DisasmOptions, Disassembler, PacketRecord};
use pm4core::packet::body::{AnyBody, Body, IndirectBuffer};
use pm4core::packet::{Header, Opcode, PacketType};
use pm4core::trace::{Trace, TraceEvent};
use pm4core::GpuFamily;
use proptest::prelude::*;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The radv traces of `traces/` (navi21; there must be some).
fn radv_traces() -> Vec<PathBuf> {
    traces_in("traces")
}

/// The radv traces of `traces/gfx7/` (Bonaire; there must be some).
fn bonaire_traces() -> Vec<PathBuf> {
    traces_in("traces/gfx7")
}

fn traces_in(dir: &str) -> Vec<PathBuf> {
    let mut traces: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("{dir}/ is part of the repository: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pm4t"))
        .collect();
    traces.sort();
    assert!(traces.len() >= 10, "the radv traces are missing from {dir}/");
    traces
}

/// The vector file of a family.
fn vector_file(family: GpuFamily) -> &'static str {
    match family {
        GpuFamily::Gfx103 => "tests/vectors/packets.txt",
        GpuFamily::Gfx7 => "tests/vectors/packets-gfx7.txt",
    }
}

#[path = "support/field_forms.rs"]
mod field_forms;
use field_forms::FIELD_FORMS;

/// The disassembly line of a packet record: its name, header flags and
/// every field as `NAME=value` (register writes by register name).
fn line_of(p: &PacketRecord) -> String {
    let mut line = p.opcode.clone();
    if p.predicate {
        line.push_str(" predicate");
    }
    if p.compute {
        line.push_str(" compute");
    }
    for f in &p.fields {
        line.push(' ');
        line.push_str(&f.name);
        line.push('=');
        line.push_str(&f.value);
    }
    line
}

fn bytes_of(dwords: &[u32]) -> Vec<u8> {
    dwords.iter().flat_map(|d| d.to_le_bytes()).collect()
}

/// One vector: its line number, dwords and expected line.
struct Vector {
    line: usize,
    dwords: Vec<u32>,
    expected: String,
}

fn vectors(family: GpuFamily) -> Vec<Vector> {
    let path = root().join(vector_file(family));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", vector_file(family)));
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (words, expected) = line.split_once(" -> ").unwrap_or_else(|| panic!("line {}: no ` -> `", i + 1));
        let dwords = words
            .split_whitespace()
            .map(|w| u32::from_str_radix(w, 16).unwrap_or_else(|_| panic!("line {}: bad dword {w}", i + 1)))
            .collect();
        out.push(Vector { line: i + 1, dwords, expected: expected.to_owned() });
    }
    out
}

#[test]
fn every_vector_decodes_disassembles_assembles_and_encodes_to_its_dwords() {
    check_vectors(GpuFamily::Gfx103, 60);
}

#[test]
fn every_gfx7_vector_decodes_disassembles_assembles_and_encodes_to_its_dwords() {
    check_vectors(GpuFamily::Gfx7, 60);
}

fn check_vectors(family: GpuFamily, at_least: usize) {
    let vectors = vectors(family);
    assert!(vectors.len() >= at_least, "{} vectors", vectors.len());
    for v in &vectors {
        let at = format!("{}:{}", vector_file(family), v.line);
        let header = Header(v.dwords[0]);
        assert_eq!(header.length_dw(), Some(v.dwords.len() as u32), "{at}: the dwords are one whole packet");

        // The disassembler's line.
        let bytes = bytes_of(&v.dwords);
        let options = DisasmOptions { family: Some(family), ..DisasmOptions::default() };
        let dis = Disassembler::for_raw(&bytes, 0x1000, options).unwrap();
        let listing = dis.listing();
        assert_eq!(listing.packets.len(), 1, "{at}");
        let record = &listing.packets[0];
        assert_eq!(record.problem, None, "{at}");
        assert_eq!(line_of(record), v.expected, "{at}");

        // `--source` assembles back to the same dwords.
        let mut source = Vec::new();
        dis.write_source(&mut source).unwrap();
        let source = String::from_utf8(source).unwrap();
        let built = assemble(&source).unwrap_or_else(|e| panic!("{at}: {e}\n{source}"));
        let trace = Trace::from_bytes(built).unwrap();
        let memory: Vec<u8> = trace
            .events()
            .iter()
            .find_map(|e| match e {
                TraceEvent::MemRegion { data, .. } => Some(trace.bytes_of(data).to_vec()),
                _ => None,
            })
            .unwrap();
        assert_eq!(memory, bytes, "{at}: --source round trip\n{source}");
        // An opcode with a key=value form is written in it, from its fields.
        let statement = source.lines().find(|l| l.starts_with("    ") && !l.contains(".submit")).unwrap_or("");
        let mut words = statement.split_whitespace();
        if words.next().is_some_and(|m| FIELD_FORMS.contains(&m)) {
            let first = words.find(|w| !["compute", "predicate", "cam"].contains(w)).unwrap_or("");
            assert!(first.contains('='), "{at}: not a key=value statement: {statement}");
        }

        // Decode and encode.
        if header.packet_type() != PacketType::Type3 || v.dwords.len() == 1 {
            continue;
        }
        let body = AnyBody::decode_for(family, header.opcode(), &v.dwords[1..]).unwrap_or_else(|e| panic!("{at}: {e}"));
        let Some(body) = body else { continue };
        let mut encoded = body.encode_for(family);
        encoded[0] |= v.dwords[0] & 7;
        assert_eq!(encoded, v.dwords, "{at}: encode");
    }
}

#[test]
fn every_opcode_with_a_body_type_has_a_vector() {
    for family in GpuFamily::ALL {
        let covered: std::collections::BTreeSet<Opcode> = vectors(family)
            .iter()
            .map(|v| Header(v.dwords[0]))
            .filter(|h| h.packet_type() == PacketType::Type3)
            .map(|h| h.opcode())
            .collect();
        let missing: Vec<String> =
            AnyBody::opcodes_for(family).filter(|op| !covered.contains(op)).map(|op| op.to_string()).collect();
        assert!(missing.is_empty(), "{family}: no vector for {missing:?}");
    }
}

#[test]
fn encoding_what_was_decoded_from_every_radv_trace_gives_the_same_dwords() {
    let mut checked = 0usize;
    let mut mismatches = Vec::new();
    for (family, path) in radv_traces()
        .into_iter()
        .map(|p| (GpuFamily::Gfx103, p))
        .chain(bonaire_traces().into_iter().map(|p| (GpuFamily::Gfx7, p)))
    {
        let trace = Trace::read_file(&path).unwrap();
        let listing = Disassembler::for_trace(&trace, DisasmOptions::default()).listing();
        assert_eq!(listing.gpu, family.to_string(), "{}: INFO gpu=", path.display());
        for p in &listing.packets {
            let header = Header(p.dwords[0]);
            if header.packet_type() != PacketType::Type3 || p.dwords.len() < 2 || p.problem.is_some() {
                continue;
            }
            let Some(body) = AnyBody::decode_for(family, header.opcode(), &p.dwords[1..]).unwrap() else { continue };
            let mut encoded = body.encode_for(family);
            encoded[0] |= p.dwords[0] & 7;
            checked += 1;
            if encoded != p.dwords && mismatches.len() < 20 {
                mismatches.push(format!(
                    "{} {:#x} {}: {:08x?} -> {:08x?}",
                    path.display(),
                    p.address,
                    p.opcode,
                    p.dwords,
                    encoded
                ));
            }
        }
    }
    assert!(checked > 1000, "{checked} packets checked");
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// For every body type and family: whatever `decode` gives, encoding
    /// it and decoding again gives the same value.
    #[test]
    fn decode_of_encode_is_identity(
        op_index in 0usize..256,
        body in proptest::collection::vec(any::<u32>(), 0..24),
        gfx7 in any::<bool>(),
    ) {
        let family = if gfx7 { GpuFamily::Gfx7 } else { GpuFamily::Gfx103 };
        let opcodes: Vec<Opcode> = AnyBody::opcodes_for(family).collect();
        let op = opcodes[op_index % opcodes.len()];
        if let Ok(Some(x)) = AnyBody::decode_for(family, op, &body) {
            let mut dwords = Vec::new();
            x.encode_body_for(family, &mut dwords);
            let again = AnyBody::decode_for(family, x.opcode(), &dwords);
            prop_assert_eq!(again, Ok(Some(x.clone())), "{} {} {:08x?} -> {:08x?}", family, op, body, dwords);
        }
    }
}

#[test]
fn the_public_builder_emits_what_the_processor_runs() {
    use pm4core::packet::builder::CommandBuffer;
    let mut child = CommandBuffer::new();
    child.write_mem(0x2000, &[7]).unwrap();
    let mut cb = CommandBuffer::new();
    cb.call(0x3000, child.len_dw()).unwrap().packet(&IndirectBuffer::chain(0x4000, 0)).unwrap();
    assert_eq!(cb.dwords()[..4], [0xC002_3F00, 0x3000, 0, child.len_dw() | (1 << 23)]);
    let decoded = IndirectBuffer::decode_body(Opcode::INDIRECT_BUFFER, &cb.dwords()[5..8]).unwrap();
    assert!(decoded.chain && decoded.valid);
}

/// Prints candidate vectors: the first packet of each opcode (and of each
/// length) in the radv traces, and a canonical synthetic packet for every
/// opcode with a body type the traces lack. `cargo test --test
/// packet_bodies -- --ignored --nocapture print_vectors`; review before
/// committing them to `tests/vectors/packets.txt`.
#[test]
#[ignore]
fn print_vectors() {
    print_vectors_of(GpuFamily::Gfx103, radv_traces(), GFX103_EXTRA);
}

/// [`print_vectors`] for gfx7, from the Bonaire traces, for
/// `tests/vectors/packets-gfx7.txt`.
#[test]
#[ignore]
fn print_gfx7_vectors() {
    print_vectors_of(GpuFamily::Gfx7, bonaire_traces(), GFX7_EXTRA);
}

/// Hand-made gfx7 packets for the forms the Bonaire traces lack.
const GFX7_EXTRA: &[&[u32]] = &[
    &[0xC005_5000, 0x0000_0000, 0x0010_0000, 0x0000_0001, 0x0020_0000, 0x0000_0001, 0x01A0_0100], // DMA_DATA, swaps
    &[0xC005_5000, 0x4000_0000, 0xDEAD_BEEF, 0x0000_0000, 0x0020_0000, 0x0000_0001, 0x001F_FFFC], // DMA_DATA fill, max
    &[0xC004_4700, 0x0003_1528, 0x0000_1000, 0x2200_0001, 0x0000_0007, 0x0000_0000], // EOP, cache actions, INT_SEL 2
    &[0xC004_4700, 0x0000_0504, 0x0010_0000, 0x4000_8001, 0x1111_1111, 0x2222_2222], // EOP, 64-bit data
    &[0xC005_4900, 0x0032_1528, 0x4200_0000, 0x0010_0000, 0x0000_0001, 0x0000_0005, 0x0000_0000], // RELEASE_MEM
    &[0xC005_5800, 0x28C0_0000, 0x0000_0010, 0x0000_0000, 0x0000_1000, 0x0000_0001, 0x0000_000A], // ACQUIRE_MEM
    &[0xC003_4300, 0x8000_0040, 0xFFFF_FFFF, 0x0000_0000, 0x0000_000A],              // SURFACE_SYNC
    &[0xC003_2200, 0x0010_0000, 0x0000_0001, 0x1000_0000, 0x0000_0008],              // COND_EXEC, CONTROL 1
    &[0xC003_4800, 0x0000_0630, 0x0010_0000, 0x2000_0001, 0x0004_0002],              // EVENT_WRITE_EOS, GDS
    &[0xC000_5900, 0x8000_0000],                                                     // REWIND
    &[0xC001_3900, 0x0010_0000, 0xE000_0001],                                        // MEM_SEMAPHORE wait (gfx7 form)
];

/// Hand-made gfx10.3 packets for opcodes the navi21 traces lack.
const GFX103_EXTRA: &[&[u32]] = &[
    &[0xC003_5E00, 0x0010_0000, 0xFFFF_8001, 0x0000_0010, 0x0000_0004], // LOAD_UCONFIG_REG one range
    &[0xC005_5F00, 0x0010_0000, 0x0000_0001, 0x0000_0008, 0x0000_0002, 0x0000_004C, 0x0000_0001],
    &[0xC003_6000, 0x0010_0000, 0x0000_0001, 0x0000_0200, 0x0000_0001], // LOAD_CONFIG_REG
    &[0xC003_6100, 0x0010_0000, 0x0000_0001, 0x0000_0000, 0x0000_0010], // LOAD_CONTEXT_REG
    &[0xC001_6800, 0x0000_0010, 0x0000_0001],                           // SET_CONFIG_REG
    &[0xC001_6A00, 0x2000_0290, 0x0000_0001],                           // SET_CONTEXT_REG_INDEX
    &[0xC002_7800, 0x0000_0004, 0x0000_0011, 0x0000_0022],              // SET_QUEUE_REG
    &[0xC002_8100, 0x0000_0040, 0x1111_1111, 0x2222_2222],              // WRITE_CONST_RAM
    &[0xC002_2100, 0x0000_A290, 0xFFFF_FF00, 0x0000_0005],              // REG_RMW
    &[0xC002_5100, 0x0000_0290, 0x0000_00FF, 0x0000_0011],              // CONTEXT_REG_RMW
    &[0xC000_2300, 0x0100_0004],                                        // PRED_EXEC
    &[0xC000_5900, 0x8000_0000],                                        // REWIND
    &[0xC000_8400, 0x0000_0001],                                        // INCREMENT_CE_COUNTER
    &[0xC003_2200, 0x0010_0000, 0x0000_8001, 0x0000_0000, 0x0000_0008], // COND_EXEC
    &[0xC002_2000, 0x0001_0100, 0x0010_0000, 0xFFFF_8001],              // SET_PREDICATION zpass
    &[0xC002_3900, 0x0010_0000, 0xFFFF_8001, 0xE000_0000],              // MEM_SEMAPHORE wait
    &[0xC003_4300, 0x8000_0040, 0xFFFF_FFFF, 0x0000_0000, 0x0000_000A], // SURFACE_SYNC
    &[0xC003_1F00, 0x0010_0000, 0xFFFF_8001, 0x0020_0000, 0xFFFF_8001], // OCCLUSION_QUERY
    &[0xC007_1E00, 0x0000_0002, 0x0010_0000, 0xFFFF_8001, 0x0000_0001, 0, 0, 0, 10], // ATOMIC_MEM add
    &[
        0xC007_4500,
        0x0000_0113,
        0x0010_0000,
        0xFFFF_8001,
        0x0000_0001,
        0xFFFF_FFFF,
        0x0020_0000,
        0xFFFF_8001,
        0x0000_0007,
    ],
    &[0xC004_4700, 0x0000_0504, 0x0010_0000, 0x2000_8001, 0x0000_0001, 0x0000_0000], // EVENT_WRITE_EOP
    &[0xC003_4800, 0x0000_0506, 0x0010_0000, 0x4000_8001, 0x0000_0001],              // EVENT_WRITE_EOS
    &[0xC003_8000, 0x0010_0000, 0xFFFF_8001, 0x0000_0010, 0x0000_0100],              // LOAD_CONST_RAM
    &[0xC003_8300, 0x4000_0100, 0x0000_0010, 0x0010_0000, 0xFFFF_8001],              // DUMP_CONST_RAM
    &[0xC002_9E00, 0x0000_0100, 0x0000_0010, 0x0000_0040],                           // DUMP_CONST_RAM_OFFSET
    &[0xC000_8800, 0x0000_0002],                                                     // WAIT_ON_DE_COUNTER_DIFF
    &[0xC007_9300, 0x0000_0013, 0x0010_0000, 0xFFFF_8001, 1, 0, 0xFFFF_FFFF, 0xFFFF_FFFF, 4], // WAIT_REG_MEM64
    &[0xC003_6300, 0x0010_0000, 0xFFFF_8001, 0x8000_0000, 0x0000_0002],              // LOAD_SH_REG_INDEX pairs
    &[0xC003_6400, 0x0010_0000, 0xFFFF_8001, 0x0000_0242, 0x0000_0001],              // LOAD_UCONFIG_REG_INDEX
];

fn print_vectors_of(family: GpuFamily, traces: Vec<PathBuf>, extra: &[&[u32]]) {
    let mut seen = std::collections::BTreeSet::new();
    let mut lines = Vec::new();
    let options = DisasmOptions { family: Some(family), ..DisasmOptions::default() };
    let mut emit = |dwords: &[u32]| {
        let bytes = bytes_of(dwords);
        let dis = Disassembler::for_raw(&bytes, 0x1000, options.clone()).unwrap();
        let listing = dis.listing();
        let words: Vec<String> = dwords.iter().map(|d| format!("{d:08x}")).collect();
        lines.push(format!("{} -> {}", words.join(" "), line_of(&listing.packets[0])));
    };
    for path in traces {
        let trace = Trace::read_file(&path).unwrap();
        for p in Disassembler::for_trace(&trace, DisasmOptions::default()).listing().packets {
            let header = Header(p.dwords[0]);
            if p.problem.is_some() || p.dwords.len() > 12 {
                continue;
            }
            let key = (header.packet_type() as u8, header.opcode().0, p.dwords.len());
            if seen.insert(key) {
                emit(&p.dwords);
            }
        }
    }
    for dwords in extra {
        let header = Header(dwords[0]);
        if header.length_dw() != Some(dwords.len() as u32) {
            continue;
        }
        seen.insert((header.packet_type() as u8, header.opcode().0, dwords.len()));
        emit(dwords);
    }
    for op in AnyBody::opcodes_for(family) {
        if seen.iter().any(|&(t, o, _)| t == PacketType::Type3 as u8 && o == op.0) {
            continue;
        }
        for len in 1..16usize {
            let pattern: Vec<u32> = (0..len as u32).map(|i| 0x100 * (i + 1) + i).collect();
            if let Ok(Some(body)) = AnyBody::decode_for(family, op, &pattern) {
                emit(&body.encode_for(family));
                break;
            }
        }
    }
    for line in lines {
        println!("{line}");
    }
}
