//! Typed packet bodies: each `decode` reads the body dwords of one packet
//! (layouts from the gfx10.3 packet reference, with gfx7 forms chosen by
//! COUNT) and each `Display` prints the fields by name, so the processor and
//! the disassembler share one decoder.

use std::fmt;

use super::{Opcode, Packet};
use crate::memory::address_from_dwords;

/// A packet body that does not have the dwords its layout needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    /// Body dword `index` is missing: the packet is shorter than its layout.
    #[error("{opcode} body has {body_len} dwords; dword {index} is missing")]
    Missing { opcode: Opcode, index: u32, body_len: u32 },
    /// A field holds a value the layout does not allow.
    #[error("{opcode} body: {what}")]
    Invalid { opcode: Opcode, what: &'static str },
}

#[inline]
fn bits(value: u32, lo: u32, hi: u32) -> u32 {
    let width = hi - lo + 1;
    if width >= 32 {
        value >> lo
    } else {
        (value >> lo) & ((1u32 << width) - 1)
    }
}

#[inline]
fn bit(value: u32, n: u32) -> bool {
    (value >> n) & 1 != 0
}

/// Compare functions of WAIT_REG_MEM, COND_WRITE and COND_INDIRECT_BUFFER.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareFunction {
    Always,
    Less,
    LessEqual,
    Equal,
    NotEqual,
    GreaterEqual,
    Greater,
    /// Value 7: reserved; never passes.
    Reserved,
}

impl CompareFunction {
    /// From the 3-bit FUNCTION field.
    pub fn from_bits(v: u32) -> Self {
        match v & 7 {
            0 => Self::Always,
            1 => Self::Less,
            2 => Self::LessEqual,
            3 => Self::Equal,
            4 => Self::NotEqual,
            5 => Self::GreaterEqual,
            6 => Self::Greater,
            _ => Self::Reserved,
        }
    }

    /// `value FUNCTION reference`.
    #[inline]
    pub fn test(self, value: u64, reference: u64) -> bool {
        match self {
            Self::Always => true,
            Self::Less => value < reference,
            Self::LessEqual => value <= reference,
            Self::Equal => value == reference,
            Self::NotEqual => value != reference,
            Self::GreaterEqual => value >= reference,
            Self::Greater => value > reference,
            Self::Reserved => false,
        }
    }

    /// Name as the disassembler prints it and the assembler reads it
    /// (`FUNCTION=eq`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Always => "always",
            Self::Less => "lt",
            Self::LessEqual => "le",
            Self::Equal => "eq",
            Self::NotEqual => "ne",
            Self::GreaterEqual => "ge",
            Self::Greater => "gt",
            Self::Reserved => "reserved",
        }
    }

    /// The comparison as an operator between value and reference (`>=`),
    /// for sentences such as a wait's reason.
    pub fn symbol(self) -> &'static str {
        match self {
            Self::Always => "always",
            Self::Less => "<",
            Self::LessEqual => "<=",
            Self::Equal => "==",
            Self::NotEqual => "!=",
            Self::GreaterEqual => ">=",
            Self::Greater => ">",
            Self::Reserved => "reserved",
        }
    }
}

/// INDIRECT_BUFFER / INDIRECT_BUFFER_CONST, normal form (COUNT = 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndirectBuffer {
    pub address: u64,
    pub size_dw: u32,
    pub chain: bool,
    pub valid: bool,
    pub pre_ena: bool,
    pub vmid: u32,
}

impl IndirectBuffer {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let control = p.dw(2)?;
        Ok(Self {
            address: address_from_dwords(p.dw(0)?, p.dw(1)?, 2),
            size_dw: bits(control, 0, 19),
            chain: bit(control, 20),
            pre_ena: bit(control, 21),
            valid: bit(control, 23),
            vmid: bits(control, 24, 27),
        })
    }
}

impl fmt::Display for IndirectBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IB_BASE={:#x} IB_SIZE={} CHAIN={} VALID={} PRE_ENA={} VMID={}",
            self.address, self.size_dw, self.chain as u8, self.valid as u8, self.pre_ena as u8, self.vmid
        )
    }
}

/// COND_INDIRECT_BUFFER (INDIRECT_BUFFER with COUNT = 12).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CondIndirectBuffer {
    pub mode: u32,
    pub function: CompareFunction,
    pub compare_address: u64,
    pub mask: u64,
    pub reference: u64,
    pub ib1: (u64, u32),
    pub ib2: (u64, u32),
}

