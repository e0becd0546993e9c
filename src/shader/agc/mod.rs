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

mod creation;
mod header;
mod shader;
mod stage;
mod tables;
mod trailer;

pub use creation::*;
pub use header::*;
pub use shader::*;
pub use stage::*;
pub use tables::*;
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
