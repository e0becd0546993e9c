//! Building command buffers: what an emulator that implements the console's
//! graphics library at a high level needs to emit PM4 streams.
//!
//! A [`CommandBuffer`] appends packets: typed bodies from
//! [`crate::packet::body`] (each encodes its own dwords), register writes
//! by absolute register index (the builder picks SET_CONFIG/SH/CONTEXT/
//! UCONFIG_REG by the register's space), calls and chains to other
//! buffers, and raw type-3 packets for anything else. [`Label`]s mark
//! where a packet starts so its dwords can be patched once a value is
//! known (a chain's target, a fence value).
//!
//! A buffer encodes its typed packets in one GPU family's layouts
//! ([`CommandBuffer::for_family`]; gfx10.3 by default): a PS4 emulator
//! builds gfx7 streams with the same body types.
//!
//! ```
//! use pm4core::packet::body::{DrawBody, ReleaseMem};
//! use pm4core::packet::builder::CommandBuffer;
//! use pm4core::regs::gfx103 as r;
//!
//! let initiator = 2; // VGT_DRAW_INITIATOR: SOURCE_SELECT auto-index
//! let mut cb = CommandBuffer::new()
//!     .set_registers(r::SPI_SHADER_PGM_LO_PS, &[0x1000_0000 >> 8])
//!     .set_registers(r::VGT_PRIMITIVE_TYPE, &[4])
//!     .packet(&DrawBody::IndexAuto { index_count: 3, initiator });
//! let fence = cb.label();
//! cb = cb.packet(&ReleaseMem::new(0x28, 1, 0x10_0000, 0, 2));
//! // The fence value is known later: patch DATA (body dword 4).
//! cb.patch(fence, 5, 7);
//! assert_eq!(cb.len_dw(), 3 + 3 + 3 + 8);
//! assert_eq!(cb.dwords()[fence.offset_dw() as usize + 5], 7);
//! ```

use super::body::{type3_header, Body, IndirectBuffer, ReleaseMem, WaitRegMem, WriteData};
use super::body::{CompareFunction, SetRegisters};
use super::{Header, Opcode};
use crate::regs::db::GpuFamily;

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

/// A command buffer being built, packet by packet.
///
/// Methods take and return the buffer, so a stream reads as one chain;
/// in a loop, reassign (`cb = cb.packet(..)`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandBuffer {
    dw: Vec<u32>,
    family: GpuFamily,
}

impl CommandBuffer {
    /// An empty buffer of gfx10.3 packets.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty buffer whose typed packets take `family`'s layouts.
    ///
    /// ```
    /// use pm4core::packet::body::{Body, DmaData};
    /// use pm4core::packet::builder::CommandBuffer;
    /// use pm4core::packet::Opcode;
    /// use pm4core::GpuFamily;
    ///
    /// // A PS4 stream: a 96-byte DMA_DATA copy and a fence with an interrupt.
    /// let body = [0x6030_0000, 0x12_9100, 0, 0x12_9100, 0, 0x0020_0060];
    /// let copy = DmaData::decode_body_for(GpuFamily::Gfx7, Opcode::DMA_DATA, &body)?;
    /// let cb = CommandBuffer::for_family(GpuFamily::Gfx7).packet(&copy).release32(0x1000, 1);
    /// assert_eq!(cb.dwords()[1..7], body);
    /// // gfx7's graphics ring has no RELEASE_MEM: the fence is an EVENT_WRITE_EOP.
    /// assert_eq!(cb.dwords()[7], 0xC004_4700);
    /// # Ok::<(), pm4core::packet::body::BodyError>(())
    /// ```
    pub fn for_family(family: GpuFamily) -> Self {
        CommandBuffer { dw: Vec::new(), family }
    }

    /// The family whose layouts the typed packets take.
    pub fn family(&self) -> GpuFamily {
        self.family
    }

    /// The dwords so far.
    pub fn dwords(&self) -> &[u32] {
        &self.dw
    }

    /// The dwords so far, mutable (to patch by hand).
    pub fn dwords_mut(&mut self) -> &mut [u32] {
        &mut self.dw
    }

    /// The dwords.
    pub fn into_dwords(self) -> Vec<u32> {
        self.dw
    }

