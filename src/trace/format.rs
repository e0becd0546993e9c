//! Constants of the trace format (version 1) and the chunk tag type.
//!
//! See `docs/trace-format.md`: a 16-byte header, then chunks of
//! `tag, len, payload, pad, crc`, ending with an `END ` chunk.

use std::fmt;

/// The eight magic bytes at the start of every trace.
pub const MAGIC: [u8; 8] = *b"PM4TRACE";

/// The only format version this reader and writer speak.
pub const VERSION: u16 = 1;

/// Header flag bits this reader knows (none yet).
pub const KNOWN_FLAGS: u16 = 0;

/// Size of the file header in bytes.
pub const HEADER_LEN: usize = 16;

/// Offset of the version field in the header.
pub const VERSION_OFFSET: usize = 8;

/// Offset of the flags field in the header.
pub const FLAGS_OFFSET: usize = 10;

/// Offset of the reserved field in the header.
pub const HEADER_RESERVED_OFFSET: usize = 12;

/// Bytes before a chunk's payload: tag and length.
pub const CHUNK_HEAD_LEN: usize = 8;

/// Bytes a chunk takes besides its payload and pad: tag, length and CRC.
pub const CHUNK_OVERHEAD: usize = 12;

/// Bytes of a `MEM ` or `WRIT` payload before the data: the address.
pub const MEM_HEADER_LEN: usize = 8;

/// Exact payload length of a `ZERO` chunk.
pub const ZERO_LEN: usize = 16;

/// Exact payload length of a `SUBM` chunk.
pub const SUBM_LEN: usize = 24;

/// Exact payload length of a `SHDR` chunk.
pub const SHDR_LEN: usize = 24;

/// Exact payload length of an `END ` chunk.
pub const END_LEN: usize = 4;

/// The highest queue index: 0 is graphics, 1..=56 the compute queues
/// `1 + pipe * 8 + queue` (pipe 0..6, queue 0..7).
pub const MAX_QUEUE: u32 = 56;

/// Alignment of every address in `MEM `, `ZERO`, `WRIT`, `SUBM` and of a
/// shader container header in `SHDR`.
pub const ADDRESS_ALIGN: u64 = 4;

/// Alignment of shader code addresses in `SHDR`.
pub const SHADER_CODE_ALIGN: u64 = 256;

/// `SHDR` flag bit 0: the container header in memory is already relocated.
pub const SHDR_FLAG_RELOCATED: u32 = 1;

/// The `SHDR` flag bits this reader knows.
pub const SHDR_KNOWN_FLAGS: u32 = SHDR_FLAG_RELOCATED;

/// Bytes that must be mapped at each `SHDR` address (the container magic,
/// the first instruction dword).
pub const SHADER_PROBE_LEN: u64 = 4;

/// Magic dword of an AGC shader container header (checked at replay, not
/// by the reader: memory may still change before the shader is used).
pub const AGC_SHADER_MAGIC: u32 = 0x3433_3231;

/// Pad bytes after a payload of `len` bytes (to the next 4-byte boundary).
#[inline]
pub const fn pad_len(len: u64) -> u64 {
    (4 - len % 4) % 4
}

/// CRC-32 (ISO-HDLC, as zlib computes it) of a chunk's tag and payload.
pub fn chunk_crc(tag: Tag, payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&tag.0);
    hasher.update(payload);
    hasher.finalize()
}

/// A chunk tag: four ASCII characters. An uppercase first letter marks a
/// critical chunk (a reader that does not know it refuses the file), a
/// lowercase one an ancillary chunk (skipped when unknown).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tag(pub [u8; 4]);

impl Tag {
    /// What the trace is (key=value text).
    pub const INFO: Tag = Tag(*b"INFO");
    /// A region of guest memory with its bytes.
    pub const MEM: Tag = Tag(*b"MEM ");
    /// A region of guest memory that starts out zero.
    pub const ZERO: Tag = Tag(*b"ZERO");
    /// A host write.
    pub const WRIT: Tag = Tag(*b"WRIT");
    /// A submission.
    pub const SUBM: Tag = Tag(*b"SUBM");
    /// A shader creation.
    pub const SHDR: Tag = Tag(*b"SHDR");
    /// End of the trace.
    pub const END: Tag = Tag(*b"END ");
    /// A note for people (ancillary).
    pub const NOTE: Tag = Tag(*b"note");

    /// The tag's four bytes.
    pub const fn as_bytes(&self) -> &[u8; 4] {
        &self.0
    }

    /// Four printable ASCII characters, the first a letter.
    pub fn is_valid(&self) -> bool {
        self.0[0].is_ascii_alphabetic() && self.0.iter().all(|b| (0x20..=0x7e).contains(b))
    }

    /// The first character is an uppercase letter.
    pub fn is_critical(&self) -> bool {
        self.0[0].is_ascii_uppercase()
    }

    /// The first character is a lowercase letter.
    pub fn is_ancillary(&self) -> bool {
        self.0[0].is_ascii_lowercase()
    }
}

impl From<[u8; 4]> for Tag {
    fn from(bytes: [u8; 4]) -> Self {
        Tag(bytes)
    }
}

impl fmt::Display for Tag {
    /// Printable ASCII as is, anything else as `\xNN`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for &b in &self.0 {
            if (0x20..=0x7e).contains(&b) {
                write!(f, "{}", b as char)?;
            } else {
                write!(f, "\\x{b:02x}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tag(\"{self}\")")
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for Tag {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pad_and_crc() {
        assert_eq!(pad_len(0), 0);
        assert_eq!(pad_len(1), 3);
        assert_eq!(pad_len(6), 2);
        assert_eq!(pad_len(8), 0);
        // CRC-32/ISO-HDLC check value.
        assert_eq!(chunk_crc(Tag(*b"1234"), b"56789"), 0xcbf4_3926);
    }

    #[test]
    fn tag_classes_and_display() {
        assert!(Tag::MEM.is_valid() && Tag::MEM.is_critical());
        assert!(Tag::NOTE.is_valid() && Tag::NOTE.is_ancillary());
        assert!(!Tag(*b" abc").is_valid());
        assert!(!Tag(*b"AB\0C").is_valid());
        assert_eq!(Tag(*b"AB\0C").to_string(), "AB\\x00C");
        assert_eq!(format!("{:?}", Tag::END), "Tag(\"END \")");
    }
}
