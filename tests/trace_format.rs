//! The trace format: real traces, writer/reader round trips, and a catalogue
//! of hostile files each refused with the exact rule.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pm4core::memory::{GuestMemory, SparseMemory, ADDRESS_SPACE_END};
use pm4core::trace::format::chunk_crc;
use pm4core::trace::{Tag, Trace, TraceError, TraceEvent, TraceRule, TraceWriter};
use proptest::prelude::*;

// ---------------------------------------------------------------- helpers

/// Builds files byte by byte, with correct CRCs unless told otherwise.
struct Raw {
    buf: Vec<u8>,
    offsets: Vec<u64>,
}

impl Raw {
    fn new() -> Self {
        Self::with_header(1, 0, 0)
    }

    fn with_header(version: u16, flags: u16, reserved: u32) -> Self {
        let mut buf = b"PM4TRACE".to_vec();
        buf.extend_from_slice(&version.to_le_bytes());
        buf.extend_from_slice(&flags.to_le_bytes());
        buf.extend_from_slice(&reserved.to_le_bytes());
        Raw { buf, offsets: Vec::new() }
    }

    fn chunk(&mut self, tag: &[u8; 4], payload: &[u8]) -> &mut Self {
        let crc = chunk_crc(Tag(*tag), payload);
        self.chunk_with(tag, payload.len() as u32, payload, crc)
    }

    fn chunk_with(&mut self, tag: &[u8; 4], len: u32, payload: &[u8], crc: u32) -> &mut Self {
        self.offsets.push(self.buf.len() as u64);
        self.buf.extend_from_slice(tag);
        self.buf.extend_from_slice(&len.to_le_bytes());
        self.buf.extend_from_slice(payload);
        while self.buf.len() % 4 != 0 {
            self.buf.push(0);
        }
        self.buf.extend_from_slice(&crc.to_le_bytes());
        self
    }

    fn info(&mut self, text: &str) -> &mut Self {
        self.chunk(b"INFO", text.as_bytes())
    }

    fn mem(&mut self, address: u64, data: &[u8]) -> &mut Self {
        self.chunk(b"MEM ", &addr_payload(address, data))
    }

    fn zero(&mut self, address: u64, len: u64) -> &mut Self {
        self.chunk(b"ZERO", &[address.to_le_bytes(), len.to_le_bytes()].concat())
    }

    fn writ(&mut self, address: u64, data: &[u8]) -> &mut Self {
        self.chunk(b"WRIT", &addr_payload(address, data))
    }

    fn subm_raw(&mut self, queue: u32, flags: u32, address: u64, size_dw: u32, reserved: u32) -> &mut Self {
        let payload = [
            &queue.to_le_bytes()[..],
            &flags.to_le_bytes(),
            &address.to_le_bytes(),
            &size_dw.to_le_bytes(),
            &reserved.to_le_bytes(),
        ]
        .concat();
        self.chunk(b"SUBM", &payload)
    }

    fn subm(&mut self, queue: u32, address: u64, size_dw: u32) -> &mut Self {
        self.subm_raw(queue, 0, address, size_dw, 0)
    }

    fn shdr(&mut self, header: u64, code: u64, flags: u32, reserved: u32) -> &mut Self {
        let payload =
            [&header.to_le_bytes()[..], &code.to_le_bytes(), &flags.to_le_bytes(), &reserved.to_le_bytes()].concat();
        self.chunk(b"SHDR", &payload)
    }

    fn end(&mut self) -> &mut Self {
        let count = self.offsets.len() as u32;
        self.chunk(b"END ", &count.to_le_bytes())
    }

    fn bytes(&self) -> Vec<u8> {
        self.buf.clone()
    }

    fn offset(&self, chunk: usize) -> u64 {
        self.offsets[chunk]
    }

    fn parse(&self) -> Result<Trace, TraceError> {
        Trace::from_bytes(self.bytes())
    }

    fn error(&self) -> TraceError {
        match self.parse() {
            Ok(trace) => panic!("hostile trace accepted: {trace:?}"),
            Err(e) => e,
        }
    }
}

fn addr_payload(address: u64, data: &[u8]) -> Vec<u8> {
    [&address.to_le_bytes()[..], data].concat()
}

fn parse_err(bytes: Vec<u8>) -> TraceError {
    match Trace::from_bytes(bytes) {
        Ok(trace) => panic!("hostile trace accepted: {trace:?}"),
        Err(e) => e,
    }
}

/// A small valid trace: INFO, a command buffer, a zero region, a submit.
fn sample() -> Raw {
    let mut raw = Raw::new();
    raw.info("gpu=gfx10.3\nproducer=test\n")
        .mem(0x1000, &[0x00, 0x10, 0xff, 0xff, 0x00, 0x10, 0xff, 0xff])
        .zero(0x10000, 0x1000)
        .subm(0, 0x1000, 2);
    raw
}

fn err_at(chunk: usize, raw: &Raw, rule: TraceRule) -> TraceError {
    TraceError::new(Some(chunk as u32), raw.offset(chunk), rule)
}

/// The directory holding the real traces: `traces/` in the repository.
fn trace_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    assert!(dir.is_dir(), "{} is missing", dir.display());
    dir
}

fn real_traces() -> Vec<(String, Trace)> {
    let dir = trace_dir();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("trace directory")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "pm4t"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 10, "{} traces in {}", paths.len(), dir.display());
    paths
        .into_iter()
        .map(|path| {
            let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned();
            let trace = Trace::read_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (name, trace)
        })
        .collect()
}

