//! Packet framing: the one place that turns command-buffer dwords into
//! packets.
//!
//! A command buffer is a run of packets, each starting with a header whose
//! type and COUNT give its length ([`Header::length_dw`]). Framing one packet
//! means reading its header at a location, refusing a type-1 header and a
//! length that runs past the buffer's end, and reading its dwords. The
//! processor's loop ([`crate::processor`]) and the disassembler's walk
//! ([`crate::disasm`]) both frame through [`read_frame`]; they differ only
//! in where the dwords come from (a [`DwordSource`]: the processor's prefetch
//! window, guest memory, or a slice).
//!
//! ```
//! use pm4core::packet::reader::{FrameErrorKind, PacketReader, SliceSource};
//! use pm4core::packet::Opcode;
//!
//! // SET_SH_REG with one value, a one-dword NOP pad, then a type-1 header.
//! let words = [0xC001_7600, 0x0000_0008, 0x0000_0100, 0xFFFF_1000, 0x4000_0000];
//! let mut source = SliceSource::new(0x1000, &words);
//! let mut reader = PacketReader::new(0x1000, words.len() as u32);
//!
//! let packet = reader.read(&mut source).unwrap().unwrap();
//! assert_eq!(packet.opcode(), Opcode::SET_SH_REG);
//! assert_eq!(packet.body, &[0x8, 0x100]);
//! assert_eq!(packet.location.address(), 0x1000);
//!
//! let pad = reader.read(&mut source).unwrap().unwrap();
//! assert_eq!((pad.opcode(), pad.location.offset_dw), (Opcode::NOP, 3));
//!
//! let error = reader.read(&mut source).unwrap().unwrap_err();
//! assert_eq!(error.kind, FrameErrorKind::Type1 { header: 0x4000_0000 });
//! assert_eq!(error.location.address(), 0x1010);
//! // The cursor stays on the bad packet; stepping over it ends the buffer.
//! reader.advance(1);
//! assert!(reader.read(&mut source).is_none());
//! ```

use std::fmt;

use super::{Header, Packet, PacketLocation};
use crate::memory::{GuestMemory, MemoryError};

/// Where a reader gets command-buffer dwords from.
pub trait DwordSource {
    /// The `need` dwords at `address`. `remaining` is how many dwords the
    /// buffer has from `address` on (at least `need`): a source may read
    /// that far ahead, never further.
    fn dwords(&mut self, address: u64, need: u32, remaining: u32) -> Result<&[u32], MemoryError>;
}

/// Dwords held in a slice placed at a GPU address.
#[derive(Clone, Copy, Debug)]
pub struct SliceSource<'a> {
    base: u64,
    words: &'a [u32],
}

impl<'a> SliceSource<'a> {
    /// `words[0]` sits at `base`.
    pub fn new(base: u64, words: &'a [u32]) -> Self {
        SliceSource { base, words }
    }
}

impl DwordSource for SliceSource<'_> {
    fn dwords(&mut self, address: u64, need: u32, _remaining: u32) -> Result<&[u32], MemoryError> {
        let unmapped = MemoryError::Unmapped { address, len: u64::from(need) * 4 };
        let delta = address.checked_sub(self.base).filter(|d| d % 4 == 0).ok_or(unmapped)?;
        let start = usize::try_from(delta / 4).map_err(|_| unmapped)?;
        self.words.get(start..start.saturating_add(need as usize)).ok_or(unmapped)
    }
}

/// Guest memory read packet by packet into a buffer the source owns.
pub struct MemorySource<'m> {
    memory: &'m dyn GuestMemory,
    scratch: Vec<u32>,
}

impl<'m> MemorySource<'m> {
    /// Reads from `memory`.
    pub fn new(memory: &'m dyn GuestMemory) -> Self {
        MemorySource { memory, scratch: Vec::new() }
    }
}

impl DwordSource for MemorySource<'_> {
    fn dwords(&mut self, address: u64, need: u32, _remaining: u32) -> Result<&[u32], MemoryError> {
        self.scratch.clear();
        self.scratch.resize(need as usize, 0);
        self.memory.read_dwords(address, &mut self.scratch)?;
        Ok(&self.scratch)
    }
}

/// A framed packet: its header and length, its body not read yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The header dword.
    pub header: Header,
    /// Length in dwords, header included (1 for type 2 and the COUNT =
    /// 0x3FFF form).
    pub length_dw: u32,
}

/// Why the packet at a location cannot be framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameErrorKind {
    /// A type-1 header (not defined for GCN/RDNA streams).
    Type1 {
        /// The header dword.
        header: u32,
    },
    /// The packet's length runs past the end of its buffer.
    Overrun {
        /// The header dword.
        header: u32,
        /// The length the header gives, header included.
        length_dw: u32,
        /// Dwords left in the buffer from the header on.
        remaining_dw: u32,
    },
    /// The header (or, for [`PacketReader::read`], the body) is not readable.
    Unreadable(MemoryError),
}