impl CondIndirectBuffer {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let d0 = p.dw(0)?;
        let q = |lo: usize| -> Result<u64, BodyError> { Ok(u64::from(p.dw(lo)?) | (u64::from(p.dw(lo + 1)?) << 32)) };
        Ok(Self {
            mode: bits(d0, 0, 1),
            function: CompareFunction::from_bits(bits(d0, 8, 10)),
            compare_address: address_from_dwords(p.dw(1)?, p.dw(2)?, 2),
            mask: q(3)?,
            reference: q(5)?,
            ib1: (address_from_dwords(p.dw(7)?, p.dw(8)?, 2), bits(p.dw(9)?, 0, 19)),
            ib2: (address_from_dwords(p.dw(10)?, p.dw(11)?, 2), bits(p.dw(12)?, 0, 19)),
        })
    }
}

impl fmt::Display for CondIndirectBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MODE={} (*{:#x} & {:#x}) {} {:#x} IB1={:#x}+{} IB2={:#x}+{}",
            self.mode,
            self.compare_address,
            self.mask,
            self.function.name(),
            self.reference,
            self.ib1.0,
            self.ib1.1,
            self.ib2.0,
            self.ib2.1
        )
    }
}

/// Where WAIT_REG_MEM polls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollTarget {
    /// A memory address.
    Memory(u64),
    /// An absolute dword register index.
    Register(u32),
}

/// WAIT_REG_MEM (0x3C) and WAIT_REG_MEM64 (0x93).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitRegMem {
    pub function: CompareFunction,
    pub target: PollTarget,
    /// OPERATION: 0 wait, 1 write-wait-write (PFP, registers), 3 preemptable wait.
    pub operation: u32,
    pub engine: u32,
    pub reference: u64,
    pub mask: u64,
    pub poll_interval: u32,
    pub is_64: bool,
    /// Second register of OPERATION 1 (REG_WRITE_ADDR2).
    pub write_register2: u32,
}

impl WaitRegMem {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let d0 = p.dw(0)?;
        let is_64 = p.opcode() == Opcode::WAIT_REG_MEM64;
        let memory = bits(d0, 4, 5) != 0;
        let target = if memory {
            PollTarget::Memory(address_from_dwords(p.dw(1)?, p.dw(2)?, if is_64 { 3 } else { 2 }))
        } else {
            PollTarget::Register(bits(p.dw(1)?, 0, 17))
        };
        let (reference, mask, poll) = if is_64 {
            (
                u64::from(p.dw(3)?) | (u64::from(p.dw(4)?) << 32),
                u64::from(p.dw(5)?) | (u64::from(p.dw(6)?) << 32),
                p.dw(7)?,
            )
        } else {
            (u64::from(p.dw(3)?), u64::from(p.dw(4)?), p.dw(5)?)
        };
        Ok(Self {
            function: CompareFunction::from_bits(d0),
            target,
            operation: bits(d0, 6, 7),
            engine: bits(d0, 8, 9),
            reference,
            mask,
            poll_interval: bits(poll, 0, 15),
            is_64,
            write_register2: bits(p.dw(2)?, 0, 17),
        })
    }
}

impl fmt::Display for WaitRegMem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.target {
            PollTarget::Memory(a) => write!(f, "MEM_SPACE=memory ADDR={a:#x}")?,
            PollTarget::Register(r) => write!(f, "MEM_SPACE=register REG={r:#x}")?,
        }
        write!(
            f,
            " FUNCTION={} REFERENCE={:#x} MASK={:#x} OPERATION={} ENGINE={} POLL_INTERVAL={}",
            self.function.name(),
            self.reference,
            self.mask,
            self.operation,
            engine_name(self.engine),
            self.poll_interval
        )
    }
}

fn engine_name(engine: u32) -> &'static str {
    match engine {
        0 => "ME",
        1 => "PFP",
        2 => "CE",
        _ => "reserved",
    }
}

/// WRITE_DATA (0x37).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteData<'a> {
    pub dst_sel: u32,
    /// WR_ONE_ADDR: every dword goes to the same address/register.
    pub one_address: bool,
    pub wr_confirm: bool,
    pub engine: u32,
    /// Memory address, or for DST_SEL 0 the absolute register index.
    pub destination: u64,
    pub data: &'a [u32],
}

impl<'a> WriteData<'a> {
    pub fn decode(p: &Packet<'a>) -> Result<Self, BodyError> {
        let d0 = p.dw(0)?;
        let dst_sel = bits(d0, 8, 11);
        let destination =
            if dst_sel == 0 { u64::from(bits(p.dw(1)?, 0, 17)) } else { address_from_dwords(p.dw(1)?, p.dw(2)?, 2) };
        p.dw(2)?;
        Ok(Self {
            dst_sel,
            one_address: bit(d0, 16),
            wr_confirm: bit(d0, 20),
            engine: bits(d0, 30, 31),
            destination,
            data: p.body.get(3..).unwrap_or(&[]),
        })
    }
}

