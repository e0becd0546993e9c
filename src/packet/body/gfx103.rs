//! The packets whose semantics came with the gfx10.3 reference sections:
//! the indirect register loaders SET_CONTEXT_REG_INDIRECT and
//! SET_SH_REG_OFFSET, the mesh/task dispatches, the PS5 multi-instance draw
//! (0x3A), and the packets only decoded (GET_LOD_STATS, PERFMON_CONTROL,
//! DISPATCH_DRAW(_PREAMBLE), DRAW_PREAMBLE).

use super::{addr_hi, bit, bits, lo32, put, Body, BodyError, Words};
use crate::memory::address_from_dwords;
use crate::packet::field::{BodyField, FieldValue as V, Layout};
use crate::packet::Opcode;

const DRAW_INITIATOR: Layout = Layout::Register("VGT_DRAW_INITIATOR");
const DISPATCH_INITIATOR: Layout = Layout::Register("COMPUTE_DISPATCH_INITIATOR");

/// SET_CONTEXT_REG_INDIRECT (0x73, packets.md §2 and §3.2): context
/// registers from REG_OFFSET on, each loaded from the patch table (SET_BASE
/// index 0) at the dword offset the packet gives for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetContextRegIndirect<'a> {
    /// First register, relative to 0xA000.
    pub reg_offset: u32,
    /// One dword offset into the patch table per register.
    pub table_offsets: &'a [u32],
}

impl<'a> Body<'a> for SetContextRegIndirect<'a> {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        Ok(Self { reg_offset: bits(w.dw(0)?, 0, 15), table_offsets: w.from(1) })
    }

    fn opcode(&self) -> Opcode {
        Opcode::SET_CONTEXT_REG_INDIRECT
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.push(put(self.reg_offset, 0, 15));
        out.extend_from_slice(self.table_offsets);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("REG", V::Register(0xA000 + self.reg_offset)),
            BodyField::new("COUNT", V::Dec(self.table_offsets.len() as u64)),
        ]);
        if !self.table_offsets.is_empty() {
            out.push(BodyField::new("TABLE_OFFSETS", V::HexList(self.table_offsets)));
        }
    }
}

/// SET_SH_REG_OFFSET (0x77, §3.42).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetShRegOffset {
    /// First SH register, relative to 0x2C00.
    pub reg_offset: u32,
    /// 0 normal (IB_OFFSET), 1 data_indirect_2dw_256b, 2 data_indirect_1dw.
    pub index: u32,
    /// IB_OFFSET (INDEX 0: dwords into the current IB) or DATA_OFFSET
    /// (bytes from the SET_BASE index-5 base).
    pub offset: u32,
    /// DRIVER_DATA, dw2 \[31:16\] (`None` when the packet has no dw2).
    pub driver_data: Option<u32>,
}

impl<'a> Body<'a> for SetShRegOffset {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let d0 = w.dw(0)?;
        Ok(Self {
            reg_offset: bits(d0, 0, 15),
            index: bits(d0, 30, 31),
            offset: w.dw(1)?,
            driver_data: w.get(2).map(|d| bits(d, 16, 31)),
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::SET_SH_REG_OFFSET
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[put(self.reg_offset, 0, 15) | put(self.index, 30, 31), self.offset]);
        if let Some(d) = self.driver_data {
            out.push(put(d, 16, 31));
        }
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        let (index, offset) = match self.index {
            0 => ("normal", "IB_OFFSET"),
            1 => ("data_indirect_2dw_256b", "DATA_OFFSET"),
            2 => ("data_indirect_1dw", "DATA_OFFSET"),
            _ => ("reserved", "OFFSET"),
        };
        out.extend([
            BodyField::new("REG", V::Register(0x2C00 + self.reg_offset)),
            BodyField::new("INDEX", V::Selector(self.index, index)),
            BodyField::new(offset, V::Hex(self.offset.into())),
            BodyField::new("DRIVER_DATA", V::Hex(self.driver_data.unwrap_or(0).into())),
        ])
    }
}

/// DISPATCH_MESH_INDIRECT_MULTI (0x4C, graphics, §3.45): mesh-shader
/// dispatches from records of three group counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchMeshIndirectMulti {
    /// Byte offset from the SET_BASE index-1 (draw) base.
    pub data_offset: u32,
    /// SH register (from 0x2C00) receiving X, Y, Z; 0 = none.
    pub xyz_dim_loc: u32,
    /// SH register receiving the draw index; 0 = none.
    pub draw_index_loc: u32,
    pub use_vgprs: bool,
    pub thread_trace_marker: bool,
    pub count_indirect: bool,
    pub draw_index_enable: bool,
    /// Draw count, or the maximum with COUNT_INDIRECT_ENABLE.
    pub count: u32,
    pub count_address: u64,
    /// Bytes between records.
    pub stride: u32,
    pub initiator: u32,
}

