//! The plain data of a container's tables: register entries, user data,
//! special registers, resources and sharps, semantics.

use super::*;

/// One `ShaderRegister`: a bank-relative register offset and its value.
///
/// The offset is a u32 as every runtime reads it; two tools read a u16 plus
/// padding, which gives the same result on all known containers (§1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RegisterEntry {
    /// Offset in dwords from the bank base (context 0xA000, SH 0x2C00,
    /// UCONFIG 0xC000 as absolute register numbers).
    pub offset: u32,
    /// Value to write.
    pub value: u32,
}

impl RegisterEntry {
    /// An entry.
    pub const fn new(offset: u32, value: u32) -> Self {
        Self { offset, value }
    }

    pub(super) fn decode(bytes: &[u8], at: u64) -> Self {
        Self {
            offset: bytes::u32_at(bytes, at).unwrap_or(0),
            value: bytes::u32_at(bytes, at.saturating_add(4)).unwrap_or(0),
        }
    }
}

/// The first half of user data a stage's program uses (specials +0x14).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct UserDataRange {
    /// First user-data dword used, relative to `SPI_SHADER_USER_DATA_<stage>_0`.
    pub start: u16,
    /// One past the last user-data dword used.
    pub end: u16,
}

/// `ShaderDrawModifier`, a 64-bit bitfield (shader-containers.md §1.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DrawModifier(pub u64);

impl DrawModifier {
    fn bit(self, n: u32) -> bool {
        (self.0 >> n) & 1 != 0
    }
    pub fn enbl_start_vertex_offset(self) -> bool {
        self.bit(0)
    }
    pub fn enbl_start_index_offset(self) -> bool {
        self.bit(1)
    }
    pub fn enbl_start_instance_offset(self) -> bool {
        self.bit(2)
    }
    pub fn enbl_draw_index(self) -> bool {
        self.bit(3)
    }
    pub fn enbl_user_vgprs(self) -> bool {
        self.bit(4)
    }
    /// Bits 5..7.
    pub fn render_target_slice_offset(self) -> u8 {
        ((self.0 >> 5) & 0x7) as u8
    }
    pub fn fuse_draws(self) -> bool {
        self.bit(8)
    }
    /// Bits 9..31.
    pub fn compiler_flags(self) -> u32 {
        ((self.0 >> 9) & 0x7F_FFFF) as u32
    }
    pub fn is_default(self) -> bool {
        self.bit(32)
    }
}

/// `ShaderSpecialRegs` (shader-containers.md §1.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SpecialRegisters {
    /// UCONFIG GE_CNTL (offset 0x25B).
    pub ge_cntl: RegisterEntry,
    /// CONTEXT VGT_SHADER_STAGES_EN (0x2D5).
    pub vgt_shader_stages_en: RegisterEntry,
    /// Opaque.
    pub dispatch_modifier: u32,
    /// User-data dwords the program uses.
    pub user_data_range: UserDataRange,
    /// Draw modifier bitfield.
    pub draw_modifier: DrawModifier,
    /// CONTEXT VGT_GS_OUT_PRIM_TYPE (0x29B).
    pub vgt_gs_out_prim_type: RegisterEntry,
    /// UCONFIG GE_USER_VGPR_EN (0x262).
    pub ge_user_vgpr_en: RegisterEntry,
}

impl SpecialRegisters {
    pub(super) fn decode(b: &[u8]) -> Self {
        Self {
            ge_cntl: RegisterEntry::decode(b, 0x00),
            vgt_shader_stages_en: RegisterEntry::decode(b, 0x08),
            dispatch_modifier: bytes::u32_at(b, 0x10).unwrap_or(0),
            user_data_range: UserDataRange {
                start: bytes::u16_at(b, 0x14).unwrap_or(0),
                end: bytes::u16_at(b, 0x16).unwrap_or(0),
            },
            draw_modifier: DrawModifier(bytes::u64_at(b, 0x18).unwrap_or(0)),
            vgt_gs_out_prim_type: RegisterEntry::decode(b, 0x20),
            ge_user_vgpr_en: RegisterEntry::decode(b, 0x28),
        }
    }

