//! The packet layer: PM4 headers, opcodes and typed packet bodies.
//!
//! One decoder, two consumers: the processor executes what [`body`] decodes
//! and the disassembler prints the same values.

pub mod body;
pub mod builder;
pub mod field;
pub mod opcode;
pub mod private;
pub mod reader;
#[rustfmt::skip]
pub mod wire;

pub use opcode::Opcode;

use std::fmt;

/// Header bits \[31:30\].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketType {
    /// Direct register writes starting at a base register index.
    Type0,
    /// Not defined for GCN/RDNA streams: a stream error.
    Type1,
    /// One-dword filler.
    Type2,
    /// The normal packet: opcode, count, flags.
    Type3,
}

/// The type-3 COUNT value that makes a packet one dword long (`0xFFFF1000`).
pub const COUNT_ONE_DWORD: u32 = 0x3FFF;

/// The pad dword real drivers fill command buffers with: a header-only NOP.
pub const NOP_PAD: u32 = 0xFFFF_1000;

/// The canonical type-2 filler.
pub const TYPE2_FILLER: u32 = 0x8000_0000;

/// A packet header dword.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Header(pub u32);

impl Header {
    /// Builds a type-3 header for `opcode` with `body_dwords` body dwords
    /// (at least 1; COUNT = body_dwords - 1).
    pub const fn type3(opcode: Opcode, body_dwords: u32) -> Header {
        let count = body_dwords.saturating_sub(1) & 0x3FFF;
        Header(0xC000_0000 | (count << 16) | ((opcode.0 as u32) << 8))
    }

    /// Header bits \[31:30\].
    #[inline]
    pub const fn packet_type(self) -> PacketType {
        match self.0 >> 30 {
            0 => PacketType::Type0,
            1 => PacketType::Type1,
            2 => PacketType::Type2,
            _ => PacketType::Type3,
        }
    }

    /// COUNT, bits \[29:16\] (body dwords minus one for types 0 and 3).
    #[inline]
    pub const fn count(self) -> u32 {
        (self.0 >> 16) & 0x3FFF
    }

    /// IT_OPCODE, bits \[15:8\] (meaningful for type 3).
    #[inline]
    pub const fn opcode(self) -> Opcode {
        Opcode(((self.0 >> 8) & 0xFF) as u8)
    }

    /// PREDICATE, bit 0: the packet obeys SET_PREDICATION.
    #[inline]
    pub const fn predicate(self) -> bool {
        self.0 & 1 != 0
    }

    /// SHADER_TYPE, bit 1: 1 = compute.
    #[inline]
    pub const fn shader_type_compute(self) -> bool {
        self.0 & 2 != 0
    }

    /// RESET_FILTER_CAM, bit 2 (gfx10+).
    #[inline]
    pub const fn reset_filter_cam(self) -> bool {
        self.0 & 4 != 0
    }

    /// Type-0 BASE_INDEX, bits \[15:0\]: the first register written.
    #[inline]
    pub const fn type0_base(self) -> u32 {
        self.0 & 0xFFFF
    }

    /// The length in dwords, header included, of a type-3 packet with this
    /// header: COUNT + 2, or one dword for COUNT = 0x3FFF (the processor's
    /// view loop frames with it once it knows the type).
    #[inline]
    pub(crate) const fn type3_length_dw(self) -> u32 {
        if self.count() == COUNT_ONE_DWORD {
            1
        } else {
            self.count() + 2
        }
    }

    /// Total packet length in dwords including the header, or `None` for a
    /// type-1 header. Type 2 and the COUNT = 0x3FFF type-3 form are one dword.
    #[inline]
    pub const fn length_dw(self) -> Option<u32> {
        // Tested by likelihood (type 3 first) rather than matched: streams
        // are almost all type 3, and a jump table on the type costs more.
        if self.0 >= 0xC000_0000 {
            Some(self.type3_length_dw())
        } else if self.0 < 0x4000_0000 {
            Some(self.count() + 2)
        } else if self.0 >= 0x8000_0000 {
            Some(1)
        } else {
            None
        }
    }
}

impl Header {
    /// The name the packet is counted and printed under.
    #[inline]
    pub const fn name(self) -> PacketName {
        match self.packet_type() {
            PacketType::Type0 => PacketName::Type0,
            PacketType::Type1 => PacketName::Type1,
            PacketType::Type2 => PacketName::Type2,
            PacketType::Type3 => PacketName::Type3(self.opcode()),
        }
    }
}

