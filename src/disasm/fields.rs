//! Field-by-field decoding of one packet for the disassembler, through the
//! typed decoders of [`crate::packet::body`] and the register database.

use crate::packet::body::{
    AcquireMem, AtomicMem, BodyError, CondExec, CondIndirectBuffer, CondWrite, ContextControl, CopyData,
    DispatchDirect, DispatchIndirect, DmaData, DrawBody, EventWrite, EventWriteEos, IndexBase, IndirectBuffer,
    LoadRegistersIndex, MemSemaphore, PollTarget, ReleaseMem, SetBase, SetPredication, SetRegisters,
    StrmoutBufferUpdate, WaitRegMem, WriteData,
};
use crate::packet::{Header, Opcode, Packet, PacketType};
use crate::processor::nop_convention;
use crate::regs::db::{self, GpuFamily};
use crate::regs::space;

/// One decoded field of a packet.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Field {
    /// Field name (`IB_SIZE`), or the register name for a register write
    /// (`REG_0x2c08` when the database has none).
    pub name: String,
    /// The value as printed (`176`, `0x800100014000`, `memory`).
    pub value: String,
    /// For a register write: the absolute dword register index.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub register: Option<u32>,
    /// Bitfields of the value with enum names, from the register database.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub bits: Option<String>,
}

impl Field {
    fn plain(name: &str, value: String) -> Field {
        Field { name: name.to_owned(), value, register: None, bits: None }
    }
}

/// The name a packet is counted and printed under: the opcode name
/// (`UNKNOWN_0xNN` when the map has none) for type 3, else `TYPE0`,
/// `TYPE1` or `TYPE2`.
pub fn packet_name(header: Header) -> String {
    match header.packet_type() {
        PacketType::Type0 => "TYPE0".to_owned(),
        PacketType::Type1 => "TYPE1".to_owned(),
        PacketType::Type2 => "TYPE2".to_owned(),
        PacketType::Type3 => header.opcode().to_string(),
    }
}

pub use crate::regs::db::event_name;

/// The register-space base of a plain register-writing opcode.
pub(crate) fn register_base(op: Opcode) -> Option<u32> {
    match op {
        Opcode::SET_CONFIG_REG => Some(space::CONFIG),
        Opcode::SET_CONTEXT_REG | Opcode::SET_CONTEXT_REG_INDEX => Some(space::CONTEXT),
        Opcode::SET_SH_REG | Opcode::SET_SH_REG_INDEX => Some(space::SH),
        Opcode::SET_UCONFIG_REG | Opcode::SET_UCONFIG_REG_INDEX => Some(space::UCONFIG),
        _ => None,
    }
}

fn register_field(family: GpuFamily, index: u32, value: u32) -> Field {
    let info = db::register(family, index);
    let name = info.map_or_else(|| format!("REG_{index:#06x}"), |r| r.name.to_owned());
    let bits = info.filter(|r| !r.fields.is_empty()).map(|r| db::format_register_value(r, value));
    Field { name, value: format!("{value:#010x}"), register: Some(index), bits }
}

fn register_name(family: GpuFamily, index: u32) -> String {
    db::register(family, index).map_or_else(|| format!("REG_{index:#06x}"), |r| r.name.to_owned())
}

/// Splits a body decoder's `Display` (`KEY=VALUE KEY=VALUE`) into fields:
/// `NAME[N]` becomes `NAME=N`, and any other word joins the value before it
/// (or starts a `body` field).
fn push_display(fields: &mut Vec<Field>, text: &str) {
    let first = fields.len();
    for token in text.split_whitespace() {
        if let Some((k, v)) = token.split_once('=').filter(|(k, v)| !k.is_empty() && !v.is_empty()) {
            fields.push(Field::plain(k, v.to_owned()));
        } else if let Some((k, v)) = token.strip_suffix(']').and_then(|t| t.split_once('[')) {
            fields.push(Field::plain(k, v.to_owned()));
        } else if fields.len() > first {
            if let Some(last) = fields.last_mut() {
                last.value.push(' ');
                last.value.push_str(token);
            }
        } else {
            fields.push(Field::plain("body", token.to_owned()));
        }
    }
}

