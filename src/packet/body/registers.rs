//! Register-writing packets: SET_*_REG, LOAD_*_REG(_INDEX), REG_RMW,
//! CONTEXT_REG_RMW, CLEAR_STATE, CONTEXT_CONTROL, SET_QUEUE_REG.

use super::{addr_hi, bit, bits, lo32, put, Body, BodyError, Words};
use crate::memory::address_from_dwords;
use crate::packet::field::{BodyField, FieldValue as V};
use crate::packet::Opcode;
use crate::regs::RegisterSpace;

/// The plain register writers: SET_CONTEXT_REG, SET_SH_REG, SET_UCONFIG_REG,
/// SET_CONFIG_REG and their _INDEX forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetRegisters<'a> {
    pub opcode: Opcode,
    /// REG_OFFSET, relative to the space base.
    pub offset: u32,
    /// INDEX, dw0 \[31:28\].
    pub index: u32,
    pub values: &'a [u32],
}

impl<'a> SetRegisters<'a> {
    /// Writes `values` from absolute register `register` on, with the plain
    /// writer of the register's space (the first in opcode order: the form
    /// without _INDEX; `None` when no plain writer reaches it). The spaces
    /// are [`Opcode::register_space`]'s.
    pub fn at(register: u32, values: &'a [u32]) -> Option<Self> {
        let (opcode, offset) = Opcode::all_named()
            .filter(|op| op.writes_register_run())
            .find_map(|op| Some((op, op.register_space()?.offset_of(register)?)))?;
        Some(SetRegisters { opcode, offset, index: 0, values })
    }

    /// The register space of the opcode.
    pub fn space(&self) -> RegisterSpace {
        self.opcode.register_space().unwrap_or(RegisterSpace::UCONFIG)
    }

    /// The absolute index of the first register written.
    pub fn first_register(&self) -> u32 {
        self.space().base.wrapping_add(self.offset)
    }
}

impl<'a> Body<'a> for SetRegisters<'a> {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let d0 = w.dw(0)?;
        Ok(Self { opcode, offset: bits(d0, 0, 15), index: bits(d0, 28, 31), values: w.from(1) })
    }

    fn opcode(&self) -> Opcode {
        self.opcode
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.push(put(self.offset, 0, 15) | put(self.index, 28, 31));
        out.extend_from_slice(self.values);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        if self.index != 0 {
            out.push(BodyField::new("INDEX", V::Dec(self.index.into())));
        }
        let first = self.first_register();
        for (i, &value) in self.values.iter().enumerate() {
            out.push(BodyField::new("REGISTER", V::RegisterWrite { register: first.wrapping_add(i as u32), value }));
        }
    }
}

/// LOAD_UCONFIG_REG, LOAD_SH_REG, LOAD_CONFIG_REG, LOAD_CONTEXT_REG: (offset,
/// count) ranges of the space loaded from a memory image of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadRegisters<'a> {
    pub opcode: Opcode,
    /// Address of the image of the space (register offset 0).
    pub address: u64,
    /// (REG_OFFSET, NUM_DWORDS) pairs, as dwords.
    pub ranges: &'a [u32],
}

impl<'a> LoadRegisters<'a> {
    /// The (register offset, count) ranges.
    pub fn ranges(&self) -> impl Iterator<Item = (u32, u32)> + 'a {
        self.ranges.chunks_exact(2).map(|pair| match pair {
            [offset, count] => (offset & 0xFFFF, count & 0x3FFF),
            _ => (0, 0),
        })
    }
}

impl<'a> Body<'a> for LoadRegisters<'a> {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        Ok(Self { opcode, address: address_from_dwords(w.dw(0)?, w.dw(1)?, 2), ranges: w.from(2) })
    }

    fn opcode(&self) -> Opcode {
        self.opcode
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[lo32(self.address), addr_hi(self.address)]);
        out.extend_from_slice(self.ranges);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("ADDR", V::Hex(self.address)),
            BodyField::new("RANGES", V::Dec((self.ranges.len() / 2) as u64)),
            BodyField::new("RANGE_DWORDS", V::HexList(self.ranges)),
        ])
    }
}

