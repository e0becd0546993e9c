//! Shader containers: the reference's worked examples rebuilt from their
//! documented values, relocation in guest memory, every validation rule, the
//! OrbShdr CRC, the registry, the other formats and a no-panic property test.

mod common;

use std::sync::Arc;

use common::shader_builder::{
    corrupt, shader_text, sl00_block, AgcBuilder, AgcElfBuilder, DvlbBuilder, DvleSpec, OrbShdrBuilder, ShdrBuilder,
};
use pm4core::memory::{GuestMemory, SparseMemory};
use pm4core::shader::agc::{
    offsets, program_address, program_registers as pr, AgcShader, DirectResourceType, DrawModifier, PipelineStage,
    RegisterEntry, Semantic, ShaderStage, ShaderType, SharpEntry, SharpKind, SpecialRegisters, UserDataRange,
    HEADER_LEN, MAX_HEADER_SIZE,
};
use pm4core::shader::dvlb::{Dvlb, DvleConstant, DvleOutput};
use pm4core::shader::gnm::{
    calc_size, locate_orbshdr, orbshdr_crc32, GnmBinaryType, GnmCode, GnmShaderFile, GnmShaderType, InputUsageSlot,
    LocateMethod, PixelInputSemantic, VertexExportSemantic, VertexInputSemantic, SCAN_LIMIT,
};
use pm4core::shader::inspect::{detect, inspect, FileFormat, Inspection};
use pm4core::shader::{create_shader, register_relocated, ShaderError, ShaderRegistry};

// ---------------------------------------------------------------------------
// The worked examples (shader-containers.md §1.9), rebuilt from values
// ---------------------------------------------------------------------------

/// The pixel sample: every value below is from the decoded table of §1.9.
fn pixel_sample() -> AgcBuilder {
    AgcBuilder::new(ShaderType::Pixel)
        // SPI_SHADER_PGM_CHKSUM_PS twice (trailer offset + flags, then the hash).
        .sh_register(0x006, 0x0100_0150)
        .sh_register(0x006, 0x7EAF_2669)
        .sh_register(0x00A, 0x022C_0001) // RSRC1_PS
        .sh_register(0x00B, 0) // RSRC2_PS
        .context_register(0x1C4, 0) // SPI_SHADER_Z_FORMAT
        .context_register(0x1C5, 4) // SPI_SHADER_COL_FORMAT
        .context_register(0x1B3, 2) // SPI_PS_INPUT_ENA
        .context_register(0x1B4, 2) // SPI_PS_INPUT_ADDR
        .context_register(0x1B6, 2) // SPI_PS_IN_CONTROL
        .context_register(0x1B8, 0x0100_0000) // SPI_BARYC_CNTL
        .context_register(0x203, 0x10) // DB_SHADER_CONTROL
        .context_register(0x08F, 0xF) // CB_SHADER_MASK
        .context_register(0x310, 0) // PA_SC_SHADER_CONTROL
        .input_semantic(Semantic(0x0F))
        .input_semantic(Semantic(0x10))
        .shader_size(0x180)
}

