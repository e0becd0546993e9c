//! The fuzz targets as ordinary tests: every file of `fuzz/corpus/<target>/`
//! (the seed corpus and what the fuzzer found worth keeping) and of
//! `fuzz/regressions/<target>/` (minimized crashes, one per bug found) runs
//! through the same harness the fuzz target runs (`pm4core::fuzzing`), and
//! must come back without a broken invariant. Work per input is bounded by
//! the harnesses' budgets, so this test cannot hang.
//!
//! A regression whose name starts with `open-` is a bug found and reported
//! but not fixed yet: it must still break its invariant (so that the fix is
//! noticed and the prefix dropped, turning it into an ordinary regression).
//!
//! The seeds are written by the generators below:
//! `cargo test --test fuzz_corpus -- --ignored write_seed_corpus` rewrites
//! every `seed-*` file (the fuzzer's own finds are kept as they are).

mod common;

use std::path::{Path, PathBuf};

use common::shader_builder::{
    shader_text, sl00_block, AgcBuilder, AgcElfBuilder, DvlbBuilder, DvleSpec, OrbShdrBuilder, ShdrBuilder,
};
use common::Cmd;
use pm4core::fuzzing::processor::{CMD_BASE, DATA_BASE, SCRATCH_BASE, SHADER_CODE, STEP_LEN};
use pm4core::fuzzing::{Outcome, TARGETS};
use pm4core::import::IMPORT_BASE;
use pm4core::memory::{GuestMemory, SparseMemory};
use pm4core::packet::{Header, Opcode, NOP_PAD, TYPE2_FILLER};
use pm4core::processor::HOST_COMMAND_SIGNATURE;
use pm4core::regs::gfx103 as r;
use pm4core::shader::agc::{
    DrawModifier, RegisterEntry, Semantic, ShaderType, SharpEntry, SharpKind, SpecialRegisters, UserDataRange,
};
use pm4core::shader::create_shader;
use pm4core::shader::dvlb::{DvleConstant, DvleOutput};
use pm4core::shader::gnm::{
    GnmBinaryType, GnmShaderType, InputUsageSlot, PixelInputSemantic, VertexExportSemantic, VertexInputSemantic,
};
use pm4core::trace::{Tag, Trace, TraceEvent, TraceWriter};
use xxhash_rust::xxh3::xxh3_64;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// Every file directly under `dir`, sorted (none when it does not exist).
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_file()).collect();
    files.sort();
    files
}

/// Runs `harness` over every corpus and regression file of `target`;
/// returns how many files ran.
fn replay(target: &str, harness: fn(&[u8]) -> Outcome) -> usize {
    let mut failures = Vec::new();
    let mut ran = 0;
    for kind in ["corpus", "regressions"] {
        for path in files(&fuzz_dir().join(kind).join(target)) {
            if path.extension().is_some_and(|e| e == "md") {
                continue;
            }
            let data = std::fs::read(&path).unwrap();
            ran += 1;
            let open = kind == "regressions" && file_name(&path).starts_with("open-");
            match (harness(&data), open) {
                (Err(v), false) => failures.push(format!("{}: {v}", path.display())),
                (Ok(()), true) => failures.push(format!(
                    "{}: keeps every invariant now; the bug is fixed: drop the `open-` prefix",
                    path.display()
                )),
                _ => {}
            }
        }
    }
    assert!(failures.is_empty(), "broken invariants:\n{}", failures.join("\n"));
    ran
}

#[test]
fn every_target_has_a_seed_corpus_and_replays_it() {
    for (target, harness) in TARGETS {
        let seeds = files(&fuzz_dir().join("corpus").join(target));
        assert!(seeds.iter().any(|p| file_name(p).starts_with("seed-")), "{target} has no seed corpus");
        assert!(replay(target, harness) >= seeds.len());
    }
}

#[test]
fn the_seeds_are_what_the_generators_write() {
    // A seed that drifted from its generator is still a valid input, but the
    // generators are the documentation of what each seed is.
    for (target, seeds) in seeds() {
        for (name, bytes) in seeds {
            let path = fuzz_dir().join("corpus").join(target).join(format!("seed-{name}"));
            let stored = std::fs::read(&path).unwrap_or_default();
            assert!(stored == bytes, "{} differs from its generator (rewrite the seeds)", path.display());
        }
    }
    let stored = std::fs::read_to_string(fuzz_dir().join(DICT)).unwrap_or_default();
    assert!(stored == processor_dict(), "{DICT} differs from its generator (rewrite the seeds)");
}

#[test]
fn the_checksum_fixers_leave_valid_files_alone_and_repair_broken_ones() {
    use pm4core::fuzzing::import::with_fixed_hashes;
    use pm4core::fuzzing::trace::with_fixed_crcs;
    for (_, trace) in trace_seeds() {
        assert_eq!(with_fixed_crcs(&trace), trace);
        let mut broken = trace.clone();
        let last = broken.len() - 1;
        broken[last] ^= 1;
        assert!(Trace::from_bytes(broken.clone()).is_err());
        assert_eq!(with_fixed_crcs(&broken), trace);
    }
    let capture = kycap(&[(1, 0, 0, &[NOP_PAD], &[]), (3, u32::MAX, 0, &[], &[])]);
    assert_eq!(with_fixed_hashes(&capture), capture);
    let mut broken = capture.clone();
    broken[24 + 40] ^= 0xFF; // the first record's only dword
    broken[capture.len() - 1] ^= 1; // the footer hash
    let fixed = with_fixed_hashes(&broken);
    let limits = pm4core::import::KycapLimits::default();
    assert!(pm4core::import::parse_kycap(&broken, &limits).is_err());
    assert!(pm4core::import::parse_kycap(&fixed, &limits).is_ok());
}