impl fmt::Display for WriteData<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dst = match self.dst_sel {
            0 => "register",
            1 => "memory_sync",
            2 => "tc_l2",
            3 => "gds",
            5 => "memory",
            _ => "other",
        };
        write!(
            f,
            "DST_SEL={}({}) DST={:#x} WR_ONE_ADDR={} WR_CONFIRM={} ENGINE={} DATA[{}]",
            self.dst_sel,
            dst,
            self.destination,
            self.one_address as u8,
            self.wr_confirm as u8,
            engine_name(self.engine),
            self.data.len()
        )
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
    /// Source: register index, memory address or immediate, per SRC_SEL.
    pub src: u64,
    /// Destination: register index or memory address, per DST_SEL.
    pub dst: u64,
}

impl CopyData {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let d0 = p.dw(0)?;
        let src_sel = bits(d0, 0, 3);
        let dst_sel = bits(d0, 8, 11);
        let count_64 = bit(d0, 16);
        let (s_lo, s_hi, d_lo, d_hi) = (p.dw(1)?, p.dw(2)?, p.dw(3)?, p.dw(4)?);
        let align = if count_64 { 3 } else { 2 };
        let src = match src_sel {
            0 => u64::from(bits(s_lo, 0, 17)),
            5 => u64::from(s_lo) | (u64::from(s_hi) << 32),
            3 => u64::from(bits(s_lo, 0, 15)),
            _ => address_from_dwords(s_lo, s_hi, align),
        };
        let dst = match dst_sel {
            0 => u64::from(bits(d_lo, 0, 17)),
            3 => u64::from(bits(d_lo, 0, 15)),
            _ => address_from_dwords(d_lo, d_hi, align),
        };
        Ok(Self { src_sel, dst_sel, count_64, wr_confirm: bit(d0, 20), engine: bits(d0, 30, 31), src, dst })
    }

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

impl fmt::Display for CopyData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SRC_SEL={}({}) SRC={:#x} DST_SEL={}({}) DST={:#x} COUNT_SEL={} WR_CONFIRM={} ENGINE={}",
            self.src_sel,
            Self::src_name(self.src_sel),
            self.src,
            self.dst_sel,
            Self::dst_name(self.dst_sel),
            self.dst,
            if self.count_64 { "64" } else { "32" },
            self.wr_confirm as u8,
            engine_name(self.engine)
        )
    }
}

/// DMA_DATA (0x50), gfx9+ layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaData {
    pub engine: u32,
    pub src_sel: u32,
    pub dst_sel: u32,
    pub cp_sync: bool,
    /// Source address, or the fill dword for SRC_SEL 2 (low 32 bits).
    pub src: u64,
    pub dst: u64,
    pub byte_count: u32,
    pub src_is_register: bool,
    pub dst_is_register: bool,
    pub src_no_increment: bool,
    pub dst_no_increment: bool,
    pub raw_wait: bool,
}

impl DmaData {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let d0 = p.dw(0)?;
        let cmd = p.dw(5)?;
        let src_sel = bits(d0, 29, 30);
        let src = if src_sel == 2 { u64::from(p.dw(1)?) } else { address_from_dwords(p.dw(1)?, p.dw(2)?, 0) };
        Ok(Self {
            engine: d0 & 1,
            src_sel,
            dst_sel: bits(d0, 20, 21),
            cp_sync: bit(d0, 31),
            src,
            dst: address_from_dwords(p.dw(3)?, p.dw(4)?, 0),
            byte_count: bits(cmd, 0, 25),
            src_is_register: bit(cmd, 26),
            dst_is_register: bit(cmd, 27),
            src_no_increment: bit(cmd, 28),
            dst_no_increment: bit(cmd, 29),
            raw_wait: bit(cmd, 30),
        })
    }
}

impl fmt::Display for DmaData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
        write!(
            f,
            "SRC_SEL={} SRC={:#x} DST_SEL={} DST={:#x} BYTE_COUNT={} SAS={} DAS={} SAIC={} DAIC={} CP_SYNC={} ENGINE={}",
            src,
            self.src,
            dst,
            self.dst,
            self.byte_count,
            self.src_is_register as u8,
            self.dst_is_register as u8,
            self.src_no_increment as u8,
            self.dst_no_increment as u8,
            self.cp_sync as u8,
            if self.engine == 1 { "PFP" } else { "ME" }
        )
    }
}

/// RELEASE_MEM (0x49) and the gfx7 EVENT_WRITE_EOP (0x47) share this shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReleaseMem {
    pub event_type: u32,
    pub event_index: u32,
    /// GCR_CNTL bits (gfx10 RELEASE_MEM) or the gfx7 cache-action bits.
    pub cache_control: u32,
    pub dst_sel: u32,
    pub int_sel: u32,
    pub data_sel: u32,
    pub address: u64,
    pub data: u64,
    pub int_ctxid: u32,
}