/// LOAD_*_REG_INDEX (0x63, 0x64, 0x9F).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadRegistersIndex {
    pub opcode: Opcode,
    /// INDEX: 0 direct address, 1 offset from the SET_BASE index-4 base, 2 indirect.
    pub index: u32,
    pub address_lo: u32,
    pub address_hi: u32,
    pub reg_offset: u32,
    /// DATA_FORMAT: false = offset_and_size, true = offset_and_data pairs.
    pub pairs: bool,
    pub num_dwords: u32,
}

impl<'a> Body<'a> for LoadRegistersIndex {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let d0 = w.dw(0)?;
        let d2 = w.dw(2)?;
        Ok(Self {
            opcode,
            index: bits(d0, 0, 1),
            address_lo: d0 & !3,
            address_hi: w.dw(1)?,
            reg_offset: bits(d2, 0, 15),
            pairs: bit(d2, 31),
            num_dwords: bits(w.dw(3)?, 0, 13),
        })
    }

    fn opcode(&self) -> Opcode {
        self.opcode
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            (self.address_lo & !3) | put(self.index, 0, 1),
            self.address_hi,
            put(self.reg_offset, 0, 15) | put(self.pairs.into(), 31, 31),
            put(self.num_dwords, 0, 13),
        ]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        let space = self.opcode.register_space().unwrap_or(RegisterSpace::CONTEXT);
        out.extend([
            BodyField::new("INDEX", V::Dec(self.index.into())),
            BodyField::new("ADDR", V::Hex(address_from_dwords(self.address_lo, self.address_hi, 2))),
            BodyField::new("REG_OFFSET", V::Hex(self.reg_offset.into())),
            BodyField::new("DATA_FORMAT", V::Name(if self.pairs { "offset_and_data" } else { "offset_and_size" })),
            BodyField::new("NUM_DWORDS", V::Dec(self.num_dwords.into())),
        ]);
        if !self.pairs {
            out.push(BodyField::new("REG_NAME", V::Register(space.base.wrapping_add(self.reg_offset))));
        }
    }
}

/// REG_RMW (0x21): register = (register & AND_MASK) | OR_MASK, each mask
/// an immediate or read from a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegRmw {
    /// Absolute register index modified.
    pub register: u32,
    /// AND_MASK: the mask, or (with `and_from_register`) its register.
    pub and_mask: u32,
    /// OR_MASK: the value, or (with `or_from_register`) its register.
    pub or_mask: u32,
    /// MOD_ADRS bit 31: AND_MASK names a register.
    pub and_from_register: bool,
    /// Bit 30: OR_MASK names a register.
    pub or_from_register: bool,
}

impl<'a> Body<'a> for RegRmw {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let d0 = w.dw(0)?;
        Ok(Self {
            register: bits(d0, 0, 17),
            and_mask: w.dw(1)?,
            or_mask: w.dw(2)?,
            and_from_register: bit(d0, 31),
            or_from_register: bit(d0, 30),
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::REG_RMW
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            put(self.register, 0, 17)
                | put(self.or_from_register.into(), 30, 30)
                | put(self.and_from_register.into(), 31, 31),
            self.and_mask,
            self.or_mask,
        ]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("REG", V::Register(self.register)),
            BodyField::new("AND_MASK", V::Hex(self.and_mask.into())),
            BodyField::new("OR_MASK", V::Hex(self.or_mask.into())),
            BodyField::new("AND_FROM_REG", V::Flag(self.and_from_register)),
            BodyField::new("OR_FROM_REG", V::Flag(self.or_from_register)),
        ])
    }
}

/// CONTEXT_REG_RMW (0x51): context register = (old & ~MASK) | (DATA & MASK).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextRegRmw {
    /// REG_OFFSET, relative to the context space.
    pub offset: u32,
    pub mask: u32,
    pub data: u32,
}

