//! The PS5 AGC shader container: the `Shader` header that
//! `sceAgcCreateShader` relocates in place, its register tables, special
//! registers, user-data layout and semantics.
//!
//! Layout (shader-containers.md §1.2–§1.6): a 0x60-byte header whose six
//! pointer fields are *self-relative* offsets in the file (field address +
//! value = target, zero = none) and absolute guest addresses once the
//! container is created. Every table lies inside the `header_size` bytes that
//! start at the header.
//!
//! [`AgcShader::parse`] decodes a header blob, [`AgcShader::read`] decodes one
//! in guest memory; both validate the list of shader-containers.md §1.13.
//! [`create_shader`] does what `sceAgcCreateShader` does (§1.11) and
//! [`register_relocated`] accepts a header some earlier call already relocated.
//!
//! Where the sources disagree, this module follows the reference's preferred
//! reading:
//! - pointers are self-relative (each to its own field), never
//!   header-absolute (§0.2, §1.12);
//! - `num_output_semantics` is a u16; a u32 read would include
//!   `special_sizes_bytes` (§1.12);
//! - register-table offsets are read as u32, as every runtime does; the
//!   upper half is zero in all known data (§1.3);
//! - the program pair per type is the one §1.10 prefers, found anywhere in the
//!   SH table with HI directly after LO (§1.11, §1.13);
//! - creation validates everything first, refuses a second relocation,
//!   requires 256-byte aligned code and patches LO/HI as §3 recommends.

use crate::memory::{GuestMemory, ADDRESS_SPACE_END};

use super::bytes::{self, Bytes};
use super::ShaderError;

/// Register offsets the container format refers to.
///
/// Absolute register numbers are dword indices of the register's MMIO byte
/// address (SPI_SHADER_PGM_LO_PS at byte 0xB020 is 0x2C08). The container's
/// own tables hold offsets relative to a bank base ([`SH_REG_BASE`] and so on).
///
/// [`SH_REG_BASE`]: program_registers::SH_REG_BASE
pub mod program_registers {
    /// First register of the SH bank (byte 0xB000).
    pub const SH_REG_BASE: u32 = crate::regs::space::SH;
    /// First register of the context bank (byte 0x28000).
    pub const CONTEXT_REG_BASE: u32 = crate::regs::space::CONTEXT;
    /// First register of the UCONFIG bank (byte 0x30000).
    pub const UCONFIG_REG_BASE: u32 = crate::regs::space::UCONFIG;

    pub use crate::regs::gfx103::{
        COMPUTE_PGM_HI, COMPUTE_PGM_LO, SPI_SHADER_PGM_HI_ES, SPI_SHADER_PGM_HI_GS, SPI_SHADER_PGM_HI_HS,
        SPI_SHADER_PGM_HI_LS, SPI_SHADER_PGM_HI_PS, SPI_SHADER_PGM_HI_VS, SPI_SHADER_PGM_LO_ES, SPI_SHADER_PGM_LO_GS,
        SPI_SHADER_PGM_LO_HS, SPI_SHADER_PGM_LO_LS, SPI_SHADER_PGM_LO_PS, SPI_SHADER_PGM_LO_VS,
    };
}

use program_registers as pr;

/// `file_header` value: the bytes "1234".
pub const AGC_MAGIC: u32 = 0x3433_3231;
/// The only header version any implementation accepts.
pub const AGC_VERSION: u32 = 0x18;
/// Size of the `Shader` header including its tail padding.
pub const HEADER_LEN: u32 = 0x60;
/// Size of `ShaderSpecialRegs`.
pub const SPECIALS_LEN: u32 = 0x30;
/// Size of `ShaderUserData` including its tail padding.
pub const USER_DATA_LEN: u32 = 0x38;
/// Size of one `ShaderRegister` entry.
pub const REGISTER_ENTRY_LEN: u32 = 8;
/// Size of one `ShaderSemantic` entry.
pub const SEMANTIC_LEN: u32 = 4;
/// Size of one direct-resource or sharp entry.
pub const RESOURCE_ENTRY_LEN: u32 = 2;
/// Largest `header_size` this crate decodes. Real headers are a few hundred
/// bytes; the cap keeps a corrupt size field from making a reader allocate
/// gigabytes out of a large zero-filled region.
pub const MAX_HEADER_SIZE: u32 = 0x10_0000;
/// Required alignment of a code address (shader-containers.md §1.8).
pub const CODE_ALIGNMENT: u64 = 256;
/// Size of the `barefoot` trailer that ends `.shader_text`.
pub const TRAILER_LEN: u32 = 0x30;
/// Magic of the `.shader_text` trailer.
pub const BAREFOOT_MAGIC: [u8; 8] = *b"barefoot";

/// Byte offsets of the header fields (shader-containers.md §1.2).
pub mod offsets {
    pub const MAGIC: u32 = 0x00;
    pub const VERSION: u32 = 0x04;
    pub const USER_DATA: u32 = 0x08;
    pub const CODE: u32 = 0x10;
    pub const CX_REGISTERS: u32 = 0x18;
    pub const SH_REGISTERS: u32 = 0x20;
    pub const SPECIALS: u32 = 0x28;
    pub const INPUT_SEMANTICS: u32 = 0x30;
    pub const OUTPUT_SEMANTICS: u32 = 0x38;
    pub const HEADER_SIZE: u32 = 0x40;
    pub const SHADER_SIZE: u32 = 0x44;
    pub const EMBEDDED_CONSTANT_BUFFER_SIZE_DQW: u32 = 0x48;
    pub const TARGET: u32 = 0x4C;
    pub const NUM_INPUT_SEMANTICS: u32 = 0x50;
    pub const SCRATCH_SIZE_DW_PER_THREAD: u32 = 0x54;
    pub const NUM_OUTPUT_SEMANTICS: u32 = 0x56;
    pub const SPECIAL_SIZES_BYTES: u32 = 0x58;
    pub const TYPE: u32 = 0x5A;
    pub const NUM_CX_REGISTERS: u32 = 0x5B;
    pub const NUM_SH_REGISTERS: u32 = 0x5C;

