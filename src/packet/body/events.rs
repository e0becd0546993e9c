//! Events and cache actions: EVENT_WRITE, RELEASE_MEM, EVENT_WRITE_EOP,
//! EVENT_WRITE_EOS, ACQUIRE_MEM, SURFACE_SYNC, OCCLUSION_QUERY.

use super::{addr_hi, bit, bits, gfx7, hi32, lo32, put, qword, Body, BodyError, Words};
use crate::memory::address_from_dwords;
use crate::packet::field::{BodyField, FieldValue as V, Layout};
use crate::packet::Opcode;
use crate::regs::db::GpuFamily;

/// EVENT_WRITE (0x46).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventWrite {
    pub event_type: u32,
    pub event_index: u32,
    /// Present for the sample / ZPASS events (COUNT = 2).
    pub address: Option<u64>,
}

impl EventWrite {
    /// An event without an address.
    pub fn new(event_type: u32, event_index: u32) -> Self {
        EventWrite { event_type, event_index, address: None }
    }
}

impl<'a> Body<'a> for EventWrite {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let d0 = w.dw(0)?;
        let address = match (w.get(1), w.get(2)) {
            (Some(lo), Some(hi)) => Some(address_from_dwords(lo, hi, 3)),
            _ => None,
        };
        Ok(Self { event_type: bits(d0, 0, 5), event_index: bits(d0, 8, 11), address })
    }

    fn opcode(&self) -> Opcode {
        Opcode::EVENT_WRITE
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.push(put(self.event_type, 0, 5) | put(self.event_index, 8, 11));
        if let Some(a) = self.address {
            out.extend_from_slice(&[lo32(a), addr_hi(a)]);
        }
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("EVENT_TYPE", V::Dec(self.event_type.into())),
            BodyField::new("EVENT", V::Event(self.event_type)),
            BodyField::new("EVENT_INDEX", V::Dec(self.event_index.into())),
        ]);
        if let Some(a) = self.address {
            out.push(BodyField::new("ADDR", V::Hex(a)));
        }
    }
}

/// RELEASE_MEM (0x49) and the gfx7 EVENT_WRITE_EOP (0x47) share this shape.
///
/// On gfx7 ([`Body::decode_body_for`] with [`GpuFamily::Gfx7`]) RELEASE_MEM
/// is the compute-ring form (COUNT 5: no INT_CTXID, INT_SEL \[25:24\]) and
/// both packets carry the gfx7 cache-action bits in `cache_control`
/// (dw0 \[27:12\]), listed by their names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReleaseMem {
    /// RELEASE_MEM or EVENT_WRITE_EOP.
    pub opcode: Opcode,
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
    /// RELEASE_MEM in the gfx7/8 compute form (COUNT 5, no INT_CTXID).
    pub legacy: bool,
}

impl ReleaseMem {
    /// A RELEASE_MEM of `event_type` (index 5) writing `data_sel` data to
    /// `address` and raising `int_sel`.
    pub fn new(event_type: u32, data_sel: u32, address: u64, data: u64, int_sel: u32) -> Self {
        ReleaseMem {
            opcode: Opcode::RELEASE_MEM,
            event_type,
            event_index: 5,
            cache_control: 0,
            dst_sel: 0,
            int_sel,
            data_sel,
            address,
            data,
            int_ctxid: 0,
            legacy: false,
        }
    }

    fn op_word(&self) -> u32 {
        self.op_word_to(if self.opcode == Opcode::EVENT_WRITE_EOP { 27 } else { 23 })
    }

    /// The first body dword: event, index and the cache bits from bit 12
    /// up to `cache_hi`.
    pub(super) fn op_word_to(&self, cache_hi: u32) -> u32 {
        put(self.event_type, 0, 5) | put(self.event_index, 8, 11) | put(self.cache_control, 12, cache_hi)
    }

    pub(super) fn decode_eop(w: Words<'_>) -> Result<Self, BodyError> {
        let d0 = w.dw(0)?;
        let d2 = w.dw(2)?;
        Ok(Self {
            opcode: Opcode::EVENT_WRITE_EOP,
            event_type: bits(d0, 0, 5),
            event_index: bits(d0, 8, 11),
            cache_control: bits(d0, 12, 27),
            dst_sel: bits(d2, 16, 17),
            int_sel: bits(d2, 24, 25),
            data_sel: bits(d2, 29, 31),
            address: address_from_dwords(w.dw(1)?, bits(d2, 0, 15), 2),
            data: qword(w.dw(3)?, w.dw(4)?),
            int_ctxid: 0,
            legacy: false,
        })
    }
}

