//! PS4 GNM shaders: the `OrbShdr` info block that trails the GPU code, its
//! CRC, and the `Shdr` shader-binary file with its stage structs, input-usage
//! slots and semantics (shader-containers.md §2).
//!
//! On PS4 the command processor again sees only a code address; the block
//! after the code gives the code's length and identity. [`GnmCode::read`]
//! finds it from a code address the way shader-containers.md §2.8 describes:
//! the compiler's first instruction `s_mov_b32 vcc_hi, literal` points at
//! it, the signature confirms it, and a bounded scan is the fallback.

use crate::memory::GuestMemory;

use super::bytes::{self, Bytes};
use super::ShaderError;

/// The block's signature.
pub const ORBSHDR_SIGNATURE: [u8; 7] = *b"OrbShdr";
/// Size of `GnmShaderBinaryInfo`.
pub const ORBSHDR_LEN: u32 = 0x1C;
/// `s_mov_b32 vcc_hi, <literal>`: the first dword of compiler output.
pub const VCC_HI_MOV_LITERAL: u32 = 0xBEEB_03FF;
/// How far the fallback scan looks: 0x4000 dwords.
pub const SCAN_LIMIT: u64 = 0x4000 * 4;
/// `Shdr` file magic.
pub const SHDR_MAGIC: u32 = 0x7264_6853;
/// Size of `GnmShaderFileHeader`.
pub const SHDR_HEADER_LEN: u32 = 0x10;

// ---------------------------------------------------------------------------
// The non-standard CRC-32
// ---------------------------------------------------------------------------

const fn reflected_crc_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
}

static CRC_TABLE: [u32; 256] = reflected_crc_table();

/// The CRC-32 variant of the `OrbShdr` block (shader-containers.md §2.6): the
/// reflected CRC-32 table, but indexed by `(i mod 7) + (i div 7)` for
/// `i < 0xE0` and by 0 otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrbShdrCrc {
    state: u32,
}

impl Default for OrbShdrCrc {
    fn default() -> Self {
        Self::new()
    }
}

impl OrbShdrCrc {
    /// A fresh CRC (state 0xFFFFFFFF).
    pub fn new() -> Self {
        Self { state: 0xFFFF_FFFF }
    }

    /// Feeds bytes.
    pub fn update(&mut self, data: &[u8]) {
        let mut crc = self.state;
        for &b in data {
            let i = (crc ^ u32::from(b)) & 0xFF;
            let j = if i < 0xE0 { i % 7 + i / 7 } else { 0 };
            crc = CRC_TABLE.get(j as usize).copied().unwrap_or(0) ^ (crc >> 8);
        }
        self.state = crc;
    }

    /// Feeds `count` zero bytes.
    pub fn update_zeros(&mut self, count: usize) {
        for _ in 0..count {
            self.update(&[0]);
        }
    }

    /// The final value (bitwise NOT of the state).
    pub fn finish(self) -> u32 {
        !self.state
    }
}

/// The `crc32` an `OrbShdr` block should hold: over the first `length` bytes
/// of `code`, zero padding up to a multiple of 8, then `info_prefix` (the
/// block's bytes 0x00..0x18). Returns `None` when `code` is shorter than
/// `length`.
pub fn orbshdr_crc32(code: &[u8], length: u32, info_prefix: &[u8]) -> Option<u32> {
    let program = bytes::sub(code, 0, u64::from(length))?;
    let mut crc = OrbShdrCrc::new();
    crc.update(program);
    crc.update_zeros(pad_to_8(u64::from(length)));
    crc.update(info_prefix);
    Some(crc.finish())
}

fn pad_to_8(len: u64) -> usize {
    ((8 - (len % 8)) % 8) as usize
}

// ---------------------------------------------------------------------------
// OrbShdr
// ---------------------------------------------------------------------------

/// `GnmShaderBinaryType`, bits 2..5 of the block's +0x08 bitfield.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[repr(u8)]
pub enum GnmBinaryType {
    Ps = 0,
    VsVs = 1,
    VsEs = 2,
    VsLs = 3,
    Cs = 4,
    Gs = 5,
    GsVs = 6,
    Hs = 7,
    DsVs = 8,
    DsEs = 9,
}

impl GnmBinaryType {
    /// The type for a raw 4-bit value.
    pub fn from_raw(raw: u8) -> Option<Self> {
        use GnmBinaryType::*;
        [Ps, VsVs, VsEs, VsLs, Cs, Gs, GsVs, Hs, DsVs, DsEs].get(usize::from(raw)).copied()
    }

    /// Name.
    pub fn name(self) -> &'static str {
        match self {
            GnmBinaryType::Ps => "PS",
            GnmBinaryType::VsVs => "VS_VS",
            GnmBinaryType::VsEs => "VS_ES",
            GnmBinaryType::VsLs => "VS_LS",
            GnmBinaryType::Cs => "CS",
            GnmBinaryType::Gs => "GS",
            GnmBinaryType::GsVs => "GS_VS",
            GnmBinaryType::Hs => "HS",
            GnmBinaryType::DsVs => "DS_VS",
            GnmBinaryType::DsEs => "DS_ES",
        }
    }
}