    /// Byte offsets inside `ShaderUserData` (shader-containers.md §1.5).
    pub mod user_data {
        pub const DIRECT_RESOURCES: u32 = 0x00;
        pub const SHARP_RESOURCES: [u32; 4] = [0x08, 0x10, 0x18, 0x20];
        pub const EUD_SIZE_DW: u32 = 0x28;
        pub const SRT_SIZE_DW: u32 = 0x2A;
        pub const DIRECT_RESOURCE_COUNT: u32 = 0x2C;
        pub const SHARP_RESOURCE_COUNTS: u32 = 0x2E;
    }
}

/// The six top-level pointer fields, in relocation order, with their names.
pub const HEADER_POINTER_FIELDS: [(&str, u32); 6] = [
    ("user_data", offsets::USER_DATA),
    ("cx_registers", offsets::CX_REGISTERS),
    ("sh_registers", offsets::SH_REGISTERS),
    ("specials", offsets::SPECIALS),
    ("input_semantics", offsets::INPUT_SEMANTICS),
    ("output_semantics", offsets::OUTPUT_SEMANTICS),
];

const SHARP_FIELD_NAMES: [&str; 4] = [
    "user_data.sharp_resources[0]",
    "user_data.sharp_resources[1]",
    "user_data.sharp_resources[2]",
    "user_data.sharp_resources[3]",
];

// ---------------------------------------------------------------------------
// Types and stages
// ---------------------------------------------------------------------------

/// The container's program type, header byte 0x5A (shader-containers.md §1.10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[repr(u8)]
pub enum ShaderType {
    /// Compute.
    Compute = 0,
    /// Pixel.
    Pixel = 1,
    /// The NGG front end: vertex, or vertex and geometry merged, on the ES/GS path.
    Geometry = 2,
    /// Tessellation hull (LS and HS merged).
    Hull = 3,
    /// Front half of a geometry shader, fused later with a back half.
    GeometryFront = 4,
    /// Front half of a hull shader.
    HullFront = 5,
    /// Back half of a geometry shader.
    GeometryBack = 6,
    /// Back half of a hull shader.
    HullBack = 7,
    /// A callable function; no program registers.
    Function = 8,
}

impl ShaderType {
    /// Every type, in numeric order.
    pub const ALL: [ShaderType; 9] = [
        ShaderType::Compute,
        ShaderType::Pixel,
        ShaderType::Geometry,
        ShaderType::Hull,
        ShaderType::GeometryFront,
        ShaderType::HullFront,
        ShaderType::GeometryBack,
        ShaderType::HullBack,
        ShaderType::Function,
    ];

    /// The type for header byte 0x5A, if it is one.
    pub fn from_raw(raw: u8) -> Option<Self> {
        Self::ALL.get(usize::from(raw)).copied()
    }

    /// The header byte.
    pub fn raw(self) -> u8 {
        self as u8
    }

    /// The SDK name.
    pub fn name(self) -> &'static str {
        match self {
            ShaderType::Compute => "Compute",
            ShaderType::Pixel => "Pixel",
            ShaderType::Geometry => "Geometry",
            ShaderType::Hull => "Hull",
            ShaderType::GeometryFront => "GeometryFront",
            ShaderType::HullFront => "HullFront",
            ShaderType::GeometryBack => "GeometryBack",
            ShaderType::HullBack => "HullBack",
            ShaderType::Function => "Function",
        }
    }

    /// The hardware stage whose program registers receive this type's code
    /// address, or `None` for types creation does not patch (front halves and
    /// functions).
    ///
    /// The table shader-containers.md §1.10 prefers: it is the one that fits
    /// the fusion API, where back halves carry their own address in the GS/HS
    /// registers and fusion writes the front half's address into ES/LS.
    /// The other reading's pairs for types 4, 6 and 7 (and 0x8A/0x8B as
    /// "PGM_LO/HI_GS", which are RSRC1/RSRC2_GS) are not followed.
    pub fn program_stage(self) -> Option<ShaderStage> {
        match self {
            ShaderType::Compute => Some(ShaderStage::Cs),
            ShaderType::Pixel => Some(ShaderStage::Ps),
            ShaderType::Geometry => Some(ShaderStage::Es),
            ShaderType::Hull => Some(ShaderStage::Ls),
            ShaderType::GeometryBack => Some(ShaderStage::Gs),
            ShaderType::HullBack => Some(ShaderStage::Hs),
            ShaderType::GeometryFront | ShaderType::HullFront | ShaderType::Function => None,
        }
    }

    /// The program-address register pair creation patches, if any.
    pub fn program_registers(self) -> Option<ProgramRegisterPair> {
        self.program_stage().map(ShaderStage::program_registers)
    }

    /// The pipeline stage the program belongs to.
    pub fn pipeline_stage(self) -> PipelineStage {
        match self {
            ShaderType::Compute => PipelineStage::Compute,
            ShaderType::Pixel => PipelineStage::Pixel,
            ShaderType::Geometry | ShaderType::GeometryFront | ShaderType::GeometryBack => PipelineStage::Geometry,
            ShaderType::Hull | ShaderType::HullFront | ShaderType::HullBack => PipelineStage::Hull,
            ShaderType::Function => PipelineStage::Function,
        }
    }

    /// Which half of a fusable program this is, if it is one.
    pub fn half(self) -> Option<ShaderHalf> {
        match self {
            ShaderType::GeometryFront | ShaderType::HullFront => Some(ShaderHalf::Front),
            ShaderType::GeometryBack | ShaderType::HullBack => Some(ShaderHalf::Back),
            _ => None,
        }
    }
}

