//! The `.shader_text` trailer: the 0x30-byte `barefoot` block that ends a
//! shader's code.

use super::*;

/// The 0x30-byte `barefoot` block that ends `.shader_text`
/// (shader-containers.md §1.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct BarefootTrailer {
    /// Per-shader hash; equals the second CHKSUM register value.
    pub hash: u32,
    /// +0x0C, 0 in samples.
    pub word_0c: u32,
    /// +0x10, 1 in samples.
    pub word_10: u32,
    /// Byte length of the program proper.
    pub program_length: u32,
    /// +0x18, 0 in samples.
    pub word_18: u32,
    /// Length of the `sl00` block.
    pub sl00_length: u32,
    /// +0x20, varies.
    pub word_20: u32,
    /// +0x24, 0xC2A89EFE in samples.
    pub word_24: u32,
    /// +0x28, 0 in samples.
    pub word_28: u64,
}

impl BarefootTrailer {
    /// Decodes the 0x30 bytes at the start of `block` if they begin with
    /// `barefoot`.
    pub fn decode(block: &[u8]) -> Option<Self> {
        if bytes::sub(block, 0, 8)? != BAREFOOT_MAGIC {
            return None;
        }
        bytes::sub(block, 0, u64::from(TRAILER_LEN))?;
        let w = |o: u64| bytes::u32_at(block, o).unwrap_or(0);
        Some(Self {
            hash: w(0x08),
            word_0c: w(0x0C),
            word_10: w(0x10),
            program_length: w(0x14),
            word_18: w(0x18),
            sl00_length: w(0x1C),
            word_20: w(0x20),
            word_24: w(0x24),
            word_28: bytes::u64_at(block, 0x28).unwrap_or(0),
        })
    }

    /// The trailer at the end of a whole `.shader_text` section.
    pub fn from_text(text: &[u8]) -> Option<Self> {
        let start = text.len().checked_sub(TRAILER_LEN as usize)?;
        Self::decode(text.get(start..)?)
    }

    /// Reads the trailer that ends the `shader_size`-byte code blob at
    /// `code_address`.
    pub fn read(mem: &dyn GuestMemory, code_address: u64, shader_size: u32) -> Result<Option<Self>, ShaderError> {
        let Some(offset) = shader_size.checked_sub(TRAILER_LEN) else {
            return Ok(None);
        };
        let address = code_address.saturating_add(u64::from(offset));
        let mut block = [0u8; TRAILER_LEN as usize];
        mem.read_bytes(address, &mut block).map_err(|source| ShaderError::Memory {
            what: "shader code trailer",
            address,
            source,
        })?;
        Ok(Self::decode(&block))
    }

    /// The 0x30 bytes of the block.
    pub fn to_bytes(&self) -> [u8; TRAILER_LEN as usize] {
        let mut out = [0u8; TRAILER_LEN as usize];
        bytes::put(&mut out, 0, &BAREFOOT_MAGIC);
        for (at, v) in [
            (0x08, self.hash),
            (0x0C, self.word_0c),
            (0x10, self.word_10),
            (0x14, self.program_length),
            (0x18, self.word_18),
            (0x1C, self.sl00_length),
            (0x20, self.word_20),
            (0x24, self.word_24),
        ] {
            bytes::put(&mut out, at, &v.to_le_bytes());
        }
        bytes::put(&mut out, 0x28, &self.word_28.to_le_bytes());
        out
    }
}