/// The 0x1C-byte `GnmShaderBinaryInfo` block (shader-containers.md §2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct OrbShdrInfo {
    /// +0x07; 7 in every sample.
    pub version: u8,
    /// Bit 0: compiled from PSSL/Cg (1) or IL (0).
    pub is_pssl_cg: bool,
    /// Bit 1.
    pub is_source_cached: bool,
    /// Bits 2..5, see [`GnmBinaryType`].
    pub binary_type: u8,
    /// Bits 6..7.
    pub source_type: u8,
    /// Bits 8..31: code bytes from the code address, the leading
    /// `s_mov_b32 vcc_hi` included and this block excluded.
    pub length: u32,
    /// +0x0C, see shader-containers.md §2.7.
    pub chunk_usage_base_offset_dw: u8,
    /// +0x0D.
    pub num_input_usage_slots: u8,
    /// +0x0E: bit 0 has SRT, bit 1 SRT-used info valid, bit 2 extended usage info.
    pub flags: u8,
    /// +0x0F.
    pub reserved: u8,
    /// +0x10.
    pub shader_hash0: u32,
    /// +0x14.
    pub shader_hash1: u32,
    /// +0x18.
    pub crc32: u32,
}

impl OrbShdrInfo {
    /// Decodes the block at the start of `block` (signature checked).
    pub fn decode(block: &[u8]) -> Result<Self, ShaderError> {
        let b = Bytes::new(block);
        let all = b.sub("OrbShdr block", 0, u64::from(ORBSHDR_LEN))?;
        if all.get(..7) != Some(&ORBSHDR_SIGNATURE[..]) {
            return Err(ShaderError::BadMagic {
                what: "OrbShdr signature",
                offset: 0,
                found: bytes::u32_at(all, 0).unwrap_or(0),
                expected: u32::from_le_bytes([b'O', b'r', b'b', b'S']),
            });
        }
        let bitfield = bytes::u32_at(all, 0x08).unwrap_or(0);
        let byte = |o: u64| bytes::u8_at(all, o).unwrap_or(0);
        let word = |o: u64| bytes::u32_at(all, o).unwrap_or(0);
        Ok(Self {
            version: byte(0x07),
            is_pssl_cg: bitfield & 1 != 0,
            is_source_cached: bitfield & 2 != 0,
            binary_type: ((bitfield >> 2) & 0xF) as u8,
            source_type: ((bitfield >> 6) & 0x3) as u8,
            length: bitfield >> 8,
            chunk_usage_base_offset_dw: byte(0x0C),
            num_input_usage_slots: byte(0x0D),
            flags: byte(0x0E),
            reserved: byte(0x0F),
            shader_hash0: word(0x10),
            shader_hash1: word(0x14),
            crc32: word(0x18),
        })
    }

    /// The +0x08 bitfield.
    pub fn bitfield(&self) -> u32 {
        u32::from(self.is_pssl_cg)
            | (u32::from(self.is_source_cached) << 1)
            | (u32::from(self.binary_type & 0xF) << 2)
            | (u32::from(self.source_type & 0x3) << 6)
            | ((self.length & 0xFF_FFFF) << 8)
    }

    /// The block's 0x1C bytes.
    pub fn to_bytes(&self) -> [u8; ORBSHDR_LEN as usize] {
        let mut out = [0u8; ORBSHDR_LEN as usize];
        bytes::put(&mut out, 0, &ORBSHDR_SIGNATURE);
        bytes::put(&mut out, 7, &[self.version]);
        bytes::put(&mut out, 8, &self.bitfield().to_le_bytes());
        bytes::put(
            &mut out,
            0x0C,
            &[self.chunk_usage_base_offset_dw, self.num_input_usage_slots, self.flags, self.reserved],
        );
        bytes::put(&mut out, 0x10, &self.shader_hash0.to_le_bytes());
        bytes::put(&mut out, 0x14, &self.shader_hash1.to_le_bytes());
        bytes::put(&mut out, 0x18, &self.crc32.to_le_bytes());
        out
    }

    /// The type, when it is a known one.
    pub fn binary_type(&self) -> Option<GnmBinaryType> {
        GnmBinaryType::from_raw(self.binary_type)
    }

    /// hash0 and hash1 as one u64 (a natural cache key).
    pub fn shader_hash(&self) -> u64 {
        u64::from(self.shader_hash0) | (u64::from(self.shader_hash1) << 32)
    }

    pub fn has_srt(&self) -> bool {
        self.flags & 1 != 0
    }
    pub fn has_srt_used_valid_info(&self) -> bool {
        self.flags & 2 != 0
    }
    pub fn has_extended_usage_info(&self) -> bool {
        self.flags & 4 != 0
    }
}

/// How the block was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum LocateMethod {
    /// Through the leading `s_mov_b32 vcc_hi, literal`: at byte (literal + 1) × 8.
    VccHiLiteral,
    /// By the bounded forward scan for the signature.
    Scan,
}

/// Where the block sits relative to the code address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct OrbShdrLocation {
    /// Byte offset of the block from the code address.
    pub offset: u64,
    /// How it was found.
    pub method: LocateMethod,
}