/// The geometry (NGG VS) sample, from the values §1.9 and §1.7 give
/// (context values are not documented and left 0).
fn vertex_sample() -> AgcBuilder {
    let mut b = AgcBuilder::new(ShaderType::Geometry)
        .sh_register(0x080, 0x0200_0210)
        .sh_register(0x080, 0xD217_C59D)
        .sh_register(0x08A, 0x622C_0103)
        .sh_register(0x08B, 0x0003_0010);
    for off in [0x1B1, 0x1C3, 0x1C2, 0x207, 0x2D3, 0x2E4, 0x291, 0x1FF, 0x2AB, 0x2CE] {
        b = b.context_register(off, 0);
    }
    b.specials(SpecialRegisters {
        ge_cntl: RegisterEntry::new(0x25B, 0x8040),
        vgt_shader_stages_en: RegisterEntry::new(0x2D5, 0x0200_2000),
        dispatch_modifier: 0,
        user_data_range: UserDataRange { start: 0, end: 8 },
        draw_modifier: DrawModifier(0x4000_0000),
        vgt_gs_out_prim_type: RegisterEntry::new(0x29B, 0),
        ge_user_vgpr_en: RegisterEntry::new(0x262, 0),
    })
    .output_semantic(Semantic(0x0F))
    .output_semantic(Semantic(0x110))
    .sharp(SharpKind::ReadOnly, SharpEntry(0x8000))
    .sharp(SharpKind::ConstantBuffer, SharpEntry(0x8004))
    .shader_size(0x240)
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

#[test]
fn pixel_sample_raw_fields_match_the_reference() {
    let bytes = pixel_sample().build();
    // The "Raw" column of §1.9's decoded table.
    assert_eq!(bytes.len(), 0x160);
    assert_eq!(u32_at(&bytes, 0x00), 0x3433_3231);
    assert_eq!(u32_at(&bytes, 0x04), 0x18);
    assert_eq!(u64_at(&bytes, 0x08), 0x108);
    assert_eq!(u64_at(&bytes, 0x10), 0);
    assert_eq!(u64_at(&bytes, 0x18), 0xB0);
    assert_eq!(u64_at(&bytes, 0x20), 0x78);
    assert_eq!(u64_at(&bytes, 0x28), 0x38);
    assert_eq!(u64_at(&bytes, 0x30), 0x60);
    assert_eq!(u64_at(&bytes, 0x38), 0);
    assert_eq!(u32_at(&bytes, 0x40), 0x160);
    assert_eq!(u32_at(&bytes, 0x44), 0x180);
    assert_eq!(u32_at(&bytes, 0x48), 0);
    assert_eq!(u32_at(&bytes, 0x4C), 6);
    assert_eq!(u32_at(&bytes, 0x50), 2);
    // 0x54 scratch 0, 0x56 outputs 0, 0x58 0x30, 0x5A type 1, 0x5B 9, 0x5C 6.
    assert_eq!(u32_at(&bytes, 0x54), 0);
    assert_eq!(u32_at(&bytes, 0x58), 0x0901_0030);
    assert_eq!(u32_at(&bytes, 0x5C), 6);
    // Specials all zero.
    assert!(bytes[0x60..0x90].iter().all(|&b| b == 0));
    // User data: direct 0x38 → +0x148; sharps 0x48, 0x40, 0x38, 0x30 → +0x160.
    assert_eq!(u64_at(&bytes, 0x110), 0x38);
    assert_eq!(u64_at(&bytes, 0x118), 0x48);
    assert_eq!(u64_at(&bytes, 0x120), 0x40);
    assert_eq!(u64_at(&bytes, 0x128), 0x38);
    assert_eq!(u64_at(&bytes, 0x130), 0x30);
    assert_eq!(u32_at(&bytes, 0x138), 0); // eud, srt
    assert_eq!(u32_at(&bytes, 0x13C), 0x0000_000B); // direct count 11, count0 0
                                                    // Direct table: 11 × 0xFFFF then two padding bytes.
    assert!(bytes[0x148..0x15E].iter().all(|&b| b == 0xFF));
    assert_eq!(&bytes[0x15E..0x160], &[0, 0]);
}

#[test]
fn pixel_sample_decodes_field_by_field() {
    let bytes = pixel_sample().build();
    let s = AgcShader::parse(&bytes, 0).unwrap();
    assert!(!s.is_relocated());
    assert_eq!(s.shader_type(), ShaderType::Pixel);
    assert_eq!(s.stage(), Some(ShaderStage::Ps));
    assert_eq!(s.pipeline_stage(), PipelineStage::Pixel);
    let layout = s.layout();
    assert_eq!(layout.user_data, Some(0x110));
    assert_eq!(layout.cx_registers, Some(0xC8));
    assert_eq!(layout.sh_registers, Some(0x98));
    assert_eq!(layout.specials, Some(0x60));
    assert_eq!(layout.input_semantics, Some(0x90));
    assert_eq!(layout.output_semantics, None);
    assert_eq!(layout.direct_resources, Some(0x148));
    assert_eq!(layout.sharp_resources, [Some(0x160); 4]);
    assert_eq!(s.header_size(), 0x160);
    assert_eq!(s.code_length(), 0x180);
    assert_eq!(s.header().target, 6);
    assert_eq!(s.header().special_sizes_bytes, 0x30);
    assert_eq!(s.scratch_size_dw_per_thread(), 0);
    assert_eq!(s.code_address(), None);
    assert_eq!(s.specials(), Some(&SpecialRegisters::default()));
    assert_eq!(s.input_semantics(), &[Semantic(0x0F), Semantic(0x10)]);
    assert_eq!(s.input_semantics()[0].semantic(), 15);
    assert_eq!(s.input_semantics()[1].semantic(), 16);
    assert!(s.output_semantics().is_empty());
    let sh: Vec<(u32, u32)> = s.sh_registers().iter().map(|e| (e.offset, e.value)).collect();
    assert_eq!(sh, [(8, 0), (9, 0), (6, 0x0100_0150), (6, 0x7EAF_2669), (0xA, 0x022C_0001), (0xB, 0)]);
    let cx: Vec<(u32, u32)> = s.context_registers().iter().map(|e| (e.offset, e.value)).collect();
    assert_eq!(
        cx,
        [
            (0x1C4, 0),
            (0x1C5, 4),
            (0x1B3, 2),
            (0x1B4, 2),
            (0x1B6, 2),
            (0x1B8, 0x0100_0000),
            (0x203, 0x10),
            (0x8F, 0xF),
            (0x310, 0)
        ]
    );
    // CX table ends exactly at the user data (+0x110).
    assert_eq!(0xC8 + 9 * 8, 0x110);
    let ud = s.user_data().unwrap();
    assert_eq!(ud.direct_resources, vec![0xFFFF; 11]);
    assert_eq!(ud.direct_resource(DirectResourceType::PtrVertexBufferTable), None);
    assert!(ud.sharp_resources.iter().all(Vec::is_empty));
    assert_eq!((ud.eud_size_dw, ud.srt_size_dw), (0, 0));
    assert_eq!(s.program_registers().unwrap().lo, pr::SPI_SHADER_PGM_LO_PS);
    assert_eq!(s.program_registers().unwrap().hi, pr::SPI_SHADER_PGM_HI_PS);
    assert_eq!(s.program_register_index(), Some(0));
    assert_eq!(s.program_address(), Some(0));
    assert_eq!(s.user_data_range(), Some(UserDataRange { start: 0, end: 0 }));
}

#[test]
fn vertex_sample_decodes_field_by_field() {
    let bytes = vertex_sample().build();
    // header 0x178 (§1.9).
    assert_eq!(bytes.len(), 0x178);
    let s = AgcShader::parse(&bytes, 0).unwrap();
    assert_eq!(s.header_size(), 0x178);
    assert_eq!(s.shader_type(), ShaderType::Geometry);
    assert_eq!(s.stage(), Some(ShaderStage::Es));
    assert_eq!(s.program_registers().unwrap().lo, pr::SPI_SHADER_PGM_LO_ES);
    assert_eq!(s.sh_registers()[0], RegisterEntry::new(0xC8, 0));
    assert_eq!(s.sh_registers()[1], RegisterEntry::new(0xC9, 0));
    assert_eq!(s.sh_registers()[5].value, 0x0003_0010);
    assert_eq!(s.sh_registers()[5].value & 0x3E, 0x10); // RSRC2 USER_SGPR = 8
    assert_eq!(s.context_registers().len(), 10);
    // Both semantic pointers resolve to +0x90 (inputs empty).
    assert_eq!(s.layout().input_semantics, Some(0x90));
    assert_eq!(s.layout().output_semantics, Some(0x90));
    assert!(s.input_semantics().is_empty());
    assert_eq!(s.output_semantics(), &[Semantic(0x0F), Semantic(0x110)]);
    assert_eq!(s.output_semantics()[1].hardware_mapping(), 1);
    let sp = s.specials().unwrap();
    assert_eq!(sp.ge_cntl, RegisterEntry::new(0x25B, 0x8040));
    assert_eq!(sp.vgt_shader_stages_en, RegisterEntry::new(0x2D5, 0x0200_2000));
    assert_eq!(sp.user_data_range, UserDataRange { start: 0, end: 8 });
    assert_eq!(sp.draw_modifier.0 as u32, 0x4000_0000);
    assert_eq!(sp.vgt_gs_out_prim_type.offset, 0x29B);
    assert_eq!(sp.ge_user_vgpr_en.offset, 0x262);
    let ud = s.user_data().unwrap();
    assert_eq!(ud.sharps(SharpKind::ReadOnly), &[SharpEntry(0x8000)]);
    assert_eq!(ud.sharps(SharpKind::ConstantBuffer), &[SharpEntry(0x8004)]);
    let e = ud.sharps(SharpKind::ConstantBuffer)[0];
    assert!(e.is_small());
    assert_eq!(e.offset_dw(), 4);
    assert_eq!(e.size_dw(), 4);
}

// ---------------------------------------------------------------------------
// Creation
// ---------------------------------------------------------------------------

const HEADER_AT: u64 = 0x1_0000_1000;
const CODE_AT: u64 = 0x7FAB_1234_5600;

fn memory_with(bytes: &[u8]) -> SparseMemory {
    let m = SparseMemory::new();
    m.map_zeroed(HEADER_AT - 0x1000, 0x1000).unwrap();
    m.map_bytes(HEADER_AT, bytes).unwrap();
    m.map_zeroed(HEADER_AT + 0x10000, 0x1000).unwrap();
    m
}

fn read_all(m: &SparseMemory, at: u64, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    m.read_bytes(at, &mut out).unwrap();
    out
}

#[test]
fn create_relocates_every_pointer_and_patches_the_program_pair() {
    let original = pixel_sample().build();
    let m = memory_with(&original);
    let s = create_shader(&m, HEADER_AT, CODE_AT).unwrap();
    let after = read_all(&m, HEADER_AT, original.len());
    let h = HEADER_AT;
    assert_eq!(u64_at(&after, 0x08), h + 0x110);
    assert_eq!(u64_at(&after, 0x10), CODE_AT);
    assert_eq!(u64_at(&after, 0x18), h + 0xC8);
    assert_eq!(u64_at(&after, 0x20), h + 0x98);
    assert_eq!(u64_at(&after, 0x28), h + 0x60);
    assert_eq!(u64_at(&after, 0x30), h + 0x90);
    assert_eq!(u64_at(&after, 0x38), 0, "a null pointer stays null");
    assert_eq!(u64_at(&after, 0x110), h + 0x148);
    for i in 0..4 {
        assert_eq!(u64_at(&after, 0x118 + 8 * i), h + 0x160, "sharp pointer {i}");
    }
    // LO = bits 8..39, HI = bits 40..47.
    assert_eq!(u32_at(&after, 0x98), 8);
    assert_eq!(u32_at(&after, 0x9C), 0xAB12_3456);
    assert_eq!(u32_at(&after, 0xA0), 9);
    assert_eq!(u32_at(&after, 0xA4), 0x7F);
    // Nothing else changed.
    let changed: Vec<usize> = (0..original.len()).filter(|&i| original[i] != after[i]).collect();
    let allowed = |i: usize| {
        [0x08, 0x10, 0x18, 0x20, 0x28, 0x30, 0x110, 0x118, 0x120, 0x128, 0x130].iter().any(|&f| (f..f + 8).contains(&i))
            || (0x9C..0xA0).contains(&i)
            || (0xA4..0xA8).contains(&i)
    };
    assert!(changed.iter().all(|&i| allowed(i)), "unexpected changes at {changed:x?}");

    // The returned value is the decode of the relocated header.
    assert!(s.is_relocated());
    assert_eq!(s.code_address(), Some(CODE_AT));
    assert_eq!(s.program_address(), Some(CODE_AT));
    assert_eq!(s.header_address(), HEADER_AT);
    assert_eq!(s, AgcShader::read(&m, HEADER_AT).unwrap());
    // Same content as the unrelocated decode, apart from the header fields.
    let fresh = AgcShader::parse(&original, HEADER_AT).unwrap();
    assert_eq!(s.layout(), fresh.layout());
    assert_eq!(s.context_registers(), fresh.context_registers());
    assert_eq!(s.input_semantics(), fresh.input_semantics());
    assert_eq!(s.user_data(), fresh.user_data());
    assert_eq!(s.extent(), (HEADER_AT, 0x160));
}

#[test]
fn create_keeps_the_upper_bits_of_hi() {
    let bytes = AgcBuilder::new(ShaderType::Pixel)
        .sh_registers([RegisterEntry::new(8, 0x1111), RegisterEntry::new(9, 0xABCD_EF00)])
        .build();
    let m = memory_with(&bytes);
    let s = create_shader(&m, HEADER_AT, CODE_AT).unwrap();
    assert_eq!(s.sh_registers()[0].value, 0xAB12_3456);
    assert_eq!(s.sh_registers()[1].value, 0xABCD_EF7F);
}

#[test]
fn create_patches_each_type_pair_and_skips_halves() {
    for ty in ShaderType::ALL {
        let mut b = AgcBuilder::new(ty).sh_register(0x1, 0x5);
        if ty.program_registers().is_some() {
            // Pair not first: the whole table is searched (§1.11).
            let pair = ty.program_registers().unwrap();
            b = b.sh_registers([
                RegisterEntry::new(0x1, 0x5),
                RegisterEntry::new(pair.sh_lo(), 0),
                RegisterEntry::new(pair.sh_hi(), 0),
            ]);
        }
        let bytes = b.build();
        let m = memory_with(&bytes);
        let s = create_shader(&m, HEADER_AT, CODE_AT).unwrap();
        assert_eq!(s.code_address(), Some(CODE_AT), "{ty:?}");
        match ty.program_registers() {
            Some(_) => {
                assert_eq!(s.program_register_index(), Some(1), "{ty:?}");
                assert_eq!(s.program_address(), Some(CODE_AT), "{ty:?}");
            }
            None => {
                assert_eq!(s.program_address(), None, "{ty:?}");
                assert_eq!(s.sh_registers(), &[RegisterEntry::new(1, 5)], "{ty:?}");
            }
        }
    }
    use ShaderStage::*;
    let stages: Vec<Option<ShaderStage>> = ShaderType::ALL.iter().map(|t| t.program_stage()).collect();
    assert_eq!(stages, [Some(Cs), Some(Ps), Some(Es), Some(Ls), None, None, Some(Gs), Some(Hs), None]);
    assert_eq!(ShaderType::GeometryBack.program_registers().unwrap().lo, pr::SPI_SHADER_PGM_LO_GS);
    assert_eq!(ShaderType::HullBack.program_registers().unwrap().lo, pr::SPI_SHADER_PGM_LO_HS);
    assert_eq!(ShaderType::Hull.program_registers().unwrap().lo, pr::SPI_SHADER_PGM_LO_LS);
    assert_eq!(ShaderType::Compute.program_registers().unwrap().lo, pr::COMPUTE_PGM_LO);
    assert_eq!(ShaderStage::from_program_lo(pr::SPI_SHADER_PGM_LO_VS), Some(Vs));
    assert_eq!(ShaderStage::from_program_hi(pr::COMPUTE_PGM_HI), Some(Cs));
}

#[test]
fn relocating_twice_is_refused_and_memory_untouched() {
    let bytes = pixel_sample().build();
    let m = memory_with(&bytes);
    create_shader(&m, HEADER_AT, CODE_AT).unwrap();
    let before = read_all(&m, HEADER_AT, bytes.len());
    let err = create_shader(&m, HEADER_AT, CODE_AT).unwrap_err();
    assert_eq!(err, ShaderError::AlreadyRelocated { header_address: HEADER_AT, code_field: CODE_AT });
    assert_eq!(read_all(&m, HEADER_AT, bytes.len()), before);

    // Absolute pointers without a code address are recognised too.
    m.write_u64(HEADER_AT + 0x10, 0).unwrap();
    let err = create_shader(&m, HEADER_AT, CODE_AT).unwrap_err();
    assert_eq!(err, ShaderError::AlreadyRelocated { header_address: HEADER_AT, code_field: 0 });
}

#[test]
fn code_address_rules() {
    let bytes = pixel_sample().build();
    let m = memory_with(&bytes);
    assert_eq!(
        create_shader(&m, HEADER_AT, CODE_AT + 0x80),
        Err(ShaderError::MisalignedCode { code_address: CODE_AT + 0x80 })
    );
    assert_eq!(create_shader(&m, HEADER_AT, 0), Err(ShaderError::CodeAddressOutOfRange { code_address: 0 }));
    assert_eq!(
        create_shader(&m, HEADER_AT, 1 << 48),
        Err(ShaderError::CodeAddressOutOfRange { code_address: 1 << 48 })
    );
    // Rejected calls wrote nothing.
    assert_eq!(read_all(&m, HEADER_AT, bytes.len()), bytes);
}

#[test]
fn register_relocated_accepts_created_headers_only() {
    let bytes = pixel_sample().build();
    let m = memory_with(&bytes);
    assert_eq!(
        register_relocated(&m, HEADER_AT, CODE_AT),
        Err(ShaderError::NotRelocated { header_address: HEADER_AT })
    );
    let created = create_shader(&m, HEADER_AT, CODE_AT).unwrap();
    let generation = m.write_generation();
    assert_eq!(register_relocated(&m, HEADER_AT, CODE_AT).unwrap(), created);
    assert_eq!(m.write_generation(), generation, "nothing written");
    assert_eq!(
        register_relocated(&m, HEADER_AT, CODE_AT + 0x100),
        Err(ShaderError::CodeAddressMismatch { header_address: HEADER_AT, stored: CODE_AT, given: CODE_AT + 0x100 })
    );
}

#[test]
fn unmapped_header_is_a_memory_error() {
    let m = SparseMemory::new();
    assert!(matches!(AgcShader::read(&m, 0x1000), Err(ShaderError::Memory { address: 0x1000, .. })));
    // Header mapped but its tables are not.
    let mut bytes = pixel_sample().build();
    bytes.truncate(0x80);
    let m = SparseMemory::new();
    m.map_bytes(HEADER_AT, &bytes).unwrap();
    assert!(matches!(AgcShader::read(&m, HEADER_AT), Err(ShaderError::Memory { what: "AGC header tables", .. })));
}

// ---------------------------------------------------------------------------
// Validation (§1.13), one exact variant per rule
// ---------------------------------------------------------------------------

fn parse_err(bytes: &[u8]) -> ShaderError {
    AgcShader::parse(bytes, 0).unwrap_err()
}

#[test]
fn rejects_bad_magic_and_version() {
    let mut b = pixel_sample().build();
    corrupt::magic(&mut b, 0x3433_3230);
    assert_eq!(
        parse_err(&b),
        ShaderError::BadMagic { what: "AGC header", offset: 0, found: 0x3433_3230, expected: 0x3433_3231 }
    );
    let mut b = pixel_sample().build();
    corrupt::version(&mut b, 0x17);
    assert_eq!(parse_err(&b), ShaderError::BadVersion { offset: 4, found: 0x17, expected: 0x18 });
}

#[test]
fn rejects_short_blobs_and_bad_header_sizes() {
    let b = pixel_sample().build();
    assert_eq!(
        parse_err(&b[..0x5F]),
        ShaderError::Truncated { what: "AGC header", offset: 0, len: 0x60, available: 0x5F }
    );
    assert_eq!(
        parse_err(&b[..0x15F]),
        ShaderError::HeaderSizeExceedsBlob { offset: 0x40, header_size: 0x160, available: 0x15F }
    );
    let mut c = b.clone();
    corrupt::header_size(&mut c, 0x5C);
    assert_eq!(parse_err(&c), ShaderError::HeaderSizeTooSmall { offset: 0x40, header_size: 0x5C });
    let mut c = b.clone();
    corrupt::header_size(&mut c, MAX_HEADER_SIZE + 1);
    assert_eq!(
        parse_err(&c),
        ShaderError::HeaderSizeTooLarge { offset: 0x40, header_size: MAX_HEADER_SIZE + 1, limit: MAX_HEADER_SIZE }
    );
    // Trailing bytes past header_size are ignored.
    let mut longer = b.clone();
    longer.extend_from_slice(&[0xAA; 64]);
    assert_eq!(AgcShader::parse(&longer, 0).unwrap(), AgcShader::parse(&b, 0).unwrap());
}

#[test]
fn rejects_unknown_type() {
    let mut b = pixel_sample().build();
    corrupt::shader_type(&mut b, 9);
    assert_eq!(parse_err(&b), ShaderError::BadType { offset: 0x5A, found: 9 });
    // Every type 0..=8 is accepted.
    for ty in ShaderType::ALL {
        AgcShader::parse(&AgcBuilder::new(ty).build(), 0).unwrap();
    }
}

#[test]
fn rejects_each_pointer_out_of_bounds() {
    for (name, field) in [
        ("user_data", offsets::USER_DATA),
        ("cx_registers", offsets::CX_REGISTERS),
        ("sh_registers", offsets::SH_REGISTERS),
        ("specials", offsets::SPECIALS),
        ("input_semantics", offsets::INPUT_SEMANTICS),
        ("output_semantics", offsets::OUTPUT_SEMANTICS),
    ] {
        let mut b = pixel_sample().build();
        // One past header_size relative to the field.
        let raw = 0x161 - u64::from(field);
        corrupt::pointer(&mut b, field, raw);
        assert_eq!(
            parse_err(&b),
            ShaderError::PointerOutOfBounds { field: name, offset: u64::from(field), raw, header_size: 0x160 },
            "{name}"
        );
        // Overflowing arithmetic is the same error, not a panic.
        corrupt::pointer(&mut b, field, u64::MAX);
        assert!(matches!(parse_err(&b), ShaderError::PointerOutOfBounds { field: f, .. } if f == name));
    }
    // User-data sub-pointers (field at +0x110 + n).
    let mut b = pixel_sample().build();
    corrupt::pointer(&mut b, 0x110, 0x1000);
    assert_eq!(
        parse_err(&b),
        ShaderError::PointerOutOfBounds {
            field: "user_data.direct_resources",
            offset: 0x110,
            raw: 0x1000,
            header_size: 0x160
        }
    );
    let mut b = pixel_sample().build();
    corrupt::pointer(&mut b, 0x128, 0x39);
    assert_eq!(
        parse_err(&b),
        ShaderError::PointerOutOfBounds {
            field: "user_data.sharp_resources[2]",
            offset: 0x128,
            raw: 0x39,
            header_size: 0x160
        }
    );
}

#[test]
fn rejects_tables_that_do_not_fit() {
    // SH table: 6 entries at +0x98; 40 entries run past 0x160.
    let mut b = pixel_sample().build();
    corrupt::num_sh_registers(&mut b, 40);
    assert_eq!(
        parse_err(&b),
        ShaderError::TableOutOfBounds {
            field: "sh_registers",
            offset: 0x20,
            target: 0x98,
            count: 40,
            entry_size: 8,
            header_size: 0x160
        }
    );
    let mut b = pixel_sample().build();
    corrupt::num_cx_registers(&mut b, 255);
    assert!(matches!(parse_err(&b), ShaderError::TableOutOfBounds { field: "cx_registers", count: 255, .. }));
    // A u32 count far beyond the blob: no allocation, a typed error.
    let mut b = pixel_sample().build();
    corrupt::num_input_semantics(&mut b, u32::MAX);
    assert_eq!(
        parse_err(&b),
        ShaderError::TableOutOfBounds {
            field: "input_semantics",
            offset: 0x30,
            target: 0x90,
            count: u64::from(u32::MAX),
            entry_size: 4,
            header_size: 0x160
        }
    );
    // A zero-count table one past the end is fine (the sharps), a
    // one-entry table there is not.
    let mut b = pixel_sample().build();
    corrupt::set_u16(&mut b, 0x13E, 1); // sharp_resource_count[0]
    assert_eq!(
        parse_err(&b),
        ShaderError::TableOutOfBounds {
            field: "user_data.sharp_resources[0]",
            offset: 0x118,
            target: 0x160,
            count: 1,
            entry_size: 2,
            header_size: 0x160
        }
    );
    let mut b = pixel_sample().build();
    corrupt::set_u16(&mut b, 0x13C, 200); // direct_resource_count
    assert!(matches!(
        parse_err(&b),
        ShaderError::TableOutOfBounds { field: "user_data.direct_resources", count: 200, .. }
    ));
    // Specials and user data are fixed-size structures.
    let mut b = pixel_sample().build();
    corrupt::pointer(&mut b, offsets::SPECIALS, 0x160 - 0x28 - 0x10);
    assert!(matches!(
        parse_err(&b),
        ShaderError::TableOutOfBounds { field: "specials", entry_size: 0x30, count: 1, .. }
    ));
    let mut b = pixel_sample().build();
    corrupt::pointer(&mut b, offsets::USER_DATA, 0x160 - 0x08 - 0x30);
    assert!(matches!(
        parse_err(&b),
        ShaderError::TableOutOfBounds { field: "user_data", entry_size: 0x38, count: 1, .. }
    ));
}

#[test]
fn rejects_null_tables_with_entries() {
    let mut b = pixel_sample().build();
    corrupt::num_output_semantics(&mut b, 3);
    assert_eq!(parse_err(&b), ShaderError::NullTable { field: "output_semantics", offset: 0x38, count: 3 });
    let mut b = pixel_sample().build();
    corrupt::pointer(&mut b, offsets::SH_REGISTERS, 0);
    assert_eq!(parse_err(&b), ShaderError::NullTable { field: "sh_registers", offset: 0x20, count: 6 });
}

#[test]
fn zero_count_tables_are_not_read() {
    // Counts zero, pointers null or at the end: decodes with empty tables.
    let b = AgcBuilder::new(ShaderType::Function).no_specials().no_user_data().build();
    assert_eq!(b.len(), HEADER_LEN as usize);
    let s = AgcShader::parse(&b, 0).unwrap();
    assert!(s.sh_registers().is_empty() && s.context_registers().is_empty());
    assert_eq!(s.specials(), None);
    assert_eq!(s.user_data(), None);
    assert_eq!(s.layout().input_semantics, Some(0x60), "zero-count pointer at header_size");
}

#[test]
fn rejects_missing_or_split_program_pair() {
    let b = pixel_sample().without_program_registers().build();
    assert_eq!(
        parse_err(&b),
        ShaderError::MissingProgramRegister { shader_type: ShaderType::Pixel, offset: 0x20, lo: 0x008 }
    );
    let b = AgcBuilder::new(ShaderType::Compute)
        .sh_registers([RegisterEntry::new(0x20C, 0), RegisterEntry::new(0x212, 0), RegisterEntry::new(0x20D, 0)])
        .build();
    assert_eq!(
        parse_err(&b),
        ShaderError::ProgramHiNotNext {
            shader_type: ShaderType::Compute,
            index: 0,
            next: 1,
            found: Some(0x212),
            hi: 0x20D
        }
    );
    let b = AgcBuilder::new(ShaderType::HullBack).sh_registers([RegisterEntry::new(0x108, 0)]).build();
    assert_eq!(
        parse_err(&b),
        ShaderError::ProgramHiNotNext { shader_type: ShaderType::HullBack, index: 0, next: 1, found: None, hi: 0x109 }
    );
    // Types without a program pair do not need one.
    for ty in [ShaderType::GeometryFront, ShaderType::HullFront, ShaderType::Function] {
        AgcShader::parse(&AgcBuilder::new(ty).build(), 0).unwrap();
    }
}

#[test]
fn relocated_headers_must_point_inside_themselves() {
    let bytes = pixel_sample().build();
    let m = memory_with(&bytes);
    create_shader(&m, HEADER_AT, CODE_AT).unwrap();
    let relocated = read_all(&m, HEADER_AT, bytes.len());
    // Decoding the relocated bytes at another base fails cleanly.
    assert!(matches!(
        AgcShader::parse(&relocated, HEADER_AT + 0x1000),
        Err(ShaderError::PointerOutOfBounds { field: "user_data", .. })
    ));
    assert!(AgcShader::parse(&relocated, HEADER_AT).unwrap().is_relocated());
}

// ---------------------------------------------------------------------------
// Registry
// ---------------------------------------------------------------------------

#[test]
fn registry_creates_caches_and_invalidates() {
    let ps = pixel_sample().build();
    let vs = vertex_sample().build();
    let vs_at = HEADER_AT + 0x400;
    let m = SparseMemory::new();
    m.map_bytes(HEADER_AT, &ps).unwrap();
    m.map_bytes(vs_at, &vs).unwrap();
    let vs_code = CODE_AT + 0x1000;

    let reg = ShaderRegistry::new();
    assert!(reg.is_empty());
    let a = reg.create(&m, HEADER_AT, CODE_AT, false).unwrap();
    let b = reg.create(&m, vs_at, vs_code, false).unwrap();
    assert_eq!(reg.len(), 2);
    assert_eq!(b.shader_type(), ShaderType::Geometry);

    // Decoded once: resolve hands out the same Arc.
    let r = reg.resolve(&m, CODE_AT).unwrap();
    assert!(Arc::ptr_eq(&a, &r));
    assert!(reg.resolve(&m, CODE_AT + 0x100).is_none(), "raw-code shader");
    assert!(reg.resolve(&m, 0).is_none());

    // A write outside both headers drops nothing.
    assert_eq!(reg.invalidate_range(HEADER_AT + 0x160, 0x400 - 0x160), 0);
    assert!(Arc::ptr_eq(&a, &reg.resolve(&m, CODE_AT).unwrap()));
    // A write into the pixel header's context table drops it only.
    m.write_u32(HEADER_AT + 0xCC, 0x7).unwrap();
    assert_eq!(reg.invalidate_range(HEADER_AT + 0xCC, 4), 1);
    assert!(reg.get(CODE_AT).is_none());
    assert!(reg.get(vs_code).is_some());
    let again = reg.resolve(&m, CODE_AT).unwrap();
    assert!(!Arc::ptr_eq(&a, &again));
    assert_eq!(again.context_registers()[0].value, 7, "re-decoded after the host write");
    // A range covering both.
    assert_eq!(reg.invalidate_range(HEADER_AT, 0x10000), 2);
    assert_eq!(reg.invalidate_range(HEADER_AT, 0x10000), 0, "already dropped");
    assert_eq!(reg.iter().filter(|r| r.shader.is_none()).count(), 2);
    assert!(reg.resolve(&m, vs_code).is_some());

    // Iteration in header order.
    let codes: Vec<(u64, u64)> = reg.iter().map(|r| (r.header_address, r.code_address)).collect();
    assert_eq!(codes, [(HEADER_AT, CODE_AT), (vs_at, vs_code)]);

    // The host recycles the header memory: the registration goes away.
    m.write_u32(HEADER_AT, 0).unwrap();
    reg.invalidate_range(HEADER_AT, 4);
    assert!(matches!(reg.try_resolve(&m, CODE_AT), Err(ShaderError::BadMagic { .. })));
    assert!(!reg.contains(CODE_AT));
    assert_eq!(reg.len(), 1);
    assert!(reg.resolve(&m, CODE_AT).is_none());
}

#[test]
fn registry_accepts_already_relocated_headers_and_replaces_by_code() {
    let ps = pixel_sample().build();
    let m = memory_with(&ps);
    create_shader(&m, HEADER_AT, CODE_AT).unwrap();
    let reg = ShaderRegistry::new();
    assert!(matches!(reg.create(&m, HEADER_AT, CODE_AT, false), Err(ShaderError::AlreadyRelocated { .. })));
    assert!(reg.is_empty(), "nothing registered on error");
    let s = reg.create(&m, HEADER_AT, CODE_AT, true).unwrap();
    assert_eq!(s.code_address(), Some(CODE_AT));
    let again = reg.create(&m, HEADER_AT, CODE_AT, true).unwrap();
    assert_eq!(reg.len(), 1);
    assert!(Arc::ptr_eq(&again, &reg.resolve(&m, CODE_AT).unwrap()));
    assert!(reg.remove(CODE_AT));
    assert!(!reg.remove(CODE_AT));
    assert!(reg.iter().next().is_none());
}

// ---------------------------------------------------------------------------
// PS4: OrbShdr and its CRC (§2.6, §2.8)
// ---------------------------------------------------------------------------

/// The pixel shader ps0 of §2.8: code dwords as listed there.
const PS0_CODE: [u32; 8] =
    [0xBEEB_03FF, 0x0000_0003, 0x7E00_0280, 0x5E00_0100, 0xBF80_0000, 0xF800_1C0F, 0x0000_0000, 0xBF81_0000];

fn ps0() -> Vec<u8> {
    OrbShdrBuilder::new(GnmBinaryType::Ps as u8).code_dwords(&PS0_CODE).hash(0xB0A4_5B2B, 0x1D39_766D).build().0
}

#[test]
fn ps0_block_and_crc_reproduce() {
    let blob = ps0();
    assert_eq!(blob.len(), 0x20 + 0x1C);
    // The info block exactly as §2.8 lists it.
    let info: Vec<u32> = (0..7).map(|i| u32_at(&blob, 0x20 + 4 * i)).collect();
    assert_eq!(info, [0x5362_724F, 0x0772_6468, 0x0000_2043, 0, 0xB0A4_5B2B, 0x1D39_766D, 0x7204_4B7B]);
    assert_eq!(orbshdr_crc32(&blob, 0x20, &blob[0x20..0x38]), Some(0x7204_4B7B));
    // zlib CRC-32 of the same message is a different value.
    let mut msg = blob[..0x20].to_vec();
    msg.extend_from_slice(&blob[0x20..0x38]);
    assert_eq!(crc32fast::hash(&msg), 0x5E33_84E1);

    let code = GnmCode::decode(&blob).unwrap();
    assert_eq!(code.location.offset, 0x20);
    assert_eq!(code.location.method, LocateMethod::VccHiLiteral);
    assert_eq!(code.info.version, 7);
    assert!(code.info.is_pssl_cg && code.info.is_source_cached);
    assert_eq!(code.info.binary_type(), Some(GnmBinaryType::Ps));
    assert_eq!(code.info.source_type, 1);
    assert_eq!(code.code_length(), 0x20);
    assert_eq!(code.info.shader_hash(), 0x1D39_766D_B0A4_5B2B);
    assert_eq!(code.computed_crc32, 0x7204_4B7B);
    assert!(code.crc_matches());
    code.verify_crc().unwrap();
    assert_eq!(code.usage_chunk, None);
}

#[test]
fn vs_shaped_blob_is_self_consistent() {
    // §2.8's second example has vcc_hi = 7, length 0x40, type VS_VS; its code
    // dwords are not in the reference, so this checks the same shape with a
    // made-up program.
    let program: Vec<u32> = (0..14).map(|i| 0xBF80_0000 | i).collect();
    let (blob, at) = OrbShdrBuilder::new(GnmBinaryType::VsVs as u8).program(&program).build();
    assert_eq!(at, 0x40);
    assert_eq!(u32_at(&blob, 4), 7);
    let code = GnmCode::decode(&blob).unwrap();
    assert_eq!(code.info.length, 0x40);
    assert_eq!(code.info.binary_type(), Some(GnmBinaryType::VsVs));
    assert!(code.crc_matches());
}

#[test]
fn orbshdr_in_guest_memory() {
    let blob = ps0();
    let m = SparseMemory::new();
    m.map_bytes(CODE_AT, &blob).unwrap();
    let code = GnmCode::read(&m, CODE_AT).unwrap();
    assert_eq!(code, GnmCode::decode(&blob).unwrap());
    assert!(matches!(GnmCode::read(&m, CODE_AT + 0x1000), Err(ShaderError::OrbShdrNotFound { scanned: 0 })));
}

#[test]
fn orbshdr_scan_fallback_and_failures() {
    // No vcc_hi prefix: found by the scan.
    let (blob, at) =
        OrbShdrBuilder::new(GnmBinaryType::Cs as u8).code_dwords(&[0xBF80_0000, 0xBF80_0000, 0xBF81_0000]).build();
    assert_eq!(at, 0x10);
    let loc = locate_orbshdr(&blob).unwrap();
    assert_eq!((loc.offset, loc.method), (0x10, LocateMethod::Scan));
    let m = SparseMemory::new();
    m.map_bytes(0x4000, &blob).unwrap();
    assert_eq!(GnmCode::read(&m, 0x4000).unwrap().location.method, LocateMethod::Scan);

    // A wrong literal falls back to the scan too.
    let mut wrong = ps0();
    wrong[4] = 9;
    assert_eq!(locate_orbshdr(&wrong).unwrap().method, LocateMethod::Scan);

    // Nothing within the scan limit.
    let mut far = vec![0u8; SCAN_LIMIT as usize + 64];
    far.extend_from_slice(&ps0()[0x20..]);
    assert_eq!(locate_orbshdr(&far), Err(ShaderError::OrbShdrNotFound { scanned: SCAN_LIMIT }));
    assert_eq!(locate_orbshdr(&[]), Err(ShaderError::OrbShdrNotFound { scanned: 0 }));

    // CRC mismatch is reported, not fatal to decoding.
    let (bad, _) = OrbShdrBuilder::new(0).code_dwords(&PS0_CODE).crc32(0x1234_5678).build();
    let code = GnmCode::decode(&bad).unwrap();
    assert_eq!(
        code.verify_crc(),
        Err(ShaderError::OrbShdrCrcMismatch { stored: 0x1234_5678, computed: code.computed_crc32 })
    );
    // A length past the block is an error.
    let (long, _) = OrbShdrBuilder::new(0).code_dwords(&PS0_CODE).length(0x21).build();
    assert_eq!(GnmCode::decode(&long), Err(ShaderError::OrbShdrLengthOutOfRange { offset: 0x20, length: 0x21 }));
}

#[test]
fn orbshdr_usage_chunk_before_the_block() {
    let slots = [
        InputUsageSlot { usage_type: 0x00, api_slot: 0, start_register: 0, flags: 3 },
        InputUsageSlot { usage_type: 0x01, api_slot: 0, start_register: 8, flags: 0 },
    ];
    let (blob, at) =
        OrbShdrBuilder::new(0).program(&[0xBF80_0000, 0xBF81_0000]).usage_chunk(&slots, &[0x3, 0x1]).build();
    let code = GnmCode::decode(&blob).unwrap();
    assert_eq!(code.location.offset, at);
    assert_eq!(code.location.method, LocateMethod::VccHiLiteral);
    assert_eq!(code.info.chunk_usage_base_offset_dw, 2);
    assert_eq!(code.info.num_input_usage_slots, 2);
    let chunk = code.usage_chunk.as_ref().unwrap();
    assert_eq!(chunk.slots, slots);
    assert_eq!(chunk.masks, [3, 1]);
    assert_eq!(chunk.offset, at - 16);
    assert_eq!(chunk.slots[0].dwords(), Some(8));
    assert_eq!(chunk.slots[1].usage_type_name(), Some("IMM_SAMPLER"));
    assert!(code.crc_matches());
}

// ---------------------------------------------------------------------------
// PS4: Shdr files (§2.2–§2.5)
// ---------------------------------------------------------------------------

#[test]
fn shdr_vertex_file_round_trips_with_calc_size() {
    let code = OrbShdrBuilder::new(GnmBinaryType::VsVs as u8).program(&[0xBF81_0000]).build().0;
    let slot = InputUsageSlot { usage_type: 0x17, api_slot: 0, start_register: 2, flags: 0 };
    let file = ShdrBuilder::new(GnmShaderType::Vertex)
        .usage_slot(slot)
        .vertex_input(VertexInputSemantic { semantic: 0, vgpr: 4, size_in_elements: 3, pad: 0 })
        .vertex_export(VertexExportSemantic { semantic: 15, packed: 0x41 })
        .register(2, 0x00C0_0041)
        .common(4, 0, false)
        .code(&code)
        .build();
    let f = GnmShaderFile::parse(&file).unwrap();
    // align4(0x28 + 4 + 4 + 2) = 0x34.
    assert_eq!(f.stage.calc_size(), 0x34);
    assert_eq!(calc_size(GnmShaderType::Vertex, 1, 1, 1), 0x34);
    assert_eq!(f.header.header_size_dwords, 0x34 / 4);
    assert_eq!((f.header.version_major, f.header.version_minor), (7, 2));
    assert_eq!(f.stage.kind, GnmShaderType::Vertex);
    assert_eq!(f.stage.registers.len(), 7);
    assert_eq!(f.stage.registers[2], 0x00C0_0041);
    assert_eq!(f.stage.pgm_lo(), 0x34);
    assert_eq!(f.stage.pgm_hi(), 0xFFFF_FFFF);
    assert_eq!(f.stage.common.shader_size as usize, code.len());
    assert_eq!(f.stage.common.scratch_size_per_thread_dwords, 4);
    assert_eq!(f.stage.usage_slots, [slot]);
    assert_eq!(f.stage.vertex_input_semantics[0].vgpr, 4);
    assert_eq!(f.stage.vertex_export_semantics[0].out_index(), 1);
    assert_eq!(f.stage.vertex_export_semantics[0].export_f16(), 1);
    assert_eq!(f.code_offset, Some(0x10 + 0x34));
    assert_eq!(f.code(&file), Some(&code[..]));
    let c = f.decode_code(&file).unwrap().unwrap();
    assert!(c.crc_matches());
}

#[test]
fn shdr_pixel_compute_and_other_stages() {
    let file = ShdrBuilder::new(GnmShaderType::Pixel)
        .pixel_input(PixelInputSemantic(0x0500 | 15))
        .pixel_input(PixelInputSemantic(16))
        .pixel_input(PixelInputSemantic(17))
        .build();
    let f = GnmShaderFile::parse(&file).unwrap();
    // align4(0x3C + 2·3) = 0x44.
    assert_eq!(f.stage.calc_size(), 0x44);
    assert_eq!(f.stage.registers.len(), 12);
    let s = f.stage.pixel_input_semantics[0];
    assert_eq!((s.semantic(), s.default_value(), s.is_flat_shaded()), (15, 1, true));

    for (kind, size) in [
        (GnmShaderType::Compute, 0x24),
        (GnmShaderType::Geometry, 0x28),
        (GnmShaderType::Hull, 0x28),
        (GnmShaderType::Export, 0x1C),
        (GnmShaderType::Local, 0x1C),
    ] {
        let file = ShdrBuilder::new(kind).build();
        let f = GnmShaderFile::parse(&file).unwrap();
        assert_eq!(f.stage.calc_size(), size, "{kind:?}");
        assert_eq!(f.stage.registers.len(), kind.register_names().len());
    }
}

#[test]
fn shdr_rejections() {
    let good = ShdrBuilder::new(GnmShaderType::Pixel).pixel_input(PixelInputSemantic(1)).build();
    let mut bad = good.clone();
    bad[0] = b'X';
    assert!(matches!(GnmShaderFile::parse(&bad), Err(ShaderError::BadMagic { what: "Shdr file header", .. })));
    let bad = ShdrBuilder::new(GnmShaderType::Pixel).raw_type(9).build();
    assert_eq!(GnmShaderFile::parse(&bad), Err(ShaderError::BadShdrType { offset: 8, found: 9 }));
    let bad = ShdrBuilder::new(GnmShaderType::Pixel).pixel_input(PixelInputSemantic(1)).header_size_dwords(0xF).build();
    assert_eq!(
        GnmShaderFile::parse(&bad),
        Err(ShaderError::ShdrSizeMismatch { offset: 9, needed: 0x40, declared: 0x3C })
    );
    assert!(matches!(GnmShaderFile::parse(&good[..0x20]), Err(ShaderError::Truncated { .. })));
    assert!(matches!(GnmShaderFile::parse(&good[..8]), Err(ShaderError::Truncated { .. })));
}

// ---------------------------------------------------------------------------
// DVLB
// ---------------------------------------------------------------------------

fn dvlb_sample() -> Vec<u8> {
    DvlbBuilder::new()
        .code(&[0x4C00_0000, 0x8800_0000])
        .operand_descriptors(&[0x0000_036F, 0x0000_0FFF])
        .dvle(DvleSpec {
            shader_type: 0,
            main_offset_words: 0,
            endmain_offset_words: 1,
            constants: vec![DvleConstant { kind: 2, register: 0x5F, value: [1, 2, 3, 4] }],
            labels: vec![(0, 0, 2, "main".into())],
            outputs: vec![DvleOutput { kind: 0, register: 0, mask: 0xF, unknown: 0 }],
            uniforms: vec![("projection".into(), 0x10, 0x13)],
        })
        .build()
}

#[test]
fn dvlb_decodes() {
    let data = dvlb_sample();
    let d = Dvlb::parse(&data).unwrap();
    assert_eq!(d.dvles.len(), 1);
    assert_eq!(d.dvlp.blob_words, 2);
    assert_eq!(d.dvlp.opdesc_count, 2);
    assert_eq!(d.code(&data).map(<[u8]>::len), Some(8));
    let e = &d.dvles[0];
    assert_eq!(e.endmain_offset_words, 1);
    assert_eq!(e.constants[0].value, [1, 2, 3, 4]);
    assert_eq!(e.labels[0].name.as_deref(), Some("main"));
    assert_eq!(e.outputs[0].mask, 0xF);
    assert_eq!(e.uniforms[0].name.as_deref(), Some("projection"));
    assert_eq!((e.uniforms[0].start_register, e.uniforms[0].end_register), (0x10, 0x13));

    let mut bad = data.clone();
    bad[4] = 0xFF; // DVLE count 255
    assert!(matches!(Dvlb::parse(&bad), Err(ShaderError::BadDvlb { .. })));
    let mut bad = data.clone();
    bad[4] = 3; // offsets table now overlaps the DVLP
    assert!(Dvlb::parse(&bad).is_err());
}

// ---------------------------------------------------------------------------
// inspect
// ---------------------------------------------------------------------------

fn pixel_elf() -> Vec<u8> {
    let program = vec![0u8; 0x10C];
    let (text, trailer_at) = shader_text(&program, 0x7EAF_2669, 0x36);
    assert_eq!((text.len(), trailer_at), (0x180, 0x150)); // §1.9
    AgcElfBuilder::new(&text, &pixel_sample().build(), "ps").section(".metadata", &sl00_block(0x40, 0)).build()
}

#[test]
fn inspect_recognises_each_format() {
    let agc = pixel_sample().build();
    let i = inspect(&agc);
    assert_eq!(i.format(), Some(FileFormat::AgcHeader));
    let text = i.to_string();
    assert!(text.contains("type Pixel (1)"), "{text}");
    assert!(text.contains("SH registers (6) at +0x98"), "{text}");

    let elf = pixel_elf();
    assert_eq!(detect(&elf), Some(FileFormat::AgcElf));
    let Inspection::AgcElf(e) = inspect(&elf) else { panic!("not an ELF inspection") };
    assert_eq!(e.machine, 224);
    assert_eq!(e.header_section_size, 0x160);
    assert_eq!(e.text_size, Some(0x180));
    assert!(e.notes.is_empty(), "{:?}", e.notes);
    let t = e.trailer.unwrap();
    assert_eq!((t.hash, t.program_length, t.sl00_length), (0x7EAF_2669, 0x10C, 0x36));
    assert_eq!(e.sl00_blocks.len(), 2);
    assert_eq!(e.sl00_blocks[0].offset, 0x110);
    assert_eq!(e.sl00_blocks[0].length, 0x36);
    assert!(e.symbols.iter().any(|s| s.name == "Shader::ps_header"));
    assert_eq!(e.header.as_ref().unwrap().shader_type(), ShaderType::Pixel);
    let shown = Inspection::AgcElf(e).to_string();
    assert!(shown.contains("barefoot trailer: hash 0x7eaf2669"), "{shown}");

    let code = ps0();
    let i = inspect(&code);
    assert_eq!(i.format(), Some(FileFormat::GnmCode));
    assert!(i.to_string().contains("crc32 0x72044b7b, computed 0x72044b7b: ok"));

    let shdr = ShdrBuilder::new(GnmShaderType::Pixel).code(&code).build();
    let Inspection::GnmShaderFile(r) = inspect(&shdr) else { panic!("not a Shdr inspection") };
    assert_eq!(r.offset, 0);
    assert!(r.code.as_ref().unwrap().crc_matches());
    // Behind a 0x24-byte PSSL header.
    let mut pssl = vec![0u8; 0x24];
    pssl.extend_from_slice(&shdr);
    let Inspection::GnmShaderFile(r) = inspect(&pssl) else { panic!("not a Shdr inspection") };
    assert_eq!(r.offset, 0x24);

    let dvlb = dvlb_sample();
    let i = inspect(&dvlb);
    assert_eq!(i.format(), Some(FileFormat::Dvlb));
    assert!(i.to_string().contains("uniform projection"));

    assert!(matches!(inspect(b"hello world"), Inspection::Unknown { len: 11, .. }));
    assert!(matches!(inspect(&[]), Inspection::Unknown { len: 0, .. }));
    let mut broken = agc.clone();
    corrupt::shader_type(&mut broken, 0x20);
    let i = inspect(&broken);
    assert!(matches!(i, Inspection::Malformed { format: FileFormat::AgcHeader, .. }));
    assert!(i.to_string().contains("program type"));
}

#[test]
fn inspect_elf_reports_inconsistencies() {
    let (text, _) = shader_text(&[0u8; 0x40], 1, 0x20);
    let elf = AgcElfBuilder::new(&text, &pixel_sample().build(), "ps").build();
    let Inspection::AgcElf(e) = inspect(&elf) else { panic!("not an ELF inspection") };
    assert!(e.notes.iter().any(|n| n.contains("shader_size 0x180")), "{:?}", e.notes);

    let mut header = pixel_sample().build();
    corrupt::version(&mut header, 1);
    let elf = AgcElfBuilder::new(&text, &header, "ps").build();
    let Inspection::AgcElf(e) = inspect(&elf) else { panic!("not an ELF inspection") };
    assert!(e.header.is_none());
    assert!(e.header_error.unwrap().contains("version"));
}

#[cfg(feature = "cli")]
#[test]
fn inspections_serialise() {
    let json = serde_json::to_string(&inspect(&pixel_sample().build())).unwrap();
    assert!(json.contains("\"AgcHeader\""), "{json}");
    serde_json::to_string(&inspect(&pixel_elf())).unwrap();
    serde_json::to_string(&inspect(&ps0())).unwrap();
    serde_json::to_string(&inspect(&dvlb_sample())).unwrap();
}

#[test]
fn program_address_helpers() {
    assert_eq!(program_address(0xAB12_3456, 0xFFFF_FF7F), CODE_AT);
}

// ---------------------------------------------------------------------------
// No panics on any input
// ---------------------------------------------------------------------------

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    fn every_decoder(data: &[u8]) {
        let _ = AgcShader::parse(data, 0);
        let _ = AgcShader::parse(data, 0x1000);
        let _ = GnmShaderFile::parse(data).map(|f| f.decode_code(data));
        let _ = locate_orbshdr(data);
        let _ = GnmCode::decode(data);
        let _ = Dvlb::parse(data);
        let _ = inspect(data).to_string();
        let m = SparseMemory::new();
        if m.map_bytes(0x1000, data).is_ok() {
            let _ = AgcShader::read(&m, 0x1000);
            let _ = GnmCode::read(&m, 0x1000);
            let _ = register_relocated(&m, 0x1000, 0x10_0000);
            let reg = ShaderRegistry::new();
            let _ = reg.create(&m, 0x1000, 0x10_0000, false);
            let _ = reg.resolve(&m, 0x10_0000);
        }
    }

    /// Valid inputs of every format, for mutation.
    fn seeds() -> Vec<Vec<u8>> {
        vec![
            pixel_sample().build(),
            vertex_sample().build(),
            pixel_elf(),
            ps0(),
            ShdrBuilder::new(GnmShaderType::Vertex)
                .usage_slot(InputUsageSlot::default())
                .vertex_input(VertexInputSemantic::default())
                .code(&ps0())
                .build(),
            dvlb_sample(),
        ]
    }

    /// A random but valid container description.
    #[derive(Debug, Clone)]
    struct Spec {
        ty: ShaderType,
        sh: Vec<(u32, u32)>,
        cx: Vec<(u32, u32)>,
        inputs: Vec<u32>,
        outputs: Vec<u32>,
        sharps: Vec<Vec<u16>>,
        specials: Option<(u32, u16, u16, u64)>,
        user_data: bool,
        direct: Vec<(usize, u16)>,
        header_page: u64,
        code_page: u64,
    }

    fn spec() -> impl Strategy<Value = Spec> {
        let regs = || proptest::collection::vec((0u32..0x400, any::<u32>()), 0..20);
        let sems = || proptest::collection::vec(any::<u32>(), 0..10);
        (
            (0usize..9, regs(), regs(), sems(), sems()),
            proptest::collection::vec(proptest::collection::vec(any::<u16>(), 0..5), 4),
            proptest::option::of((any::<u32>(), any::<u16>(), any::<u16>(), any::<u64>())),
            any::<bool>(),
            proptest::collection::vec((0usize..11, any::<u16>()), 0..4),
            (1u64..0x1000, 1u64..(1 << 40)),
        )
            .prop_map(|((ty, sh, cx, inputs, outputs), sharps, specials, user_data, direct, (hp, cp))| Spec {
                ty: ShaderType::ALL[ty],
                sh,
                cx,
                inputs,
                outputs,
                sharps,
                specials,
                user_data,
                direct,
                header_page: hp,
                code_page: cp,
            })
    }

    fn build(spec: &Spec) -> AgcBuilder {
        let mut b = AgcBuilder::new(spec.ty);
        for &(o, v) in &spec.sh {
            b = b.sh_register(o, v);
        }
        for &(o, v) in &spec.cx {
            b = b.context_register(o, v);
        }
        for &v in &spec.inputs {
            b = b.input_semantic(Semantic(v));
        }
        for &v in &spec.outputs {
            b = b.output_semantic(Semantic(v));
        }
        b = match spec.specials {
            Some((dispatch, start, end, draw)) => b.specials(SpecialRegisters {
                dispatch_modifier: dispatch,
                user_data_range: UserDataRange { start, end },
                draw_modifier: DrawModifier(draw),
                ..SpecialRegisters::default()
            }),
            None => b.no_specials(),
        };
        if spec.user_data {
            for (kind, table) in SharpKind::ALL.into_iter().zip(&spec.sharps) {
                for &e in table {
                    b = b.sharp(kind, SharpEntry(e));
                }
            }
            for &(i, sgpr) in &spec.direct {
                b = b.direct_resource(DirectResourceType::ALL[i], sgpr);
            }
        } else {
            b = b.no_user_data();
        }
        b
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
            every_decoder(&data);
        }

        #[test]
        fn built_containers_decode_and_relocate(spec in spec()) {
            let bytes = build(&spec).build();
            let s = AgcShader::parse(&bytes, 0).unwrap();
            prop_assert_eq!(s.shader_type(), spec.ty);
            let pair = spec.ty.program_registers().map(|p| vec![(p.sh_lo(), 0), (p.sh_hi(), 0)]);
            let mut sh = pair.unwrap_or_default();
            sh.extend(&spec.sh);
            let got: Vec<(u32, u32)> = s.sh_registers().iter().map(|e| (e.offset, e.value)).collect();
            prop_assert_eq!(got, sh);
            let got: Vec<(u32, u32)> = s.context_registers().iter().map(|e| (e.offset, e.value)).collect();
            prop_assert_eq!(got, spec.cx.clone());
            let got: Vec<u32> = s.input_semantics().iter().map(|x| x.0).collect();
            prop_assert_eq!(got, spec.inputs.clone());
            let got: Vec<u32> = s.output_semantics().iter().map(|x| x.0).collect();
            prop_assert_eq!(got, spec.outputs.clone());
            prop_assert_eq!(s.specials().is_some(), spec.specials.is_some());
            if let (Some(sp), Some((d, start, end, draw))) = (s.specials(), spec.specials) {
                prop_assert_eq!(sp.dispatch_modifier, d);
                prop_assert_eq!(sp.user_data_range, UserDataRange { start, end });
                prop_assert_eq!(sp.draw_modifier.0, draw);
            }
            prop_assert_eq!(s.user_data().is_some(), spec.user_data);
            if let Some(ud) = s.user_data() {
                for (kind, table) in SharpKind::ALL.into_iter().zip(&spec.sharps) {
                    let got: Vec<u16> = ud.sharps(kind).iter().map(|e| e.0).collect();
                    prop_assert_eq!(&got, table);
                }
                for &(i, _) in &spec.direct {
                    let last = spec.direct.iter().rev().find(|d| d.0 == i).map(|d| d.1);
                    prop_assert_eq!(Some(ud.direct_resources[i]), last);
                }
            }

            // Relocate in guest memory and compare.
            let header_at = spec.header_page * 0x1000 + 0x100_0000;
            let code = spec.code_page << 8;
            let m = SparseMemory::new();
            m.map_bytes(header_at, &bytes).unwrap();
            let created = create_shader(&m, header_at, code).unwrap();
            prop_assert!(created.is_relocated());
            prop_assert_eq!(created.code_address(), Some(code));
            prop_assert_eq!(created.layout(), s.layout());
            prop_assert_eq!(created.context_registers(), s.context_registers());
            prop_assert_eq!(created.user_data(), s.user_data());
            prop_assert_eq!(created.input_semantics(), s.input_semantics());
            prop_assert_eq!(created.output_semantics(), s.output_semantics());
            if spec.ty.program_registers().is_some() {
                prop_assert_eq!(created.program_address(), Some(code));
            } else {
                prop_assert_eq!(created.sh_registers(), s.sh_registers());
            }
            for (_, field) in pm4core::shader::agc::HEADER_POINTER_FIELDS {
                let raw = m.read_u64(header_at + u64::from(field)).unwrap();
                match s.layout().header_pointer(field) {
                    Some(t) => prop_assert_eq!(raw, header_at + u64::from(t)),
                    None => prop_assert_eq!(raw, 0),
                }
            }
            let is_already_relocated = matches!(
                create_shader(&m, header_at, code),
                Err(ShaderError::AlreadyRelocated { .. })
            );
            prop_assert!(is_already_relocated);
            prop_assert_eq!(register_relocated(&m, header_at, code).unwrap(), created);
        }

        #[test]
        fn mutated_containers_never_panic(
            seed in 0usize..6,
            edits in proptest::collection::vec((any::<u16>(), any::<u8>()), 1..8),
            cut in any::<u16>(),
        ) {
            let mut data = seeds().swap_remove(seed);
            for (at, value) in edits {
                let len = data.len();
                if len > 0 {
                    data[usize::from(at) % len] = value;
                }
            }
            every_decoder(&data);
            let keep = usize::from(cut) % (data.len() + 1);
            every_decoder(&data[..keep]);
        }
    }
}