impl ReleaseMem {
    /// RELEASE_MEM: gfx10.3 (COUNT 6) or gfx7/8 compute (COUNT 5, no INT_CTXID).
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let d0 = p.dw(0)?;
        let d1 = p.dw(1)?;
        let data_sel = bits(d1, 29, 31);
        let align = if data_sel == 1 || data_sel == 7 { 2 } else { 3 };
        Ok(Self {
            event_type: bits(d0, 0, 5),
            event_index: bits(d0, 8, 11),
            cache_control: bits(d0, 12, 23),
            dst_sel: bits(d1, 16, 17),
            int_sel: bits(d1, 24, 26),
            data_sel,
            address: address_from_dwords(p.dw(2)?, p.dw(3)?, align),
            data: u64::from(p.dw(4)?) | (u64::from(p.dw(5)?) << 32),
            int_ctxid: p.body.get(6).map_or(0, |v| bits(*v, 0, 27)),
        })
    }

    /// EVENT_WRITE_EOP (gfx6-8 graphics ring, still seen in PS5 streams).
    pub fn decode_eop(p: &Packet) -> Result<Self, BodyError> {
        let d0 = p.dw(0)?;
        let d2 = p.dw(2)?;
        let data_sel = bits(d2, 29, 31);
        Ok(Self {
            event_type: bits(d0, 0, 5),
            event_index: bits(d0, 8, 11),
            cache_control: bits(d0, 12, 27),
            dst_sel: bits(d2, 16, 17),
            int_sel: bits(d2, 24, 25),
            data_sel,
            address: address_from_dwords(p.dw(1)?, bits(d2, 0, 15), 2),
            data: u64::from(p.dw(3)?) | (u64::from(p.dw(4)?) << 32),
            int_ctxid: 0,
        })
    }
}

impl fmt::Display for ReleaseMem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let data = match self.data_sel {
            0 => "none",
            1 => "data32",
            2 => "data64",
            3 => "gpu_clock",
            4 => "system_clock",
            5 => "gds",
            7 => "atomic_add32",
            _ => "reserved",
        };
        write!(
            f,
            "EVENT_TYPE={} EVENT_INDEX={} GCR_CNTL={:#x} DST_SEL={} INT_SEL={} DATA_SEL={}({}) ADDR={:#x} DATA={:#x} INT_CTXID={:#x}",
            self.event_type,
            self.event_index,
            self.cache_control,
            self.dst_sel,
            self.int_sel,
            self.data_sel,
            data,
            self.address,
            self.data,
            self.int_ctxid
        )
    }
}

/// EVENT_WRITE_EOS (0x48, gfx7 form).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventWriteEos {
    pub event_type: u32,
    pub event_index: u32,
    pub address: u64,
    /// 0 GDS append count, 1 GDS data, 2 32-bit DATA.
    pub command: u32,
    pub data: u32,
}

impl EventWriteEos {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let d0 = p.dw(0)?;
        let d2 = p.dw(2)?;
        Ok(Self {
            event_type: bits(d0, 0, 5),
            event_index: bits(d0, 8, 11),
            address: address_from_dwords(p.dw(1)?, bits(d2, 0, 15), 2),
            command: bits(d2, 29, 31),
            data: p.dw(3)?,
        })
    }
}

impl fmt::Display for EventWriteEos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "EVENT_TYPE={} EVENT_INDEX={} ADDR={:#x} COMMAND={} DATA={:#x}",
            self.event_type, self.event_index, self.address, self.command, self.data
        )
    }
}

/// EVENT_WRITE (0x46).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventWrite {
    pub event_type: u32,
    pub event_index: u32,
    /// Present for the sample / ZPASS events (COUNT = 2).
    pub address: Option<u64>,
}

impl EventWrite {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let d0 = p.dw(0)?;
        let address = match (p.body.get(1), p.body.get(2)) {
            (Some(lo), Some(hi)) => Some(address_from_dwords(*lo, *hi, 3)),
            _ => None,
        };
        Ok(Self { event_type: bits(d0, 0, 5), event_index: bits(d0, 8, 11), address })
    }
}

impl fmt::Display for EventWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EVENT_TYPE={} EVENT_INDEX={}", self.event_type, self.event_index)?;
        if let Some(a) = self.address {
            write!(f, " ADDR={a:#x}")?;
        }
        Ok(())
    }
}

/// ACQUIRE_MEM (0x58): gfx10.3 (COUNT 6) or the 5-count form without GCR_CNTL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcquireMem {
    pub coher_cntl: u32,
    pub engine: u32,
    pub size: u64,
    pub base: u64,
    pub poll_interval: u32,
    pub gcr_cntl: Option<u32>,
}

