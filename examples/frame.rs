//! Emitting a frame the way a high-level implementation of the console's
//! graphics library would: the library's calls (set a render target, a
//! viewport, bind shaders, draw, end the frame with a fence) become PM4
//! packets through `packet::builder::CommandBuffer`, then the command
//! processor runs them against guest memory and a recording backend.
//!
//! `cargo run --example frame`

use pm4core::backend::{QueueId, RecordingBackend};
use pm4core::memory::SparseMemory;
use pm4core::packet::body::{AcquireMem, DrawBody, EventWrite, NumInstances, ReleaseMem};
use pm4core::packet::builder::{BuildError, CommandBuffer};
use pm4core::processor::{Env, ProcessStatus, Processor};
use pm4core::regs::gfx103 as r;
use pm4core::shader::ShaderRegistry;

/// Where the frame's pieces live in guest memory.
const FRAME_DCB: u64 = 0x10_0000;
const DRAW_DCB: u64 = 0x11_0000;
const COLOR_TARGET: u64 = 0x400_0000;
const VERTEX_SHADER: u64 = 0x20_0000;
const PIXEL_SHADER: u64 = 0x21_0000;
const LABEL: u64 = 0x30_0000;

/// What a graphics library's `setRenderTarget(0, ...)` emits.
fn set_render_target(cb: &mut CommandBuffer, address: u64, width: u32, height: u32) -> Result<(), BuildError> {
    cb.set_registers(r::CB_COLOR0_BASE, &[(address >> 8) as u32])?
        .set_registers(r::CB_COLOR0_INFO, &[0x0000_0A2C])? // 8_8_8_8 UNORM, linear
        .set_registers(r::PA_SC_SCREEN_SCISSOR_BR, &[width | (height << 16)])?;
    Ok(())
}

/// `setViewport(0, x, y, w, h, zmin, zmax)`: scale and offset as floats.
fn set_viewport(cb: &mut CommandBuffer, width: f32, height: f32) -> Result<(), BuildError> {
    let (sx, ox, sy, oy) = (width / 2.0, width / 2.0, -height / 2.0, height / 2.0);
    let values = [sx, ox, sy, oy, 0.5, 0.5].map(f32::to_bits);
    cb.set_registers(r::PA_CL_VPORT_XSCALE, &values)?;
    Ok(())
}

/// `setVsShader` / `setPsShader`: program addresses (256-byte units) and
/// the user data the shaders read.
fn bind_shaders(cb: &mut CommandBuffer, constants: u64) -> Result<(), BuildError> {
    cb.set_registers(r::SPI_SHADER_PGM_LO_GS, &[(VERTEX_SHADER >> 8) as u32, (VERTEX_SHADER >> 40) as u32])?
        .set_registers(r::SPI_SHADER_PGM_LO_PS, &[(PIXEL_SHADER >> 8) as u32, (PIXEL_SHADER >> 40) as u32])?
        .set_registers(r::SPI_SHADER_USER_DATA_GS_0, &[constants as u32, (constants >> 32) as u32])?;
    Ok(())
}

/// `drawIndexAuto(count)`.
fn draw(cb: &mut CommandBuffer, vertices: u32) -> Result<(), BuildError> {
    cb.set_registers(r::VGT_PRIMITIVE_TYPE, &[4])? // triangle list
        .packet(&NumInstances { instances: 1 })?
        .packet(&DrawBody::IndexAuto { index_count: vertices, initiator: 2 })?;
    Ok(())
}

fn main() -> Result<(), BuildError> {
    // A sub-buffer with the draws, called from the frame's buffer.
    let mut draws = CommandBuffer::new();
    for i in 0..3u64 {
        bind_shaders(&mut draws, 0x50_0000 + i * 0x100)?;
        draw(&mut draws, 3 * (i as u32 + 1))?;
    }

    // The frame: state, the draws, then a cache flush and a fence the
    // library's `submitDone` waits on. The fence value is patched in once
    // known.
    let mut frame = CommandBuffer::new();
    frame.packet(&EventWrite::new(0x19, 0))?; // PIPELINESTAT_START
    set_render_target(&mut frame, COLOR_TARGET, 1920, 1080)?;
    set_viewport(&mut frame, 1920.0, 1080.0)?;
    frame.call(DRAW_DCB, draws.len_dw())?.packet(&AcquireMem::all_memory(0x0001_0080))?;
    let fence = frame.label();
    frame.packet(&ReleaseMem::new(0x14, 1, LABEL, 0, 2))?; // CACHE_FLUSH_AND_INV_TS_EVENT
    let frame_number = 1u64;
    frame.patch_packet(fence, &ReleaseMem::new(0x14, 1, LABEL, frame_number, 2))?;

    // Guest memory the emulator owns; the processor reads the buffers
    // from it.
    let memory = SparseMemory::new();
    memory.map_dwords(FRAME_DCB, frame.dwords()).expect("frame buffer");
    memory.map_dwords(DRAW_DCB, draws.dwords()).expect("draw buffer");
    memory.map_zeroed(LABEL, 0x1000).expect("label");

    let mut backend = RecordingBackend::new();
    let shaders = ShaderRegistry::default();
    let mut gfx = Processor::new(QueueId::GRAPHICS);
    gfx.submit(FRAME_DCB, frame.len_dw()).expect("idle processor");
    let status = {
        let mut env = Env { memory: &memory, backend: &mut backend, shaders: &shaders };
        gfx.process(&mut env).expect("the frame runs")
    };
    assert_eq!(status, ProcessStatus::Completed);

    println!("frame: {} dwords, draws: {} dwords", frame.len_dw(), draws.len_dw());
    for line in &backend.lines {
        println!("{line}");
    }
    let label = pm4core::memory::GuestMemory::read_u32(&memory, LABEL).expect("label");
    println!("fence label = {label}");
    assert_eq!(label, frame_number as u32);
    assert_eq!(backend.draws, 3);
    Ok(())
}
