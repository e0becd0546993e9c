//! Packets the core decodes but does not act on (markers, hints and
//! synchronisation points that a serial emulator passes): PFP_SYNC_ME,
//! SWITCH_BUFFER and INCREMENT_DE_COUNTER (one dummy dword), PREAMBLE_CNTL,
//! WAIT_ON_CE_COUNTER, PRIME_UTCL2 and FRAME_CONTROL; WAIT_FOR_WRITE_CONFIRM,
//! whose layout the reference does not give, keeps its dwords
//! ([`super::Opaque`]).

use super::{bit, bits, hi32, lo32, put, Body, BodyError, Words};
use crate::packet::field::{BodyField, FieldValue as V};
use crate::packet::Opcode;

/// A body of one dummy dword: PFP_SYNC_ME (0x42), INCREMENT_DE_COUNTER
/// (0x85), SWITCH_BUFFER (0x8B).
///
/// ```
/// use pm4core::packet::body::{Body, DummyDword};
/// use pm4core::packet::Opcode;
///
/// let sync = DummyDword::decode_body(Opcode::PFP_SYNC_ME, &[0])?;
/// assert_eq!(sync.to_string(), "DUMMY_DATA=0x0");
/// assert_eq!(sync.encode(), [0xC000_4200, 0]);
/// # Ok::<(), pm4core::packet::body::BodyError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DummyDword {
    /// PFP_SYNC_ME, INCREMENT_DE_COUNTER or SWITCH_BUFFER.
    pub opcode: Opcode,
    /// DUMMY_DATA, dw0 (drivers write 0).
    pub dummy: u32,
}

impl<'a> Body<'a> for DummyDword {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        Ok(Self { opcode, dummy: Words::new(opcode, body).dw(0)? })
    }

    fn opcode(&self) -> Opcode {
        self.opcode
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.push(self.dummy);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([BodyField::new("DUMMY_DATA", V::Hex(self.dummy.into()))])
    }
}

/// PREAMBLE_CNTL (0x4A): marks the preamble and the clear-state
/// initialisation regions.
///
/// ```
/// use pm4core::packet::body::{Body, PreambleCntl};
/// use pm4core::packet::Opcode;
///
/// let p = PreambleCntl::decode_body(Opcode::PREAMBLE_CNTL, &[0x3000_0000])?;
/// assert_eq!(p.to_string(), "COMMAND=3(end_clear_state_init) IB_OFFSET=0");
/// # Ok::<(), pm4core::packet::body::BodyError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PreambleCntl {
    /// COMMAND, dw0 \[31:28\]: 0 preamble begin, 1 preamble end, 2 begin
    /// and 3 end of the clear-state initialisation.
    pub command: u32,
    /// IB_OFFSET, dw0 \[19:0\] (gfx6-8).
    pub ib_offset: u32,
}

impl<'a> Body<'a> for PreambleCntl {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let d0 = Words::new(opcode, body).dw(0)?;
        Ok(Self { command: bits(d0, 28, 31), ib_offset: bits(d0, 0, 19) })
    }

    fn opcode(&self) -> Opcode {
        Opcode::PREAMBLE_CNTL
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.push(put(self.ib_offset, 0, 19) | put(self.command, 28, 31));
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        let command = match self.command {
            0 => "preamble_begin",
            1 => "preamble_end",
            2 => "begin_clear_state_init",
            3 => "end_clear_state_init",
            _ => "reserved",
        };
        out.extend([
            BodyField::new("COMMAND", V::Selector(self.command, command)),
            BodyField::new("IB_OFFSET", V::Dec(self.ib_offset.into())),
        ])
    }
}

/// WAIT_ON_CE_COUNTER (0x86): the DE waits until the constant engine's
/// counter is ahead of its own.
///
/// ```
/// use pm4core::packet::body::{Body, WaitOnCeCounter};
/// use pm4core::packet::Opcode;
///
/// let w = WaitOnCeCounter::decode_body(Opcode::WAIT_ON_CE_COUNTER, &[1])?;
/// assert!(w.cond_surface_sync && !w.force_sync);
/// assert_eq!(w.to_string(), "COND_SURFACE_SYNC=1 FORCE_SYNC=0 VOLATILE=0");
/// # Ok::<(), pm4core::packet::body::BodyError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitOnCeCounter {
    /// COND_SURFACE_SYNC, dw0 bit 0.
    pub cond_surface_sync: bool,
    /// FORCE_SYNC, dw0 bit 1.
    pub force_sync: bool,
    /// VOLATILE, dw0 bit 27 (gfx7).
    pub volatile: bool,
}