impl AcquireMem {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let d0 = p.dw(0)?;
        Ok(Self {
            coher_cntl: bits(d0, 0, 30),
            engine: u32::from(bit(d0, 31)),
            size: u64::from(p.dw(1)?) | (u64::from(bits(p.dw(2)?, 0, 7)) << 32),
            base: u64::from(p.dw(3)?) | (u64::from(bits(p.dw(4)?, 0, 23)) << 32),
            poll_interval: bits(p.dw(5)?, 0, 15),
            gcr_cntl: p.body.get(6).map(|v| bits(*v, 0, 18)),
        })
    }
}

impl fmt::Display for AcquireMem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "COHER_CNTL={:#x} ENGINE={} COHER_SIZE={:#x} COHER_BASE={:#x} POLL_INTERVAL={}",
            self.coher_cntl,
            if self.engine == 1 { "ME" } else { "PFP" },
            self.size,
            self.base,
            self.poll_interval
        )?;
        if let Some(g) = self.gcr_cntl {
            write!(f, " GCR_CNTL={g:#x}")?;
        }
        Ok(())
    }
}

/// ATOMIC_MEM (0x1E).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtomicMem {
    /// TC_OP code: +0x20 = 64-bit, +0x40 = no return.
    pub atomic: u32,
    pub command: u32,
    pub address: u64,
    pub src: u64,
    pub cmp: u64,
    pub loop_interval: u32,
}

impl AtomicMem {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let d0 = p.dw(0)?;
        let atomic = bits(d0, 0, 6);
        let is_64 = atomic & 0x20 != 0;
        Ok(Self {
            atomic,
            command: bits(d0, 8, 11),
            address: address_from_dwords(p.dw(1)?, p.dw(2)?, if is_64 { 3 } else { 2 }),
            src: u64::from(p.dw(3)?) | (u64::from(p.dw(4)?) << 32),
            cmp: u64::from(p.dw(5)?) | (u64::from(p.dw(6)?) << 32),
            loop_interval: p.body.get(7).map_or(0, |v| bits(*v, 0, 12)),
        })
    }

    /// True for the 64-bit operations.
    pub fn is_64(&self) -> bool {
        self.atomic & 0x20 != 0
    }

    /// The operation with the width and no-return bits cleared.
    pub fn base_op(&self) -> u32 {
        self.atomic & 0x1F
    }
}

impl fmt::Display for AtomicMem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ATOMIC={:#x} COMMAND={} ADDR={:#x} SRC={:#x} CMP={:#x}",
            self.atomic, self.command, self.address, self.src, self.cmp
        )
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

impl CondWrite {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let d0 = p.dw(0)?;
        let poll_memory = bit(d0, 4);
        let write_space = bits(d0, 8, 9);
        Ok(Self {
            function: CompareFunction::from_bits(d0),
            poll_memory,
            write_space,
            poll: if poll_memory {
                address_from_dwords(p.dw(1)?, p.dw(2)?, 2)
            } else {
                u64::from(bits(p.dw(1)?, 0, 17))
            },
            reference: p.dw(3)?,
            mask: p.dw(4)?,
            write: if write_space == 1 {
                address_from_dwords(p.dw(5)?, p.dw(6)?, 2)
            } else {
                u64::from(bits(p.dw(5)?, 0, 17))
            },
            data: p.dw(7)?,
        })
    }
}

impl fmt::Display for CondWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "POLL_SPACE={} POLL={:#x} FUNCTION={} REFERENCE={:#x} MASK={:#x} WRITE_SPACE={} WRITE={:#x} DATA={:#x}",
            if self.poll_memory { "memory" } else { "register" },
            self.poll,
            self.function.name(),
            self.reference,
            self.mask,
            self.write_space,
            self.write,
            self.data
        )
    }
}

/// SET_PREDICATION (0x20): gfx9+ (COUNT 2) and gfx7 (COUNT 1) forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetPredication {
    /// PRED_BOOL: true = draw if visible / no overflow.
    pub draw_if_visible: bool,
    /// HINT: true = draw if the ZPASS data is not final yet.
    pub draw_if_not_final: bool,
    /// PRED_OP: 0 clear, 1 ZPASS, 2 PRIMCOUNT, 3 bool64, 4 bool32.
    pub op: u32,
    pub continue_bit: bool,
    pub address: u64,
}

impl SetPredication {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        if p.body.len() >= 3 {
            let d0 = p.dw(0)?;
            Ok(Self {
                draw_if_visible: bit(d0, 8),
                draw_if_not_final: bit(d0, 12),
                op: bits(d0, 16, 18),
                continue_bit: bit(d0, 31),
                address: address_from_dwords(p.dw(1)?, p.dw(2)?, 2),
            })
        } else {
            let d1 = p.dw(1)?;
            Ok(Self {
                draw_if_visible: bit(d1, 8),
                draw_if_not_final: bit(d1, 12),
                op: bits(d1, 16, 18),
                continue_bit: bit(d1, 31),
                address: address_from_dwords(p.dw(0)?, bits(d1, 0, 7), 2),
            })
        }
    }
}

