//! Structured fields of a packet body: what each typed body lists through
//! `fields()`, and what `Display`, the disassembler's text, its `--json`
//! records and its `--source` comments are all built from.
//!
//! A [`BodyField`] is a name, a [`FieldValue`] (how the value is written)
//! and optionally a [`Layout`]: the register or packet-body type of the
//! register database whose bitfields describe the value.
//!
//! ```
//! use pm4core::packet::body::{Body, IndirectBuffer};
//! use pm4core::packet::field::{FieldValue, Layout};
//! use pm4core::packet::Opcode;
//!
//! let ib = IndirectBuffer::decode_body(Opcode::INDIRECT_BUFFER, &[0x1000, 0, 0x0090_0010])?;
//! let fields = ib.fields();
//! assert_eq!(fields[0].name, "IB_BASE");
//! assert_eq!(fields[0].value, FieldValue::Hex(0x1000));
//! assert_eq!(fields[1].value.to_string(), "16");
//! assert_eq!(fields.last().map(|f| f.layout), Some(Some(Layout::PacketType("IB_CONTROL"))));
//! assert_eq!(ib.to_string(), "IB_BASE=0x1000 IB_SIZE=16 CHAIN=1 VALID=1 PRE_ENA=0 VMID=0 IB_CONTROL=0x00900010");
//! # Ok::<(), pm4core::packet::body::BodyError>(())
//! ```

use std::fmt;

/// How a field's value is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValue<'a> {
    /// A number, in decimal.
    Dec(u64),
    /// A number, in hexadecimal (`0x1f`).
    Hex(u64),
    /// A flag, written `0` or `1`.
    Flag(bool),
    /// A name (`memory`, `ME`, `==`).
    Name(&'static str),
    /// A selector value and its name: `5(memory)`.
    Selector(u32, &'static str),
    /// A set of named bits, joined by `|` (`none` when no named bit is set).
    Flags(u32, &'static [(u32, &'static str)]),
    /// Up to eight dwords in hexadecimal, comma-separated, then `...`.
    HexList(&'a [u32]),
    /// A quoted name: `"flip"`.
    Quoted(&'static str),
    /// A whole dword in hexadecimal with eight digits, described by its
    /// [`Layout`]; shown only where the database knows that layout.
    Raw(u32),
    /// An absolute register index, written as its name from the register
    /// database (`REG_0x1234` when it has none).
    Register(u32),
    /// A register write (a SET_*_REG value): the field is shown as
    /// `NAME=0x%08x` with the register's name from the database.
    RegisterWrite {
        /// Absolute register index.
        register: u32,
        /// The value written.
        value: u32,
    },
    /// A VGT event type, written as its name from the register database;
    /// not shown when the database has no name for it.
    Event(u32),
}

impl fmt::Display for FieldValue<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FieldValue::Dec(v) => write!(f, "{v}"),
            FieldValue::Hex(v) => write!(f, "{v:#x}"),
            FieldValue::Flag(v) => write!(f, "{}", u8::from(v)),
            FieldValue::Name(n) => f.write_str(n),
            FieldValue::Selector(v, n) => write!(f, "{v}({n})"),
            FieldValue::Flags(v, names) => {
                let mut any = false;
                for &(bit, name) in names {
                    if (v >> bit) & 1 != 0 {
                        if any {
                            f.write_str("|")?;
                        }
                        f.write_str(name)?;
                        any = true;
                    }
                }
                if !any {
                    f.write_str("none")?;
                }
                Ok(())
            }
            FieldValue::HexList(values) => {
                for (i, v) in values.iter().take(8).enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{v:#x}")?;
                }
                if values.len() > 8 {
                    f.write_str(",...")?;
                }
                Ok(())
            }
            FieldValue::Quoted(n) => write!(f, "\"{n}\""),
            FieldValue::Raw(v) => write!(f, "{v:#010x}"),
            // `Display` names registers and events by the gfx10.3 database;
            // the disassembler names them by the stream's family.
            FieldValue::Register(r) => match crate::regs::db::register(crate::regs::db::GpuFamily::Gfx103, r) {
                Some(info) => f.write_str(info.name),
                None => write!(f, "REG_{r:#06x}"),
            },
            FieldValue::RegisterWrite { value, .. } => write!(f, "{value:#010x}"),
            FieldValue::Event(e) => match crate::regs::db::event_name(crate::regs::db::GpuFamily::Gfx103, e) {
                Some(name) => f.write_str(name),
                None => write!(f, "{e}"),
            },
        }
    }
}

/// The database layout that describes a field's bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// The bitfields of a register (`VGT_DRAW_INITIATOR`).
    Register(&'static str),
    /// The bitfields of a packet-body type (`IB_CONTROL`, `GCR_CNTL`).
    PacketType(&'static str),
}

/// One field of a packet body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodyField<'a> {
    /// The field's name, in the packet reference's spelling (`IB_SIZE`).
    pub name: &'static str,
    /// Its value.
    pub value: FieldValue<'a>,
    /// The database layout of its bits, if any.
    pub layout: Option<Layout>,
}

impl<'a> BodyField<'a> {
    /// A field without a layout.
    pub const fn new(name: &'static str, value: FieldValue<'a>) -> Self {
        BodyField { name, value, layout: None }
    }

    /// A field whose bits the database describes.
    pub const fn with_layout(name: &'static str, value: FieldValue<'a>, layout: Layout) -> Self {
        BodyField { name, value, layout: Some(layout) }
    }
}

/// Writes fields as `NAME=value` separated by spaces (how every body's
/// `Display` prints).
pub fn write_fields(f: &mut fmt::Formatter<'_>, fields: &[BodyField<'_>]) -> fmt::Result {
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            f.write_str(" ")?;
        }
        match field.value {
            FieldValue::RegisterWrite { register, .. } => {
                write!(f, "{}={}", FieldValue::Register(register), field.value)?;
            }
            _ => write!(f, "{}={}", field.name, field.value)?,
        }
    }
    Ok(())
}
