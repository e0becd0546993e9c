//! PS4 program binding: the `OrbShdr` block of a code address found,
//! decoded, validated and cached by the shader registry, dropped by a write
//! to the bytes that decided it; `bind_program` giving GNM programs on gfx7,
//! AGC containers on gfx10.3 and raw code otherwise.

mod common;

use std::sync::Arc;

use common::shader_builder::OrbShdrBuilder;
use pm4core::memory::{GuestMemory, SparseMemory};
use pm4core::regs::stages::HardwareStage;
use pm4core::shader::gnm::{GnmBinaryType, InputUsageSlot, LocateMethod, VCC_HI_MOV_LITERAL};
use pm4core::shader::{ProgramContainer, ShaderError, ShaderRegistry};
use pm4core::GpuFamily;

const CODE: u64 = 0x10_0000;

/// A vertex program (VS_VS) of 12 dwords after the `s_mov_b32 vcc_hi`,
/// with two usage slots and one mask dword before the block.
fn vs_blob() -> (Vec<u8>, u64) {
    let program: Vec<u32> = (0..12).map(|i| 0xBF80_0000 | i).collect();
    let slots = [
        InputUsageSlot { usage_type: 0x12, api_slot: 0, start_register: 0, flags: 0 },
        InputUsageSlot { usage_type: 0x17, api_slot: 0, start_register: 2, flags: 0 },
    ];
    OrbShdrBuilder::new(GnmBinaryType::VsVs as u8)
        .program(&program)
        .hash(0x1111_2222, 0x3333_4444)
        .usage_chunk(&slots, &[0x5])
        .build()
}

fn memory_with(blob: &[u8]) -> SparseMemory {
    let memory = SparseMemory::new();
    memory.map_zeroed(CODE, 0x2_0000).unwrap();
    memory.write_bytes(CODE, blob).unwrap();
    memory
}

#[test]
fn a_valid_block_binds_a_gnm_program_decoded_once() {
    let (blob, block_at) = vs_blob();
    let memory = memory_with(&blob);
    let registry = ShaderRegistry::new();
    let bound = registry.bind_program(GpuFamily::Gfx7, &memory, CODE);
    assert_eq!(bound.address, CODE);
    let program = bound.gnm().expect("a GNM program").clone();
    assert_eq!(program.code_address, CODE);
    assert_eq!(program.code.location.method, LocateMethod::VccHiLiteral);
    assert_eq!(program.code.location.offset, block_at);
    assert_eq!(block_at, 0x48, "8 + 48 code bytes, 12 usage bytes, aligned to 8");
    assert_eq!(program.code_length(), 56);
    assert_eq!(program.block_address(), CODE + 0x48);
    assert_eq!(program.extent(), (CODE, 0x48 + 0x1C));
    assert_eq!(program.binary_type(), Some(GnmBinaryType::VsVs));
    assert_eq!(program.hardware_stage(), Some(HardwareStage::Vs));
    assert_eq!(program.shader_hash(), 0x3333_4444_1111_2222);
    assert!(program.code.crc_matches());
    assert_eq!(program.usage_slots().iter().map(|s| s.usage_type).collect::<Vec<_>>(), [0x12, 0x17]);
    assert_eq!(program.code.usage_chunk.as_ref().unwrap().masks, [5]);
    // Cached: the same program again, no second decode.
    assert_eq!(registry.gnm_cached(), 1);
    let again = registry.resolve_gnm(&memory, CODE).unwrap();
    assert!(Arc::ptr_eq(&again, &program));
    assert!(Arc::ptr_eq(registry.cached_gnm(CODE).unwrap().as_ref().unwrap(), &program));
    // gfx10.3 binds the same address through AGC registrations only: raw.
    let ps5 = registry.bind_program(GpuFamily::Gfx103, &memory, CODE);
    assert_eq!(ps5.container, ProgramContainer::Raw);
    // Address 0 binds nothing and looks nothing up.
    assert!(registry.bind_program(GpuFamily::Gfx7, &memory, 0).is_raw());
    assert_eq!(registry.gnm_cached(), 1);
}