impl<'a> Body<'a> for ReleaseMem {
    /// RELEASE_MEM: gfx10.3 (COUNT 6) or gfx7/8 compute (COUNT 5, no
    /// INT_CTXID); EVENT_WRITE_EOP (gfx6-8 graphics ring, still seen in PS5
    /// streams).
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        if opcode == Opcode::EVENT_WRITE_EOP {
            return Self::decode_eop(w);
        }
        let d0 = w.dw(0)?;
        let d1 = w.dw(1)?;
        let data_sel = bits(d1, 29, 31);
        // 32-bit data, GDS dwords and the atomic add are dword aligned.
        let align = if matches!(data_sel, 1 | 5 | 7) { 2 } else { 3 };
        Ok(Self {
            opcode: Opcode::RELEASE_MEM,
            event_type: bits(d0, 0, 5),
            event_index: bits(d0, 8, 11),
            cache_control: bits(d0, 12, 23),
            dst_sel: bits(d1, 16, 17),
            int_sel: bits(d1, 24, 26),
            data_sel,
            address: address_from_dwords(w.dw(2)?, w.dw(3)?, align),
            data: qword(w.dw(4)?, w.dw(5)?),
            int_ctxid: w.get(6).map_or(0, |v| bits(v, 0, 27)),
            legacy: w.len() < 7,
        })
    }

    fn decode_body_for(family: GpuFamily, opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        match family {
            GpuFamily::Gfx103 => Self::decode_body(opcode, body),
            GpuFamily::Gfx7 => gfx7::decode_release(Words::new(opcode, body)),
        }
    }

    fn encode_body_for(&self, family: GpuFamily, out: &mut Vec<u32>) {
        match family {
            GpuFamily::Gfx103 => self.encode_body(out),
            GpuFamily::Gfx7 => gfx7::encode_release(self, out),
        }
    }

    fn fields_into_for(&self, family: GpuFamily, out: &mut Vec<BodyField<'a>>) {
        match family {
            GpuFamily::Gfx103 => self.fields_into(out),
            GpuFamily::Gfx7 => gfx7::release_fields(self, out),
        }
    }

    fn opcode(&self) -> Opcode {
        self.opcode
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        if self.opcode == Opcode::EVENT_WRITE_EOP {
            out.extend_from_slice(&[
                self.op_word(),
                lo32(self.address),
                put(hi32(self.address), 0, 15)
                    | put(self.dst_sel, 16, 17)
                    | put(self.int_sel, 24, 25)
                    | put(self.data_sel, 29, 31),
                lo32(self.data),
                hi32(self.data),
            ]);
            return;
        }
        out.extend_from_slice(&[
            self.op_word(),
            put(self.dst_sel, 16, 17) | put(self.int_sel, 24, 26) | put(self.data_sel, 29, 31),
            lo32(self.address),
            addr_hi(self.address),
            lo32(self.data),
            hi32(self.data),
        ]);
        if !self.legacy {
            out.push(put(self.int_ctxid, 0, 27));
        }
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        let data = data_sel_name(self.data_sel);
        out.extend([
            BodyField::new("EVENT_TYPE", V::Dec(self.event_type.into())),
            BodyField::new("EVENT", V::Event(self.event_type)),
            BodyField::new("EVENT_INDEX", V::Dec(self.event_index.into())),
            BodyField::new("GCR_CNTL", V::Hex(self.cache_control.into())),
            BodyField::new("DST_SEL", V::Dec(self.dst_sel.into())),
            BodyField::new("INT_SEL", V::Dec(self.int_sel.into())),
            BodyField::new("DATA_SEL", V::Selector(self.data_sel, data)),
            BodyField::new("ADDR", V::Hex(self.address)),
            BodyField::new("DATA", V::Hex(self.data)),
            BodyField::new("INT_CTXID", V::Hex(self.int_ctxid.into())),
        ]);
        if self.opcode == Opcode::RELEASE_MEM {
            out.push(BodyField::with_layout(
                "RELEASE_MEM_OP",
                V::Raw(self.op_word()),
                Layout::PacketType("RELEASE_MEM_OP"),
            ));
        }
    }
}

