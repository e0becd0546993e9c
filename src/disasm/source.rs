//! Disassembly as assembler source: the round trip.
//!
//! [`Disassembler::write_source`] writes a source file that
//! [`crate::asm::assemble`] turns into a trace with the same `INFO`
//! entries, the same memory regions with the same bytes, and the same host
//! writes, submissions, shaders, notes and ancillary chunks, in the same
//! order. The layout follows memory, not the walk: each `MEM ` region
//! becomes a `.mem ADDR` ... `.end` block, each host write a `.write`
//! block, and every other chunk its directive.
//!
//! Inside a block, each dword where the static walk (over every
//! submission) found a packet is written as that packet's statement, chosen
//! so that it assembles to exactly the same dwords: the opcodes the
//! assembler has a key=value form for are written in it, their keys and
//! values taken from the typed body's `fields()` (`WAIT_REG_MEM function=eq
//! mem=memory addr=0x2000 ...`); other opcodes by name with their raw body
//! (`SET_SH_REG` with the register by name when the first dword is a plain
//! offset) and the decoded fields as a `;` comment; `NOP` for the
//! one-dword pads (runs of them as `.fill`), `TYPE0`/`TYPE2` for those
//! packet types. A field statement is only written when the assembler turns
//! it back into exactly the packet's dwords (a body with bits no key sets,
//! such as a cache policy, keeps the raw form). Everything else (data, packets whose header has
//! reserved bits set, packets that run past the block, type-1 dwords) is
//! written as `.dw` lines, runs of one value as `.fill`, and trailing bytes
//! as `.db`. A raw input becomes one `.mem` block and one `.submit gfx`.

use std::collections::HashSet;
use std::io;

use super::fields::{decode_fields, register_base};
use super::{queue_name, Disassembler};
use crate::asm::lex::quote;
use crate::packet::body::AnyBody;
use crate::packet::field::FieldValue;
use crate::packet::{split_packet, Header, Opcode, Packet, PacketLocation, PacketType, NOP_PAD, TYPE2_FILLER};
use crate::regs::db::{self, GpuFamily};
use crate::trace::TraceEvent;

/// Dwords per `.dw` line.
const DW_PER_LINE: usize = 8;

/// Shortest run of one value written as `.fill`.
const FILL_RUN: usize = 8;

/// Shortest run of pads written as one `.fill`.
const PAD_RUN: usize = 4;

/// True when `text` can follow `.info key=` or `.note` verbatim.
fn plain(text: &str) -> bool {
    !text.starts_with('"') && text.trim() == text && !text.chars().any(|c| c.is_control())
}

pub(super) fn write_source(dis: &Disassembler<'_>, out: &mut dyn io::Write) -> io::Result<()> {
    let family = dis.family();
    let starts = dis.packet_addresses();
    writeln!(out, "; PM4 disassembly as assembler source: `pm4 asm FILE -o TRACE` turns it back into the trace")?;
    writeln!(out, ".gpu {family}")?;
    if let Some(trace) = dis.trace() {
        for (key, value) in trace.info() {
            if plain(key) && !key.contains('=') && plain(value) && !key.is_empty() {
                writeln!(out, ".info {key}={value}")?;
            } else {
                writeln!(out, ".info {} {}", quote(key.as_bytes()), quote(value.as_bytes()))?;
            }
        }
        for event in trace.events() {
            match event {
                TraceEvent::MemRegion { address, data, .. } => {
                    writeln!(out, ".mem {address:#x}")?;
                    write_block(out, family, *address, trace.bytes_of(data), &starts)?;
                    writeln!(out, ".end")?;
                }
                TraceEvent::ZeroRegion { address, len, .. } => writeln!(out, ".zero {address:#x}, {len:#x}")?,
                TraceEvent::HostWrite { address, data, .. } => {
                    writeln!(out, ".write {address:#x}")?;
                    write_block(out, family, *address, trace.bytes_of(data), &starts)?;
                    writeln!(out, ".end")?;
                }
                TraceEvent::Submit { queue, address, size_dw, .. } => {
                    writeln!(out, ".submit {} {address:#x} {size_dw}", queue_name(*queue))?;
                }
                TraceEvent::Shader { header_address, code_address, relocated, .. } => {
                    let flag = if *relocated { " relocated" } else { "" };
                    writeln!(out, ".shader {header_address:#x} {code_address:#x}{flag}")?;
                }
                TraceEvent::Note { text, .. } => {
                    if plain(text) {
                        writeln!(out, ".note {text}")?;
                    } else {
                        writeln!(out, ".note {}", quote(text.as_bytes()))?;
                    }
                }
                TraceEvent::Ancillary { chunk, tag } => {
                    let payload = usize::try_from(*chunk)
                        .ok()
                        .and_then(|i| trace.chunks().get(i))
                        .and_then(|c| {
                            let start = usize::try_from(c.offset).ok()?.checked_add(8)?;
                            trace.bytes().get(start..start.checked_add(c.payload_len as usize)?)
                        })
                        .unwrap_or(&[]);
                    writeln!(out, ".ancillary {}", quote(tag.as_bytes()))?;
                    write_bytes(out, payload)?;
                    writeln!(out, ".end")?;
                }
            }
        }
    } else if let Some((bytes, base)) = dis.raw_input() {
        writeln!(out, ".mem {base:#x}")?;
        write_block(out, family, base, bytes, &starts)?;
        writeln!(out, ".end")?;
        writeln!(out, ".submit gfx {base:#x} {}", bytes.len() / 4)?;
    }
    Ok(())
}

