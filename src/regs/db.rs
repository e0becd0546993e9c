//! Register database: names, dword offsets, bitfields and enumerated values of
//! the GPU's registers, and of the PM4 type-3 packet-body dwords, for the
//! gfx10.3 (PS5) and gfx7 (PS4) families.
//!
//! The tables live in [`super::generated`], produced from `registers/*.json`
//! by `cargo run -p xtask -- regen`; this module defines their types and the
//! lookups. Every lookup is allocation-free; only the `format_*` helpers build
//! a `String`.

use std::fmt::{self, Write as _};
use std::ops::Range;
use std::str::FromStr;

use super::generated;

/// A GPU family: which register map, packet forms and shader containers a
/// GPU's command processor uses. Chosen per GPU: from a trace's `INFO
/// gpu=` ([`crate::trace::Trace::gpu_family`]) or by the embedder
/// ([`crate::processor::ProcessorConfig::family`]); gfx10.3 by default.
///
/// ```
/// use pm4core::GpuFamily;
///
/// let ps4: GpuFamily = "gfx7".parse()?;
/// assert_eq!(ps4, GpuFamily::Gfx7);
/// assert_eq!(GpuFamily::default(), GpuFamily::Gfx103);
/// assert_eq!(ps4.to_string(), "gfx7");
/// # Ok::<(), pm4core::regs::db::ParseGpuFamilyError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum GpuFamily {
    /// RDNA2 (gfx10.3): the PS5 GPU's family.
    #[default]
    Gfx103,
    /// GCN 2 (gfx7, Sea Islands): the PS4 GPU's family.
    Gfx7,
}

impl GpuFamily {
    /// Every built-in family.
    pub const ALL: [GpuFamily; 2] = [GpuFamily::Gfx103, GpuFamily::Gfx7];

    /// The chip name the databases use in their `chips` lists (`"gfx103"`, `"gfx7"`).
    pub const fn chip_name(self) -> &'static str {
        match self {
            GpuFamily::Gfx103 => "gfx103",
            GpuFamily::Gfx7 => "gfx7",
        }
    }
}

impl fmt::Display for GpuFamily {
    /// Writes `gfx10.3` or `gfx7`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GpuFamily::Gfx103 => "gfx10.3",
            GpuFamily::Gfx7 => "gfx7",
        })
    }
}

/// Error of parsing a [`GpuFamily`] from text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown GPU family {0:?} (expected gfx10.3, gfx103 or gfx7)")]
pub struct ParseGpuFamilyError(pub String);

impl FromStr for GpuFamily {
    type Err = ParseGpuFamilyError;

    /// Accepts `gfx10.3`, `gfx103` and `gfx7`, ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("gfx10.3") || s.eq_ignore_ascii_case("gfx103") {
            Ok(GpuFamily::Gfx103)
        } else if s.eq_ignore_ascii_case("gfx7") {
            Ok(GpuFamily::Gfx7)
        } else {
            Err(ParseGpuFamilyError(s.to_owned()))
        }
    }
}

/// The register space a dword offset falls into; it decides which
/// `SET_*_REG` packet writes it and how it is saved and restored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum RegisterSpace {
    /// Config registers, dwords `0x2000..0x2C00` (`SET_CONFIG_REG`).
    Config,
    /// Persistent shader (SH) registers, dwords `0x2C00..0x3000` (`SET_SH_REG`).
    Sh,
    /// Context registers, dwords `0xA000..0xC000` (`SET_CONTEXT_REG`).
    Context,
    /// User config registers, dwords `0xC000..0x10000` (`SET_UCONFIG_REG`).
    Uconfig,
    /// Any other offset (privileged, wave or memory-mapped block registers).
    Other,
}

