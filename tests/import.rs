//! `pm4 import`, library side: raw dword files and KYCAP captures become
//! traces; every malformed KYCAP capture is refused with its exact error.

use pm4core::import::{
    detect, import_kycap, import_raw, kycap, kycap_queue, parse_kycap, ImportError, ImportFormat, ImportOptions,
    KycapEventType, KycapLimits, KycapProblem, DEFAULT_RAW_ADDRESS, IMPORT_BASE,
};
use pm4core::trace::{Trace, TraceEvent};
use proptest::prelude::*;
use xxhash_rust::xxh3::xxh3_64;

const GRAPHICS: u32 = 1;
const COMPUTE: u32 = 2;
const FLIP: u32 = 3;
const SUSPEND: u32 = 4;

fn dword_bytes(dw: &[u32]) -> Vec<u8> {
    dw.iter().flat_map(|d| d.to_le_bytes()).collect()
}

/// A KYCAP 2.0 file written from the format's facts: 24-byte header,
/// records with a 40-byte header hashed (hash field zero) together with the
/// payload, and a 32-byte footer hashed with its hash field zero.
struct KycapFile {
    bytes: Vec<u8>,
    sequence: u64,
    events: u64,
    dwords: u64,
    /// Byte offset of every record.
    records: Vec<usize>,
}

impl KycapFile {
    fn new() -> Self {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(b"KYCAP\r\n\x1a");
        bytes.extend_from_slice(&2u16.to_le_bytes());
        bytes.extend_from_slice(&0u16.to_le_bytes());
        bytes.extend_from_slice(&24u32.to_le_bytes());
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.extend_from_slice(&0u32.to_le_bytes());
        KycapFile { bytes, sequence: 0, events: 0, dwords: 0, records: Vec::new() }
    }

    /// Appends a record with every field given.
    fn raw(&mut self, kind: u32, sequence: u64, queue: u32, flags: u32, primary: &[u32], secondary: &[u32]) -> usize {
        let offset = self.bytes.len();
        let size = 40 + 4 * (primary.len() + secondary.len());
        let mut r = Vec::with_capacity(size);
        r.extend_from_slice(&(size as u32).to_le_bytes());
        r.extend_from_slice(&kind.to_le_bytes());
        r.extend_from_slice(&sequence.to_le_bytes());
        r.extend_from_slice(&queue.to_le_bytes());
        r.extend_from_slice(&flags.to_le_bytes());
        r.extend_from_slice(&(primary.len() as u32).to_le_bytes());
        r.extend_from_slice(&(secondary.len() as u32).to_le_bytes());
        r.extend_from_slice(&0u64.to_le_bytes());
        r.extend_from_slice(&dword_bytes(primary));
        r.extend_from_slice(&dword_bytes(secondary));
        let hash = xxh3_64(&r);
        r[32..40].copy_from_slice(&hash.to_le_bytes());
        self.bytes.extend_from_slice(&r);
        self.records.push(offset);
        self.events += 1;
        self.dwords += (primary.len() + secondary.len()) as u64;
        self.sequence = sequence;
        offset
    }

    fn next(&mut self, kind: u32, queue: u32, flags: u32, primary: &[u32], secondary: &[u32]) -> usize {
        let sequence = self.sequence + 1;
        self.raw(kind, sequence, queue, flags, primary, secondary)
    }

    fn graphics(&mut self, dcb: &[u32], ccb: &[u32], interrupt: bool) -> usize {
        self.next(GRAPHICS, 0, u32::from(interrupt), dcb, ccb)
    }

    fn compute(&mut self, queue: u32, acb: &[u32]) -> usize {
        self.next(COMPUTE, queue, 0, acb, &[])
    }

    fn marker(&mut self, kind: u32) -> usize {
        self.next(kind, u32::MAX, 0, &[], &[])
    }

    /// The file without a footer.
    fn unfinished(&self) -> Vec<u8> {
        self.bytes.clone()
    }