impl<'a> Body<'a> for DispatchMeshIndirectMulti {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let locs = w.dw(1)?;
        let flags = w.dw(2)?;
        Ok(Self {
            data_offset: w.dw(0)?,
            xyz_dim_loc: bits(locs, 0, 15),
            draw_index_loc: bits(locs, 16, 31),
            use_vgprs: bit(flags, 28),
            thread_trace_marker: bit(flags, 29),
            count_indirect: bit(flags, 30),
            draw_index_enable: bit(flags, 31),
            count: w.dw(3)?,
            count_address: address_from_dwords(w.dw(4)?, w.dw(5)?, 2),
            stride: w.dw(6)?,
            initiator: w.dw(7)?,
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::DISPATCH_MESH_INDIRECT_MULTI
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            self.data_offset,
            put(self.xyz_dim_loc, 0, 15) | put(self.draw_index_loc, 16, 31),
            put(self.use_vgprs.into(), 28, 28)
                | put(self.thread_trace_marker.into(), 29, 29)
                | put(self.count_indirect.into(), 30, 30)
                | put(self.draw_index_enable.into(), 31, 31),
            self.count,
            lo32(self.count_address),
            addr_hi(self.count_address),
            self.stride,
            self.initiator,
        ]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("DATA_OFFSET", V::Hex(self.data_offset.into())),
            BodyField::new("XYZ_DIM_LOC", V::Hex(self.xyz_dim_loc.into())),
            BodyField::new("DRAW_INDEX_LOC", V::Hex(self.draw_index_loc.into())),
            BodyField::new("USE_VGPRS", V::Flag(self.use_vgprs)),
            BodyField::new("THREAD_TRACE_MARKER", V::Flag(self.thread_trace_marker)),
            BodyField::new("COUNT_INDIRECT_ENABLE", V::Flag(self.count_indirect)),
            BodyField::new("DRAW_INDEX_ENABLE", V::Flag(self.draw_index_enable)),
            BodyField::new("COUNT", V::Dec(self.count.into())),
            BodyField::new("COUNT_ADDR", V::Hex(self.count_address)),
            BodyField::new("STRIDE", V::Dec(self.stride.into())),
            BodyField::with_layout("DRAW_INITIATOR", V::Hex(self.initiator.into()), DRAW_INITIATOR),
        ])
    }
}

/// DISPATCH_TASKMESH_GFX (0x4D, graphics, §3.45): the mesh half of a
/// task/mesh dispatch; its group counts come from the task ring the compute
/// queue's task dispatch fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchTaskmeshGfx {
    /// SH register (from 0x2C00) receiving X, Y, Z; 0 = none.
    pub xyz_dim_loc: u32,
    /// SH register receiving the task ring entry; 0 = none.
    pub ring_entry_loc: u32,
    pub thread_trace_marker: bool,
    pub initiator: u32,
}

impl<'a> Body<'a> for DispatchTaskmeshGfx {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let locs = w.dw(0)?;
        Ok(Self {
            xyz_dim_loc: bits(locs, 0, 15),
            ring_entry_loc: bits(locs, 16, 31),
            thread_trace_marker: bit(w.dw(1)?, 31),
            initiator: w.dw(2)?,
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::DISPATCH_TASKMESH_GFX
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            put(self.xyz_dim_loc, 0, 15) | put(self.ring_entry_loc, 16, 31),
            put(self.thread_trace_marker.into(), 31, 31),
            self.initiator,
        ]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("XYZ_DIM_LOC", V::Hex(self.xyz_dim_loc.into())),
            BodyField::new("RING_ENTRY_LOC", V::Hex(self.ring_entry_loc.into())),
            BodyField::new("THREAD_TRACE_MARKER", V::Flag(self.thread_trace_marker)),
            BodyField::with_layout("DRAW_INITIATOR", V::Hex(self.initiator.into()), DRAW_INITIATOR),
        ])
    }
}

/// DISPATCH_TASK_STATE_INIT (0xA9, §3.45): the task control buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchTaskStateInit {
    /// CONTROL_BUF_ADDR (256-byte aligned).
    pub control_buffer: u64,
}