/// The name of a release's DATA_SEL value.
pub(super) fn data_sel_name(data_sel: u32) -> &'static str {
    match data_sel {
        0 => "none",
        1 => "data32",
        2 => "data64",
        3 => "gpu_clock",
        4 => "system_clock",
        5 => "gds",
        7 => "atomic_add32",
        _ => "reserved",
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

impl<'a> Body<'a> for EventWriteEos {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let d0 = w.dw(0)?;
        let d2 = w.dw(2)?;
        Ok(Self {
            event_type: bits(d0, 0, 5),
            event_index: bits(d0, 8, 11),
            address: address_from_dwords(w.dw(1)?, bits(d2, 0, 15), 2),
            command: bits(d2, 29, 31),
            data: w.dw(3)?,
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::EVENT_WRITE_EOS
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            put(self.event_type, 0, 5) | put(self.event_index, 8, 11),
            lo32(self.address),
            put(hi32(self.address), 0, 15) | put(self.command, 29, 31),
            self.data,
        ]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("EVENT_TYPE", V::Dec(self.event_type.into())),
            BodyField::new("EVENT", V::Event(self.event_type)),
            BodyField::new("EVENT_INDEX", V::Dec(self.event_index.into())),
            BodyField::new("ADDR", V::Hex(self.address)),
            BodyField::new("COMMAND", V::Dec(self.command.into())),
            BodyField::new("DATA", V::Hex(self.data.into())),
        ])
    }
}

/// ACQUIRE_MEM (0x58): gfx10.3 (COUNT 6) or the 5-count form without
/// GCR_CNTL. On gfx7 ([`Body::decode_body_for`]) the body is always the
/// 5-count form (a longer body's extra dwords are not part of it) and its
/// fields are named by the CP_COHER_* registers they load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcquireMem {
    pub coher_cntl: u32,
    pub engine: u32,
    /// COHER_SIZE in 256-byte units (40 bits; all ones = everything).
    pub size: u64,
    /// COHER_SIZE_HI bits \[23:8\], beyond the 40-bit size (drivers set
    /// them with the size for "everything"), kept as they are.
    pub size_hi_rest: u32,
    pub base: u64,
    pub poll_interval: u32,
    pub gcr_cntl: Option<u32>,
}

impl AcquireMem {
    /// A whole-memory acquire with the gfx10.3 GCR_CNTL cache actions.
    pub fn all_memory(gcr_cntl: u32) -> Self {
        AcquireMem {
            coher_cntl: 0,
            engine: 0,
            size: 0xFF_FFFF_FFFF,
            size_hi_rest: 0xFFFF,
            base: 0,
            poll_interval: 10,
            gcr_cntl: Some(gcr_cntl),
        }
    }
}

impl<'a> Body<'a> for AcquireMem {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let d0 = w.dw(0)?;
        Ok(Self {
            coher_cntl: bits(d0, 0, 30),
            engine: u32::from(bit(d0, 31)),
            size: qword(w.dw(1)?, bits(w.dw(2)?, 0, 7)),
            size_hi_rest: bits(w.dw(2)?, 8, 23),
            base: qword(w.dw(3)?, bits(w.dw(4)?, 0, 23)),
            poll_interval: bits(w.dw(5)?, 0, 15),
            gcr_cntl: w.get(6).map(|v| bits(v, 0, 18)),
        })
    }

    fn decode_body_for(family: GpuFamily, opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let acquire = Self::decode_body(opcode, body)?;
        Ok(match family {
            GpuFamily::Gfx103 => acquire,
            GpuFamily::Gfx7 => AcquireMem { gcr_cntl: None, ..acquire },
        })
    }

    fn encode_body_for(&self, family: GpuFamily, out: &mut Vec<u32>) {
        match family {
            GpuFamily::Gfx103 => self.encode_body(out),
            GpuFamily::Gfx7 => AcquireMem { gcr_cntl: None, ..*self }.encode_body(out),
        }
    }

    fn fields_into_for(&self, family: GpuFamily, out: &mut Vec<BodyField<'a>>) {
        match family {
            GpuFamily::Gfx103 => self.fields_into(out),
            GpuFamily::Gfx7 => gfx7::acquire_fields(self, out),
        }
    }

    fn opcode(&self) -> Opcode {
        Opcode::ACQUIRE_MEM
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            put(self.coher_cntl, 0, 30) | put(self.engine, 31, 31),
            lo32(self.size),
            put(hi32(self.size), 0, 7) | put(self.size_hi_rest, 8, 23),
            lo32(self.base),
            put(hi32(self.base), 0, 23),
            put(self.poll_interval, 0, 15),
        ]);
        if let Some(g) = self.gcr_cntl {
            out.push(put(g, 0, 18));
        }
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("COHER_CNTL", V::Hex(self.coher_cntl.into())),
            BodyField::new("ENGINE", V::Name(if self.engine == 1 { "ME" } else { "PFP" })),
            BodyField::new("COHER_SIZE", V::Hex(self.size)),
            BodyField::new("COHER_BASE", V::Hex(self.base)),
            BodyField::new("POLL_INTERVAL", V::Dec(self.poll_interval.into())),
        ]);
        if let Some(g) = self.gcr_cntl {
            out.push(BodyField::with_layout("GCR_CNTL", V::Hex(g.into()), Layout::PacketType("GCR_CNTL")));
        }
    }
}

