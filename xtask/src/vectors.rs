//! Candidate test vectors for `tests/vectors/packets.txt` (gfx10.3) and
//! `tests/vectors/packets-gfx7.txt` (gfx7): the first packet of each opcode
//! (and of each length) in the radv traces of the family, hand-made packets
//! for the forms the traces lack, and a canonical synthetic packet for
//! every opcode with a body type neither has, each with the disassembly
//! line the vector file holds (`cargo run -p xtask -- vectors [gfx7]`;
//! review before committing them). The line format is [`line_of`], which
//! `tests/packet_bodies.rs` checks the committed vectors with.

use std::path::{Path, PathBuf};

use pm4core::disasm::{DisasmOptions, Disassembler, PacketRecord};
use pm4core::packet::body::AnyBody;
use pm4core::packet::{Header, PacketType};
use pm4core::trace::Trace;
use pm4core::GpuFamily;

/// The traces of `dir` (relative to the workspace root).
fn traces_in(root: &Path, dir: &str) -> Result<Vec<PathBuf>, String> {
    let mut traces: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
        .map_err(|e| format!("{dir}/: {e}"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pm4t"))
        .collect();
    traces.sort();
    Ok(traces)
}

/// The disassembly line of a packet record: its name, header flags and
/// every field as `NAME=value` (register writes by register name): the
/// right-hand side of a vector.
pub fn line_of(p: &PacketRecord) -> String {
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

/// The candidate vectors of `family`, one line each (`dwords -> line`),
/// from the traces under `root`.
pub fn candidates(root: &Path, family: GpuFamily) -> Result<Vec<String>, String> {
    let (dir, extra) = match family {
        GpuFamily::Gfx7 => ("traces/gfx7", GFX7_EXTRA),
        _ => ("traces", GFX103_EXTRA),
    };
    let traces = traces_in(root, dir)?;
    let mut seen = std::collections::BTreeSet::new();
    let mut lines = Vec::new();
    let options = DisasmOptions { family: Some(family), ..DisasmOptions::default() };
    let mut emit = |dwords: &[u32]| -> Result<(), String> {
        let bytes = bytes_of(dwords);
        let dis = Disassembler::for_raw(&bytes, 0x1000, options.clone()).map_err(|e| e.to_string())?;
        let listing = dis.listing();
        let words: Vec<String> = dwords.iter().map(|d| format!("{d:08x}")).collect();
        if let Some(first) = listing.packets.first() {
            lines.push(format!("{} -> {}", words.join(" "), line_of(first)));
        }
        Ok(())
    };
    for path in traces {
        let trace = Trace::read_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        for p in Disassembler::for_trace(&trace, DisasmOptions::default()).listing().packets {
            let Some(&first) = p.dwords.first() else { continue };
            let header = Header(first);
            if p.problem.is_some() || p.dwords.len() > 12 {
                continue;
            }
            let key = (header.packet_type() as u8, header.opcode().0, p.dwords.len());
            if seen.insert(key) {
                emit(&p.dwords)?;
            }
        }
    }
    for dwords in extra {
        let Some(&first) = dwords.first() else { continue };
        let header = Header(first);
        if header.length_dw() != Some(dwords.len() as u32) {
            continue;
        }
        seen.insert((header.packet_type() as u8, header.opcode().0, dwords.len()));
        emit(dwords)?;
    }
    for op in AnyBody::opcodes_for(family) {
        if seen.iter().any(|&(t, o, _)| t == PacketType::Type3 as u8 && o == op.0) {
            continue;
        }
        for len in 1..16usize {
            let pattern: Vec<u32> = (0..len as u32).map(|i| 0x100 * (i + 1) + i).collect();
            if let Ok(Some(body)) = AnyBody::decode_for(family, op, &pattern) {
                emit(&body.encode_for(family))?;
                break;
            }
        }
    }
    Ok(lines)
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