// ---------------------------------------------------------------- real traces

#[test]
fn real_traces_load_and_are_sane() {
    let traces = real_traces();
    for (name, trace) in &traces {
        assert_eq!(trace.gpu(), Some("gfx10.3"), "{name}");
        assert!(trace.info_value("producer").is_some(), "{name}");
        let chunks = trace.chunks();
        assert_eq!(chunks.first().map(|c| c.tag), Some(Tag::INFO), "{name}");
        assert_eq!(chunks.last().map(|c| c.tag), Some(Tag::END), "{name}");
        assert_eq!(trace.events().len(), chunks.len() - 2, "{name}");
        for (i, c) in chunks.iter().enumerate() {
            assert_eq!(c.index as usize, i);
        }
        for (event, chunk) in trace.events().iter().zip(&chunks[1..]) {
            assert_eq!(event.tag(), chunk.tag, "{name}");
            assert_eq!(event.chunk(), chunk.index, "{name}");
        }
        let mem = trace.build_memory().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(mem.allocated_page_bytes(), 0, "{name}: mapping must not allocate pages");
        let mut submissions = 0;
        for event in trace.events() {
            match event {
                TraceEvent::Submit { queue, address, size_dw, .. } => {
                    submissions += 1;
                    assert!(*queue <= 56);
                    assert!(*size_dw > 0, "{name}");
                    assert!(mem.is_mapped(*address, u64::from(*size_dw) * 4), "{name}");
                }
                TraceEvent::MemRegion { address, data, .. } => {
                    let bytes = trace.bytes_of(data);
                    assert_eq!(bytes.len() as u64, data.len());
                    // The mapped bytes are the payload's bytes.
                    let mut head = vec![0u8; bytes.len().min(64)];
                    mem.read_bytes(*address, &mut head).expect("mapped region");
                    assert_eq!(&head[..], &bytes[..head.len()]);
                }
                _ => {}
            }
        }
        assert!(submissions >= 1, "{name}");
    }
    if let Some((_, draw)) = traces.iter().find(|(n, _)| n == "radv-draw") {
        assert!(draw.submissions().any(|(queue, _, _)| queue == 0));
    }
    if let Some((_, compute)) = traces.iter().find(|(n, _)| n == "radv-compute_queue") {
        assert!(compute.submissions().any(|(queue, _, _)| queue >= 1));
    }
}