/// Writes a block's bytes: packets where the walk found them, data elsewhere.
fn write_block(
    out: &mut dyn io::Write,
    family: GpuFamily,
    address: u64,
    bytes: &[u8],
    starts: &HashSet<u64>,
) -> io::Result<()> {
    let words: Vec<u32> = bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let mut raw_start = 0usize;
    let mut i = 0usize;
    while i < words.len() {
        let at = address.wrapping_add(i as u64 * 4);
        if starts.contains(&at) {
            let pads = words.get(i..).unwrap_or(&[]).iter().take_while(|&&w| w == NOP_PAD).count();
            if pads >= PAD_RUN {
                write_raw(out, address, &words, raw_start, i)?;
                writeln!(out, "    .fill {pads}, {NOP_PAD:#x} ; {at:#x}: {pads} NOP pads")?;
                i += pads;
                raw_start = i;
                continue;
            }
            if let Some((text, len)) = packet_statement(family, words.get(i..).unwrap_or(&[]), at) {
                write_raw(out, address, &words, raw_start, i)?;
                writeln!(out, "    {text}")?;
                i += len;
                raw_start = i;
                continue;
            }
        }
        i += 1;
    }
    write_raw(out, address, &words, raw_start, words.len())?;
    let tail = bytes.get(words.len() * 4..).unwrap_or(&[]);
    if !tail.is_empty() {
        write_bytes(out, tail)?;
    }
    Ok(())
}

/// `.dw` lines for `words[from..to]`, runs of one value as `.fill`.
fn write_raw(out: &mut dyn io::Write, address: u64, words: &[u32], from: usize, to: usize) -> io::Result<()> {
    let slice = words.get(from..to).unwrap_or(&[]);
    let mut i = 0;
    let mut line: Vec<u32> = Vec::new();
    let mut line_start = 0;
    let flush = |out: &mut dyn io::Write, line: &mut Vec<u32>, start: usize| -> io::Result<()> {
        if line.is_empty() {
            return Ok(());
        }
        let at = address.wrapping_add((from + start) as u64 * 4);
        let values: Vec<String> = line.iter().map(|w| format!("{w:#010x}")).collect();
        writeln!(out, "    .dw {} ; {at:#x}", values.join(", "))?;
        line.clear();
        Ok(())
    };
    while let Some(&w) = slice.get(i) {
        let run = slice.get(i..).unwrap_or(&[]).iter().take_while(|&&v| v == w).count();
        if run >= FILL_RUN {
            flush(out, &mut line, line_start)?;
            let at = address.wrapping_add((from + i) as u64 * 4);
            writeln!(out, "    .fill {run}, {w:#x} ; {at:#x}")?;
            i += run;
            continue;
        }
        if line.is_empty() {
            line_start = i;
        }
        line.push(w);
        if line.len() == DW_PER_LINE {
            flush(out, &mut line, line_start)?;
        }
        i += 1;
    }
    flush(out, &mut line, line_start)
}

