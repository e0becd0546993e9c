//! Facts from `registers/*.json` as the generated register database must
//! give them, and the check that `src/regs/generated.rs` is current.

use std::path::Path;

use pm4core::regs::db::{
    format_fields, format_register_value, packet_field_type, packet_field_types, register, register_by_name, registers,
    GpuFamily, RegisterSpace,
};
use pm4core::regs::generated::{gfx103, gfx7};

fn reg(family: GpuFamily, name: &str) -> &'static pm4core::regs::db::RegisterInfo {
    register_by_name(family, name).unwrap_or_else(|| panic!("{family} has no register {name}"))
}

#[test]
fn generated_tables_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    match xtask::check(root) {
        Ok(xtask::CheckOutcome::Current) => {}
        other => panic!(
            "src/regs/generated.rs does not match registers/*.json ({other:?}); \
             run `cargo run -p xtask -- regen` and commit the result"
        ),
    }
}

#[test]
fn gfx103_offsets() {
    let g = GpuFamily::Gfx103;
    assert_eq!(gfx103::SPI_SHADER_PGM_LO_PS, 0x2C08);
    assert_eq!(gfx103::COMPUTE_PGM_LO, 0x2E0C);
    assert_eq!(gfx103::VGT_PRIMITIVE_TYPE, 0xC242);
    assert_eq!(gfx103::DB_RENDER_CONTROL, 0xA000);
    assert_eq!(gfx103::CB_COLOR0_BASE, 0xA318);
    for (name, offset) in [
        ("SPI_SHADER_PGM_LO_PS", 0x2C08),
        ("COMPUTE_PGM_LO", 0x2E0C),
        ("VGT_PRIMITIVE_TYPE", 0xC242),
        ("DB_RENDER_CONTROL", 0xA000),
        ("CB_COLOR0_BASE", 0xA318),
        ("DB_RENDER_OVERRIDE", 0xA003),
        ("GRBM_STATUS", 0x2004),
    ] {
        assert_eq!(reg(g, name).offset, offset, "{name}");
        assert_eq!(register(g, offset).map(|r| r.name), Some(name));
    }
    // The one gfx10.3 register that comes from the manually defined file.
    let vrs = reg(g, "GE_VRS_RATE");
    assert_eq!(vrs.offset, 0xC263);
    assert_eq!(vrs.fields.len(), 2);
    assert_eq!(register(g, 0xC263).map(|r| r.name), Some("GE_VRS_RATE"));
}

#[test]
fn gfx7_offsets() {
    let g = GpuFamily::Gfx7;
    assert_eq!(gfx7::DB_DEPTH_INFO, 0xA00F);
    assert_eq!(reg(g, "DB_DEPTH_INFO").offset, 0xA00F);
    assert_eq!(register(g, 0xA00F).map(|r| r.name), Some("DB_DEPTH_INFO"));
    assert_eq!(gfx7::DB_RENDER_CONTROL, 0xA000);
    // gfx10.3 dropped DB_DEPTH_INFO.
    assert!(register_by_name(GpuFamily::Gfx103, "DB_DEPTH_INFO").is_none());
    // Registers the manually defined file adds for gfx6..gfx8.
    assert_eq!(reg(g, "SRBM_STATUS").offset, 0x394);
    assert_eq!(reg(g, "SDMA1_STATUS_REG").offset, 0x360D);
    // Manual entries for other chips only are not merged.
    assert!(register_by_name(g, "COMPUTE_STATIC_THREAD_MGMT_SE4").is_none());
    assert!(register_by_name(g, "COMPUTE_MAX_WAVE_ID").is_none());
    assert!(register_by_name(g, "GE_VRS_RATE").is_none());
}

