//! Building command buffers: what an emulator that implements the console's
//! graphics library at a high level (an HLE `sceGnm`/`sceAgc`) needs to
//! emit PM4 streams, into its own `Vec` or straight into the guest's
//! command buffer.
//!
//! A [`CommandBuffer`] appends packets: typed bodies from
//! [`crate::packet::body`] (each encodes its own dwords), register writes
//! by absolute register index (the builder picks SET_CONFIG/SH/CONTEXT/
//! UCONFIG_REG by the register's space), calls and chains to other
//! buffers, the console's flip and fence idioms, and raw type-3 packets for
//! anything else. [`Label`]s mark where a packet starts so its dwords can be
//! patched once a value is known (a chain's target, a fence value).
//!
//! A buffer encodes its typed packets in one GPU family's layouts
//! ([`CommandBuffer::for_family`], [`CommandBuffer::with_family`];
//! gfx10.3 by default): a PS4 emulator builds gfx7 streams with the same
//! body types.
//!
//! **Nothing is wrapped.** A body longer than a header's COUNT can say, a
//! field whose value does not fit its bits (every typed body is decoded
//! back after encoding and must give the same fields), a register outside
//! the packet's space, an indirect buffer too large for IB_SIZE, an address
//! past the 48-bit space: each is a [`BuildError`] naming it, and the
//! buffer is left as it was. Storage is a `Vec` that grows
//! ([`CommandBuffer::new`]) or a caller's buffer with a fixed capacity
//! ([`CommandBuffer::in_buffer`]), where "buffer full" is an error too.
//!
//! ```
//! use pm4core::packet::body::{CompareFunction, DrawBody};
//! use pm4core::packet::builder::{BuildError, CommandBuffer, Signal};
//! use pm4core::regs::gfx103 as r;
//!
//! let initiator = 2; // VGT_DRAW_INITIATOR: SOURCE_SELECT auto-index
//! let mut cb = CommandBuffer::new();
//! cb.set_registers(r::SPI_SHADER_PGM_LO_PS, &[0x1000_0000 >> 8])?
//!     .set_registers(r::VGT_PRIMITIVE_TYPE, &[4])?
//!     .packet(&DrawBody::IndexAuto { index_count: 3, initiator })?;
//! let fence = cb.label();
//! cb.release32(0x10_0000, 0, Signal::Interrupt)?;
//! // The fence value is known later: patch DATA (packet dword 5).
//! cb.patch(fence, 5, 7)?;
//! assert_eq!(cb.len_dw(), 3 + 3 + 3 + 8);
//! assert_eq!(cb.dwords()[fence.offset_dw() as usize + 5], 7);
//!
//! // A context register through SET_SH_REG is refused, not wrapped.
//! assert!(matches!(cb.set_sh(r::DB_RENDER_CONTROL, &[0]), Err(BuildError::RegisterOutsideSpace { .. })));
//!
//! // Straight into the guest's command buffer, with its capacity.
//! let mut guest = [0u32; 8];
//! let mut direct = CommandBuffer::in_buffer(&mut guest);
//! direct.wait_mem(0x8000, CompareFunction::Equal, 1, u32::MAX)?; // 7 dwords
//! assert_eq!(direct.remaining_dw(), 1);
//! let full = direct.write_mem(0x8000, &[1]).unwrap_err(); // 5 more do not fit
//! assert_eq!(full, BuildError::BufferFull { capacity_dw: 8, used_dw: 7, needed_dw: 5 });
//! assert_eq!(guest[0], 0xC005_3C00); // WAIT_REG_MEM's header, in the guest's buffer
//! # Ok::<(), BuildError>(())
//! ```

use crate::memory::ADDRESS_SPACE_END;
use crate::regs::db::GpuFamily;

use super::body::{type3_header, AnyBody, Body, IndirectBuffer, ReleaseMem, WaitRegMem, WriteData};
use super::body::{CompareFunction, SetRegisters};
use super::{Header, Opcode};

/// Most body dwords a type-3 header can count (COUNT 0x3FFE; 0x3FFF means
/// a one-dword packet).
pub const MAX_BODY_DW: usize = 0x3FFF;

