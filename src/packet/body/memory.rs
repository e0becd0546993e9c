//! Memory-writing packets: WRITE_DATA, COPY_DATA, DMA_DATA, ATOMIC_MEM,
//! COND_WRITE.

use super::{addr_hi, bit, bits, engine_name, gfx7, hi32, lo32, put, qword, Body, BodyError, CompareFunction, Words};
use crate::memory::address_from_dwords;
use crate::packet::field::{BodyField, FieldValue as V, Layout};
use crate::packet::Opcode;
use crate::regs::db::GpuFamily;

/// WRITE_DATA (0x37).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteData<'a> {
    pub dst_sel: u32,
    /// WR_ONE_ADDR: every dword goes to the same address/register.
    pub one_address: bool,
    pub wr_confirm: bool,
    /// CACHE_POLICY, dw0 \[26:25\].
    pub cache_policy: u32,
    pub engine: u32,
    /// Memory address, or for DST_SEL 0 the absolute register index.
    pub destination: u64,
    pub data: &'a [u32],
}

impl<'a> WriteData<'a> {
    /// DST_SEL 5: `data` to memory at `address`, by the ME.
    pub fn memory(address: u64, data: &'a [u32]) -> Self {
        WriteData {
            dst_sel: 5,
            one_address: false,
            wr_confirm: false,
            cache_policy: 0,
            engine: 0,
            destination: address,
            data,
        }
    }

    /// DST_SEL 0: `data` to consecutive registers from absolute `register`.
    pub fn register(register: u32, data: &'a [u32]) -> Self {
        WriteData { dst_sel: 0, destination: u64::from(register), ..Self::memory(0, data) }
    }

    /// With WR_CONFIRM: the CP waits for the write to complete.
    pub fn confirmed(self) -> Self {
        WriteData { wr_confirm: true, ..self }
    }

    fn control(&self) -> u32 {
        put(self.dst_sel, 8, 11)
            | put(self.one_address.into(), 16, 16)
            | put(self.wr_confirm.into(), 20, 20)
            | put(self.cache_policy, 25, 26)
            | put(self.engine, 30, 31)
    }
}

impl<'a> Body<'a> for WriteData<'a> {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let d0 = w.dw(0)?;
        let dst_sel = bits(d0, 8, 11);
        let destination =
            if dst_sel == 0 { u64::from(bits(w.dw(1)?, 0, 17)) } else { address_from_dwords(w.dw(1)?, w.dw(2)?, 2) };
        w.dw(2)?;
        Ok(Self {
            dst_sel,
            one_address: bit(d0, 16),
            wr_confirm: bit(d0, 20),
            cache_policy: bits(d0, 25, 26),
            engine: bits(d0, 30, 31),
            destination,
            data: w.from(3),
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::WRITE_DATA
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[self.control(), lo32(self.destination), addr_hi(self.destination)]);
        out.extend_from_slice(self.data);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        let dst = match self.dst_sel {
            0 => "register",
            1 => "memory_sync",
            2 => "tc_l2",
            3 => "gds",
            5 => "memory",
            _ => "other",
        };
        out.extend([
            BodyField::new("DST_SEL", V::Selector(self.dst_sel, dst)),
            BodyField::new("DST", V::Hex(self.destination)),
            BodyField::new("WR_ONE_ADDR", V::Flag(self.one_address)),
            BodyField::new("WR_CONFIRM", V::Flag(self.wr_confirm)),
            BodyField::new("ENGINE", V::Name(engine_name(self.engine))),
            BodyField::new("DATA", V::Dec(self.data.len() as u64)),
        ]);
        if self.dst_sel == 0 {
            out.push(BodyField::new("REG_NAME", V::Register(self.destination as u32)));
        }
        if !self.data.is_empty() {
            out.push(BodyField::new("VALUES", V::HexList(self.data)));
        }
        out.push(BodyField::with_layout("CONTROL", V::Raw(self.control()), Layout::PacketType("CONTROL")));
    }
}

/// COPY_DATA (0x40).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyData {
    pub src_sel: u32,
    pub dst_sel: u32,
    pub count_64: bool,
    pub wr_confirm: bool,
    pub engine: u32,
    /// SRC_CACHE_POLICY dw0 \[14:13\] and DST_CACHE_POLICY dw0 \[26:25\].
    pub cache_policies: (u32, u32),
    /// Source: register index, memory address or immediate, per SRC_SEL.
    pub src: u64,
    /// Destination: register index or memory address, per DST_SEL.
    pub dst: u64,
}

