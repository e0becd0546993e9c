//! The constant engine's packets: WRITE_CONST_RAM, LOAD_CONST_RAM,
//! DUMP_CONST_RAM(_OFFSET), INCREMENT_CE_COUNTER, WAIT_ON_DE_COUNTER_DIFF.

use super::{addr_hi, bit, bits, lo32, put, Body, BodyError, Words};
use crate::memory::address_from_dwords;
use crate::packet::field::{BodyField, FieldValue as V};
use crate::packet::Opcode;

/// WRITE_CONST_RAM (0x81): immediate dwords into CE RAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteConstRam<'a> {
    /// Byte offset in CE RAM (dword aligned).
    pub offset: u32,
    pub data: &'a [u32],
}

impl<'a> Body<'a> for WriteConstRam<'a> {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        Ok(Self { offset: w.dw(0)? & 0xFFFC, data: w.from(1) })
    }

    fn opcode(&self) -> Opcode {
        Opcode::WRITE_CONST_RAM
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.push(self.offset & 0xFFFC);
        out.extend_from_slice(self.data);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("OFFSET", V::Hex(self.offset.into())),
            BodyField::new("DATA", V::Dec(self.data.len() as u64)),
            BodyField::new("VALUES", V::HexList(self.data)),
        ])
    }
}

/// LOAD_CONST_RAM (0x80): memory into CE RAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadConstRam {
    pub address: u64,
    pub num_dwords: u32,
    /// START_ADDR: byte offset in CE RAM.
    pub start: u32,
}

impl<'a> Body<'a> for LoadConstRam {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        Ok(Self {
            address: address_from_dwords(w.dw(0)?, w.dw(1)?, 2),
            num_dwords: bits(w.dw(2)?, 0, 14),
            start: bits(w.dw(3)?, 0, 15),
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::LOAD_CONST_RAM
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            lo32(self.address),
            addr_hi(self.address),
            put(self.num_dwords, 0, 14),
            put(self.start, 0, 15),
        ]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("ADDR", V::Hex(self.address)),
            BodyField::new("NUM_DWORDS", V::Dec(self.num_dwords.into())),
            BodyField::new("START", V::Hex(self.start.into())),
        ])
    }
}

/// DUMP_CONST_RAM (0x83) and DUMP_CONST_RAM_OFFSET (0x9E): CE RAM into
/// memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DumpConstRam {
    pub opcode: Opcode,
    /// Byte offset in CE RAM.
    pub offset: u32,
    /// INCREMENT_CE, dw0 bit 30: bump the CE counter once dumped.
    pub increment_ce: bool,
    pub num_dwords: u32,
    /// DUMP_CONST_RAM: the address; DUMP_CONST_RAM_OFFSET: the byte offset
    /// from the SET_BASE CE base.
    pub destination: u64,
}

impl<'a> Body<'a> for DumpConstRam {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let d0 = w.dw(0)?;
        let destination = if opcode == Opcode::DUMP_CONST_RAM_OFFSET {
            u64::from(w.dw(2)?)
        } else {
            address_from_dwords(w.dw(2)?, w.dw(3)?, 2)
        };
        Ok(Self {
            opcode,
            offset: bits(d0, 0, 15),
            increment_ce: bit(d0, 30),
            num_dwords: bits(w.dw(1)?, 0, 14),
            destination,
        })
    }

    fn opcode(&self) -> Opcode {
        self.opcode
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            put(self.offset, 0, 15) | put(self.increment_ce.into(), 30, 30),
            put(self.num_dwords, 0, 14),
            lo32(self.destination),
        ]);
        if self.opcode != Opcode::DUMP_CONST_RAM_OFFSET {
            out.push(addr_hi(self.destination));
        }
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        let name = if self.opcode == Opcode::DUMP_CONST_RAM_OFFSET { "DST_OFFSET" } else { "ADDR" };
        out.extend([
            BodyField::new("OFFSET", V::Hex(self.offset.into())),
            BodyField::new("INCREMENT_CE", V::Flag(self.increment_ce)),
            BodyField::new("NUM_DWORDS", V::Dec(self.num_dwords.into())),
            BodyField::new(name, V::Hex(self.destination)),
        ])
    }
}

/// INCREMENT_CE_COUNTER (0x84).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IncrementCeCounter {
    /// CNTRSEL, dw0 \[1:0\]: 1 the CE counter, 2 the CS partition counter,
    /// 3 both (0, and an empty body, count as the CE counter).
    pub select: u32,
}

impl<'a> Body<'a> for IncrementCeCounter {
    fn decode_body(_: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        Ok(Self { select: body.first().map_or(1, |d| bits(*d, 0, 1)) })
    }

    fn opcode(&self) -> Opcode {
        Opcode::INCREMENT_CE_COUNTER
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.push(put(self.select, 0, 1));
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([BodyField::new("CNTRSEL", V::Dec(self.select.into()))])
    }
}

/// WAIT_ON_DE_COUNTER_DIFF (0x88): the constant engine waits while it is
/// DIFF or more ahead of the drawing engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitOnDeCounterDiff {
    pub diff: u32,
}

impl<'a> Body<'a> for WaitOnDeCounterDiff {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        Ok(Self { diff: Words::new(opcode, body).dw(0)? })
    }

    fn opcode(&self) -> Opcode {
        Opcode::WAIT_ON_DE_COUNTER_DIFF
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.push(self.diff);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([BodyField::new("DIFF", V::Dec(self.diff.into()))])
    }
}

super::display_from_fields!(WriteConstRam<'_>, LoadConstRam, DumpConstRam, IncrementCeCounter, WaitOnDeCounterDiff);