impl fmt::Display for SetPredication {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.op {
            0 => "clear",
            1 => "zpass",
            2 => "primcount",
            3 => "bool64",
            4 => "bool32",
            _ => "reserved",
        };
        write!(
            f,
            "PRED_OP={} PRED_BOOL={} HINT={} CONTINUE={} ADDR={:#x}",
            op,
            if self.draw_if_visible { "draw_visible" } else { "draw_not_visible" },
            self.draw_if_not_final as u8,
            self.continue_bit as u8,
            self.address
        )
    }
}

/// COND_EXEC (0x22): CIK+ (COUNT 3) and gfx6 (COUNT 2) forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CondExec {
    pub address: u64,
    pub exec_count: u32,
}

impl CondExec {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let address = address_from_dwords(p.dw(0)?, bits(p.dw(1)?, 0, 15), 2);
        let exec_count = if p.body.len() >= 4 { p.dw(3)? } else { p.dw(2)? };
        Ok(Self { address, exec_count: bits(exec_count, 0, 13) })
    }
}

impl fmt::Display for CondExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ADDR={:#x} EXEC_COUNT={}", self.address, self.exec_count)
    }
}

/// The plain register writers: SET_CONTEXT_REG, SET_SH_REG, SET_UCONFIG_REG,
/// SET_CONFIG_REG and their _INDEX forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetRegisters<'a> {
    /// REG_OFFSET, relative to the space base.
    pub offset: u32,
    /// INDEX, dw0 \[31:28\].
    pub index: u32,
    pub values: &'a [u32],
}

impl<'a> SetRegisters<'a> {
    pub fn decode(p: &Packet<'a>) -> Result<Self, BodyError> {
        let d0 = p.dw(0)?;
        Ok(Self { offset: bits(d0, 0, 15), index: bits(d0, 28, 31), values: p.body.get(1..).unwrap_or(&[]) })
    }
}

/// LOAD_*_REG_INDEX (0x63, 0x64, 0x9F).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadRegistersIndex {
    /// INDEX: 0 direct address, 1 offset from the SET_BASE index-4 base, 2 indirect.
    pub index: u32,
    pub address_lo: u32,
    pub address_hi: u32,
    pub reg_offset: u32,
    /// DATA_FORMAT: false = offset_and_size, true = offset_and_data pairs.
    pub pairs: bool,
    pub num_dwords: u32,
}

impl LoadRegistersIndex {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let d0 = p.dw(0)?;
        let d2 = p.dw(2)?;
        Ok(Self {
            index: bits(d0, 0, 1),
            address_lo: d0 & !3,
            address_hi: p.dw(1)?,
            reg_offset: bits(d2, 0, 15),
            pairs: bit(d2, 31),
            num_dwords: bits(p.dw(3)?, 0, 13),
        })
    }
}

impl fmt::Display for LoadRegistersIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "INDEX={} ADDR={:#x} REG_OFFSET={:#x} DATA_FORMAT={} NUM_DWORDS={}",
            self.index,
            address_from_dwords(self.address_lo, self.address_hi, 2),
            self.reg_offset,
            if self.pairs { "offset_and_data" } else { "offset_and_size" },
            self.num_dwords
        )
    }
}

/// DISPATCH_DIRECT (0x15).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchDirect {
    pub dims: [u32; 3],
    pub initiator: u32,
}

impl DispatchDirect {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        Ok(Self { dims: [p.dw(0)?, p.dw(1)?, p.dw(2)?], initiator: p.dw(3)? })
    }
}

impl fmt::Display for DispatchDirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DIM_X={} DIM_Y={} DIM_Z={} DISPATCH_INITIATOR={:#x}",
            self.dims[0], self.dims[1], self.dims[2], self.initiator
        )
    }
}

/// DISPATCH_INDIRECT (0x16): graphics form (offset from SET_BASE) or compute
/// form (64-bit address), chosen by COUNT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DispatchIndirect {
    Offset { data_offset: u32, initiator: u32 },
    Address { address: u64, initiator: u32 },
}

impl DispatchIndirect {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        if p.body.len() >= 3 {
            Ok(Self::Address { address: address_from_dwords(p.dw(0)?, p.dw(1)?, 2), initiator: p.dw(2)? })
        } else {
            Ok(Self::Offset { data_offset: p.dw(0)?, initiator: p.dw(1)? })
        }
    }
}