impl CopyData {
    /// Name of a SRC_SEL value.
    pub fn src_name(sel: u32) -> &'static str {
        match sel {
            0 => "register",
            1 => "memory",
            2 => "tc_l2",
            3 => "gds",
            4 => "perf",
            5 => "immediate",
            6 => "atomic_return",
            7 | 8 => "gds_atomic_return",
            9 => "gpu_clock",
            10 => "system_clock",
            _ => "reserved",
        }
    }

    /// Name of a DST_SEL value.
    pub fn dst_name(sel: u32) -> &'static str {
        match sel {
            0 => "register",
            1 => "memory_sync",
            2 => "tc_l2",
            3 => "gds",
            4 => "perf",
            5 => "memory",
            6 => "mem_mapped_reg_dc",
            _ => "reserved",
        }
    }
}

impl<'a> Body<'a> for CopyData {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let d0 = w.dw(0)?;
        let src_sel = bits(d0, 0, 3);
        let dst_sel = bits(d0, 8, 11);
        let count_64 = bit(d0, 16);
        let (s_lo, s_hi, d_lo, d_hi) = (w.dw(1)?, w.dw(2)?, w.dw(3)?, w.dw(4)?);
        let align = if count_64 { 3 } else { 2 };
        let src = match src_sel {
            0 => u64::from(bits(s_lo, 0, 17)),
            5 => qword(s_lo, s_hi),
            3 => u64::from(bits(s_lo, 0, 15)),
            _ => address_from_dwords(s_lo, s_hi, align),
        };
        let dst = match dst_sel {
            0 => u64::from(bits(d_lo, 0, 17)),
            3 => u64::from(bits(d_lo, 0, 15)),
            _ => address_from_dwords(d_lo, d_hi, align),
        };
        Ok(Self {
            src_sel,
            dst_sel,
            count_64,
            wr_confirm: bit(d0, 20),
            engine: bits(d0, 30, 31),
            cache_policies: (bits(d0, 13, 14), bits(d0, 25, 26)),
            src,
            dst,
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::COPY_DATA
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            put(self.src_sel, 0, 3)
                | put(self.dst_sel, 8, 11)
                | put(self.cache_policies.0, 13, 14)
                | put(self.count_64.into(), 16, 16)
                | put(self.wr_confirm.into(), 20, 20)
                | put(self.cache_policies.1, 25, 26)
                | put(self.engine, 30, 31),
            lo32(self.src),
            if self.src_sel == 5 { hi32(self.src) } else { addr_hi(self.src) },
            lo32(self.dst),
            addr_hi(self.dst),
        ]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("SRC_SEL", V::Selector(self.src_sel, Self::src_name(self.src_sel))),
            BodyField::new("SRC", V::Hex(self.src)),
            BodyField::new("DST_SEL", V::Selector(self.dst_sel, Self::dst_name(self.dst_sel))),
            BodyField::new("DST", V::Hex(self.dst)),
            BodyField::new("COUNT_SEL", V::Name(if self.count_64 { "64" } else { "32" })),
            BodyField::new("WR_CONFIRM", V::Flag(self.wr_confirm)),
            BodyField::new("ENGINE", V::Name(engine_name(self.engine))),
        ]);
        if self.src_sel == 0 {
            out.push(BodyField::new("SRC_REG", V::Register(self.src as u32)));
        }
        if self.dst_sel == 0 {
            out.push(BodyField::new("DST_REG", V::Register(self.dst as u32)));
        }
    }
}

/// DMA_DATA (0x50). The COMMAND word (body dword 5) has two layouts:
/// gfx9+ (BYTE_COUNT \[25:0\], DIS_WC \[31\]; [`Body::decode_body`]) and
/// gfx6-8 (BYTE_COUNT \[20:0\], DISABLE_WR_CONFIRM \[21\], SRC_SWAP \[23:22\],
/// DST_SWAP \[25:24\]; [`Body::decode_body_for`] with [`GpuFamily::Gfx7`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaData {
    pub engine: u32,
    pub src_sel: u32,
    pub dst_sel: u32,
    pub cp_sync: bool,
    /// SRC_CACHE_POLICY dw0 \[14:13\] and DST_CACHE_POLICY dw0 \[26:25\].
    pub cache_policies: (u32, u32),
    /// Source address, or the fill dword for SRC_SEL 2 (low 32 bits).
    pub src: u64,
    pub dst: u64,
    pub byte_count: u32,
    pub src_is_register: bool,
    pub dst_is_register: bool,
    pub src_no_increment: bool,
    pub dst_no_increment: bool,
    pub raw_wait: bool,
    /// DIS_WC: COMMAND bit 31 (gfx9+), bit 21 (gfx7).
    pub disable_write_confirm: bool,
    /// SRC_SWAP and DST_SWAP, COMMAND \[23:22\] and \[25:24\]: the gfx7
    /// endian swaps (0 none, 1 8-in-16, 2 8-in-32, 3 8-in-64); always 0 in
    /// the gfx9+ layout, whose BYTE_COUNT covers those bits.
    pub swaps: (u32, u32),
}