impl RegisterSpace {
    /// Config registers' dword range.
    pub const CONFIG: Range<u32> = 0x2000..0x2C00;
    /// SH registers' dword range.
    pub const SH: Range<u32> = 0x2C00..0x3000;
    /// Context registers' dword range.
    pub const CONTEXT: Range<u32> = 0xA000..0xC000;
    /// User config registers' dword range.
    pub const UCONFIG: Range<u32> = 0xC000..0x10000;

    /// Classifies a dword register offset.
    pub const fn of(dword_offset: u32) -> Self {
        match dword_offset {
            0x2000..0x2C00 => RegisterSpace::Config,
            0x2C00..0x3000 => RegisterSpace::Sh,
            0xA000..0xC000 => RegisterSpace::Context,
            0xC000..0x10000 => RegisterSpace::Uconfig,
            _ => RegisterSpace::Other,
        }
    }

    /// The space's dword range, `None` for [`RegisterSpace::Other`].
    pub const fn range(self) -> Option<Range<u32>> {
        match self {
            RegisterSpace::Config => Some(Self::CONFIG),
            RegisterSpace::Sh => Some(Self::SH),
            RegisterSpace::Context => Some(Self::CONTEXT),
            RegisterSpace::Uconfig => Some(Self::UCONFIG),
            RegisterSpace::Other => None,
        }
    }

    /// The space's first dword offset (the base its `SET_*_REG` packets add
    /// their register offset to), `None` for [`RegisterSpace::Other`].
    pub const fn base(self) -> Option<u32> {
        match self {
            RegisterSpace::Config => Some(Self::CONFIG.start),
            RegisterSpace::Sh => Some(Self::SH.start),
            RegisterSpace::Context => Some(Self::CONTEXT.start),
            RegisterSpace::Uconfig => Some(Self::UCONFIG.start),
            RegisterSpace::Other => None,
        }
    }
}

impl fmt::Display for RegisterSpace {
    /// Writes `config`, `sh`, `context`, `uconfig` or `other`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RegisterSpace::Config => "config",
            RegisterSpace::Sh => "sh",
            RegisterSpace::Context => "context",
            RegisterSpace::Uconfig => "uconfig",
            RegisterSpace::Other => "other",
        })
    }
}

/// A named value of an enumerated field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EnumValue {
    /// Name, e.g. `FORCE_OFF`.
    pub name: &'static str,
    /// The field value it names.
    pub value: u32,
}

/// A bitfield of a register: bits `lo..=hi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FieldInfo {
    /// Name, e.g. `FORCE_HIZ_ENABLE`.
    pub name: &'static str,
    /// Lowest bit (0..=31).
    pub lo: u8,
    /// Highest bit, inclusive (`lo..=31`).
    pub hi: u8,
    /// Named values, empty when the field is a plain number.
    pub values: &'static [EnumValue],
}

impl FieldInfo {
    /// Number of bits (1..=32 for a well-formed field; 0 if `hi < lo`).
    pub const fn width(&self) -> u32 {
        if self.hi < self.lo {
            0
        } else {
            (self.hi - self.lo) as u32 + 1
        }
    }

    /// Mask of the field's bits, unshifted (e.g. `0b11` for a 2-bit field).
    const fn low_mask(&self) -> u32 {
        let width = self.width();
        if width >= 32 {
            u32::MAX
        } else {
            (1u32 << width) - 1
        }
    }

    /// Mask of the field's bits in place within the register.
    pub const fn mask(&self) -> u32 {
        match self.low_mask().checked_shl(self.lo as u32) {
            Some(mask) => mask,
            None => 0,
        }
    }

    /// The field's value within the register value `value`, shifted down to bit 0.
    pub const fn extract(&self, value: u32) -> u32 {
        match value.checked_shr(self.lo as u32) {
            Some(shifted) => shifted & self.low_mask(),
            None => 0,
        }
    }

    /// `register` with this field replaced by `field_value` (excess high bits
    /// of `field_value` are dropped).
    pub const fn insert(&self, register: u32, field_value: u32) -> u32 {
        let placed = match (field_value & self.low_mask()).checked_shl(self.lo as u32) {
            Some(placed) => placed,
            None => 0,
        };
        (register & !self.mask()) | placed
    }

