//! The typed packet bodies as one source of truth: the test vectors of
//! `tests/vectors/packets.txt` (gfx10.3) and `tests/vectors/packets-gfx7.txt`
//! (gfx7: dwords → disassembly line) checked through decode, the
//! disassembler, `--source` assembly and encode, each in its family's
//! forms; encoding what was decoded from every radv trace (navi21 and
//! Bonaire) gives back the same dwords; and for every body type and family,
//! `decode(encode(x)) == x`.

use std::path::{Path, PathBuf};

use pm4core::asm::assemble;
use pm4core::disasm::{DisasmOptions, Disassembler};
use pm4core::packet::body::{AnyBody, Body, IndirectBuffer};
use pm4core::packet::{Header, Opcode, PacketType};
use pm4core::trace::{Trace, TraceEvent};
use pm4core::GpuFamily;
use proptest::prelude::*;
use xtask::vectors::line_of;

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