impl<'a> Body<'a> for ContextRegRmw {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        Ok(Self { offset: bits(w.dw(0)?, 0, 15), mask: w.dw(1)?, data: w.dw(2)? })
    }

    fn opcode(&self) -> Opcode {
        Opcode::CONTEXT_REG_RMW
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[put(self.offset, 0, 15), self.mask, self.data]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("REG", V::Register(RegisterSpace::CONTEXT.base.wrapping_add(self.offset))),
            BodyField::new("MASK", V::Hex(self.mask.into())),
            BodyField::new("DATA", V::Hex(self.data.into())),
        ])
    }
}

/// CLEAR_STATE (0x12): CMD 0 clears the context registers, 1 pushes them,
/// 2 pops them, 3 pushes then clears.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClearState {
    /// CMD, dw0 \[3:0\] (0 when the body is empty).
    pub cmd: u32,
}

impl ClearState {
    fn cmd_name(cmd: u32) -> &'static str {
        match cmd {
            0 => "clear",
            1 => "push",
            2 => "pop",
            3 => "push_clear",
            _ => "reserved",
        }
    }
}

impl<'a> Body<'a> for ClearState {
    fn decode_body(_: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        Ok(Self { cmd: body.first().map_or(0, |d| bits(*d, 0, 3)) })
    }

    fn opcode(&self) -> Opcode {
        Opcode::CLEAR_STATE
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.push(put(self.cmd, 0, 3));
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([BodyField::new("CMD", V::Selector(self.cmd, Self::cmd_name(self.cmd)))])
    }
}

/// The named bits of CONTEXT_CONTROL's two dwords.
const CONTEXT_CONTROL_BITS: &[(u32, &str)] = &[
    (0, "GLOBAL_CONFIG"),
    (1, "PER_CONTEXT_STATE"),
    (15, "GLOBAL_UCONFIG"),
    (16, "GFX_SH_REGS"),
    (24, "CS_SH_REGS"),
    (28, "CE_RAM"),
];

/// CONTEXT_CONTROL (0x28): register shadowing load and shadow enables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextControl {
    /// LOAD_CONTROL dword (bit 31: update the load enables).
    pub load: u32,
    /// SHADOW_ENABLE dword (bit 31: update the shadow enables).
    pub shadow: u32,
}

impl<'a> Body<'a> for ContextControl {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        Ok(Self { load: w.dw(0)?, shadow: w.dw(1)? })
    }

    fn opcode(&self) -> Opcode {
        Opcode::CONTEXT_CONTROL
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[self.load, self.shadow]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("LOAD", V::Flags(self.load, CONTEXT_CONTROL_BITS)),
            BodyField::new("UPDATE_LOAD", V::Dec((self.load >> 31).into())),
            BodyField::new("SHADOW", V::Flags(self.shadow & !(1 << 28), CONTEXT_CONTROL_BITS)),
            BodyField::new("UPDATE_SHADOW", V::Dec((self.shadow >> 31).into())),
        ])
    }
}

/// SET_QUEUE_REG (0x78, compute queues): values for the queue's own
/// registers from dw0 \[7:0\] on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetQueueReg<'a> {
    /// First queue register written, dw0 \[7:0\].
    pub offset: u32,
    /// The rest of dw0 (VQID and flags), kept as it is.
    pub control: u32,
    pub values: &'a [u32],
}

impl<'a> Body<'a> for SetQueueReg<'a> {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let d0 = w.dw(0)?;
        Ok(Self { offset: bits(d0, 0, 7), control: d0 & !0xFF, values: w.from(1) })
    }

    fn opcode(&self) -> Opcode {
        Opcode::SET_QUEUE_REG
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.push(put(self.offset, 0, 7) | (self.control & !0xFF));
        out.extend_from_slice(self.values);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("QUEUE_REG", V::Hex(self.offset.into())),
            BodyField::new("CONTROL", V::Hex(self.control.into())),
            BodyField::new("VALUES", V::HexList(self.values)),
        ])
    }
}

super::display_from_fields!(
    SetRegisters<'_>,
    LoadRegisters<'_>,
    LoadRegistersIndex,
    RegRmw,
    ContextRegRmw,
    ClearState,
    ContextControl,
    SetQueueReg<'_>
);
