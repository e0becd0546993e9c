//! Typed bodies of the packets added with the gfx10.3 semantics: the
//! register loaders SET_CONTEXT_REG_INDIRECT and SET_SH_REG_OFFSET, the
//! mesh/task dispatches, the PS5 multi-instance draw (0x3A), and the packets
//! that are decoded but not emulated (GET_LOD_STATS, PERFMON_CONTROL,
//! DISPATCH_DRAW(_PREAMBLE), DRAW_PREAMBLE). Same style as
//! [`super::body`]: `decode` reads the body dwords, `Display` prints the
//! fields by name. Re-exported from [`super::body`].

use std::fmt;

use super::body::BodyError;
use super::Packet;
use crate::memory::address_from_dwords;

#[inline]
fn bits(value: u32, lo: u32, hi: u32) -> u32 {
    (value >> lo) & (u32::MAX >> (31 - (hi - lo)))
}

#[inline]
fn bit(value: u32, n: u32) -> bool {
    (value >> n) & 1 != 0
}

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

impl<'a> SetContextRegIndirect<'a> {
    pub fn decode(p: &Packet<'a>) -> Result<Self, BodyError> {
        Ok(Self { reg_offset: bits(p.dw(0)?, 0, 15), table_offsets: p.body.get(1..).unwrap_or(&[]) })
    }
}

impl fmt::Display for SetContextRegIndirect<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "REG_OFFSET={:#x} COUNT={}", self.reg_offset, self.table_offsets.len())?;
        if !self.table_offsets.is_empty() {
            let shown: Vec<String> = self.table_offsets.iter().take(8).map(|o| format!("{o:#x}")).collect();
            let more = if self.table_offsets.len() > 8 { ",..." } else { "" };
            write!(f, " TABLE_OFFSETS={}{more}", shown.join(","))?;
        }
        Ok(())
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
    /// DRIVER_DATA, dw2 \[31:16\] (0 when the packet has no dw2).
    pub driver_data: u32,
}

impl SetShRegOffset {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let d0 = p.dw(0)?;
        Ok(Self {
            reg_offset: bits(d0, 0, 15),
            index: bits(d0, 30, 31),
            offset: p.dw(1)?,
            driver_data: p.body.get(2).map_or(0, |d| bits(*d, 16, 31)),
        })
    }
}

impl fmt::Display for SetShRegOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (index, offset) = match self.index {
            0 => ("normal", "IB_OFFSET"),
            1 => ("data_indirect_2dw_256b", "DATA_OFFSET"),
            2 => ("data_indirect_1dw", "DATA_OFFSET"),
            _ => ("reserved", "OFFSET"),
        };
        write!(
            f,
            "REG_OFFSET={:#x} INDEX={}({index}) {offset}={:#x} DRIVER_DATA={:#x}",
            self.reg_offset, self.index, self.offset, self.driver_data
        )
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

impl DispatchMeshIndirectMulti {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let locs = p.dw(1)?;
        let flags = p.dw(2)?;
        Ok(Self {
            data_offset: p.dw(0)?,
            xyz_dim_loc: bits(locs, 0, 15),
            draw_index_loc: bits(locs, 16, 31),
            use_vgprs: bit(flags, 28),
            thread_trace_marker: bit(flags, 29),
            count_indirect: bit(flags, 30),
            draw_index_enable: bit(flags, 31),
            count: p.dw(3)?,
            count_address: address_from_dwords(p.dw(4)?, p.dw(5)?, 2),
            stride: p.dw(6)?,
            initiator: p.dw(7)?,
        })
    }
}