impl fmt::Display for DispatchIndirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Offset { data_offset, initiator } => {
                write!(f, "DATA_OFFSET={data_offset:#x} DISPATCH_INITIATOR={initiator:#x}")
            }
            Self::Address { address, initiator } => {
                write!(f, "ADDR={address:#x} DISPATCH_INITIATOR={initiator:#x}")
            }
        }
    }
}

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
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let op = p.opcode();
        Ok(match op {
            Opcode::DRAW_INDEX_2 => Self::Index2 {
                max_size: p.dw(0)?,
                index_base: address_from_dwords(p.dw(1)?, p.dw(2)?, 1),
                index_count: p.dw(3)?,
                initiator: p.dw(4)?,
            },
            Opcode::DRAW_INDEX_AUTO => Self::IndexAuto { index_count: p.dw(0)?, initiator: p.dw(1)? },
            Opcode::DRAW_INDEX_OFFSET_2 => Self::IndexOffset2 {
                max_size: p.dw(0)?,
                index_offset: p.dw(1)?,
                index_count: p.dw(2)?,
                initiator: p.dw(3)?,
            },
            Opcode::DRAW_INDIRECT | Opcode::DRAW_INDEX_INDIRECT => {
                let d1 = p.dw(1)?;
                let d2 = p.dw(2)?;
                Self::Indirect {
                    indexed: op == Opcode::DRAW_INDEX_INDIRECT,
                    data_offset: p.dw(0)?,
                    base_vtx_loc: bits(d1, 0, 15),
                    start_indx_loc: bits(d1, 16, 31),
                    start_inst_loc: bits(d2, 0, 15),
                    start_indx_enable: op == Opcode::DRAW_INDEX_INDIRECT && bit(d2, 28),
                    initiator: p.dw(3)?,
                }
            }
            Opcode::DRAW_INDIRECT_MULTI
            | Opcode::DRAW_INDEX_INDIRECT_MULTI
            | Opcode::DRAW_INDIRECT_COUNT_MULTI
            | Opcode::DRAW_INDEX_INDIRECT_COUNT_MULTI => {
                let indexed = matches!(op, Opcode::DRAW_INDEX_INDIRECT_MULTI | Opcode::DRAW_INDEX_INDIRECT_COUNT_MULTI);
                let d1 = p.dw(1)?;
                let d3 = p.dw(3)?;
                Self::IndirectMulti {
                    indexed,
                    data_offset: p.dw(0)?,
                    base_vtx_loc: bits(d1, 0, 15),
                    start_indx_loc: bits(d1, 16, 31),
                    start_inst_loc: bits(p.dw(2)?, 0, 15),
                    draw_index_loc: bits(d3, 0, 15),
                    start_indx_enable: indexed && bit(d3, 28),
                    count_indirect: bit(d3, 30),
                    draw_index_enable: bit(d3, 31),
                    count: p.dw(4)?,
                    count_address: address_from_dwords(p.dw(5)?, p.dw(6)?, 2),
                    stride: p.dw(7)?,
                    initiator: p.dw(8)?,
                }
            }
            Opcode::DRAW_INDEX_MULTI_AUTO => {
                let c = p.dw(2)?;
                Self::IndexMultiAuto {
                    prim_count: p.dw(0)?,
                    initiator: p.dw(1)?,
                    index_offset: bits(c, 0, 15),
                    prim_type: bits(c, 16, 20),
                    index_count: bits(c, 21, 31),
                }
            }
            _ => return Err(BodyError::Invalid { opcode: op, what: "not a draw packet" }),
        })
    }
}

impl fmt::Display for DrawBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Index2 { max_size, index_base, index_count, initiator } => write!(
                f,
                "MAX_SIZE={max_size} INDEX_BASE={index_base:#x} INDEX_COUNT={index_count} DRAW_INITIATOR={initiator:#x}"
            ),
            Self::IndexAuto { index_count, initiator } => {
                write!(f, "INDEX_COUNT={index_count} DRAW_INITIATOR={initiator:#x}")
            }
            Self::IndexOffset2 { max_size, index_offset, index_count, initiator } => write!(
                f,
                "MAX_SIZE={max_size} INDEX_OFFSET={index_offset} INDEX_COUNT={index_count} DRAW_INITIATOR={initiator:#x}"
            ),
            Self::Indirect { data_offset, base_vtx_loc, start_indx_loc, start_inst_loc, initiator, .. } => write!(
                f,
                "DATA_OFFSET={data_offset:#x} BASE_VTX_LOC={base_vtx_loc:#x} START_INDX_LOC={start_indx_loc:#x} START_INST_LOC={start_inst_loc:#x} DRAW_INITIATOR={initiator:#x}"
            ),
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
                initiator,
                ..
            } => write!(
                f,
                "DATA_OFFSET={data_offset:#x} BASE_VTX_LOC={base_vtx_loc:#x} START_INST_LOC={start_inst_loc:#x} DRAW_INDEX_LOC={draw_index_loc:#x} COUNT_INDIRECT_ENABLE={} DRAW_INDEX_ENABLE={} COUNT={count} COUNT_ADDR={count_address:#x} STRIDE={stride} DRAW_INITIATOR={initiator:#x}",
                count_indirect as u8, draw_index_enable as u8
            ),
            Self::IndexMultiAuto { prim_count, initiator, index_offset, prim_type, index_count } => write!(
                f,
                "PRIM_COUNT={prim_count} DRAW_INITIATOR={initiator:#x} INDEX_OFFSET={index_offset} PRIM_TYPE={prim_type} INDEX_COUNT={index_count}"
            ),
        }
    }
}