    /// The dwords as little-endian bytes (what guest memory holds).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.dw.iter().flat_map(|d| d.to_le_bytes()).collect()
    }

    /// Size in dwords (what a submission or an IB names).
    pub fn len_dw(&self) -> u32 {
        self.dw.len() as u32
    }

    /// Size in dwords (an alias of [`Self::len_dw`]).
    pub fn len(&self) -> u32 {
        self.len_dw()
    }

    /// True when nothing was appended.
    pub fn is_empty(&self) -> bool {
        self.dw.is_empty()
    }

    /// Where the next packet starts.
    pub fn label(&self) -> Label {
        Label(self.len_dw())
    }

    /// Overwrites dword `index` of the packet at `label` (0 = its header).
    /// An index past the buffer's end is ignored.
    pub fn patch(&mut self, label: Label, index: u32, value: u32) {
        if let Some(slot) = self.dw.get_mut(label.0.saturating_add(index) as usize) {
            *slot = value;
        }
    }

    /// Re-encodes the packet at `label` from `body` (which must have the
    /// same length: a fence value, a chain target known only later).
    pub fn patch_packet<'a, B: Body<'a>>(&mut self, label: Label, body: &B) {
        for (i, value) in body.encode_for(self.family).into_iter().enumerate() {
            self.patch(label, i as u32, value);
        }
    }

    /// Appends a typed packet (no predicate, graphics shader type).
    pub fn packet<'a, B: Body<'a>>(mut self, body: &B) -> Self {
        let at = self.dw.len();
        self.dw.push(0);
        body.encode_body_for(self.family, &mut self.dw);
        let body_dwords = (self.dw.len() - at - 1) as u32;
        if let Some(h) = self.dw.get_mut(at) {
            *h = type3_header(body.opcode(), body_dwords).0;
        }
        self
    }

    /// Appends a typed packet with the header's PREDICATE bit set.
    pub fn predicated<'a, B: Body<'a>>(self, body: &B) -> Self {
        self.with_header_bits(1, |cb| cb.packet(body))
    }

    /// Appends a typed packet with the header's SHADER_TYPE bit set (a
    /// compute packet on the graphics queue).
    pub fn compute<'a, B: Body<'a>>(self, body: &B) -> Self {
        self.with_header_bits(2, |cb| cb.packet(body))
    }

    fn with_header_bits(self, bits: u32, append: impl FnOnce(Self) -> Self) -> Self {
        let at = self.dw.len();
        let mut cb = append(self);
        if let Some(h) = cb.dw.get_mut(at) {
            *h |= bits;
        }
        cb
    }

    /// Appends a type-3 packet of `opcode` with a raw body. An empty body
    /// is sent as one zero dword (COUNT 0), as drivers emit packets whose
    /// body the CP ignores.
    pub fn pkt3(mut self, opcode: Opcode, body: &[u32]) -> Self {
        self.dw.push(Header::type3(opcode, body.len().max(1) as u32).0);
        if body.is_empty() {
            self.dw.push(0);
        }
        self.dw.extend_from_slice(body);
        self
    }

    /// [`Self::pkt3`] with the PREDICATE bit set.
    pub fn pkt3_pred(self, opcode: Opcode, body: &[u32]) -> Self {
        self.with_header_bits(1, |cb| cb.pkt3(opcode, body))
    }

    /// Appends dwords as they are (data, or a packet built by hand).
    pub fn raw(mut self, words: &[u32]) -> Self {
        self.dw.extend_from_slice(words);
        self
    }

    /// Writes `values` to consecutive registers from absolute register
    /// index `register` (`regs::gfx103::NAME`), with the SET_*_REG packet
    /// of the register's space. A register no SET_*_REG reaches is written
    /// with WRITE_DATA (DST_SEL register).
    pub fn set_registers(self, register: u32, values: &[u32]) -> Self {
        match SetRegisters::at(register, values) {
            Some(set) => self.packet(&set),
            None => self.packet(&WriteData::register(register, values)),
        }
    }

    /// A SET_*_REG packet of `opcode` writing `values` from absolute
    /// register `register` (its offset taken from the opcode's space, so a
    /// register outside it wraps as the hardware would see the offset).
    pub fn set_reg(self, opcode: Opcode, base: u32, register: u32, values: &[u32]) -> Self {
        let set = SetRegisters { opcode, offset: register.wrapping_sub(base) & 0xFFFF, index: 0, values };
        self.packet(&set)
    }

    /// SET_CONTEXT_REG from absolute register `register`.
    pub fn set_context(self, register: u32, values: &[u32]) -> Self {
        self.set_reg(Opcode::SET_CONTEXT_REG, crate::regs::space::CONTEXT, register, values)
    }

    /// SET_SH_REG from absolute register `register`.
    pub fn set_sh(self, register: u32, values: &[u32]) -> Self {
        self.set_reg(Opcode::SET_SH_REG, crate::regs::space::SH, register, values)
    }

    /// SET_UCONFIG_REG from absolute register `register`.
    pub fn set_uconfig(self, register: u32, values: &[u32]) -> Self {
        self.set_reg(Opcode::SET_UCONFIG_REG, crate::regs::space::UCONFIG, register, values)
    }

    /// WRITE_DATA of `data` to memory at `address`.
    pub fn write_mem(self, address: u64, data: &[u32]) -> Self {
        self.packet(&WriteData::memory(address, data))
    }

    /// WAIT_REG_MEM on memory: wait until `(*address & mask) function
    /// reference` (FUNCTION as its 3-bit code).
    pub fn wait_mem(self, address: u64, function: u32, reference: u32, mask: u32) -> Self {
        let wait = WaitRegMem {
            poll_interval: 10,
            ..WaitRegMem::memory(address, CompareFunction::from_bits(function), reference, mask)
        };
        self.packet(&wait)
    }

    /// INDIRECT_BUFFER to the `size_dw`-dword buffer at `address`: a call,
    /// or with `chain` a chain (the rest of this buffer is not run). The
    /// minimal form: VALID is set only on the chain (the CP does not check
    /// it on a call); [`Self::call`] and [`Self::chain`] set it always.
    pub fn ib(self, address: u64, size_dw: u32, chain: bool) -> Self {
        let ib = if chain { IndirectBuffer::chain(address, size_dw) } else { IndirectBuffer::call(address, size_dw) };
        self.packet(&IndirectBuffer { valid: chain, ..ib })
    }

    /// Calls the `size_dw`-dword buffer at `address`.
    pub fn call(self, address: u64, size_dw: u32) -> Self {
        self.packet(&IndirectBuffer::call(address, size_dw))
    }

    /// Chains to the `size_dw`-dword buffer at `address`.
    pub fn chain(self, address: u64, size_dw: u32) -> Self {
        self.packet(&IndirectBuffer::chain(address, size_dw))
    }

    /// RELEASE_MEM BOTTOM_OF_PIPE_TS writing the 32-bit `data` to
    /// `address` once earlier work is done, with an interrupt (INT_SEL 2,
    /// INT_CTXID 0x77). On gfx7, whose graphics ring has no RELEASE_MEM,
    /// the same release as an EVENT_WRITE_EOP (no INT_CTXID).
    pub fn release32(self, address: u64, data: u32) -> Self {
        let release = ReleaseMem { int_ctxid: 0x77, ..ReleaseMem::new(0x28, 1, address, u64::from(data), 2) };
        match self.family {
            GpuFamily::Gfx103 => self.packet(&release),
            GpuFamily::Gfx7 => {
                self.packet(&ReleaseMem { opcode: Opcode::EVENT_WRITE_EOP, int_ctxid: 0, legacy: false, ..release })
            }
        }
    }

    /// Appends another buffer's dwords.
    pub fn append(mut self, other: &CommandBuffer) -> Self {
        self.dw.extend_from_slice(&other.dw);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_go_to_their_space() {
        use crate::regs::gfx103 as r;
        let cb = CommandBuffer::new()
            .set_registers(r::SPI_SHADER_PGM_LO_PS, &[1])
            .set_registers(r::DB_RENDER_CONTROL, &[2])
            .set_registers(r::VGT_PRIMITIVE_TYPE, &[3]);
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
    fn the_test_helpers_emit_what_they_did() {
        let cb = CommandBuffer::new()
            .ib(0x1000, 4, false)
            .ib(0x2000, 8, true)
            .write_mem(0x10, &[5])
            .wait_mem(0x20, 3, 1, 0xFF)
            .release32(0x30, 9)
            .pkt3(Opcode::PFP_SYNC_ME, &[]);
        assert_eq!(
            cb.dwords(),
            &[
                0xC002_3F00,
                0x1000,
                0,
                4,
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
