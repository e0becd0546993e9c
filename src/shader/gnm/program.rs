//! The program a PS4 code address binds: the `OrbShdr` block found after
//! the code, decoded and validated (shader-containers.md §2.6-§2.8).

use super::*;
use crate::regs::stages::HardwareStage;

/// A validated GNM program: the code at `code_address` and the `OrbShdr`
/// block that trails it. What a PS4 program binding carries besides the
/// address: the code's length, its type and stage, its identity (the
/// 64-bit hash emulators key caches by) and its input-usage slots.
///
/// ```
/// use pm4core::memory::SparseMemory;
/// use pm4core::regs::stages::HardwareStage;
/// use pm4core::shader::gnm::{GnmBinaryType, GnmProgram};
///
/// // shadPS4's embedded pixel shader ps0: 32 code bytes, the block after them.
/// let code: [u32; 8] = [0xBEEB03FF, 3, 0x7E000280, 0x5E000100, 0xBF800000, 0xF8001C0F, 0, 0xBF810000];
/// let block: [u32; 7] = [0x5362724F, 0x07726468, 0x2043, 0, 0xB0A45B2B, 0x1D39766D, 0x72044B7B];
/// let bytes: Vec<u8> = code.iter().chain(&block).flat_map(|d| d.to_le_bytes()).collect();
/// let memory = SparseMemory::new();
/// memory.map_bytes(0x10_0000, &bytes).unwrap();
/// let program = GnmProgram::read(&memory, 0x10_0000)?.expect("an OrbShdr block");
/// assert_eq!(program.binary_type(), Some(GnmBinaryType::Ps));
/// assert_eq!(program.hardware_stage(), Some(HardwareStage::Ps));
/// assert_eq!((program.code_length(), program.block_address()), (0x20, 0x10_0020));
/// assert_eq!(program.shader_hash(), 0x1D39_766D_B0A4_5B2B);
/// // Code without a block is raw code: no program, no error.
/// memory.map_zeroed(0x20_0000, 0x1000).unwrap();
/// assert_eq!(GnmProgram::read(&memory, 0x20_0000)?, None);
/// # Ok::<(), pm4core::shader::ShaderError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct GnmProgram {
    /// The code address (PGM_LO/HI << 8).
    pub code_address: u64,
    /// The block, where it was found, the usage chunk before it and the CRC
    /// its bytes give.
    pub code: GnmCode,
}

/// What a look for the block at a code address found, and which bytes from
/// the code address on decided it: a later write to them can change the
/// answer (`None`: do not keep the answer, e.g. unreadable memory).
pub(crate) struct Lookup {
    pub(crate) result: Result<Option<GnmProgram>, ShaderError>,
    pub(crate) extent: Option<u64>,
}

impl GnmProgram {
    /// Finds the `OrbShdr` block after the code at `code_address` in guest
    /// memory, decodes and validates it ([`GnmProgram::validate`]).
    /// `Ok(None)` when there is no block (raw code: the leading
    /// `s_mov_b32 vcc_hi` does not point at one and the bounded scan finds
    /// none); an error when a block is found but is not valid for this code,
    /// or memory cannot be read.
    pub fn read(mem: &dyn GuestMemory, code_address: u64) -> Result<Option<Self>, ShaderError> {
        lookup(mem, code_address).result
    }

    /// Checks a decoded block against its code: a known binary type, the
    /// block right after the code and its usage chunk (at most 8 bytes of
    /// padding each), and the stored crc32.
    pub fn validate(code: &GnmCode) -> Result<(), ShaderError> {
        let info = &code.info;
        if info.binary_type().is_none() {
            return Err(ShaderError::OrbShdrBadType { found: info.binary_type });
        }
        let usage = (u64::from(info.num_input_usage_slots) + u64::from(info.chunk_usage_base_offset_dw)) * 4;
        let limit = bytes::align_up(u64::from(info.length), 8).unwrap_or(u64::MAX).saturating_add(usage + 8);
        if code.location.offset > limit {
            return Err(ShaderError::OrbShdrNotAfterCode { offset: code.location.offset, length: info.length, limit });
        }
        code.verify_crc()
    }

    /// The block's binary type, when known (always, once validated).
    pub fn binary_type(&self) -> Option<GnmBinaryType> {
        self.code.info.binary_type()
    }

    /// The hardware stage the binary type runs on: PS; VS for VS_VS, GS_VS
    /// (the GS copy shader) and DS_VS; ES for VS_ES and DS_ES; LS for
    /// VS_LS; GS, HS, CS.
    pub fn hardware_stage(&self) -> Option<HardwareStage> {
        use GnmBinaryType as T;
        Some(match self.binary_type()? {
            T::Ps => HardwareStage::Ps,
            T::VsVs | T::GsVs | T::DsVs => HardwareStage::Vs,
            T::VsEs | T::DsEs => HardwareStage::Es,
            T::VsLs => HardwareStage::Ls,
            T::Gs => HardwareStage::Gs,
            T::Hs => HardwareStage::Hs,
            T::Cs => HardwareStage::Cs,
        })
    }

    /// The 64-bit shader hash (+0x10..0x18): the program's identity.
    pub fn shader_hash(&self) -> u64 {
        self.code.info.shader_hash()
    }

    /// Code bytes from the code address, the block excluded.
    pub fn code_length(&self) -> u32 {
        self.code.info.length
    }

    /// The guest address of the block.
    pub fn block_address(&self) -> u64 {
        self.code_address.wrapping_add(self.code.location.offset)
    }

    /// `(code address, bytes)`: the code, its usage chunk and the block, the
    /// bytes a write must touch to change what the address binds.
    pub fn extent(&self) -> (u64, u64) {
        (self.code_address, self.code.location.offset + u64::from(ORBSHDR_LEN))
    }

    /// The input-usage slots copied before the block (empty without a
    /// usage chunk).
    pub fn usage_slots(&self) -> &[InputUsageSlot] {
        self.code.usage_chunk.as_ref().map_or(&[], |c| c.slots.as_slice())
    }
}

/// Looks for, decodes and validates the block at `code_address`, with the
/// extent that decided it.
pub(crate) fn lookup(mem: &dyn GuestMemory, code_address: u64) -> Lookup {
    let location = match locate_in_memory(mem, code_address) {
        Ok(location) => location,
        Err(ShaderError::OrbShdrNotFound { scanned }) => {
            // The scan read `scanned` bytes (+ a signature's tail); a vcc_hi
            // literal pointing further is a place a later write could put a
            // block: then the answer is not kept.
            let window = scanned + ORBSHDR_SIGNATURE.len() as u64;
            let mut first = [0u8; 8];
            let candidate = mem.read_bytes(code_address, &mut first).ok().and_then(|()| vcc_hi_candidate(&first));
            let beyond = candidate.is_some_and(|c| c.saturating_add(ORBSHDR_SIGNATURE.len() as u64) > window);
            return Lookup { result: Ok(None), extent: (!beyond && scanned > 0).then_some(window) };
        }
        Err(e) => return Lookup { result: Err(e), extent: None },
    };
    let extent = Some(location.offset.saturating_add(u64::from(ORBSHDR_LEN)));
    let result = GnmCode::read_at(mem, code_address, location).and_then(|code| {
        GnmProgram::validate(&code)?;
        Ok(Some(GnmProgram { code_address, code }))
    });
    let extent = match result {
        Err(ShaderError::Memory { .. }) => None,
        _ => extent,
    };
    Lookup { result, extent }
}