    fn footer(events: u64, dwords: u64) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(b"KYCEND\r\n");
        f.extend_from_slice(&events.to_le_bytes());
        f.extend_from_slice(&dwords.to_le_bytes());
        f.extend_from_slice(&0u64.to_le_bytes());
        let hash = xxh3_64(&f);
        f[24..32].copy_from_slice(&hash.to_le_bytes());
        f
    }

    fn finish(&self) -> Vec<u8> {
        let mut bytes = self.bytes.clone();
        bytes.extend_from_slice(&Self::footer(self.events, self.dwords));
        bytes
    }
}

/// The hash a record at `offset` of `bytes` should carry.
fn record_hash(bytes: &[u8], offset: usize) -> u64 {
    let size = u32::from_le_bytes(bytes[offset..offset + 4].try_into().unwrap()) as usize;
    let mut r = bytes[offset..offset + size].to_vec();
    r[32..40].fill(0);
    xxh3_64(&r)
}

fn stored_record_hash(bytes: &[u8], offset: usize) -> u64 {
    u64::from_le_bytes(bytes[offset + 32..offset + 40].try_into().unwrap())
}

/// Rewrites the hash of the record at `offset` after a change.
fn rehash(bytes: &mut [u8], offset: usize) {
    let hash = record_hash(bytes, offset);
    bytes[offset + 32..offset + 40].copy_from_slice(&hash.to_le_bytes());
}

fn put32(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

fn kycap_err(offset: usize, record: Option<u64>, problem: KycapProblem) -> ImportError {
    ImportError::Kycap { offset: offset as u64, record, problem }
}

fn import(bytes: &[u8]) -> Result<Vec<u8>, ImportError> {
    import_kycap(bytes, &ImportOptions::default())
}

/// What a trace holds, without chunk numbers.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Mem(u64, Vec<u8>),
    Submit(u32, u64, u32),
    Note(String),
}

fn seen(trace: &Trace) -> Vec<Seen> {
    trace
        .events()
        .iter()
        .map(|e| match e {
            TraceEvent::MemRegion { address, data, .. } => Seen::Mem(*address, trace.bytes_of(data).to_vec()),
            TraceEvent::Submit { queue, address, size_dw, .. } => Seen::Submit(*queue, *address, *size_dw),
            TraceEvent::Note { text, .. } => Seen::Note(text.clone()),
            other => panic!("unexpected event {other:?}"),
        })
        .collect()
}