impl<'a> Body<'a> for DispatchTaskStateInit {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        Ok(Self { control_buffer: address_from_dwords(w.dw(0)?, w.dw(1)?, 8) })
    }

    fn opcode(&self) -> Opcode {
        Opcode::DISPATCH_TASK_STATE_INIT
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[lo32(self.control_buffer), addr_hi(self.control_buffer)]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([BodyField::new("CONTROL_BUF_ADDR", V::Hex(self.control_buffer))])
    }
}

/// DISPATCH_TASKMESH_DIRECT_ACE (0xAA, compute, §3.45): the task half of a
/// task/mesh dispatch, with its group counts in the packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchTaskmeshDirectAce {
    pub dims: [u32; 3],
    pub initiator: u32,
    /// SH register (from 0x2C00) receiving the task ring entry; 0 = none.
    pub ring_entry_loc: u32,
}

impl<'a> Body<'a> for DispatchTaskmeshDirectAce {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        Ok(Self { dims: [w.dw(0)?, w.dw(1)?, w.dw(2)?], initiator: w.dw(3)?, ring_entry_loc: bits(w.dw(4)?, 0, 15) })
    }

    fn opcode(&self) -> Opcode {
        Opcode::DISPATCH_TASKMESH_DIRECT_ACE
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&self.dims);
        out.extend_from_slice(&[self.initiator, put(self.ring_entry_loc, 0, 15)]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        let [x, y, z] = self.dims;
        out.extend([
            BodyField::new("DIM_X", V::Dec(x.into())),
            BodyField::new("DIM_Y", V::Dec(y.into())),
            BodyField::new("DIM_Z", V::Dec(z.into())),
            BodyField::with_layout("DISPATCH_INITIATOR", V::Hex(self.initiator.into()), DISPATCH_INITIATOR),
            BodyField::new("RING_ENTRY_LOC", V::Hex(self.ring_entry_loc.into())),
        ])
    }
}

/// DISPATCH_TASKMESH_INDIRECT_MULTI_ACE (0xAD, compute, §3.45): task
/// dispatches from records of three group counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchTaskmeshIndirectMultiAce {
    /// Address of the first record.
    pub data_address: u64,
    pub ring_entry_loc: u32,
    pub count_indirect: bool,
    pub dispatch_index_enable: bool,
    pub xyz_dim_enable: bool,
    /// SH register (from 0x2C00) receiving the dispatch index.
    pub dispatch_index_loc: u32,
    /// SH register (from 0x2C00) receiving X, Y, Z.
    pub xyz_dim_loc: u32,
    pub count: u32,
    pub count_address: u64,
    pub stride: u32,
    pub initiator: u32,
}

impl<'a> Body<'a> for DispatchTaskmeshIndirectMultiAce {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let flags = w.dw(3)?;
        Ok(Self {
            data_address: address_from_dwords(w.dw(0)?, w.dw(1)?, 2),
            ring_entry_loc: bits(w.dw(2)?, 0, 15),
            count_indirect: bit(flags, 1),
            dispatch_index_enable: bit(flags, 2),
            xyz_dim_enable: bit(flags, 3),
            dispatch_index_loc: bits(flags, 16, 31),
            xyz_dim_loc: bits(w.dw(4)?, 0, 15),
            count: w.dw(5)?,
            count_address: address_from_dwords(w.dw(6)?, w.dw(7)?, 2),
            stride: w.dw(8)?,
            initiator: w.dw(9)?,
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::DISPATCH_TASKMESH_INDIRECT_MULTI_ACE
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            lo32(self.data_address),
            addr_hi(self.data_address),
            put(self.ring_entry_loc, 0, 15),
            put(self.count_indirect.into(), 1, 1)
                | put(self.dispatch_index_enable.into(), 2, 2)
                | put(self.xyz_dim_enable.into(), 3, 3)
                | put(self.dispatch_index_loc, 16, 31),
            put(self.xyz_dim_loc, 0, 15),
            self.count,
            lo32(self.count_address),
            addr_hi(self.count_address),
            self.stride,
            self.initiator,
        ]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("DATA_ADDR", V::Hex(self.data_address)),
            BodyField::new("RING_ENTRY_LOC", V::Hex(self.ring_entry_loc.into())),
            BodyField::new("COUNT_INDIRECT_ENABLE", V::Flag(self.count_indirect)),
            BodyField::new("DISPATCH_INDEX_ENABLE", V::Flag(self.dispatch_index_enable)),
            BodyField::new("XYZ_DIM_ENABLE", V::Flag(self.xyz_dim_enable)),
            BodyField::new("DISPATCH_INDEX_LOC", V::Hex(self.dispatch_index_loc.into())),
            BodyField::new("XYZ_DIM_LOC", V::Hex(self.xyz_dim_loc.into())),
            BodyField::new("COUNT", V::Dec(self.count.into())),
            BodyField::new("COUNT_ADDR", V::Hex(self.count_address)),
            BodyField::new("STRIDE", V::Dec(self.stride.into())),
            BodyField::with_layout("DISPATCH_INITIATOR", V::Hex(self.initiator.into()), DISPATCH_INITIATOR),
        ])
    }
}

