//! Typed packet bodies: one type per opcode the core names (executed or
//! only decoded), each with [`Body::decode_body`] (the body dwords of one
//! packet, layouts from the gfx10.3 packet reference, gfx7 forms chosen by
//! COUNT), [`Body::encode_body`] (the dwords back) and [`Body::fields`]
//! (structured name/value records that `Display`, the disassembler's text,
//! its `--json` records and its `--source` comments are built from). The
//! processor's handlers decode through these types and nothing else, so
//! execution, disassembly and the command-buffer builder share one layout.
//!
//! A GPU family whose command processor lays a body out differently reads
//! and writes it through the same type: [`Body::decode_body_for`],
//! [`Body::encode_body_for`] and [`Body::fields_into_for`] take the
//! [`GpuFamily`], and the family-less methods are the gfx10.3 reading. The
//! gfx7 forms (`gfx7.rs`): DMA_DATA's COMMAND word (BYTE_COUNT \[20:0\],
//! DISABLE_WR_CONFIRM \[21\], SRC_SWAP/DST_SWAP), RELEASE_MEM's compute-ring
//! form and EVENT_WRITE_EOP's cache-action bits, ACQUIRE_MEM without
//! GCR_CNTL, SURFACE_SYNC and ACQUIRE_MEM named by the CP_COHER_* registers,
//! COND_EXEC's CONTROL. [`AnyBody::decode_for`] is the one family-aware
//! entry point; it gives no body for an opcode the family does not have
//! ([`Opcode::exists_on`]).
//!
//! ```
//! use pm4core::packet::body::{AnyBody, Body, DmaData};
//! use pm4core::packet::Opcode;
//! use pm4core::GpuFamily;
//!
//! // A 96-byte copy as radv emits it for Bonaire: DISABLE_WR_CONFIRM is bit 21.
//! let body = [0x6030_0000, 0x12_9100, 0, 0x12_9100, 0, 0x0020_0060];
//! let gfx7 = DmaData::decode_body_for(GpuFamily::Gfx7, Opcode::DMA_DATA, &body)?;
//! assert_eq!((gfx7.byte_count, gfx7.disable_write_confirm), (96, true));
//! // Read as gfx10.3 lays the word out, the same bits are a 2 MiB copy.
//! let gfx103 = DmaData::decode_body(Opcode::DMA_DATA, &body)?;
//! assert_eq!(gfx103.byte_count, 0x20_0060);
//! assert_eq!(gfx7.encode_for(GpuFamily::Gfx7)[1..], body);
//! // PRIME_UTCL2 is a gfx10 packet: no body on gfx7.
//! assert!(AnyBody::decode_for(GpuFamily::Gfx7, Opcode::PRIME_UTCL2, &[0; 4])?.is_none());
//! # Ok::<(), pm4core::packet::body::BodyError>(())
//! ```
//!
//! ```
//! use pm4core::packet::body::{Body, WriteData};
//! use pm4core::packet::Opcode;
//!
//! // WRITE_DATA of two dwords to memory at 0x1000, confirmed.
//! let write = WriteData::memory(0x1000, &[7, 8]).confirmed();
//! let dwords = write.encode();
//! assert_eq!(dwords[0] >> 8 & 0xFF, u32::from(Opcode::WRITE_DATA.0));
//! let back = WriteData::decode_body(Opcode::WRITE_DATA, &dwords[1..])?;
//! assert_eq!(back, write);
//! assert_eq!(
//!     back.to_string(),
//!     "DST_SEL=5(memory) DST=0x1000 WR_ONE_ADDR=0 WR_CONFIRM=1 ENGINE=ME DATA=2 VALUES=0x7,0x8 CONTROL=0x00100500"
//! );
//! # Ok::<(), pm4core::packet::body::BodyError>(())
//! ```

mod const_engine;
mod draw;
mod events;
mod gfx103;
mod gfx7;
mod indirect;
mod markers;
mod memory;
mod misc;
mod registers;
mod sync;