    /// The name of the field value `field_value` (already extracted), if the
    /// field is enumerated and the value has a name.
    pub fn value_name(&self, field_value: u32) -> Option<&'static str> {
        self.values.iter().find(|v| v.value == field_value).map(|v| v.name)
    }

    /// The value named `name`, if the field is enumerated and has it.
    pub fn value_by_name(&self, name: &str) -> Option<u32> {
        self.values.iter().find(|v| v.name == name).map(|v| v.value)
    }

    /// Decodes this field of the register value `value`.
    pub fn decode(&self, value: u32) -> FieldValue<'_> {
        let field_value = self.extract(value);
        FieldValue { field: self, value: field_value, enum_name: self.value_name(field_value) }
    }
}

/// A register: name, dword offset and fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RegisterInfo {
    /// Name, e.g. `DB_RENDER_CONTROL`.
    pub name: &'static str,
    /// Dword offset (the database's byte offset / 4).
    pub offset: u32,
    /// Bitfields, in the database's order; empty when the database gives none
    /// (the register is then one 32-bit value).
    pub fields: &'static [FieldInfo],
}

impl RegisterInfo {
    /// The register space of [`RegisterInfo::offset`].
    pub const fn space(&self) -> RegisterSpace {
        RegisterSpace::of(self.offset)
    }

    /// The field named `name` (case-sensitive).
    pub fn field(&self, name: &str) -> Option<&'static FieldInfo> {
        let fields: &'static [FieldInfo] = self.fields;
        fields.iter().find(|f| f.name == name)
    }

    /// Decodes every field of the register value `value`, in field order.
    pub fn decode(&self, value: u32) -> impl Iterator<Item = FieldValue<'static>> {
        let fields: &'static [FieldInfo] = self.fields;
        fields.iter().map(move |field| field.decode(value))
    }
}

/// One field of a decoded register value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldValue<'a> {
    /// The field.
    pub field: &'a FieldInfo,
    /// The field's value, shifted down to bit 0.
    pub value: u32,
    /// The name of `value` when the field is enumerated and names it.
    pub enum_name: Option<&'static str>,
}

impl fmt::Display for FieldValue<'_> {
    /// Writes `NAME = ENUM_NAME`, or `NAME = decimal` for unnamed values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.enum_name {
            Some(name) => write!(f, "{} = {}", self.field.name, name),
            None => write!(f, "{} = {}", self.field.name, self.value),
        }
    }
}

/// A PM4 type-3 packet body dword described like a register (`COMMAND`,
/// `CONTROL`, `CP_DMA_WORD1`, `RELEASE_MEM_OP`, `GCR_CNTL`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PacketFieldType {
    /// Name, e.g. `CP_DMA_WORD1`. Several entries may share a name, each for
    /// different chips.
    pub name: &'static str,
    /// The database's `at` key. It only tells the dwords apart; it is not an
    /// address.
    pub at: u32,
    /// Chips this layout applies to, as the database names them (`"gfx103"`, ...).
    pub chips: &'static [&'static str],
    /// Bitfields; empty for plain 32-bit values (addresses).
    pub fields: &'static [FieldInfo],
}

impl PacketFieldType {
    /// Whether this layout applies to `family`.
    pub fn applies_to(&self, family: GpuFamily) -> bool {
        self.chips.contains(&family.chip_name())
    }

    /// The field named `name` (case-sensitive).
    pub fn field(&self, name: &str) -> Option<&'static FieldInfo> {
        let fields: &'static [FieldInfo] = self.fields;
        fields.iter().find(|f| f.name == name)
    }

    /// Decodes every field of the dword `value`, in field order.
    pub fn decode(&self, value: u32) -> impl Iterator<Item = FieldValue<'static>> {
        let fields: &'static [FieldInfo] = self.fields;
        fields.iter().map(move |field| field.decode(value))
    }
}