/// The candidate offset the leading `s_mov_b32 vcc_hi` literal names.
pub fn vcc_hi_candidate(first_dwords: &[u8]) -> Option<u64> {
    if bytes::u32_at(first_dwords, 0)? != VCC_HI_MOV_LITERAL {
        return None;
    }
    let literal = bytes::u32_at(first_dwords, 4)?;
    u64::from(literal).checked_add(1)?.checked_mul(8)
}

fn has_signature(code: &[u8], offset: u64) -> bool {
    bytes::sub(code, offset, ORBSHDR_SIGNATURE.len() as u64) == Some(&ORBSHDR_SIGNATURE[..])
}

/// Finds the `OrbShdr` block in `code` (bytes from the code address on):
/// the `vcc_hi` literal's candidate when its signature matches, otherwise
/// the first signature at a 4-byte step within [`SCAN_LIMIT`] bytes
/// (shader-containers.md §2.8 and §3).
pub fn locate_orbshdr(code: &[u8]) -> Result<OrbShdrLocation, ShaderError> {
    if let Some(candidate) = vcc_hi_candidate(code) {
        if has_signature(code, candidate) {
            return Ok(OrbShdrLocation { offset: candidate, method: LocateMethod::VccHiLiteral });
        }
    }
    let limit = (code.len() as u64).min(SCAN_LIMIT);
    let mut offset = 0u64;
    while offset < limit {
        if has_signature(code, offset) {
            return Ok(OrbShdrLocation { offset, method: LocateMethod::Scan });
        }
        offset += 4;
    }
    Err(ShaderError::OrbShdrNotFound { scanned: limit })
}

/// A GNM input-usage slot (shader-containers.md §2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct InputUsageSlot {
    pub usage_type: u8,
    pub api_slot: u8,
    pub start_register: u8,
    /// bit 0 register count (0 = 4 dwords, 1 = 8); bit 1 resource type;
    /// bits 4..7 chunk mask. For IMM_SRT the whole byte is srtdwordsminusone.
    pub flags: u8,
}

impl InputUsageSlot {
    fn decode(b: &[u8]) -> Self {
        let byte = |i: u64| bytes::u8_at(b, i).unwrap_or(0);
        Self { usage_type: byte(0), api_slot: byte(1), start_register: byte(2), flags: byte(3) }
    }

    /// The four bytes.
    pub fn to_bytes(self) -> [u8; 4] {
        [self.usage_type, self.api_slot, self.start_register, self.flags]
    }

    /// Name of the usage type, if known.
    pub fn usage_type_name(self) -> Option<&'static str> {
        usage_type_name(self.usage_type)
    }

    /// Dwords of user data the slot uses (`sceGnmShaderInputUsageTypeSize`,
    /// with the size of 0x00/0x04 taken from the register-count flag);
    /// `None` for unknown types.
    pub fn dwords(self) -> Option<u32> {
        match self.usage_type {
            0x00 | 0x04 => Some(if self.flags & 1 != 0 { 8 } else { 4 }),
            t => usage_type_dwords(t),
        }
    }
}

/// GnmShaderInputUsageType names (shader-containers.md §2.4).
pub fn usage_type_name(usage_type: u8) -> Option<&'static str> {
    Some(match usage_type {
        0x00 => "IMM_RESOURCE",
        0x01 => "IMM_SAMPLER",
        0x02 => "IMM_CONSTBUFFER",
        0x03 => "IMM_VERTEXBUFFER",
        0x04 => "IMM_RWRESOURCE",
        0x05 => "IMM_ALUFLOATCONST",
        0x06 => "IMM_ALUBOOL32CONST",
        0x07 => "IMM_GDSCOUNTERRANGE",
        0x08 => "IMM_GDSMEMORYRANGE",
        0x09 => "IMM_GWSBASE",
        0x0A => "IMM_SRT",
        0x0D => "IMM_LDSESGSSIZE",
        0x12 => "SUBPTR_FETCHSHADER",
        0x13 => "PTR_RESOURCETABLE",
        0x14 => "PTR_INTERNALRESOURCETABLE",
        0x15 => "PTR_SAMPLERTABLE",
        0x16 => "PTR_CONSTBUFFERTABLE",
        0x17 => "PTR_VERTEXBUFFERTABLE",
        0x18 => "PTR_SOBUFFERTABLE",
        0x19 => "PTR_RWRESOURCETABLE",
        0x1A => "PTR_INTERNALGLOBALTABLE",
        0x1B => "PTR_EXTENDEDUSERDATA",
        0x1C => "PTR_INDIRECTRESOURCETABLE",
        0x1D => "PTR_INDIRECTINTERNALRESOURCETABLE",
        0x1E => "PTR_INDIRECTRWRESOURCETABLE",
        _ => return None,
    })
}

/// `sceGnmShaderInputUsageTypeSize`: 0 for the types whose size comes from
/// the slot's flags (and IMM_SRT), `None` for unknown types.
pub fn usage_type_dwords(usage_type: u8) -> Option<u32> {
    Some(match usage_type {
        0x00 | 0x04 | 0x0A => 0,
        0x01..=0x03 => 4,
        0x05..=0x09 | 0x0D => 1,
        0x12..=0x1E => 2,
        _ => return None,
    })
}