/// The pipeline stage a container type belongs to (shader-containers.md §1.10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum PipelineStage {
    /// Compute dispatch.
    Compute,
    /// Pixel shading.
    Pixel,
    /// The NGG vertex/primitive front end (vertex, or vertex plus geometry).
    Geometry,
    /// The tessellation hull (LS + HS).
    Hull,
    /// A function called from another program.
    Function,
}

/// Front or back half of a program that `sceAgcFuseShaderHalves` combines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum ShaderHalf {
    /// Runs first; its address goes into ES or LS when fused.
    Front,
    /// Runs second; carries its own address in GS or HS.
    Back,
}

/// A hardware shader stage, named after its program-address registers
/// (`SPI_SHADER_PGM_LO_<stage>`, `COMPUTE_PGM_LO` for Cs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum ShaderStage {
    Ps,
    Vs,
    Gs,
    Es,
    Hs,
    Ls,
    Cs,
}

impl ShaderStage {
    /// Every stage.
    pub const ALL: [ShaderStage; 7] = [
        ShaderStage::Ps,
        ShaderStage::Vs,
        ShaderStage::Gs,
        ShaderStage::Es,
        ShaderStage::Hs,
        ShaderStage::Ls,
        ShaderStage::Cs,
    ];

    /// The stage's program-address registers.
    pub fn program_registers(self) -> ProgramRegisterPair {
        let (lo, hi) = match self {
            ShaderStage::Ps => (pr::SPI_SHADER_PGM_LO_PS, pr::SPI_SHADER_PGM_HI_PS),
            ShaderStage::Vs => (pr::SPI_SHADER_PGM_LO_VS, pr::SPI_SHADER_PGM_HI_VS),
            ShaderStage::Gs => (pr::SPI_SHADER_PGM_LO_GS, pr::SPI_SHADER_PGM_HI_GS),
            ShaderStage::Es => (pr::SPI_SHADER_PGM_LO_ES, pr::SPI_SHADER_PGM_HI_ES),
            ShaderStage::Hs => (pr::SPI_SHADER_PGM_LO_HS, pr::SPI_SHADER_PGM_HI_HS),
            ShaderStage::Ls => (pr::SPI_SHADER_PGM_LO_LS, pr::SPI_SHADER_PGM_HI_LS),
            ShaderStage::Cs => (pr::COMPUTE_PGM_LO, pr::COMPUTE_PGM_HI),
        };
        ProgramRegisterPair { lo, hi }
    }

    /// The stage whose program LO register is `register` (absolute number).
    pub fn from_program_lo(register: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.program_registers().lo == register)
    }

    /// The stage whose program HI register is `register` (absolute number).
    pub fn from_program_hi(register: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.program_registers().hi == register)
    }

    /// Short lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            ShaderStage::Ps => "ps",
            ShaderStage::Vs => "vs",
            ShaderStage::Gs => "gs",
            ShaderStage::Es => "es",
            ShaderStage::Hs => "hs",
            ShaderStage::Ls => "ls",
            ShaderStage::Cs => "cs",
        }
    }
}

/// A program-address register pair, as absolute register numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ProgramRegisterPair {
    /// Address bits 8..39.
    pub lo: u32,
    /// Address bits 40..47 in its low byte.
    pub hi: u32,
}

impl ProgramRegisterPair {
    /// LO as an SH-bank offset, the form the container's table uses.
    pub fn sh_lo(self) -> u32 {
        self.lo.wrapping_sub(pr::SH_REG_BASE)
    }

    /// HI as an SH-bank offset.
    pub fn sh_hi(self) -> u32 {
        self.hi.wrapping_sub(pr::SH_REG_BASE)
    }
}

/// The code address a LO/HI pair encodes: LO holds bits 8..39, HI's low byte
/// bits 40..47 (shader-containers.md §2.8).
#[inline]
pub fn program_address(lo: u32, hi: u32) -> u64 {
    (u64::from(lo) << 8) | (u64::from(hi & 0xFF) << 40)
}

/// The LO value and HI low byte that encode `address`.
#[inline]
pub fn encode_program_address(address: u64) -> (u32, u8) {
    ((address >> 8) as u32, ((address >> 40) & 0xFF) as u8)
}

