//! Disassembly to text for an emulator's log: a buffer of dwords, or the
//! one packet at its start.

use std::ffi::c_char;

use pm4core::disasm::{DisasmOptions, Disassembler};
use pm4core::packet::{split_packet, SplitError};

use crate::args::{copy_text, slice, OptOut};
use crate::error::{boundary, pm4_status, Error};

/// The text listing of `dwords` placed at guest `base`, without following
/// indirect buffers (their memory is not given).
fn listing(dwords: &[u32], base: u64) -> Result<String, Error> {
    let bytes: Vec<u8> = dwords.iter().flat_map(|d| d.to_le_bytes()).collect();
    let options = DisasmOptions { follow_ibs: false, ..DisasmOptions::default() };
    let dis = Disassembler::for_raw(&bytes, base, options).map_err(Error::invalid)?;
    let mut text = Vec::new();
    dis.write_text(&mut text).map_err(|e| Error::new(pm4_status::PM4_STATUS_ERROR, e))?;
    // The listing's first line names the stream (`; submission 0 …`): a
    // log line of one buffer does not need it.
    let text = String::from_utf8_lossy(&text).into_owned();
    Ok(text.lines().filter(|l| !l.starts_with("; submission")).fold(String::new(), |mut s, l| {
        s.push_str(l);
        s.push('\n');
        s
    }))
}

/// Disassembles `count` dwords at `dwords`, placed at guest address `base`
/// (dword-aligned), into `out[..cap]` as text (one line per packet with its
/// address, raw dwords and decoded fields; register writes named; malformed
/// packets marked), NUL-terminated; the length without the NUL goes to
/// `*len`. Indirect buffers are shown, not followed. A buffer too small
/// answers `PM4_STATUS_BUFFER_TOO_SMALL` with the size needed in `*len`.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `dwords .. dwords + count` is valid for reads; `out .. out + cap` for
/// writes; `len` for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_disasm_buffer(
    dwords: *const u32,
    count: usize,
    base: u64,
    out: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> pm4_status {
    boundary("pm4_disasm_buffer", || {
        // SAFETY: the caller's promise for `dwords[..count]`.
        let words = unsafe { slice(dwords, count, "dwords")? };
        let text = listing(words, base)?;
        // SAFETY: the caller's promises for `out[..cap]` and `len`.
        unsafe { copy_text(text.as_bytes(), out, cap, len, "the listing") }
    })
}

/// Disassembles the one packet at the start of `dwords[..count]` (placed at
/// guest `address`) into `out[..cap]`, as `pm4_disasm_buffer` does;
/// `*packet_dw` (unless NULL) gets the packet's length in dwords, so a
/// caller can step through a buffer. A packet longer than `count` is shown
/// truncated (and `*packet_dw` is its full length); a type-1 header is one
/// dword shown as such. `count` 0 is `PM4_STATUS_INVALID_ARGUMENT`.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// As `pm4_disasm_buffer`; `packet_dw` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_disasm_packet(
    dwords: *const u32,
    count: usize,
    address: u64,
    out: *mut c_char,
    cap: usize,
    len: *mut usize,
    packet_dw: *mut u32,
) -> pm4_status {
    boundary("pm4_disasm_packet", || {
        // SAFETY: the caller's promise for `dwords[..count]`.
        let words = unsafe { slice(dwords, count, "dwords")? };
        let packet_len = OptOut::new(packet_dw, "packet_dw")?;
        let length = match split_packet(words) {
            Ok((_, _, length)) => length,
            Err(SplitError::Empty) => return Err(Error::invalid("count is 0: there is no packet")),
            Err(SplitError::Type1 { .. }) => 1,
            Err(SplitError::Overrun { length_dw, .. }) => length_dw,
        };
        let shown = words.get(..(length as usize).min(words.len())).unwrap_or(words);
        let text = listing(shown, address)?;
        // SAFETY: the caller's promises for `out[..cap]` and `len`.
        unsafe { copy_text(text.as_bytes(), out, cap, len, "the listing")? };
        // SAFETY: checked by `OptOut::new`; the caller's promise.
        unsafe { packet_len.write(length) };
        Ok(())
    })
}
