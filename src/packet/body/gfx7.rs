//! The gfx7 (PS4, Sea Islands) forms of the bodies whose layout or names
//! differ from gfx10.3 (packets.md §3 "gfx7" notes, Mesa's gfx-level
//! branches): the body types call these from their `*_for` methods when the
//! family is [`GpuFamily::Gfx7`](crate::regs::db::GpuFamily::Gfx7).
//!
//! - DMA_DATA's COMMAND word: BYTE_COUNT \[20:0\], DISABLE_WR_CONFIRM \[21\],
//!   SRC_SWAP \[23:22\], DST_SWAP \[25:24\] (gfx9+: BYTE_COUNT \[25:0\], DIS_WC \[31\]);
//! - RELEASE_MEM, which gfx7 runs on compute rings only: COUNT 5 (no
//!   INT_CTXID), INT_SEL \[25:24\], the old cache-action bits in dw0 \[27:12\];
//! - EVENT_WRITE_EOP / RELEASE_MEM cache-action bits by name
//!   (TCL1_VOL_ACTION_ENA \[12\], TC_VOL_ACTION_ENA \[13\], TC_WB_ACTION_ENA \[15\],
//!   TCL1_ACTION_ENA \[16\], TC_ACTION_ENA \[17\]; RELEASE_MEM's TC_NC \[19\],
//!   TC_WC \[20\], TC_MD \[21\]; ATC \[24\], CACHE_POLICY \[26:25\], VOLATILE \[27\]);
//! - ACQUIRE_MEM (no GCR_CNTL) and SURFACE_SYNC named by the CP_COHER_*
//!   registers their dwords load, with gfx7's CP_COHER_CNTL bits.

use super::events::data_sel_name;
use super::{
    addr_hi, bit, bits, hi32, lo32, put, qword, AcquireMem, BodyError, DmaData, ReleaseMem, SurfaceSync, Words,
};
use crate::memory::address_from_dwords;
use crate::packet::field::{BodyField, FieldValue as V, Layout};
use crate::packet::Opcode;

/// BYTE_COUNT, DISABLE_WR_CONFIRM and the two swaps of a gfx7 COMMAND word.
pub(super) fn dma_command_fields(command: u32) -> (u32, bool, (u32, u32)) {
    (bits(command, 0, 20), bit(command, 21), (bits(command, 22, 23), bits(command, 24, 25)))
}

/// The gfx7-only bits of a COMMAND word: BYTE_COUNT, DISABLE_WR_CONFIRM,
/// SRC_SWAP, DST_SWAP.
pub(super) fn dma_command(d: &DmaData) -> u32 {
    put(d.byte_count, 0, 20)
        | put(d.disable_write_confirm.into(), 21, 21)
        | put(d.swaps.0, 22, 23)
        | put(d.swaps.1, 24, 25)
}

/// RELEASE_MEM (the compute-ring form) or EVENT_WRITE_EOP, as gfx7 lays them out.
pub(super) fn decode_release(w: Words<'_>) -> Result<ReleaseMem, BodyError> {
    if w.opcode == Opcode::EVENT_WRITE_EOP {
        return ReleaseMem::decode_eop(w);
    }
    let d0 = w.dw(0)?;
    let d1 = w.dw(1)?;
    let data_sel = bits(d1, 29, 31);
    // 32-bit data and GDS dwords are dword aligned, the rest qword aligned.
    let align = if matches!(data_sel, 1 | 5) { 2 } else { 3 };
    Ok(ReleaseMem {
        opcode: Opcode::RELEASE_MEM,
        event_type: bits(d0, 0, 5),
        event_index: bits(d0, 8, 11),
        cache_control: bits(d0, 12, 27),
        dst_sel: bits(d1, 16, 17),
        int_sel: bits(d1, 24, 25),
        data_sel,
        address: address_from_dwords(w.dw(2)?, w.dw(3)?, align),
        data: qword(w.dw(4)?, w.dw(5)?),
        int_ctxid: 0,
        legacy: true,
    })
}

/// The gfx7 body of a release: EVENT_WRITE_EOP as on every family,
/// RELEASE_MEM in its 6-dword compute-ring form.
pub(super) fn encode_release(r: &ReleaseMem, out: &mut Vec<u32>) {
    if r.opcode == Opcode::EVENT_WRITE_EOP {
        super::Body::encode_body(r, out);
        return;
    }
    out.extend_from_slice(&[
        r.op_word_to(27),
        put(r.dst_sel, 16, 17) | put(r.int_sel, 24, 25) | put(r.data_sel, 29, 31),
        lo32(r.address),
        addr_hi(r.address),
        lo32(r.data),
        hi32(r.data),
    ]);
}

