//! Draws, dispatches and their state: the draw packets, DISPATCH_DIRECT,
//! DISPATCH_INDIRECT, SET_BASE, INDEX_BASE, INDEX_BUFFER_SIZE, INDEX_TYPE,
//! NUM_INSTANCES, STRMOUT_BUFFER_UPDATE.

use super::{addr_hi, bit, bits, hi32, lo32, put, Body, BodyError, Words};
use crate::memory::address_from_dwords;
use crate::packet::field::{BodyField, FieldValue as V, Layout};
use crate::packet::Opcode;

const DRAW_INITIATOR: Layout = Layout::Register("VGT_DRAW_INITIATOR");
const DISPATCH_INITIATOR: Layout = Layout::Register("COMPUTE_DISPATCH_INITIATOR");

/// The draw packets' bodies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrawBody {
    /// DRAW_INDEX_2: self-contained indexed draw.
    Index2 { max_size: u32, index_base: u64, index_count: u32, initiator: u32 },
    /// DRAW_INDEX_AUTO: auto-indexed draw.
    IndexAuto { index_count: u32, initiator: u32 },
    /// DRAW_INDEX_OFFSET_2: indexed draw from INDEX_BASE.
    IndexOffset2 { max_size: u32, index_offset: u32, index_count: u32, initiator: u32 },
    /// DRAW_INDIRECT / DRAW_INDEX_INDIRECT (single).
    Indirect {
        indexed: bool,
        data_offset: u32,
        base_vtx_loc: u32,
        start_indx_loc: u32,
        start_inst_loc: u32,
        start_indx_enable: bool,
        initiator: u32,
    },
    /// DRAW_INDIRECT_MULTI / DRAW_INDEX_INDIRECT_MULTI / *_COUNT_MULTI.
    IndirectMulti {
        indexed: bool,
        /// The *_COUNT_MULTI opcode (0x9C/0x9D) rather than *_MULTI.
        count_multi: bool,
        data_offset: u32,
        base_vtx_loc: u32,
        start_indx_loc: u32,
        start_inst_loc: u32,
        draw_index_loc: u32,
        start_indx_enable: bool,
        count_indirect: bool,
        draw_index_enable: bool,
        count: u32,
        count_address: u64,
        stride: u32,
        initiator: u32,
    },
    /// DRAW_INDEX_MULTI_AUTO.
    IndexMultiAuto { prim_count: u32, initiator: u32, index_offset: u32, prim_type: u32, index_count: u32 },
}

impl DrawBody {
    /// Every draw opcode.
    pub const OPCODES: [Opcode; 10] = [
        Opcode::DRAW_INDEX_2,
        Opcode::DRAW_INDEX_AUTO,
        Opcode::DRAW_INDEX_OFFSET_2,
        Opcode::DRAW_INDIRECT,
        Opcode::DRAW_INDEX_INDIRECT,
        Opcode::DRAW_INDIRECT_MULTI,
        Opcode::DRAW_INDEX_INDIRECT_MULTI,
        Opcode::DRAW_INDIRECT_COUNT_MULTI,
        Opcode::DRAW_INDEX_INDIRECT_COUNT_MULTI,
        Opcode::DRAW_INDEX_MULTI_AUTO,
    ];

    /// The VGT_DRAW_INITIATOR value.
    pub fn initiator(&self) -> u32 {
        match *self {
            Self::Index2 { initiator, .. }
            | Self::IndexAuto { initiator, .. }
            | Self::IndexOffset2 { initiator, .. }
            | Self::Indirect { initiator, .. }
            | Self::IndirectMulti { initiator, .. }
            | Self::IndexMultiAuto { initiator, .. } => initiator,
        }
    }
}