/// The name of a packet, the one naming every report uses: the opcode's
/// name for type 3 (`UNKNOWN_0xNN` when the gfx10.3 map has none), else
/// `TYPE0`, `TYPE1` or `TYPE2`. Copy and allocation-free, so per-packet
/// records can keep it.
///
/// ```
/// use pm4core::packet::Header;
///
/// assert_eq!(Header(0xC001_7600).name().to_string(), "SET_SH_REG");
/// assert_eq!(Header(0xC000_0100).name().to_string(), "UNKNOWN_0x01");
/// assert_eq!(Header(0x4000_0000).name().to_string(), "TYPE1");
/// assert_eq!(Header(0x8000_0000).name().to_string(), "TYPE2");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PacketName {
    /// A type-0 register run.
    Type0,
    /// A type-1 header.
    Type1,
    /// A type-2 filler.
    Type2,
    /// A type-3 packet.
    Type3(Opcode),
}

impl fmt::Display for PacketName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PacketName::Type0 => f.write_str("TYPE0"),
            PacketName::Type1 => f.write_str("TYPE1"),
            PacketName::Type2 => f.write_str("TYPE2"),
            PacketName::Type3(op) => op.fmt(f),
        }
    }
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Header({:#010x})", self.0)
    }
}

/// Where a packet sits: the buffer it was read from and its dword offset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PacketLocation {
    /// GPU address of the first dword of the command buffer (IB) holding it.
    pub buffer: u64,
    /// Size of that buffer in dwords.
    pub buffer_size_dw: u32,
    /// Dword offset of the header inside the buffer.
    pub offset_dw: u32,
}

impl PacketLocation {
    /// GPU address of the header dword.
    #[inline]
    pub fn address(&self) -> u64 {
        self.buffer.wrapping_add(u64::from(self.offset_dw) * 4)
    }
}

impl fmt::Display for PacketLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x} (buffer {:#x} + dword {})", self.address(), self.buffer, self.offset_dw)
    }
}

/// One decoded packet: its header, its body dwords and where it was read.
#[derive(Clone, Copy, Debug)]
pub struct Packet<'a> {
    /// The header dword.
    pub header: Header,
    /// The body: every dword after the header (empty for one-dword packets).
    pub body: &'a [u32],
    /// Where the header sits.
    pub location: PacketLocation,
}

impl<'a> Packet<'a> {
    /// The type-3 opcode.
    #[inline]
    pub fn opcode(&self) -> Opcode {
        self.header.opcode()
    }

    /// Body dword `i`, or a [`body::BodyError`] naming the missing dword.
    #[inline]
    pub fn dw(&self, i: usize) -> Result<u32, body::BodyError> {
        self.body.get(i).copied().ok_or(body::BodyError::Missing {
            opcode: self.opcode(),
            index: i as u32,
            body_len: self.body.len() as u32,
        })
    }
}

/// Splits the packet starting at `dwords[0]` off a dword stream: returns its
/// header, its body and its length, or why it cannot be read (the framing
/// rule of [`reader::frame_length`]).
pub fn split_packet(dwords: &[u32]) -> Result<(Header, &[u32], u32), SplitError> {
    let first = *dwords.first().ok_or(SplitError::Empty)?;
    let header = Header(first);
    let available_dw = u32::try_from(dwords.len()).unwrap_or(u32::MAX);
    let len = match reader::frame_length(header, available_dw) {
        Ok(len) => len,
        Err(reader::FrameErrorKind::Overrun { length_dw, .. }) => {
            return Err(SplitError::Overrun { header: first, length_dw, available_dw })
        }
        Err(_) => return Err(SplitError::Type1 { header: first }),
    };
    let body = dwords.get(1..len as usize).unwrap_or(&[]);
    Ok((header, body, len))
}

/// Why [`split_packet`] could not read a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitError {
    /// No dwords left.
    Empty,
    /// A type-1 header.
    Type1 { header: u32 },
    /// The packet's length runs past the dwords available.
    Overrun { header: u32, length_dw: u32, available_dw: u32 },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lengths() {
        assert_eq!(Header(NOP_PAD).length_dw(), Some(1));
        assert_eq!(Header(TYPE2_FILLER).length_dw(), Some(1));
        assert_eq!(Header(0x8123_4567).length_dw(), Some(1));
        assert_eq!(Header(0x4000_0000).length_dw(), None);
        let h = Header(0xC002_3F00);
        assert_eq!(h.opcode(), Opcode::INDIRECT_BUFFER);
        assert_eq!(h.length_dw(), Some(4));
        assert_eq!(Header::type3(Opcode::INDIRECT_BUFFER, 3), h);
        let t0 = Header(0x0001_A000);
        assert_eq!(t0.packet_type(), PacketType::Type0);
        assert_eq!(t0.type0_base(), 0xA000);
        assert_eq!(t0.length_dw(), Some(3));
    }

    #[test]
    fn split_reports_overrun() {
        let words = [0xC003_1000, 1, 2];
        assert_eq!(
            split_packet(&words),
            Err(SplitError::Overrun { header: 0xC003_1000, length_dw: 5, available_dw: 3 })
        );
        let (h, body, len) = split_packet(&[0xC000_1000, 7]).unwrap();
        assert_eq!((h.opcode(), body, len), (Opcode::NOP, &[7u32][..], 2));
    }
}
