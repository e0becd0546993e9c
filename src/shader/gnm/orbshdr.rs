//! The `OrbShdr` info block that trails PS4 GPU code, and its non-standard
//! CRC-32 (shader-containers.md §2.8).

use super::*;

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
    pub(super) fn decode(b: &[u8]) -> Self {
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
        Self::read_at(mem, code_address, location)
    }

    /// Decodes the block at `location` after the code at `code_address`.
    pub(crate) fn read_at(
        mem: &dyn GuestMemory,
        code_address: u64,
        location: OrbShdrLocation,
    ) -> Result<Self, ShaderError> {
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