#[test]
fn writes_to_the_code_or_block_drop_the_lookup_and_writes_elsewhere_do_not() {
    let (blob, _) = vs_blob();
    let memory = memory_with(&blob);
    let registry = ShaderRegistry::new();
    assert!(registry.resolve_gnm(&memory, CODE).is_some());
    let generation = registry.generation();
    // Past the block's end and before the code: nothing dropped.
    assert_eq!(registry.invalidate_range(CODE + 0x48 + 0x1C, 0x100), 0);
    assert_eq!(registry.invalidate_range(CODE - 0x100, 0x100), 0);
    assert_eq!(registry.generation(), generation);
    // The block's last byte: dropped, generation bumped.
    assert_eq!(registry.invalidate_range(CODE + 0x48 + 0x1B, 1), 1);
    assert_eq!(registry.gnm_cached(), 0);
    assert_ne!(registry.generation(), generation);
    // The code rewritten: its CRC no longer matches; bound as raw code, and
    // the error says why.
    memory.write_u32(CODE + 12, 0).unwrap();
    let err = registry.try_resolve_gnm(&memory, CODE).unwrap_err();
    assert!(matches!(err, ShaderError::OrbShdrCrcMismatch { .. }), "{err}");
    assert!(registry.bind_program(GpuFamily::Gfx7, &memory, CODE).is_raw());
    assert_eq!(registry.cached_gnm(CODE), Some(None), "the invalid block's answer is cached too");
    // Restored and invalidated: a program again.
    memory.write_bytes(CODE, &blob).unwrap();
    assert_eq!(registry.invalidate_range(CODE, blob.len() as u64), 1);
    assert!(registry.resolve_gnm(&memory, CODE).is_some());
    assert_eq!(registry.invalidate_all(), 1);
    assert_eq!(registry.gnm_cached(), 0);
}

#[test]
fn raw_code_is_cached_over_the_bytes_the_scan_read() {
    let memory = SparseMemory::new();
    memory.map_zeroed(CODE, 0x2_0000).unwrap();
    let registry = ShaderRegistry::new();
    assert_eq!(registry.try_resolve_gnm(&memory, CODE), Ok(None));
    assert_eq!(registry.cached_gnm(CODE), Some(None));
    // The scan read 64 KiB (+ a signature's tail): a write past it keeps the answer.
    assert_eq!(registry.invalidate_range(CODE + 0x1_0000 + 7, 4), 0);
    // The title uploads its code later, inside the scanned bytes: found.
    let (blob, _) = vs_blob();
    memory.write_bytes(CODE, &blob).unwrap();
    assert_eq!(registry.invalidate_range(CODE, blob.len() as u64), 1);
    assert!(registry.resolve_gnm(&memory, CODE).is_some());
    // Code nobody mapped: raw, and not cached.
    assert_eq!(registry.try_resolve_gnm(&memory, 0x7000_0000), Ok(None));
    assert_eq!(registry.cached_gnm(0x7000_0000), None);
}

#[test]
fn blocks_that_do_not_describe_their_code_are_errors() {
    let registry = ShaderRegistry::new();
    // Found by the scan (no vcc_hi): accepted.
    let (blob, at) = OrbShdrBuilder::new(GnmBinaryType::Cs as u8).code_dwords(&[0xBF81_0000, 0]).build();
    let memory = memory_with(&blob);
    let program = registry.resolve_gnm(&memory, CODE).expect("found by the scan");
    assert_eq!((program.code.location.method, program.code.location.offset), (LocateMethod::Scan, at));
    assert_eq!(program.hardware_stage(), Some(HardwareStage::Cs));

    // An unknown binary type.
    let (blob, _) = OrbShdrBuilder::new(12).program(&[0xBF81_0000]).build();
    let memory = memory_with(&blob);
    let registry = ShaderRegistry::new();
    assert_eq!(registry.try_resolve_gnm(&memory, CODE), Err(ShaderError::OrbShdrBadType { found: 12 }));

    // Raw code whose scan meets another program's block 0x800 bytes on.
    let (other, _) = OrbShdrBuilder::new(GnmBinaryType::Ps as u8).code_dwords(&[0xBF81_0000, 0]).build();
    let memory = SparseMemory::new();
    memory.map_zeroed(CODE, 0x2_0000).unwrap();
    memory.write_bytes(CODE + 0x800, &other).unwrap();
    let registry = ShaderRegistry::new();
    let err = registry.try_resolve_gnm(&memory, CODE).unwrap_err();
    assert_eq!(err, ShaderError::OrbShdrNotAfterCode { offset: 0x808, length: 8, limit: 16 });
    assert!(registry.bind_program(GpuFamily::Gfx7, &memory, CODE).is_raw());

    // A vcc_hi literal pointing past the scan window, at no block: raw
    // code, not cached (a block may be written there later).
    let memory = SparseMemory::new();
    memory.map_zeroed(CODE, 0x4_0000).unwrap();
    memory.write_u32(CODE, VCC_HI_MOV_LITERAL).unwrap();
    memory.write_u32(CODE + 4, 0x3000).unwrap();
    let registry = ShaderRegistry::new();
    assert_eq!(registry.try_resolve_gnm(&memory, CODE), Ok(None));
    assert_eq!(registry.cached_gnm(CODE), None);
}