/// The input-usage chunk before the block: slots followed by usage-mask
/// dwords (shader-containers.md §2.7).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct UsageChunk {
    /// Byte offset of the first slot from the code address.
    pub offset: u64,
    pub slots: Vec<InputUsageSlot>,
    /// The `chunkusagebaseoffsetdwords` dwords between the slots and the block.
    pub masks: Vec<u32>,
}

/// A PS4 code blob's `OrbShdr` block, decoded from a code address.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct GnmCode {
    /// Where the block is.
    pub location: OrbShdrLocation,
    /// The block.
    pub info: OrbShdrInfo,
    /// The usage chunk before the block, when `chunkusagebaseoffsetdwords` is
    /// non-zero and the chunk fits between the code start and the block.
    pub usage_chunk: Option<UsageChunk>,
    /// The CRC the 2.6 algorithm gives for the code and block.
    pub computed_crc32: u32,
}

/// Bytes from the code address on, from a slice or from guest memory.
trait CodeSource {
    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), ShaderError>;
}

impl CodeSource for &[u8] {
    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), ShaderError> {
        let src = Bytes::new(self).sub("shader code", offset, out.len() as u64)?;
        out.copy_from_slice(src);
        Ok(())
    }
}

struct MemorySource<'a> {
    mem: &'a dyn GuestMemory,
    base: u64,
}

impl CodeSource for MemorySource<'_> {
    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), ShaderError> {
        let address = self.base.saturating_add(offset);
        self.mem.read_bytes(address, out).map_err(|source| ShaderError::Memory { what: "shader code", address, source })
    }
}

fn decode_at(src: &dyn CodeSource, location: OrbShdrLocation) -> Result<GnmCode, ShaderError> {
    let mut block = [0u8; ORBSHDR_LEN as usize];
    src.read(location.offset, &mut block)?;
    let info = OrbShdrInfo::decode(&block)?;
    if u64::from(info.length) > location.offset {
        return Err(ShaderError::OrbShdrLengthOutOfRange { offset: location.offset, length: info.length });
    }

    // CRC over the code, streamed in pieces (length is at most 16 MiB).
    let mut crc = OrbShdrCrc::new();
    let mut chunk = [0u8; 4096];
    let mut done = 0u64;
    let length = u64::from(info.length);
    while done < length {
        let n = (length - done).min(chunk.len() as u64) as usize;
        let piece = chunk.get_mut(..n).unwrap_or(&mut []);
        src.read(done, piece)?;
        crc.update(piece);
        done += n as u64;
    }
    crc.update_zeros(pad_to_8(length));
    crc.update(block.get(..0x18).unwrap_or(&[]));

    let usage_chunk = read_usage_chunk(src, location.offset, &info);
    Ok(GnmCode { location, info, usage_chunk, computed_crc32: crc.finish() })
}

fn read_usage_chunk(src: &dyn CodeSource, info_offset: u64, info: &OrbShdrInfo) -> Option<UsageChunk> {
    let masks_len = u64::from(info.chunk_usage_base_offset_dw) * 4;
    if masks_len == 0 {
        return None;
    }
    let slots_len = u64::from(info.num_input_usage_slots) * 4;
    let masks_at = info_offset.checked_sub(masks_len)?;
    let slots_at = masks_at.checked_sub(slots_len)?;
    // Both lengths are at most 255 × 4 bytes.
    let mut raw = vec![0u8; (slots_len + masks_len) as usize];
    src.read(slots_at, &mut raw).ok()?;
    let (slot_bytes, mask_bytes) = raw.split_at(slots_len as usize);
    Some(UsageChunk {
        offset: slots_at,
        slots: slot_bytes.chunks_exact(4).map(InputUsageSlot::decode).collect(),
        masks: mask_bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
    })
}

impl GnmCode {
    /// Locates and decodes the block in `code` (bytes from the code address).
    pub fn decode(code: &[u8]) -> Result<Self, ShaderError> {
        let location = locate_orbshdr(code)?;
        decode_at(&code, location)
    }

    /// Locates and decodes the block after the code at `code_address` in
    /// guest memory. Reads at most [`SCAN_LIMIT`] bytes to search and the
    /// code's `length` bytes (streamed) for the CRC.
    pub fn read(mem: &dyn GuestMemory, code_address: u64) -> Result<Self, ShaderError> {
        let location = locate_in_memory(mem, code_address)?;
        decode_at(&MemorySource { mem, base: code_address }, location)
    }

    /// Code bytes from the code address, block excluded.
    pub fn code_length(&self) -> u32 {
        self.info.length
    }

    /// True when the stored crc32 matches the computed one.
    pub fn crc_matches(&self) -> bool {
        self.info.crc32 == self.computed_crc32
    }

    /// Checks the stored crc32.
    pub fn verify_crc(&self) -> Result<(), ShaderError> {
        if self.crc_matches() {
            Ok(())
        } else {
            Err(ShaderError::OrbShdrCrcMismatch { stored: self.info.crc32, computed: self.computed_crc32 })
        }
    }
}