/// Attaches register-database bitfields to the field named `name`.
fn attach_bits(fields: &mut [Field], name: &str, family: GpuFamily, register: &str, value: u32) {
    let Some(info) = db::register_by_name(family, register).filter(|r| !r.fields.is_empty()) else { return };
    if let Some(f) = fields.iter_mut().find(|f| f.name == name) {
        f.bits = Some(db::format_register_value(info, value));
    }
}

/// Decodes a dword with a packet-body type of the database: the bits go on
/// the field of that name, or on a new field.
fn packet_type_field(fields: &mut Vec<Field>, family: GpuFamily, type_name: &str, value: u32) {
    let Some(t) = db::packet_field_type(type_name, family).filter(|t| !t.fields.is_empty()) else { return };
    let bits = Some(db::format_fields(t.fields, value));
    match fields.iter_mut().find(|f| f.name == type_name) {
        Some(f) => f.bits = bits,
        None => {
            fields.push(Field { name: type_name.to_owned(), value: format!("{value:#010x}"), register: None, bits })
        }
    }
}

/// Adds `EVENT=<name>` right after `EVENT_TYPE`.
fn name_event(fields: &mut Vec<Field>, family: GpuFamily, event_type: u32) {
    if let Some(name) = event_name(family, event_type) {
        let at = fields.iter().position(|f| f.name == "EVENT_TYPE").map_or(fields.len(), |i| i + 1);
        fields.insert(at, Field::plain("EVENT", name.to_owned()));
    }
}