pub use const_engine::*;
pub use draw::*;
pub use events::*;
pub use gfx103::*;
pub use indirect::*;
pub use markers::*;
pub use memory::*;
pub use misc::*;
pub use registers::*;
pub use sync::*;

use super::field::{write_fields, BodyField};
use super::{Header, Opcode, Packet, COUNT_ONE_DWORD};
use crate::regs::db::GpuFamily;

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

/// A typed packet body.
pub trait Body<'a>: Sized {
    /// Decodes the body dwords (every dword after the header) of a packet
    /// whose header carries `opcode`.
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError>;

    /// The opcode the header carries.
    fn opcode(&self) -> Opcode;

    /// Appends the body dwords.
    fn encode_body(&self, out: &mut Vec<u32>);

    /// Appends the fields, in order, to `out` (which a caller may reuse
    /// from packet to packet).
    fn fields_into(&self, out: &mut Vec<BodyField<'a>>);

    /// The fields, in order.
    fn fields(&self) -> Vec<BodyField<'a>> {
        let mut fields = Vec::new();
        self.fields_into(&mut fields);
        fields
    }

    /// Decodes a packet's body.
    fn decode(p: &Packet<'a>) -> Result<Self, BodyError> {
        Self::decode_body(p.opcode(), p.body)
    }

    /// The whole packet: a type-3 header (no predicate, graphics shader
    /// type; COUNT = 0x3FFF for an empty body) and the body.
    fn encode(&self) -> Vec<u32> {
        self.encode_for(GpuFamily::Gfx103)
    }

    /// Decodes the body dwords as `family`'s command processor lays them
    /// out. A body whose layout every family shares reads as
    /// [`Body::decode_body`] does (the default).
    fn decode_body_for(family: GpuFamily, opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let _ = family;
        Self::decode_body(opcode, body)
    }

    /// Appends the body dwords in `family`'s layout (the default:
    /// [`Body::encode_body`]).
    fn encode_body_for(&self, family: GpuFamily, out: &mut Vec<u32>) {
        let _ = family;
        self.encode_body(out);
    }

    /// Appends the fields as `family`'s packet reference and register
    /// database name them (the default: [`Body::fields_into`]).
    fn fields_into_for(&self, family: GpuFamily, out: &mut Vec<BodyField<'a>>) {
        let _ = family;
        self.fields_into(out);
    }

    /// The fields as `family` names them, in order.
    fn fields_for(&self, family: GpuFamily) -> Vec<BodyField<'a>> {
        let mut fields = Vec::new();
        self.fields_into_for(family, &mut fields);
        fields
    }

    /// Decodes a packet's body as `family` lays it out.
    fn decode_for(family: GpuFamily, p: &Packet<'a>) -> Result<Self, BodyError> {
        Self::decode_body_for(family, p.opcode(), p.body)
    }

    /// The whole packet in `family`'s layout (header as [`Body::encode`]).
    fn encode_for(&self, family: GpuFamily) -> Vec<u32> {
        let mut out = vec![0];
        self.encode_body_for(family, &mut out);
        let body_dwords = out.len() as u32 - 1;
        if let Some(h) = out.first_mut() {
            *h = type3_header(self.opcode(), body_dwords).0;
        }
        out
    }
}

/// The type-3 header of a packet with `body_dwords` body dwords (the
/// one-dword form when there are none).
pub fn type3_header(opcode: Opcode, body_dwords: u32) -> Header {
    if body_dwords == 0 {
        Header(0xC000_0000 | (COUNT_ONE_DWORD << 16) | (u32::from(opcode.0) << 8))
    } else {
        Header::type3(opcode, body_dwords)
    }
}

/// Implements `Display` from `fields()`.
macro_rules! display_from_fields {
    ($($ty:ty),* $(,)?) => {$(
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                $crate::packet::field::write_fields(f, &$crate::packet::body::Body::fields(self))
            }
        }
    )*};
}
pub(crate) use display_from_fields;