impl<'a> Body<'a> for DrawBody {
    fn decode_body(op: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(op, body);
        Ok(match op {
            Opcode::DRAW_INDEX_2 => Self::Index2 {
                max_size: w.dw(0)?,
                index_base: address_from_dwords(w.dw(1)?, w.dw(2)?, 1),
                index_count: w.dw(3)?,
                initiator: w.dw(4)?,
            },
            Opcode::DRAW_INDEX_AUTO => Self::IndexAuto { index_count: w.dw(0)?, initiator: w.dw(1)? },
            Opcode::DRAW_INDEX_OFFSET_2 => Self::IndexOffset2 {
                max_size: w.dw(0)?,
                index_offset: w.dw(1)?,
                index_count: w.dw(2)?,
                initiator: w.dw(3)?,
            },
            Opcode::DRAW_INDIRECT | Opcode::DRAW_INDEX_INDIRECT => {
                let d1 = w.dw(1)?;
                let d2 = w.dw(2)?;
                Self::Indirect {
                    indexed: op == Opcode::DRAW_INDEX_INDIRECT,
                    data_offset: w.dw(0)?,
                    base_vtx_loc: bits(d1, 0, 15),
                    start_indx_loc: bits(d1, 16, 31),
                    start_inst_loc: bits(d2, 0, 15),
                    start_indx_enable: op == Opcode::DRAW_INDEX_INDIRECT && bit(d2, 28),
                    initiator: w.dw(3)?,
                }
            }
            Opcode::DRAW_INDIRECT_MULTI
            | Opcode::DRAW_INDEX_INDIRECT_MULTI
            | Opcode::DRAW_INDIRECT_COUNT_MULTI
            | Opcode::DRAW_INDEX_INDIRECT_COUNT_MULTI => {
                let indexed = matches!(op, Opcode::DRAW_INDEX_INDIRECT_MULTI | Opcode::DRAW_INDEX_INDIRECT_COUNT_MULTI);
                let d1 = w.dw(1)?;
                let d3 = w.dw(3)?;
                Self::IndirectMulti {
                    indexed,
                    count_multi: matches!(
                        op,
                        Opcode::DRAW_INDIRECT_COUNT_MULTI | Opcode::DRAW_INDEX_INDIRECT_COUNT_MULTI
                    ),
                    data_offset: w.dw(0)?,
                    base_vtx_loc: bits(d1, 0, 15),
                    start_indx_loc: bits(d1, 16, 31),
                    start_inst_loc: bits(w.dw(2)?, 0, 15),
                    draw_index_loc: bits(d3, 0, 15),
                    start_indx_enable: indexed && bit(d3, 28),
                    count_indirect: bit(d3, 30),
                    draw_index_enable: bit(d3, 31),
                    count: w.dw(4)?,
                    count_address: address_from_dwords(w.dw(5)?, w.dw(6)?, 2),
                    stride: w.dw(7)?,
                    initiator: w.dw(8)?,
                }
            }
            Opcode::DRAW_INDEX_MULTI_AUTO => {
                let c = w.dw(2)?;
                Self::IndexMultiAuto {
                    prim_count: w.dw(0)?,
                    initiator: w.dw(1)?,
                    index_offset: bits(c, 0, 15),
                    prim_type: bits(c, 16, 20),
                    index_count: bits(c, 21, 31),
                }
            }
            _ => return Err(w.invalid("not a draw packet")),
        })
    }

