//! The disassembler's static walk against Mesa's own decode of the same
//! submissions: every trace in `traces/` with a
//! `*.decode.txt` next to it must give the same packets, opcode by opcode,
//! and the same sequence of header dwords.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pm4core::disasm::{DisasmOptions, Disassembler, WalkEvent};
use pm4core::packet::{Header, Opcode, NOP_PAD};
use pm4core::trace::Trace;

/// The repository's radv traces (part of the repository: missing is a failure).
fn trace_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    assert!(dir.is_dir(), "{} is missing", dir.display());
    Some(dir)
}

/// The `(trace, decode)` pairs of the corpus.
fn corpus() -> Vec<(PathBuf, PathBuf)> {
    let Some(dir) = trace_dir() else { return Vec::new() };
    let mut pairs: Vec<(PathBuf, PathBuf)> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "pm4t"))
                .filter_map(|p| {
                    let decode = p.with_extension("decode.txt");
                    decode.is_file().then_some((p, decode))
                })
                .collect()
        })
        .unwrap_or_default();
    pairs.sort();
    pairs
}

/// One packet as Mesa printed it: its header dword and opcode name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MesaPacket {
    header: u32,
    name: String,
    line: usize,
}

/// Mesa's names mapped onto ours (`INDIRECT_BUFFER_CIK` is INDIRECT_BUFFER).
fn normalise(name: &str) -> String {
    match Opcode::from_name(name) {
        Some(op) => op.to_string(),
        None => name.to_owned(),
    }
}

/// A line that starts with eight lowercase hex digits: the dword and the rest.
fn hex_line(line: &str) -> Option<(u32, &str)> {
    let t = line.trim_start();
    let hex = t.get(..8)?;
    if !hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    let rest = t.get(8..)?;
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    Some((u32::from_str_radix(hex, 16).ok()?, rest))
}

/// `" NAME:"` or `" NAME (predicate):"` after a header dword.
fn packet_name(rest: &str) -> Option<&str> {
    let rest = rest.strip_prefix(' ')?.trim_end();
    let rest = rest.strip_suffix(':')?;
    let rest = rest.strip_suffix("(predicate)").map_or(rest, str::trim_end);
    let ok = !rest.is_empty()
        && rest.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    ok.then_some(rest)
}

/// Every packet of a Mesa decode, in order. A packet line is a header dword
/// followed by one space, the opcode name and `:` (nested IBs are indented);
/// the body dwords follow on their own lines. A bare `ffff1000` line outside
/// a body is a one-dword NOP pad. Also checks that each packet is followed
/// by exactly its body dwords.
fn parse_mesa(text: &str) -> (Vec<MesaPacket>, Vec<String>) {
    let mut packets = Vec::new();
    let mut problems = Vec::new();
    let mut body_left: u32 = 0;
    let mut current: Option<usize> = None;
    for (n, line) in text.lines().enumerate() {
        let Some((dword, rest)) = hex_line(line) else { continue };
        if let Some(name) = packet_name(rest) {
            if body_left != 0 {
                problems.push(format!(
                    "line {}: a packet starts with {body_left} body dwords of line {:?} missing",
                    n + 1,
                    current
                ));
            }
            body_left = Header(dword).length_dw().unwrap_or(1).saturating_sub(1);
            current = Some(n + 1);
            packets.push(MesaPacket { header: dword, name: normalise(name), line: n + 1 });
        } else if body_left > 0 {
            body_left -= 1;
        } else if dword == NOP_PAD && rest.trim().is_empty() {
            packets.push(MesaPacket { header: dword, name: "NOP".to_owned(), line: n + 1 });
        } else {
            problems.push(format!("line {}: dword {dword:08x} outside any packet", n + 1));
        }
    }
    (packets, problems)
}

#[test]
fn mesa_line_patterns() {
    assert_eq!(packet_name(" SET_SH_REG:"), Some("SET_SH_REG"));
    assert_eq!(packet_name(" DRAW_INDEX_AUTO (predicate):"), Some("DRAW_INDEX_AUTO"));
    assert_eq!(packet_name("         IB_BASE_LO <- 0x00014000"), None);
    assert_eq!(packet_name(" "), None);
    assert_eq!(hex_line("    c0023f00 INDIRECT_BUFFER_CIK:"), Some((0xc002_3f00, " INDIRECT_BUFFER_CIK:")));
    assert_eq!(normalise("INDIRECT_BUFFER_CIK"), "INDIRECT_BUFFER");
    let (packets, problems) =
        parse_mesa("c0001000 NOP:\n00000000 \nffff1000\nc0017600 SET_SH_REG:\nffff1000 \n00000001 X <- 1\n");
    assert!(problems.is_empty(), "{problems:?}");
    let names: Vec<&str> = packets.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["NOP", "NOP", "SET_SH_REG"]);
}

#[test]
fn walk_matches_mesa_decode() {
    let corpus = corpus();
    assert!(corpus.len() >= 10, "{} traces with Mesa decodes in traces/", corpus.len());
    let mut failures = Vec::new();
    for (trace_path, decode_path) in &corpus {
        let name = trace_path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let trace = Trace::read_file(trace_path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let text = std::fs::read_to_string(decode_path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (mesa, problems) = parse_mesa(&text);
        assert!(problems.is_empty(), "{name}: Mesa decode not understood: {problems:?}");

        let dis = Disassembler::for_trace(&trace, DisasmOptions::default());
        let mut ours: Vec<u32> = Vec::new();
        let mut diagnostics = Vec::new();
        let summary = dis.walk(&mut |event| match event {
            WalkEvent::Packet(p) => ours.push(p.dwords.first().copied().unwrap_or(0)),
            WalkEvent::Diagnostic(d) => diagnostics.push(d.message.to_string()),
            WalkEvent::Submission(_) => {}
        });
        assert!(summary.complete, "{name}: walk stopped early");

        let mut mesa_counts: BTreeMap<String, u64> = BTreeMap::new();
        for p in &mesa {
            *mesa_counts.entry(p.name.clone()).or_default() += 1;
        }
        let mut names: Vec<&String> = mesa_counts.keys().chain(summary.by_opcode.keys()).collect();
        names.sort();
        names.dedup();
        for op in names {
            let (m, o) = (mesa_counts.get(op).copied().unwrap_or(0), summary.by_opcode.get(op).copied().unwrap_or(0));
            if m != o {
                failures.push(format!("{name}: {op}: Mesa {m}, disassembler {o}"));
            }
        }
        let mesa_headers: Vec<u32> = mesa.iter().map(|p| p.header).collect();
        if let Some(i) = (0..mesa_headers.len().max(ours.len())).find(|&i| mesa_headers.get(i) != ours.get(i)) {
            let line = mesa.get(i).map_or(0, |p| p.line);
            failures.push(format!(
                "{name}: header sequences differ at packet {i} (decode line {line}): Mesa {:08x?}, disassembler {:08x?}",
                mesa_headers.get(i),
                ours.get(i)
            ));
        }
        eprintln!(
            "{name}: {} packets, {} opcodes, {} diagnostics{}",
            ours.len(),
            summary.by_opcode.len(),
            diagnostics.len(),
            if diagnostics.is_empty() { String::new() } else { format!(": {diagnostics:?}") }
        );
    }
    assert!(failures.is_empty(), "disagreements with Mesa:\n{}", failures.join("\n"));
}