/// Most dwords an INDIRECT_BUFFER can name (IB_SIZE, 20 bits).
pub const MAX_IB_DW: u32 = 0xF_FFFF;

/// Why a packet could not be built. The buffer is left as it was.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The body is longer than a type-3 header can count.
    #[error("{opcode} body of {dwords} dwords is longer than a header can count ({MAX_BODY_DW})")]
    BodyTooLong { opcode: Opcode, dwords: usize },
    /// A field's value does not fit its bits (or is not one the packet can
    /// carry): encoded and decoded back, the packet says something else.
    #[error("{opcode}: {field} = {value} does not fit the packet (it would read back as {encoded})")]
    FieldDoesNotFit { opcode: Opcode, field: &'static str, value: String, encoded: String },
    /// The register (absolute dword index) is not in the packet's space.
    #[error("{opcode} cannot write register {register:#x}: its space is {space_start:#x}..{space_end:#x}")]
    RegisterOutsideSpace { opcode: Opcode, register: u32, space_start: u32, space_end: u32 },
    /// No register write names no register.
    #[error("a register write of no values")]
    NoRegisterValues,
    /// An indirect buffer larger than IB_SIZE can name, or empty.
    #[error("an indirect buffer of {size_dw} dwords: IB_SIZE takes 1..={MAX_IB_DW}")]
    IndirectBufferSize { size_dw: u32 },
    /// An address outside the 48-bit space, or not aligned as the packet
    /// needs (`alignment` bytes).
    #[error(
        "address {address:#x} cannot be used here: it must lie in the 48-bit space and be {alignment}-byte aligned"
    )]
    BadAddress { address: u64, alignment: u64 },
    /// A fixed-capacity buffer has no room for the packet.
    #[error("command buffer full: {needed_dw} more dwords do not fit in {capacity_dw} ({used_dw} used)")]
    BufferFull { capacity_dw: usize, used_dw: usize, needed_dw: usize },
    /// A patch names a dword past the buffer's end.
    #[error("patch of dword {index} past the buffer's end ({len_dw} dwords)")]
    PatchOutOfRange { index: usize, len_dw: usize },
}

/// Whether a release raises an interrupt for the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// INT_SEL 2: an interrupt once the data is written (the host's
    /// [`Gpu::interrupts`](crate::gpu::Gpu::interrupts) receive it).
    Interrupt,
    /// INT_SEL 0: the data is written, nothing else.
    Silent,
}

impl Signal {
    fn int_sel(self) -> u32 {
        match self {
            Signal::Interrupt => 2,
            Signal::Silent => 0,
        }
    }
}

/// A position in a [`CommandBuffer`]: the dword offset where a packet starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Label(u32);

impl Label {
    /// The dword offset from the buffer's start.
    pub fn offset_dw(self) -> u32 {
        self.0
    }

    /// The GPU address of the position when the buffer sits at `base`.
    pub fn address(self, base: u64) -> u64 {
        base.wrapping_add(u64::from(self.0) * 4)
    }
}

/// Where a [`CommandBuffer`] keeps its dwords.
pub trait Storage {
    /// The dwords so far.
    fn dwords(&self) -> &[u32];
    /// The dwords so far, mutable.
    fn dwords_mut(&mut self) -> &mut [u32];
    /// Appends `dwords` whole, or nothing ([`BuildError::BufferFull`]).
    fn append(&mut self, dwords: &[u32]) -> Result<(), BuildError>;
}

impl Storage for Vec<u32> {
    fn dwords(&self) -> &[u32] {
        self
    }
    fn dwords_mut(&mut self) -> &mut [u32] {
        self
    }
    fn append(&mut self, dwords: &[u32]) -> Result<(), BuildError> {
        self.extend_from_slice(dwords);
        Ok(())
    }
}

/// A caller's buffer of fixed capacity (the guest's command buffer, as an
/// HLE graphics library fills it), filled from its start.
#[derive(Debug)]
pub struct FixedBuffer<'a> {
    buffer: &'a mut [u32],
    len: usize,
}