#[test]
fn space_classification() {
    assert_eq!(RegisterSpace::of(0x1FFF), RegisterSpace::Other);
    assert_eq!(RegisterSpace::of(0x2000), RegisterSpace::Config);
    assert_eq!(RegisterSpace::of(0x2BFF), RegisterSpace::Config);
    assert_eq!(RegisterSpace::of(0x2C00), RegisterSpace::Sh);
    assert_eq!(RegisterSpace::of(0x2FFF), RegisterSpace::Sh);
    assert_eq!(RegisterSpace::of(0x3000), RegisterSpace::Other);
    assert_eq!(RegisterSpace::of(0x9FFF), RegisterSpace::Other);
    assert_eq!(RegisterSpace::of(0xA000), RegisterSpace::Context);
    assert_eq!(RegisterSpace::of(0xBFFF), RegisterSpace::Context);
    assert_eq!(RegisterSpace::of(0xC000), RegisterSpace::Uconfig);
    assert_eq!(RegisterSpace::of(0xFFFF), RegisterSpace::Uconfig);
    assert_eq!(RegisterSpace::of(0x10000), RegisterSpace::Other);
    assert_eq!(RegisterSpace::of(u32::MAX), RegisterSpace::Other);
    assert_eq!(RegisterSpace::Context.base(), Some(0xA000));
    assert_eq!(RegisterSpace::Other.range(), None);

    let g = GpuFamily::Gfx103;
    assert_eq!(reg(g, "GRBM_STATUS").space(), RegisterSpace::Config);
    assert_eq!(reg(g, "SPI_SHADER_PGM_LO_PS").space(), RegisterSpace::Sh);
    assert_eq!(reg(g, "COMPUTE_PGM_LO").space(), RegisterSpace::Sh);
    assert_eq!(reg(g, "DB_RENDER_CONTROL").space(), RegisterSpace::Context);
    assert_eq!(reg(g, "CB_COLOR0_BASE").space(), RegisterSpace::Context);
    assert_eq!(reg(g, "VGT_PRIMITIVE_TYPE").space(), RegisterSpace::Uconfig);
    assert_eq!(reg(g, "SQ_WAVE_ACTIVE").space(), RegisterSpace::Other);
}

#[test]
fn db_render_override_fields() {
    for family in GpuFamily::ALL {
        let info = reg(family, "DB_RENDER_OVERRIDE");
        assert_eq!(info.fields.len(), 23, "{family}");
        let hiz = info.field("FORCE_HIZ_ENABLE").expect("FORCE_HIZ_ENABLE");
        assert_eq!((hiz.lo, hiz.hi), (0, 1));
        assert_eq!(hiz.mask(), 0b11);
        let names: Vec<(&str, u32)> = hiz.values.iter().map(|v| (v.name, v.value)).collect();
        assert_eq!(names, [("FORCE_OFF", 0), ("FORCE_ENABLE", 1), ("FORCE_DISABLE", 2), ("FORCE_RESERVED", 3)]);
        let full_z = info.field("FORCE_FULL_Z_RANGE").expect("FORCE_FULL_Z_RANGE");
        assert_eq!((full_z.lo, full_z.hi), (13, 14));
        let fast_z = info.field("FAST_Z_DISABLE").expect("FAST_Z_DISABLE");
        assert_eq!((fast_z.lo, fast_z.hi), (7, 7));
        assert!(fast_z.values.is_empty());
        let preserve = info.field("PRESERVE_COMPRESSION").expect("PRESERVE_COMPRESSION");
        assert_eq!((preserve.lo, preserve.hi), (31, 31));
        assert!(info.field("force_hiz_enable").is_none(), "names are case-sensitive");
    }
}

