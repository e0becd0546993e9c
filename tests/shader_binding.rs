//! End to end: a trace whose SHDR chunks create a pixel and a geometry
//! shader, whose command buffer binds them with SET_SH_REG and draws. The
//! draw the backend receives carries both decoded containers.

mod common;

use common::shader_builder::AgcBuilder;
use pm4core::backend::ProgramStage;
use pm4core::memory::GuestMemory;
use pm4core::packet::{Header, Opcode};
use pm4core::regs::gfx103 as r;
use pm4core::replay::{replay, ReplayOptions};
use pm4core::shader::agc::{RegisterEntry, Semantic, ShaderType};
use pm4core::trace::{Trace, TraceWriter};

const PS_HEADER: u64 = 0x10_0000;
const GS_HEADER: u64 = 0x11_0000;
const PS_CODE: u64 = 0x20_0000;
const GS_CODE: u64 = 0x20_1000;
const CMD: u64 = 0x30_0000;

fn pkt3(out: &mut Vec<u32>, op: Opcode, body: &[u32]) {
    out.push(Header::type3(op, body.len() as u32).0);
    out.extend_from_slice(body);
}

fn bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn build_trace() -> Vec<u8> {
    let ps = AgcBuilder::new(ShaderType::Pixel)
        .context_register(r::SPI_PS_INPUT_ENA - 0xA000, 0x2)
        .sh_register(r::SPI_SHADER_PGM_RSRC1_PS - 0x2C00, 0x002C_0000)
        .input_semantic(Semantic::new(3, 0, 4))
        .user_data_range(0, 4)
        .build();
    let gs = AgcBuilder::new(ShaderType::Geometry)
        .context_register(r::VGT_SHADER_STAGES_EN - 0xA000, 1 << 13)
        .output_semantic(Semantic::new(3, 0, 4))
        .output_semantic(Semantic::new(4, 1, 2))
        .build();
    let mut cmd = Vec::new();
    // NGG pipeline: ES slot active.
    pkt3(&mut cmd, Opcode::SET_CONTEXT_REG, &[r::VGT_SHADER_STAGES_EN - 0xA000, (1 << 13) | (2 << 3) | (1 << 5)]);
    pkt3(&mut cmd, Opcode::SET_SH_REG, &[r::SPI_SHADER_PGM_LO_PS - 0x2C00, (PS_CODE >> 8) as u32, 0]);
    pkt3(&mut cmd, Opcode::SET_SH_REG, &[r::SPI_SHADER_PGM_LO_ES - 0x2C00, (GS_CODE >> 8) as u32, 0]);
    pkt3(&mut cmd, Opcode::SET_UCONFIG_REG, &[r::VGT_PRIMITIVE_TYPE - 0xC000, 4]);
    pkt3(&mut cmd, Opcode::DRAW_INDEX_AUTO, &[3, 2]);

    let mut w = TraceWriter::new();
    w.info("gpu", "gfx10.3").unwrap();
    w.mem(PS_HEADER, &ps).unwrap();
    w.mem(GS_HEADER, &gs).unwrap();
    w.zero(PS_CODE, 0x2000).unwrap();
    w.mem(CMD, &bytes(&cmd)).unwrap();
    w.shader(PS_HEADER, PS_CODE, false).unwrap();
    w.shader(GS_HEADER, GS_CODE, false).unwrap();
    w.submit(0, CMD, cmd.len() as u32).unwrap();
    w.finish()
}

#[test]
fn a_draw_carries_the_decoded_containers_of_its_bound_shaders() {
    let trace = Trace::from_bytes(build_trace()).unwrap();
    let outcome = replay(&trace, &ReplayOptions { log: true, ..Default::default() });
    assert!(outcome.succeeded(), "{:?}", outcome.summary.errors);
    assert_eq!(outcome.summary.draws, 1);
    assert_eq!(
        outcome.log,
        vec!["gfx #4 draw DRAW_INDEX_AUTO count=3 instances=0 first=0 base_vertex=0 first_instance=0 prim=4 ps=0x200000[Pixel] es=0x201000[Geometry]"]
    );
    assert_eq!(outcome.programs.len(), 2);
    let ps = &outcome.programs[0];
    assert_eq!((ps.address, ps.stage), (PS_CODE, ProgramStage::Ps));
    let ps = ps.container.as_ref().expect("pixel container");
    assert_eq!(ps.shader_type(), ShaderType::Pixel);
    assert_eq!(ps.code_address(), Some(PS_CODE));
    assert_eq!(ps.context_registers(), &[RegisterEntry::new(r::SPI_PS_INPUT_ENA - 0xA000, 0x2)]);
    // The SH table holds RSRC1 and the program pair, patched by creation.
    let sh = ps.sh_registers();
    assert!(sh.contains(&RegisterEntry::new(r::SPI_SHADER_PGM_RSRC1_PS - 0x2C00, 0x002C_0000)));
    assert!(sh.contains(&RegisterEntry::new(r::SPI_SHADER_PGM_LO_PS - 0x2C00, (PS_CODE >> 8) as u32)));
    assert_eq!(ps.input_semantics(), &[Semantic::new(3, 0, 4)]);
    let range = ps.user_data_range().expect("user data range");
    assert_eq!((range.start, range.end), (0, 4));

    let gs = &outcome.programs[1];
    assert_eq!((gs.address, gs.stage), (GS_CODE, ProgramStage::Es));
    let gs = gs.container.as_ref().expect("geometry container");
    assert_eq!(gs.shader_type(), ShaderType::Geometry);
    assert_eq!(gs.output_semantics(), &[Semantic::new(3, 0, 4), Semantic::new(4, 1, 2)]);
    assert!(gs.sh_registers().contains(&RegisterEntry::new(r::SPI_SHADER_PGM_LO_ES - 0x2C00, (GS_CODE >> 8) as u32)));
}

#[test]
fn creation_relocates_the_header_in_guest_memory() {
    // The same trace, inspected statically: the SHDR's header decodes, and
    // after creation the code field holds the code address.
    let trace = Trace::from_bytes(build_trace()).unwrap();
    let memory = trace.build_memory().unwrap();
    let registry = pm4core::shader::ShaderRegistry::new();
    let shader = registry.create(&memory, PS_HEADER, PS_CODE, false).unwrap();
    assert_eq!(shader.code_address(), Some(PS_CODE));
    assert!(shader.is_relocated());
    // Creating twice is refused, memory untouched.
    let before = memory.read_u64(PS_HEADER).unwrap();
    assert!(registry.create(&memory, PS_HEADER, PS_CODE, false).is_err());
    assert_eq!(memory.read_u64(PS_HEADER).unwrap(), before);
}