// ---------------------------------------------------------------------------
// Plain data
// ---------------------------------------------------------------------------

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

    fn decode(bytes: &[u8], at: u64) -> Self {
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
    fn decode(b: &[u8]) -> Self {
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

/// The raw 0x60-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AgcHeader {
    pub magic: u32,
    pub version: u32,
    /// Raw pointer fields as stored: self-relative offsets before creation,
    /// absolute addresses after.
    pub user_data: u64,
    /// 0 in the file; the code address after creation.
    pub code: u64,
    pub cx_registers: u64,
    pub sh_registers: u64,
    pub specials: u64,
    pub input_semantics: u64,
    pub output_semantics: u64,
    pub header_size: u32,
    pub shader_size: u32,
    pub embedded_constant_buffer_size_dqw: u32,
    pub target: u32,
    pub num_input_semantics: u32,
    pub scratch_size_dw_per_thread: u16,
    /// A u16: reading a u32 here also picks up `special_sizes_bytes`
    /// (shader-containers.md §1.12).
    pub num_output_semantics: u16,
    pub special_sizes_bytes: u16,
    pub shader_type: u8,
    pub num_cx_registers: u8,
    pub num_sh_registers: u8,
    pub padding: [u8; 3],
}

impl AgcHeader {
    /// Decodes the first 0x60 bytes of `bytes` (no validation besides length).
    pub fn decode(bytes: &[u8]) -> Result<Self, ShaderError> {
        let b = Bytes::new(bytes);
        let head = b.sub("AGC header", 0, u64::from(HEADER_LEN))?;
        let u16_ = |o: u32| bytes::u16_at(head, u64::from(o)).unwrap_or(0);
        let u32_ = |o: u32| bytes::u32_at(head, u64::from(o)).unwrap_or(0);
        let u64_ = |o: u32| bytes::u64_at(head, u64::from(o)).unwrap_or(0);
        let u8_ = |o: u32| bytes::u8_at(head, u64::from(o)).unwrap_or(0);
        Ok(Self {
            magic: u32_(offsets::MAGIC),
            version: u32_(offsets::VERSION),
            user_data: u64_(offsets::USER_DATA),
            code: u64_(offsets::CODE),
            cx_registers: u64_(offsets::CX_REGISTERS),
            sh_registers: u64_(offsets::SH_REGISTERS),
            specials: u64_(offsets::SPECIALS),
            input_semantics: u64_(offsets::INPUT_SEMANTICS),
            output_semantics: u64_(offsets::OUTPUT_SEMANTICS),
            header_size: u32_(offsets::HEADER_SIZE),
            shader_size: u32_(offsets::SHADER_SIZE),
            embedded_constant_buffer_size_dqw: u32_(offsets::EMBEDDED_CONSTANT_BUFFER_SIZE_DQW),
            target: u32_(offsets::TARGET),
            num_input_semantics: u32_(offsets::NUM_INPUT_SEMANTICS),
            scratch_size_dw_per_thread: u16_(offsets::SCRATCH_SIZE_DW_PER_THREAD),
            num_output_semantics: u16_(offsets::NUM_OUTPUT_SEMANTICS),
            special_sizes_bytes: u16_(offsets::SPECIAL_SIZES_BYTES),
            shader_type: u8_(offsets::TYPE),
            num_cx_registers: u8_(offsets::NUM_CX_REGISTERS),
            num_sh_registers: u8_(offsets::NUM_SH_REGISTERS),
            padding: [u8_(0x5D), u8_(0x5E), u8_(0x5F)],
        })
    }

    /// The 0x60 header bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN as usize] {
        let mut out = [0u8; HEADER_LEN as usize];
        let mut put = |o: u32, v: &[u8]| {
            bytes::put(&mut out, o as usize, v);
        };
        put(offsets::MAGIC, &self.magic.to_le_bytes());
        put(offsets::VERSION, &self.version.to_le_bytes());
        put(offsets::USER_DATA, &self.user_data.to_le_bytes());
        put(offsets::CODE, &self.code.to_le_bytes());
        put(offsets::CX_REGISTERS, &self.cx_registers.to_le_bytes());
        put(offsets::SH_REGISTERS, &self.sh_registers.to_le_bytes());
        put(offsets::SPECIALS, &self.specials.to_le_bytes());
        put(offsets::INPUT_SEMANTICS, &self.input_semantics.to_le_bytes());
        put(offsets::OUTPUT_SEMANTICS, &self.output_semantics.to_le_bytes());
        put(offsets::HEADER_SIZE, &self.header_size.to_le_bytes());
        put(offsets::SHADER_SIZE, &self.shader_size.to_le_bytes());
        put(offsets::EMBEDDED_CONSTANT_BUFFER_SIZE_DQW, &self.embedded_constant_buffer_size_dqw.to_le_bytes());
        put(offsets::TARGET, &self.target.to_le_bytes());
        put(offsets::NUM_INPUT_SEMANTICS, &self.num_input_semantics.to_le_bytes());
        put(offsets::SCRATCH_SIZE_DW_PER_THREAD, &self.scratch_size_dw_per_thread.to_le_bytes());
        put(offsets::NUM_OUTPUT_SEMANTICS, &self.num_output_semantics.to_le_bytes());
        put(offsets::SPECIAL_SIZES_BYTES, &self.special_sizes_bytes.to_le_bytes());
        put(offsets::TYPE, &[self.shader_type]);
        put(offsets::NUM_CX_REGISTERS, &[self.num_cx_registers]);
        put(offsets::NUM_SH_REGISTERS, &[self.num_sh_registers]);
        put(0x5D, &self.padding);
        out
    }

    /// The raw value of the pointer field at header offset `offset`.
    pub fn pointer_field(&self, offset: u32) -> Option<u64> {
        match offset {
            offsets::USER_DATA => Some(self.user_data),
            offsets::CX_REGISTERS => Some(self.cx_registers),
            offsets::SH_REGISTERS => Some(self.sh_registers),
            offsets::SPECIALS => Some(self.specials),
            offsets::INPUT_SEMANTICS => Some(self.input_semantics),
            offsets::OUTPUT_SEMANTICS => Some(self.output_semantics),
            _ => None,
        }
    }
}