impl<'a> Body<'a> for WaitOnCeCounter {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let d0 = Words::new(opcode, body).dw(0)?;
        Ok(Self { cond_surface_sync: bit(d0, 0), force_sync: bit(d0, 1), volatile: bit(d0, 27) })
    }

    fn opcode(&self) -> Opcode {
        Opcode::WAIT_ON_CE_COUNTER
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.push(
            put(self.cond_surface_sync.into(), 0, 0)
                | put(self.force_sync.into(), 1, 1)
                | put(self.volatile.into(), 27, 27),
        );
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("COND_SURFACE_SYNC", V::Flag(self.cond_surface_sync)),
            BodyField::new("FORCE_SYNC", V::Flag(self.force_sync)),
            BodyField::new("VOLATILE", V::Flag(self.volatile)),
        ])
    }
}

/// PRIME_UTCL2 (0x5D): a hint to prefetch the translations of
/// REQUESTED_PAGES pages from ADDR.
///
/// ```
/// use pm4core::packet::body::{Body, PrimeUtcl2};
/// use pm4core::packet::Opcode;
///
/// let p = PrimeUtcl2::decode_body(Opcode::PRIME_UTCL2, &[0x8000_0001, 0x1000, 0x8001, 4])?;
/// assert_eq!(p.address, 0x8001_0000_1000);
/// assert_eq!(p.to_string(), "CACHE_PERM=1 PRIME_MODE=0 ENGINE_SEL=2 ADDR=0x800100001000 REQUESTED_PAGES=4");
/// # Ok::<(), pm4core::packet::body::BodyError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrimeUtcl2 {
    /// CACHE_PERM, dw0 \[2:0\].
    pub cache_perm: u32,
    /// PRIME_MODE, dw0 bit 3.
    pub prime_mode: bool,
    /// ENGINE_SEL, dw0 \[31:30\].
    pub engine_sel: u32,
    /// ADDR_LO (dw1) and ADDR_HI (dw2), as written.
    pub address: u64,
    /// REQUESTED_PAGES, dw3 \[13:0\].
    pub requested_pages: u32,
}

impl<'a> Body<'a> for PrimeUtcl2 {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let d0 = w.dw(0)?;
        Ok(Self {
            cache_perm: bits(d0, 0, 2),
            prime_mode: bit(d0, 3),
            engine_sel: bits(d0, 30, 31),
            address: u64::from(w.dw(1)?) | (u64::from(w.dw(2)?) << 32),
            requested_pages: bits(w.dw(3)?, 0, 13),
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::PRIME_UTCL2
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            put(self.cache_perm, 0, 2) | put(self.prime_mode.into(), 3, 3) | put(self.engine_sel, 30, 31),
            lo32(self.address),
            hi32(self.address),
            put(self.requested_pages, 0, 13),
        ]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("CACHE_PERM", V::Dec(self.cache_perm.into())),
            BodyField::new("PRIME_MODE", V::Flag(self.prime_mode)),
            BodyField::new("ENGINE_SEL", V::Dec(self.engine_sel.into())),
            BodyField::new("ADDR", V::Hex(self.address)),
            BodyField::new("REQUESTED_PAGES", V::Dec(self.requested_pages.into())),
        ])
    }
}

/// FRAME_CONTROL (0x90): begins or ends a trusted-memory (TMZ) region.
///
/// ```
/// use pm4core::packet::body::{Body, FrameControl};
/// use pm4core::packet::Opcode;
///
/// let f = FrameControl::decode_body(Opcode::FRAME_CONTROL, &[0x1000_0001])?;
/// assert_eq!(f.to_string(), "TMZ=1 COMMAND=1");
/// # Ok::<(), pm4core::packet::body::BodyError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameControl {
    /// TMZ, dw0 bit 0.
    pub tmz: bool,
    /// COMMAND, dw0 \[31:28\].
    pub command: u32,
}

impl<'a> Body<'a> for FrameControl {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let d0 = Words::new(opcode, body).dw(0)?;
        Ok(Self { tmz: bit(d0, 0), command: bits(d0, 28, 31) })
    }

    fn opcode(&self) -> Opcode {
        Opcode::FRAME_CONTROL
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.push(put(self.tmz.into(), 0, 0) | put(self.command, 28, 31));
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([BodyField::new("TMZ", V::Flag(self.tmz)), BodyField::new("COMMAND", V::Dec(self.command.into()))])
    }
}

super::display_from_fields!(DummyDword, PreambleCntl, WaitOnCeCounter, PrimeUtcl2, FrameControl);