impl FixedBuffer<'_> {
    /// Dwords the buffer can take.
    pub fn capacity_dw(&self) -> usize {
        self.buffer.len()
    }
}

impl Storage for FixedBuffer<'_> {
    fn dwords(&self) -> &[u32] {
        self.buffer.get(..self.len).unwrap_or_default()
    }
    fn dwords_mut(&mut self) -> &mut [u32] {
        self.buffer.get_mut(..self.len).unwrap_or_default()
    }
    fn append(&mut self, dwords: &[u32]) -> Result<(), BuildError> {
        let full =
            BuildError::BufferFull { capacity_dw: self.buffer.len(), used_dw: self.len, needed_dw: dwords.len() };
        let end = self.len.checked_add(dwords.len()).ok_or(full.clone())?;
        self.buffer.get_mut(self.len..end).ok_or(full)?.copy_from_slice(dwords);
        self.len = end;
        Ok(())
    }
}

/// A command buffer being built, packet by packet, into a growing `Vec`
/// ([`CommandBuffer::new`]) or a caller's buffer
/// ([`CommandBuffer::in_buffer`]). Each method appends one packet whole or
/// returns an error and appends nothing; they return the buffer, so a
/// stream reads as one chain of `?`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandBuffer<S: Storage = Vec<u32>> {
    storage: S,
    /// A packet is encoded here first, checked, then appended whole.
    scratch: Vec<u32>,
    /// Whose layouts the typed packets take.
    family: GpuFamily,
}

impl CommandBuffer<Vec<u32>> {
    /// An empty buffer of gfx10.3 packets that grows.
    pub fn new() -> Self {
        Self::for_family(GpuFamily::default())
    }

    /// An empty buffer that grows, whose typed packets take `family`'s
    /// layouts.
    ///
    /// ```
    /// use pm4core::packet::body::{Body, DmaData};
    /// use pm4core::packet::builder::{CommandBuffer, Signal};
    /// use pm4core::packet::Opcode;
    /// use pm4core::GpuFamily;
    ///
    /// // A PS4 stream: a 96-byte DMA_DATA copy and a fence with an interrupt.
    /// let body = [0x6030_0000, 0x12_9100, 0, 0x12_9100, 0, 0x0020_0060];
    /// let copy = DmaData::decode_body_for(GpuFamily::Gfx7, Opcode::DMA_DATA, &body)?;
    /// let mut cb = CommandBuffer::for_family(GpuFamily::Gfx7);
    /// cb.packet(&copy)?.release32(0x1000, 1, Signal::Interrupt)?;
    /// assert_eq!(cb.dwords()[1..7], body);
    /// // gfx7's graphics ring has no RELEASE_MEM: the fence is an EVENT_WRITE_EOP.
    /// assert_eq!(cb.dwords()[7], 0xC004_4700);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn for_family(family: GpuFamily) -> Self {
        Self { storage: Vec::new(), scratch: Vec::new(), family }
    }

    /// The dwords.
    pub fn into_dwords(self) -> Vec<u32> {
        self.storage
    }
}

impl<'a> CommandBuffer<FixedBuffer<'a>> {
    /// A buffer that fills `buffer` from its start and refuses a packet that
    /// does not fit ([`BuildError::BufferFull`]).
    pub fn in_buffer(buffer: &'a mut [u32]) -> Self {
        Self { storage: FixedBuffer { buffer, len: 0 }, scratch: Vec::new(), family: GpuFamily::default() }
    }

    /// Dwords still free.
    pub fn remaining_dw(&self) -> usize {
        self.storage.capacity_dw().saturating_sub(self.storage.len)
    }
}

/// The register space of a SET_*_REG opcode, as (first, end).
fn space_of(opcode: Opcode) -> Option<(u32, u32)> {
    opcode.register_space().map(|space| (space.base, space.base + space.size))
}

/// Whether `register..register + count` lies in `space`.
fn in_space(register: u32, count: usize, space: (u32, u32)) -> bool {
    let end = u64::from(register) + count as u64;
    register >= space.0 && end <= u64::from(space.1)
}