/// [`locate_orbshdr`] over guest memory: the literal's candidate is read
/// directly; the scan reads the mapped part of the first [`SCAN_LIMIT`]
/// (+ signature) bytes.
pub fn locate_in_memory(mem: &dyn GuestMemory, code_address: u64) -> Result<OrbShdrLocation, ShaderError> {
    let mut first = [0u8; 8];
    if mem.read_bytes(code_address, &mut first).is_ok() {
        if let Some(candidate) = vcc_hi_candidate(&first) {
            let mut sig = [0u8; 7];
            let at = code_address.checked_add(candidate);
            if at.is_some_and(|at| mem.read_bytes(at, &mut sig).is_ok()) && sig == ORBSHDR_SIGNATURE {
                return Ok(OrbShdrLocation { offset: candidate, method: LocateMethod::VccHiLiteral });
            }
        }
    }
    // Read page-sized pieces until the first unmapped one.
    let window = SCAN_LIMIT + ORBSHDR_SIGNATURE.len() as u64;
    let mut buf = Vec::new();
    let mut piece = [0u8; 4096];
    while (buf.len() as u64) < window {
        let n = (window - buf.len() as u64).min(piece.len() as u64) as usize;
        let Some(at) = code_address.checked_add(buf.len() as u64) else {
            break;
        };
        let dst = piece.get_mut(..n).unwrap_or(&mut []);
        if mem.read_bytes(at, dst).is_err() {
            // Take what is mapped of this piece, byte by byte.
            for b in dst.iter_mut() {
                let Some(at) = code_address.checked_add(buf.len() as u64) else {
                    break;
                };
                let mut one = [0u8; 1];
                if mem.read_bytes(at, &mut one).is_err() {
                    break;
                }
                *b = one[0];
                buf.push(one[0]);
            }
            break;
        }
        buf.extend_from_slice(dst);
    }
    let scan_len = (buf.len() as u64).min(SCAN_LIMIT);
    let mut offset = 0u64;
    while offset < scan_len {
        if has_signature(&buf, offset) {
            return Ok(OrbShdrLocation { offset, method: LocateMethod::Scan });
        }
        offset += 4;
    }
    Err(ShaderError::OrbShdrNotFound { scanned: scan_len })
}

// ---------------------------------------------------------------------------
// The `Shdr` file
// ---------------------------------------------------------------------------

/// `GnmShaderType` of the file header (shader-containers.md §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[repr(u8)]
pub enum GnmShaderType {
    /// Vertex (and domain, which reuses the VS struct).
    Vertex = 1,
    Pixel = 2,
    Geometry = 3,
    Compute = 4,
    /// Export (ES).
    Export = 5,
    /// Local (LS).
    Local = 6,
    Hull = 7,
}

/// Register names of each stage's register block (shader-containers.md §2.5).
const VS_REGS: [&str; 7] = [
    "SPI_SHADER_PGM_LO_VS",
    "SPI_SHADER_PGM_HI_VS",
    "SPI_SHADER_PGM_RSRC1_VS",
    "SPI_SHADER_PGM_RSRC2_VS",
    "SPI_VS_OUT_CONFIG",
    "SPI_SHADER_POS_FORMAT",
    "PA_CL_VS_OUT_CNTL",
];
const PS_REGS: [&str; 12] = [
    "SPI_SHADER_PGM_LO_PS",
    "SPI_SHADER_PGM_HI_PS",
    "SPI_SHADER_PGM_RSRC1_PS",
    "SPI_SHADER_PGM_RSRC2_PS",
    "SPI_SHADER_Z_FORMAT",
    "SPI_SHADER_COL_FORMAT",
    "SPI_PS_INPUT_ENA",
    "SPI_PS_INPUT_ADDR",
    "SPI_PS_IN_CONTROL",
    "SPI_BARYC_CNTL",
    "DB_SHADER_CONTROL",
    "CB_SHADER_MASK",
];
const CS_REGS: [&str; 7] = [
    "COMPUTE_PGM_LO",
    "COMPUTE_PGM_HI",
    "COMPUTE_PGM_RSRC1",
    "COMPUTE_PGM_RSRC2",
    "COMPUTE_NUM_THREAD_X",
    "COMPUTE_NUM_THREAD_Y",
    "COMPUTE_NUM_THREAD_Z",
];
const GS_REGS: [&str; 7] = [
    "SPI_SHADER_PGM_LO_GS",
    "SPI_SHADER_PGM_HI_GS",
    "SPI_SHADER_PGM_RSRC1_GS",
    "SPI_SHADER_PGM_RSRC2_GS",
    "VGT_STRMOUT_CONFIG",
    "VGT_GS_OUT_PRIM_TYPE",
    "VGT_GS_INSTANCE_CNT",
];
const ES_REGS: [&str; 4] =
    ["SPI_SHADER_PGM_LO_ES", "SPI_SHADER_PGM_HI_ES", "SPI_SHADER_PGM_RSRC1_ES", "SPI_SHADER_PGM_RSRC2_ES"];
const HS_REGS: [&str; 7] = [
    "SPI_SHADER_PGM_LO_HS",
    "SPI_SHADER_PGM_HI_HS",
    "SPI_SHADER_PGM_RSRC1_HS",
    "SPI_SHADER_PGM_RSRC2_HS",
    "VGT_TF_PARAM",
    "VGT_HOS_MAX_TESS_LEVEL",
    "VGT_HOS_MIN_TESS_LEVEL",
];
const LS_REGS: [&str; 4] =
    ["SPI_SHADER_PGM_LO_LS", "SPI_SHADER_PGM_HI_LS", "SPI_SHADER_PGM_RSRC1_LS", "SPI_SHADER_PGM_RSRC2_LS"];

