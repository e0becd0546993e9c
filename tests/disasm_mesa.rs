//! The disassembler's static walk against Mesa's own decode of the same
//! submissions: every trace in `traces/` (navi21, gfx10.3) and
//! `traces/gfx7/` (Bonaire, gfx7) with a `*.decode.txt` next to it must
//! give the same packets, opcode by opcode, and the same sequence of header
//! dwords; the Bonaire ones also the same register names, bitfields and
//! packet fields, packet by packet.

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

/// The `(trace, decode)` pairs of the corpus: the navi21 captures in
/// `traces/` and the Bonaire (gfx7) ones in `traces/gfx7/`.
fn corpus() -> Vec<(PathBuf, PathBuf)> {
    let Some(dir) = trace_dir() else { return Vec::new() };
    let mut pairs = pairs_in(&dir);
    let gfx7 = dir.join("gfx7");
    assert!(gfx7.is_dir(), "{} is missing", gfx7.display());
    pairs.extend(pairs_in(&gfx7));
    pairs
}

/// The `(trace, decode)` pairs of one directory, sorted.
fn pairs_in(dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    let mut pairs: Vec<(PathBuf, PathBuf)> = std::fs::read_dir(dir)
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

// ---------------------------------------------------------------------------
// Field by field: register names and bitfields, packet fields by name
// ---------------------------------------------------------------------------

/// A value as either decoder printed it: a number, a name (an enum value,
/// a selector's name) or anything else (lists, floats without their bits).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    Num(u64),
    Name(String),
    Other(String),
}

impl Value {
    /// Mesa's spellings: `0x1f`, `5`, `16384 (0x4000)`, `64.0f (0x42800000)`,
    /// `VGT_INDEX_16`.
    fn mesa(text: &str) -> Value {
        let t = text.trim();
        if let Some(open) = t.rfind("(0x") {
            if let Some(hex) = t.get(open + 3..t.len().saturating_sub(1)).filter(|_| t.ends_with(')')) {
                if let Ok(v) = u64::from_str_radix(hex, 16) {
                    return Value::Num(v);
                }
            }
        }
        Self::ours(t)
    }

    /// Our spellings: `0x1f`, `5`, `5(memory)` (a selector: its number),
    /// `addr_l2`, `ME`.
    fn ours(text: &str) -> Value {
        let t = text.trim();
        let t = t.split_once('(').map_or(t, |(n, rest)| if rest.ends_with(')') { n } else { t });
        if let Some(hex) = t.strip_prefix("0x") {
            if let Ok(v) = u64::from_str_radix(hex, 16) {
                return Value::Num(v);
            }
        }
        if let Ok(v) = t.parse::<u64>() {
            return Value::Num(v);
        }
        if !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Value::Name(t.to_owned());
        }
        Value::Other(t.to_owned())
    }
}

/// One `NAME <- ...` line of Mesa's decode with its `FIELD = VALUE` lines,
/// or one field of ours with its bitfields.
#[derive(Debug, Clone)]
struct Entry {
    name: String,
    value: Option<Value>,
    fields: Vec<(String, Value)>,
}

/// `FIELD = VALUE` (a bitfield line).
fn bitfield(text: &str) -> Option<(String, Value)> {
    let (name, value) = text.trim().split_once(" = ")?;
    let ok = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    ok.then(|| (name.to_owned(), Value::mesa(value)))
}

/// Mesa's name for a register it has no name for is its byte offset
/// (`0x28c78`); ours is `REG_0xa31e`.
fn mesa_entry_name(name: &str) -> String {
    match name.strip_prefix("0x").and_then(|h| u32::from_str_radix(h, 16).ok()) {
        Some(byte) => format!("REG_{:#06x}", byte / 4),
        None => name.to_owned(),
    }
}