/// Writing a real trace's content back through the writer gives the same
/// bytes: the writer and the real producer agree on every detail.
#[test]
fn real_traces_rewrite_byte_exact() {
    for (name, trace) in real_traces() {
        let mut w = TraceWriter::new();
        for (k, v) in trace.info() {
            w.info(k, v).unwrap();
        }
        for event in trace.events() {
            assert!(!matches!(event, TraceEvent::Ancillary { .. }), "{name}: unexpected event {event:?}");
            w.event(&trace, event).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        assert!(w.finish() == trace.bytes()[..], "{name}: rewrite differs");
    }
}

// ---------------------------------------------------------------- round trip

#[test]
fn writer_reader_round_trip() {
    let code: Vec<u8> = (0..64u8).collect();
    let mut w = TraceWriter::new();
    w.info("gpu", "gfx10.3").unwrap();
    w.info("producer", "pm4core tests").unwrap();
    w.info("custom.key", "a=b").unwrap();
    w.note("hello").unwrap();
    w.mem(0x1_0000, &code).unwrap();
    w.zero(0x1_0040, 0x40).unwrap(); // adjacent to the MEM region
    w.mem(0x2_0000, &[1, 2, 3]).unwrap(); // length need not be a multiple of 4
    w.host_write(0x1_0038, &[9; 16]).unwrap(); // spans both adjacent regions
    w.submit(0, 0x1_0000, 16).unwrap();
    w.submit(56, 0x1_0040, 0).unwrap();
    w.shader(0x1_0000, 0x1_0000, true).unwrap();
    w.shader(0x1_0004, 0x1_0000, false).unwrap();
    w.ancillary(Tag(*b"xtra"), b"\x00\x01").unwrap();
    assert_eq!(w.chunk_count(), 11);
    let trace = w.finish_trace().unwrap();

    assert_eq!(
        trace.info(),
        &[
            ("gpu".to_owned(), "gfx10.3".to_owned()),
            ("producer".to_owned(), "pm4core tests".to_owned()),
            ("custom.key".to_owned(), "a=b".to_owned()),
        ]
    );
    assert_eq!(trace.gpu(), Some("gfx10.3"));
    assert_eq!(trace.chunks().len(), 12);
    let tags: Vec<Tag> = trace.chunks().iter().map(|c| c.tag).collect();
    assert_eq!(
        tags,
        [
            Tag::INFO,
            Tag::NOTE,
            Tag::MEM,
            Tag::ZERO,
            Tag::MEM,
            Tag::WRIT,
            Tag::SUBM,
            Tag::SUBM,
            Tag::SHDR,
            Tag::SHDR,
            Tag(*b"xtra"),
            Tag::END
        ]
    );

    let events = trace.events();
    assert_eq!(events.len(), 10);
    assert_eq!(events[0], TraceEvent::Note { chunk: 1, text: "hello".to_owned() });
    match &events[1] {
        TraceEvent::MemRegion { chunk: 2, address: 0x1_0000, data } => {
            assert_eq!(trace.bytes_of(data), &code[..]);
            assert_eq!(data.offset() % 4, 0);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(events[2], TraceEvent::ZeroRegion { chunk: 3, address: 0x1_0040, len: 0x40 });
    match &events[3] {
        TraceEvent::MemRegion { chunk: 4, address: 0x2_0000, data } => {
            assert_eq!(trace.bytes_of(data), &[1, 2, 3]);
        }
        other => panic!("{other:?}"),
    }
    match &events[4] {
        TraceEvent::HostWrite { chunk: 5, address: 0x1_0038, data } => {
            assert_eq!(trace.bytes_of(data), &[9; 16]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(events[5], TraceEvent::Submit { chunk: 6, queue: 0, address: 0x1_0000, size_dw: 16 });
    assert_eq!(events[6], TraceEvent::Submit { chunk: 7, queue: 56, address: 0x1_0040, size_dw: 0 });
    assert_eq!(
        events[7],
        TraceEvent::Shader { chunk: 8, header_address: 0x1_0000, code_address: 0x1_0000, relocated: true }
    );
    assert_eq!(
        events[8],
        TraceEvent::Shader { chunk: 9, header_address: 0x1_0004, code_address: 0x1_0000, relocated: false }
    );
    assert_eq!(events[9], TraceEvent::Ancillary { chunk: 10, tag: Tag(*b"xtra") });
    assert_eq!(trace.submissions().collect::<Vec<_>>(), [(0, 0x1_0000, 16), (56, 0x1_0040, 0)]);

    // Memory before the host write, after it, and with regions only.
    let before = trace.memory_before(4).unwrap();
    assert_eq!(before.read_u32(0x1_0038).unwrap(), u32::from_le_bytes([56, 57, 58, 59]));
    let after = trace.memory_before(events.len()).unwrap();
    assert_eq!(after.read_u64(0x1_0038).unwrap(), 0x0909_0909_0909_0909);
    assert_eq!(after.read_u64(0x1_0040).unwrap(), 0x0909_0909_0909_0909);
    assert_eq!(after.read_u32(0x1_0048).unwrap(), 0);
    let regions = trace.build_memory().unwrap();
    assert_eq!(regions.regions().collect::<Vec<_>>(), [(0x1_0000, 64), (0x1_0040, 0x40), (0x2_0000, 3)]);
    assert_eq!(regions.read_u32(0x1_0040).unwrap(), 0);

    // Region by region, and one host write.
    let mut mem = SparseMemory::new();
    for event in events {
        trace.map_region(&mem, event).unwrap();
    }
    trace.apply_host_write(&mut mem, &events[4]).unwrap();
    assert_eq!(mem.read_u32(0x1_003c).unwrap(), 0x0909_0909);
    // The file's bytes were not copied and the MEM bytes were not modified.
    assert_eq!(
        trace.bytes_of(match &events[1] {
            TraceEvent::MemRegion { data, .. } => data,
            _ => unreachable!(),
        }),
        &code[..]
    );
}

#[test]
fn writer_with_no_info_and_no_chunks() {
    let bytes = TraceWriter::new().finish();
    assert_eq!(bytes.len(), 16 + 16);
    let trace = Trace::from_bytes(bytes).unwrap();
    assert!(trace.info().is_empty());
    assert_eq!(trace.gpu(), None);
    assert!(trace.events().is_empty());
    assert_eq!(trace.chunks().len(), 1);
}

#[test]
fn writer_refuses_what_the_reader_refuses_and_stays_valid() {
    let mut w = TraceWriter::new();
    w.info("gpu", "gfx10.3").unwrap();
    w.mem(0x1000, &[0; 64]).unwrap();
    let len = w.len();
    let refusals = [
        (w.submit(57, 0x1000, 1), TraceRule::QueueOutOfRange { queue: 57 }),
        (w.submit(0, 0x1000, 17), TraceRule::CommandBufferOutsideMemory { address: 0x1000, size_dw: 17 }),
        (w.mem(0x1020, &[0; 4]), TraceRule::OverlappingRegions { address: 0x1020, len: 4 }),
        (w.zero(0xff8, 16), TraceRule::OverlappingRegions { address: 0xff8, len: 16 }),
        (w.mem(0x2002, &[0; 4]), TraceRule::Misaligned { address: 0x2002, alignment: 4 }),
        (
            w.zero(ADDRESS_SPACE_END - 4, 8),
            TraceRule::RegionPastAddressSpace { address: ADDRESS_SPACE_END - 4, len: 8 },
        ),
        (w.host_write(0x103c, &[0; 8]), TraceRule::WriteOutsideMemory { address: 0x103c, len: 8 }),
        (w.shader(0x1000, 0x1004, false), TraceRule::Misaligned { address: 0x1004, alignment: 256 }),
        (w.shader(0x1000, 0x4000, false), TraceRule::ShaderOutsideMemory { what: "code", address: 0x4000 }),
        (w.info("late", "x"), TraceRule::InfoNotFirst),
        (w.ancillary(Tag(*b"ABCD"), &[]), TraceRule::InvalidTag { tag: Tag(*b"ABCD") }),
    ];
    for (result, rule) in refusals {
        let err = result.expect_err("writer accepted a bad chunk");
        assert_eq!(err.rule, rule);
        assert_eq!(err.chunk, Some(2));
        assert_eq!(err.offset, len as u64);
    }
    assert_eq!(w.len(), len);
    assert_eq!(w.chunk_count(), 2);
    w.submit(0, 0x1000, 16).unwrap();
    let trace = w.finish_trace().unwrap();
    assert_eq!(trace.events().len(), 2);
}

#[test]
fn writer_info_rules() {
    let mut w = TraceWriter::new();
    assert_eq!(w.info("", "x").unwrap_err().rule, TraceRule::InfoBadLine { line: 1 });
    assert_eq!(w.info("a=b", "x").unwrap_err().rule, TraceRule::InfoBadLine { line: 1 });
    w.info("a", "1").unwrap();
    assert_eq!(w.info("b", "x\ny").unwrap_err().rule, TraceRule::InfoBadLine { line: 2 });
    w.info("a", "2").unwrap(); // repeated keys are kept
    w.note("n").unwrap();
    assert_eq!(w.info("c", "3").unwrap_err().rule, TraceRule::InfoNotFirst);
    let trace = w.finish_trace().unwrap();
    assert_eq!(trace.info().len(), 2);
    assert_eq!(trace.info_value("a"), Some("1"));
}

// ---------------------------------------------------------------- hostile files

#[test]
fn sample_is_valid() {
    let mut raw = sample();
    raw.end();
    let trace = raw.parse().unwrap();
    assert_eq!(trace.events().len(), 3);
}

#[test]
fn bad_magic() {
    let mut raw = sample();
    raw.end();
    let mut bytes = raw.bytes();
    bytes[7] = b'X';
    assert_eq!(parse_err(bytes), TraceError::new(None, 0, TraceRule::BadMagic));
    assert_eq!(parse_err(b"\x7fELF".to_vec()).rule, TraceRule::BadMagic);
    assert_eq!(parse_err(b"hello, this is not a trace".to_vec()).rule, TraceRule::BadMagic);
}

#[test]
fn bad_version() {
    let mut raw = Raw::with_header(2, 0, 0);
    raw.end();
    assert_eq!(raw.error(), TraceError::new(None, 8, TraceRule::UnsupportedVersion { version: 2 }));
    let mut raw = Raw::with_header(0, 0, 0);
    raw.end();
    assert_eq!(raw.error().rule, TraceRule::UnsupportedVersion { version: 0 });
}

#[test]
fn unknown_flag_bit() {
    for bit in 0..16 {
        let mut raw = Raw::with_header(1, 1 << bit, 0);
        raw.end();
        assert_eq!(raw.error(), TraceError::new(None, 0xa, TraceRule::UnknownFlags { flags: 1 << bit }));
    }
}

#[test]
fn header_reserved_nonzero() {
    let mut raw = Raw::with_header(1, 0, 5);
    raw.end();
    assert_eq!(
        raw.error(),
        TraceError::new(None, 0xc, TraceRule::ReservedNonZero { field: "header reserved field", value: 5 })
    );
}

#[test]
fn bad_crc_names_chunk_and_offset() {
    let mut raw = sample();
    raw.end();
    let mut bytes = raw.bytes();
    // Flip one payload byte of chunk 2 (ZERO): its length field.
    let at = raw.offset(2) as usize + 8 + 8;
    bytes[at] ^= 0x10;
    let stored = chunk_crc(Tag::ZERO, &[0x10000u64.to_le_bytes(), 0x1000u64.to_le_bytes()].concat());
    let computed = chunk_crc(Tag::ZERO, &bytes[raw.offset(2) as usize + 8..][..16]);
    let err = parse_err(bytes);
    assert_eq!(err, err_at(2, &raw, TraceRule::CrcMismatch { stored, computed }));
    assert_eq!(
        err.to_string(),
        format!(
            "chunk 2 at byte {:#x}: CRC mismatch (stored {stored:#010x}, computed {computed:#010x})",
            raw.offset(2)
        )
    );

    // A wrong stored CRC, and a corrupted tag, are CRC errors too.
    let mut raw = Raw::new();
    raw.chunk_with(b"note", 2, b"hi", 0xdead_beef).end();
    assert_eq!(
        raw.error(),
        err_at(0, &raw, TraceRule::CrcMismatch { stored: 0xdead_beef, computed: chunk_crc(Tag::NOTE, b"hi") })
    );
    let mut raw = sample();
    raw.end();
    let mut bytes = raw.bytes();
    bytes[raw.offset(3) as usize] = b'X';
    assert!(matches!(parse_err(bytes).rule, TraceRule::CrcMismatch { .. }));
}

#[test]
fn truncated_file() {
    let mut raw = sample();
    raw.end();
    let bytes = raw.bytes();
    // Inside the header.
    for cut in [0, 3, 8, 15] {
        assert_eq!(
            parse_err(bytes[..cut].to_vec()),
            TraceError::new(None, 0, TraceRule::Truncated { needed: 16, available: cut as u64 })
        );
    }
    // Inside a chunk's tag and length.
    let at = raw.offset(3) as usize;
    for extra in [1, 4, 7] {
        assert_eq!(
            parse_err(bytes[..at + extra].to_vec()),
            err_at(3, &raw, TraceRule::Truncated { needed: 12, available: extra as u64 })
        );
    }
    // Inside a payload or the CRC: the length runs past the end.
    for extra in [8, 12, 30, 35] {
        assert_eq!(
            parse_err(bytes[..at + extra].to_vec()),
            err_at(3, &raw, TraceRule::ChunkPastEnd { len: 24, available: extra as u64 })
        );
    }
}

#[test]
fn chunk_length_past_end() {
    let mut raw = Raw::new();
    raw.chunk_with(b"MEM ", 1000, &[0; 16], 0).end();
    let available = (raw.bytes().len() as u64) - raw.offset(0);
    assert_eq!(raw.error(), err_at(0, &raw, TraceRule::ChunkPastEnd { len: 1000, available }));
}

#[test]
fn length_field_of_all_ones_does_not_allocate() {
    let mut raw = sample();
    raw.chunk_with(b"MEM ", u32::MAX, &[0; 8], 0).end();
    let available = (raw.bytes().len() as u64) - raw.offset(4);
    assert_eq!(raw.error(), err_at(4, &raw, TraceRule::ChunkPastEnd { len: u32::MAX, available }));
    // The same as the very first chunk, and with nothing after it.
    let mut bytes = Raw::new().bytes();
    bytes.extend_from_slice(b"MEM \xff\xff\xff\xff");
    assert_eq!(parse_err(bytes), TraceError::new(Some(0), 16, TraceRule::ChunkPastEnd { len: u32::MAX, available: 8 }));
}

#[test]
fn unknown_critical_chunk_is_refused_by_tag() {
    let mut raw = sample();
    raw.chunk(b"ABCD", b"whatever").end();
    let err = raw.error();
    assert_eq!(err, err_at(4, &raw, TraceRule::UnknownCriticalChunk { tag: Tag(*b"ABCD") }));
    assert!(err.to_string().contains("`ABCD`"), "{err}");
    assert!(err.to_string().contains(&format!("chunk 4 at byte {:#x}", raw.offset(4))), "{err}");
}

#[test]
fn unknown_ancillary_chunk_is_skipped() {
    let mut raw = sample();
    raw.chunk(b"zzzz", b"\xff\xfe anything").chunk(b"note", b"for people").subm(0, 0x1000, 1).end();
    let trace = raw.parse().unwrap();
    let events = trace.events();
    assert_eq!(events[3], TraceEvent::Ancillary { chunk: 4, tag: Tag(*b"zzzz") });
    assert_eq!(events[4], TraceEvent::Note { chunk: 5, text: "for people".to_owned() });
    assert_eq!(events[5], TraceEvent::Submit { chunk: 6, queue: 0, address: 0x1000, size_dw: 1 });
    assert_eq!(trace.chunks()[4].tag, Tag(*b"zzzz"));
    assert_eq!(trace.chunks()[4].payload_len, 11);
}

#[test]
fn invalid_tags() {
    for tag in [b"1abc", b" ABC", b"AB\0C", b"\xc3\xa9ab"] {
        let mut raw = sample();
        raw.chunk(tag, b"").end();
        assert_eq!(raw.error(), err_at(4, &raw, TraceRule::InvalidTag { tag: Tag(*tag) }));
    }
}

#[test]
fn overlapping_regions() {
    let mut raw = sample();
    raw.zero(0x10ff0, 0x20).end();
    assert_eq!(raw.error(), err_at(4, &raw, TraceRule::OverlappingRegions { address: 0x10ff0, len: 0x20 }));
    // Contained, containing, exact, and overlapping the start.
    for (address, len) in [(0x10100, 4), (0xf000, 0x4000), (0x10000, 0x1000), (0xfff0, 0x20)] {
        let mut raw = sample();
        raw.mem(address, &vec![0; len as usize]).end();
        assert_eq!(raw.error(), err_at(4, &raw, TraceRule::OverlappingRegions { address, len }));
    }
    // Adjacent on both sides is fine; empty regions overlap nothing.
    let mut raw = sample();
    raw.zero(0xf000, 0x1000).zero(0x11000, 4).mem(0x10004, &[]).zero(0x10008, 0).end();
    raw.parse().unwrap();
}

#[test]
fn many_regions_are_checked_quickly() {
    // 100k adjacent regions and a write spanning all of them: the checks are
    // ordered-map lookups, not scans.
    let mut w = TraceWriter::new();
    for i in 0..100_000u64 {
        w.zero(i * 4, 4).unwrap();
    }
    w.host_write(0, &vec![1; 400_000]).unwrap();
    for _ in 0..10_000 {
        w.submit(0, 0, 100_000).unwrap();
    }
    let trace = w.finish_trace().unwrap();
    assert_eq!(trace.events().len(), 110_001);
}

#[test]
fn writ_outside_memory() {
    let cases = [(0x1004, 8usize), (0x10ffc, 8), (0x3000, 4), (0x1008, 4)];
    for (address, len) in cases {
        let mut raw = sample();
        raw.writ(address, &vec![0; len]).end();
        assert_eq!(raw.error(), err_at(4, &raw, TraceRule::WriteOutsideMemory { address, len: len as u64 }));
    }
    // Declared later does not count.
    let mut raw = Raw::new();
    raw.writ(0x1000, &[0; 4]).mem(0x1000, &[0; 4]).end();
    assert_eq!(raw.error(), err_at(0, &raw, TraceRule::WriteOutsideMemory { address: 0x1000, len: 4 }));
    // Misaligned.
    let mut raw = sample();
    raw.writ(0x1001, &[0; 2]).end();
    assert_eq!(raw.error(), err_at(4, &raw, TraceRule::Misaligned { address: 0x1001, alignment: 4 }));
}

#[test]
fn queue_out_of_range() {
    let mut raw = sample();
    raw.subm(57, 0x1000, 1).end();
    assert_eq!(raw.error(), err_at(4, &raw, TraceRule::QueueOutOfRange { queue: 57 }));
    let mut raw = sample();
    raw.subm(u32::MAX, 0x1000, 1).end();
    assert_eq!(raw.error().rule, TraceRule::QueueOutOfRange { queue: u32::MAX });
    let mut raw = sample();
    raw.subm(56, 0x1000, 1).end();
    raw.parse().unwrap();
}

#[test]
fn subm_outside_memory() {
    for (address, size_dw) in [(0x1000, 3), (0x3000, 1), (0x1004, u32::MAX), (0x0001_0000_0000_1000, 1)] {
        let mut raw = sample();
        raw.subm(0, address, size_dw).end();
        assert_eq!(raw.error(), err_at(4, &raw, TraceRule::CommandBufferOutsideMemory { address, size_dw }));
    }
    // The region must be declared before the submission.
    let mut raw = Raw::new();
    raw.subm(0, 0x1000, 1).mem(0x1000, &[0; 4]).end();
    assert_eq!(raw.error(), err_at(0, &raw, TraceRule::CommandBufferOutsideMemory { address: 0x1000, size_dw: 1 }));
    // Spanning two adjacent regions is fine.
    let mut raw = sample();
    raw.mem(0x1008, &[0; 8]).subm(1, 0x1000, 4).end();
    raw.parse().unwrap();
}

#[test]
fn misaligned_address() {
    let mut raw = sample();
    raw.mem(0x2002, &[0; 4]).end();
    assert_eq!(raw.error(), err_at(4, &raw, TraceRule::Misaligned { address: 0x2002, alignment: 4 }));
    let mut raw = sample();
    raw.zero(0x2001, 4).end();
    assert_eq!(raw.error(), err_at(4, &raw, TraceRule::Misaligned { address: 0x2001, alignment: 4 }));
    let mut raw = sample();
    raw.mem(0x2000, &[0; 8]).subm(0, 0x2002, 1).end();
    assert_eq!(raw.error(), err_at(5, &raw, TraceRule::Misaligned { address: 0x2002, alignment: 4 }));
    let mut raw = sample();
    raw.shdr(0x10000, 0x10080, 0, 0).end();
    assert_eq!(raw.error(), err_at(4, &raw, TraceRule::Misaligned { address: 0x10080, alignment: 256 }));
    let mut raw = sample();
    raw.shdr(0x10002, 0x10000, 0, 0).end();
    assert_eq!(raw.error(), err_at(4, &raw, TraceRule::Misaligned { address: 0x10002, alignment: 4 }));
}

#[test]
fn region_past_address_space() {
    let top = ADDRESS_SPACE_END;
    for (address, len) in [(top - 0x1000, 0x2000), (top, 4), (u64::MAX - 3, 8), (0, u64::MAX)] {
        let mut raw = sample();
        raw.zero(address, len).end();
        assert_eq!(raw.error(), err_at(4, &raw, TraceRule::RegionPastAddressSpace { address, len }));
    }
    let mut raw = sample();
    raw.mem(top - 4, &[0; 8]).end();
    assert_eq!(raw.error(), err_at(4, &raw, TraceRule::RegionPastAddressSpace { address: top - 4, len: 8 }));
    // Ending exactly at 2^48 is fine.
    let mut raw = sample();
    raw.zero(top - 0x1000, 0x1000).mem(top - 0x2000, &[0; 0x1000]).end();
    raw.parse().unwrap();
}

#[test]
fn shader_rules() {
    let mut raw = sample();
    raw.shdr(0x1000, 0x10000, 1, 0).end();
    let trace = raw.parse().unwrap();
    assert!(matches!(trace.events()[3], TraceEvent::Shader { relocated: true, .. }));
    let mut raw = sample();
    raw.shdr(0x3000, 0x10000, 0, 0).end();
    assert_eq!(raw.error(), err_at(4, &raw, TraceRule::ShaderOutsideMemory { what: "header", address: 0x3000 }));
    let mut raw = sample();
    raw.shdr(0x1000, 0x20000, 0, 0).end();
    assert_eq!(raw.error(), err_at(4, &raw, TraceRule::ShaderOutsideMemory { what: "code", address: 0x20000 }));
    let mut raw = sample();
    raw.shdr(0x1000, 0x10000, 2, 0).end();
    assert!(matches!(raw.error().rule, TraceRule::ReservedNonZero { value: 2, .. }));
    let mut raw = sample();
    raw.shdr(0x1000, 0x10000, 0, 1).end();
    assert!(matches!(raw.error().rule, TraceRule::ReservedNonZero { value: 1, .. }));
}

#[test]
fn reserved_fields_nonzero() {
    let mut raw = sample();
    raw.subm_raw(0, 1, 0x1000, 1, 0).end();
    assert_eq!(raw.error(), err_at(4, &raw, TraceRule::ReservedNonZero { field: "SUBM flags", value: 1 }));
    let mut raw = sample();
    raw.subm_raw(0, 0, 0x1000, 1, 7).end();
    assert_eq!(raw.error(), err_at(4, &raw, TraceRule::ReservedNonZero { field: "SUBM reserved field", value: 7 }));
    // A pad byte that is not zero.
    let mut raw = sample();
    raw.chunk(b"note", b"abc").end();
    let mut bytes = raw.bytes();
    bytes[raw.offset(4) as usize + 8 + 3] = 1;
    assert_eq!(parse_err(bytes), err_at(4, &raw, TraceRule::ReservedNonZero { field: "chunk pad byte", value: 1 }));
}

#[test]
fn bad_payload_lengths() {
    let cases: [(&[u8; 4], usize, &str); 10] = [
        (b"MEM ", 7, "at least 8"),
        (b"MEM ", 0, "at least 8"),
        (b"WRIT", 4, "at least 8"),
        (b"ZERO", 15, "exactly 16"),
        (b"ZERO", 17, "exactly 16"),
        (b"SUBM", 20, "exactly 24"),
        (b"SUBM", 28, "exactly 24"),
        (b"SHDR", 25, "exactly 24"),
        (b"END ", 5, "exactly 4"),
        (b"END ", 0, "exactly 4"),
    ];
    for (tag, len, expected) in cases {
        let mut raw = sample();
        raw.chunk(tag, &vec![0; len]).end();
        assert_eq!(
            raw.error(),
            err_at(4, &raw, TraceRule::BadPayloadLength { tag: Tag(*tag), len: len as u64, expected })
        );
    }
}

#[test]
fn missing_end() {
    let raw = sample();
    let len = raw.bytes().len() as u64;
    assert_eq!(raw.error(), TraceError::new(Some(4), len, TraceRule::MissingEnd { last_good_offset: raw.offset(3) }));
    assert_eq!(
        parse_err(Raw::new().bytes()),
        TraceError::new(Some(0), 16, TraceRule::MissingEnd { last_good_offset: 0 })
    );
}

#[test]
fn bytes_after_end() {
    let mut raw = sample();
    raw.end();
    let len = raw.bytes().len() as u64;
    for extra in [1usize, 4, 40] {
        let mut bytes = raw.bytes();
        bytes.extend(std::iter::repeat_n(0u8, extra));
        assert_eq!(
            parse_err(bytes),
            TraceError::new(
                Some(5),
                len,
                TraceRule::BytesAfterEnd { last_good_offset: raw.offset(4), extra: extra as u64 }
            )
        );
    }
    // A whole valid chunk after END is still bytes after END.
    let mut raw = sample();
    raw.end().chunk(b"note", b"late");
    assert!(matches!(raw.error().rule, TraceRule::BytesAfterEnd { extra: 16, .. }));
}

#[test]
fn end_count_wrong() {
    for stored in [0u32, 3, 5, u32::MAX] {
        let mut raw = sample();
        raw.chunk(b"END ", &stored.to_le_bytes());
        assert_eq!(raw.error(), err_at(4, &raw, TraceRule::EndCountMismatch { stored, actual: 4 }));
    }
}

#[test]
fn info_not_first() {
    let mut raw = Raw::new();
    raw.mem(0x1000, &[0; 4]).info("gpu=gfx10.3\n").end();
    assert_eq!(raw.error(), err_at(1, &raw, TraceRule::InfoNotFirst));
    let mut raw = Raw::new();
    raw.chunk(b"note", b"first").info("gpu=gfx10.3\n").end();
    assert_eq!(raw.error(), err_at(1, &raw, TraceRule::InfoNotFirst));
    let mut raw = sample();
    raw.info("gpu=gfx7\n").end();
    assert_eq!(raw.error(), err_at(4, &raw, TraceRule::DuplicateInfo));
}

#[test]
fn info_text_rules() {
    let mut raw = Raw::new();
    raw.chunk(b"INFO", b"gpu=gfx10.3\nbad\xff=1\n").end();
    assert_eq!(raw.error(), err_at(0, &raw, TraceRule::InfoNotUtf8 { valid_up_to: 15 }));
    let mut raw = Raw::new();
    raw.info("gpu=gfx10.3\njust words\n").end();
    assert_eq!(raw.error(), err_at(0, &raw, TraceRule::InfoBadLine { line: 2 }));
    let mut raw = Raw::new();
    raw.info("zeta=1\ngpu=gfx7\nalpha=x=y").end();
    let trace = raw.parse().unwrap();
    assert_eq!(trace.gpu(), Some("gfx7"));
    assert_eq!(trace.info()[0], ("zeta".to_owned(), "1".to_owned()));
    assert_eq!(trace.info()[2], ("alpha".to_owned(), "x=y".to_owned()));
}

#[test]
fn zero_region_of_2_pow_47_maps_without_allocating() {
    let mut w = TraceWriter::new();
    w.zero(1 << 47, 1 << 47).unwrap();
    w.mem(0x1000, &0xffff_1000u32.to_le_bytes()).unwrap();
    w.submit(0, 0x1000, 1).unwrap();
    let trace = w.finish_trace().unwrap();
    let mem = trace.build_memory().unwrap();
    assert_eq!(mem.allocated_page_bytes(), 0);
    assert_eq!(mem.read_u64(ADDRESS_SPACE_END - 8).unwrap(), 0);
    mem.write_u32(ADDRESS_SPACE_END - 4, 1).unwrap();
    assert_eq!(mem.allocated_page_bytes(), 4096);
    assert!(mem.is_mapped(1 << 47, 1 << 47));
}

#[test]
fn read_file_errors_are_io() {
    let err = Trace::read_file(Path::new("/nonexistent/dir/x.pm4t")).unwrap_err();
    assert!(matches!(err.rule, TraceRule::Io { kind: std::io::ErrorKind::NotFound, .. }), "{err}");
    assert!(err.to_string().contains("/nonexistent/dir/x.pm4t"), "{err}");
}

#[test]
fn error_display_forms() {
    let header = TraceError::new(None, 8, TraceRule::UnsupportedVersion { version: 9 });
    assert_eq!(header.to_string(), "header at byte 0x8: unsupported version 9 (this reader knows version 1)");
    let chunk = TraceError::new(Some(3), 0x1a4, TraceRule::QueueOutOfRange { queue: 57 });
    assert_eq!(chunk.to_string(), "chunk 3 at byte 0x1a4: queue 57 out of range (0..=56)");
    let tag = TraceError::new(Some(1), 0x20, TraceRule::InvalidTag { tag: Tag(*b"\x01abc") });
    assert_eq!(tag.to_string(), "chunk 1 at byte 0x20: invalid chunk tag `\\x01abc`");
}

#[test]
fn map_region_shares_the_file() {
    let mut raw = sample();
    raw.end();
    let bytes: Arc<[u8]> = Arc::from(raw.bytes());
    let trace = Trace::parse(Arc::clone(&bytes)).unwrap();
    let mem = SparseMemory::new();
    for event in trace.events() {
        trace.map_region(&mem, event).unwrap();
    }
    // The memory holds the file's buffer (one more strong reference) and no pages.
    assert_eq!(Arc::strong_count(&bytes), 3);
    assert_eq!(mem.allocated_page_bytes(), 0);
    assert_eq!(mem.read_u32(0x1004).unwrap(), 0xffff_1000);
    // Mapping twice is an overlap, reported by memory.
    assert!(trace.map_region(&mem, &trace.events()[0]).is_err());
}

// ---------------------------------------------------------------- properties

/// Chunk boundaries of a valid trace made by `sample()` plus a few extras.
fn rich_sample() -> Raw {
    let mut raw = sample();
    raw.mem(0x2000, &[0x31, 0x32, 0x33, 0x34, 0, 0, 0, 0])
        .writ(0x1000, &[0; 4])
        .shdr(0x2000, 0x10000, 0, 0)
        .chunk(b"note", b"n")
        .chunk(b"abcd", b"xyz")
        .subm(3, 0x10000, 8)
        .end();
    raw
}

/// Recomputes the CRC of every chunk whose bounds are still sane, so that
/// mutations reach the payload rules instead of stopping at the CRC.
fn fix_crcs(bytes: &mut [u8]) {
    let mut at = 16usize;
    while at + 8 <= bytes.len() {
        let len = u32::from_le_bytes([bytes[at + 4], bytes[at + 5], bytes[at + 6], bytes[at + 7]]) as usize;
        let crc_at = at + 8 + len + (4 - len % 4) % 4;
        if crc_at + 4 > bytes.len() {
            return;
        }
        let tag = Tag([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        let crc = chunk_crc(tag, &bytes[at + 8..at + 8 + len]);
        bytes[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
        at = crc_at + 4;
    }
}

/// Whatever parses must also map and apply without error.
fn exercise(bytes: Vec<u8>) {
    if let Ok(trace) = Trace::from_bytes(bytes) {
        let mem = trace.build_memory().expect("a valid trace maps");
        for (_, address, size_dw) in trace.submissions() {
            assert!(mem.is_mapped(address, u64::from(size_dw) * 4));
        }
        trace.memory_before(trace.events().len()).expect("a valid trace applies its writes");
        for chunk in trace.chunks() {
            let _ = chunk.tag.to_string();
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Mem(u64, usize),
    Zero(u64, u64),
    Writ(u64, usize),
    Subm(u32, u64, u32),
    Shdr(u64, u64, bool),
    Note(String),
}

fn op() -> impl Strategy<Value = Op> {
    let address = (0u64..64).prop_map(|a| a * 64);
    prop_oneof![
        (address.clone(), 0usize..200).prop_map(|(a, n)| Op::Mem(a, n)),
        (address.clone(), 0u64..300).prop_map(|(a, n)| Op::Zero(a, n)),
        (address.clone(), 0usize..100).prop_map(|(a, n)| Op::Writ(a, n)),
        (0u32..60, address.clone(), 0u32..40).prop_map(|(q, a, n)| Op::Subm(q, a, n)),
        (address.clone(), (0u64..16).prop_map(|a| a * 256), any::<bool>()).prop_map(|(h, c, r)| Op::Shdr(h, c, r)),
        "[a-z ]{0,12}".prop_map(Op::Note),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        exercise(bytes);
    }

    #[test]
    fn random_chunks_after_a_header_never_panic(
        body in proptest::collection::vec(any::<u8>(), 0..600),
        fix in any::<bool>(),
    ) {
        let mut bytes = Raw::new().bytes();
        bytes.extend_from_slice(&body);
        if fix {
            fix_crcs(&mut bytes);
        }
        exercise(bytes);
    }

    #[test]
    fn mutations_of_a_valid_trace_never_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in proptest::option::of(any::<prop::sample::Index>()),
        fix in any::<bool>(),
    ) {
        let mut bytes = rich_sample().bytes();
        for (at, value) in flips {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        if let Some(cut) = cut {
            let keep = cut.index(bytes.len() + 1);
            bytes.truncate(keep);
        }
        if fix {
            fix_crcs(&mut bytes);
        }
        exercise(bytes);
    }

    #[test]
    fn whatever_the_writer_accepts_the_reader_accepts(ops in proptest::collection::vec(op(), 0..40)) {
        let mut w = TraceWriter::new();
        w.info("gpu", "gfx10.3").unwrap();
        let mut accepted = 0;
        for op in &ops {
            let result = match op {
                Op::Mem(a, n) => w.mem(*a, &vec![0xab; *n]),
                Op::Zero(a, n) => w.zero(*a, *n),
                Op::Writ(a, n) => w.host_write(*a, &vec![0xcd; *n]),
                Op::Subm(q, a, n) => w.submit(*q, *a, *n),
                Op::Shdr(h, c, r) => w.shader(*h, *c, *r),
                Op::Note(t) => w.note(t),
            };
            accepted += usize::from(result.is_ok());
        }
        let trace = w.finish_trace().unwrap();
        prop_assert_eq!(trace.events().len(), accepted);
        exercise(trace.bytes().to_vec());
    }
}
