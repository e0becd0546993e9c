//! Field-by-field decoding of one packet for the disassembler, through the
//! typed decoders of [`crate::packet::body`] and the register database.

use crate::packet::body::{AnyBody, BodyError};
use crate::packet::field::{BodyField, FieldValue, Layout};
use crate::packet::{Header, Opcode, Packet, PacketType};
use crate::regs::db::{self, GpuFamily};

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
    header.name().to_string()
}

/// [`packet_name`] in `family`'s opcode map: an opcode the family does not
/// have ([`Opcode::exists_on`]) is `UNKNOWN_0xNN`, as its CP meets it.
pub fn packet_name_on(family: GpuFamily, header: Header) -> String {
    match header.packet_type() {
        PacketType::Type3 => opcode_name_on(family, header.opcode()),
        _ => packet_name(header),
    }
}

/// An opcode's name in `family`'s map, `UNKNOWN_0xNN` without one.
pub(crate) fn opcode_name_on(family: GpuFamily, op: Opcode) -> String {
    match op.name_on(family) {
        Some(name) => name.to_owned(),
        None => format!("UNKNOWN_{:#04x}", op.0),
    }
}

pub use crate::regs::db::event_name;

/// The register-space base of a plain register-writing opcode.
pub fn register_base(op: Opcode) -> Option<u32> {
    op.register_space().filter(|_| op.writes_register_run()).map(|space| space.base)
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

/// The number a field's value holds, for decoding its bits.
fn numeric(value: &FieldValue<'_>) -> Option<u32> {
    match *value {
        FieldValue::Dec(v) | FieldValue::Hex(v) => Some(v as u32),
        FieldValue::Raw(v) | FieldValue::Selector(v, _) | FieldValue::Flags(v, _) => Some(v),
        _ => None,
    }
}

/// One body field as the disassembler shows it, with `family`'s names and
/// bitfields; `None` for a field the database cannot describe (a raw
/// layout dword of an unknown type, an event without a name).
fn body_field(family: GpuFamily, field: &BodyField<'_>) -> Option<Field> {
    let name = field.name;
    match field.value {
        FieldValue::RegisterWrite { register, value } => return Some(register_field(family, register, value)),
        FieldValue::Register(r) => return Some(Field::plain(name, register_name(family, r))),
        FieldValue::Event(e) => return event_name(family, e).map(|n| Field::plain(name, n.to_owned())),
        _ => {}
    }
    let value = numeric(&field.value);
    let bits = match (field.layout, value) {
        (Some(Layout::PacketType(t)), Some(v)) => {
            db::packet_field_type(t, family).filter(|t| !t.fields.is_empty()).map(|t| db::format_fields(t.fields, v))
        }
        (Some(Layout::Register(r)), Some(v)) => {
            db::register_by_name(family, r).filter(|r| !r.fields.is_empty()).map(|r| db::format_register_value(r, v))
        }
        _ => None,
    };
    if matches!(field.value, FieldValue::Raw(_)) && bits.is_none() {
        return None;
    }
    Some(Field { name: name.to_owned(), value: field.value.to_string(), register: None, bits })
}

/// Decodes a packet's fields: register writes with names and bitfields,
/// bodies through [`AnyBody::decode_for`] and `fields_for` in `family`'s
/// layouts, with its register, event and bitfield names. An error means
/// the body is shorter than its layout.
pub fn decode_fields(family: GpuFamily, p: &Packet<'_>) -> Result<Vec<Field>, BodyError> {
    match p.header.packet_type() {
        PacketType::Type0 => {
            let base = p.header.type0_base();
            let fields = p
                .body
                .iter()
                .enumerate()
                .map(|(i, &v)| register_field(family, base.wrapping_add(i as u32), v))
                .collect();
            return Ok(fields);
        }
        PacketType::Type1 | PacketType::Type2 => return Ok(Vec::new()),
        PacketType::Type3 => {}
    }
    if p.header.length_dw() == Some(1) {
        return Ok(Vec::new());
    }
    let Some(body) = AnyBody::decode_for(family, p.opcode(), p.body)? else { return Ok(Vec::new()) };
    Ok(body.fields_for(family).iter().filter_map(|f| body_field(family, f)).collect())
}