#[test]
fn decode_known_value() {
    let info = reg(GpuFamily::Gfx103, "DB_RENDER_OVERRIDE");
    // FORCE_HIZ_ENABLE = FORCE_DISABLE (2), FORCE_HIS_ENABLE0 = FORCE_DISABLE,
    // FORCE_HIS_ENABLE1 = FORCE_DISABLE, FAST_Z_DISABLE = 1, MAX_TILES_IN_DTT = 5,
    // PRESERVE_COMPRESSION = 1.
    let value = 0b10 | 0b10 << 2 | 0b10 << 4 | 1 << 7 | 5 << 21 | 1 << 31;
    let decoded: Vec<_> = info.decode(value).collect();
    assert_eq!(decoded.len(), info.fields.len());
    let get = |name: &str| decoded.iter().find(|f| f.field.name == name).unwrap_or_else(|| panic!("{name}"));
    assert_eq!(get("FORCE_HIZ_ENABLE").value, 2);
    assert_eq!(get("FORCE_HIZ_ENABLE").enum_name, Some("FORCE_DISABLE"));
    assert_eq!(get("FORCE_HIS_ENABLE1").enum_name, Some("FORCE_DISABLE"));
    assert_eq!(get("FAST_Z_DISABLE").value, 1);
    assert_eq!(get("FAST_Z_DISABLE").enum_name, None);
    assert_eq!(get("MAX_TILES_IN_DTT").value, 5);
    assert_eq!(get("PRESERVE_COMPRESSION").value, 1);
    assert_eq!(get("FORCE_FULL_Z_RANGE").enum_name, Some("FORCE_OFF"));

    let text = format_register_value(info, value);
    assert!(
        text.starts_with(
            "FORCE_HIZ_ENABLE = FORCE_DISABLE, FORCE_HIS_ENABLE0 = FORCE_DISABLE, \
             FORCE_HIS_ENABLE1 = FORCE_DISABLE, FORCE_SHADER_Z_ORDER = 0, FAST_Z_DISABLE = 1, "
        ),
        "{text}"
    );
    assert!(text.contains("MAX_TILES_IN_DTT = 5, "), "{text}");
    assert!(text.ends_with("PRESERVE_COMPRESSION = 1"), "{text}");

    // VGT_PRIMITIVE_TYPE.PRIM_TYPE = DI_PT_TRILIST (4).
    let prim = reg(GpuFamily::Gfx103, "VGT_PRIMITIVE_TYPE");
    assert_eq!(format_register_value(prim, 4), "PRIM_TYPE = DI_PT_TRILIST");
    // Bits outside every field are reported, not lost.
    assert_eq!(format_register_value(prim, 4 | 1 << 8), "PRIM_TYPE = DI_PT_TRILIST (other bits 0x100)");
    // A register without fields prints its raw value.
    let pgm_lo = reg(GpuFamily::Gfx103, "SPI_SHADER_PGM_LO_PS");
    assert!(pgm_lo.fields.is_empty());
    assert_eq!(format_register_value(pgm_lo, 0xABCD), "0x0000ABCD");
    assert_eq!(pgm_lo.decode(1).count(), 0);
}

#[test]
fn full_width_fields_do_not_overflow() {
    let field = pm4core::regs::db::FieldInfo { name: "ALL", lo: 0, hi: 31, values: &[] };
    assert_eq!(field.width(), 32);
    assert_eq!(field.mask(), u32::MAX);
    assert_eq!(field.extract(0xDEAD_BEEF), 0xDEAD_BEEF);
    assert_eq!(field.insert(0x1234, 0xFFFF_FFFF), u32::MAX);
    let top = pm4core::regs::db::FieldInfo { name: "TOP", lo: 31, hi: 31, values: &[] };
    assert_eq!(top.mask(), 1 << 31);
    assert_eq!(top.extract(0x8000_0000), 1);
    assert_eq!(top.insert(0, 3), 0x8000_0000);
    // Malformed fields (built by hand) must not panic either.
    for (lo, hi) in [(32, 40), (255, 255), (5, 2), (0, 255)] {
        let odd = pm4core::regs::db::FieldInfo { name: "ODD", lo, hi, values: &[] };
        let _ = (odd.width(), odd.mask(), odd.extract(u32::MAX), odd.insert(7, 9));
        let _ = format_fields(&[odd], u32::MAX);
    }
}

#[test]
fn every_register_round_trips_by_name_and_offset() {
    for family in GpuFamily::ALL {
        let all = registers(family);
        assert!(all.len() > 1000, "{family}: {} registers", all.len());
        assert!(all.windows(2).all(|w| w[0].offset < w[1].offset), "{family}: sorted by offset, no repeats");
        for info in all {
            let by_name = register_by_name(family, info.name);
            assert!(by_name.is_some_and(|r| std::ptr::eq(r, info)), "{family} {}", info.name);
            let by_offset = register(family, info.offset);
            assert!(by_offset.is_some_and(|r| std::ptr::eq(r, info)));
            for field in info.fields {
                assert!(field.lo <= field.hi && field.hi <= 31, "{}.{}", info.name, field.name);
            }
        }
        assert!(register_by_name(family, "NO_SUCH_REGISTER").is_none());
        assert!(register_by_name(family, "").is_none());
        assert!(register(family, 0xFFFF_FFFF).is_none());
    }
}