/// Where each pointer field resolves, as byte offsets from the header start
/// (`None` for a null pointer). Zero-count tables may resolve to
/// `header_size` (one past the end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AgcLayout {
    pub user_data: Option<u32>,
    pub cx_registers: Option<u32>,
    pub sh_registers: Option<u32>,
    pub specials: Option<u32>,
    pub input_semantics: Option<u32>,
    pub output_semantics: Option<u32>,
    /// Inside user data.
    pub direct_resources: Option<u32>,
    /// Inside user data, indexed by [`SharpKind`].
    pub sharp_resources: [Option<u32>; 4],
}

impl AgcLayout {
    /// The resolved target of the top-level pointer at header offset `field`.
    pub fn header_pointer(&self, field: u32) -> Option<u32> {
        match field {
            offsets::USER_DATA => self.user_data,
            offsets::CX_REGISTERS => self.cx_registers,
            offsets::SH_REGISTERS => self.sh_registers,
            offsets::SPECIALS => self.specials,
            offsets::INPUT_SEMANTICS => self.input_semantics,
            offsets::OUTPUT_SEMANTICS => self.output_semantics,
            _ => None,
        }
    }
}

/// How a header's pointer fields are to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PointerMode {
    /// As stored in the file: field address + value.
    SelfRelative,
    /// After creation: absolute guest addresses.
    Absolute,
}

/// A decoded AGC shader container.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AgcShader {
    header_address: u64,
    relocated: bool,
    header: AgcHeader,
    shader_type: ShaderType,
    layout: AgcLayout,
    context_registers: Vec<RegisterEntry>,
    sh_registers: Vec<RegisterEntry>,
    specials: Option<SpecialRegisters>,
    user_data: Option<UserData>,
    input_semantics: Vec<Semantic>,
    output_semantics: Vec<Semantic>,
    /// Index of the program LO entry in `sh_registers`.
    program_index: Option<u32>,
}

/// Validates one pointer field and returns its target as a header offset.
struct Resolver {
    base_address: u64,
    header_size: u32,
    mode: PointerMode,
}

impl Resolver {
    fn resolve(&self, field: &'static str, field_offset: u64, raw: u64) -> Result<Option<u64>, ShaderError> {
        if raw == 0 {
            return Ok(None);
        }
        let target = match self.mode {
            PointerMode::SelfRelative => field_offset.checked_add(raw),
            PointerMode::Absolute => raw.checked_sub(self.base_address),
        };
        match target {
            Some(t) if t <= u64::from(self.header_size) => Ok(Some(t)),
            _ => {
                Err(ShaderError::PointerOutOfBounds { field, offset: field_offset, raw, header_size: self.header_size })
            }
        }
    }

    /// The bytes of a table of `count` entries of `entry_size`, or `None` when
    /// the count is zero (a zero-count table is never read).
    fn table<'a>(
        &self,
        blob: &'a [u8],
        field: &'static str,
        field_offset: u64,
        target: Option<u64>,
        count: u64,
        entry_size: u64,
    ) -> Result<Option<&'a [u8]>, ShaderError> {
        if count == 0 {
            return Ok(None);
        }
        let Some(target) = target else {
            return Err(ShaderError::NullTable { field, offset: field_offset, count });
        };
        let out_of_bounds = ShaderError::TableOutOfBounds {
            field,
            offset: field_offset,
            target,
            count,
            entry_size,
            header_size: self.header_size,
        };
        let len = count.checked_mul(entry_size).ok_or(out_of_bounds)?;
        match target.checked_add(len) {
            Some(end) if end <= u64::from(self.header_size) => {}
            _ => return Err(out_of_bounds),
        }
        bytes::sub(blob, target, len).map(Some).ok_or(out_of_bounds)
    }
}

fn u16_entries(table: Option<&[u8]>) -> Vec<u16> {
    table.map(|t| t.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()).unwrap_or_default()
}

fn u32_entries(table: Option<&[u8]>) -> Vec<u32> {
    table.map(|t| t.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()).unwrap_or_default()
}

fn register_entries(table: Option<&[u8]>) -> Vec<RegisterEntry> {
    table
        .map(|t| t.chunks_exact(REGISTER_ENTRY_LEN as usize).map(|c| RegisterEntry::decode(c, 0)).collect())
        .unwrap_or_default()
}

fn to_u32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// Checks magic, version, the 0x60-byte minimum and `header_size` against
/// `available` bytes; returns the header.
fn check_header(bytes: &[u8], available: u64) -> Result<AgcHeader, ShaderError> {
    let header = AgcHeader::decode(bytes)?;
    if header.magic != AGC_MAGIC {
        return Err(ShaderError::BadMagic {
            what: "AGC header",
            offset: u64::from(offsets::MAGIC),
            found: header.magic,
            expected: AGC_MAGIC,
        });
    }
    if header.version != AGC_VERSION {
        return Err(ShaderError::BadVersion {
            offset: u64::from(offsets::VERSION),
            found: header.version,
            expected: AGC_VERSION,
        });
    }
    let offset = u64::from(offsets::HEADER_SIZE);
    if header.header_size < HEADER_LEN {
        return Err(ShaderError::HeaderSizeTooSmall { offset, header_size: header.header_size });
    }
    if header.header_size > MAX_HEADER_SIZE {
        return Err(ShaderError::HeaderSizeTooLarge {
            offset,
            header_size: header.header_size,
            limit: MAX_HEADER_SIZE,
        });
    }
    if u64::from(header.header_size) > available {
        return Err(ShaderError::HeaderSizeExceedsBlob { offset, header_size: header.header_size, available });
    }
    Ok(header)
}