    /// The 0x30 bytes of the structure.
    pub fn to_bytes(&self) -> [u8; SPECIALS_LEN as usize] {
        let mut out = [0u8; SPECIALS_LEN as usize];
        let words: [(usize, &[u8]); 12] = [
            (0x00, &self.ge_cntl.offset.to_le_bytes()),
            (0x04, &self.ge_cntl.value.to_le_bytes()),
            (0x08, &self.vgt_shader_stages_en.offset.to_le_bytes()),
            (0x0C, &self.vgt_shader_stages_en.value.to_le_bytes()),
            (0x10, &self.dispatch_modifier.to_le_bytes()),
            (0x14, &self.user_data_range.start.to_le_bytes()),
            (0x16, &self.user_data_range.end.to_le_bytes()),
            (0x18, &self.draw_modifier.0.to_le_bytes()),
            (0x20, &self.vgt_gs_out_prim_type.offset.to_le_bytes()),
            (0x24, &self.vgt_gs_out_prim_type.value.to_le_bytes()),
            (0x28, &self.ge_user_vgpr_en.offset.to_le_bytes()),
            (0x2C, &self.ge_user_vgpr_en.value.to_le_bytes()),
        ];
        for (at, value) in words {
            bytes::put(&mut out, at, value);
        }
        out
    }
}

/// Index into the direct-resource table (shader-containers.md §1.5). The value stored at an index is the first user SGPR of that
/// resource, or 0xFFFF when the program does not use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[repr(u8)]
pub enum DirectResourceType {
    GdsCounterRange = 0,
    ShaderResourceTable = 1,
    SubPtrFetchShader = 2,
    PtrSoBufferTable = 3,
    PtrInternalGlobalTable = 4,
    PtrExtendedUserData = 5,
    GsFlags = 6,
    GdsMemoryRange = 7,
    PtrVertexBufferTable = 8,
    StereoXOffset = 9,
    PtrVertexAttribDescTable = 10,
}

impl DirectResourceType {
    /// Every type, in table order.
    pub const ALL: [DirectResourceType; 11] = [
        DirectResourceType::GdsCounterRange,
        DirectResourceType::ShaderResourceTable,
        DirectResourceType::SubPtrFetchShader,
        DirectResourceType::PtrSoBufferTable,
        DirectResourceType::PtrInternalGlobalTable,
        DirectResourceType::PtrExtendedUserData,
        DirectResourceType::GsFlags,
        DirectResourceType::GdsMemoryRange,
        DirectResourceType::PtrVertexBufferTable,
        DirectResourceType::StereoXOffset,
        DirectResourceType::PtrVertexAttribDescTable,
    ];

    /// The type at table index `index`.
    pub fn from_index(index: usize) -> Option<Self> {
        Self::ALL.get(index).copied()
    }

    /// Name of the slot (shader-containers.md §1.5).
    pub fn name(self) -> &'static str {
        match self {
            DirectResourceType::GdsCounterRange => "GdsCounterRange",
            DirectResourceType::ShaderResourceTable => "ShaderResourceTable",
            DirectResourceType::SubPtrFetchShader => "SubPtrFetchShader",
            DirectResourceType::PtrSoBufferTable => "PtrSoBufferTable",
            DirectResourceType::PtrInternalGlobalTable => "PtrInternalGlobalTable",
            DirectResourceType::PtrExtendedUserData => "PtrExtendedUserData",
            DirectResourceType::GsFlags => "GsFlags",
            DirectResourceType::GdsMemoryRange => "GdsMemoryRange",
            DirectResourceType::PtrVertexBufferTable => "PtrVertexBufferTable",
            DirectResourceType::StereoXOffset => "StereoXOffset",
            DirectResourceType::PtrVertexAttribDescTable => "PtrVertexAttribDescTable",
        }
    }
}

/// A direct-resource table value meaning "not used".
pub const DIRECT_RESOURCE_UNUSED: u16 = 0xFFFF;

/// The four per-kind sharp tables of user data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[repr(u8)]
pub enum SharpKind {
    /// Read-only resources (T# or V#).
    ReadOnly = 0,
    /// Read-write resources.
    ReadWrite = 1,
    /// Samplers.
    Sampler = 2,
    /// Constant (and storage) buffers.
    ConstantBuffer = 3,
}