fn check_address(address: u64, alignment: u64) -> Result<(), BuildError> {
    if address >= ADDRESS_SPACE_END || address % alignment != 0 {
        return Err(BuildError::BadAddress { address, alignment });
    }
    Ok(())
}

impl<S: Storage> CommandBuffer<S> {
    /// The buffer, its typed packets taking `family`'s layouts from now on.
    pub fn with_family(mut self, family: GpuFamily) -> Self {
        self.family = family;
        self
    }

    /// The family whose layouts the typed packets take.
    pub fn family(&self) -> GpuFamily {
        self.family
    }

    /// The dwords so far.
    pub fn dwords(&self) -> &[u32] {
        self.storage.dwords()
    }

    /// The dwords so far, mutable (to patch by hand).
    pub fn dwords_mut(&mut self) -> &mut [u32] {
        self.storage.dwords_mut()
    }

    /// The dwords as little-endian bytes (what guest memory holds).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.dwords().iter().flat_map(|d| d.to_le_bytes()).collect()
    }

    /// Size in dwords (what a submission or an IB names).
    pub fn len_dw(&self) -> u32 {
        self.dwords().len() as u32
    }

    /// Size in dwords (an alias of [`Self::len_dw`]).
    pub fn len(&self) -> u32 {
        self.len_dw()
    }

    /// True when nothing was appended.
    pub fn is_empty(&self) -> bool {
        self.dwords().is_empty()
    }

    /// The storage (the `Vec`, or the caller's buffer).
    pub fn storage(&self) -> &S {
        &self.storage
    }

    /// Where the next packet starts.
    pub fn label(&self) -> Label {
        Label(self.len_dw())
    }

    /// Overwrites dword `index` of the packet at `label` (0 = its header).
    pub fn patch(&mut self, label: Label, index: u32, value: u32) -> Result<&mut Self, BuildError> {
        let at = (label.0 as usize).saturating_add(index as usize);
        let len_dw = self.dwords().len();
        let slot = self.dwords_mut().get_mut(at).ok_or(BuildError::PatchOutOfRange { index: at, len_dw })?;
        *slot = value;
        Ok(self)
    }

    /// Re-encodes the packet at `label` from `body` (which must have the
    /// same length: a fence value, a chain target known only later).
    pub fn patch_packet<'b, B: Body<'b>>(&mut self, label: Label, body: &B) -> Result<&mut Self, BuildError> {
        self.encode_checked(body)?;
        let at = label.0 as usize;
        let len_dw = self.dwords().len();
        let end = at.saturating_add(self.scratch.len());
        let scratch = std::mem::take(&mut self.scratch);
        let result = match self.dwords_mut().get_mut(at..end) {
            Some(slots) => {
                slots.copy_from_slice(&scratch);
                Ok(())
            }
            None => Err(BuildError::PatchOutOfRange { index: end.saturating_sub(1), len_dw }),
        };
        self.scratch = scratch;
        result.map(|()| self)
    }

    /// Encodes `body` (header and body) into the scratch buffer, checked:
    /// its length fits COUNT and it decodes back to the same fields.
    fn encode_checked<'b, B: Body<'b>>(&mut self, body: &B) -> Result<(), BuildError> {
        let opcode = body.opcode();
        self.scratch.clear();
        self.scratch.push(0);
        body.encode_body_for(self.family, &mut self.scratch);
        let body_dw = self.scratch.len() - 1;
        if body_dw > MAX_BODY_DW {
            return Err(BuildError::BodyTooLong { opcode, dwords: body_dw });
        }
        if let Some(header) = self.scratch.first_mut() {
            *header = type3_header(opcode, body_dw as u32).0;
        }
        let wanted = body.fields_for(self.family);
        let encoded = self.scratch.get(1..).unwrap_or_default();
        if let Ok(Some(decoded)) = AnyBody::decode_for(self.family, opcode, encoded) {
            let got = decoded.fields_for(self.family);
            for (want, have) in wanted.iter().zip(got.iter()) {
                if want.name == have.name && want.value != have.value {
                    return Err(BuildError::FieldDoesNotFit {
                        opcode,
                        field: want.name,
                        value: want.value.to_string(),
                        encoded: have.value.to_string(),
                    });
                }
            }
        }
        Ok(())
    }

    /// Appends the scratch buffer, with `header_bits` or'ed into its header.
    fn append_scratch(&mut self, header_bits: u32) -> Result<&mut Self, BuildError> {
        if let Some(header) = self.scratch.first_mut() {
            *header |= header_bits;
        }
        self.storage.append(&self.scratch)?;
        Ok(self)
    }

    /// Appends a typed packet (no predicate, graphics shader type).
    pub fn packet<'b, B: Body<'b>>(&mut self, body: &B) -> Result<&mut Self, BuildError> {
        self.encode_checked(body)?;
        self.append_scratch(0)
    }

    /// Appends a typed packet with the header's PREDICATE bit set.
    pub fn predicated<'b, B: Body<'b>>(&mut self, body: &B) -> Result<&mut Self, BuildError> {
        self.encode_checked(body)?;
        self.append_scratch(1)
    }

    /// Appends a typed packet with the header's SHADER_TYPE bit set (a
    /// compute packet on the graphics queue).
    pub fn compute<'b, B: Body<'b>>(&mut self, body: &B) -> Result<&mut Self, BuildError> {
        self.encode_checked(body)?;
        self.append_scratch(2)
    }

    /// Appends a type-3 packet of `opcode` with a raw body. An empty body
    /// is sent as one zero dword (COUNT 0), as drivers emit packets whose
    /// body the CP ignores.
    pub fn pkt3(&mut self, opcode: Opcode, body: &[u32]) -> Result<&mut Self, BuildError> {
        self.raw_packet(opcode, body, 0)
    }

    /// [`Self::pkt3`] with the PREDICATE bit set.
    pub fn pkt3_pred(&mut self, opcode: Opcode, body: &[u32]) -> Result<&mut Self, BuildError> {
        self.raw_packet(opcode, body, 1)
    }

    fn raw_packet(&mut self, opcode: Opcode, body: &[u32], header_bits: u32) -> Result<&mut Self, BuildError> {
        if body.len() > MAX_BODY_DW {
            return Err(BuildError::BodyTooLong { opcode, dwords: body.len() });
        }
        self.scratch.clear();
        self.scratch.push(Header::type3(opcode, body.len().max(1) as u32).0);
        if body.is_empty() {
            self.scratch.push(0);
        }
        self.scratch.extend_from_slice(body);
        self.append_scratch(header_bits)
    }

    /// Appends dwords as they are (data, or a packet built by hand).
    pub fn raw(&mut self, words: &[u32]) -> Result<&mut Self, BuildError> {
        self.storage.append(words)?;
        Ok(self)
    }

    /// Writes `values` to consecutive registers from absolute register
    /// index `register` (`regs::gfx103::NAME`), with the SET_*_REG packet
    /// of the register's space. A run no SET_*_REG reaches is written with
    /// WRITE_DATA (DST_SEL register).
    pub fn set_registers(&mut self, register: u32, values: &[u32]) -> Result<&mut Self, BuildError> {
        if values.is_empty() {
            return Err(BuildError::NoRegisterValues);
        }
        match SetRegisters::at(register, values) {
            Some(set) if space_of(set.opcode).is_some_and(|s| in_space(register, values.len(), s)) => self.packet(&set),
            _ => self.packet(&WriteData::register(register, values)),
        }
    }

    /// A SET_*_REG packet of `opcode` writing `values` from absolute
    /// register `register`, which must lie (with the whole run) in the
    /// opcode's space.
    pub fn set_in_space(&mut self, opcode: Opcode, register: u32, values: &[u32]) -> Result<&mut Self, BuildError> {
        if values.is_empty() {
            return Err(BuildError::NoRegisterValues);
        }
        let Some(space) = space_of(opcode) else {
            return Err(BuildError::RegisterOutsideSpace { opcode, register, space_start: 0, space_end: 0 });
        };
        if !in_space(register, values.len(), space) {
            return Err(BuildError::RegisterOutsideSpace {
                opcode,
                register,
                space_start: space.0,
                space_end: space.1,
            });
        }
        self.packet(&SetRegisters { opcode, offset: register - space.0, index: 0, values })
    }

    /// SET_CONTEXT_REG from absolute register `register`.
    pub fn set_context(&mut self, register: u32, values: &[u32]) -> Result<&mut Self, BuildError> {
        self.set_in_space(Opcode::SET_CONTEXT_REG, register, values)
    }

    /// SET_SH_REG from absolute register `register`.
    pub fn set_sh(&mut self, register: u32, values: &[u32]) -> Result<&mut Self, BuildError> {
        self.set_in_space(Opcode::SET_SH_REG, register, values)
    }

    /// SET_UCONFIG_REG from absolute register `register`.
    pub fn set_uconfig(&mut self, register: u32, values: &[u32]) -> Result<&mut Self, BuildError> {
        self.set_in_space(Opcode::SET_UCONFIG_REG, register, values)
    }

    /// WRITE_DATA of `data` to memory at the dword-aligned `address`.
    pub fn write_mem(&mut self, address: u64, data: &[u32]) -> Result<&mut Self, BuildError> {
        check_address(address, 4)?;
        self.packet(&WriteData::memory(address, data))
    }

    /// WAIT_REG_MEM on memory: wait until `(*address & mask) function
    /// reference`, polling every 10 clocks.
    pub fn wait_mem(
        &mut self,
        address: u64,
        function: CompareFunction,
        reference: u32,
        mask: u32,
    ) -> Result<&mut Self, BuildError> {
        check_address(address, 4)?;
        let wait = WaitRegMem { poll_interval: 10, ..WaitRegMem::memory(address, function, reference, mask) };
        self.packet(&wait)
    }

    /// Calls the `size_dw`-dword buffer at `address` (INDIRECT_BUFFER,
    /// VALID set).
    pub fn call(&mut self, address: u64, size_dw: u32) -> Result<&mut Self, BuildError> {
        Self::check_ib(address, size_dw)?;
        self.packet(&IndirectBuffer::call(address, size_dw))
    }

    /// Chains to the `size_dw`-dword buffer at `address` (the rest of this
    /// buffer is not run).
    pub fn chain(&mut self, address: u64, size_dw: u32) -> Result<&mut Self, BuildError> {
        Self::check_ib(address, size_dw)?;
        self.packet(&IndirectBuffer::chain(address, size_dw))
    }

    fn check_ib(address: u64, size_dw: u32) -> Result<(), BuildError> {
        check_address(address, 4)?;
        if size_dw == 0 || size_dw > MAX_IB_DW {
            return Err(BuildError::IndirectBufferSize { size_dw });
        }
        Ok(())
    }

    /// RELEASE_MEM BOTTOM_OF_PIPE_TS writing the 32-bit `data` to the
    /// dword-aligned `address` once earlier work is done, with an interrupt
    /// (INT_SEL 2, INT_CTXID 0x77) or without. On gfx7, whose graphics ring
    /// has no RELEASE_MEM, the same release as an EVENT_WRITE_EOP (no
    /// INT_CTXID).
    pub fn release32(&mut self, address: u64, data: u32, signal: Signal) -> Result<&mut Self, BuildError> {
        check_address(address, 4)?;
        let release = ReleaseMem {
            int_ctxid: if signal == Signal::Interrupt { 0x77 } else { 0 },
            ..ReleaseMem::new(0x28, 1, address, u64::from(data), signal.int_sel())
        };
        match self.family {
            GpuFamily::Gfx103 => self.packet(&release),
            GpuFamily::Gfx7 => {
                self.packet(&ReleaseMem { opcode: Opcode::EVENT_WRITE_EOP, int_ctxid: 0, legacy: false, ..release })
            }
        }
    }

    /// RELEASE_MEM BOTTOM_OF_PIPE_TS writing the 64-bit `data` to the
    /// qword-aligned `address`.
    pub fn release64(&mut self, address: u64, data: u64, signal: Signal) -> Result<&mut Self, BuildError> {
        check_address(address, 8)?;
        let release = ReleaseMem {
            int_ctxid: if signal == Signal::Interrupt { 0x77 } else { 0 },
            ..ReleaseMem::new(0x28, 2, address, data, signal.int_sel())
        };
        self.packet(&release)
    }

    /// EVENT_WRITE_EOP of `event_type` (BOTTOM_OF_PIPE_TS is 0x28; CACHE_FLUSH_AND_INV_TS 0x14) writing
    /// the 32-bit `data` to the dword-aligned `address`: the end-of-pipe
    /// fence gfx7 command streams (and PS5 streams that kept it) use.
    pub fn event_write_eop(
        &mut self,
        event_type: u32,
        address: u64,
        data: u32,
        signal: Signal,
    ) -> Result<&mut Self, BuildError> {
        check_address(address, 4)?;
        let eop = ReleaseMem {
            opcode: Opcode::EVENT_WRITE_EOP,
            ..ReleaseMem::new(event_type, 1, address, u64::from(data), signal.int_sel())
        };
        self.packet(&eop)
    }

    /// A flip request in the console drivers' marker convention: NOP
    /// `0x68750777` (the backend's [`Flip`](crate::backend::Flip) with kind
    /// 0x777 and no label).
    pub fn flip(&mut self) -> Result<&mut Self, BuildError> {
        self.pkt3(Opcode::NOP, &[0x6875_0777])
    }

    /// A flip request that also writes `value` to the dword-aligned label at
    /// `address` when the CP reaches it: NOP `0x68750778`, address, value
    /// (the backend's [`Flip`](crate::backend::Flip) with kind 0x778).
    pub fn flip_with_label(&mut self, address: u64, value: u32) -> Result<&mut Self, BuildError> {
        check_address(address, 4)?;
        self.pkt3(Opcode::NOP, &[0x6875_0778, address as u32, (address >> 32) as u32, value])
    }

    /// Appends another buffer's dwords.
    pub fn append<T: Storage>(&mut self, other: &CommandBuffer<T>) -> Result<&mut Self, BuildError> {
        self.storage.append(other.dwords())?;
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regs::gfx103 as r;

    #[test]
    fn registers_go_to_their_space() {
        let mut cb = CommandBuffer::new();
        cb.set_registers(r::SPI_SHADER_PGM_LO_PS, &[1])
            .unwrap()
            .set_registers(r::DB_RENDER_CONTROL, &[2])
            .unwrap()
            .set_registers(r::VGT_PRIMITIVE_TYPE, &[3])
            .unwrap();
        assert_eq!(
            cb.dwords(),
            &[
                0xC001_7600,
                r::SPI_SHADER_PGM_LO_PS - 0x2C00,
                1,
                0xC001_6900,
                r::DB_RENDER_CONTROL - 0xA000,
                2,
                0xC001_7900,
                r::VGT_PRIMITIVE_TYPE - 0xC000,
                3
            ]
        );
    }

    #[test]
    fn the_helpers_emit_what_they_say() {
        let mut cb = CommandBuffer::new();
        cb.call(0x1000, 4)
            .unwrap()
            .chain(0x2000, 8)
            .unwrap()
            .write_mem(0x10, &[5])
            .unwrap()
            .wait_mem(0x20, CompareFunction::Equal, 1, 0xFF)
            .unwrap()
            .release32(0x30, 9, Signal::Interrupt)
            .unwrap()
            .pkt3(Opcode::PFP_SYNC_ME, &[])
            .unwrap();
        assert_eq!(
            cb.dwords(),
            &[
                0xC002_3F00,
                0x1000,
                0,
                4 | (1 << 23),
                0xC002_3F00,
                0x2000,
                0,
                8 | (1 << 20) | (1 << 23),
                0xC003_3700,
                5 << 8,
                0x10,
                0,
                5,
                0xC005_3C00,
                3 | (1 << 4),
                0x20,
                0,
                1,
                0xFF,
                10,
                0xC006_4900,
                0x28 | (5 << 8),
                (1 << 29) | (2 << 24),
                0x30,
                0,
                9,
                0,
                0x77,
                0xC000_4200,
                0
            ]
        );
    }
}