impl AgcShader {
    /// Decodes a header blob (the `.shader_header` section, or header bytes
    /// copied from guest memory) that starts at guest address `base_address`.
    ///
    /// A header whose code field is 0 is read as the file stores it
    /// (self-relative pointers); one with a code address as created
    /// (absolute pointers, which must point into `[base_address,
    /// base_address + header_size]`). Bytes past `header_size` are ignored.
    pub fn parse(bytes: &[u8], base_address: u64) -> Result<Self, ShaderError> {
        let mode = match bytes::u64_at(bytes, u64::from(offsets::CODE)) {
            Some(code) if code != 0 => PointerMode::Absolute,
            _ => PointerMode::SelfRelative,
        };
        Self::decode(bytes, base_address, mode)
    }

    /// Decodes the container whose header is at `header_address` in guest
    /// memory, reading only the `header_size` bytes it declares.
    pub fn read(mem: &dyn GuestMemory, header_address: u64) -> Result<Self, ShaderError> {
        let blob = read_header_blob(mem, header_address)?;
        Self::parse(&blob, header_address)
    }

    pub(crate) fn decode(bytes: &[u8], base_address: u64, mode: PointerMode) -> Result<Self, ShaderError> {
        let header = check_header(bytes, bytes.len() as u64)?;
        let shader_type = ShaderType::from_raw(header.shader_type)
            .ok_or(ShaderError::BadType { offset: u64::from(offsets::TYPE), found: header.shader_type })?;
        let blob = bytes::sub(bytes, 0, u64::from(header.header_size)).unwrap_or(&[]);
        let r = Resolver { base_address, header_size: header.header_size, mode };

        let field = |name: &'static str, off: u32| -> Result<Option<u64>, ShaderError> {
            r.resolve(name, u64::from(off), header.pointer_field(off).unwrap_or(0))
        };
        let user_data_at = field("user_data", offsets::USER_DATA)?;
        let cx_at = field("cx_registers", offsets::CX_REGISTERS)?;
        let sh_at = field("sh_registers", offsets::SH_REGISTERS)?;
        let specials_at = field("specials", offsets::SPECIALS)?;
        let inputs_at = field("input_semantics", offsets::INPUT_SEMANTICS)?;
        let outputs_at = field("output_semantics", offsets::OUTPUT_SEMANTICS)?;

        let reg = u64::from(REGISTER_ENTRY_LEN);
        let cx = r.table(
            blob,
            "cx_registers",
            u64::from(offsets::CX_REGISTERS),
            cx_at,
            u64::from(header.num_cx_registers),
            reg,
        )?;
        let sh = r.table(
            blob,
            "sh_registers",
            u64::from(offsets::SH_REGISTERS),
            sh_at,
            u64::from(header.num_sh_registers),
            reg,
        )?;
        let sem = u64::from(SEMANTIC_LEN);
        let inputs = r.table(
            blob,
            "input_semantics",
            u64::from(offsets::INPUT_SEMANTICS),
            inputs_at,
            u64::from(header.num_input_semantics),
            sem,
        )?;
        let outputs = r.table(
            blob,
            "output_semantics",
            u64::from(offsets::OUTPUT_SEMANTICS),
            outputs_at,
            u64::from(header.num_output_semantics),
            sem,
        )?;
        // Fixed-size structures: one entry when the pointer is set.
        let specials = r
            .table(
                blob,
                "specials",
                u64::from(offsets::SPECIALS),
                specials_at,
                u64::from(specials_at.is_some()),
                u64::from(SPECIALS_LEN),
            )?
            .map(SpecialRegisters::decode);
        let user_data_bytes = r.table(
            blob,
            "user_data",
            u64::from(offsets::USER_DATA),
            user_data_at,
            u64::from(user_data_at.is_some()),
            u64::from(USER_DATA_LEN),
        )?;

        let mut layout = AgcLayout {
            user_data: user_data_at.map(to_u32),
            cx_registers: cx_at.map(to_u32),
            sh_registers: sh_at.map(to_u32),
            specials: specials_at.map(to_u32),
            input_semantics: inputs_at.map(to_u32),
            output_semantics: outputs_at.map(to_u32),
            ..AgcLayout::default()
        };

        let user_data = match (user_data_bytes, user_data_at) {
            (Some(ud), Some(ud_at)) => Some(decode_user_data(blob, ud, ud_at, &r, &mut layout)?),
            _ => None,
        };

        let sh_registers = register_entries(sh);
        let program_index = match shader_type.program_registers() {
            Some(pair) => Some(find_program_pair(&sh_registers, shader_type, pair)?),
            None => None,
        };

