//! The round trip: a trace disassembled as source and assembled again is
//! the same trace, byte for byte (same INFO, same regions with the same
//! bytes, same host writes, submissions, shaders, notes and ancillary
//! chunks, in the same order). Checked on random traces and on every real
//! trace of the corpus.

use std::path::{Path, PathBuf};

use pm4core::asm::assemble;
use pm4core::disasm::{DisasmOptions, Disassembler};
use pm4core::trace::{Tag, Trace, TraceEvent, TraceWriter};
use proptest::prelude::*;

/// An event with its payload bytes instead of file offsets (and no chunk index).
#[derive(Debug, PartialEq, Eq)]
enum Flat {
    Mem(u64, Vec<u8>),
    Zero(u64, u64),
    Write(u64, Vec<u8>),
    Submit(u32, u64, u32),
    Shader(u64, u64, bool),
    Note(String),
    Ancillary(Tag),
}

fn flatten(t: &Trace) -> Vec<Flat> {
    t.events()
        .iter()
        .map(|e| match e {
            TraceEvent::MemRegion { address, data, .. } => Flat::Mem(*address, t.bytes_of(data).to_vec()),
            TraceEvent::ZeroRegion { address, len, .. } => Flat::Zero(*address, *len),
            TraceEvent::HostWrite { address, data, .. } => Flat::Write(*address, t.bytes_of(data).to_vec()),
            TraceEvent::Submit { queue, address, size_dw, .. } => Flat::Submit(*queue, *address, *size_dw),
            TraceEvent::Shader { header_address, code_address, relocated, .. } => {
                Flat::Shader(*header_address, *code_address, *relocated)
            }
            TraceEvent::Note { text, .. } => Flat::Note(text.clone()),
            TraceEvent::Ancillary { tag, .. } => Flat::Ancillary(*tag),
        })
        .collect()
}

/// Disassembles `trace` as source, assembles it, checks the result, and
/// returns the source.
fn round_trip(trace: &Trace, name: &str) -> String {
    let dis = Disassembler::for_trace(trace, DisasmOptions::default());
    let mut source = Vec::new();
    dis.write_source(&mut source).unwrap_or_else(|e| panic!("{name}: {e}"));
    let source = String::from_utf8(source).unwrap_or_else(|e| panic!("{name}: source is not UTF-8: {e}"));
    let bytes = assemble(&source).unwrap_or_else(|e| {
        let line = source.lines().nth(e.line.saturating_sub(1)).unwrap_or("");
        panic!("{name}: {e}\n  {line}")
    });
    let again = Trace::from_bytes(bytes.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(again.info(), trace.info(), "{name}: INFO");
    let (a, b) = (flatten(trace), flatten(&again));
    assert_eq!(a.len(), b.len(), "{name}: event count");
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x, y, "{name}: event {i}");
    }
    assert!(bytes[..] == trace.bytes()[..], "{name}: the files differ");
    source
}

/// The opcodes the assembler has a key=value form for.
const FIELD_FORMS: [&str; 12] = [
    "WAIT_REG_MEM",
    "WAIT_REG_MEM64",
    "WRITE_DATA",
    "RELEASE_MEM",
    "EVENT_WRITE",
    "INDIRECT_BUFFER",
    "INDIRECT_BUFFER_CONST",
    "COPY_DATA",
    "DMA_DATA",
    "ACQUIRE_MEM",
    "DISPATCH_DIRECT",
    "DRAW_INDEX_AUTO",
];

/// The repository's radv traces (part of the repository: missing is a failure).
fn trace_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    assert!(dir.is_dir(), "{} is missing", dir.display());
    dir
}

#[test]
fn real_traces_round_trip() {
    let dir = trace_dir();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "pm4t")).collect()
        })
        .unwrap_or_default();
    paths.sort();
    assert!(paths.len() >= 10, "{} traces in {}", paths.len(), dir.display());
    let mut field_statements = 0;
    for path in &paths {
        let name = path.display().to_string();
        let trace = Trace::read_file(path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let source = round_trip(&trace, &name);
        // Every packet with a key=value form is written in it (its keys
        // from the body's fields), never as raw dwords.
        for line in source.lines() {
            let mut words = line.split_whitespace();
            if !words.next().is_some_and(|m| FIELD_FORMS.contains(&m)) {
                continue;
            }
            let first = words.next().unwrap_or("");
            assert!(first.contains('=') || first == "compute" || first == "predicate", "{name}: {line}");
            field_statements += 1;
        }
    }
    assert!(field_statements >= 3000, "{field_statements} field statements");
}

