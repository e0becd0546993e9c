//! The hardware shader stages of each family and the registers that bind
//! and configure a program on each: the program address pair (PGM_LO/HI,
//! the code address >> 8), the RSRC registers and the user-data run.
//! The tables are generated from the register maps
//! ([`super::generated::stages`]): gfx7 (PS4) has six graphics stages
//! (PS, VS, GS, ES, HS, LS) with 16 user-data registers each; gfx10.3 has
//! 32 per stage and runs ES and LS programs as merged stages, with GS's and
//! HS's RSRC and user-data registers.
//!
//! ```
//! use pm4core::regs::stages::{program_register, stage_registers, HardwareStage};
//! use pm4core::regs::{gfx7, ProgramRegister};
//! use pm4core::GpuFamily;
//!
//! let ps = stage_registers(GpuFamily::Gfx7, HardwareStage::Ps).unwrap();
//! assert_eq!((ps.pgm_lo, ps.user_data, ps.user_data_count), (gfx7::SPI_SHADER_PGM_LO_PS, Some(gfx7::SPI_SHADER_USER_DATA_PS_0), 16));
//! // A SET_SH_REG of SPI_SHADER_PGM_HI_ES binds the ES program on gfx7.
//! assert_eq!(
//!     program_register(GpuFamily::Gfx7, gfx7::SPI_SHADER_PGM_HI_ES),
//!     Some((HardwareStage::Es, ProgramRegister::Hi))
//! );
//! ```

use std::fmt;

use super::db::GpuFamily;
use super::generated;

/// A hardware shader stage: the register group a program is bound through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum HardwareStage {
    /// Pixel shader (SPI_SHADER_*_PS).
    Ps,
    /// Vertex shader, the last stage before the rasteriser (SPI_SHADER_*_VS).
    Vs,
    /// Geometry shader (SPI_SHADER_*_GS).
    Gs,
    /// Export shader: the vertex stage ahead of a GS (SPI_SHADER_*_ES).
    Es,
    /// Hull shader (SPI_SHADER_*_HS).
    Hs,
    /// Local shader: the vertex stage ahead of an HS (SPI_SHADER_*_LS).
    Ls,
    /// Compute (COMPUTE_PGM_*, COMPUTE_USER_DATA_*).
    Cs,
}

impl HardwareStage {
    /// Every stage, graphics first.
    pub const ALL: [HardwareStage; 7] = [Self::Ps, Self::Vs, Self::Gs, Self::Es, Self::Hs, Self::Ls, Self::Cs];

    /// Lower-case name (`ps`, ..., `cs`).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Ps => "ps",
            Self::Vs => "vs",
            Self::Gs => "gs",
            Self::Es => "es",
            Self::Hs => "hs",
            Self::Ls => "ls",
            Self::Cs => "cs",
        }
    }
}

impl fmt::Display for HardwareStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The registers of one hardware stage on one family (absolute dword
/// indices; `None` where the family's map has no such register).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StageRegisters {
    /// The stage.
    pub stage: HardwareStage,
    /// PGM_LO: code address bits \[39:8\].
    pub pgm_lo: u32,
    /// PGM_HI (PGM_LO + 1): code address bits \[47:40\] in \[7:0\].
    pub pgm_hi: u32,
    /// PGM_RSRC1.
    pub rsrc1: Option<u32>,
    /// PGM_RSRC2.
    pub rsrc2: Option<u32>,
    /// PGM_RSRC3.
    pub rsrc3: Option<u32>,
    /// USER_DATA_0, when the stage has user-data registers of its own.
    pub user_data: Option<u32>,
    /// How many consecutive user-data registers follow from `user_data` (0 without).
    pub user_data_count: u32,
}

impl StageRegisters {
    /// The user-data registers' indices.
    pub fn user_data_range(&self) -> std::ops::Range<u32> {
        match self.user_data {
            Some(base) => base..base + self.user_data_count,
            None => 0..0,
        }
    }
}

/// Which half of a program address pair a register is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProgramRegister {
    /// PGM_LO.
    Lo,
    /// PGM_HI.
    Hi,
}

/// Every hardware stage `family` has, graphics first, compute last.
pub fn shader_stages(family: GpuFamily) -> &'static [StageRegisters] {
    match family {
        GpuFamily::Gfx103 => generated::stages::GFX103,
        GpuFamily::Gfx7 => generated::stages::GFX7,
    }
}

/// The registers of `stage` on `family`, if the family has the stage.
#[inline]
pub fn stage_registers(family: GpuFamily, stage: HardwareStage) -> Option<&'static StageRegisters> {
    let table = shader_stages(family);
    // The tables list the stages in `HardwareStage` order (every family
    // has all seven): one look, the search only if one were missing.
    match table.get(stage as usize) {
        Some(s) if s.stage == stage => Some(s),
        _ => table.iter().find(|s| s.stage == stage),
    }
}

/// The stage whose program address pair holds `register` on `family`,
/// and which half it is: what a SET_SH_REG that binds a program writes.
pub fn program_register(family: GpuFamily, register: u32) -> Option<(HardwareStage, ProgramRegister)> {
    shader_stages(family).iter().find_map(|s| {
        if register == s.pgm_lo {
            Some((s.stage, ProgramRegister::Lo))
        } else if register == s.pgm_hi {
            Some((s.stage, ProgramRegister::Hi))
        } else {
            None
        }
    })
}
