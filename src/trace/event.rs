//! What a trace holds, chunk by chunk.

use super::format::Tag;

/// A byte range of the trace file (a payload or part of one). Only the
/// reader and writer make them, so a range always lies inside the file it
/// came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PayloadRange {
    offset: u64,
    len: u64,
}

impl PayloadRange {
    pub(crate) fn new(offset: u64, len: u64) -> Self {
        PayloadRange { offset, len }
    }

    /// Byte offset of the first byte in the file.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Number of bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for an empty range.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// One step of a trace's sequence, in file order. `chunk` is the index of
/// the chunk it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(tag = "kind", rename_all = "snake_case"))]
pub enum TraceEvent {
    /// `MEM `: a region mapped with the bytes `data` of the file.
    MemRegion { chunk: u32, address: u64, data: PayloadRange },
    /// `ZERO`: a region of `len` zero bytes.
    ZeroRegion { chunk: u32, address: u64, len: u64 },
    /// `WRIT`: the host writes the bytes `data` of the file at `address`.
    HostWrite { chunk: u32, address: u64, data: PayloadRange },
    /// `SUBM`: a command buffer of `size_dw` dwords submitted to `queue`.
    Submit { chunk: u32, queue: u32, address: u64, size_dw: u32 },
    /// `SHDR`: a shader container created at this point.
    Shader { chunk: u32, header_address: u64, code_address: u64, relocated: bool },
    /// `note`: text for people (invalid UTF-8 shown as U+FFFD).
    Note { chunk: u32, text: String },
    /// An ancillary chunk this reader does not know, skipped.
    Ancillary { chunk: u32, tag: Tag },
}

impl TraceEvent {
    /// Index of the chunk the event came from.
    pub fn chunk(&self) -> u32 {
        match *self {
            TraceEvent::MemRegion { chunk, .. }
            | TraceEvent::ZeroRegion { chunk, .. }
            | TraceEvent::HostWrite { chunk, .. }
            | TraceEvent::Submit { chunk, .. }
            | TraceEvent::Shader { chunk, .. }
            | TraceEvent::Note { chunk, .. }
            | TraceEvent::Ancillary { chunk, .. } => chunk,
        }
    }

    /// The tag of the chunk the event came from.
    pub fn tag(&self) -> Tag {
        match self {
            TraceEvent::MemRegion { .. } => Tag::MEM,
            TraceEvent::ZeroRegion { .. } => Tag::ZERO,
            TraceEvent::HostWrite { .. } => Tag::WRIT,
            TraceEvent::Submit { .. } => Tag::SUBM,
            TraceEvent::Shader { .. } => Tag::SHDR,
            TraceEvent::Note { .. } => Tag::NOTE,
            TraceEvent::Ancillary { tag, .. } => *tag,
        }
    }

    /// The guest range `(address, len)` of a region event (`MEM `/`ZERO`).
    pub fn region(&self) -> Option<(u64, u64)> {
        match *self {
            TraceEvent::MemRegion { address, data, .. } => Some((address, data.len())),
            TraceEvent::ZeroRegion { address, len, .. } => Some((address, len)),
            _ => None,
        }
    }
}

/// Where a chunk is in the file (for listings such as `pm4 inspect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ChunkSummary {
    /// The chunk's tag.
    pub tag: Tag,
    /// Index of the chunk (0 is the first after the header).
    pub index: u32,
    /// Byte offset of the chunk's tag in the file.
    pub offset: u64,
    /// Payload length in bytes.
    pub payload_len: u32,
    /// The stored (and verified) CRC.
    pub crc: u32,
}
