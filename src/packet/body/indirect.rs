//! INDIRECT_BUFFER and INDIRECT_BUFFER_CONST, plain and conditional.

use super::{addr_hi, bit, bits, hi32, lo32, put, qword, Body, BodyError, CompareFunction, Words};
use crate::memory::address_from_dwords;
use crate::packet::field::{BodyField, FieldValue as V, Layout};
use crate::packet::Opcode;

/// Body dwords of the conditional form (COND_INDIRECT_BUFFER, COUNT 12).
pub const COND_INDIRECT_BUFFER_DWORDS: usize = 13;

/// True when an INDIRECT_BUFFER(_CONST) body of `body_dwords` dwords is the
/// conditional form: the one place that tells the two forms apart.
#[inline]
pub const fn is_conditional_indirect_buffer(body_dwords: usize) -> bool {
    body_dwords >= COND_INDIRECT_BUFFER_DWORDS
}

/// INDIRECT_BUFFER / INDIRECT_BUFFER_CONST, normal form (COUNT = 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndirectBuffer {
    pub opcode: Opcode,
    pub address: u64,
    pub size_dw: u32,
    pub chain: bool,
    pub valid: bool,
    pub pre_ena: bool,
    pub vmid: u32,
}

impl IndirectBuffer {
    /// A valid call of the `size_dw`-dword buffer at `address`.
    pub fn call(address: u64, size_dw: u32) -> Self {
        IndirectBuffer {
            opcode: Opcode::INDIRECT_BUFFER,
            address,
            size_dw,
            chain: false,
            valid: true,
            pre_ena: false,
            vmid: 0,
        }
    }

    /// A valid chain to the `size_dw`-dword buffer at `address`.
    pub fn chain(address: u64, size_dw: u32) -> Self {
        IndirectBuffer { chain: true, ..Self::call(address, size_dw) }
    }

    fn control(&self) -> u32 {
        put(self.size_dw, 0, 19)
            | put(self.chain.into(), 20, 20)
            | put(self.pre_ena.into(), 21, 21)
            | put(self.valid.into(), 23, 23)
            | put(self.vmid, 24, 27)
    }
}

impl<'a> Body<'a> for IndirectBuffer {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let control = w.dw(2)?;
        Ok(Self {
            opcode,
            address: address_from_dwords(w.dw(0)?, w.dw(1)?, 2),
            size_dw: bits(control, 0, 19),
            chain: bit(control, 20),
            pre_ena: bit(control, 21),
            valid: bit(control, 23),
            vmid: bits(control, 24, 27),
        })
    }

    fn opcode(&self) -> Opcode {
        self.opcode
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[lo32(self.address), addr_hi(self.address), self.control()]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("IB_BASE", V::Hex(self.address)),
            BodyField::new("IB_SIZE", V::Dec(self.size_dw.into())),
            BodyField::new("CHAIN", V::Flag(self.chain)),
            BodyField::new("VALID", V::Flag(self.valid)),
            BodyField::new("PRE_ENA", V::Flag(self.pre_ena)),
            BodyField::new("VMID", V::Dec(self.vmid.into())),
            BodyField::with_layout("IB_CONTROL", V::Raw(self.control()), Layout::PacketType("IB_CONTROL")),
        ])
    }
}

/// COND_INDIRECT_BUFFER (INDIRECT_BUFFER(_CONST) with COUNT = 12): calls
/// IB1 when `(*COMPARE_ADDR & MASK) FUNCTION REFERENCE`, else (MODE 2) IB2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CondIndirectBuffer {
    pub opcode: Opcode,
    pub mode: u32,
    pub function: CompareFunction,
    pub compare_address: u64,
    pub mask: u64,
    pub reference: u64,
    pub ib1: (u64, u32),
    pub ib2: (u64, u32),
}

impl CondIndirectBuffer {
    /// The buffers the walk may enter: IB1, and IB2 in MODE 2; empty ones left out.
    pub fn targets(&self) -> impl Iterator<Item = (u64, u32)> {
        let second = if self.mode == 2 { Some(self.ib2) } else { None };
        std::iter::once(self.ib1).chain(second).filter(|&(_, size)| size > 0)
    }
}

impl<'a> Body<'a> for CondIndirectBuffer {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let d0 = w.dw(0)?;
        Ok(Self {
            opcode,
            mode: bits(d0, 0, 1),
            function: CompareFunction::from_bits(bits(d0, 8, 10)),
            compare_address: address_from_dwords(w.dw(1)?, w.dw(2)?, 2),
            mask: qword(w.dw(3)?, w.dw(4)?),
            reference: qword(w.dw(5)?, w.dw(6)?),
            ib1: (address_from_dwords(w.dw(7)?, w.dw(8)?, 2), bits(w.dw(9)?, 0, 19)),
            ib2: (address_from_dwords(w.dw(10)?, w.dw(11)?, 2), bits(w.dw(12)?, 0, 19)),
        })
    }

    fn opcode(&self) -> Opcode {
        self.opcode
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            put(self.mode, 0, 1) | put(self.function.to_bits(), 8, 10),
            lo32(self.compare_address),
            addr_hi(self.compare_address),
            lo32(self.mask),
            hi32(self.mask),
            lo32(self.reference),
            hi32(self.reference),
            lo32(self.ib1.0),
            addr_hi(self.ib1.0),
            put(self.ib1.1, 0, 19),
            lo32(self.ib2.0),
            addr_hi(self.ib2.0),
            put(self.ib2.1, 0, 19),
        ]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("MODE", V::Dec(self.mode.into())),
            BodyField::new("COMPARE_ADDR", V::Hex(self.compare_address)),
            BodyField::new("MASK", V::Hex(self.mask)),
            BodyField::new("FUNCTION", V::Name(self.function.name())),
            BodyField::new("REFERENCE", V::Hex(self.reference)),
            BodyField::new("IB1_BASE", V::Hex(self.ib1.0)),
            BodyField::new("IB1_SIZE", V::Dec(self.ib1.1.into())),
            BodyField::new("IB2_BASE", V::Hex(self.ib2.0)),
            BodyField::new("IB2_SIZE", V::Dec(self.ib2.1.into())),
        ])
    }
}

/// An INDIRECT_BUFFER(_CONST) body in either form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndirectBufferForm {
    /// The normal form: call or chain.
    Plain(IndirectBuffer),
    /// The conditional form.
    Conditional(CondIndirectBuffer),
}

impl IndirectBufferForm {
    /// Decodes either form, by the body's length
    /// ([`is_conditional_indirect_buffer`]).
    pub fn decode(opcode: Opcode, body: &[u32]) -> Result<Self, BodyError> {
        if is_conditional_indirect_buffer(body.len()) {
            CondIndirectBuffer::decode_body(opcode, body).map(Self::Conditional)
        } else {
            IndirectBuffer::decode_body(opcode, body).map(Self::Plain)
        }
    }
}

super::display_from_fields!(IndirectBuffer, CondIndirectBuffer);