/// Body dwords with the opcode they belong to, read with a missing-dword
/// error.
#[derive(Clone, Copy)]
pub(crate) struct Words<'a> {
    pub(crate) opcode: Opcode,
    pub(crate) body: &'a [u32],
}

impl<'a> Words<'a> {
    #[inline]
    pub(crate) fn new(opcode: Opcode, body: &'a [u32]) -> Self {
        Words { opcode, body }
    }

    #[inline]
    pub(crate) fn dw(&self, i: usize) -> Result<u32, BodyError> {
        self.body.get(i).copied().ok_or(BodyError::Missing {
            opcode: self.opcode,
            index: i as u32,
            body_len: self.body.len() as u32,
        })
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<u32> {
        self.body.get(i).copied()
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.body.len()
    }

    #[inline]
    pub(crate) fn from(&self, i: usize) -> &'a [u32] {
        self.body.get(i..).unwrap_or(&[])
    }

    pub(crate) fn invalid(&self, what: &'static str) -> BodyError {
        BodyError::Invalid { opcode: self.opcode, what }
    }
}

#[inline]
pub(crate) fn bits(value: u32, lo: u32, hi: u32) -> u32 {
    let width = hi - lo + 1;
    if width >= 32 {
        value >> lo
    } else {
        (value >> lo) & ((1u32 << width) - 1)
    }
}

#[inline]
pub(crate) fn bit(value: u32, n: u32) -> bool {
    (value >> n) & 1 != 0
}

/// `value` placed at bits `lo..=hi`.
#[inline]
pub(crate) fn put(value: u32, lo: u32, hi: u32) -> u32 {
    let width = hi - lo + 1;
    let mask = if width >= 32 { u32::MAX } else { (1u32 << width) - 1 };
    (value & mask) << lo
}

#[inline]
pub(crate) fn lo32(v: u64) -> u32 {
    v as u32
}

#[inline]
pub(crate) fn hi32(v: u64) -> u32 {
    (v >> 32) as u32
}

/// The high dword of a 48-bit GPU address as packets carry it: bit 47
/// sign-extended (the canonical form drivers emit, `0xffff8001` for an
/// address at 0x8001_xxxx_xxxx).
#[inline]
pub(crate) fn addr_hi(address: u64) -> u32 {
    let hi = hi32(address) & 0xFFFF;
    if hi & 0x8000 != 0 {
        hi | 0xFFFF_0000
    } else {
        hi
    }
}

