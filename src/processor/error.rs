//! Errors of the command processor: each names what went wrong and where.

use crate::memory::MemoryError;
use crate::packet::body::BodyError;
use crate::packet::reader::{FrameError, FrameErrorKind};
use crate::packet::{Opcode, PacketLocation};
use crate::processor::GdsError;

/// A submission could not be carried out.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Pm4Error {
    /// A packet read or wrote unmapped guest memory (or the command buffer
    /// itself is not mapped).
    #[error("{opcode} at {location}: {source}")]
    Memory {
        location: PacketLocation,
        opcode: Opcode,
        #[source]
        source: MemoryError,
    },
    /// A packet read or wrote outside the global data share.
    #[error("{opcode} at {location}: {source}")]
    Gds {
        location: PacketLocation,
        opcode: Opcode,
        #[source]
        source: GdsError,
    },
    /// The packet's length runs past the end of its buffer.
    #[error("packet header {header:#010x} at {location}: length {length_dw} dwords runs past the end of its buffer ({remaining_dw} dwords left)")]
    PacketOverrun { location: PacketLocation, header: u32, length_dw: u32, remaining_dw: u32 },
    /// A type-1 header (not defined for GCN/RDNA streams).
    #[error("type-1 header {header:#010x} at {location}")]
    Type1Header { location: PacketLocation, header: u32 },
    /// A packet's header could not be read (the buffer, or its tail past
    /// the dwords that could be read, is not mapped).
    #[error("packet header at {location} is not readable: {source}")]
    UnreadableHeader {
        location: PacketLocation,
        #[source]
        source: MemoryError,
    },
    /// A body too short for its layout, or a field with a forbidden value.
    #[error("malformed packet at {location}: {source}")]
    MalformedPacket {
        location: PacketLocation,
        #[source]
        source: BodyError,
    },
    /// An INDIRECT_BUFFER would nest deeper than the configured limit.
    #[error("indirect buffer at {location} to {target:#x} would nest {depth} buffers deep (limit {limit})")]
    IbStackOverflow { location: PacketLocation, target: u64, depth: usize, limit: usize },
    /// The submission ran more packets than its budget (an IB cycle).
    #[error("submission exceeded its work budget of {budget} packets at {location} (indirect-buffer cycle?)")]
    WorkBudgetExhausted { location: PacketLocation, budget: u64 },
    /// COND_EXEC / PRED_EXEC asks to skip past the end of its buffer.
    #[error("{opcode} at {location} skips {skip_dw} dwords but only {remaining_dw} remain in its buffer")]
    SkipPastEnd { location: PacketLocation, opcode: Opcode, skip_dw: u32, remaining_dw: u32 },
    /// An unknown packet while the policy is to stop.
    #[error("unknown packet {header:#010x} (opcode {opcode:#04x}) at {location}")]
    UnknownPacket { location: PacketLocation, header: u32, opcode: u8 },
    /// An INDIRECT_BUFFER_CONST while the constant engine already has
    /// `limit` buffers queued that it has not started (it waits, and the
    /// drawing engine keeps handing it buffers).
    #[error("INDIRECT_BUFFER_CONST at {location}: the constant engine already has {limit} buffers queued")]
    ConstantEngineBacklog { location: PacketLocation, limit: usize },
    /// `submit` while a submission is still running.
    #[error("the processor is still running a submission")]
    Busy,
}

impl Pm4Error {
    /// The processor's error for a packet the reader could not frame.
    #[cold]
    pub fn from_frame(e: FrameError) -> Pm4Error {
        let location = e.location;
        match e.kind {
            FrameErrorKind::Type1 { header } => Pm4Error::Type1Header { location, header },
            FrameErrorKind::Overrun { header, length_dw, remaining_dw } => {
                Pm4Error::PacketOverrun { location, header, length_dw, remaining_dw }
            }
            FrameErrorKind::Unreadable(source) => Pm4Error::UnreadableHeader { location, source },
        }
    }

    /// A short, stable name of the error kind (for reports and JSON).
    pub fn kind(&self) -> &'static str {
        match self {
            Pm4Error::Memory { .. } => "memory",
            Pm4Error::Gds { .. } => "gds",
            Pm4Error::PacketOverrun { .. } => "packet_overrun",
            Pm4Error::Type1Header { .. } => "type1_header",
            Pm4Error::UnreadableHeader { .. } => "unreadable_header",
            Pm4Error::MalformedPacket { .. } => "malformed_packet",
            Pm4Error::IbStackOverflow { .. } => "ib_stack_overflow",
            Pm4Error::WorkBudgetExhausted { .. } => "work_budget_exhausted",
            Pm4Error::SkipPastEnd { .. } => "skip_past_end",
            Pm4Error::UnknownPacket { .. } => "unknown_packet",
            Pm4Error::ConstantEngineBacklog { .. } => "constant_engine_backlog",
            Pm4Error::Busy => "busy",
        }
    }

    /// Where the error happened, when a packet is to blame.
    pub fn location(&self) -> Option<PacketLocation> {
        match self {
            Pm4Error::Memory { location, .. }
            | Pm4Error::Gds { location, .. }
            | Pm4Error::PacketOverrun { location, .. }
            | Pm4Error::Type1Header { location, .. }
            | Pm4Error::UnreadableHeader { location, .. }
            | Pm4Error::MalformedPacket { location, .. }
            | Pm4Error::IbStackOverflow { location, .. }
            | Pm4Error::WorkBudgetExhausted { location, .. }
            | Pm4Error::SkipPastEnd { location, .. }
            | Pm4Error::UnknownPacket { location, .. }
            | Pm4Error::ConstantEngineBacklog { location, .. } => Some(*location),
            Pm4Error::Busy => None,
        }
    }
}
