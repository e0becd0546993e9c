//! The text disassembler allocates nothing per packet: a counting global
//! allocator watches the listing of one stream and of the same stream four
//! times over; the longer listing makes no more allocations.

use pm4core::disasm::{DisasmOptions, Disassembler};
use pm4core::packet::body::CompareFunction;
use pm4core::packet::builder::{BuildError, CommandBuffer, Signal};
use pm4core::packet::{Opcode, NOP_PAD};
use pm4core::regs::gfx103 as r;

#[path = "support/counting_alloc.rs"]
mod counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

/// Register writes and the body types a driver stream has most of.
fn frame() -> Result<CommandBuffer, BuildError> {
    let mut cmd = CommandBuffer::new();
    for i in 0..100u32 {
        cmd.set_context(r::PA_CL_VPORT_XSCALE, &[i, i + 1, i + 2])?
            .set_sh(r::SPI_SHADER_USER_DATA_PS_0, &[i; 4])?
            .set_uconfig(r::VGT_PRIMITIVE_TYPE, &[4])?
            .pkt3(Opcode::NUM_INSTANCES, &[1])?
            .pkt3(Opcode::DRAW_INDEX_AUTO, &[3, 2])?
            .write_mem(0x10_0000 + u64::from(i) * 4, &[i, i + 1])?
            .wait_mem(0x10_0000, CompareFunction::Equal, i, u32::MAX)?
            .release32(0x10_0100, i, Signal::Interrupt)?
            .pkt3(Opcode::EVENT_WRITE, &[0x10 | (4 << 8)])?
            .pkt3(Opcode::DISPATCH_DIRECT, &[1, 1, 1, 0x45])?
            .pkt3(Opcode::ACQUIRE_MEM, &[0, u32::MAX, 0xFF_FFFF, 0, 0, 10, 0xC3B1])?
            .pkt3(Opcode::DMA_DATA, &[0x6020_0000, 0x1000, 0, 0x2000, 0, 0x8000_0100])?
            .pkt3(Opcode::PFP_SYNC_ME, &[0])?
            .pkt3(Opcode::NOP, &[0x1337_0000, 1, 2])?
            .raw(&[NOP_PAD, NOP_PAD])?;
    }
    Ok(cmd)
}

/// Allocations made while listing `bytes` (the disassembler built first).
fn allocations_to_list(bytes: &[u8]) -> u64 {
    let dis = Disassembler::for_raw(bytes, 0x1000, DisasmOptions::default()).unwrap();
    let mut out = std::io::sink();
    let before = counting_alloc::allocations();
    let summary = dis.write_text(&mut out).unwrap();
    let after = counting_alloc::allocations();
    assert!(summary.packets > 1000, "{} packets", summary.packets);
    after - before
}

#[test]
fn the_text_listing_allocates_nothing_per_packet() {
    let once = frame().expect("the stream builds").to_bytes();
    let four_times = once.repeat(4);
    // A first listing does what happens once per process (lazily built
    // tables, the logger's first call).
    allocations_to_list(&once);
    let short = allocations_to_list(&once);
    let long = allocations_to_list(&four_times);
    assert_eq!(long, short, "{short} allocations for one copy, {long} for four");
}
