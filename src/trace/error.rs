//! Errors of reading and writing traces: every one names the chunk, the
//! byte offset and the rule that was broken.

use std::fmt;

use super::format::Tag;
use crate::memory::MemoryError;

/// A trace that breaks a rule of the format, or could not be read.
///
/// `chunk` is the index of the chunk at fault (0 is the first chunk after
/// the header); it is `None` for the header itself and for I/O errors.
/// `offset` is the byte offset, from the start of the file, of the chunk at
/// fault (of the field, for header errors; of the end of the file or of the
/// extra bytes, for a missing `END ` or bytes after it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    /// Index of the chunk at fault.
    pub chunk: Option<u32>,
    /// Byte offset in the file.
    pub offset: u64,
    /// What was wrong.
    pub rule: TraceRule,
}

impl TraceError {
    /// An error about chunk `chunk` (or the header) at byte `offset`.
    pub fn new(chunk: Option<u32>, offset: u64, rule: TraceRule) -> Self {
        TraceError { chunk, offset, rule }
    }

    /// An I/O error, with what was being done.
    pub fn io(context: &str, error: &std::io::Error) -> Self {
        TraceError::new(None, 0, TraceRule::Io { kind: error.kind(), message: format!("{context}: {error}") })
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.rule, self.chunk) {
            (TraceRule::Io { .. }, _) => write!(f, "{}", self.rule),
            (_, Some(chunk)) => {
                write!(f, "chunk {chunk} at byte {:#x}: {}", self.offset, self.rule)
            }
            (_, None) => write!(f, "header at byte {:#x}: {}", self.offset, self.rule),
        }
    }
}

impl std::error::Error for TraceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.rule {
            TraceRule::Memory(error) => Some(error),
            _ => None,
        }
    }
}

/// The rule a trace broke.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceRule {
    /// The file does not start with `PM4TRACE`.
    #[error("bad magic (not a PM4 trace)")]
    BadMagic,
    /// The header's version is not 1.
    #[error("unsupported version {version} (this reader knows version 1)")]
    UnsupportedVersion { version: u16 },
    /// A header flag bit this reader does not know is set.
    #[error("unknown header flags {flags:#06x}")]
    UnknownFlags { flags: u16 },
    /// A reserved field, a flag bit with no meaning or a pad byte is not zero.
    #[error("{field} is {value:#x}, must be 0")]
    ReservedNonZero { field: &'static str, value: u64 },
    /// The file ends inside the header or inside a chunk's tag and length.
    #[error("file truncated: {available} bytes left where {needed} are needed")]
    Truncated { needed: u64, available: u64 },
    /// A chunk's length runs past the end of the file.
    #[error("chunk of payload length {len} runs past the end of the file ({available} bytes left)")]
    ChunkPastEnd { len: u32, available: u64 },
    /// The stored CRC does not match the tag and payload.
    #[error("CRC mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    CrcMismatch { stored: u32, computed: u32 },
    /// The tag is not four printable ASCII characters starting with a letter.
    #[error("invalid chunk tag `{tag}`")]
    InvalidTag { tag: Tag },
    /// A critical (uppercase) tag this reader does not know.
    #[error("unknown critical chunk `{tag}`")]
    UnknownCriticalChunk { tag: Tag },
    /// `INFO` after another chunk.
    #[error("INFO chunk is not the first chunk")]
    InfoNotFirst,
    /// A second `INFO` chunk.
    #[error("second INFO chunk")]
    DuplicateInfo,
    /// `INFO` text is not UTF-8.
    #[error("INFO text is not UTF-8 (valid up to byte {valid_up_to})")]
    InfoNotUtf8 { valid_up_to: usize },
    /// An `INFO` line is not `key=value` with a non-empty key (or, when
    /// writing, a key or value holds a character the line form cannot carry).
    #[error("INFO line {line} is not key=value")]
    InfoBadLine { line: usize },
    /// A payload length the chunk type does not allow.
    #[error("`{tag}` payload of {len} bytes (must be {expected})")]
    BadPayloadLength { tag: Tag, len: u64, expected: &'static str },
    /// An address not aligned as the format requires.
    #[error("address {address:#x} is not {alignment}-byte aligned")]
    Misaligned { address: u64, alignment: u64 },
    /// A region ends past the 48-bit address space.
    #[error("region at {address:#x} of {len:#x} bytes ends past the 48-bit address space")]
    RegionPastAddressSpace { address: u64, len: u64 },
    /// A region overlaps one declared earlier.
    #[error("region at {address:#x} of {len:#x} bytes overlaps an earlier region")]
    OverlappingRegions { address: u64, len: u64 },
    /// A `WRIT` range is not inside regions declared earlier.
    #[error("host write at {address:#x} of {len:#x} bytes is outside declared memory")]
    WriteOutsideMemory { address: u64, len: u64 },
    /// A `SUBM` queue index past 56.
    #[error("queue {queue} out of range (0..=56)")]
    QueueOutOfRange { queue: u32 },
    /// A command buffer not inside regions declared earlier.
    #[error("command buffer at {address:#x} of {size_dw} dwords is outside declared memory")]
    CommandBufferOutsideMemory { address: u64, size_dw: u32 },
    /// A `SHDR` address not inside regions declared earlier.
    #[error("shader {what} address {address:#x} is outside declared memory")]
    ShaderOutsideMemory { what: &'static str, address: u64 },
    /// The file ends without an `END ` chunk.
    #[error("file ends without an END chunk (last good chunk at byte {last_good_offset:#x})")]
    MissingEnd { last_good_offset: u64 },
    /// Bytes follow the `END ` chunk.
    #[error("{extra} bytes after the END chunk at byte {last_good_offset:#x}")]
    BytesAfterEnd { last_good_offset: u64, extra: u64 },
    /// The `END ` count is not the number of chunks before it.
    #[error("END says {stored} chunks precede it, but {actual} do")]
    EndCountMismatch { stored: u32, actual: u32 },
    /// More chunks than a `u32` counts.
    #[error("too many chunks")]
    TooManyChunks,
    /// Mapping or writing guest memory failed.
    #[error("guest memory: {0}")]
    Memory(MemoryError),
    /// Reading or writing the file failed.
    #[error("{message}")]
    Io { kind: std::io::ErrorKind, message: String },
}