impl GnmShaderType {
    /// The type for the header byte, if it is one this crate decodes.
    pub fn from_raw(raw: u8) -> Option<Self> {
        use GnmShaderType::*;
        match raw {
            1 => Some(Vertex),
            2 => Some(Pixel),
            3 => Some(Geometry),
            4 => Some(Compute),
            5 => Some(Export),
            6 => Some(Local),
            7 => Some(Hull),
            _ => None,
        }
    }

    /// Name.
    pub fn name(self) -> &'static str {
        match self {
            GnmShaderType::Vertex => "vertex",
            GnmShaderType::Pixel => "pixel",
            GnmShaderType::Geometry => "geometry",
            GnmShaderType::Compute => "compute",
            GnmShaderType::Export => "export",
            GnmShaderType::Local => "local",
            GnmShaderType::Hull => "hull",
        }
    }

    /// Names of the register block's dwords, in order.
    pub fn register_names(self) -> &'static [&'static str] {
        match self {
            GnmShaderType::Vertex => &VS_REGS,
            GnmShaderType::Pixel => &PS_REGS,
            GnmShaderType::Geometry => &GS_REGS,
            GnmShaderType::Compute => &CS_REGS,
            GnmShaderType::Export => &ES_REGS,
            GnmShaderType::Local => &LS_REGS,
            GnmShaderType::Hull => &HS_REGS,
        }
    }

    /// Size of the stage struct (common data + registers + trailing bytes).
    pub fn struct_size(self) -> u32 {
        match self {
            GnmShaderType::Vertex | GnmShaderType::Geometry | GnmShaderType::Hull => 0x28,
            GnmShaderType::Pixel => 0x3C,
            GnmShaderType::Compute => 0x24,
            GnmShaderType::Export | GnmShaderType::Local => 0x1C,
        }
    }
}

/// `GnmShaderFileHeader` (shader-containers.md §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ShdrFileHeader {
    pub magic: u32,
    pub version_major: u16,
    pub version_minor: u16,
    pub shader_type: u8,
    /// Dwords from the stage struct to the code.
    pub header_size_dwords: u8,
    pub aux_data: u8,
    /// 0 unspecified, 1 base, 2 NEO.
    pub target_gpu_modes: u8,
    pub unused: u32,
}

impl ShdrFileHeader {
    fn decode(b: &Bytes<'_>) -> Result<Self, ShaderError> {
        b.sub("Shdr file header", 0, u64::from(SHDR_HEADER_LEN))?;
        Ok(Self {
            magic: b.u32("Shdr magic", 0)?,
            version_major: b.u16("Shdr vermajor", 4)?,
            version_minor: b.u16("Shdr verminor", 6)?,
            shader_type: b.u8("Shdr type", 8)?,
            header_size_dwords: b.u8("Shdr headersizedwords", 9)?,
            aux_data: b.u8("Shdr auxdata", 0xA)?,
            target_gpu_modes: b.u8("Shdr targetgpumodes", 0xB)?,
            unused: b.u32("Shdr unused", 0xC)?,
        })
    }

    /// The 0x10 header bytes.
    pub fn to_bytes(&self) -> [u8; SHDR_HEADER_LEN as usize] {
        let mut out = [0u8; SHDR_HEADER_LEN as usize];
        bytes::put(&mut out, 0, &self.magic.to_le_bytes());
        bytes::put(&mut out, 4, &self.version_major.to_le_bytes());
        bytes::put(&mut out, 6, &self.version_minor.to_le_bytes());
        bytes::put(&mut out, 8, &[self.shader_type, self.header_size_dwords, self.aux_data, self.target_gpu_modes]);
        bytes::put(&mut out, 0xC, &self.unused.to_le_bytes());
        out
    }
}

/// `GnmShaderCommonData`, the first 8 bytes of every stage struct
/// (shader-containers.md §2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct CommonData {
    /// Code size in bytes, the trailing `OrbShdr` block included (bits 0..22).
    pub shader_size: u32,
    /// Bit 23.
    pub is_using_srt: bool,
    /// Bits 24..31.
    pub num_input_usage_slots: u8,
    /// In 16-byte units.
    pub embedded_constant_buffer_dqwords: u16,
    pub scratch_size_per_thread_dwords: u16,
}

impl CommonData {
    fn decode(b: &[u8]) -> Self {
        let d0 = bytes::u32_at(b, 0).unwrap_or(0);
        Self {
            shader_size: d0 & 0x7F_FFFF,
            is_using_srt: d0 & (1 << 23) != 0,
            num_input_usage_slots: (d0 >> 24) as u8,
            embedded_constant_buffer_dqwords: bytes::u16_at(b, 4).unwrap_or(0),
            scratch_size_per_thread_dwords: bytes::u16_at(b, 6).unwrap_or(0),
        }
    }