        Ok(Self {
            header_address: base_address,
            relocated: mode == PointerMode::Absolute,
            header,
            shader_type,
            layout,
            context_registers: register_entries(cx),
            sh_registers,
            specials,
            user_data,
            input_semantics: u32_entries(inputs).into_iter().map(Semantic).collect(),
            output_semantics: u32_entries(outputs).into_iter().map(Semantic).collect(),
            program_index,
        })
    }

    /// Guest address of the header (the `base_address` given to [`parse`](Self::parse)).
    pub fn header_address(&self) -> u64 {
        self.header_address
    }

    /// True when the pointers were read as absolute addresses (the header
    /// has been through creation).
    pub fn is_relocated(&self) -> bool {
        self.relocated
    }

    /// The raw header fields.
    pub fn header(&self) -> &AgcHeader {
        &self.header
    }

    /// Resolved table positions.
    pub fn layout(&self) -> &AgcLayout {
        &self.layout
    }

    /// The program type.
    pub fn shader_type(&self) -> ShaderType {
        self.shader_type
    }

    /// The hardware stage whose program registers receive the code address.
    pub fn stage(&self) -> Option<ShaderStage> {
        self.shader_type.program_stage()
    }

    /// The pipeline stage.
    pub fn pipeline_stage(&self) -> PipelineStage {
        self.shader_type.pipeline_stage()
    }

    /// Context-register entries, in table order.
    pub fn context_registers(&self) -> &[RegisterEntry] {
        &self.context_registers
    }

    /// SH-register entries, in table order (the program pair included).
    pub fn sh_registers(&self) -> &[RegisterEntry] {
        &self.sh_registers
    }

    /// `ShaderSpecialRegs`, when the pointer is set.
    pub fn specials(&self) -> Option<&SpecialRegisters> {
        self.specials.as_ref()
    }

    /// User data, when the pointer is set.
    pub fn user_data(&self) -> Option<&UserData> {
        self.user_data.as_ref()
    }

    /// User-data dwords the program uses (from the specials).
    pub fn user_data_range(&self) -> Option<UserDataRange> {
        self.specials.map(|s| s.user_data_range)
    }

    /// Input semantics.
    pub fn input_semantics(&self) -> &[Semantic] {
        &self.input_semantics
    }

    /// Output semantics.
    pub fn output_semantics(&self) -> &[Semantic] {
        &self.output_semantics
    }

    /// The code address stored at creation, `None` before.
    pub fn code_address(&self) -> Option<u64> {
        (self.header.code != 0).then_some(self.header.code)
    }

    /// Byte size of the code blob (`.shader_text`, trailer included).
    pub fn code_length(&self) -> u32 {
        self.header.shader_size
    }

    /// Scratch dwords per thread.
    pub fn scratch_size_dw_per_thread(&self) -> u16 {
        self.header.scratch_size_dw_per_thread
    }

    /// Total size of the header blob.
    pub fn header_size(&self) -> u32 {
        self.header.header_size
    }

    /// Guest range `(start, len)` holding the header and all its tables.
    pub fn extent(&self) -> (u64, u64) {
        (self.header_address, u64::from(self.header.header_size))
    }

    /// The program-address register pair for the container's type.
    pub fn program_registers(&self) -> Option<ProgramRegisterPair> {
        self.shader_type.program_registers()
    }

    /// Index of the program LO entry in [`sh_registers`](Self::sh_registers)
    /// (HI is the next one).
    pub fn program_register_index(&self) -> Option<usize> {
        self.program_index.map(|i| i as usize)
    }

    /// The address the SH table's program pair encodes (the code address
    /// once created; 0 in a fresh file).
    pub fn program_address(&self) -> Option<u64> {
        let i = self.program_register_index()?;
        let lo = self.sh_registers.get(i)?;
        let hi = self.sh_registers.get(i.checked_add(1)?)?;
        Some(program_address(lo.value, hi.value))
    }

    /// The guest address of a header offset.
    pub fn address_of(&self, header_offset: u32) -> u64 {
        self.header_address.wrapping_add(u64::from(header_offset))
    }

    /// The `.shader_text` trailer, read from guest memory at the code
    /// address; `None` when the container has no code address or the last
    /// 0x30 bytes of the code blob are not a `barefoot` trailer.
    pub fn read_trailer(&self, mem: &dyn GuestMemory) -> Result<Option<BarefootTrailer>, ShaderError> {
        let Some(code) = self.code_address() else {
            return Ok(None);
        };
        BarefootTrailer::read(mem, code, self.header.shader_size)
    }

    /// Byte length of the program proper: the trailer's program length
    /// when a trailer is present and consistent, otherwise `shader_size`
    /// (shader-containers.md §1.13).
    pub fn program_length(&self, trailer: Option<&BarefootTrailer>) -> u32 {
        let limit = self.header.shader_size.saturating_sub(TRAILER_LEN);
        match trailer {
            Some(t) if t.program_length <= limit => t.program_length,
            _ => self.header.shader_size,
        }
    }
}

fn decode_user_data(
    blob: &[u8],
    ud: &[u8],
    ud_at: u64,
    r: &Resolver,
    layout: &mut AgcLayout,
) -> Result<UserData, ShaderError> {
    use offsets::user_data as o;
    let field_offset = |o: u32| ud_at.saturating_add(u64::from(o));
    let raw = |o: u32| bytes::u64_at(ud, u64::from(o)).unwrap_or(0);
    let count = |o: u32| bytes::u16_at(ud, u64::from(o)).unwrap_or(0);

    let direct_at =
        r.resolve("user_data.direct_resources", field_offset(o::DIRECT_RESOURCES), raw(o::DIRECT_RESOURCES))?;
    let direct = r.table(
        blob,
        "user_data.direct_resources",
        field_offset(o::DIRECT_RESOURCES),
        direct_at,
        u64::from(count(o::DIRECT_RESOURCE_COUNT)),
        u64::from(RESOURCE_ENTRY_LEN),
    )?;
    layout.direct_resources = direct_at.map(to_u32);

    let mut sharp_resources: [Vec<SharpEntry>; 4] = Default::default();
    for (kind, (&fo, name)) in o::SHARP_RESOURCES.iter().zip(SHARP_FIELD_NAMES).enumerate() {
        let at = r.resolve(name, field_offset(fo), raw(fo))?;
        let n = count(o::SHARP_RESOURCE_COUNTS.saturating_add(2 * kind as u32));
        let table = r.table(blob, name, field_offset(fo), at, u64::from(n), u64::from(RESOURCE_ENTRY_LEN))?;
        if let Some(slot) = layout.sharp_resources.get_mut(kind) {
            *slot = at.map(to_u32);
        }
        if let Some(slot) = sharp_resources.get_mut(kind) {
            *slot = u16_entries(table).into_iter().map(SharpEntry).collect();
        }
    }
    Ok(UserData {
        direct_resources: u16_entries(direct),
        sharp_resources,
        eud_size_dw: count(o::EUD_SIZE_DW),
        srt_size_dw: count(o::SRT_SIZE_DW),
    })
}