#[test]
fn family_names() {
    assert_eq!("gfx10.3".parse::<GpuFamily>(), Ok(GpuFamily::Gfx103));
    assert_eq!("gfx103".parse::<GpuFamily>(), Ok(GpuFamily::Gfx103));
    assert_eq!("GFX7".parse::<GpuFamily>(), Ok(GpuFamily::Gfx7));
    assert!("gfx9".parse::<GpuFamily>().is_err());
    assert_eq!(GpuFamily::Gfx103.to_string(), "gfx10.3");
    assert_eq!(GpuFamily::Gfx7.to_string(), "gfx7");
    for family in GpuFamily::ALL {
        assert_eq!(family.to_string().parse::<GpuFamily>(), Ok(family));
    }
}

#[test]
fn packet_body_types() {
    assert_eq!(packet_field_types().len(), 27);

    // COMMAND has one layout up to gfx8 and another from gfx9 on.
    let command = packet_field_type("COMMAND", GpuFamily::Gfx103).expect("COMMAND");
    assert_eq!(command.at, 0x415);
    assert!(command.chips.contains(&"gfx103"));
    let byte_count = command.field("BYTE_COUNT").expect("BYTE_COUNT");
    assert_eq!((byte_count.lo, byte_count.hi), (0, 25));
    let command7 = packet_field_type("COMMAND", GpuFamily::Gfx7).expect("COMMAND gfx7");
    assert!(!std::ptr::eq(command, command7));
    let byte_count7 = command7.field("BYTE_COUNT").expect("BYTE_COUNT");
    assert_eq!((byte_count7.lo, byte_count7.hi), (0, 20));
    let swap = command7.field("SRC_SWAP").expect("SRC_SWAP");
    assert_eq!((swap.lo, swap.hi), (22, 23));

    let release = packet_field_type("RELEASE_MEM_OP", GpuFamily::Gfx103).expect("RELEASE_MEM_OP");
    assert_eq!(release.at, 0x490);
    assert!(packet_field_type("RELEASE_MEM_OP", GpuFamily::Gfx7).is_none());
    assert!(packet_field_type("GCR_CNTL", GpuFamily::Gfx103).is_some());
    assert!(packet_field_type("GCR_CNTL", GpuFamily::Gfx7).is_none());

    let word1 = packet_field_type("CP_DMA_WORD1", GpuFamily::Gfx103).expect("CP_DMA_WORD1");
    let dst_sel = word1.field("DST_SEL").expect("DST_SEL");
    assert_eq!(dst_sel.value_name(1), Some("GDS"));

    // Plain address dwords have no fields.
    let src_lo = packet_field_type("SRC_ADDR_LO", GpuFamily::Gfx103).expect("SRC_ADDR_LO");
    assert!(src_lo.fields.is_empty());
    assert!(packet_field_type("NO_SUCH_DWORD", GpuFamily::Gfx103).is_none());
}