/// Decodes a packet's fields: register writes with names and bitfields,
/// bodies through the typed decoders of [`crate::packet::body`] (their
/// `Display` split into `KEY=VALUE` fields), event, register and NOP
/// convention names. An error means the body is shorter than its layout.
pub fn decode_fields(family: GpuFamily, p: &Packet<'_>) -> Result<Vec<Field>, BodyError> {
    let mut fields = Vec::new();
    match p.header.packet_type() {
        PacketType::Type0 => {
            let base = p.header.type0_base();
            for (i, &v) in p.body.iter().enumerate() {
                fields.push(register_field(family, base.wrapping_add(i as u32), v));
            }
            return Ok(fields);
        }
        PacketType::Type1 | PacketType::Type2 => return Ok(fields),
        PacketType::Type3 => {}
    }
    if p.header.length_dw() == Some(1) {
        return Ok(fields);
    }
    let op = p.opcode();
    if let Some(base) = register_base(op) {
        let set = SetRegisters::decode(p)?;
        if set.index != 0 {
            fields.push(Field::plain("INDEX", set.index.to_string()));
        }
        let first = base.wrapping_add(set.offset);
        for (i, &v) in set.values.iter().enumerate() {
            fields.push(register_field(family, first.wrapping_add(i as u32), v));
        }
        return Ok(fields);
    }
    match op {
        Opcode::NOP => {
            if let Some(name) = p.body.first().and_then(|&d| nop_convention(d)) {
                fields.push(Field::plain("CONVENTION", format!("\"{name}\"")));
            }
            fields.push(Field::plain("PAYLOAD_DWORDS", p.body.len().to_string()));
        }
        Opcode::INDIRECT_BUFFER | Opcode::INDIRECT_BUFFER_CONST => {
            if p.body.len() >= 13 {
                let c = CondIndirectBuffer::decode(p)?;
                for (name, value) in [
                    ("MODE", c.mode.to_string()),
                    ("COMPARE_ADDR", format!("{:#x}", c.compare_address)),
                    ("MASK", format!("{:#x}", c.mask)),
                    ("FUNCTION", c.function.name().to_owned()),
                    ("REFERENCE", format!("{:#x}", c.reference)),
                    ("IB1_BASE", format!("{:#x}", c.ib1.0)),
                    ("IB1_SIZE", c.ib1.1.to_string()),
                    ("IB2_BASE", format!("{:#x}", c.ib2.0)),
                    ("IB2_SIZE", c.ib2.1.to_string()),
                ] {
                    fields.push(Field::plain(name, value));
                }
            } else {
                push_display(&mut fields, &IndirectBuffer::decode(p)?.to_string());
                packet_type_field(&mut fields, family, "IB_CONTROL", p.dw(2)?);
            }
        }
        Opcode::WAIT_REG_MEM | Opcode::WAIT_REG_MEM64 => {
            let w = WaitRegMem::decode(p)?;
            push_display(&mut fields, &w.to_string());
            if let PollTarget::Register(r) = w.target {
                fields.push(Field::plain("REG_NAME", register_name(family, r)));
            }
        }
        Opcode::WRITE_DATA => {
            let w = WriteData::decode(p)?;
            push_display(&mut fields, &w.to_string());
            if w.dst_sel == 0 {
                fields.push(Field::plain("REG_NAME", register_name(family, w.destination as u32)));
            }
            if !w.data.is_empty() {
                let mut values: Vec<String> = w.data.iter().take(8).map(|v| format!("{v:#x}")).collect();
                if w.data.len() > 8 {
                    values.push("...".to_owned());
                }
                fields.push(Field::plain("VALUES", values.join(",")));
            }
            packet_type_field(&mut fields, family, "CONTROL", p.dw(0)?);
        }
        Opcode::COPY_DATA => {
            let c = CopyData::decode(p)?;
            push_display(&mut fields, &c.to_string());
            if c.src_sel == 0 {
                fields.push(Field::plain("SRC_REG", register_name(family, c.src as u32)));
            }
            if c.dst_sel == 0 {
                fields.push(Field::plain("DST_REG", register_name(family, c.dst as u32)));
            }
        }
        Opcode::DMA_DATA => {
            push_display(&mut fields, &DmaData::decode(p)?.to_string());
            packet_type_field(&mut fields, family, "DMA_DATA_WORD0", p.dw(0)?);
            packet_type_field(&mut fields, family, "COMMAND", p.dw(5)?);
        }
        Opcode::RELEASE_MEM => {
            let r = ReleaseMem::decode(p)?;
            push_display(&mut fields, &r.to_string());
            name_event(&mut fields, family, r.event_type);
            packet_type_field(&mut fields, family, "RELEASE_MEM_OP", p.dw(0)?);
        }
        Opcode::EVENT_WRITE_EOP => {
            let r = ReleaseMem::decode_eop(p)?;
            push_display(&mut fields, &r.to_string());
            name_event(&mut fields, family, r.event_type);
        }
        Opcode::EVENT_WRITE_EOS => {
            let e = EventWriteEos::decode(p)?;
            push_display(&mut fields, &e.to_string());
            name_event(&mut fields, family, e.event_type);
        }
        Opcode::EVENT_WRITE => {
            let e = EventWrite::decode(p)?;
            push_display(&mut fields, &e.to_string());
            name_event(&mut fields, family, e.event_type);
        }
        Opcode::ACQUIRE_MEM => {
            let a = AcquireMem::decode(p)?;
            push_display(&mut fields, &a.to_string());
            if let Some(gcr) = a.gcr_cntl {
                packet_type_field(&mut fields, family, "GCR_CNTL", gcr);
            }
        }
        Opcode::ATOMIC_MEM => push_display(&mut fields, &AtomicMem::decode(p)?.to_string()),
        Opcode::COND_WRITE => push_display(&mut fields, &CondWrite::decode(p)?.to_string()),
        Opcode::SET_PREDICATION => push_display(&mut fields, &SetPredication::decode(p)?.to_string()),
        Opcode::COND_EXEC => push_display(&mut fields, &CondExec::decode(p)?.to_string()),
        Opcode::LOAD_SH_REG_INDEX | Opcode::LOAD_UCONFIG_REG_INDEX | Opcode::LOAD_CONTEXT_REG_INDEX => {
            let l = LoadRegistersIndex::decode(p)?;
            push_display(&mut fields, &l.to_string());
            let base = match op {
                Opcode::LOAD_SH_REG_INDEX => space::SH,
                Opcode::LOAD_UCONFIG_REG_INDEX => space::UCONFIG,
                _ => space::CONTEXT,
            };
            if !l.pairs {
                fields.push(Field::plain("REG_NAME", register_name(family, base.wrapping_add(l.reg_offset))));
            }
        }
        Opcode::DISPATCH_DIRECT => {
            let d = DispatchDirect::decode(p)?;
            push_display(&mut fields, &d.to_string());
            attach_bits(&mut fields, "DISPATCH_INITIATOR", family, "COMPUTE_DISPATCH_INITIATOR", d.initiator);
        }
        Opcode::DISPATCH_INDIRECT => {
            let d = DispatchIndirect::decode(p)?;
            push_display(&mut fields, &d.to_string());
            let initiator = match d {
                DispatchIndirect::Offset { initiator, .. } | DispatchIndirect::Address { initiator, .. } => initiator,
            };
            attach_bits(&mut fields, "DISPATCH_INITIATOR", family, "COMPUTE_DISPATCH_INITIATOR", initiator);
        }
        Opcode::DRAW_INDEX_2
        | Opcode::DRAW_INDEX_AUTO
        | Opcode::DRAW_INDEX_OFFSET_2
        | Opcode::DRAW_INDIRECT
        | Opcode::DRAW_INDEX_INDIRECT
        | Opcode::DRAW_INDIRECT_MULTI
        | Opcode::DRAW_INDEX_INDIRECT_MULTI
        | Opcode::DRAW_INDIRECT_COUNT_MULTI
        | Opcode::DRAW_INDEX_INDIRECT_COUNT_MULTI
        | Opcode::DRAW_INDEX_MULTI_AUTO => {
            let d = DrawBody::decode(p)?;
            push_display(&mut fields, &d.to_string());
            let initiator = match d {
                DrawBody::Index2 { initiator, .. }
                | DrawBody::IndexAuto { initiator, .. }
                | DrawBody::IndexOffset2 { initiator, .. }
                | DrawBody::Indirect { initiator, .. }
                | DrawBody::IndirectMulti { initiator, .. }
                | DrawBody::IndexMultiAuto { initiator, .. } => initiator,
            };
            attach_bits(&mut fields, "DRAW_INITIATOR", family, "VGT_DRAW_INITIATOR", initiator);
        }
        Opcode::MEM_SEMAPHORE => push_display(&mut fields, &MemSemaphore::decode(p)?.to_string()),
        Opcode::SET_BASE => push_display(&mut fields, &SetBase::decode(p)?.to_string()),
        Opcode::STRMOUT_BUFFER_UPDATE => push_display(&mut fields, &StrmoutBufferUpdate::decode(p)?.to_string()),
        Opcode::INDEX_BASE => push_display(&mut fields, &IndexBase::decode(p)?.to_string()),
        Opcode::CONTEXT_CONTROL => push_display(&mut fields, &ContextControl::decode(p)?.to_string()),
        Opcode::NUM_INSTANCES => fields.push(Field::plain("NUM_INSTANCES", p.dw(0)?.to_string())),
        Opcode::INDEX_BUFFER_SIZE => fields.push(Field::plain("INDEX_COUNT", p.dw(0)?.to_string())),
        Opcode::INDEX_TYPE => {
            let v = p.dw(0)?;
            fields.push(Field::plain("INDEX_TYPE", v.to_string()));
            attach_bits(&mut fields, "INDEX_TYPE", family, "VGT_DMA_INDEX_TYPE", v);
        }
        _ => {}
    }
    Ok(fields)
}