/// The first SH entry holding the type's LO register, which must be directly
/// followed by HI (shader-containers.md §1.11 and §1.13;
/// sh\[0\]/sh\[1\] in every observed container).
fn find_program_pair(
    sh: &[RegisterEntry],
    shader_type: ShaderType,
    pair: ProgramRegisterPair,
) -> Result<u32, ShaderError> {
    let index = sh.iter().position(|e| e.offset == pair.sh_lo()).ok_or(ShaderError::MissingProgramRegister {
        shader_type,
        offset: u64::from(offsets::SH_REGISTERS),
        lo: pair.sh_lo(),
    })?;
    let next = index.saturating_add(1);
    let found = sh.get(next).map(|e| e.offset);
    if found != Some(pair.sh_hi()) {
        return Err(ShaderError::ProgramHiNotNext {
            shader_type,
            index: index as u32,
            next: next as u32,
            found,
            hi: pair.sh_hi(),
        });
    }
    Ok(index as u32)
}

/// Reads the `header_size` bytes of the header at `header_address`, after
/// checking magic, version and size from its first 0x60 bytes.
pub(crate) fn read_header_blob(mem: &dyn GuestMemory, header_address: u64) -> Result<Vec<u8>, ShaderError> {
    let mut head = [0u8; HEADER_LEN as usize];
    mem.read_bytes(header_address, &mut head).map_err(|source| ShaderError::Memory {
        what: "AGC header",
        address: header_address,
        source,
    })?;
    let header = check_header(&head, u64::from(MAX_HEADER_SIZE))?;
    let mut blob = vec![0u8; header.header_size as usize];
    mem.read_bytes(header_address, &mut blob).map_err(|source| ShaderError::Memory {
        what: "AGC header tables",
        address: header_address,
        source,
    })?;
    Ok(blob)
}

mod creation;
mod trailer;

pub use creation::*;
pub use trailer::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semantic_bitfields() {
        let s = Semantic(0xD7D3_010F);
        assert_eq!(s.semantic(), 15);
        assert_eq!(s.hardware_mapping(), 1);
        assert_eq!(s.size_in_elements(), 3);
        assert_eq!(s.is_f16(), 1);
        assert!(s.is_flat_shaded() && s.is_linear() && s.is_custom());
        assert!(s.static_vb_index() && s.static_attribute());
        assert_eq!(s.default_value(), 1);
        assert_eq!(s.default_value_hi(), 3);
        assert_eq!(Semantic::new(16, 2, 4).0, 0x0004_0210);
    }

    #[test]
    fn draw_modifier_and_sharp_bits() {
        let d = DrawModifier(0x1_0000_0000 | (0x55 << 9) | (1 << 8) | (5 << 5) | 0b11010);
        assert!(!d.enbl_start_vertex_offset() && d.enbl_start_index_offset());
        assert!(!d.enbl_start_instance_offset() && d.enbl_draw_index() && d.enbl_user_vgprs());
        assert_eq!(d.render_target_slice_offset(), 5);
        assert!(d.fuse_draws() && d.is_default());
        assert_eq!(d.compiler_flags(), 0x55);
        let e = SharpEntry::new(0x7FFF, false);
        assert!(e.is_empty() && !e.is_small() && e.size_dw() == 8);
        assert_eq!(SharpEntry::new(4, true), SharpEntry(0x8004));
    }

    #[test]
    fn program_address_round_trip() {
        let address = 0xFF12_3456_7800;
        let (lo, hi) = encode_program_address(address);
        assert_eq!((lo, hi), (0x1234_5678, 0xFF));
        assert_eq!(program_address(lo, 0xFFFF_FF00 | u32::from(hi)), address);
        for stage in ShaderStage::ALL {
            let p = stage.program_registers();
            assert_eq!(p.hi, p.lo + 1);
            assert_eq!(ShaderStage::from_program_lo(p.lo), Some(stage));
        }
        assert_eq!(ShaderStage::Ps.program_registers().sh_lo(), 0x008);
        assert_eq!(ShaderStage::Cs.program_registers().sh_lo(), 0x20C);
    }

    #[test]
    fn header_bytes_round_trip() {
        let h = AgcHeader {
            magic: AGC_MAGIC,
            version: AGC_VERSION,
            user_data: 1,
            code: 2,
            cx_registers: 3,
            sh_registers: 4,
            specials: 5,
            input_semantics: 6,
            output_semantics: 7,
            header_size: 8,
            shader_size: 9,
            embedded_constant_buffer_size_dqw: 10,
            target: 11,
            num_input_semantics: 12,
            scratch_size_dw_per_thread: 13,
            num_output_semantics: 14,
            special_sizes_bytes: 15,
            shader_type: 16,
            num_cx_registers: 17,
            num_sh_registers: 18,
            padding: [19, 20, 21],
        };
        assert_eq!(AgcHeader::decode(&h.to_bytes()), Ok(h));
        let t = BarefootTrailer { hash: 1, program_length: 0x10C, sl00_length: 0x36, ..Default::default() };
        assert_eq!(BarefootTrailer::decode(&t.to_bytes()), Some(t));
        assert_eq!(BarefootTrailer::decode(&[0u8; 0x30]), None);
    }
}
