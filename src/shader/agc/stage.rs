//! The container's program types, pipeline stages and program register
//! pairs (shader-containers.md §1.10).

use super::*;

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