/// The cache-action bits of a gfx7 release (dw0), as `(bit in dw0, name)`.
const EOP_ACTIONS: [(u32, &str); 5] = [
    (12, "TCL1_VOL_ACTION_ENA"),
    (13, "TC_VOL_ACTION_ENA"),
    (15, "TC_WB_ACTION_ENA"),
    (16, "TCL1_ACTION_ENA"),
    (17, "TC_ACTION_ENA"),
];

/// The further cache actions of gfx7's RELEASE_MEM (`sid.h` EOP_TC_*).
const RELEASE_MEM_ACTIONS: [(u32, &str); 3] =
    [(19, "TC_NC_ACTION_ENA"), (20, "TC_WC_ACTION_ENA"), (21, "TC_MD_ACTION_ENA")];

/// A gfx7 release's fields: the event, each cache action by name, the
/// write's ATC, CACHE_POLICY and VOLATILE bits, all of them as one
/// CACHE_CONTROL (dw0 \[27:12\]), then where and what it writes (no
/// INT_CTXID: gfx7 has none).
pub(super) fn release_fields<'a>(r: &ReleaseMem, out: &mut Vec<BodyField<'a>>) {
    // `cache_control` holds dw0 from bit 12 up.
    let dw0 = r.cache_control << 12;
    out.extend([
        BodyField::new("EVENT_TYPE", V::Dec(r.event_type.into())),
        BodyField::new("EVENT", V::Event(r.event_type)),
        BodyField::new("EVENT_INDEX", V::Dec(r.event_index.into())),
    ]);
    let extra: &[(u32, &'static str)] = if r.opcode == Opcode::RELEASE_MEM { &RELEASE_MEM_ACTIONS } else { &[] };
    for &(n, name) in EOP_ACTIONS.iter().chain(extra) {
        out.push(BodyField::new(name, V::Flag(bit(dw0, n))));
    }
    out.extend([
        BodyField::new("ATC", V::Flag(bit(dw0, 24))),
        BodyField::new("CACHE_POLICY", V::Dec(bits(dw0, 25, 26).into())),
        BodyField::new("VOLATILE", V::Flag(bit(dw0, 27))),
        BodyField::new("CACHE_CONTROL", V::Hex(r.cache_control.into())),
        BodyField::new("DST_SEL", V::Dec(r.dst_sel.into())),
        BodyField::new("INT_SEL", V::Dec(r.int_sel.into())),
        BodyField::new("DATA_SEL", V::Selector(r.data_sel, data_sel_name(r.data_sel))),
        BodyField::new("ADDR", V::Hex(r.address)),
        BodyField::new("DATA", V::Hex(r.data)),
    ]);
}

fn engine(engine: u32) -> V<'static> {
    V::Name(if engine == 1 { "ME" } else { "PFP" })
}

/// A gfx7 ACQUIRE_MEM's fields, one per CP_COHER_* register it loads.
pub(super) fn acquire_fields<'a>(a: &AcquireMem, out: &mut Vec<BodyField<'a>>) {
    let size_hi = put(hi32(a.size), 0, 7) | put(a.size_hi_rest, 8, 23);
    out.extend([
        BodyField::with_layout("CP_COHER_CNTL", V::Hex(a.coher_cntl.into()), Layout::Register("CP_COHER_CNTL")),
        BodyField::new("ENGINE", engine(a.engine)),
        BodyField::new("CP_COHER_SIZE", V::Hex(lo32(a.size).into())),
        BodyField::with_layout("CP_COHER_SIZE_HI", V::Raw(size_hi), Layout::Register("CP_COHER_SIZE_HI")),
        BodyField::new("CP_COHER_BASE", V::Hex(lo32(a.base).into())),
        BodyField::with_layout("CP_COHER_BASE_HI", V::Raw(hi32(a.base)), Layout::Register("CP_COHER_BASE_HI")),
        BodyField::new("POLL_INTERVAL", V::Dec(a.poll_interval.into())),
    ]);
}

/// A gfx7 SURFACE_SYNC's fields, named by the registers they load.
pub(super) fn surface_sync_fields<'a>(s: &SurfaceSync, out: &mut Vec<BodyField<'a>>) {
    out.extend([
        BodyField::new("ENGINE", engine(s.engine)),
        BodyField::with_layout("CP_COHER_CNTL", V::Hex(s.coher_cntl.into()), Layout::Register("CP_COHER_CNTL")),
        BodyField::new("CP_COHER_SIZE", V::Hex(s.size.into())),
        BodyField::new("CP_COHER_BASE", V::Hex(s.base.into())),
        BodyField::new("POLL_INTERVAL", V::Dec(s.poll_interval.into())),
    ]);
}