impl fmt::Display for DispatchMeshIndirectMulti {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DATA_OFFSET={:#x} XYZ_DIM_LOC={:#x} DRAW_INDEX_LOC={:#x} USE_VGPRS={} COUNT_INDIRECT_ENABLE={} \
             DRAW_INDEX_ENABLE={} COUNT={} COUNT_ADDR={:#x} STRIDE={} DRAW_INITIATOR={:#x}",
            self.data_offset,
            self.xyz_dim_loc,
            self.draw_index_loc,
            self.use_vgprs as u8,
            self.count_indirect as u8,
            self.draw_index_enable as u8,
            self.count,
            self.count_address,
            self.stride,
            self.initiator
        )
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

impl DispatchTaskmeshGfx {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let locs = p.dw(0)?;
        Ok(Self {
            xyz_dim_loc: bits(locs, 0, 15),
            ring_entry_loc: bits(locs, 16, 31),
            thread_trace_marker: bit(p.dw(1)?, 31),
            initiator: p.dw(2)?,
        })
    }
}

impl fmt::Display for DispatchTaskmeshGfx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "XYZ_DIM_LOC={:#x} RING_ENTRY_LOC={:#x} THREAD_TRACE_MARKER={} DRAW_INITIATOR={:#x}",
            self.xyz_dim_loc, self.ring_entry_loc, self.thread_trace_marker as u8, self.initiator
        )
    }
}

/// DISPATCH_TASK_STATE_INIT (0xA9, §3.45): the task control buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchTaskStateInit {
    /// CONTROL_BUF_ADDR (256-byte aligned).
    pub control_buffer: u64,
}

impl DispatchTaskStateInit {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        Ok(Self { control_buffer: address_from_dwords(p.dw(0)?, p.dw(1)?, 8) })
    }
}

impl fmt::Display for DispatchTaskStateInit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CONTROL_BUF_ADDR={:#x}", self.control_buffer)
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

impl DispatchTaskmeshDirectAce {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        Ok(Self { dims: [p.dw(0)?, p.dw(1)?, p.dw(2)?], initiator: p.dw(3)?, ring_entry_loc: bits(p.dw(4)?, 0, 15) })
    }
}

impl fmt::Display for DispatchTaskmeshDirectAce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [x, y, z] = self.dims;
        write!(
            f,
            "DIM_X={x} DIM_Y={y} DIM_Z={z} DISPATCH_INITIATOR={:#x} RING_ENTRY_LOC={:#x}",
            self.initiator, self.ring_entry_loc
        )
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

impl DispatchTaskmeshIndirectMultiAce {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let flags = p.dw(3)?;
        Ok(Self {
            data_address: address_from_dwords(p.dw(0)?, p.dw(1)?, 2),
            ring_entry_loc: bits(p.dw(2)?, 0, 15),
            count_indirect: bit(flags, 1),
            dispatch_index_enable: bit(flags, 2),
            xyz_dim_enable: bit(flags, 3),
            dispatch_index_loc: bits(flags, 16, 31),
            xyz_dim_loc: bits(p.dw(4)?, 0, 15),
            count: p.dw(5)?,
            count_address: address_from_dwords(p.dw(6)?, p.dw(7)?, 2),
            stride: p.dw(8)?,
            initiator: p.dw(9)?,
        })
    }
}

impl fmt::Display for DispatchTaskmeshIndirectMultiAce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DATA_ADDR={:#x} RING_ENTRY_LOC={:#x} COUNT_INDIRECT_ENABLE={} DISPATCH_INDEX_ENABLE={} \
             XYZ_DIM_ENABLE={} DISPATCH_INDEX_LOC={:#x} XYZ_DIM_LOC={:#x} COUNT={} COUNT_ADDR={:#x} STRIDE={} \
             DISPATCH_INITIATOR={:#x}",
            self.data_address,
            self.ring_entry_loc,
            self.count_indirect as u8,
            self.dispatch_index_enable as u8,
            self.xyz_dim_enable as u8,
            self.dispatch_index_loc,
            self.xyz_dim_loc,
            self.count,
            self.count_address,
            self.stride,
            self.initiator
        )
    }
}

/// 0x3A in the 9-dword form PS5 streams carry (§6.1): an indexed,
/// instanced draw.
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

    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        if p.body.len() != Self::BODY_DWORDS {
            return Err(BodyError::Invalid {
                opcode: p.opcode(),
                what: "only the 9-dword form (COUNT = 7) is defined",
            });
        }
        Ok(Self {
            index_count: p.dw(0)?,
            index_address: address_from_dwords(p.dw(1)?, p.dw(2)?, 1),
            max_instance_count: p.dw(3)?,
            object_id_address: address_from_dwords(p.dw(4)?, p.dw(5)?, 0),
            instance_count: p.dw(6)?,
            flags: p.dw(7)?,
        })
    }
}