/// 0x3A in the 9-dword form PS5 streams carry (§6.1): an indexed,
/// instanced draw. Other lengths have no defined layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrawIndexMultiInst {
    pub index_count: u32,
    /// Index buffer address (2-byte aligned).
    pub index_address: u64,
    pub max_instance_count: u32,
    /// OBJECT_ID address (not used by the draw).
    pub object_id_address: u64,
    pub instance_count: u32,
    /// Draw-initiator bits (the flags dword).
    pub flags: u32,
}

impl DrawIndexMultiInst {
    /// Body dwords of the only form decoded (COUNT = 7).
    pub const BODY_DWORDS: usize = 8;
}

impl<'a> Body<'a> for DrawIndexMultiInst {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        if w.len() != Self::BODY_DWORDS {
            return Err(w.invalid("only the 9-dword form (COUNT = 7) is defined"));
        }
        Ok(Self {
            index_count: w.dw(0)?,
            index_address: address_from_dwords(w.dw(1)?, w.dw(2)?, 1),
            max_instance_count: w.dw(3)?,
            object_id_address: address_from_dwords(w.dw(4)?, w.dw(5)?, 0),
            instance_count: w.dw(6)?,
            flags: w.dw(7)?,
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::DRAW_INDEX_MULTI_INST
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            self.index_count,
            lo32(self.index_address),
            addr_hi(self.index_address),
            self.max_instance_count,
            lo32(self.object_id_address),
            addr_hi(self.object_id_address),
            self.instance_count,
            self.flags,
        ]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("INDEX_COUNT", V::Dec(self.index_count.into())),
            BodyField::new("INDEX_ADDR", V::Hex(self.index_address)),
            BodyField::new("MAX_INSTANCE_COUNT", V::Dec(self.max_instance_count.into())),
            BodyField::new("OBJECT_ID_ADDR", V::Hex(self.object_id_address)),
            BodyField::new("INSTANCE_COUNT", V::Dec(self.instance_count.into())),
            BodyField::with_layout("FLAGS", V::Hex(self.flags.into()), DRAW_INITIATOR),
        ])
    }
}

/// GET_LOD_STATS (0x8E, §3.44): texture-LOD feedback; decoded, not emulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GetLodStats {
    /// BU_SIZE in bytes.
    pub bu_size: u32,
    /// BASE (64-byte aligned).
    pub base: u64,
    pub interval: u32,
    pub reset_count: u32,
    pub reset_force: bool,
    pub report_and_reset: bool,
    pub cache_policy: u32,
}

impl<'a> Body<'a> for GetLodStats {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let d3 = w.dw(3)?;
        Ok(Self {
            bu_size: w.dw(0)?,
            base: address_from_dwords(w.dw(1)?, w.dw(2)?, 6),
            interval: bits(d3, 2, 9),
            reset_count: bits(d3, 10, 17),
            reset_force: bit(d3, 18),
            report_and_reset: bit(d3, 19),
            cache_policy: bits(d3, 28, 29),
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::GET_LOD_STATS
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            self.bu_size,
            lo32(self.base),
            addr_hi(self.base),
            put(self.interval, 2, 9)
                | put(self.reset_count, 10, 17)
                | put(self.reset_force.into(), 18, 18)
                | put(self.report_and_reset.into(), 19, 19)
                | put(self.cache_policy, 28, 29),
        ]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("BU_SIZE", V::Dec(self.bu_size.into())),
            BodyField::new("BASE", V::Hex(self.base)),
            BodyField::new("INTERVAL", V::Dec(self.interval.into())),
            BodyField::new("RESET_CNT", V::Dec(self.reset_count.into())),
            BodyField::new("RESET_FORCE", V::Flag(self.reset_force)),
            BodyField::new("REPORT_AND_RESET", V::Flag(self.report_and_reset)),
            BodyField::new("CACHE_POLICY", V::Dec(self.cache_policy.into())),
        ])
    }
}