#[inline]
pub(crate) fn qword(lo: u32, hi: u32) -> u64 {
    u64::from(lo) | (u64::from(hi) << 32)
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

    /// The 3-bit FUNCTION field.
    pub fn to_bits(self) -> u32 {
        match self {
            Self::Always => 0,
            Self::Less => 1,
            Self::LessEqual => 2,
            Self::Equal => 3,
            Self::NotEqual => 4,
            Self::GreaterEqual => 5,
            Self::Greater => 6,
            Self::Reserved => 7,
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

/// ENGINE_SEL names of WAIT_REG_MEM, WRITE_DATA and COPY_DATA.
pub(crate) fn engine_name(engine: u32) -> &'static str {
    match engine {
        0 => "ME",
        1 => "PFP",
        2 => "CE",
        _ => "reserved",
    }
}

/// The body of any packet the core names, decoded by its opcode.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AnyBody<'a> {
    Nop(Nop<'a>),
    Opaque(Opaque<'a>),
    DummyDword(DummyDword),
    PreambleCntl(PreambleCntl),
    WaitOnCeCounter(WaitOnCeCounter),
    PrimeUtcl2(PrimeUtcl2),
    FrameControl(FrameControl),
    SetRegisters(SetRegisters<'a>),
    LoadRegisters(LoadRegisters<'a>),
    LoadRegistersIndex(LoadRegistersIndex),
    RegRmw(RegRmw),
    ContextRegRmw(ContextRegRmw),
    ClearState(ClearState),
    ContextControl(ContextControl),
    SetQueueReg(SetQueueReg<'a>),
    IndirectBuffer(IndirectBuffer),
    CondIndirectBuffer(CondIndirectBuffer),
    WriteData(WriteData<'a>),
    CopyData(CopyData),
    DmaData(DmaData),
    AtomicMem(AtomicMem),
    CondWrite(CondWrite),
    WaitRegMem(WaitRegMem),
    MemSemaphore(MemSemaphore),
    Rewind(Rewind),
    SetPredication(SetPredication),
    CondExec(CondExec),
    PredExec(PredExec),
    EventWrite(EventWrite),
    ReleaseMem(ReleaseMem),
    EventWriteEos(EventWriteEos),
    AcquireMem(AcquireMem),
    SurfaceSync(SurfaceSync),
    OcclusionQuery(OcclusionQuery),
    Draw(DrawBody),
    DispatchDirect(DispatchDirect),
    DispatchIndirect(DispatchIndirect),
    SetBase(SetBase),
    IndexBase(IndexBase),
    IndexBufferSize(IndexBufferSize),
    IndexType(IndexType),
    NumInstances(NumInstances),
    StrmoutBufferUpdate(StrmoutBufferUpdate),
    WriteConstRam(WriteConstRam<'a>),
    LoadConstRam(LoadConstRam),
    DumpConstRam(DumpConstRam),
    IncrementCeCounter(IncrementCeCounter),
    WaitOnDeCounterDiff(WaitOnDeCounterDiff),
    SetContextRegIndirect(SetContextRegIndirect<'a>),
    SetShRegOffset(SetShRegOffset),
    DispatchMeshIndirectMulti(DispatchMeshIndirectMulti),
    DispatchTaskmeshGfx(DispatchTaskmeshGfx),
    DispatchTaskStateInit(DispatchTaskStateInit),
    DispatchTaskmeshDirectAce(DispatchTaskmeshDirectAce),
    DispatchTaskmeshIndirectMultiAce(DispatchTaskmeshIndirectMultiAce),
    DrawIndexMultiInst(DrawIndexMultiInst),
    GetLodStats(GetLodStats),
    DispatchDrawPreamble(DispatchDrawPreamble),
    DispatchDraw(DispatchDraw),
    DrawPreamble(DrawPreamble),
    PerfmonControl(PerfmonControl<'a>),
}

macro_rules! any_body {
    ($($variant:ident),* $(,)?) => {
        impl<'a> AnyBody<'a> {
            /// The opcode the header carries.
            pub fn opcode(&self) -> Opcode {
                match self { $(AnyBody::$variant(b) => b.opcode(),)* }
            }

            /// Appends the body dwords.
            pub fn encode_body(&self, out: &mut Vec<u32>) {
                match self { $(AnyBody::$variant(b) => b.encode_body(out),)* }
            }

            /// The whole packet, header first.
            pub fn encode(&self) -> Vec<u32> {
                match self { $(AnyBody::$variant(b) => b.encode(),)* }
            }

            /// The fields, in order.
            pub fn fields(&self) -> Vec<BodyField<'a>> {
                match self { $(AnyBody::$variant(b) => b.fields(),)* }
            }

            /// Appends the fields, in order, to `out`.
            pub fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
                match self { $(AnyBody::$variant(b) => b.fields_into(out),)* }
            }

            /// Appends the body dwords in `family`'s layout.
            pub fn encode_body_for(&self, family: GpuFamily, out: &mut Vec<u32>) {
                match self { $(AnyBody::$variant(b) => b.encode_body_for(family, out),)* }
            }

            /// The whole packet in `family`'s layout, header first.
            pub fn encode_for(&self, family: GpuFamily) -> Vec<u32> {
                match self { $(AnyBody::$variant(b) => b.encode_for(family),)* }
            }

            /// The fields as `family` names them, in order.
            pub fn fields_for(&self, family: GpuFamily) -> Vec<BodyField<'a>> {
                match self { $(AnyBody::$variant(b) => b.fields_for(family),)* }
            }

            /// Appends the fields as `family` names them to `out`.
            pub fn fields_into_for(&self, family: GpuFamily, out: &mut Vec<BodyField<'a>>) {
                match self { $(AnyBody::$variant(b) => b.fields_into_for(family, out),)* }
            }
        }
    };
}

any_body!(
    Nop,
    Opaque,
    DummyDword,
    PreambleCntl,
    WaitOnCeCounter,
    PrimeUtcl2,
    FrameControl,
    SetRegisters,
    LoadRegisters,
    LoadRegistersIndex,
    RegRmw,
    ContextRegRmw,
    ClearState,
    ContextControl,
    SetQueueReg,
    IndirectBuffer,
    CondIndirectBuffer,
    WriteData,
    CopyData,
    DmaData,
    AtomicMem,
    CondWrite,
    WaitRegMem,
    MemSemaphore,
    Rewind,
    SetPredication,
    CondExec,
    PredExec,
    EventWrite,
    ReleaseMem,
    EventWriteEos,
    AcquireMem,
    SurfaceSync,
    OcclusionQuery,
    Draw,
    DispatchDirect,
    DispatchIndirect,
    SetBase,
    IndexBase,
    IndexBufferSize,
    IndexType,
    NumInstances,
    StrmoutBufferUpdate,
    WriteConstRam,
    LoadConstRam,
    DumpConstRam,
    IncrementCeCounter,
    WaitOnDeCounterDiff,
    SetContextRegIndirect,
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
    PerfmonControl,
);

impl<'a> AnyBody<'a> {
    /// Decodes the body of a packet with `opcode`: `Ok(None)` for an opcode
    /// without a typed body (unnamed opcodes and the named ones the core
    /// neither executes nor decodes).
    ///
    /// ```
    /// use pm4core::packet::body::AnyBody;
    /// use pm4core::packet::Opcode;
    ///
    /// let body = AnyBody::decode(Opcode::NUM_INSTANCES, &[4])?.unwrap();
    /// assert_eq!(body.to_string(), "NUM_INSTANCES=4");
    /// assert_eq!(body.encode(), [0xC000_2F00, 4]);
    /// assert!(AnyBody::decode(Opcode(0x01), &[])?.is_none());
    /// # Ok::<(), pm4core::packet::body::BodyError>(())
    /// ```
    pub fn decode(opcode: Opcode, body: &'a [u32]) -> Result<Option<Self>, BodyError> {
        Self::decode_for(GpuFamily::Gfx103, opcode, body)
    }

    /// Decodes the body of a packet with `opcode` as `family`'s command
    /// processor reads it: the family-aware entry point every reader of a
    /// stream (the processor, the disassembler, the assembler's check of
    /// its own output) goes through. `Ok(None)` for an opcode without a
    /// typed body, and for one the family does not have
    /// ([`Opcode::exists_on`]: its CP meets it as an unknown packet).
    ///
    /// ```
    /// use pm4core::packet::body::AnyBody;
    /// use pm4core::packet::Opcode;
    /// use pm4core::GpuFamily;
    ///
    /// // RELEASE_MEM on gfx7: the compute-ring form, INT_SEL in [25:24], no INT_CTXID.
    /// let body = [0x528, 0x6300_0000, 0x4_1008, 1, 0, 0];
    /// let release = AnyBody::decode_for(GpuFamily::Gfx7, Opcode::RELEASE_MEM, &body)?.unwrap();
    /// assert_eq!(release.encode_for(GpuFamily::Gfx7)[1..], body);
    /// let names: Vec<&str> = release.fields_for(GpuFamily::Gfx7).iter().map(|f| f.name).collect();
    /// assert!(names.contains(&"TC_ACTION_ENA") && !names.contains(&"INT_CTXID"));
    /// assert!(AnyBody::decode_for(GpuFamily::Gfx7, Opcode::SET_UCONFIG_REG_INDEX, &[0, 0])?.is_none());
    /// # Ok::<(), pm4core::packet::body::BodyError>(())
    /// ```
    pub fn decode_for(family: GpuFamily, opcode: Opcode, body: &'a [u32]) -> Result<Option<Self>, BodyError> {
        use AnyBody as A;
        if !opcode.exists_on(family) {
            return Ok(None);
        }
        macro_rules! d {
            ($variant:ident, $ty:ty) => {
                A::$variant(<$ty>::decode_body_for(family, opcode, body)?)
            };
        }
        let decoded = match opcode {
            Opcode::NOP => d!(Nop, Nop),
            Opcode::PFP_SYNC_ME | Opcode::SWITCH_BUFFER | Opcode::INCREMENT_DE_COUNTER => d!(DummyDword, DummyDword),
            Opcode::PREAMBLE_CNTL => d!(PreambleCntl, PreambleCntl),
            Opcode::WAIT_ON_CE_COUNTER => d!(WaitOnCeCounter, WaitOnCeCounter),
            Opcode::PRIME_UTCL2 => d!(PrimeUtcl2, PrimeUtcl2),
            Opcode::FRAME_CONTROL => d!(FrameControl, FrameControl),
            Opcode::WAIT_FOR_WRITE_CONFIRM => d!(Opaque, Opaque),
            op if op.writes_register_run() => d!(SetRegisters, SetRegisters),
            Opcode::LOAD_UCONFIG_REG | Opcode::LOAD_SH_REG | Opcode::LOAD_CONFIG_REG | Opcode::LOAD_CONTEXT_REG => {
                d!(LoadRegisters, LoadRegisters)
            }
            Opcode::LOAD_SH_REG_INDEX | Opcode::LOAD_UCONFIG_REG_INDEX | Opcode::LOAD_CONTEXT_REG_INDEX => {
                d!(LoadRegistersIndex, LoadRegistersIndex)
            }
            Opcode::REG_RMW => d!(RegRmw, RegRmw),
            Opcode::CONTEXT_REG_RMW => d!(ContextRegRmw, ContextRegRmw),
            Opcode::CLEAR_STATE => d!(ClearState, ClearState),
            Opcode::CONTEXT_CONTROL => d!(ContextControl, ContextControl),
            Opcode::SET_QUEUE_REG => d!(SetQueueReg, SetQueueReg),
            Opcode::INDIRECT_BUFFER | Opcode::INDIRECT_BUFFER_CONST => {
                match IndirectBufferForm::decode(opcode, body)? {
                    IndirectBufferForm::Plain(ib) => A::IndirectBuffer(ib),
                    IndirectBufferForm::Conditional(c) => A::CondIndirectBuffer(c),
                }
            }
            Opcode::WRITE_DATA => d!(WriteData, WriteData),
            Opcode::COPY_DATA => d!(CopyData, CopyData),
            Opcode::DMA_DATA => d!(DmaData, DmaData),
            Opcode::ATOMIC_MEM => d!(AtomicMem, AtomicMem),
            Opcode::COND_WRITE => d!(CondWrite, CondWrite),
            Opcode::WAIT_REG_MEM | Opcode::WAIT_REG_MEM64 => d!(WaitRegMem, WaitRegMem),
            Opcode::MEM_SEMAPHORE => d!(MemSemaphore, MemSemaphore),
            Opcode::REWIND => d!(Rewind, Rewind),
            Opcode::SET_PREDICATION => d!(SetPredication, SetPredication),
            Opcode::COND_EXEC => d!(CondExec, CondExec),
            Opcode::PRED_EXEC => d!(PredExec, PredExec),
            Opcode::EVENT_WRITE => d!(EventWrite, EventWrite),
            Opcode::RELEASE_MEM | Opcode::EVENT_WRITE_EOP => d!(ReleaseMem, ReleaseMem),
            Opcode::EVENT_WRITE_EOS => d!(EventWriteEos, EventWriteEos),
            Opcode::ACQUIRE_MEM => d!(AcquireMem, AcquireMem),
            Opcode::SURFACE_SYNC => d!(SurfaceSync, SurfaceSync),
            Opcode::OCCLUSION_QUERY => d!(OcclusionQuery, OcclusionQuery),
            op if DrawBody::OPCODES.contains(&op) => d!(Draw, DrawBody),
            Opcode::DISPATCH_DIRECT => d!(DispatchDirect, DispatchDirect),
            Opcode::DISPATCH_INDIRECT => d!(DispatchIndirect, DispatchIndirect),
            Opcode::SET_BASE => d!(SetBase, SetBase),
            Opcode::INDEX_BASE => d!(IndexBase, IndexBase),
            Opcode::INDEX_BUFFER_SIZE => d!(IndexBufferSize, IndexBufferSize),
            Opcode::INDEX_TYPE => d!(IndexType, IndexType),
            Opcode::NUM_INSTANCES => d!(NumInstances, NumInstances),
            Opcode::STRMOUT_BUFFER_UPDATE => d!(StrmoutBufferUpdate, StrmoutBufferUpdate),
            Opcode::WRITE_CONST_RAM => d!(WriteConstRam, WriteConstRam),
            Opcode::LOAD_CONST_RAM => d!(LoadConstRam, LoadConstRam),
            Opcode::DUMP_CONST_RAM | Opcode::DUMP_CONST_RAM_OFFSET => d!(DumpConstRam, DumpConstRam),
            Opcode::INCREMENT_CE_COUNTER => d!(IncrementCeCounter, IncrementCeCounter),
            Opcode::WAIT_ON_DE_COUNTER_DIFF => d!(WaitOnDeCounterDiff, WaitOnDeCounterDiff),
            Opcode::SET_CONTEXT_REG_INDIRECT => d!(SetContextRegIndirect, SetContextRegIndirect),
            Opcode::SET_SH_REG_OFFSET => d!(SetShRegOffset, SetShRegOffset),
            Opcode::DISPATCH_MESH_INDIRECT_MULTI => d!(DispatchMeshIndirectMulti, DispatchMeshIndirectMulti),
            Opcode::DISPATCH_TASKMESH_GFX => d!(DispatchTaskmeshGfx, DispatchTaskmeshGfx),
            Opcode::DISPATCH_TASK_STATE_INIT => d!(DispatchTaskStateInit, DispatchTaskStateInit),
            Opcode::DISPATCH_TASKMESH_DIRECT_ACE => d!(DispatchTaskmeshDirectAce, DispatchTaskmeshDirectAce),
            Opcode::DISPATCH_TASKMESH_INDIRECT_MULTI_ACE => {
                d!(DispatchTaskmeshIndirectMultiAce, DispatchTaskmeshIndirectMultiAce)
            }
            Opcode::DRAW_INDEX_MULTI_INST => d!(DrawIndexMultiInst, DrawIndexMultiInst),
            Opcode::GET_LOD_STATS => d!(GetLodStats, GetLodStats),
            Opcode::DISPATCH_DRAW_PREAMBLE => d!(DispatchDrawPreamble, DispatchDrawPreamble),
            Opcode::DISPATCH_DRAW => d!(DispatchDraw, DispatchDraw),
            Opcode::DRAW_PREAMBLE => d!(DrawPreamble, DrawPreamble),
            Opcode::PERFMON_CONTROL => d!(PerfmonControl, PerfmonControl),
            _ => return Ok(None),
        };
        Ok(Some(decoded))
    }

    /// Every opcode [`AnyBody::decode`] gives a typed body for.
    pub fn opcodes() -> impl Iterator<Item = Opcode> {
        Self::opcodes_for(GpuFamily::Gfx103)
    }

    /// Every opcode [`AnyBody::decode_for`] gives a typed body for on `family`.
    pub fn opcodes_for(family: GpuFamily) -> impl Iterator<Item = Opcode> {
        Opcode::all_named().filter(move |&op| {
            // An opcode has a body type when decoding some body succeeds or
            // fails for want of dwords (never `Ok(None)`).
            let long = [0u32; 16];
            !matches!(AnyBody::decode_for(family, op, &long), Ok(None))
        })
    }
}

impl std::fmt::Display for AnyBody<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write_fields(f, &self.fields())
    }
}