impl DmaData {
    /// Body dword 0 (DMA_DATA_WORD0), the same on both families.
    pub fn word0(&self) -> u32 {
        put(self.engine, 0, 0)
            | put(self.cache_policies.0, 13, 14)
            | put(self.dst_sel, 20, 21)
            | put(self.cache_policies.1, 25, 26)
            | put(self.src_sel, 29, 30)
            | put(self.cp_sync.into(), 31, 31)
    }

    /// The COMMAND word (body dword 5) as `family` lays it out.
    pub fn command(&self, family: GpuFamily) -> u32 {
        let shared = put(self.src_is_register.into(), 26, 26)
            | put(self.dst_is_register.into(), 27, 27)
            | put(self.src_no_increment.into(), 28, 28)
            | put(self.dst_no_increment.into(), 29, 29)
            | put(self.raw_wait.into(), 30, 30);
        match family {
            GpuFamily::Gfx103 => shared | put(self.byte_count, 0, 25) | put(self.disable_write_confirm.into(), 31, 31),
            GpuFamily::Gfx7 => shared | gfx7::dma_command(self),
        }
    }

    /// The largest BYTE_COUNT `family`'s COMMAND word holds: 2^26 − 1 on
    /// gfx9+, 2^21 − 1 on gfx6-8.
    pub const fn max_byte_count(family: GpuFamily) -> u32 {
        match family {
            GpuFamily::Gfx103 => (1 << 26) - 1,
            GpuFamily::Gfx7 => (1 << 21) - 1,
        }
    }

    fn decode(w: Words<'_>, family: GpuFamily) -> Result<Self, BodyError> {
        let d0 = w.dw(0)?;
        let cmd = w.dw(5)?;
        let src_sel = bits(d0, 29, 30);
        let src = if src_sel == 2 { u64::from(w.dw(1)?) } else { address_from_dwords(w.dw(1)?, w.dw(2)?, 0) };
        let (byte_count, disable_write_confirm, swaps) = match family {
            GpuFamily::Gfx103 => (bits(cmd, 0, 25), bit(cmd, 31), (0, 0)),
            GpuFamily::Gfx7 => gfx7::dma_command_fields(cmd),
        };
        Ok(Self {
            engine: d0 & 1,
            src_sel,
            dst_sel: bits(d0, 20, 21),
            cp_sync: bit(d0, 31),
            cache_policies: (bits(d0, 13, 14), bits(d0, 25, 26)),
            src,
            dst: address_from_dwords(w.dw(3)?, w.dw(4)?, 0),
            byte_count,
            src_is_register: bit(cmd, 26),
            dst_is_register: bit(cmd, 27),
            src_no_increment: bit(cmd, 28),
            dst_no_increment: bit(cmd, 29),
            raw_wait: bit(cmd, 30),
            disable_write_confirm,
            swaps,
        })
    }
}

impl<'a> Body<'a> for DmaData {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        Self::decode(Words::new(opcode, body), GpuFamily::Gfx103)
    }

    fn decode_body_for(family: GpuFamily, opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        Self::decode(Words::new(opcode, body), family)
    }

    fn opcode(&self) -> Opcode {
        Opcode::DMA_DATA
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        self.encode_body_for(GpuFamily::Gfx103, out);
    }

    fn encode_body_for(&self, family: GpuFamily, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            self.word0(),
            lo32(self.src),
            addr_hi(self.src),
            lo32(self.dst),
            addr_hi(self.dst),
            self.command(family),
        ]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        self.fields_into_for(GpuFamily::Gfx103, out);
    }

    /// The same fields on both families; COMMAND is the family's word (its
    /// bits named by the family's `COMMAND` layout), and gfx7 lists its
    /// SRC_SWAP and DST_SWAP.
    fn fields_into_for(&self, family: GpuFamily, out: &mut Vec<BodyField<'a>>) {
        let src = match self.src_sel {
            0 => "addr",
            1 => "gds",
            2 => "data",
            _ => "addr_l2",
        };
        let dst = match self.dst_sel {
            0 => "addr",
            1 => "gds",
            2 => "nowhere",
            _ => "addr_l2",
        };
        out.extend([
            BodyField::new("SRC_SEL", V::Name(src)),
            BodyField::new("SRC", V::Hex(self.src)),
            BodyField::new("DST_SEL", V::Name(dst)),
            BodyField::new("DST", V::Hex(self.dst)),
            BodyField::new("BYTE_COUNT", V::Dec(self.byte_count.into())),
            BodyField::new("SAS", V::Flag(self.src_is_register)),
            BodyField::new("DAS", V::Flag(self.dst_is_register)),
            BodyField::new("SAIC", V::Flag(self.src_no_increment)),
            BodyField::new("DAIC", V::Flag(self.dst_no_increment)),
            BodyField::new("CP_SYNC", V::Flag(self.cp_sync)),
            BodyField::new("ENGINE", V::Name(if self.engine == 1 { "PFP" } else { "ME" })),
        ]);
        if family == GpuFamily::Gfx7 {
            out.extend([
                BodyField::new("SRC_SWAP", V::Dec(self.swaps.0.into())),
                BodyField::new("DST_SWAP", V::Dec(self.swaps.1.into())),
            ]);
        }
        out.extend([
            BodyField::with_layout("DMA_DATA_WORD0", V::Raw(self.word0()), Layout::PacketType("DMA_DATA_WORD0")),
            BodyField::with_layout("COMMAND", V::Raw(self.command(family)), Layout::PacketType("COMMAND")),
        ])
    }
}