/// Region slots: slot k starts near `0x10000 * (k + 1)`.
const SLOTS: u64 = 3;

fn slot_base(slot: u8) -> u64 {
    0x10000 * (u64::from(slot) % SLOTS + 1)
}

/// One step of a random trace.
#[derive(Debug, Clone)]
enum Step {
    Region { slot: u8, shift: u8, zero: bool, words: Vec<u32>, tail: Vec<u8> },
    Write { slot: u8, offset_dw: u8, bytes: Vec<u8> },
    Submit { queue: u32, slot: u8, offset_dw: u8, size_dw: u8 },
    Shader { slot: u8, relocated: bool },
    Note(String),
    Ancillary { tag: [u8; 4], payload: Vec<u8> },
}

/// A random address inside some slot, sometimes with the high bits set as
/// drivers write them.
fn target() -> impl Strategy<Value = (u32, u32)> {
    (0u8..SLOTS as u8, 0u64..48, any::<bool>()).prop_map(|(slot, dw, sign)| {
        let a = slot_base(slot) + dw * 4;
        let hi = (a >> 32) as u32 | if sign { 0xFFFF_0000 } else { 0 };
        (a as u32, hi)
    })
}

/// Packets (and debris) of a command stream.
fn packet() -> impl Strategy<Value = Vec<u32>> {
    prop_oneof![
        3 => Just(vec![0xFFFF_1000]),
        1 => any::<u32>().prop_map(|p| vec![0x8000_0000 | (p & 0x3FFF_FFFF)]),
        1 => (0u32..0x10000, proptest::collection::vec(any::<u32>(), 1..4))
            .prop_map(|(reg, v)| { let mut w = vec![((v.len() as u32 - 1) << 16) | reg]; w.extend(v); w }),
        3 => (any::<u8>(), 0u32..8, proptest::collection::vec(any::<u32>(), 1..7))
            .prop_map(|(op, flags, body)| {
                let mut w = vec![0xC000_0000 | ((body.len() as u32 - 1) << 16) | (u32::from(op) << 8) | flags];
                w.extend(body);
                w
            }),
        1 => (any::<u8>(), 1u32..32).prop_map(|(op, reserved)| vec![0xC000_0000 | (u32::from(op) << 8) | (reserved << 3), 0]),
        1 => (any::<u8>(), 0u32..8).prop_map(|(op, flags)| vec![0xFFFF_0000 | (u32::from(op) << 8) | flags]),
        2 => (target(), 0u32..24, any::<bool>(), any::<bool>()).prop_map(|((lo, hi), size, chain, konst)| {
            let op = if konst { 0x33 } else { 0x3F };
            vec![0xC002_0000 | (op << 8), lo, hi, size | (u32::from(chain) << 20) | (1 << 23)]
        }),
        2 => (0u32..0x400, proptest::collection::vec(any::<u32>(), 1..4), 0u32..3).prop_map(|(offset, v, space)| {
            let op = [0x76u32, 0x69, 0x79][space as usize];
            let mut w = vec![0xC000_0000 | ((v.len() as u32) << 16) | (op << 8), offset];
            w.extend(v);
            w
        }),
        1 => (any::<u32>(), 0u32..3).prop_map(|(x, n)| vec![0xC000_1000 | (8 << 16) | ((n & 1) << 8), x]),
        1 => any::<u32>().prop_map(|w| vec![w]),
        // Opcodes with a key=value form, bodies of their lengths with
        // random bits (the source uses the form only where it is exact).
        3 => (0usize..12, any::<bool>(), target(), proptest::collection::vec(prop_oneof![Just(0u32), 0u32..16, any::<u32>()], 8))
            .prop_map(|(i, compute, (lo, hi), mut body)| {
                const FORMS: [(u32, usize); 12] = [
                    (0x3C, 6), (0x93, 8), (0x37, 5), (0x49, 7), (0x46, 1), (0x3F, 3),
                    (0x33, 3), (0x40, 5), (0x50, 6), (0x58, 7), (0x15, 4), (0x2D, 2),
                ];
                let (op, len) = FORMS[i];
                body.truncate(len);
                if len > 2 {
                    body[1] = lo;
                    body[2] = hi;
                }
                let mut w = vec![0xC000_0000 | ((len as u32 - 1) << 16) | (op << 8) | (u32::from(compute) << 1)];
                w.extend(body);
                w
            }),
    ]
}