/// `.db` lines.
fn write_bytes(out: &mut dyn io::Write, bytes: &[u8]) -> io::Result<()> {
    for chunk in bytes.chunks(16) {
        let values: Vec<String> = chunk.iter().map(|b| format!("{b:#04x}")).collect();
        writeln!(out, "    .db {}", values.join(", "))?;
    }
    Ok(())
}

/// Header flag words of a type-3 header.
fn flag_words(header: u32) -> String {
    let mut s = String::new();
    for (bit, word) in [(1, " predicate"), (2, " compute"), (4, " cam")] {
        if header & bit != 0 {
            s.push_str(word);
        }
    }
    s
}

fn hex_list(words: &[u32]) -> String {
    words.iter().map(|w| format!("{w:#x}")).collect::<Vec<_>>().join(", ")
}

/// The register name that assembles back to `index`, if the database has one.
fn register_name(family: GpuFamily, index: u32) -> Option<&'static str> {
    let info = db::register(family, index)?;
    db::register_by_name(family, info.name).filter(|r| r.offset == index).map(|r| r.name)
}

/// The statement for the packet at the start of `words`, and its length;
/// `None` when no statement reproduces its dwords exactly.
fn packet_statement(family: GpuFamily, words: &[u32], address: u64) -> Option<(String, usize)> {
    let (header, body, len) = split_packet(words).ok()?;
    let len = len as usize;
    let h = header.0;
    let text = match header.packet_type() {
        PacketType::Type1 => return None,
        PacketType::Type2 if h == TYPE2_FILLER => "TYPE2".to_owned(),
        PacketType::Type2 => format!("TYPE2 {:#x}", h & 0x3FFF_FFFF),
        PacketType::Type0 => {
            let base = header.type0_base();
            let reg = register_name(family, base).map_or_else(|| format!("{base:#x}"), str::to_owned);
            format!("TYPE0 {reg}, {}", hex_list(body))
        }
        PacketType::Type3 => {
            if (h >> 3) & 0x1F != 0 {
                return None;
            }
            let op = header.opcode();
            let name = op.name().map_or_else(|| format!("PKT3 {:#04x}", op.0), str::to_owned);
            let flags = flag_words(h);
            if let Some(text) = field_statement(family, op, &format!("{name}{flags}"), body, words.get(..len)?) {
                return Some((format!("{text} ; {address:#x}"), len));
            }
            match (body.split_first(), register_base(op)) {
                (None, _) => format!("{name}{flags}"),
                (Some((&dw0, values)), Some(base)) if dw0 & 0x0FFF_0000 == 0 && !values.is_empty() => {
                    let index = dw0 >> 28;
                    match register_name(family, base.wrapping_add(dw0 & 0xFFFF)) {
                        Some(reg) if index != 0 => format!("{name}{flags} index={index} {reg}, {}", hex_list(values)),
                        Some(reg) => format!("{name}{flags} {reg}, {}", hex_list(values)),
                        None => format!("{name}{flags} {}", hex_list(body)),
                    }
                }
                (Some(_), _) => format!("{name}{flags} {}", hex_list(body)),
            }
        }
    };
    let location = PacketLocation { buffer: address, buffer_size_dw: len as u32, offset_dw: 0 };
    let comment = comment(family, &Packet { header: Header(h), body, location }, address);
    Some((format!("{text} {comment}"), len))
}

/// `; ADDRESS: decoded fields` (register writes are named in the statement).
fn comment(family: GpuFamily, p: &Packet<'_>, address: u64) -> String {
    let mut s = format!("; {address:#x}");
    match decode_fields(family, p) {
        Ok(fields) => {
            for f in fields.iter().filter(|f| f.register.is_none()) {
                s.push(' ');
                s.push_str(&f.name);
                s.push('=');
                s.push_str(&f.value);
            }
        }
        Err(e) => {
            s.push_str(" ! ");
            s.push_str(&e.to_string());
        }
    }
    s
}