#[test]
fn shader_stages_per_family() {
    use pm4core::regs::stages::{program_register, shader_stages, stage_registers, HardwareStage, ProgramRegister};
    // gfx7: six graphics stages, each with its own RSRC and 16 user-data registers.
    let gfx7_stages = shader_stages(GpuFamily::Gfx7);
    assert_eq!(gfx7_stages.iter().map(|s| s.stage).collect::<Vec<_>>(), HardwareStage::ALL);
    for s in gfx7_stages {
        assert_eq!(s.user_data_count, 16, "{}", s.stage);
        assert!(s.rsrc1.is_some() && s.rsrc2.is_some(), "{}", s.stage);
    }
    let es = stage_registers(GpuFamily::Gfx7, HardwareStage::Es).unwrap();
    assert_eq!(
        (es.pgm_lo, es.pgm_hi, es.rsrc1, es.rsrc2, es.rsrc3, es.user_data),
        (
            gfx7::SPI_SHADER_PGM_LO_ES,
            gfx7::SPI_SHADER_PGM_HI_ES,
            Some(gfx7::SPI_SHADER_PGM_RSRC1_ES),
            Some(gfx7::SPI_SHADER_PGM_RSRC2_ES),
            Some(gfx7::SPI_SHADER_PGM_RSRC3_ES),
            Some(gfx7::SPI_SHADER_USER_DATA_ES_0)
        )
    );
    assert_eq!(es.user_data_range(), 0x2CCC..0x2CDC);
    let cs = stage_registers(GpuFamily::Gfx7, HardwareStage::Cs).unwrap();
    assert_eq!((cs.pgm_lo, cs.rsrc3, cs.user_data_count), (gfx7::COMPUTE_PGM_LO, None, 16));
    // gfx10.3: 32 per graphics stage; the merged ES and LS stages have no
    // RSRC or user data of their own.
    let ps = stage_registers(GpuFamily::Gfx103, HardwareStage::Ps).unwrap();
    assert_eq!((ps.pgm_lo, ps.user_data_count), (gfx103::SPI_SHADER_PGM_LO_PS, 32));
    let ls = stage_registers(GpuFamily::Gfx103, HardwareStage::Ls).unwrap();
    assert_eq!((ls.pgm_lo, ls.rsrc1, ls.user_data, ls.user_data_count), (gfx103::SPI_SHADER_PGM_LO_LS, None, None, 0));
    assert_eq!(stage_registers(GpuFamily::Gfx103, HardwareStage::Cs).unwrap().rsrc3, Some(gfx103::COMPUTE_PGM_RSRC3));
    assert_eq!(
        program_register(GpuFamily::Gfx7, gfx7::SPI_SHADER_PGM_LO_HS),
        Some((HardwareStage::Hs, ProgramRegister::Lo))
    );
    assert_eq!(program_register(GpuFamily::Gfx7, gfx7::COMPUTE_PGM_HI), Some((HardwareStage::Cs, ProgramRegister::Hi)));
    assert_eq!(program_register(GpuFamily::Gfx7, gfx7::SPI_SHADER_PGM_RSRC1_PS), None);
}

#[test]
fn register_views_per_family() {
    use pm4core::regs::{HardwareStage, ProgramStage, RegisterFile};
    let mut regs = RegisterFile::new();
    // gfx7 layout: a GS program, ES user data, a colour target without
    // BASE_EXT, a depth buffer with DB_DEPTH_SIZE.
    regs.set(gfx7::SPI_SHADER_PGM_LO_GS, 0x0012_3456);
    regs.set(gfx7::SPI_SHADER_PGM_HI_GS, 0x01);
    regs.set(gfx7::SPI_SHADER_USER_DATA_ES_15, 0xE5);
    regs.set(gfx7::CB_COLOR0_BASE + 15, 0x0004_0000);
    regs.set(gfx7::CB_COLOR0_PITCH + 15, 0x3F);
    regs.set(gfx7::CB_COLOR0_SLICE + 15, 0xFFF);
    regs.set(gfx7::DB_Z_READ_BASE, 0x100);
    regs.set(gfx7::DB_DEPTH_SIZE, 0x0003_F03F);
    regs.set(gfx7::DB_Z_INFO, 3);
    let v = regs.view_for(GpuFamily::Gfx7);
    assert_eq!(v.family(), GpuFamily::Gfx7);
    assert_eq!(v.stage_program_address(HardwareStage::Gs), 0x0100_1234_5600);
    assert_eq!(v.user_data(ProgramStage::Es).len(), 16);
    assert_eq!(v.user_data(ProgramStage::Es)[15], 0xE5);
    assert_eq!(v.user_data(ProgramStage::Ps).len(), 16);
    assert_eq!(v.stage_user_data(HardwareStage::Hs).len(), 16);
    let rt = v.render_target(1).unwrap();
    assert_eq!((rt.address, rt.pitch, rt.slice, rt.attrib2, rt.attrib3), (0x0400_0000, 0x3F, 0xFFF, 0, 0));
    assert_eq!(v.depth(), (3, 0x1_0000, 0x0003_F03F));
    // The same file read in the gfx10.3 layout: ES user data are GS's, 32.
    let v = regs.view();
    assert_eq!(v.family(), GpuFamily::Gfx103);
    assert_eq!(v.user_data(ProgramStage::Es).len(), 32);
    assert_eq!(v.user_data(ProgramStage::Es).as_ptr(), v.stage_user_data(HardwareStage::Gs).as_ptr());
    assert!(v.stage_user_data(HardwareStage::Es).is_empty());
    assert_eq!(v.depth().2, 0, "DB_DEPTH_SIZE_XY, not gfx7's DB_DEPTH_SIZE");
}