/// A packet that cannot be framed, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameError {
    /// Where the header sits.
    pub location: PacketLocation,
    /// What is wrong.
    pub kind: FrameErrorKind,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = &self.location;
        match &self.kind {
            FrameErrorKind::Type1 { header } => write!(f, "type-1 header {header:#010x} at {at}"),
            FrameErrorKind::Overrun { header, length_dw, remaining_dw } => write!(
                f,
                "packet header {header:#010x} at {at}: length {length_dw} dwords runs past the end of its buffer ({remaining_dw} dwords left)"
            ),
            FrameErrorKind::Unreadable(e) => write!(f, "packet at {at} is not readable: {e}"),
        }
    }
}

impl std::error::Error for FrameError {}

/// The framing rule: the length of the packet whose header is `header`,
/// with `remaining_dw` dwords left in its buffer (header included).
#[inline]
pub fn frame_length(header: Header, remaining_dw: u32) -> Result<u32, FrameErrorKind> {
    let Some(length_dw) = header.length_dw() else {
        return Err(FrameErrorKind::Type1 { header: header.0 });
    };
    if length_dw > remaining_dw {
        return Err(FrameErrorKind::Overrun { header: header.0, length_dw, remaining_dw });
    }
    Ok(length_dw)
}

/// Frames the packet at `location` (inside its buffer): reads its header
/// from `source` and applies [`frame_length`].
#[inline]
pub fn read_frame<S: DwordSource + ?Sized>(source: &mut S, location: PacketLocation) -> Result<Frame, FrameError> {
    let remaining = location.buffer_size_dw.saturating_sub(location.offset_dw);
    let header = match source.dwords(location.address(), 1, remaining) {
        Ok(words) => Header(words.first().copied().unwrap_or(0)),
        Err(e) => return Err(FrameError { location, kind: FrameErrorKind::Unreadable(e) }),
    };
    match frame_length(header, remaining) {
        Ok(length_dw) => Ok(Frame { header, length_dw }),
        Err(kind) => Err(FrameError { location, kind }),
    }
}

/// A cursor over one command buffer that yields its packets in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketReader {
    location: PacketLocation,
}

impl PacketReader {
    /// A reader at the start of the `size_dw`-dword buffer at `buffer`.
    pub fn new(buffer: u64, size_dw: u32) -> Self {
        PacketReader { location: PacketLocation { buffer, buffer_size_dw: size_dw, offset_dw: 0 } }
    }

    /// A reader at `location`.
    pub fn at(location: PacketLocation) -> Self {
        PacketReader { location }
    }

    /// Where the next packet starts.
    pub fn location(&self) -> PacketLocation {
        self.location
    }

    /// Dwords left in the buffer from the cursor on.
    pub fn remaining_dw(&self) -> u32 {
        self.location.buffer_size_dw.saturating_sub(self.location.offset_dw)
    }

    /// True when the cursor reached the buffer's end.
    pub fn is_at_end(&self) -> bool {
        self.location.offset_dw >= self.location.buffer_size_dw
    }

    /// Moves the cursor `dwords` on (past a packet framed with
    /// [`Self::frame`], or past a frame error the caller steps over).
    pub fn advance(&mut self, dwords: u32) {
        self.location.offset_dw = self.location.offset_dw.saturating_add(dwords);
    }

    /// Frames the packet at the cursor without moving it.
    pub fn frame<S: DwordSource + ?Sized>(&self, source: &mut S) -> Result<Frame, FrameError> {
        read_frame(source, self.location)
    }

    /// The next packet with its body, the cursor moved past it; `None` at
    /// the buffer's end. After a frame error the cursor stays on the bad
    /// packet: the caller decides whether to [`Self::advance`] or stop.
    pub fn read<'s, S: DwordSource + ?Sized>(&mut self, source: &'s mut S) -> Option<Result<Packet<'s>, FrameError>> {
        if self.is_at_end() {
            return None;
        }
        let location = self.location;
        let frame = match read_frame(source, location) {
            Ok(frame) => frame,
            Err(e) => return Some(Err(e)),
        };
        let words = match source.dwords(location.address(), frame.length_dw, self.remaining_dw()) {
            Ok(words) => words,
            Err(e) => return Some(Err(FrameError { location, kind: FrameErrorKind::Unreadable(e) })),
        };
        self.advance(frame.length_dw);
        Some(Ok(Packet { header: frame.header, body: words.get(1..).unwrap_or(&[]), location }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::SparseMemory;

    #[test]
    fn overrun_and_unreadable_name_their_location() {
        let words = [0xC000_1000, 7, 0xC003_1000, 1];
        let mut source = SliceSource::new(0x2000, &words);
        let mut reader = PacketReader::new(0x2000, 4);
        let nop = reader.read(&mut source).unwrap().unwrap();
        assert_eq!(nop.body, &[7]);
        let e = reader.read(&mut source).unwrap().unwrap_err();
        assert_eq!(e.kind, FrameErrorKind::Overrun { header: 0xC003_1000, length_dw: 5, remaining_dw: 2 });
        assert_eq!(e.location.offset_dw, 2);
        assert_eq!(reader.location().offset_dw, 2);

        let memory = SparseMemory::new();
        let mut source = MemorySource::new(&memory);
        let e = PacketReader::new(0x4000, 8).read(&mut source).unwrap().unwrap_err();
        assert!(matches!(e.kind, FrameErrorKind::Unreadable(MemoryError::Unmapped { address: 0x4000, .. })));
        assert!(e.to_string().starts_with("packet at 0x4000 (buffer 0x4000 + dword 0) is not readable: "));
    }
}