/// The assembler key of each body field that the assembler's key=value form
/// of `op` takes, in the order they are written (list-valued keys last).
fn field_keys(op: Opcode) -> Option<&'static [(&'static str, &'static str)]> {
    Some(match op {
        Opcode::WAIT_REG_MEM | Opcode::WAIT_REG_MEM64 => &[
            ("FUNCTION", "function"),
            ("MEM_SPACE", "mem"),
            ("ADDR", "addr"),
            ("REG", "reg"),
            ("REFERENCE", "ref"),
            ("MASK", "mask"),
            ("OPERATION", "operation"),
            ("ENGINE", "engine"),
            ("POLL_INTERVAL", "poll"),
        ],
        Opcode::WRITE_DATA => &[
            ("DST_SEL", "dst"),
            ("DST", "addr"),
            ("WR_ONE_ADDR", "one_addr"),
            ("WR_CONFIRM", "wr_confirm"),
            ("ENGINE", "engine"),
            ("VALUES", "data"),
        ],
        Opcode::RELEASE_MEM => &[
            ("EVENT", "event"),
            ("EVENT_INDEX", "index"),
            ("GCR_CNTL", "gcr"),
            ("CACHE_CONTROL", "cache"),
            ("DST_SEL", "dst"),
            ("INT_SEL", "int"),
            ("DATA_SEL", "data_sel"),
            ("ADDR", "addr"),
            ("DATA", "data"),
            ("INT_CTXID", "ctxid"),
        ],
        Opcode::EVENT_WRITE_EOP => &[
            ("EVENT", "event"),
            ("EVENT_INDEX", "index"),
            ("GCR_CNTL", "cache"),
            ("CACHE_CONTROL", "cache"),
            ("DST_SEL", "dst"),
            ("INT_SEL", "int"),
            ("DATA_SEL", "data_sel"),
            ("ADDR", "addr"),
            ("DATA", "data"),
        ],
        Opcode::EVENT_WRITE => &[("EVENT", "event"), ("EVENT_INDEX", "index"), ("ADDR", "addr")],
        Opcode::INDIRECT_BUFFER | Opcode::INDIRECT_BUFFER_CONST => &[
            ("IB_BASE", "addr"),
            ("IB_SIZE", "size"),
            ("CHAIN", "chain"),
            ("VALID", "valid"),
            ("PRE_ENA", "pre_ena"),
            ("VMID", "vmid"),
        ],
        Opcode::COPY_DATA => &[
            ("SRC_SEL", "src_sel"),
            ("SRC", "src"),
            ("DST_SEL", "dst_sel"),
            ("DST", "dst"),
            ("COUNT_SEL", "count_sel"),
            ("WR_CONFIRM", "wr_confirm"),
            ("ENGINE", "engine"),
        ],
        Opcode::DMA_DATA => &[
            ("SRC_SEL", "src_sel"),
            ("SRC", "src"),
            ("DST_SEL", "dst_sel"),
            ("DST", "dst"),
            ("BYTE_COUNT", "size"),
            ("SAS", "sas"),
            ("DAS", "das"),
            ("SAIC", "saic"),
            ("DAIC", "daic"),
            ("CP_SYNC", "cp_sync"),
            ("ENGINE", "engine"),
        ],
        // gfx7 names the first three by the CP_COHER_* registers.
        Opcode::ACQUIRE_MEM => &[
            ("COHER_CNTL", "cntl"),
            ("CP_COHER_CNTL", "cntl"),
            ("ENGINE", "engine"),
            ("COHER_SIZE", "size"),
            ("CP_COHER_SIZE", "size"),
            ("COHER_BASE", "base"),
            ("CP_COHER_BASE", "base"),
            ("POLL_INTERVAL", "poll"),
            ("GCR_CNTL", "gcr"),
        ],
        Opcode::DISPATCH_DIRECT => {
            &[("DIM_X", "x"), ("DIM_Y", "y"), ("DIM_Z", "z"), ("DISPATCH_INITIATOR", "initiator")]
        }
        Opcode::DRAW_INDEX_AUTO => &[("INDEX_COUNT", "count"), ("DRAW_INITIATOR", "initiator")],
        _ => return None,
    })
}