/// The entries of every packet of a Mesa decode, in packet order (the same
/// packets [`parse_mesa`] finds).
fn mesa_entries(text: &str) -> Vec<Vec<Entry>> {
    let mut packets: Vec<Vec<Entry>> = Vec::new();
    let mut body_left: u32 = 0;
    for line in text.lines() {
        let hex = hex_line(line);
        let rest = match hex {
            Some((dword, rest)) => {
                if let Some(_name) = packet_name(rest) {
                    body_left = Header(dword).length_dw().unwrap_or(1).saturating_sub(1);
                    packets.push(Vec::new());
                    continue;
                }
                if body_left == 0 {
                    if dword == NOP_PAD && rest.trim().is_empty() {
                        packets.push(Vec::new());
                    }
                    continue;
                }
                body_left -= 1;
                rest
            }
            None => line,
        };
        let Some(current) = packets.last_mut() else { continue };
        if let Some((name, value)) = rest.trim().split_once(" <- ") {
            let name = mesa_entry_name(name.trim());
            let entry = match bitfield(value) {
                Some(field) => Entry { name, value: None, fields: vec![field] },
                None => Entry { name, value: Some(Value::mesa(value)), fields: Vec::new() },
            };
            current.push(entry);
        } else if let Some(field) = bitfield(rest) {
            if let Some(last) = current.last_mut() {
                last.fields.push(field);
            }
        }
    }
    packets
}

/// Our fields of one packet as entries: the value, and the bitfields the
/// register database gave it.
fn our_entries(fields: &[pm4core::disasm::Field]) -> Vec<Entry> {
    fields
        .iter()
        .map(|f| {
            let bits = f.bits.as_deref().unwrap_or("");
            let bits = bits.split(" (other bits").next().unwrap_or("");
            let fields = bits.split(", ").filter_map(bitfield).collect();
            Entry { name: f.name.clone(), value: Some(Value::ours(&f.value)), fields }
        })
        .collect()
}

/// What the comparison of one trace covered.
#[derive(Debug, Default)]
struct Compared {
    registers: u64,
    bitfields: u64,
    packet_fields: u64,
    /// The packet fields compared, as `NAME` or `NAME.BITFIELD`.
    names: std::collections::BTreeSet<String>,
}

/// Compares one packet: register writes in order (name, value or
/// bitfields), then every field Mesa prints that we list under the same
/// name (its value, its bitfields, and each of its bitfields that we list
/// as a field of its own, when both are numbers or both names).
fn compare_packet(mesa: &[Entry], ours: &[Entry], registers: bool, c: &mut Compared) -> Vec<String> {
    let mut problems = Vec::new();
    let same_fields = |m: &Entry, o: &Entry, problems: &mut Vec<String>| {
        if m.fields != o.fields {
            problems.push(format!("{}: Mesa {:?}, ours {:?}", m.name, m.fields, o.fields));
        }
    };
    if registers {
        let ours: Vec<&Entry> = ours.iter().filter(|e| e.name != "INDEX").collect();
        if mesa.len() != ours.len() {
            problems.push(format!("{} registers in Mesa's decode, {} in ours", mesa.len(), ours.len()));
        }
        for (m, o) in mesa.iter().zip(&ours) {
            c.registers += 1;
            if m.name != o.name {
                problems.push(format!("register {} in Mesa's decode, {} in ours", m.name, o.name));
                continue;
            }
            if m.fields.is_empty() {
                if m.value != o.value && !matches!(m.value, Some(Value::Other(_))) {
                    problems.push(format!("{}: Mesa {:?}, ours {:?}", m.name, m.value, o.value));
                }
            } else {
                c.bitfields += m.fields.len() as u64;
                same_fields(m, o, &mut problems);
            }
        }
        return problems;
    }
    let comparable =
        |a: &Value, b: &Value| matches!((a, b), (Value::Num(_), Value::Num(_)) | (Value::Name(_), Value::Name(_)));
    for m in mesa {
        if let Some(o) = ours.iter().find(|o| o.name == m.name) {
            match (&m.value, &o.value) {
                (Some(mv), Some(ov)) if m.fields.is_empty() && comparable(mv, ov) => {
                    c.packet_fields += 1;
                    c.names.insert(m.name.clone());
                    if mv != ov {
                        problems.push(format!("{}: Mesa {mv:?}, ours {ov:?}", m.name));
                    }
                }
                _ if !m.fields.is_empty() && !o.fields.is_empty() => {
                    c.bitfields += m.fields.len() as u64;
                    c.names.insert(m.name.clone());
                    same_fields(m, o, &mut problems);
                }
                _ => {}
            }
        }
        // A bitfield Mesa prints that we list as a field of its own: the
        // numbers must agree (names are spelled per decoder: `addr_l2`).
        for (name, mv) in &m.fields {
            let Some(ov) = ours.iter().find(|o| &o.name == name).and_then(|o| o.value.as_ref()) else { continue };
            if matches!((mv, ov), (Value::Num(_), Value::Num(_))) {
                c.packet_fields += 1;
                c.names.insert(format!("{}.{name}", m.name));
                if mv != ov {
                    problems.push(format!("{}.{name}: Mesa {mv:?}, ours {ov:?}", m.name));
                }
            }
        }
    }
    problems
}