/// ATOMIC_MEM (0x1E).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtomicMem {
    /// TC_OP code: +0x20 = 64-bit, +0x40 = no return.
    pub atomic: u32,
    pub command: u32,
    /// CACHE_POLICY dw0 \[26:25\].
    pub cache_policy: u32,
    pub address: u64,
    pub src: u64,
    pub cmp: u64,
    pub loop_interval: u32,
}

impl AtomicMem {
    /// True for the 64-bit operations.
    pub fn is_64(&self) -> bool {
        self.atomic & 0x20 != 0
    }

    /// The operation with the width and no-return bits cleared.
    pub fn base_op(&self) -> u32 {
        self.atomic & 0x1F
    }
}

impl<'a> Body<'a> for AtomicMem {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let d0 = w.dw(0)?;
        let atomic = bits(d0, 0, 6);
        let is_64 = atomic & 0x20 != 0;
        Ok(Self {
            atomic,
            command: bits(d0, 8, 11),
            cache_policy: bits(d0, 25, 26),
            address: address_from_dwords(w.dw(1)?, w.dw(2)?, if is_64 { 3 } else { 2 }),
            src: qword(w.dw(3)?, w.dw(4)?),
            cmp: qword(w.dw(5)?, w.dw(6)?),
            loop_interval: w.get(7).map_or(0, |v| bits(v, 0, 12)),
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::ATOMIC_MEM
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            put(self.atomic, 0, 6) | put(self.command, 8, 11) | put(self.cache_policy, 25, 26),
            lo32(self.address),
            addr_hi(self.address),
            lo32(self.src),
            hi32(self.src),
            lo32(self.cmp),
            hi32(self.cmp),
            put(self.loop_interval, 0, 12),
        ]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("ATOMIC", V::Hex(self.atomic.into())),
            BodyField::new("COMMAND", V::Dec(self.command.into())),
            BodyField::new("ADDR", V::Hex(self.address)),
            BodyField::new("SRC", V::Hex(self.src)),
            BodyField::new("CMP", V::Hex(self.cmp)),
        ])
    }
}

/// COND_WRITE (0x45).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CondWrite {
    pub function: CompareFunction,
    pub poll_memory: bool,
    pub write_space: u32,
    pub poll: u64,
    pub reference: u32,
    pub mask: u32,
    pub write: u64,
    pub data: u32,
}

impl<'a> Body<'a> for CondWrite {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let d0 = w.dw(0)?;
        let poll_memory = bit(d0, 4);
        let write_space = bits(d0, 8, 9);
        Ok(Self {
            function: CompareFunction::from_bits(d0),
            poll_memory,
            write_space,
            poll: if poll_memory {
                address_from_dwords(w.dw(1)?, w.dw(2)?, 2)
            } else {
                u64::from(bits(w.dw(1)?, 0, 17))
            },
            reference: w.dw(3)?,
            mask: w.dw(4)?,
            write: if write_space == 1 {
                address_from_dwords(w.dw(5)?, w.dw(6)?, 2)
            } else {
                u64::from(bits(w.dw(5)?, 0, 17))
            },
            data: w.dw(7)?,
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::COND_WRITE
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            self.function.to_bits() | put(self.poll_memory.into(), 4, 4) | put(self.write_space, 8, 9),
            lo32(self.poll),
            addr_hi(self.poll),
            self.reference,
            self.mask,
            lo32(self.write),
            addr_hi(self.write),
            self.data,
        ]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("POLL_SPACE", V::Name(if self.poll_memory { "memory" } else { "register" })),
            BodyField::new("POLL", V::Hex(self.poll)),
            BodyField::new("FUNCTION", V::Name(self.function.name())),
            BodyField::new("REFERENCE", V::Hex(self.reference.into())),
            BodyField::new("MASK", V::Hex(self.mask.into())),
            BodyField::new("WRITE_SPACE", V::Dec(self.write_space.into())),
            BodyField::new("WRITE", V::Hex(self.write)),
            BodyField::new("DATA", V::Hex(self.data.into())),
        ])
    }
}

super::display_from_fields!(WriteData<'_>, CopyData, DmaData, AtomicMem, CondWrite);