impl fmt::Display for DrawIndexMultiInst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "INDEX_COUNT={} INDEX_ADDR={:#x} MAX_INSTANCE_COUNT={} OBJECT_ID_ADDR={:#x} INSTANCE_COUNT={} FLAGS={:#x}",
            self.index_count,
            self.index_address,
            self.max_instance_count,
            self.object_id_address,
            self.instance_count,
            self.flags
        )
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

impl GetLodStats {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let d3 = p.dw(3)?;
        Ok(Self {
            bu_size: p.dw(0)?,
            base: address_from_dwords(p.dw(1)?, p.dw(2)?, 6),
            interval: bits(d3, 2, 9),
            reset_count: bits(d3, 10, 17),
            reset_force: bit(d3, 18),
            report_and_reset: bit(d3, 19),
            cache_policy: bits(d3, 28, 29),
        })
    }
}

impl fmt::Display for GetLodStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "BU_SIZE={} BASE={:#x} INTERVAL={} RESET_CNT={} RESET_FORCE={} REPORT_AND_RESET={} CACHE_POLICY={}",
            self.bu_size,
            self.base,
            self.interval,
            self.reset_count,
            self.reset_force as u8,
            self.report_and_reset as u8,
            self.cache_policy
        )
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

impl DispatchDrawPreamble {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        Ok(Self {
            krb: p.dw(0)?,
            control: p.dw(1)?,
            irb_address: address_from_dwords(p.dw(2)?, p.dw(3)?, 0),
            irb_wrap_size: p.dw(4)?,
        })
    }
}

impl fmt::Display for DispatchDrawPreamble {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "KRB={:#x} CONTROL={:#x} IRB_ADDR={:#x} IRB_WRAP_SIZE={}",
            self.krb, self.control, self.irb_address, self.irb_wrap_size
        )
    }
}

/// DISPATCH_DRAW(_ACE) (0x8D, §3.45): decoded, not emulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchDraw {
    pub index_offset: u32,
    pub prim_type: u32,
    pub index_count: u32,
    /// VRB_LOC_SGPR / USE_VRB / MAX_INDEX_MULTIPLE_MINUS_1 /
    /// MIN_POLL_INTERVALS.
    pub vrb_control: u32,
    pub initiator: u32,
}

impl DispatchDraw {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        Ok(Self {
            index_offset: p.dw(0)?,
            prim_type: bits(p.dw(1)?, 16, 20),
            index_count: p.dw(2)?,
            vrb_control: p.dw(3)?,
            initiator: p.dw(4)?,
        })
    }
}

impl fmt::Display for DispatchDraw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "INDEX_OFFSET={} PRIM_TYPE={} INDEX_COUNT={} VRB_CONTROL={:#x} DRAW_INITIATOR={:#x}",
            self.index_offset, self.prim_type, self.index_count, self.vrb_control, self.initiator
        )
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

impl DrawPreamble {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        Ok(Self { prim_type: p.dw(0)?, ia_multi_vgt_param: p.dw(1)?, ls_hs_config: p.dw(2)? })
    }
}

impl fmt::Display for DrawPreamble {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "VGT_PRIMITIVE_TYPE={:#x} IA_MULTI_VGT_PARAM={:#x} VGT_LS_HS_CONFIG={:#x}",
            self.prim_type, self.ia_multi_vgt_param, self.ls_hs_config
        )
    }
}

/// A body the reference names but does not lay out (PERFMON_CONTROL): its
/// dwords by position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawDwords<'a> {
    pub dwords: &'a [u32],
}

impl<'a> RawDwords<'a> {
    pub fn decode(p: &Packet<'a>) -> Result<Self, BodyError> {
        Ok(Self { dwords: p.body })
    }
}

impl fmt::Display for RawDwords<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.dwords.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "DW{i}={d:#x}")?;
        }
        Ok(())
    }
}