/// MEM_SEMAPHORE (0x39): gfx10 (COUNT 2) and gfx7 (COUNT 1) forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemSemaphore {
    pub address: u64,
    /// SIGNAL_TYPE: false = increment, true = write 1.
    pub write_one: bool,
    /// SEM_SEL: 6 signal, 7 wait.
    pub sem_sel: u32,
}

impl MemSemaphore {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let lo = p.dw(0)?;
        let (hi, control) = if p.body.len() >= 3 { (p.dw(1)?, p.dw(2)?) } else { (bits(p.dw(1)?, 0, 15), p.dw(1)?) };
        Ok(Self {
            address: address_from_dwords(lo, hi, 3),
            write_one: bit(control, 20),
            sem_sel: bits(control, 29, 31),
        })
    }
}

impl fmt::Display for MemSemaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sel = match self.sem_sel {
            6 => "signal",
            7 => "wait",
            _ => "reserved",
        };
        write!(f, "ADDR={:#x} SEM_SEL={} SIGNAL_TYPE={}", self.address, sel, self.write_one as u8)
    }
}

/// SET_BASE (0x11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetBase {
    pub base_index: u32,
    pub address: u64,
}

impl SetBase {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        Ok(Self { base_index: bits(p.dw(0)?, 0, 3), address: address_from_dwords(p.dw(1)?, p.dw(2)?, 0) })
    }
}

impl fmt::Display for SetBase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BASE_INDEX={} ADDRESS={:#x}", self.base_index, self.address)
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

impl StrmoutBufferUpdate {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let d0 = p.dw(0)?;
        let source_select = bits(d0, 1, 2);
        Ok(Self {
            update_memory: bit(d0, 0),
            source_select,
            data_in_bytes: bit(d0, 7),
            buffer: bits(d0, 8, 9),
            dst: address_from_dwords(p.dw(1)?, p.dw(2)?, 2),
            src: if source_select == 2 { address_from_dwords(p.dw(3)?, p.dw(4)?, 2) } else { u64::from(p.dw(3)?) },
        })
    }
}

impl fmt::Display for StrmoutBufferUpdate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "BUFFER={} SOURCE_SELECT={} UPDATE_MEMORY={} DST={:#x} SRC={:#x}",
            self.buffer, self.source_select, self.update_memory as u8, self.dst, self.src
        )
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
}

impl IndexBase {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        let hi = p.dw(1)?;
        Ok(Self { address: address_from_dwords(p.dw(0)?, bits(hi, 0, 15), 1), base_select: bits(hi, 30, 31) })
    }
}

impl fmt::Display for IndexBase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "INDEX_BASE={:#x} BASE_SELECT={}", self.address, self.base_select)
    }
}

/// CONTEXT_CONTROL (0x28): register shadowing load and shadow enables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextControl {
    /// LOAD_CONTROL dword (bit 31: update the load enables).
    pub load: u32,
    /// SHADOW_ENABLE dword (bit 31: update the shadow enables).
    pub shadow: u32,
}

impl ContextControl {
    pub fn decode(p: &Packet) -> Result<Self, BodyError> {
        Ok(Self { load: p.dw(0)?, shadow: p.dw(1)? })
    }
}

impl fmt::Display for ContextControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |v: u32| {
            let mut s = String::new();
            for (bit, name) in [
                (0, "GLOBAL_CONFIG"),
                (1, "PER_CONTEXT_STATE"),
                (15, "GLOBAL_UCONFIG"),
                (16, "GFX_SH_REGS"),
                (24, "CS_SH_REGS"),
                (28, "CE_RAM"),
            ] {
                if (v >> bit) & 1 != 0 {
                    if !s.is_empty() {
                        s.push('|');
                    }
                    s.push_str(name);
                }
            }
            if s.is_empty() {
                s.push_str("none");
            }
            s
        };
        write!(
            f,
            "LOAD={} UPDATE_LOAD={} SHADOW={} UPDATE_SHADOW={}",
            names(self.load),
            self.load >> 31,
            names(self.shadow & !(1 << 28)),
            self.shadow >> 31
        )
    }
}