    /// The 8 bytes.
    pub fn to_bytes(&self) -> [u8; 8] {
        let d0 = (self.shader_size & 0x7F_FFFF)
            | (u32::from(self.is_using_srt) << 23)
            | (u32::from(self.num_input_usage_slots) << 24);
        let mut out = [0u8; 8];
        bytes::put(&mut out, 0, &d0.to_le_bytes());
        bytes::put(&mut out, 4, &self.embedded_constant_buffer_dqwords.to_le_bytes());
        bytes::put(&mut out, 6, &self.scratch_size_per_thread_dwords.to_le_bytes());
        out
    }

    /// `sceGnmShaderCommonCodeSize`: shader size plus the embedded constant
    /// buffer.
    pub fn code_size(&self) -> u64 {
        u64::from(self.shader_size) + 16 * u64::from(self.embedded_constant_buffer_dqwords)
    }
}

/// `GnmVertexInputSemantic`, 4 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct VertexInputSemantic {
    pub semantic: u8,
    /// Destination VGPR.
    pub vgpr: u8,
    /// 1..4.
    pub size_in_elements: u8,
    pub pad: u8,
}

/// `GnmVertexExportSemantic`, 2 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct VertexExportSemantic {
    pub semantic: u8,
    /// outindex bits 0..4, exportf16 bits 6..7.
    pub packed: u8,
}

impl VertexExportSemantic {
    pub fn out_index(self) -> u8 {
        self.packed & 0x1F
    }
    pub fn export_f16(self) -> u8 {
        self.packed >> 6
    }
}

/// `GnmPixelInputSemantic`, a u16 bitfield.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PixelInputSemantic(pub u16);

impl PixelInputSemantic {
    pub fn semantic(self) -> u8 {
        self.0 as u8
    }
    /// 0 none, 1 = (0,0,0,1), 2 = (1,1,1,0), 3 = (1,1,1,1).
    pub fn default_value(self) -> u8 {
        ((self.0 >> 8) & 3) as u8
    }
    pub fn is_flat_shaded(self) -> bool {
        self.0 & (1 << 10) != 0
    }
    pub fn is_linear(self) -> bool {
        self.0 & (1 << 11) != 0
    }
    pub fn is_custom(self) -> bool {
        self.0 & (1 << 12) != 0
    }
    /// NEO overlay: bits 12..13.
    pub fn default_value_hi(self) -> u8 {
        ((self.0 >> 12) & 3) as u8
    }
    /// NEO overlay: bits 14..15.
    pub fn interp_f16(self) -> u8 {
        (self.0 >> 14) as u8
    }
}

/// A stage struct with its trailing tables (shader-containers.md §2.5).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct GnmStage {
    pub kind: GnmShaderType,
    pub common: CommonData,
    /// The register block, in the order of [`GnmShaderType::register_names`].
    pub registers: Vec<u32>,
    /// Input-semantic count (every stage except compute).
    pub num_input_semantics: u8,
    /// Export-semantic count (VS, GS, ES, LS).
    pub num_export_semantics: u8,
    /// VS only: GnmVsShaderGsMode flags or the CS input-semantic count.
    pub gs_mode_or_num_input_semantics_cs: u8,
    /// VS only.
    pub fetch_control: u8,
    pub usage_slots: Vec<InputUsageSlot>,
    /// VS only.
    pub vertex_input_semantics: Vec<VertexInputSemantic>,
    /// VS only.
    pub vertex_export_semantics: Vec<VertexExportSemantic>,
    /// PS only.
    pub pixel_input_semantics: Vec<PixelInputSemantic>,
}

impl GnmStage {
    /// `sce*ShaderCalcSize`: VS align4(0x28 + 4·slots + 4·in + 2·exp), PS
    /// align4(0x3C + 4·slots + 2·in). The other stages' semantic tables are
    /// not documented; for them this is align4(struct + 4·slots).
    pub fn calc_size(&self) -> u64 {
        calc_size(self.kind, self.common.num_input_usage_slots, self.num_input_semantics, self.num_export_semantics)
    }

    /// PGM_LO as stored.
    pub fn pgm_lo(&self) -> u32 {
        self.registers.first().copied().unwrap_or(0)
    }

    /// PGM_HI as stored.
    pub fn pgm_hi(&self) -> u32 {
        self.registers.get(1).copied().unwrap_or(0)
    }
}

/// See [`GnmStage::calc_size`].
pub fn calc_size(kind: GnmShaderType, slots: u8, inputs: u8, exports: u8) -> u64 {
    let base = u64::from(kind.struct_size()) + 4 * u64::from(slots);
    let total = match kind {
        GnmShaderType::Vertex => base + 4 * u64::from(inputs) + 2 * u64::from(exports),
        GnmShaderType::Pixel => base + 2 * u64::from(inputs),
        _ => base,
    };
    bytes::align_up(total, 4).unwrap_or(total)
}

/// A decoded `Shdr` file (without its code; see [`GnmShaderFile::code`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct GnmShaderFile {
    pub header: ShdrFileHeader,
    pub stage: GnmStage,
    /// File offset of the code, when PGM_LO still holds the file-relative
    /// offset (PGM_HI = 0xFFFFFFFF) and the code lies inside the file.
    pub code_offset: Option<u64>,
}

/// File offset of the stage struct.
pub const SHDR_STAGE_OFFSET: u64 = SHDR_HEADER_LEN as u64;