    fn opcode(&self) -> Opcode {
        match *self {
            Self::Index2 { .. } => Opcode::DRAW_INDEX_2,
            Self::IndexAuto { .. } => Opcode::DRAW_INDEX_AUTO,
            Self::IndexOffset2 { .. } => Opcode::DRAW_INDEX_OFFSET_2,
            Self::Indirect { indexed: false, .. } => Opcode::DRAW_INDIRECT,
            Self::Indirect { indexed: true, .. } => Opcode::DRAW_INDEX_INDIRECT,
            Self::IndirectMulti { indexed, count_multi, .. } => match (indexed, count_multi) {
                (false, false) => Opcode::DRAW_INDIRECT_MULTI,
                (true, false) => Opcode::DRAW_INDEX_INDIRECT_MULTI,
                (false, true) => Opcode::DRAW_INDIRECT_COUNT_MULTI,
                (true, true) => Opcode::DRAW_INDEX_INDIRECT_COUNT_MULTI,
            },
            Self::IndexMultiAuto { .. } => Opcode::DRAW_INDEX_MULTI_AUTO,
        }
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        match *self {
            Self::Index2 { max_size, index_base, index_count, initiator } => {
                out.extend_from_slice(&[max_size, lo32(index_base), addr_hi(index_base), index_count, initiator])
            }
            Self::IndexAuto { index_count, initiator } => out.extend_from_slice(&[index_count, initiator]),
            Self::IndexOffset2 { max_size, index_offset, index_count, initiator } => {
                out.extend_from_slice(&[max_size, index_offset, index_count, initiator])
            }
            Self::Indirect {
                indexed,
                data_offset,
                base_vtx_loc,
                start_indx_loc,
                start_inst_loc,
                start_indx_enable,
                initiator,
            } => out.extend_from_slice(&[
                data_offset,
                put(base_vtx_loc, 0, 15) | put(start_indx_loc, 16, 31),
                put(start_inst_loc, 0, 15) | put((indexed && start_indx_enable).into(), 28, 28),
                initiator,
            ]),
            Self::IndirectMulti {
                indexed,
                data_offset,
                base_vtx_loc,
                start_indx_loc,
                start_inst_loc,
                draw_index_loc,
                start_indx_enable,
                count_indirect,
                draw_index_enable,
                count,
                count_address,
                stride,
                initiator,
                ..
            } => out.extend_from_slice(&[
                data_offset,
                put(base_vtx_loc, 0, 15) | put(start_indx_loc, 16, 31),
                put(start_inst_loc, 0, 15),
                put(draw_index_loc, 0, 15)
                    | put((indexed && start_indx_enable).into(), 28, 28)
                    | put(count_indirect.into(), 30, 30)
                    | put(draw_index_enable.into(), 31, 31),
                count,
                lo32(count_address),
                addr_hi(count_address),
                stride,
                initiator,
            ]),
            Self::IndexMultiAuto { prim_count, initiator, index_offset, prim_type, index_count } => out
                .extend_from_slice(&[
                    prim_count,
                    initiator,
                    put(index_offset, 0, 15) | put(prim_type, 16, 20) | put(index_count, 21, 31),
                ]),
        }
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        let dec = |name, v: u32| BodyField::new(name, V::Dec(v.into()));
        let hex = |name, v: u32| BodyField::new(name, V::Hex(v.into()));
        let initiator = BodyField::with_layout("DRAW_INITIATOR", V::Hex(self.initiator().into()), DRAW_INITIATOR);
        match *self {
            Self::Index2 { max_size, index_base, index_count, .. } => out.extend([
                dec("MAX_SIZE", max_size),
                BodyField::new("INDEX_BASE", V::Hex(index_base)),
                dec("INDEX_COUNT", index_count),
                initiator,
            ]),
            Self::IndexAuto { index_count, .. } => out.extend([dec("INDEX_COUNT", index_count), initiator]),
            Self::IndexOffset2 { max_size, index_offset, index_count, .. } => out.extend([
                dec("MAX_SIZE", max_size),
                dec("INDEX_OFFSET", index_offset),
                dec("INDEX_COUNT", index_count),
                initiator,
            ]),
            Self::Indirect { data_offset, base_vtx_loc, start_indx_loc, start_inst_loc, .. } => out.extend([
                hex("DATA_OFFSET", data_offset),
                hex("BASE_VTX_LOC", base_vtx_loc),
                hex("START_INDX_LOC", start_indx_loc),
                hex("START_INST_LOC", start_inst_loc),
                initiator,
            ]),
            Self::IndirectMulti {
                data_offset,
                base_vtx_loc,
                start_inst_loc,
                draw_index_loc,
                count_indirect,
                draw_index_enable,
                count,
                count_address,
                stride,
                ..
            } => out.extend([
                hex("DATA_OFFSET", data_offset),
                hex("BASE_VTX_LOC", base_vtx_loc),
                hex("START_INST_LOC", start_inst_loc),
                hex("DRAW_INDEX_LOC", draw_index_loc),
                BodyField::new("COUNT_INDIRECT_ENABLE", V::Flag(count_indirect)),
                BodyField::new("DRAW_INDEX_ENABLE", V::Flag(draw_index_enable)),
                dec("COUNT", count),
                BodyField::new("COUNT_ADDR", V::Hex(count_address)),
                dec("STRIDE", stride),
                initiator,
            ]),
            Self::IndexMultiAuto { prim_count, index_offset, prim_type, index_count, .. } => out.extend([
                dec("PRIM_COUNT", prim_count),
                initiator,
                dec("INDEX_OFFSET", index_offset),
                dec("PRIM_TYPE", prim_type),
                dec("INDEX_COUNT", index_count),
            ]),
        }
    }
}