impl SharpKind {
    /// Every kind, in table order.
    pub const ALL: [SharpKind; 4] =
        [SharpKind::ReadOnly, SharpKind::ReadWrite, SharpKind::Sampler, SharpKind::ConstantBuffer];

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            SharpKind::ReadOnly => "read_only",
            SharpKind::ReadWrite => "read_write",
            SharpKind::Sampler => "sampler",
            SharpKind::ConstantBuffer => "constant_buffer",
        }
    }
}

/// A `ShaderSharp` entry: where a descriptor sits in the stage's user data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SharpEntry(pub u16);

impl SharpEntry {
    /// An `offset_dw` meaning "empty slot".
    pub const EMPTY_OFFSET: u16 = 0x7FFF;

    /// An entry for a descriptor at user-data dword `offset_dw`; `small` for a
    /// 4-dword descriptor (V#, S#), otherwise an 8-dword T#.
    pub fn new(offset_dw: u16, small: bool) -> Self {
        Self((offset_dw & 0x7FFF) | if small { 0x8000 } else { 0 })
    }

    /// Dword offset of the descriptor in the stage's user data (bits 0..14).
    pub fn offset_dw(self) -> u16 {
        self.0 & 0x7FFF
    }

    /// Bit 15: a 4-dword descriptor.
    pub fn is_small(self) -> bool {
        self.0 & 0x8000 != 0
    }

    /// Dwords the descriptor occupies.
    pub fn size_dw(self) -> u32 {
        if self.is_small() {
            4
        } else {
            8
        }
    }

    /// True for the 0x7FFF "no descriptor" slot.
    pub fn is_empty(self) -> bool {
        self.offset_dw() == Self::EMPTY_OFFSET
    }
}

/// `ShaderUserData` and its tables (shader-containers.md §1.5).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct UserData {
    /// Indexed by [`DirectResourceType`]: first user SGPR, or 0xFFFF.
    pub direct_resources: Vec<u16>,
    /// Indexed by [`SharpKind`].
    pub sharp_resources: [Vec<SharpEntry>; 4],
    /// Extended-user-data size in dwords.
    pub eud_size_dw: u16,
    /// Shader-resource-table size in dwords.
    pub srt_size_dw: u16,
}

impl UserData {
    /// The first user SGPR of a direct resource, if the program uses it.
    pub fn direct_resource(&self, ty: DirectResourceType) -> Option<u16> {
        self.direct_resources.get(ty as usize).copied().filter(|&sgpr| sgpr != DIRECT_RESOURCE_UNUSED)
    }

    /// The sharp table of one kind.
    pub fn sharps(&self, kind: SharpKind) -> &[SharpEntry] {
        self.sharp_resources.get(kind as usize).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// A `ShaderSemantic` (shader-containers.md §1.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Semantic(pub u32);

impl Semantic {
    /// A semantic with the common fields set and every flag clear.
    pub fn new(semantic: u8, hardware_mapping: u8, size_in_elements: u8) -> Self {
        Self(u32::from(semantic) | (u32::from(hardware_mapping) << 8) | (u32::from(size_in_elements & 0xF) << 16))
    }

    fn bits(self, shift: u32, width: u32) -> u32 {
        (self.0 >> shift) & ((1 << width) - 1)
    }

    /// Match key between producer and consumer (bits 0..7).
    pub fn semantic(self) -> u8 {
        self.bits(0, 8) as u8
    }
    /// Producer's parameter-export slot (bits 8..15).
    pub fn hardware_mapping(self) -> u8 {
        self.bits(8, 8) as u8
    }
    /// Bits 16..19.
    pub fn size_in_elements(self) -> u8 {
        self.bits(16, 4) as u8
    }
    /// Bits 20..21.
    pub fn is_f16(self) -> u8 {
        self.bits(20, 2) as u8
    }
    pub fn is_flat_shaded(self) -> bool {
        self.bits(22, 1) != 0
    }
    pub fn is_linear(self) -> bool {
        self.bits(23, 1) != 0
    }
    pub fn is_custom(self) -> bool {
        self.bits(24, 1) != 0
    }
    pub fn static_vb_index(self) -> bool {
        self.bits(25, 1) != 0
    }
    pub fn static_attribute(self) -> bool {
        self.bits(26, 1) != 0
    }
    /// Bits 28..29.
    pub fn default_value(self) -> u8 {
        self.bits(28, 2) as u8
    }
    /// Bits 30..31.
    pub fn default_value_hi(self) -> u8 {
        self.bits(30, 2) as u8
    }
}