/// A field's value as the assembler reads it (a selector by its name when
/// `named`, else its number); `None` when it has no assembler spelling (a
/// reserved selector, a raw layout dword).
fn asm_value(family: GpuFamily, value: &FieldValue<'_>, named: bool) -> Option<String> {
    Some(match *value {
        FieldValue::Dec(v) => v.to_string(),
        FieldValue::Hex(v) => format!("{v:#x}"),
        FieldValue::Flag(v) => u8::from(v).to_string(),
        FieldValue::Selector(_, n) if named && n != "reserved" && n != "other" => n.to_ascii_lowercase(),
        FieldValue::Selector(v, _) => v.to_string(),
        FieldValue::Name(n) if n == "reserved" || n == "other" => return None,
        FieldValue::Name(n) => n.to_ascii_lowercase(),
        FieldValue::HexList(values) => hex_list(values),
        FieldValue::Event(e) => db::event_name(family, e).map_or_else(|| e.to_string(), str::to_owned),
        _ => return None,
    })
}

/// The packet as the assembler's key=value form of its opcode, built from
/// the typed body's fields; `None` when the opcode has no such form or the
/// statement would not assemble back to exactly `packet` (its header and
/// body dwords).
fn field_statement(family: GpuFamily, op: Opcode, head: &str, body: &[u32], packet: &[u32]) -> Option<String> {
    let keys = field_keys(op)?;
    let decoded = AnyBody::decode_for(family, op, body).ok()??;
    let fields = decoded.fields_for(family);
    // Drivers write 48-bit addresses sign-extended to 64 bits (the canonical
    // form), which the typed bodies keep as 48 bits: try that form first;
    // selectors by name first (`dst=mem`), by number where the assembler
    // spells them otherwise.
    for (canonical, named) in [(true, true), (false, true), (true, false), (false, false)] {
        let mut text = head.to_owned();
        for &(field, key) in keys {
            let Some(f) = fields.iter().find(|f| f.name == field) else { continue };
            let value = match (&decoded, field, f.value) {
                // COHER_SIZE_HI's bits above the 40-bit size go with the size.
                (AnyBody::AcquireMem(a), "COHER_SIZE" | "CP_COHER_SIZE", _) => {
                    format!("{:#x}", a.size | (u64::from(a.size_hi_rest) << 40))
                }
                // gfx7 names the base's low dword by its register.
                (AnyBody::AcquireMem(a), "CP_COHER_BASE", _) => format!("{:#x}", a.base),
                (_, _, FieldValue::Hex(v)) if canonical && ADDRESS_KEYS.contains(&key) && v >> 47 == 1 => {
                    format!("{:#x}", v | 0xFFFF_0000_0000_0000)
                }
                _ => asm_value(family, &f.value, named)?,
            };
            text.push(' ');
            text.push_str(key);
            text.push('=');
            text.push_str(&value);
        }
        // DMA_DATA bits its fields leave to the raw layout dwords.
        if let AnyBody::DmaData(d) = &decoded {
            let extra = [
                ("raw_wait", u32::from(d.raw_wait)),
                ("dis_wc", u32::from(d.disable_write_confirm)),
                ("src_cache_policy", d.cache_policies.0),
                ("dst_cache_policy", d.cache_policies.1),
                ("src_swap", d.swaps.0),
                ("dst_swap", d.swaps.1),
            ];
            for (key, v) in extra.into_iter().filter(|&(_, v)| v != 0) {
                text.push_str(&format!(" {key}={v}"));
            }
        }
        if crate::asm::encode_statement(family, &text).ok().as_deref() == Some(packet) {
            return Some(text);
        }
    }
    None
}

/// The keys that hold a 64-bit address.
const ADDRESS_KEYS: [&str; 3] = ["addr", "src", "dst"];