#[test]
#[ignore = "writes the seed corpus into fuzz/corpus/"]
fn write_seed_corpus() {
    for (target, seeds) in seeds() {
        let dir = fuzz_dir().join("corpus").join(target);
        std::fs::create_dir_all(&dir).unwrap();
        for path in files(&dir) {
            if file_name(&path).starts_with("seed-") {
                std::fs::remove_file(path).unwrap();
            }
        }
        for (name, bytes) in seeds {
            std::fs::write(dir.join(format!("seed-{name}")), bytes).unwrap();
        }
    }
    std::fs::create_dir_all(fuzz_dir().join("dicts")).unwrap();
    std::fs::write(fuzz_dir().join(DICT), processor_dict()).unwrap();
}

/// The `processor` target's libFuzzer dictionary, relative to `fuzz/`.
const DICT: &str = "dicts/processor.dict";

/// A type-3 header for every named opcode at the body lengths packets use
/// (and the one-dword form), the addresses the harness maps, and a few
/// dwords the processor gives meaning to.
fn processor_dict() -> String {
    let quote = |bytes: &[u8]| bytes.iter().map(|b| format!("\\x{b:02x}")).collect::<String>();
    let mut text = String::from(
        "# libFuzzer dictionary of the `processor` target, written by\n\
         # `cargo test --test fuzz_corpus -- --ignored write_seed_corpus`.\n",
    );
    for op in Opcode::all_named() {
        for count in [0u32, 1, 2, 3, 4, 5, 6, 7, 8, 12, 0x3FFF] {
            let header = 0xC000_0000 | (count << 16) | (u32::from(op.0) << 8);
            let name = op.name().unwrap_or("unknown").to_lowercase();
            text.push_str(&format!("{name}_{count}=\"{}\"\n", quote(&header.to_le_bytes())));
        }
    }
    for (name, value) in [
        ("cmd_base", CMD_BASE as u32),
        ("data_base", DATA_BASE as u32),
        ("scratch_base", SCRATCH_BASE as u32),
        ("shader_code", SHADER_CODE as u32),
        ("shader_code_page", (SHADER_CODE >> 8) as u32),
        ("nop_pad", NOP_PAD),
        ("type2_filler", TYPE2_FILLER),
        ("host_command", HOST_COMMAND_SIGNATURE),
    ] {
        text.push_str(&format!("{name}=\"{}\"\n", quote(&value.to_le_bytes())));
    }
    text.push_str(&format!("valid_bit=\"{}\"\n", quote(&(1u64 << 63).to_le_bytes())));
    text
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

type Seeds = Vec<(&'static str, Vec<u8>)>;

fn seeds() -> Vec<(&'static str, Seeds)> {
    vec![
        ("trace_reader", trace_seeds()),
        ("processor", processor_seeds()),
        ("shader_containers", shader_seeds()),
        ("import", import_seeds()),
    ]
}

fn dword_bytes(dw: &[u32]) -> Vec<u8> {
    dw.iter().flat_map(|d| d.to_le_bytes()).collect()
}

fn lo(a: u64) -> u32 {
    a as u32
}

// ------------------------------------------------------------ containers

fn pixel_container() -> AgcBuilder {
    AgcBuilder::new(ShaderType::Pixel)
        .sh_register(0x006, 0x0100_0150)
        .sh_register(0x00A, 0x022C_0001)
        .sh_register(0x00B, 0)
        .context_register(0x1C4, 0)
        .context_register(0x1C5, 4)
        .context_register(0x1B3, 2)
        .context_register(0x203, 0x10)
        .input_semantic(Semantic(0x0F))
        .input_semantic(Semantic(0x10))
        .shader_size(0x180)
}

fn geometry_container() -> AgcBuilder {
    AgcBuilder::new(ShaderType::Geometry)
        .sh_register(0x08A, 0x622C_0103)
        .sh_register(0x08B, 0x0003_0010)
        .context_register(0x1B1, 0)
        .context_register(0x2D3, 0)
        .specials(SpecialRegisters {
            ge_cntl: RegisterEntry::new(0x25B, 0x8040),
            vgt_shader_stages_en: RegisterEntry::new(0x2D5, 0x0200_2000),
            dispatch_modifier: 0,
            user_data_range: UserDataRange { start: 0, end: 8 },
            draw_modifier: DrawModifier(0x4000_0000),
            vgt_gs_out_prim_type: RegisterEntry::new(0x29B, 0),
            ge_user_vgpr_en: RegisterEntry::new(0x262, 0),
        })
        .output_semantic(Semantic(0x0F))
        .sharp(SharpKind::ReadOnly, SharpEntry(0x8000))
        .sharp(SharpKind::ConstantBuffer, SharpEntry(0x8004))
        .shader_size(0x240)
}

fn compute_container() -> AgcBuilder {
    AgcBuilder::new(ShaderType::Compute).sh_register(0x212, 0x0000_0040).shader_size(0x100)
}

const PS_CODE: [u32; 8] =
    [0xBEEB_03FF, 0x0000_0003, 0x7E00_0280, 0x5E00_0100, 0xBF80_0000, 0xF800_1C0F, 0x0000_0000, 0xBF81_0000];

fn orbshdr_blob() -> Vec<u8> {
    OrbShdrBuilder::new(GnmBinaryType::Ps as u8).code_dwords(&PS_CODE).hash(0xB0A4_5B2B, 0x1D39_766D).build().0
}

fn elf_file() -> Vec<u8> {
    let (text, _) = shader_text(&[0u8; 0x10C], 0x7EAF_2669, 0x36);
    AgcElfBuilder::new(&text, &pixel_container().build(), "ps").section(".metadata", &sl00_block(0x40, 0)).build()
}

fn shdr_vertex_file() -> Vec<u8> {
    let code = OrbShdrBuilder::new(GnmBinaryType::VsVs as u8).program(&[0xBF81_0000]).build().0;
    ShdrBuilder::new(GnmShaderType::Vertex)
        .usage_slot(InputUsageSlot { usage_type: 0x17, api_slot: 0, start_register: 2, flags: 0 })
        .vertex_input(VertexInputSemantic { semantic: 0, vgpr: 4, size_in_elements: 3, pad: 0 })
        .vertex_export(VertexExportSemantic { semantic: 15, packed: 0x41 })
        .common(4, 0, false)
        .code(&code)
        .build()
}

fn shdr_pixel_file() -> Vec<u8> {
    ShdrBuilder::new(GnmShaderType::Pixel)
        .pixel_input(PixelInputSemantic(0x0500 | 15))
        .pixel_input(PixelInputSemantic(16))
        .build()
}

fn dvlb_file() -> Vec<u8> {
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

/// A container relocated in guest memory, read back.
fn relocated(container: &[u8], header_at: u64, code: u64) -> Vec<u8> {
    let m = SparseMemory::new();
    m.map_bytes(header_at, container).unwrap();
    create_shader(&m, header_at, code).unwrap();
    let mut out = vec![0u8; container.len()];
    m.read_bytes(header_at, &mut out).unwrap();
    out
}

/// A `shader_containers` input: flags, base, code page, poke offset, bytes.
fn shader_input(flags: u8, base: u64, code: u64, poke: u16, blob: &[u8]) -> Vec<u8> {
    let mut v = vec![flags];
    v.extend_from_slice(&base.to_le_bytes());
    v.extend_from_slice(&((code >> 8) as u32).to_le_bytes());
    v.extend_from_slice(&poke.to_le_bytes());
    v.extend_from_slice(blob);
    v
}

fn shader_seeds() -> Seeds {
    let code = 0x20_0000;
    let header = pm4core::fuzzing::shaders::HEADER_AT;
    let mut seeds: Seeds = vec![
        ("agc-pixel", shader_input(0, 0, code, 0x10, &pixel_container().build())),
        ("agc-geometry-specials-sharps", shader_input(0, 0x4000, code, 0x98, &geometry_container().build())),
        ("agc-compute", shader_input(0, 0, code, 0x60, &compute_container().build())),
        (
            "agc-pixel-relocated",
            shader_input(2, header, code, 0x20, &relocated(&pixel_container().build(), header, code)),
        ),
        ("agc-geometry-at-base", shader_input(1, 0x7FFF_0000, 0x10_0000, 0x28, &geometry_container().build())),
        ("elf", shader_input(0, 0, code, 0, &elf_file())),
        ("orbshdr", shader_input(0, 0, code, 0, &orbshdr_blob())),
        ("shdr-vertex", shader_input(0, 0, code, 0, &shdr_vertex_file())),
        ("shdr-pixel", shader_input(0, 0, code, 0, &shdr_pixel_file())),
        ("dvlb", shader_input(0, 0, code, 0, &dvlb_file())),
    ];
    let names = ["agc-type-0", "agc-type-1", "agc-type-2", "agc-type-3", "agc-type-4", "agc-type-5", "agc-type-6"];
    let types = [
        ShaderType::ALL[0],
        ShaderType::ALL[1],
        ShaderType::ALL[2],
        ShaderType::ALL[3],
        ShaderType::ALL[6],
        ShaderType::ALL[7],
        ShaderType::ALL[8],
    ];
    for (name, ty) in names.into_iter().zip(types) {
        seeds.push((name, shader_input(0, 0, code, 0x40, &AgcBuilder::new(ty).build())));
    }
    seeds
}

// ------------------------------------------------------------- processor

/// A `processor` input: config, schedule, command dwords, host steps, guest data.
fn processor_input(config: u8, schedule: u8, cmd: &Cmd, steps: &[(u8, u32, u32)], guest: &[u8]) -> Vec<u8> {
    let mut v = vec![config, schedule];
    v.extend_from_slice(&(cmd.len() as u16).to_le_bytes());
    v.extend_from_slice(&dword_bytes(cmd.dwords()));
    v.push(steps.len() as u8);
    for &(kind, a, b) in steps {
        v.push(kind);
        v.extend_from_slice(&a.to_le_bytes());
        v.extend_from_slice(&b.to_le_bytes());
    }
    assert_eq!(v.len(), 5 + cmd.dwords().len() * 4 + steps.len() * STEP_LEN);
    v.extend_from_slice(guest);
    v
}

/// Default config (depth 4) and schedule (8 calls, unlimited slices, 16 RBs).
const CONFIG: u8 = 3;
const SCHEDULE: u8 = 7 | (3 << 3) | (5 << 5);
const S: u64 = SCRATCH_BASE;
const D: u64 = DATA_BASE;

fn processor_seeds() -> Seeds {
    let mut seeds: Seeds = Vec::new();
    let mut add = |name, config, schedule, cmd: Cmd, steps: &[(u8, u32, u32)], guest: Vec<u8>| {
        seeds.push((name, processor_input(config, schedule, &cmd, steps, &guest)));
    };

    // Register writers of every space, loads from guest memory, RMW,
    // context save/restore.
    let mut image = vec![0u32; 0x40];
    image[8] = 0xAAAA;
    image[9] = 0xBB;
    image[0x20..0x24].copy_from_slice(&[r::PA_SC_WINDOW_OFFSET - 0xA000, 0x33, 0xFFFF_FFFF, 0xDEAD]);
    add(
        "registers",
        CONFIG,
        SCHEDULE,
        Cmd::new()
            .set_context(r::DB_RENDER_CONTROL, &[1, 2])
            .set_sh(r::SPI_SHADER_PGM_LO_PS, &[0x1234, 0x56])
            .set_uconfig(r::VGT_PRIMITIVE_TYPE, &[4])
            .set_reg(Opcode::SET_CONFIG_REG, 0x2000, 0x263E, &[0xABC])
            .pkt3(Opcode::SET_UCONFIG_REG_INDEX, &[(2 << 28) | (r::VGT_INDEX_TYPE - 0xC000), 1])
            .pkt3(Opcode::SET_SH_REG_INDEX, &[(3 << 28) | (r::COMPUTE_PGM_LO - 0x2C00), 0x77])
            .pkt3(Opcode::SET_CONTEXT_REG_INDEX, &[r::DB_DEPTH_CLEAR - 0xA000, 5])
            .raw(&[(1 << 16) | r::PA_SC_WINDOW_OFFSET, 0x11, 0x22])
            .pkt3(Opcode::CONTEXT_REG_RMW, &[0, 0x0000_FFFF, 0x1234_5678])
            .pkt3(Opcode::REG_RMW, &[r::VGT_PRIMITIVE_TYPE, 0x30, 0x01])
            .pkt3(Opcode::LOAD_SH_REG, &[lo(D), 0, 8, 2])
            .pkt3(Opcode::LOAD_CONTEXT_REG, &[lo(D), 0, 0x10, 4])
            .pkt3(Opcode::LOAD_CONTEXT_REG_INDEX, &[lo(D), 0, r::DB_DEPTH_CLEAR - 0xA000, 2])
            .pkt3(Opcode::LOAD_CONTEXT_REG_INDEX, &[lo(D + 0x80), 0, 0x8000_0000, 4])
            .pkt3(Opcode::SET_BASE, &[4, lo(D), 0])
            .pkt3(Opcode::LOAD_SH_REG_INDEX, &[1, 4, r::COMPUTE_USER_DATA_0 - 0x2C00, 1])
            .pkt3(Opcode::CLEAR_STATE, &[3])
            .set_context(r::PA_SC_WINDOW_OFFSET, &[7])
            .pkt3(Opcode::CLEAR_STATE, &[2])
            .pkt3(Opcode::CONTEXT_CONTROL, &[0x8000_0001, 0x8000_0000]),
        &[],
        dword_bytes(&image),
    );

    // WRITE_DATA, COPY_DATA, DMA_DATA, ATOMIC_MEM (with a spin lock the
    // host releases), COND_WRITE.
    let mut src = vec![0u8; 0x100];
    for (i, b) in src.iter_mut().enumerate() {
        *b = i as u8;
    }
    add(
        "memory-ops",
        CONFIG,
        SCHEDULE,
        Cmd::new()
            .write_mem(S, &[1, 2, 3])
            .pkt3(Opcode::WRITE_DATA, &[0, r::CP_STRMOUT_CNTL, 0, 5])
            .pkt3(Opcode::WRITE_DATA, &[(5 << 8) | (1 << 16), lo(S + 0x20), 0, 7, 8, 9])
            .pkt3(Opcode::COPY_DATA, &[5 << 8, r::VGT_PRIMITIVE_TYPE, 0, lo(S + 0x30), 0])
            .pkt3(Opcode::COPY_DATA, &[1, lo(D), 0, r::VGT_NUM_INSTANCES, 0])
            .pkt3(Opcode::COPY_DATA, &[5 | (5 << 8) | (1 << 16), 0xDDCC_BBAA, 1, lo(S + 0x40), 0])
            .pkt3(Opcode::COPY_DATA, &[9 | (5 << 8) | (1 << 16), 0, 0, lo(S + 0x48), 0])
            .pkt3(Opcode::DMA_DATA, &[0, lo(D), 0, lo(S + 0x100), 0, 0x100])
            .pkt3(Opcode::DMA_DATA, &[2 << 29, 0xA5A5_A5A5, 0, lo(S + 0x200), 0, 16])
            .pkt3(Opcode::DMA_DATA, &[2 << 29, 0, 0, 0x3022C, 0, (1 << 27) | 4])
            .pkt3(Opcode::DMA_DATA, &[0, lo(D), 0, lo(S + 0x300), 0, (1 << 28) | 64])
            .pkt3(Opcode::ATOMIC_MEM, &[0x0F, lo(S), 0, 5, 0, 0, 0, 0])
            .pkt3(Opcode::ATOMIC_MEM, &[0x2F, lo(S + 8), 0, 1, 0, 0, 0, 0])
            .pkt3(Opcode::ATOMIC_MEM, &[0x48 | (1 << 8), lo(S + 0x10), 0, 7, 0, 3, 0, 10])
            .pkt3(Opcode::COND_WRITE, &[3 | (1 << 4) | (1 << 8), lo(S), 0, 6, 0xF, lo(S + 4), 0, 0x77]),
        &[(0, 0, 0)],
        src,
    );

    // Waits: memory (satisfied by the host), 64-bit, register, REWIND,
    // semaphores.
    add(
        "waits",
        CONFIG,
        SCHEDULE,
        Cmd::new()
            .wait_mem(S + 0x40, 3, 1, 0xFFFF_FFFF)
            .write_mem(S, &[0x99])
            .pkt3(Opcode::WAIT_REG_MEM64, &[6 | (1 << 4), lo(S + 0x48), 0, 0, 4, 0xFFFF_FFFF, 0xFFFF_FFFF, 10])
            .set_uconfig(r::VGT_PRIMITIVE_TYPE, &[3])
            .pkt3(Opcode::WAIT_REG_MEM, &[5, r::VGT_PRIMITIVE_TYPE, 0, 3, 0xFF, 10])
            .pkt3(Opcode::WAIT_REG_MEM, &[3 | (1 << 6), r::VGT_NUM_INSTANCES, r::VGT_INDEX_TYPE, 2, 0xFF, 10])
            .pkt3(Opcode::REWIND, &[0])
            .pkt3(Opcode::MEM_SEMAPHORE, &[lo(S + 0x80), 0, 6 << 29])
            .pkt3(Opcode::MEM_SEMAPHORE, &[lo(S + 0x80), 0, 7 << 29])
            .pkt3(Opcode::MEM_SEMAPHORE, &[lo(S + 0x80), 0, 7 << 29])
            .write_mem(S + 4, &[0xAA]),
        &[(0, 0, 0), (0, 0, 0), (1, 0, 0x8000_0000), (0, 0, 0), (0, 0, 0)],
        Vec::new(),
    );

    // Events, fences, queries, streamout.
    let valid = 1u64 << 63;
    let mut records = Vec::new();
    for rb in 0..16u64 {
        records.extend_from_slice(&(valid | 100).to_le_bytes());
        records.extend_from_slice(&(valid | (100 + rb)).to_le_bytes());
    }
    add(
        "events",
        CONFIG,
        SCHEDULE,
        Cmd::new()
            .pkt3(Opcode::EVENT_WRITE, &[0x15 | (1 << 8), lo(S), 0])
            .pkt3(Opcode::EVENT_WRITE, &[0x1F])
            .pkt3(Opcode::EVENT_WRITE, &[0x07 | (4 << 8)])
            .release32(S + 0x100, 0xFEED)
            .pkt3(Opcode::RELEASE_MEM, &[0x28 | (5 << 8), 2 << 29, lo(S + 0x108), 0, 1, 2, 0])
            .pkt3(Opcode::RELEASE_MEM, &[0x28 | (5 << 8), 3 << 29, lo(S + 0x110), 0, 0, 0, 0])
            .pkt3(Opcode::RELEASE_MEM, &[0x14 | (5 << 8) | (1 << 20), 0, 0, 0, 0, 0, 0])
            .pkt3(Opcode::EVENT_WRITE_EOP, &[0x28 | (5 << 8), lo(S + 0x118), (1 << 29) | (2 << 24), 0xAB, 0])
            .pkt3(Opcode::EVENT_WRITE_EOS, &[0x2F | (6 << 8), lo(S + 0x120), 2 << 29, 0xCD])
            .pkt3(Opcode::ACQUIRE_MEM, &[0, 0xFFFF_FFFF, 0, 0, 0, 10, 0x4000])
            .pkt3(Opcode::SURFACE_SYNC, &[0, 0xFFFF_FFFF, 0, 10])
            .pkt3(Opcode::OCCLUSION_QUERY, &[lo(D), 0, lo(S + 0x200), 0])
            .set_uconfig(r::VGT_STRMOUT_BUFFER_FILLED_SIZE_0 + 1, &[0x120])
            .pkt3(Opcode::STRMOUT_BUFFER_UPDATE, &[(2 << 1) | (1 << 8), 0, 0, lo(S + 0x120), 0])
            .pkt3(Opcode::STRMOUT_BUFFER_UPDATE, &[1 | (3 << 1) | (1 << 8), lo(S + 0x300), 0, 0, 0])
            .pkt3(Opcode::PFP_SYNC_ME, &[0])
            .pkt3(Opcode::PREAMBLE_CNTL, &[0])
            .pkt3(Opcode::SWITCH_BUFFER, &[0]),
        &[],
        records,
    );

    // Draws with a created pixel shader bound, indirect arguments in guest
    // memory.
    let mut guest = pixel_container().build();
    guest.resize(0x400, 0);
    guest.extend_from_slice(&dword_bytes(&[3, 2, 5, 1, 6, 4, 2, (-1i32) as u32, 7, 1]));
    add(
        "draws",
        CONFIG | 0x40,
        SCHEDULE,
        Cmd::new()
            .set_sh(r::SPI_SHADER_PGM_LO_PS, &[(SHADER_CODE >> 8) as u32, 0])
            .set_uconfig(r::VGT_PRIMITIVE_TYPE, &[4])
            .pkt3(Opcode::NUM_INSTANCES, &[2])
            .pkt3(Opcode::DRAW_INDEX_AUTO, &[3, 2])
            .set_uconfig(r::VGT_INDEX_TYPE, &[1])
            .pkt3(Opcode::INDEX_TYPE, &[0])
            .pkt3(Opcode::DRAW_INDEX_2, &[100, lo(S), 0, 6, 0])
            .pkt3(Opcode::INDEX_BASE, &[lo(S), 0])
            .pkt3(Opcode::INDEX_BUFFER_SIZE, &[50])
            .pkt3(Opcode::DRAW_INDEX_OFFSET_2, &[50, 10, 12, 0])
            .pkt3(Opcode::SET_BASE, &[1, lo(D + 0x400), 0])
            .pkt3(Opcode::DRAW_INDIRECT, &[0, 0x20, 0x21, 2])
            .pkt3(Opcode::DRAW_INDEX_INDIRECT, &[16, 0x20, 0x21, 0])
            .pkt3(
                Opcode::DRAW_INDIRECT_MULTI,
                &[0, 0x20, 0x21, 0x22 | (1 << 30) | (1 << 31), 5, lo(D + 0x424), 0, 16, 2],
            )
            .pkt3(Opcode::DRAW_INDEX_INDIRECT_MULTI, &[16, 0x20, 0x21, 0x22, 2, 0, 0, 0, 0])
            .pkt3(Opcode::DRAW_INDEX_MULTI_AUTO, &[2, 0, 3 << 21]),
        &[],
        guest,
    );

    // Dispatches on a compute queue, both indirect forms.
    add(
        "dispatch",
        CONFIG | 0x20,
        SCHEDULE,
        Cmd::new()
            .set_sh(r::COMPUTE_NUM_THREAD_X, &[64, 1, 1])
            .set_sh(r::COMPUTE_PGM_LO, &[0x100, 0])
            .pkt3(Opcode::DISPATCH_DIRECT, &[3, 2, 1, 1])
            .pkt3(Opcode::DISPATCH_INDIRECT, &[lo(D), 0, 1])
            .raw(&[Header::type3(Opcode::SET_BASE, 3).0 | 2, 1, lo(D), 0])
            .raw(&[Header::type3(Opcode::DISPATCH_INDIRECT, 2).0 | 2, 16, 1]),
        &[],
        dword_bytes(&[4, 2, 1, 0, 8, 8, 8]),
    );

    // Predication (bool32, bool64, ZPASS waiting for final data), COND_EXEC
    // both ways, PRED_EXEC.
    let guarded = Cmd::new().write_mem(S, &[0x55]);
    add(
        "predication",
        CONFIG,
        SCHEDULE,
        Cmd::new()
            .pkt3(Opcode::SET_PREDICATION, &[(4 << 16) | (1 << 8), lo(D), 0])
            .pkt3_pred(Opcode::WRITE_DATA, &[5 << 8, lo(S + 0x100), 0, 0xAA])
            .pkt3(Opcode::SET_PREDICATION, &[(3 << 16) | (1 << 31), lo(D + 8), 0])
            .pkt3_pred(Opcode::DRAW_INDEX_AUTO, &[3, 2])
            .pkt3(Opcode::SET_PREDICATION, &[0, 0, 0])
            .pkt3(Opcode::SET_PREDICATION, &[(1 << 16) | (1 << 8), lo(S + 0x400), 0])
            .pkt3(Opcode::SET_PREDICATION, &[(2 << 16), lo(D + 0x10), 0])
            .pkt3(Opcode::SET_PREDICATION, &[lo(D), (4 << 16) | (1 << 8)])
            .pkt3(Opcode::COND_EXEC, &[lo(D), 0, 0, guarded.len()])
            .raw(guarded.dwords())
            .pkt3(Opcode::COND_EXEC, &[lo(D + 4), 0, guarded.len()])
            .raw(guarded.dwords())
            .pkt3(Opcode::PRED_EXEC, &[(0b10 << 24) | guarded.len()])
            .raw(guarded.dwords())
            .pkt3(Opcode::PRED_EXEC, &[(0b01 << 24) | guarded.len()])
            .raw(guarded.dwords()),
        &[(0, 0, 0)],
        dword_bytes(&[0, 1, 0, 0, 1, 0, 2, 0, 1, 0, 2, 0]),
    );

    // Indirect buffers into guest memory: a call that calls again, a chain,
    // the conditional form both ways.
    let leaf = Cmd::new().write_mem(S, &[3]);
    let mid = Cmd::new().write_mem(S + 4, &[2]).ib(D + 0x100, leaf.len(), false);
    let tail = Cmd::new().write_mem(S + 8, &[4]);
    let mut guest = dword_bytes(mid.dwords());
    guest.resize(0x100, 0);
    guest.extend_from_slice(&dword_bytes(leaf.dwords()));
    guest.resize(0x200, 0);
    guest.extend_from_slice(&dword_bytes(tail.dwords()));
    guest.resize(0x300, 0);
    guest.extend_from_slice(&dword_bytes(&[1, 0]));
    let cond = |reference: u32, mode: u32| {
        [
            mode | (3 << 8),
            lo(D + 0x300),
            0,
            0xFFFF_FFFF,
            0,
            reference,
            0,
            lo(D + 0x100),
            0,
            leaf.len(),
            lo(D + 0x200),
            0,
            tail.len(),
        ]
    };
    add(
        "indirect-buffers",
        CONFIG,
        SCHEDULE,
        Cmd::new()
            .ib(D, mid.len(), false)
            .pkt3(Opcode::INDIRECT_BUFFER, &cond(1, 2))
            .pkt3(Opcode::INDIRECT_BUFFER, &cond(0, 2))
            .pkt3(Opcode::INDIRECT_BUFFER, &cond(0, 1))
            .ib(D + 0x200, tail.len(), true)
            .write_mem(S + 12, &[0xDEAD]),
        &[],
        guest,
    );

    // The constant engine: CE RAM, counters, ordering with the DE.
    let ce = Cmd::new()
        .pkt3(Opcode::WRITE_CONST_RAM, &[0x100, 0xC0FFEE, 0xBEEF])
        .pkt3(Opcode::LOAD_CONST_RAM, &[lo(D + 0x100), 0, 4, 0x200])
        .pkt3(Opcode::DUMP_CONST_RAM, &[0x100, 2, lo(S), 0])
        .pkt3(Opcode::SET_BASE, &[2, lo(S + 0x100), 0])
        .pkt3(Opcode::DUMP_CONST_RAM_OFFSET, &[0x200, 0x10, 2])
        .pkt3(Opcode::WAIT_ON_DE_COUNTER_DIFF, &[4])
        .pkt3(Opcode::INCREMENT_CE_COUNTER, &[1]);
    let mut guest = dword_bytes(ce.dwords());
    guest.resize(0x100, 0);
    guest.extend_from_slice(&dword_bytes(&[1, 2, 3, 4]));
    add(
        "constant-engine",
        CONFIG,
        SCHEDULE,
        Cmd::new()
            .pkt3(Opcode::INDIRECT_BUFFER_CONST, &[lo(D), 0, ce.len()])
            .pkt3(Opcode::WAIT_ON_CE_COUNTER, &[0])
            .pkt3(Opcode::COPY_DATA, &[1 | (5 << 8), lo(S), 0, lo(S + 0x10), 0])
            .pkt3(Opcode::INCREMENT_DE_COUNTER, &[0])
            .pkt3(Opcode::WAIT_ON_CE_COUNTER, &[0]),
        &[],
        guest,
    );

    // NOP conventions and the harness's host commands.
    let text = |s: &str| {
        let mut b = s.as_bytes().to_vec();
        b.resize(b.len().div_ceil(4) * 4 + 4, 0);
        b.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect::<Vec<u32>>()
    };
    let mut push = vec![0x6875_0001];
    push.extend(text("frame"));
    let mut comment = vec![0x1337_F77D, 5, 7];
    comment.extend(text("hello"));
    let mut host_push = vec![HOST_COMMAND_SIGNATURE | 2];
    host_push.extend(text("marker"));
    add(
        "nops-and-host-commands",
        CONFIG,
        SCHEDULE,
        Cmd::new()
            .pkt3(Opcode::NOP, &push)
            .pkt3(Opcode::NOP, &[0x6875_0002])
            .pkt3(Opcode::NOP, &[0xCAFE_0042])
            .pkt3(Opcode::NOP, &comment)
            .pkt3(Opcode::NOP, &[0x6875_0778, lo(S), 0, 0x51])
            .pkt3(Opcode::NOP, &[HOST_COMMAND_SIGNATURE | 1])
            .pkt3(Opcode::NOP, &host_push)
            .pkt3(Opcode::NOP, &[HOST_COMMAND_SIGNATURE | 3])
            .pkt3(Opcode::NOP, &[HOST_COMMAND_SIGNATURE | 4])
            .set_context(r::DB_RENDER_CONTROL, &[2])
            .pkt3(Opcode::NOP, &[HOST_COMMAND_SIGNATURE | 5])
            .pkt3(Opcode::NOP, &[HOST_COMMAND_SIGNATURE | 6, 0xAB])
            .raw(&[NOP_PAD, TYPE2_FILLER, 0x8123_4567]),
        &[],
        Vec::new(),
    );

    // Packets the loop refuses or skips, each with its own seed.
    add(
        "unknown-and-not-emulated",
        CONFIG | 0x10,
        SCHEDULE,
        Cmd::new()
            .raw(&[0xC001_0100, 0xAAAA_AAAA, 0xBBBB_BBBB])
            .pkt3(Opcode::GET_LOD_STATS, &[0, 0, 0, 0])
            .raw(&[0xC000_0200, 0]),
        &[],
        Vec::new(),
    );
    add("unknown-stops", CONFIG | 8, SCHEDULE, Cmd::new().raw(&[0xC000_0200, 0]), &[], Vec::new());
    add("type1-header", CONFIG, SCHEDULE, Cmd::new().raw(&[NOP_PAD, 0x4000_0000]), &[], Vec::new());
    add("packet-overrun", CONFIG, SCHEDULE, Cmd::new().raw(&[0xC005_1000, 1, 2]), &[], Vec::new());
    // Eight dwords asked for, four present: the buffer's tail is unmapped.
    let write = Cmd::new().write_mem(S, &[1]);
    let cycle = write.clone().ib(CMD_BASE, write.len() + 4, true);
    add("ib-cycle", CONFIG, SCHEDULE, cycle, &[], Vec::new());
    add("ib-self-call", 7, SCHEDULE, Cmd::new().ib(CMD_BASE, 4, false), &[], Vec::new());
    add(
        "skip-past-end",
        CONFIG,
        SCHEDULE,
        Cmd::new().pkt3(Opcode::COND_EXEC, &[lo(S), 0, 0, 100]).write_mem(S, &[1]),
        &[],
        Vec::new(),
    );
    // Slices of one packet with host steps of every kind between them.
    let mut long = Cmd::new();
    for i in 0..8u64 {
        long = long.write_mem(S + 4 * i, &[i as u32]);
    }
    add(
        "slices-and-steps",
        CONFIG,
        7 | (5 << 5),
        long.wait_mem(S + 0x40, 3, 1, 1),
        &[(2, 1 << 30, 7), (3, r::VGT_PRIMITIVE_TYPE, 4), (5, 0, 0), (4, 2, 0), (1, 0, 1), (0, 0, 0)],
        Vec::new(),
    );

    // Real command streams: the start of a recorded submission.
    for (name, trace) in [("real-dispatch", "radv-dispatch"), ("real-draw", "radv-draw")] {
        let trace = real_trace(trace);
        let (_, address, size_dw) = trace.submissions().last().unwrap();
        let memory = trace.build_memory().unwrap();
        let mut dw = vec![0u32; size_dw.min(1024) as usize];
        memory.read_dwords(address, &mut dw).unwrap();
        add(name, CONFIG, SCHEDULE, Cmd::new().raw(&dw), &[], Vec::new());
    }
    // Eight dwords asked for, four present: the buffer's tail is unmapped.
    let mut tail = vec![CONFIG | 0x80, SCHEDULE, 8, 0];
    tail.extend_from_slice(&dword_bytes(&[NOP_PAD; 4]));
    seeds.push(("unmapped-tail", tail));
    seeds
}

// ----------------------------------------------------------------- traces

fn real_trace(name: &str) -> Trace {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    Trace::read_file(&dir.join(format!("{name}.pm4t"))).unwrap()
}

/// A recorded trace cut down to its command buffers: `MEM ` regions larger
/// than 16 KiB become `ZERO` regions of the same size (the addresses their
/// packets use stay mapped), everything else is kept as it is.
fn real_slice(name: &str) -> Vec<u8> {
    let trace = real_trace(name);
    let mut w = TraceWriter::new();
    for (k, v) in trace.info() {
        w.info(k, v).unwrap();
    }
    for event in trace.events() {
        match *event {
            TraceEvent::MemRegion { address, data, .. } if data.len() > 0x4000 => w.zero(address, data.len()),
            TraceEvent::MemRegion { address, data, .. } => w.mem(address, trace.bytes_of(&data)),
            TraceEvent::ZeroRegion { address, len, .. } => w.zero(address, len),
            TraceEvent::HostWrite { address, data, .. } => w.host_write(address, trace.bytes_of(&data)),
            TraceEvent::Submit { queue, address, size_dw, .. } => w.submit(queue, address, size_dw),
            TraceEvent::Shader { header_address, code_address, relocated, .. } => {
                w.shader(header_address, code_address, relocated)
            }
            TraceEvent::Note { ref text, .. } => w.note(text),
            TraceEvent::Ancillary { .. } => Ok(()),
        }
        .unwrap();
    }
    w.finish()
}

fn trace_seeds() -> Seeds {
    let mut seeds: Seeds = Vec::new();

    let mut w = TraceWriter::new();
    w.info("gpu", "gfx10.3").unwrap();
    w.mem(0x1000, &NOP_PAD.to_le_bytes()).unwrap();
    w.submit(0, 0x1000, 1).unwrap();
    seeds.push(("minimal", w.finish()));

    // A wait on a label the host writes between two submissions, a nested
    // IB, a shader creation, notes and an unknown ancillary chunk.
    let label = 0x10_0040;
    let child = Cmd::new().write_mem(0x10_0000, &[7]);
    let cmd = Cmd::new().ib(0x2000, child.len(), false).wait_mem(label, 3, 1, 0xFFFF_FFFF).release32(0x10_0100, 1);
    let mut w = TraceWriter::new();
    w.info("gpu", "gfx10.3").unwrap();
    w.info("producer", "pm4core seeds").unwrap();
    w.mem(0x1000, &dword_bytes(cmd.dwords())).unwrap();
    w.mem(0x2000, &dword_bytes(child.dwords())).unwrap();
    w.zero(0x10_0000, 0x1000).unwrap();
    w.mem(0x20_0000, &pixel_container().build()).unwrap();
    w.zero(0x30_0000, 0x100).unwrap();
    w.shader(0x20_0000, 0x30_0000, false).unwrap();
    w.note("submission waits for the label").unwrap();
    w.submit(0, 0x1000, cmd.len()).unwrap();
    w.host_write(label, &1u32.to_le_bytes()).unwrap();
    w.ancillary(Tag(*b"zzzz"), b"skipped").unwrap();
    w.submit(1, 0x2000, child.len()).unwrap();
    seeds.push(("wait-label-shader", w.finish()));

    // A relocated shader header and a host write that invalidates it.
    let relocated_header = relocated(&geometry_container().build(), 0x20_0000, 0x30_0000);
    let mut w = TraceWriter::new();
    w.info("gpu", "gfx10.3").unwrap();
    w.mem(0x20_0000, &relocated_header).unwrap();
    w.zero(0x30_0000, 0x100).unwrap();
    w.shader(0x20_0000, 0x30_0000, true).unwrap();
    w.host_write(0x20_0010, &0u64.to_le_bytes()).unwrap();
    let program = ShaderType::Geometry.program_registers().unwrap();
    let draw = Cmd::new().set_sh(program.lo, &[0x3000, 0]).pkt3(Opcode::DRAW_INDEX_AUTO, &[3, 2]);
    w.mem(0x1000, &dword_bytes(draw.dwords())).unwrap();
    w.submit(0, 0x1000, draw.len()).unwrap();
    seeds.push(("relocated-shader", w.finish()));

    for name in ["radv-dispatch", "radv-draw_indexed", "radv-compute_queue", "radv-transfer"] {
        let label: &'static str = match name {
            "radv-dispatch" => "real-dispatch",
            "radv-draw_indexed" => "real-draw-indexed",
            "radv-compute_queue" => "real-compute-queue",
            _ => "real-transfer",
        };
        seeds.push((label, real_slice(name)));
    }
    seeds
}

// ----------------------------------------------------------------- import

fn import_input(mode: u8, address: u64, queue: u8, file: &[u8]) -> Vec<u8> {
    let mut v = vec![mode];
    v.extend_from_slice(&address.to_le_bytes());
    v.push(queue);
    v.extend_from_slice(file);
    v
}

/// A KYCAP record: type, queue, flags, primary and secondary dwords.
type Record<'a> = (u32, u32, u32, &'a [u32], &'a [u32]);

/// A KYCAP 2.0 capture of `records`.
fn kycap(records: &[Record<'_>]) -> Vec<u8> {
    let mut bytes = b"KYCAP\r\n\x1a".to_vec();
    bytes.extend_from_slice(&2u16.to_le_bytes());
    bytes.extend_from_slice(&0u16.to_le_bytes());
    bytes.extend_from_slice(&24u32.to_le_bytes());
    bytes.extend_from_slice(&1u32.to_le_bytes());
    bytes.extend_from_slice(&0u32.to_le_bytes());
    let mut dwords = 0u64;
    for (i, &(kind, queue, flags, primary, secondary)) in records.iter().enumerate() {
        let mut r = Vec::new();
        r.extend_from_slice(&((40 + 4 * (primary.len() + secondary.len())) as u32).to_le_bytes());
        r.extend_from_slice(&kind.to_le_bytes());
        r.extend_from_slice(&(i as u64 + 1).to_le_bytes());
        r.extend_from_slice(&queue.to_le_bytes());
        r.extend_from_slice(&flags.to_le_bytes());
        r.extend_from_slice(&(primary.len() as u32).to_le_bytes());
        r.extend_from_slice(&(secondary.len() as u32).to_le_bytes());
        r.extend_from_slice(&0u64.to_le_bytes());
        r.extend_from_slice(&dword_bytes(primary));
        r.extend_from_slice(&dword_bytes(secondary));
        let hash = xxh3_64(&r);
        r[32..40].copy_from_slice(&hash.to_le_bytes());
        bytes.extend_from_slice(&r);
        dwords += (primary.len() + secondary.len()) as u64;
    }
    let mut footer = b"KYCEND\r\n".to_vec();
    footer.extend_from_slice(&(records.len() as u64).to_le_bytes());
    footer.extend_from_slice(&dwords.to_le_bytes());
    footer.extend_from_slice(&0u64.to_le_bytes());
    let hash = xxh3_64(&footer);
    footer[24..32].copy_from_slice(&hash.to_le_bytes());
    bytes.extend_from_slice(&footer);
    bytes
}

fn import_seeds() -> Seeds {
    let dcb = Cmd::new().write_mem(0x10_0000, &[1]).release32(0x10_0010, 2).raw(&[NOP_PAD, NOP_PAD]);
    let ccb = Cmd::new().pkt3(Opcode::INCREMENT_CE_COUNTER, &[1]);
    let acb = Cmd::new().set_sh(r::COMPUTE_NUM_THREAD_X, &[64, 1, 1]).pkt3(Opcode::DISPATCH_DIRECT, &[1, 1, 1, 1]);
    let capture = kycap(&[
        (1, 0, 1, dcb.dwords(), ccb.dwords()),
        (3, u32::MAX, 0, &[], &[]),
        (2, 0x21, 0, acb.dwords(), &[]),
        (4, u32::MAX, 0, &[], &[]),
        (1, 0, 0, &[NOP_PAD], &[]),
    ]);
    let raw = dword_bytes(dcb.dwords());
    vec![
        ("raw-default", import_input(0, 0, 0, &raw)),
        ("raw-compute-queue-at-0x1000", import_input(2 | 0x40, 0, 9, &raw)),
        ("raw-given-address", import_input(6, 0x8000_0000_1000, 56, &dword_bytes(acb.dwords()))),
        ("kycap", import_input(1, 0, 0, &capture)),
        ("kycap-limited-named", import_input(1 | (2 << 3) | 0x40, 0, 0, &capture)),
        ("kycap-at-the-top", import_input(1 | 4, 0, 0, &kycap(&[(1, 0, 0, dcb.dwords(), &[])]))),
        ("kycap-given-base", import_input(1 | 6 | (7 << 3), IMPORT_BASE - 0x100, 0, &capture)),
        ("kycap-hashes-made-right", import_input(1 | 0x80, 0, 0, &capture)),
    ]
}
