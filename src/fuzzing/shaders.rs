//! `shader_containers`: every shader-container decoder on arbitrary bytes,
//! then creation and registration in guest memory.
//!
//! Input layout: `u8` flags (bit 0: map the header at the base address
//! instead of [`HEADER_AT`], bit 1: register as already relocated), `u64`
//! base address for [`AgcShader::parse`], `u32` code page (code address =
//! page << 8), `u16` offset of a host write into the header, then the
//! container bytes.
//!
//! Invariants: a creation that fails leaves memory untouched (the
//! documented promise of [`create_shader`]); a creation that succeeds holds
//! the code address, is accepted by [`register_relocated`] as the same
//! shader and refused a second time; the registry resolves what it created;
//! the registry's cached PS4 lookup of the blob's address is what
//! [`GnmProgram::read`] gives, before and after a write drops it.

use super::{Input, Outcome, Violation};
use crate::memory::{GuestMemory, SparseMemory, ADDRESS_MASK};
use crate::shader::dvlb::Dvlb;
use crate::shader::gnm::{locate_in_memory, locate_orbshdr, vcc_hi_candidate, GnmCode, GnmProgram, GnmShaderFile};
use crate::shader::inspect::{detect, inspect};
use crate::shader::{create_shader, register_relocated, AgcShader, ShaderError, ShaderRegistry};

const TARGET: &str = "shader_containers";

/// Where the container is mapped unless flag bit 0 says otherwise.
pub const HEADER_AT: u64 = 0x10_0000;

/// The `shader_containers` harness.
pub fn shader_containers(data: &[u8]) -> Outcome {
    let fail = |what: String| Violation::new(TARGET, what);
    let mut input = Input::new(data);
    let flags = input.u8();
    let base = input.u64();
    let code = u64::from(input.u32()) << 8;
    let poke = u64::from(input.u16());
    let blob = input.rest();

    decode_all(blob, base);

    let header_at = if flags & 1 != 0 { base & ADDRESS_MASK & !3 } else { HEADER_AT };
    let m = SparseMemory::new();
    if m.map_bytes(header_at, blob).is_err() {
        return Ok(());
    }
    let _ = AgcShader::read(&m, header_at).map(|s| format!("{s:?}"));
    let _ = GnmCode::read(&m, header_at).map(|c| c.crc_matches());
    let _ = locate_in_memory(&m, header_at);
    let direct = GnmProgram::read(&m, header_at);
    let registry = ShaderRegistry::new();
    for round in 0..2 {
        let cached = registry.try_resolve_gnm(&m, header_at).map(|p| p.map(|p| (*p).clone()));
        if cached != direct {
            return Err(fail(format!("GNM lookup {round}: the registry gives {cached:?}, a read {direct:?}")));
        }
    }
    registry.invalidate_range(header_at, blob.len() as u64);
    if registry.try_resolve_gnm(&m, header_at).map(|p| p.map(|p| (*p).clone())) != direct {
        return Err(fail("GNM lookup after an invalidation differs from a read".to_owned()));
    }
    let _ = register_relocated(&m, header_at, code);

    let pristine = m.clone();
    let before = m.write_generation();
    match create_shader(&m, header_at, code) {
        Ok(created) => {
            if created.code_address() != Some(code) || !created.is_relocated() {
                return Err(fail(format!("created at {code:#x} but holds {:?}", created.code_address())));
            }
            match register_relocated(&m, header_at, code) {
                Ok(again) if again == created => {}
                other => return Err(fail(format!("a created header does not register as created: {other:?}"))),
            }
            match create_shader(&m, header_at, code) {
                Err(ShaderError::AlreadyRelocated { .. }) => {}
                other => return Err(fail(format!("a created header was created again: {other:?}"))),
            }
        }
        Err(e) => {
            let _ = e.to_string();
            if m.write_generation() != before {
                return Err(fail(format!("a rejected header was written: {e}")));
            }
        }
    }

    // The registry on the untouched bytes: create, resolve, host write, resolve.
    let m = pristine;
    let registry = ShaderRegistry::new();
    if registry.create(&m, header_at, code, flags & 2 != 0).is_ok() {
        if registry.resolve(&m, code).is_none() {
            return Err(fail(format!("the registry does not resolve {code:#x} right after creating it")));
        }
        let address = header_at.wrapping_add(poke & !3);
        if m.write_u32(address, 0).is_ok() {
            registry.invalidate_range(address, 4);
        }
        let _ = registry.try_resolve(&m, code).map_err(|e| e.to_string());
        let _ = (registry.len(), registry.iter().count(), registry.get(code).is_some());
    }
    Ok(())
}

/// Every decoder that works on bytes.
fn decode_all(blob: &[u8], base: u64) {
    for at in [base, 0] {
        if let Ok(s) = AgcShader::parse(blob, at) {
            let _ = (format!("{s:?}"), s.program_address(), s.extent(), s.stage(), s.pipeline_stage());
        }
    }
    if let Ok(file) = GnmShaderFile::parse(blob) {
        let _ = (file.code(blob), file.decode_code(blob), format!("{file:?}"));
    }
    let _ = locate_orbshdr(blob);
    let _ = vcc_hi_candidate(blob);
    if let Ok(code) = GnmCode::decode(blob) {
        let _ = (code.code_length(), code.crc_matches(), code.verify_crc(), format!("{code:?}"));
    }
    if let Ok(d) = Dvlb::parse(blob) {
        let _ = (d.code(blob), format!("{d:?}"));
    }
    let _ = detect(blob);
    let _ = inspect(blob).to_string();
}