fn stream() -> impl Strategy<Value = Vec<u32>> {
    proptest::collection::vec(packet(), 0..16).prop_map(|ps| ps.concat())
}

fn region() -> impl Strategy<Value = Step> {
    (any::<u8>(), 0u8..8, prop::bool::weighted(0.2), stream(), proptest::collection::vec(any::<u8>(), 0..4))
        .prop_map(|(slot, shift, zero, words, tail)| Step::Region { slot, shift, zero, words, tail })
}

fn submission() -> impl Strategy<Value = Step> {
    (0u32..57, any::<u8>(), 0u8..20, 0u8..60).prop_map(|(queue, slot, offset_dw, size_dw)| Step::Submit {
        queue,
        slot,
        offset_dw,
        size_dw,
    })
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => region(),
        2 => (any::<u8>(), 0u8..40, proptest::collection::vec(any::<u8>(), 0..24))
            .prop_map(|(slot, offset_dw, bytes)| Step::Write { slot, offset_dw, bytes }),
        3 => submission(),
        1 => (any::<u8>(), any::<bool>()).prop_map(|(slot, relocated)| Step::Shader { slot, relocated }),
        1 => "(?s).{0,16}".prop_map(Step::Note),
        1 => ("[a-z][ -~]{3}", proptest::collection::vec(any::<u8>(), 0..9)).prop_map(|(tag, payload)| {
            let mut t = [b'a'; 4];
            t.copy_from_slice(&tag.as_bytes()[..4]);
            Step::Ancillary { tag: t, payload }
        }),
    ]
}

fn build(info: &[(String, String)], steps: &[Step]) -> Trace {
    let mut w = TraceWriter::new();
    for (k, v) in info {
        let _ = w.info(k, v);
    }
    let mut shifts = [0u64; SLOTS as usize];
    let mut lens = [0u64; SLOTS as usize];
    for step in steps {
        // A step the format does not allow (overlap, outside memory) is
        // simply not written.
        let _ = match step {
            Step::Region { slot, shift, zero, words, tail } => {
                let base = slot_base(*slot) + u64::from(*shift) * 4;
                let len = words.len() as u64 * 4 + tail.len() as u64;
                let written = if *zero {
                    w.zero(base, len)
                } else {
                    let mut bytes: Vec<u8> = words.iter().flat_map(|d| d.to_le_bytes()).collect();
                    bytes.extend(tail);
                    w.mem(base, &bytes)
                };
                if written.is_ok() {
                    let i = usize::from(*slot) % SLOTS as usize;
                    shifts[i] = u64::from(*shift) * 4;
                    lens[i] = len;
                }
                written
            }
            Step::Write { slot, offset_dw, bytes } => {
                let base = slot_base(*slot) + shifts[usize::from(*slot) % SLOTS as usize];
                w.host_write(base + u64::from(*offset_dw) * 4, bytes)
            }
            Step::Submit { queue, slot, offset_dw, size_dw } => {
                // Mostly inside the slot's last region, sometimes not.
                let i = usize::from(*slot) % SLOTS as usize;
                let len_dw = (lens[i] / 4).max(1);
                let offset = u64::from(*offset_dw) % len_dw;
                let size = u64::from(*size_dw).min(len_dw - offset + u64::from(*size_dw % 4 == 0));
                w.submit(*queue, slot_base(*slot) + shifts[i] + offset * 4, size as u32)
            }
            Step::Shader { slot, relocated } => {
                let base = slot_base(*slot);
                w.shader(base + shifts[usize::from(*slot) % SLOTS as usize], base + 0x100, *relocated)
            }
            Step::Note(text) => w.note(text),
            Step::Ancillary { tag, payload } => w.ancillary(Tag(*tag), payload),
        };
    }
    w.finish_trace().unwrap_or_else(|e| panic!("the writer made a bad trace: {e}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_traces_round_trip(
        info in proptest::collection::vec(("[^=\n]{1,8}", "[^\n]{0,10}"), 0..3),
        regions in proptest::collection::vec(region(), 1..4),
        steps in proptest::collection::vec(step(), 0..14),
        submissions in proptest::collection::vec(submission(), 1..4),
    ) {
        let steps: Vec<Step> = regions.into_iter().chain(steps).chain(submissions).collect();
        let trace = build(&info, &steps);
        round_trip(&trace, "random trace");
    }
}
