//! `import`: [`detect`], [`import_raw`], [`parse_kycap`] and
//! [`import_kycap`] on arbitrary bytes. The importers promise to produce
//! only traces [`Trace::parse`] accepts, and a capture `parse_kycap`
//! refuses is never imported; an imported trace must also pass every check
//! of the `trace_reader` harness (map, rewrite, replay).
//!
//! Input layout: `u8` mode (bit 0: KYCAP rather than raw; bits 1-2: the
//! address, from [`IMPORT_BASE`], 0x1000, just below the top of the
//! address space, or the `u64` that follows; bits 3-5: the KYCAP event
//! limit, 1 << n; bit 6: name a source with a line break in it; bit 7:
//! make every KYCAP hash right first, so that mutations reach the rules
//! behind the hash checks), `u64` address, `u8` raw queue, then the file's
//! bytes.

use super::trace::check_trace;
use super::{Input, Outcome, Violation};
use crate::import::{
    detect, import_kycap, import_raw, parse_kycap, ImportFormat, ImportOptions, KycapLimits, IMPORT_BASE,
};
use crate::memory::ADDRESS_SPACE_END;
use crate::trace::Trace;
use xxhash_rust::xxh3::xxh3_64;

const TARGET: &str = "import";

/// The `import` harness.
pub fn import(data: &[u8]) -> Outcome {
    let fail = |what: String| Violation::new(TARGET, what);
    let mut input = Input::new(data);
    let mode = input.u8();
    let given = input.u64();
    let queue = u32::from(input.u8());
    let bytes = input.rest();

    let format = detect(bytes);
    let _ = format.to_string();
    let address = [IMPORT_BASE, 0x1000, ADDRESS_SPACE_END - 0x1000, given][usize::from((mode >> 1) & 3)];
    let limits = KycapLimits { max_events: 1 << ((mode >> 3) & 7), max_dwords: 1 << 16 };
    let options = ImportOptions {
        source: (mode & 0x40 != 0).then(|| "fuzz\ninput\r".to_owned()),
        base_address: address,
        kycap_limits: limits,
        ..ImportOptions::default()
    };

    let fixed;
    let bytes = if mode & 0x80 != 0 {
        fixed = with_fixed_hashes(bytes);
        &fixed[..]
    } else {
        bytes
    };
    let imported = if mode & 1 == 0 {
        import_raw(bytes, address, queue, &options)
    } else {
        let parsed = parse_kycap(bytes, &limits);
        let imported = import_kycap(bytes, &options);
        if let (Err(e), Ok(_)) = (&parsed, &imported) {
            return Err(fail(format!("parse_kycap refuses ({e}) what import_kycap imports")));
        }
        if parsed.is_ok() && format != ImportFormat::Kycap {
            return Err(fail(format!("a capture parse_kycap accepts is detected as {format}")));
        }
        imported
    };
    match imported {
        Ok(trace_bytes) => match Trace::from_bytes(trace_bytes) {
            Ok(trace) => check_trace(TARGET, &trace),
            Err(e) => Err(fail(format!("an imported trace does not parse: {e}"))),
        },
        Err(e) => {
            let _ = e.to_string();
            Ok(())
        }
    }
}

/// A copy of `data` with the XXH3 hash of every KYCAP record whose size
/// field lies inside the file, and of the footer, recomputed (records are
/// walked by their size fields, as the reader walks them).
pub fn with_fixed_hashes(data: &[u8]) -> Vec<u8> {
    use crate::import::kycap::{FOOTER_HASH_OFFSET, FOOTER_LEN, HEADER_LEN, RECORD_HASH_OFFSET, RECORD_HEADER_LEN};
    let mut bytes = data.to_vec();
    let mut at = HEADER_LEN;
    while bytes.len().saturating_sub(at) > FOOTER_LEN {
        let size = bytes.get(at..at + 4).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
        if size < RECORD_HEADER_LEN {
            return bytes;
        }
        let Some(record) = bytes.get_mut(at..at.saturating_add(size)) else {
            return bytes;
        };
        record[RECORD_HASH_OFFSET..RECORD_HEADER_LEN].fill(0);
        let hash = xxh3_64(record).to_le_bytes();
        record[RECORD_HASH_OFFSET..RECORD_HEADER_LEN].copy_from_slice(&hash);
        at += size;
    }
    if let Some(footer) = bytes.get_mut(at..).filter(|f| f.len() == FOOTER_LEN) {
        footer[FOOTER_HASH_OFFSET..].fill(0);
        let hash = xxh3_64(footer).to_le_bytes();
        footer[FOOTER_HASH_OFFSET..].copy_from_slice(&hash);
    }
    bytes
}