/// DISPATCH_DIRECT (0x15).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchDirect {
    pub dims: [u32; 3],
    pub initiator: u32,
}

impl<'a> Body<'a> for DispatchDirect {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        Ok(Self { dims: [w.dw(0)?, w.dw(1)?, w.dw(2)?], initiator: w.dw(3)? })
    }

    fn opcode(&self) -> Opcode {
        Opcode::DISPATCH_DIRECT
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&self.dims);
        out.push(self.initiator);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        let [x, y, z] = self.dims;
        out.extend([
            BodyField::new("DIM_X", V::Dec(x.into())),
            BodyField::new("DIM_Y", V::Dec(y.into())),
            BodyField::new("DIM_Z", V::Dec(z.into())),
            BodyField::with_layout("DISPATCH_INITIATOR", V::Hex(self.initiator.into()), DISPATCH_INITIATOR),
        ])
    }
}

/// DISPATCH_INDIRECT (0x16): graphics form (offset from SET_BASE) or compute
/// form (64-bit address), chosen by COUNT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DispatchIndirect {
    Offset { data_offset: u32, initiator: u32 },
    Address { address: u64, initiator: u32 },
}

impl<'a> Body<'a> for DispatchIndirect {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        if w.len() >= 3 {
            Ok(Self::Address { address: address_from_dwords(w.dw(0)?, w.dw(1)?, 2), initiator: w.dw(2)? })
        } else {
            Ok(Self::Offset { data_offset: w.dw(0)?, initiator: w.dw(1)? })
        }
    }

    fn opcode(&self) -> Opcode {
        Opcode::DISPATCH_INDIRECT
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        match *self {
            Self::Offset { data_offset, initiator } => out.extend_from_slice(&[data_offset, initiator]),
            Self::Address { address, initiator } => {
                out.extend_from_slice(&[lo32(address), addr_hi(address), initiator])
            }
        }
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        let (first, initiator) = match *self {
            Self::Offset { data_offset, initiator } => {
                (BodyField::new("DATA_OFFSET", V::Hex(data_offset.into())), initiator)
            }
            Self::Address { address, initiator } => (BodyField::new("ADDR", V::Hex(address)), initiator),
        };
        out.extend([first, BodyField::with_layout("DISPATCH_INITIATOR", V::Hex(initiator.into()), DISPATCH_INITIATOR)])
    }
}

/// SET_BASE (0x11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetBase {
    pub base_index: u32,
    pub address: u64,
}

impl<'a> Body<'a> for SetBase {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        Ok(Self { base_index: bits(w.dw(0)?, 0, 3), address: address_from_dwords(w.dw(1)?, w.dw(2)?, 0) })
    }

    fn opcode(&self) -> Opcode {
        Opcode::SET_BASE
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[put(self.base_index, 0, 3), lo32(self.address), addr_hi(self.address)]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("BASE_INDEX", V::Dec(self.base_index.into())),
            BodyField::new("ADDRESS", V::Hex(self.address)),
        ])
    }
}

/// INDEX_BASE (0x26): the index buffer address of the indexed draws that
/// take an offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexBase {
    /// Byte address (2-byte aligned).
    pub address: u64,
    /// gfx7 BASE_SELECT, dw1 \[31:30\].
    pub base_select: u32,
    /// dw1 \[29:16\], kept as they are (gfx10 drivers sign-extend the
    /// address into them).
    pub high_bits: u32,
}