/// Every register of `family`, sorted by dword offset.
pub fn registers(family: GpuFamily) -> &'static [RegisterInfo] {
    match family {
        GpuFamily::Gfx103 => generated::gfx103::REGISTERS,
        GpuFamily::Gfx7 => generated::gfx7::REGISTERS,
    }
}

/// Indices into [`registers`] sorted by name.
fn registers_by_name(family: GpuFamily) -> &'static [u16] {
    match family {
        GpuFamily::Gfx103 => generated::gfx103::REGISTERS_BY_NAME,
        GpuFamily::Gfx7 => generated::gfx7::REGISTERS_BY_NAME,
    }
}

/// The register of `family` at `dword_offset` (binary search).
pub fn register(family: GpuFamily, dword_offset: u32) -> Option<&'static RegisterInfo> {
    let table = registers(family);
    table.binary_search_by_key(&dword_offset, |r| r.offset).ok().and_then(|i| table.get(i))
}

/// The register of `family` named `name` (case-sensitive; binary search in
/// the generated name index).
pub fn register_by_name(family: GpuFamily, name: &str) -> Option<&'static RegisterInfo> {
    let table = registers(family);
    let index = registers_by_name(family);
    let name_at = |i: u16| table.get(usize::from(i)).map(|r| r.name);
    index
        .binary_search_by(|&i| name_at(i).cmp(&Some(name)))
        .ok()
        .and_then(|pos| index.get(pos))
        .and_then(|&i| table.get(usize::from(i)))
}

/// Every packet-body type, for all chips, sorted by name.
pub fn packet_field_types() -> &'static [PacketFieldType] {
    generated::pkt3::FIELD_TYPES
}

/// The packet-body type named `name` (e.g. `"CP_DMA_WORD1"`) as laid out on
/// `family`. A few names (`DST_ADDR_LO`, ...) describe more than one dword;
/// this returns the first, by `at`; see [`packet_field_types`] for all.
pub fn packet_field_type(name: &str, family: GpuFamily) -> Option<&'static PacketFieldType> {
    packet_field_types().iter().find(|t| t.name == name && t.applies_to(family))
}

/// The VGT_EVENT_TYPE name of an event number (the enum of
/// VGT_EVENT_INITIATOR's EVENT_TYPE field in `family`'s database).
///
/// ```
/// use pm4core::regs::db::{event_name, GpuFamily};
/// assert_eq!(event_name(GpuFamily::Gfx103, 0x14), Some("CACHE_FLUSH_AND_INV_TS_EVENT"));
/// ```
pub fn event_name(family: GpuFamily, event_type: u32) -> Option<&'static str> {
    register_by_name(family, "VGT_EVENT_INITIATOR")?.field("EVENT_TYPE")?.value_name(event_type)
}

/// Formats `value` field by field: `NAME = ENUM_NAME` or `NAME = decimal`,
/// joined by `", "`. Bits outside every field, when set, are appended as
/// `(other bits 0x...)`; a value with no fields formats as `0x%08X`.
pub fn format_fields(fields: &[FieldInfo], value: u32) -> String {
    let mut out = String::new();
    let mut covered = 0u32;
    for field in fields {
        covered |= field.mask();
        if !out.is_empty() {
            out.push_str(", ");
        }
        // Writing to a String cannot fail.
        let _ = write!(out, "{}", field.decode(value));
    }
    if fields.is_empty() {
        let _ = write!(out, "{value:#010X}");
    } else if value & !covered != 0 {
        let _ = write!(out, " (other bits {:#X})", value & !covered);
    }
    out
}

/// Formats a value of register `info`, e.g.
/// `FORCE_HIZ_ENABLE = FORCE_OFF, FAST_Z_DISABLE = 0, ...` (see [`format_fields`]).
pub fn format_register_value(info: &RegisterInfo, value: u32) -> String {
    format_fields(info.fields, value)
}