impl GnmShaderFile {
    /// Decodes a `Shdr` binary starting at `bytes[0]`.
    pub fn parse(bytes: &[u8]) -> Result<Self, ShaderError> {
        let b = Bytes::new(bytes);
        let header = ShdrFileHeader::decode(&b)?;
        if header.magic != SHDR_MAGIC {
            return Err(ShaderError::BadMagic {
                what: "Shdr file header",
                offset: 0,
                found: header.magic,
                expected: SHDR_MAGIC,
            });
        }
        let kind = GnmShaderType::from_raw(header.shader_type)
            .ok_or(ShaderError::BadShdrType { offset: 8, found: header.shader_type })?;
        let at = SHDR_STAGE_OFFSET;
        let st = b.sub("Shdr stage struct", at, u64::from(kind.struct_size()))?;
        let common = CommonData::decode(st);
        let nregs = kind.register_names().len();
        let registers: Vec<u32> = (0..nregs).map(|i| bytes::u32_at(st, 8 + 4 * i as u64).unwrap_or(0)).collect();
        let after_regs = 8 + 4 * nregs as u64;
        let byte = |o: u64| bytes::u8_at(st, o).unwrap_or(0);
        let (num_in, num_exp, gs_mode, fetch) = match kind {
            GnmShaderType::Compute => (0, 0, 0, 0),
            GnmShaderType::Pixel | GnmShaderType::Hull => (byte(after_regs), 0, 0, 0),
            GnmShaderType::Vertex => {
                (byte(after_regs), byte(after_regs + 1), byte(after_regs + 2), byte(after_regs + 3))
            }
            _ => (byte(after_regs), byte(after_regs + 1), 0, 0),
        };

        let needed = calc_size(kind, common.num_input_usage_slots, num_in, num_exp);
        let declared = u64::from(header.header_size_dwords) * 4;
        if needed > declared {
            return Err(ShaderError::ShdrSizeMismatch { offset: 9, needed, declared });
        }
        b.sub("Shdr stage tables", at, needed)?;

        let mut cursor = at + u64::from(kind.struct_size());
        let mut take = |what: &'static str, count: u64, size: u64| -> Result<&[u8], ShaderError> {
            let t = b.sub(what, cursor, count * size)?;
            cursor += count * size;
            Ok(t)
        };
        let slots = take("Shdr input-usage slots", u64::from(common.num_input_usage_slots), 4)?;
        let usage_slots = slots.chunks_exact(4).map(InputUsageSlot::decode).collect();
        let mut stage = GnmStage {
            kind,
            common,
            registers,
            num_input_semantics: num_in,
            num_export_semantics: num_exp,
            gs_mode_or_num_input_semantics_cs: gs_mode,
            fetch_control: fetch,
            usage_slots,
            vertex_input_semantics: Vec::new(),
            vertex_export_semantics: Vec::new(),
            pixel_input_semantics: Vec::new(),
        };
        match kind {
            GnmShaderType::Vertex => {
                let ins = take("Shdr vertex input semantics", u64::from(num_in), 4)?;
                stage.vertex_input_semantics = ins
                    .chunks_exact(4)
                    .map(|c| VertexInputSemantic { semantic: c[0], vgpr: c[1], size_in_elements: c[2], pad: c[3] })
                    .collect();
                let exps = take("Shdr vertex export semantics", u64::from(num_exp), 2)?;
                stage.vertex_export_semantics =
                    exps.chunks_exact(2).map(|c| VertexExportSemantic { semantic: c[0], packed: c[1] }).collect();
            }
            GnmShaderType::Pixel => {
                let ins = take("Shdr pixel input semantics", u64::from(num_in), 2)?;
                stage.pixel_input_semantics =
                    ins.chunks_exact(2).map(|c| PixelInputSemantic(u16::from_le_bytes([c[0], c[1]]))).collect();
            }
            _ => {}
        }

        // In the file PGM_LO is the code's offset from the stage struct and
        // PGM_HI is 0xFFFFFFFF (shader-containers.md §2.5).
        let code_offset = if stage.pgm_hi() == 0xFFFF_FFFF {
            at.checked_add(u64::from(stage.pgm_lo()))
                .filter(|&o| o.checked_add(common.code_size()).is_some_and(|end| end <= b.len()))
        } else {
            None
        };
        Ok(Self { header, stage, code_offset })
    }

    /// The code bytes (`shadersize` + embedded constants) inside `file`.
    pub fn code<'a>(&self, file: &'a [u8]) -> Option<&'a [u8]> {
        bytes::sub(file, self.code_offset?, self.stage.common.code_size())
    }

    /// Decodes the `OrbShdr` block of the code inside `file`.
    pub fn decode_code(&self, file: &[u8]) -> Option<Result<GnmCode, ShaderError>> {
        self.code(file).map(GnmCode::decode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_transform_matches_reciprocal_form() {
        // Only table entries 0..=37 are ever used.
        for i in 0u32..0xE0 {
            assert!(i % 7 + i / 7 <= 37);
        }
    }

    #[test]
    fn crc_table_is_the_reflected_crc32_table() {
        assert_eq!(CRC_TABLE[1], 0x7707_3096);
        assert_eq!(CRC_TABLE[255], 0x2D02_EF8D);
    }
}