impl<'a> Body<'a> for IndexBase {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let hi = w.dw(1)?;
        Ok(Self {
            address: address_from_dwords(w.dw(0)?, bits(hi, 0, 15), 1),
            base_select: bits(hi, 30, 31),
            high_bits: bits(hi, 16, 29),
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::INDEX_BASE
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            lo32(self.address),
            put(hi32(self.address), 0, 15) | put(self.high_bits, 16, 29) | put(self.base_select, 30, 31),
        ]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("INDEX_BASE", V::Hex(self.address)),
            BodyField::new("BASE_SELECT", V::Dec(self.base_select.into())),
        ])
    }
}

/// INDEX_BUFFER_SIZE (0x13): the index buffer's size in indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexBufferSize {
    pub index_count: u32,
}

impl<'a> Body<'a> for IndexBufferSize {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        Ok(Self { index_count: Words::new(opcode, body).dw(0)? })
    }

    fn opcode(&self) -> Opcode {
        Opcode::INDEX_BUFFER_SIZE
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.push(self.index_count);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([BodyField::new("INDEX_COUNT", V::Dec(self.index_count.into()))])
    }
}

/// INDEX_TYPE (0x2A): the VGT_DMA_INDEX_TYPE value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexType {
    pub index_type: u32,
}

impl<'a> Body<'a> for IndexType {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        Ok(Self { index_type: Words::new(opcode, body).dw(0)? })
    }

    fn opcode(&self) -> Opcode {
        Opcode::INDEX_TYPE
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.push(self.index_type);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([BodyField::with_layout(
            "INDEX_TYPE",
            V::Dec(self.index_type.into()),
            Layout::Register("VGT_DMA_INDEX_TYPE"),
        )])
    }
}

/// NUM_INSTANCES (0x2F): the VGT_NUM_INSTANCES value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumInstances {
    pub instances: u32,
}

impl<'a> Body<'a> for NumInstances {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        Ok(Self { instances: Words::new(opcode, body).dw(0)? })
    }

    fn opcode(&self) -> Opcode {
        Opcode::NUM_INSTANCES
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.push(self.instances);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([BodyField::new("NUM_INSTANCES", V::Dec(self.instances.into()))])
    }
}

/// STRMOUT_BUFFER_UPDATE (0x34).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StrmoutBufferUpdate {
    pub update_memory: bool,
    pub source_select: u32,
    pub data_in_bytes: bool,
    pub buffer: u32,
    pub dst: u64,
    /// OFFSET (SOURCE_SELECT 0) in the low dword, or the source address.
    pub src: u64,
}

impl<'a> Body<'a> for StrmoutBufferUpdate {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let d0 = w.dw(0)?;
        let source_select = bits(d0, 1, 2);
        Ok(Self {
            update_memory: bit(d0, 0),
            source_select,
            data_in_bytes: bit(d0, 7),
            buffer: bits(d0, 8, 9),
            dst: address_from_dwords(w.dw(1)?, w.dw(2)?, 2),
            src: if source_select == 2 { address_from_dwords(w.dw(3)?, w.dw(4)?, 2) } else { u64::from(w.dw(3)?) },
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::STRMOUT_BUFFER_UPDATE
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            put(self.update_memory.into(), 0, 0)
                | put(self.source_select, 1, 2)
                | put(self.data_in_bytes.into(), 7, 7)
                | put(self.buffer, 8, 9),
            lo32(self.dst),
            addr_hi(self.dst),
            lo32(self.src),
            addr_hi(self.src),
        ]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("BUFFER", V::Dec(self.buffer.into())),
            BodyField::new("SOURCE_SELECT", V::Dec(self.source_select.into())),
            BodyField::new("UPDATE_MEMORY", V::Flag(self.update_memory)),
            BodyField::new("DST", V::Hex(self.dst)),
            BodyField::new("SRC", V::Hex(self.src)),
        ])
    }
}

super::display_from_fields!(
    DrawBody,
    DispatchDirect,
    DispatchIndirect,
    SetBase,
    IndexBase,
    IndexBufferSize,
    IndexType,
    NumInstances,
    StrmoutBufferUpdate
);
