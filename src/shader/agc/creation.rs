//! Creation: what `sceAgcCreateShader` does to a container in guest memory
//! (shader-containers.md §1.11): validation, relocation, the program-register
//! patch.

use super::*;

/// Checks a code address: non-null, inside the 48-bit space the program
/// registers can encode, 256-byte aligned (shader-containers.md §1.8:
/// `(code & 0xFFFF_0000_0000_00FF) == 0`).
pub fn check_code_address(code_address: u64) -> Result<(), ShaderError> {
    if code_address == 0 || code_address >= ADDRESS_SPACE_END {
        return Err(ShaderError::CodeAddressOutOfRange { code_address });
    }
    if code_address % CODE_ALIGNMENT != 0 {
        return Err(ShaderError::MisalignedCode { code_address });
    }
    Ok(())
}

/// One relocation write, staged on the header's copy until the relocated
/// header has been decoded: a header the final decode refuses is left
/// untouched in guest memory.
struct StagedWrite {
    offset: u32,
    bytes: [u8; 8],
    len: usize,
}

fn stage(blob: &mut [u8], writes: &mut Vec<StagedWrite>, offset: u32, value: &[u8]) {
    let mut bytes = [0u8; 8];
    let len = value.len().min(8);
    if let (Some(dst), Some(src)) = (bytes.get_mut(..len), value.get(..len)) {
        dst.copy_from_slice(src);
    }
    bytes::put(blob, offset as usize, value);
    writes.push(StagedWrite { offset, bytes, len });
}

fn apply_writes(mem: &dyn GuestMemory, header_address: u64, writes: &[StagedWrite]) -> Result<(), ShaderError> {
    for w in writes {
        let address = header_address.wrapping_add(u64::from(w.offset));
        let value = w.bytes.get(..w.len).unwrap_or(&[]);
        mem.write_bytes(address, value).map_err(|source| ShaderError::Memory {
            what: "AGC header relocation",
            address,
            source,
        })?;
    }
    Ok(())
}

/// What `sceAgcCreateShader(&out, header, code)` does to the header at
/// `header_address` (shader-containers.md §1.11), followed by a decode of
/// the result:
///
/// 1. every non-null self-relative pointer, in the header and in user data,
///    becomes the absolute address of its target; null stays null;
/// 2. the code address is stored at header +0x10;
/// 3. the type's program-address pair in the SH table is patched to the code
///    address.
///
/// Everything is validated before the first byte is written, so a rejected
/// header is left untouched. Differences from the sources, following the
/// reference's recommendations:
/// - magic and version are checked *before* relocating, not after, and so
///   is every table bound (§1.13);
/// - a header that is already relocated (code field set, or pointers that
///   only make sense as absolute addresses) is refused with
///   [`ShaderError::AlreadyRelocated`] instead of being corrupted by a second
///   relocation (§3, §1.11);
/// - code must be 256-byte aligned (§1.8);
/// - LO = address bits 8..39, HI = (HI & 0xFFFF_FF00) | bits 40..47: the
///   overwrite variant that keeps HI's upper bits (§3). It
///   equals every source's result when the stored pair is zero, as in all
///   samples.
pub fn create_shader(mem: &dyn GuestMemory, header_address: u64, code_address: u64) -> Result<AgcShader, ShaderError> {
    check_code_address(code_address)?;
    let mut blob = read_header_blob(mem, header_address)?;
    let code_field = bytes::u64_at(&blob, u64::from(offsets::CODE)).unwrap_or(0);
    if code_field != 0 {
        return Err(ShaderError::AlreadyRelocated { header_address, code_field });
    }
    let shader = match AgcShader::decode(&blob, header_address, PointerMode::SelfRelative) {
        Ok(shader) => shader,
        Err(err @ ShaderError::PointerOutOfBounds { .. }) => {
            // Pointers that fail as self-relative offsets but all land inside
            // the header as absolute addresses: relocated by someone who did
            // not store a code address. Relocating again would corrupt them.
            return Err(match AgcShader::decode(&blob, header_address, PointerMode::Absolute) {
                Ok(_) => ShaderError::AlreadyRelocated { header_address, code_field },
                Err(_) => err,
            });
        }
        Err(err) => return Err(err),
    };

    let layout = shader.layout;
    let mut writes = Vec::new();
    for (_, field) in HEADER_POINTER_FIELDS {
        if let Some(target) = layout.header_pointer(field) {
            let value = header_address.wrapping_add(u64::from(target));
            stage(&mut blob, &mut writes, field, &value.to_le_bytes());
        }
    }
    if let Some(ud) = layout.user_data {
        let fields = std::iter::once((offsets::user_data::DIRECT_RESOURCES, layout.direct_resources))
            .chain(offsets::user_data::SHARP_RESOURCES.into_iter().zip(layout.sharp_resources));
        for (field, target) in fields {
            if let Some(target) = target {
                let value = header_address.wrapping_add(u64::from(target));
                let at = ud.saturating_add(field);
                stage(&mut blob, &mut writes, at, &value.to_le_bytes());
            }
        }
    }
    stage(&mut blob, &mut writes, offsets::CODE, &code_address.to_le_bytes());

    if let (Some(index), Some(sh_at)) = (shader.program_index, layout.sh_registers) {
        let (lo, hi_byte) = encode_program_address(code_address);
        let lo_at = sh_at.saturating_add(index.saturating_mul(REGISTER_ENTRY_LEN)).saturating_add(4);
        let hi_at = lo_at.saturating_add(REGISTER_ENTRY_LEN);
        let old_hi = shader.sh_registers.get(index as usize + 1).map(|e| e.value).unwrap_or(0);
        let hi = (old_hi & 0xFFFF_FF00) | u32::from(hi_byte);
        stage(&mut blob, &mut writes, lo_at, &lo.to_le_bytes());
        stage(&mut blob, &mut writes, hi_at, &hi.to_le_bytes());
    }

    let relocated = AgcShader::decode(&blob, header_address, PointerMode::Absolute)?;
    apply_writes(mem, header_address, &writes)?;
    Ok(relocated)
}

/// Accepts a header that an earlier creation call already relocated (a trace
/// `SHDR` chunk with flag bit 0): decodes it with absolute pointers and
/// checks that it holds `code_address`. Memory is not written.
pub fn register_relocated(
    mem: &dyn GuestMemory,
    header_address: u64,
    code_address: u64,
) -> Result<AgcShader, ShaderError> {
    check_code_address(code_address)?;
    let blob = read_header_blob(mem, header_address)?;
    let stored = bytes::u64_at(&blob, u64::from(offsets::CODE)).unwrap_or(0);
    if stored == 0 {
        // Validate the rest first so a broken header reports what is broken.
        AgcShader::decode(&blob, header_address, PointerMode::SelfRelative)?;
        return Err(ShaderError::NotRelocated { header_address });
    }
    if stored != code_address {
        return Err(ShaderError::CodeAddressMismatch { header_address, stored, given: code_address });
    }
    AgcShader::decode(&blob, header_address, PointerMode::Absolute)
}