fn info(trace: &Trace) -> Vec<(&str, &str)> {
    trace.info().iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

// ---------------------------------------------------------------- raw ---

#[test]
fn raw_round_trip() {
    let dw = [0xc000_1000u32, 0xffff_1000, 0xc001_1000, 0x1234_5678, 0xffff_1000];
    let bytes = dword_bytes(&dw);
    let address = 0x1234_5600;
    let out = import_raw(&bytes, address, 3, &ImportOptions::with_source("dump.bin")).unwrap();
    let trace = Trace::from_bytes(out).unwrap();
    assert_eq!(
        info(&trace),
        [
            ("gpu", "gfx10.3"),
            ("producer", "pm4core import"),
            ("description", "raw dwords from dump.bin: 5 dwords at 0x12345600 on queue 3"),
        ]
    );
    assert_eq!(seen(&trace), [Seen::Mem(address, bytes.clone()), Seen::Submit(3, address, 5)]);
}

#[test]
fn raw_defaults_and_options() {
    let bytes = dword_bytes(&[0xffff_1000]);
    let options = ImportOptions { gpu: "gfx7".into(), ..ImportOptions::default() };
    let trace = Trace::from_bytes(import_raw(&bytes, DEFAULT_RAW_ADDRESS, 0, &options).unwrap()).unwrap();
    assert_eq!(trace.gpu(), Some("gfx7"));
    assert_eq!(trace.info_value("description"), Some("raw dwords: 1 dword at 0xfff000000000 on queue 0"));
    assert_eq!(seen(&trace), [Seen::Mem(IMPORT_BASE, bytes.clone()), Seen::Submit(0, IMPORT_BASE, 1)]);
    // A line break in the source name does not break INFO.
    let options = ImportOptions::with_source("a\nb");
    let trace = Trace::from_bytes(import_raw(&bytes, 0x1000, 56, &options).unwrap()).unwrap();
    assert_eq!(trace.info_value("description"), Some("raw dwords from a b: 1 dword at 0x1000 on queue 56"));
}

#[test]
fn raw_errors() {
    let o = ImportOptions::default();
    assert_eq!(import_raw(&[0; 7], 0x1000, 0, &o), Err(ImportError::RawLength { len: 7 }));
    assert_eq!(
        import_raw(&[0; 7], 0x1000, 0, &o).unwrap_err().to_string(),
        "raw dword file of 7 bytes: the length is not a multiple of 4"
    );
    assert_eq!(import_raw(&[], 0x1000, 0, &o), Err(ImportError::RawEmpty));
    assert_eq!(import_raw(&[0; 4], 0x1000, 57, &o), Err(ImportError::QueueOutOfRange { queue: 57 }));
    assert_eq!(import_raw(&[0; 4], 0x1002, 0, &o), Err(ImportError::BadAddress { address: 0x1002, len: 4 }));
    assert_eq!(
        import_raw(&[0; 8], (1 << 48) - 4, 0, &o),
        Err(ImportError::BadAddress { address: (1 << 48) - 4, len: 8 })
    );
    assert_eq!(
        import_raw(&[0; 4], u64::MAX - 3, 0, &o),
        Err(ImportError::BadAddress { address: u64::MAX - 3, len: 4 })
    );
    // The last dword of the address space is fine.
    assert!(import_raw(&[0; 4], (1 << 48) - 4, 0, &o).is_ok());
}

#[test]
fn detects_by_magic() {
    let mut k = KycapFile::new();
    k.graphics(&[0xffff_1000], &[], false);
    assert_eq!(detect(&k.finish()), ImportFormat::Kycap);
    assert_eq!(detect(b"KYCAP\r\n\x1a"), ImportFormat::Kycap);
    let trace = import_raw(&[0; 4], 0x1000, 0, &ImportOptions::default()).unwrap();
    assert_eq!(detect(&trace), ImportFormat::Trace);
    assert_eq!(detect(&[1, 2, 3, 4, 5, 6, 7, 8]), ImportFormat::Raw);
    assert_eq!(detect(&[1, 2, 3]), ImportFormat::Unknown);
    assert_eq!(detect(&[]), ImportFormat::Unknown);
    assert_eq!(detect(b"KYCAP\r\n"), ImportFormat::Unknown);
}

// -------------------------------------------------------------- KYCAP ---

/// The hash the capture format uses is XXH3-64 with seed 0: these values
/// come from the reference C implementation (0.8.1), for bytes `i * 7 + 1`.
#[test]
fn xxh3_matches_the_reference_library() {
    let data = |n: usize| (0..n).map(|i| (i * 7 + 1) as u8).collect::<Vec<u8>>();
    assert_eq!(xxh3_64(&data(0)), 0x2d06_8005_38d3_94c2);
    assert_eq!(xxh3_64(&data(3)), 0x5c83_885a_0fb5_d516);
    assert_eq!(xxh3_64(&data(40)), 0xe819_c54d_0558_b405);
    assert_eq!(xxh3_64(&data(300)), 0x9359_6084_8d04_785c);
}

#[test]
fn kycap_queue_mapping() {
    assert_eq!(kycap_queue(0), Some(0));
    assert_eq!(kycap_queue(0x20), Some(1));
    assert_eq!(kycap_queue(0x28), Some(9)); // pipe 1, queue 0
    assert_eq!(kycap_queue(0x57), Some(56));
    assert_eq!(kycap_queue(0x58), None);
    assert_eq!(kycap_queue(0x1f), None);
    assert_eq!(kycap_queue(1), None);
    assert_eq!(kycap_queue(u32::MAX), None);
}

/// Graphics with a CCB and interrupt, compute, flip, suspend, graphics.
fn sample() -> KycapFile {
    let mut k = KycapFile::new();
    k.graphics(&[0xc001_1000, 0, 0xffff_1000], &[0xc000_8400, 0x10], true);
    k.compute(0x2b, &[0xc003_1500, 1, 1, 1, 0x41]);
    k.marker(FLIP);
    k.marker(SUSPEND);
    k.graphics(&[0xffff_1000], &[], false);
    k
}

#[test]
fn kycap_import() {
    let file = sample().finish();
    let out = import_kycap(&file, &ImportOptions::with_source("run.kycap")).unwrap();
    let trace = Trace::from_bytes(out).unwrap();
    assert_eq!(
        info(&trace),
        [
            ("gpu", "gfx10.3"),
            ("producer", "pm4core import"),
            ("description", "KYCAP 2.0 capture run.kycap: 5 events (3 submissions), 11 dwords"),
        ]
    );
    let b = IMPORT_BASE;
    assert_eq!(
        seen(&trace),
        [
            Seen::Note(
                "KYCAP captures hold command buffers only: memory their packets address (indirect buffers, labels, \
                 shaders) was not captured, so a replay reports reads of it as unmapped. Command buffers are placed \
                 from 0xfff000000000 on."
                    .into()
            ),
            Seen::Mem(b, dword_bytes(&[0xc001_1000, 0, 0xffff_1000])),
            Seen::Mem(b + 0x100, dword_bytes(&[0xc000_8400, 0x10])),
            Seen::Submit(0, b, 3),
            Seen::Note(
                "KYCAP event 1: interrupt on done; constant engine buffer (CCB) of 2 dwords at 0xfff000000100, \
                 mapped but not submitted"
                    .into()
            ),
            Seen::Mem(b + 0x200, dword_bytes(&[0xc003_1500, 1, 1, 1, 0x41])),
            Seen::Submit(12, b + 0x200, 5),
            Seen::Note("KYCAP event 3: flip preparation".into()),
            Seen::Note("KYCAP event 4: suspend request".into()),
            Seen::Mem(b + 0x300, dword_bytes(&[0xffff_1000])),
            Seen::Submit(0, b + 0x300, 1),
        ]
    );
}

#[test]
fn kycap_parse_and_base() {
    let file = sample().finish();
    let capture = parse_kycap(&file, &KycapLimits::default()).unwrap();
    assert_eq!((capture.major, capture.minor, capture.total_dwords), (2, 0, 11));
    let kinds: Vec<_> = capture.events.iter().map(|e| (e.sequence, e.event, e.queue, e.interrupt_on_done)).collect();
    assert_eq!(
        kinds,
        [
            (1, KycapEventType::GraphicsSubmit, 0, true),
            (2, KycapEventType::ComputeSubmit, 0x2b, false),
            (3, KycapEventType::FlipPreparation, u32::MAX, false),
            (4, KycapEventType::SuspendRequest, u32::MAX, false),
            (5, KycapEventType::GraphicsSubmit, 0, false),
        ]
    );
    assert_eq!(capture.events[0].secondary, dword_bytes(&[0xc000_8400, 0x10]).as_slice());
    assert_eq!(capture.events[1].offset, 24 + 40 + 20);

    // Another base; regions after the first go to 256-byte boundaries.
    let options = ImportOptions { base_address: 0x10_0004, ..ImportOptions::default() };
    let trace = Trace::from_bytes(import_kycap(&file, &options).unwrap()).unwrap();
    let regions: Vec<_> = trace.events().iter().filter_map(|e| e.region()).collect();
    assert_eq!(regions, [(0x10_0004, 12), (0x10_0100, 8), (0x10_0200, 20), (0x10_0300, 4)]);
    assert_eq!(trace.info_value("description"), Some("KYCAP 2.0 capture: 5 events (3 submissions), 11 dwords"));

    let options = ImportOptions { base_address: 0x10_0002, ..ImportOptions::default() };
    assert_eq!(import_kycap(&file, &options), Err(ImportError::BadAddress { address: 0x10_0002, len: 0 }));
    // No room: the second region would pass the end of the address space.
    let options = ImportOptions { base_address: (1 << 48) - 12, ..ImportOptions::default() };
    assert_eq!(
        import_kycap(&file, &options),
        Err(kycap_err(24, Some(0), KycapProblem::AddressSpaceExhausted { address: 1 << 48, len: 8 }))
    );
}

#[test]
fn kycap_empty_capture() {
    let file = KycapFile::new().finish();
    let trace = Trace::from_bytes(import(&file).unwrap()).unwrap();
    assert_eq!(trace.submissions().count(), 0);
    assert_eq!(trace.info_value("description"), Some("KYCAP 2.0 capture: 0 events (0 submissions), 0 dwords"));
}

#[test]
fn kycap_header_errors() {
    let good = sample().finish();
    assert_eq!(import(&good[..10]), Err(kycap_err(0, None, KycapProblem::TruncatedHeader { available: 10 })));

    let mut f = good.clone();
    f[0] = b'X';
    assert_eq!(import(&f), Err(kycap_err(0, None, KycapProblem::BadMagic { found: *b"XYCAP\r\n\x1a" })));
    assert_eq!(import(&f).unwrap_err().to_string(), "KYCAP capture, byte 0x0: bad magic 58594341500d0a1a");

    let mut f = good.clone();
    f[8] = 3;
    assert_eq!(import(&f), Err(kycap_err(8, None, KycapProblem::UnsupportedVersion { major: 3, minor: 0 })));
    let mut f = good.clone();
    f[10] = 1;
    assert_eq!(import(&f), Err(kycap_err(8, None, KycapProblem::UnsupportedVersion { major: 2, minor: 1 })));

    let mut f = good.clone();
    put32(&mut f, 12, 28);
    assert_eq!(import(&f), Err(kycap_err(12, None, KycapProblem::BadHeaderSize { size: 28 })));
    let mut f = good.clone();
    put32(&mut f, 16, 3);
    assert_eq!(import(&f), Err(kycap_err(16, None, KycapProblem::UnknownCapability { capability: 3 })));
    let mut f = good.clone();
    put32(&mut f, 20, 9);
    assert_eq!(import(&f), Err(kycap_err(20, None, KycapProblem::HeaderReservedNonZero { value: 9 })));
}

#[test]
fn kycap_truncation_errors() {
    let k = sample();
    let r1 = k.records[1];
    // The file ends after the records, with no footer.
    assert_eq!(import(&k.unfinished()), Err(kycap_err(k.bytes.len(), Some(5), KycapProblem::NotFinalized)));
    // 20 bytes of a record header.
    let f = k.bytes[..r1 + 20].to_vec();
    assert_eq!(import(&f), Err(kycap_err(r1, Some(1), KycapProblem::TruncatedRecordHeader { available: 20 })));
    // A whole header, half the payload.
    let f = k.bytes[..r1 + 48].to_vec();
    assert_eq!(import(&f), Err(kycap_err(r1, Some(1), KycapProblem::RecordPastEnd { size: 60, available: 48 })));
    // Footer cut short by one byte: 31 bytes are taken for a record header.
    let full = k.finish();
    let f = &full[..full.len() - 1];
    assert_eq!(
        import(f),
        Err(kycap_err(k.bytes.len(), Some(5), KycapProblem::TruncatedRecordHeader { available: 31 }))
    );
}

#[test]
fn kycap_size_and_count_errors() {
    let k = sample();
    let r1 = k.records[1];
    // Size past the end of the file, counts consistent with it.
    let mut f = k.finish();
    put32(&mut f, r1, 40 + 4 * 0x1000_0000);
    put32(&mut f, r1 + 24, 0x1000_0000);
    let available = (f.len() - r1) as u64;
    assert_eq!(
        import(&f),
        Err(kycap_err(r1, Some(1), KycapProblem::RecordPastEnd { size: 40 + 4 * 0x1000_0000, available }))
    );
    // Huge counts that the size cannot match.
    let mut f = k.finish();
    put32(&mut f, r1 + 24, u32::MAX);
    put32(&mut f, r1 + 28, u32::MAX);
    assert_eq!(
        import(&f),
        Err(kycap_err(
            r1,
            Some(1),
            KycapProblem::BadRecordSize { size: 60, primary_dw: u32::MAX, secondary_dw: u32::MAX }
        ))
    );
    // A size smaller than a record header.
    let mut f = k.finish();
    put32(&mut f, r1, 8);
    assert_eq!(
        import(&f),
        Err(kycap_err(r1, Some(1), KycapProblem::BadRecordSize { size: 8, primary_dw: 5, secondary_dw: 0 }))
    );
    // Limits.
    let file = k.finish();
    let limited = |max_events, max_dwords| ImportOptions {
        kycap_limits: KycapLimits { max_events, max_dwords },
        ..ImportOptions::default()
    };
    assert_eq!(
        import_kycap(&file, &limited(2, 100)),
        Err(kycap_err(k.records[2], Some(2), KycapProblem::TooManyEvents { limit: 2 }))
    );
    assert_eq!(
        import_kycap(&file, &limited(100, 10)),
        Err(kycap_err(k.records[4], Some(4), KycapProblem::TooManyDwords { total: 11, limit: 10 }))
    );
    assert!(import_kycap(&file, &limited(5, 11)).is_ok());
}

#[test]
fn kycap_hash_errors() {
    let k = sample();
    let r1 = k.records[1];
    let mut f = k.finish();
    f[r1 + 44] ^= 0x80; // a payload byte
    let stored = stored_record_hash(&f, r1);
    let computed = record_hash(&f, r1);
    assert_ne!(stored, computed);
    assert_eq!(import(&f), Err(kycap_err(r1, Some(1), KycapProblem::BadRecordHash { stored, computed })));
    // A header field counts too.
    let mut f = k.finish();
    f[r1 + 16] = 0x2c;
    let computed = record_hash(&f, r1);
    assert_eq!(import(&f), Err(kycap_err(r1, Some(1), KycapProblem::BadRecordHash { stored, computed })));
}

#[test]
fn kycap_metadata_errors() {
    let k = sample();
    let (r0, r1, r2) = (k.records[0], k.records[1], k.records[2]);
    let with = |offset: usize, at: usize, value: u32| {
        let mut f = k.finish();
        put32(&mut f, offset + at, value);
        rehash(&mut f, offset);
        import(&f)
    };
    assert_eq!(with(r1, 4, 5), Err(kycap_err(r1, Some(1), KycapProblem::UnknownEventType { value: 5 })));
    assert_eq!(with(r1, 4, 0), Err(kycap_err(r1, Some(1), KycapProblem::UnknownEventType { value: 0 })));
    assert_eq!(with(r1, 20, 2), Err(kycap_err(r1, Some(1), KycapProblem::UnknownFlags { flags: 2 })));
    // Sequences: contiguous from 1.
    assert_eq!(with(r1, 8, 3), Err(kycap_err(r1, Some(1), KycapProblem::SequenceGap { expected: 2, found: 3 })));
    assert_eq!(with(r0, 8, 0), Err(kycap_err(r0, Some(0), KycapProblem::SequenceGap { expected: 1, found: 0 })));
    assert_eq!(
        with(r1, 12, 1),
        Err(kycap_err(r1, Some(1), KycapProblem::SequenceGap { expected: 2, found: (1 << 32) | 2 }))
    );
    // Queues.
    let compute = KycapEventType::ComputeSubmit;
    let graphics = KycapEventType::GraphicsSubmit;
    let flip = KycapEventType::FlipPreparation;
    assert_eq!(with(r1, 16, 0x58), Err(kycap_err(r1, Some(1), KycapProblem::BadQueue { event: compute, queue: 0x58 })));
    assert_eq!(with(r1, 16, 0x1f), Err(kycap_err(r1, Some(1), KycapProblem::BadQueue { event: compute, queue: 0x1f })));
    assert_eq!(with(r1, 16, 0), Err(kycap_err(r1, Some(1), KycapProblem::BadQueue { event: compute, queue: 0 })));
    assert_eq!(
        with(r0, 16, 0x20),
        Err(kycap_err(r0, Some(0), KycapProblem::BadQueue { event: graphics, queue: 0x20 }))
    );
    assert_eq!(with(r2, 16, 0), Err(kycap_err(r2, Some(2), KycapProblem::BadQueue { event: flip, queue: 0 })));
    // Queue 0x57 is the last compute queue.
    let trace = Trace::from_bytes(with(r1, 16, 0x57).unwrap()).unwrap();
    assert_eq!(trace.submissions().nth(1).map(|s| s.0), Some(56));
    // Shapes.
    assert_eq!(with(r2, 20, 1), Err(kycap_err(r2, Some(2), KycapProblem::MarkerInterrupt { event: flip })));

    let mut k = KycapFile::new();
    k.raw(GRAPHICS, 1, 0, 0, &[], &[1]);
    assert_eq!(import(&k.finish()), Err(kycap_err(24, Some(0), KycapProblem::EmptySubmit { event: graphics })));
    let mut k = KycapFile::new();
    k.raw(COMPUTE, 1, 0x20, 0, &[], &[]);
    assert_eq!(import(&k.finish()), Err(kycap_err(24, Some(0), KycapProblem::EmptySubmit { event: compute })));
    let mut k = KycapFile::new();
    k.raw(COMPUTE, 1, 0x20, 0, &[1], &[2, 3]);
    assert_eq!(import(&k.finish()), Err(kycap_err(24, Some(0), KycapProblem::SecondaryOnCompute { secondary_dw: 2 })));
    let mut k = KycapFile::new();
    k.raw(SUSPEND, 1, u32::MAX, 0, &[1], &[]);
    assert_eq!(
        import(&k.finish()),
        Err(kycap_err(
            24,
            Some(0),
            KycapProblem::MarkerPayload { event: KycapEventType::SuspendRequest, primary_dw: 1, secondary_dw: 0 }
        ))
    );
}

#[test]
fn kycap_footer_errors() {
    let k = sample();
    let at = k.bytes.len();
    let with_footer = |footer: Vec<u8>| {
        let mut f = k.unfinished();
        f.extend_from_slice(&footer);
        import(&f)
    };
    assert_eq!(
        with_footer(KycapFile::footer(4, 11)),
        Err(kycap_err(at, None, KycapProblem::FooterEventCount { stored: 4, counted: 5 }))
    );
    assert_eq!(
        with_footer(KycapFile::footer(u64::MAX, 11)),
        Err(kycap_err(at, None, KycapProblem::FooterEventCount { stored: u64::MAX, counted: 5 }))
    );
    assert_eq!(
        with_footer(KycapFile::footer(5, 12)),
        Err(kycap_err(at, None, KycapProblem::FooterDwordCount { stored: 12, counted: 11 }))
    );
    let mut footer = KycapFile::footer(5, 11);
    footer[7] = b'!';
    assert_eq!(with_footer(footer), Err(kycap_err(at, None, KycapProblem::BadFooterMagic { found: *b"KYCEND\r!" })));
    let mut footer = KycapFile::footer(5, 11);
    footer[8] = 6;
    let stored = u64::from_le_bytes(footer[24..32].try_into().unwrap());
    let mut zeroed = footer.clone();
    zeroed[24..32].fill(0);
    let computed = xxh3_64(&zeroed);
    assert_eq!(with_footer(footer), Err(kycap_err(at, None, KycapProblem::BadFooterHash { stored, computed })));
}

#[test]
fn kycap_error_text_names_record_and_offset() {
    let k = sample();
    let r1 = k.records[1];
    let mut f = k.finish();
    put32(&mut f, r1 + 8, 7);
    rehash(&mut f, r1);
    assert_eq!(
        import(&f).unwrap_err().to_string(),
        format!("KYCAP capture, byte {r1:#x} (record 1): sequence 7, expected 2")
    );
}

#[test]
fn kycap_constants_match_the_writer() {
    assert_eq!(kycap::MAGIC, *b"KYCAP\r\n\x1a");
    assert_eq!(kycap::FOOTER_MAGIC, *b"KYCEND\r\n");
    assert_eq!((kycap::HEADER_LEN, kycap::RECORD_HEADER_LEN, kycap::FOOTER_LEN), (24, 40, 32));
    for raw in 1..=4 {
        assert_eq!(KycapEventType::from_raw(raw).map(KycapEventType::raw), Some(raw));
    }
    assert_eq!(KycapEventType::from_raw(5), None);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600), queue in 0u32..64) {
        if let Ok(out) = import_raw(&bytes, 0x1000, queue, &ImportOptions::default()) {
            prop_assert!(Trace::from_bytes(out).is_ok());
        }
        if let Ok(out) = import_kycap(&bytes, &ImportOptions::default()) {
            prop_assert!(Trace::from_bytes(out).is_ok());
        }
        // The same bytes behind a valid header reach the record parser.
        let mut f = KycapFile::new().unfinished();
        f.extend_from_slice(&bytes);
        if let Ok(out) = import_kycap(&f, &ImportOptions::default()) {
            prop_assert!(Trace::from_bytes(out).is_ok());
        }
    }

    #[test]
    fn mutated_captures_never_panic(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6), cut in any::<usize>()) {
        let mut f = sample().finish();
        for (at, value) in edits {
            let at = at % f.len();
            f[at] = value;
        }
        if cut % 4 == 0 {
            f.truncate(cut % (f.len() + 1));
        }
        if let Ok(out) = import_kycap(&f, &ImportOptions::default()) {
            prop_assert!(Trace::from_bytes(out).is_ok());
        }
    }

    #[test]
    fn well_hashed_random_records_never_panic(
        records in proptest::collection::vec(
            (0u32..6, 0u64..4, prop_oneof![Just(0u32), Just(0x20), Just(0x57), Just(0x58), Just(u32::MAX), any::<u32>()],
             0u32..4, proptest::collection::vec(any::<u32>(), 0..4), proptest::collection::vec(any::<u32>(), 0..3)),
            0..6),
        footer_events in prop_oneof![Just(None), Just(Some(u64::MAX)), any::<u64>().prop_map(Some)],
    ) {
        let mut k = KycapFile::new();
        for (kind, skip, queue, flags, primary, secondary) in records {
            let sequence = k.sequence + 1 + skip / 3;
            k.raw(kind, sequence, queue, flags, &primary, &secondary);
        }
        let mut f = k.unfinished();
        f.extend_from_slice(&KycapFile::footer(footer_events.unwrap_or(k.events), k.dwords));
        if let Ok(out) = import_kycap(&f, &ImportOptions::default()) {
            prop_assert!(Trace::from_bytes(out).is_ok());
        }
    }
}