/// DISPATCH_DRAW_PREAMBLE(_ACE) (0x8C, §3.45): decoded by position (the
/// reference names the dwords, not their bits), not emulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchDrawPreamble {
    /// KRB_SIZE / KRB_FREE_OFFSET / KRB_OFFSET.
    pub krb: u32,
    /// BUF_TYPE, NOT_EOP.
    pub control: u32,
    pub irb_address: u64,
    pub irb_wrap_size: u32,
}

impl<'a> Body<'a> for DispatchDrawPreamble {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        Ok(Self {
            krb: w.dw(0)?,
            control: w.dw(1)?,
            irb_address: address_from_dwords(w.dw(2)?, w.dw(3)?, 0),
            irb_wrap_size: w.dw(4)?,
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::DISPATCH_DRAW_PREAMBLE
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            self.krb,
            self.control,
            lo32(self.irb_address),
            addr_hi(self.irb_address),
            self.irb_wrap_size,
        ]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("KRB", V::Hex(self.krb.into())),
            BodyField::new("CONTROL", V::Hex(self.control.into())),
            BodyField::new("IRB_ADDR", V::Hex(self.irb_address)),
            BodyField::new("IRB_WRAP_SIZE", V::Dec(self.irb_wrap_size.into())),
        ])
    }
}

/// DISPATCH_DRAW(_ACE) (0x8D, §3.45): decoded, not emulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchDraw {
    pub index_offset: u32,
    /// dw1 as it is; PRIM_TYPE is its bits \[20:16\].
    pub prim_word: u32,
    pub index_count: u32,
    /// VRB_LOC_SGPR / USE_VRB / MAX_INDEX_MULTIPLE_MINUS_1 /
    /// MIN_POLL_INTERVALS.
    pub vrb_control: u32,
    pub initiator: u32,
}

impl<'a> Body<'a> for DispatchDraw {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        Ok(Self {
            index_offset: w.dw(0)?,
            prim_word: w.dw(1)?,
            index_count: w.dw(2)?,
            vrb_control: w.dw(3)?,
            initiator: w.dw(4)?,
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::DISPATCH_DRAW
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[self.index_offset, self.prim_word, self.index_count, self.vrb_control, self.initiator]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("INDEX_OFFSET", V::Dec(self.index_offset.into())),
            BodyField::new("PRIM_TYPE", V::Dec(bits(self.prim_word, 16, 20).into())),
            BodyField::new("INDEX_COUNT", V::Dec(self.index_count.into())),
            BodyField::new("VRB_CONTROL", V::Hex(self.vrb_control.into())),
            BodyField::with_layout("DRAW_INITIATOR", V::Hex(self.initiator.into()), DRAW_INITIATOR),
        ])
    }
}

/// DRAW_PREAMBLE (0x36, gfx7/8, §2): the three registers it carries;
/// decoded, not emulated on gfx10.3.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrawPreamble {
    pub prim_type: u32,
    pub ia_multi_vgt_param: u32,
    pub ls_hs_config: u32,
}

impl<'a> Body<'a> for DrawPreamble {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        Ok(Self { prim_type: w.dw(0)?, ia_multi_vgt_param: w.dw(1)?, ls_hs_config: w.dw(2)? })
    }

    fn opcode(&self) -> Opcode {
        Opcode::DRAW_PREAMBLE
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[self.prim_type, self.ia_multi_vgt_param, self.ls_hs_config]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("VGT_PRIMITIVE_TYPE", V::Hex(self.prim_type.into())),
            BodyField::new("IA_MULTI_VGT_PARAM", V::Hex(self.ia_multi_vgt_param.into())),
            BodyField::new("VGT_LS_HS_CONFIG", V::Hex(self.ls_hs_config.into())),
        ])
    }
}

/// PERFMON_CONTROL (0x54): named by the reference without a layout; its
/// dwords as they are, decoded, not emulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerfmonControl<'a> {
    pub dwords: &'a [u32],
}

impl<'a> Body<'a> for PerfmonControl<'a> {
    fn decode_body(_: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        Ok(Self { dwords: body })
    }

    fn opcode(&self) -> Opcode {
        Opcode::PERFMON_CONTROL
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(self.dwords);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([BodyField::new("DWORDS", V::HexList(self.dwords))])
    }
}

super::display_from_fields!(
    SetContextRegIndirect<'_>,
    SetShRegOffset,
    DispatchMeshIndirectMulti,
    DispatchTaskmeshGfx,
    DispatchTaskStateInit,
    DispatchTaskmeshDirectAce,
    DispatchTaskmeshIndirectMultiAce,
    DrawIndexMultiInst,
    GetLodStats,
    DispatchDrawPreamble,
    DispatchDraw,
    DrawPreamble,
    PerfmonControl<'_>,
);