/// SURFACE_SYNC (0x43, gfx7 form of ACQUIRE_MEM): sizes and bases in
/// 256-byte units. The layout is gfx7's on both families; on gfx7
/// ([`Body::fields_into_for`]) the fields are named by the CP_COHER_*
/// registers they load, CP_COHER_CNTL with gfx7's bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SurfaceSync {
    /// ENGINE, dw0 bit 31: 1 = ME.
    pub engine: u32,
    pub coher_cntl: u32,
    /// CP_COHER_SIZE (256-byte units; 0xFFFFFFFF = everything).
    pub size: u32,
    /// CP_COHER_BASE (256-byte units).
    pub base: u32,
    pub poll_interval: u32,
}

impl SurfaceSync {
    /// The byte size (`u64::MAX` for "everything").
    pub fn size_bytes(&self) -> u64 {
        if self.size == u32::MAX {
            u64::MAX
        } else {
            u64::from(self.size) << 8
        }
    }

    /// The byte address of the base.
    pub fn base_address(&self) -> u64 {
        u64::from(self.base) << 8
    }
}

impl<'a> Body<'a> for SurfaceSync {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let d0 = w.dw(0)?;
        Ok(Self {
            engine: u32::from(bit(d0, 31)),
            coher_cntl: bits(d0, 0, 30),
            size: w.dw(1)?,
            base: w.dw(2)?,
            poll_interval: w.get(3).map_or(0, |v| bits(v, 0, 15)),
        })
    }

    fn fields_into_for(&self, family: GpuFamily, out: &mut Vec<BodyField<'a>>) {
        match family {
            GpuFamily::Gfx103 => self.fields_into(out),
            GpuFamily::Gfx7 => gfx7::surface_sync_fields(self, out),
        }
    }

    fn opcode(&self) -> Opcode {
        Opcode::SURFACE_SYNC
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[
            put(self.coher_cntl, 0, 30) | put(self.engine, 31, 31),
            self.size,
            self.base,
            put(self.poll_interval, 0, 15),
        ]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("ENGINE", V::Name(if self.engine == 1 { "ME" } else { "PFP" })),
            BodyField::new("COHER_CNTL", V::Hex(self.coher_cntl.into())),
            BodyField::new("COHER_SIZE", V::Hex(self.size.into())),
            BodyField::new("COHER_BASE", V::Hex(self.base.into())),
            BodyField::new("POLL_INTERVAL", V::Dec(self.poll_interval.into())),
        ])
    }
}

/// OCCLUSION_QUERY (0x1F): sums the ZPASS records at START into the 64-bit
/// counter at QUERY.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OcclusionQuery {
    /// START_ADDR: the first render backend's (begin, end) record (16-byte aligned).
    pub start: u64,
    /// QUERY_ADDR: the 64-bit result (4-byte aligned).
    pub query: u64,
}

impl<'a> Body<'a> for OcclusionQuery {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        Ok(Self {
            start: address_from_dwords(w.dw(0)?, w.dw(1)?, 4),
            query: address_from_dwords(w.dw(2)?, w.dw(3)?, 2),
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::OCCLUSION_QUERY
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[lo32(self.start), addr_hi(self.start), lo32(self.query), addr_hi(self.query)]);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([BodyField::new("START_ADDR", V::Hex(self.start)), BodyField::new("QUERY_ADDR", V::Hex(self.query))])
    }
}

super::display_from_fields!(EventWrite, ReleaseMem, EventWriteEos, AcquireMem, SurfaceSync, OcclusionQuery);