/// For every Bonaire capture (`INFO gpu=gfx7`, so the gfx7 register map
/// and packet forms): every register write of every packet names the
/// register Mesa names and decodes its bitfields as Mesa does, and every
/// packet field Mesa prints that the disassembler lists under the same
/// name has Mesa's value (DMA_DATA's COMMAND and its BYTE_COUNT, the
/// CP_COHER_* dwords of SURFACE_SYNC and ACQUIRE_MEM, EVENT_WRITE_EOP's and
/// RELEASE_MEM's cache actions, DST_SEL, INT_SEL and DATA_SEL, ...).
///
/// The navi21 decodes are compared packet by packet only (the test
/// above): Mesa printed them with its gfx10 (navi10) register tables,
/// which lack registers and bitfields of `gfx103.json`
/// (SX_PS_DOWNCONVERT_CONTROL, PA_CL_VRS_CNTL, ...).
#[test]
fn fields_match_mesa_decode() {
    let corpus = corpus();
    let gfx7 = corpus.iter().filter(|(t, _)| t.parent().is_some_and(|d| d.ends_with("gfx7"))).count();
    assert!(gfx7 >= 20, "{gfx7} Bonaire traces with Mesa decodes in traces/gfx7/");
    let mut failures = Vec::new();
    let mut covered = std::collections::BTreeSet::new();
    for (trace_path, decode_path) in corpus.iter().filter(|(t, _)| t.parent().is_some_and(|d| d.ends_with("gfx7"))) {
        let name = trace_path
            .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")).join("traces"))
            .map_or_else(|_| trace_path.display().to_string(), |p| p.display().to_string());
        let trace = Trace::read_file(trace_path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let text = std::fs::read_to_string(decode_path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mesa = mesa_entries(&text);
        let listing = Disassembler::for_trace(&trace, DisasmOptions::default()).listing();
        assert_eq!(mesa.len(), listing.packets.len(), "{name}: packet counts (see walk_matches_mesa_decode)");
        let mut compared = Compared::default();
        let mut disagreements = 0usize;
        for (i, (m, p)) in mesa.iter().zip(&listing.packets).enumerate() {
            let registers = p.fields.iter().any(|f| f.register.is_some());
            compared.names.clear();
            let problems = compare_packet(m, &our_entries(&p.fields), registers, &mut compared);
            covered.extend(compared.names.iter().map(|n| format!("{} {n}", p.opcode)));
            disagreements += problems.len();
            for problem in problems.into_iter().take(3) {
                if failures.len() < 60 {
                    failures.push(format!("{name}: packet {i} ({} at {:#x}): {problem}", p.opcode, p.address));
                }
            }
        }
        eprintln!(
            "{name} ({}): {} packets; {} register writes, {} bitfields, {} packet fields compared; {} disagreements",
            listing.gpu,
            listing.packets.len(),
            compared.registers,
            compared.bitfields,
            compared.packet_fields,
            disagreements
        );
        assert!(compared.registers > 20, "{name}: only {} register writes compared", compared.registers);
    }
    assert!(failures.is_empty(), "disagreements with Mesa's fields:\n{}", failures.join("\n"));
    // The gfx7 forms were among what was compared.
    for form in [
        "DMA_DATA COMMAND",
        "DMA_DATA COMMAND.BYTE_COUNT",
        "SURFACE_SYNC CP_COHER_CNTL",
        "SURFACE_SYNC CP_COHER_SIZE",
        "ACQUIRE_MEM CP_COHER_CNTL",
        "ACQUIRE_MEM CP_COHER_SIZE_HI",
        "ACQUIRE_MEM CP_COHER_BASE_HI",
        "EVENT_WRITE_EOP TC_ACTION_ENA",
        "EVENT_WRITE_EOP DST_SEL",
        "EVENT_WRITE_EOP INT_SEL",
        "EVENT_WRITE_EOP DATA_SEL",
        "RELEASE_MEM TC_MD_ACTION_ENA",
        "RELEASE_MEM INT_SEL",
        "RELEASE_MEM DATA_SEL",
        "INDIRECT_BUFFER IB_CONTROL",
        "WRITE_DATA CONTROL",
    ] {
        assert!(covered.contains(form), "{form} was never compared; compared: {covered:?}");
    }
}
