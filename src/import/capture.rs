//! KYCAP command captures: the file format (header, records with their
//! hashes, footer) and its import into a trace.

use super::*;

/// What is wrong with a KYCAP capture ([`ImportError::Kycap`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KycapProblem {
    /// The file is shorter than the 24-byte header.
    #[error("file of {available} bytes is shorter than the 24-byte header")]
    TruncatedHeader { available: u64 },
    /// The file does not start with `KYCAP\r\n\x1a`.
    #[error("bad magic {}", hex::encode(.found))]
    BadMagic { found: [u8; 8] },
    /// A version other than 2.0.
    #[error("unsupported version {major}.{minor} (this importer knows 2.0)")]
    UnsupportedVersion { major: u16, minor: u16 },
    /// A header size other than 24.
    #[error("header size {size}, must be 24")]
    BadHeaderSize { size: u32 },
    /// A capability other than CommandsOnly (1).
    #[error("capability {capability:#x}, only CommandsOnly (1) is known")]
    UnknownCapability { capability: u32 },
    /// The header's reserved field is not 0.
    #[error("reserved header field is {value:#x}, must be 0")]
    HeaderReservedNonZero { value: u32 },
    /// The file ends after a record, without a footer.
    #[error("capture is not finalized (no footer)")]
    NotFinalized,
    /// Fewer bytes are left than a 40-byte record header (and not exactly
    /// a 32-byte footer).
    #[error("truncated record header: {available} bytes left")]
    TruncatedRecordHeader { available: u64 },
    /// A record size that is not 40 plus 4 per dword.
    #[error("record size {size} does not match 40 + 4 * ({primary_dw} + {secondary_dw} dwords)")]
    BadRecordSize { size: u32, primary_dw: u32, secondary_dw: u32 },
    /// A record running past the end of the file.
    #[error("record of {size} bytes runs past the end of the file ({available} bytes left)")]
    RecordPastEnd { size: u32, available: u64 },
    /// More events than [`KycapLimits::max_events`].
    #[error("more than {limit} events")]
    TooManyEvents { limit: u64 },
    /// More command dwords than [`KycapLimits::max_dwords`].
    #[error("{total} command dwords, more than the limit of {limit}")]
    TooManyDwords { total: u64, limit: u64 },
    /// A record whose XXH3-64 hash does not match.
    #[error("record hash {stored:#018x} stored, {computed:#018x} computed")]
    BadRecordHash { stored: u64, computed: u64 },
    /// An event type other than 1..=4.
    #[error("unknown event type {value}")]
    UnknownEventType { value: u32 },
    /// Flag bits other than bit 0 (interrupt on done).
    #[error("unknown record flags {flags:#x}")]
    UnknownFlags { flags: u32 },
    /// A sequence number that does not follow the previous one.
    #[error("sequence {found}, expected {expected}")]
    SequenceGap { expected: u64, found: u64 },
    /// A queue id the event type does not allow: 0 for graphics,
    /// 0x20..=0x57 for compute, 0xffffffff for markers.
    #[error("{event} on queue {queue:#x}")]
    BadQueue { event: KycapEventType, queue: u32 },
    /// A graphics or compute submission with no primary dwords.
    #[error("{event} with no command dwords")]
    EmptySubmit { event: KycapEventType },
    /// A compute submission with secondary (constant engine) dwords.
    #[error("compute submission with {secondary_dw} secondary dwords")]
    SecondaryOnCompute { secondary_dw: u32 },
    /// A marker with the interrupt-on-done flag.
    #[error("{event} with interrupt on done")]
    MarkerInterrupt { event: KycapEventType },
    /// A marker with command dwords.
    #[error("{event} with {primary_dw} primary and {secondary_dw} secondary dwords")]
    MarkerPayload { event: KycapEventType, primary_dw: u32, secondary_dw: u32 },
    /// The footer does not start with `KYCEND\r\n`.
    #[error("bad footer magic {}", hex::encode(.found))]
    BadFooterMagic { found: [u8; 8] },
    /// A footer whose XXH3-64 hash does not match.
    #[error("footer hash {stored:#018x} stored, {computed:#018x} computed")]
    BadFooterHash { stored: u64, computed: u64 },
    /// The footer's event count is not the number of records.
    #[error("footer counts {stored} events, the file holds {counted}")]
    FooterEventCount { stored: u64, counted: u64 },
    /// The footer's dword count is not the records' total.
    #[error("footer counts {stored} dwords, the records hold {counted}")]
    FooterDwordCount { stored: u64, counted: u64 },
    /// No room left in the 48-bit address space for the record's buffer.
    #[error("no room for {len} bytes at {address:#x} in the 48-bit address space")]
    AddressSpaceExhausted { address: u64, len: u64 },
}

/// The facts of the KYCAP capture format, version 2.0, as its writer and
/// loader define them. All integers are little-endian.
///
/// ```text
/// Header (24 bytes)
///   0x00 [u8; 8] magic "KYCAP\r\n\x1a"
///   0x08 u16     major version, 2
///   0x0a u16     minor version, 0 (a reader refuses a higher one)
///   0x0c u32     header size, 24
///   0x10 u32     capability, 1 = CommandsOnly
///   0x14 u32     reserved, 0
/// Record (40-byte header, then payload), repeated
///   0x00 u32     record size in bytes, header included: 40 + 4 * (primary + secondary)
///   0x04 u32     event type: 1 GraphicsSubmit, 2 ComputeSubmit, 3 FlipPreparation, 4 SuspendRequest
///   0x08 u64     sequence: 1 for the first record, then +1 each
///   0x10 u32     queue: 0 graphics, 0x20..=0x57 compute, 0xffffffff markers
///   0x14 u32     flags: bit 0 = interrupt on done (never on markers)
///   0x18 u32     primary dword count (DCB or ACB; non-zero for submissions, 0 for markers)
///   0x1c u32     secondary dword count (CCB; graphics only)
///   0x20 u64     XXH3-64 (seed 0) of the 40 header bytes, with this field zero, then the payload
///   0x28 ...     payload: the primary dwords, then the secondary dwords
/// Footer (32 bytes): the file's last 32 bytes
///   0x00 [u8; 8] magic "KYCEND\r\n"
///   0x08 u64     number of records
///   0x10 u64     total dwords of all records
///   0x18 u64     XXH3-64 (seed 0) of the 32 footer bytes, with this field zero
/// ```
///
/// A reader takes the rest of the file for the footer when exactly 32
/// bytes are left, and for a record otherwise.
pub mod kycap {
    /// Magic at the start of the file.
    pub const MAGIC: [u8; 8] = *b"KYCAP\r\n\x1a";
    /// Magic at the start of the footer.
    pub const FOOTER_MAGIC: [u8; 8] = *b"KYCEND\r\n";
    /// The major version this importer reads.
    pub const VERSION_MAJOR: u16 = 2;
    /// The highest minor version this importer reads.
    pub const VERSION_MINOR: u16 = 0;
    /// Length of the file header.
    pub const HEADER_LEN: usize = 24;
    /// Length of a record's header.
    pub const RECORD_HEADER_LEN: usize = 40;
    /// Length of the footer.
    pub const FOOTER_LEN: usize = 32;
    /// The only capability: the capture holds commands only.
    pub const CAPABILITY_COMMANDS_ONLY: u32 = 1;
    /// Record flag: the submission asked for an interrupt when done.
    pub const FLAG_INTERRUPT_ON_DONE: u32 = 1;
    /// The queue field of a marker record.
    pub const NO_QUEUE: u32 = u32::MAX;
    /// The graphics queue id.
    pub const GRAPHICS_QUEUE: u32 = 0;
    /// The first compute queue id.
    pub const FIRST_COMPUTE_QUEUE: u32 = 0x20;
    /// Number of compute queue ids (7 pipes of 8 queues).
    pub const COMPUTE_QUEUES: u32 = 56;
    /// Offset of the hash field in a record header.
    pub const RECORD_HASH_OFFSET: usize = 32;
    /// Offset of the hash field in the footer.
    pub const FOOTER_HASH_OFFSET: usize = 24;
    /// The format's own loader's default limit on events.
    pub const DEFAULT_MAX_EVENTS: u64 = 1_000_000;
    /// The format's own loader's default limit on command dwords.
    pub const DEFAULT_MAX_DWORDS: u64 = 64 * 1024 * 1024;
}

/// A KYCAP event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KycapEventType {
    /// A graphics submission: DCB, optional CCB (type 1).
    GraphicsSubmit,
    /// A compute submission: one ACB (type 2).
    ComputeSubmit,
    /// A flip preparation marker (type 3).
    FlipPreparation,
    /// A suspend request marker (type 4).
    SuspendRequest,
}

impl KycapEventType {
    /// The type for a record's type field.
    pub fn from_raw(value: u32) -> Option<Self> {
        match value {
            1 => Some(KycapEventType::GraphicsSubmit),
            2 => Some(KycapEventType::ComputeSubmit),
            3 => Some(KycapEventType::FlipPreparation),
            4 => Some(KycapEventType::SuspendRequest),
            _ => None,
        }
    }

    /// The value of a record's type field.
    pub fn raw(self) -> u32 {
        match self {
            KycapEventType::GraphicsSubmit => 1,
            KycapEventType::ComputeSubmit => 2,
            KycapEventType::FlipPreparation => 3,
            KycapEventType::SuspendRequest => 4,
        }
    }

    /// True for the two marker types.
    pub fn is_marker(self) -> bool {
        matches!(self, KycapEventType::FlipPreparation | KycapEventType::SuspendRequest)
    }
}

impl fmt::Display for KycapEventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KycapEventType::GraphicsSubmit => "graphics submission",
            KycapEventType::ComputeSubmit => "compute submission",
            KycapEventType::FlipPreparation => "flip preparation",
            KycapEventType::SuspendRequest => "suspend request",
        })
    }
}

/// The pm4core queue for a KYCAP queue id: graphics 0 is queue 0, compute
/// id `0x20 + n` (n = 0..=55) is queue `1 + n`, keeping the ids' order.
/// The trace format numbers compute queues `1 + pipe * 8 + queue`; KYCAP
/// ids cover 7 pipes of 8 queues from 0x20, so the two agree when
/// `n = pipe * 8 + queue` (pipe-major ids), which the capture format itself
/// does not state.
pub fn kycap_queue(id: u32) -> Option<u32> {
    if id == kycap::GRAPHICS_QUEUE {
        return Some(0);
    }
    let n = id.checked_sub(kycap::FIRST_COMPUTE_QUEUE)?;
    (n < kycap::COMPUTE_QUEUES).then_some(1 + n)
}

/// One checked KYCAP record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KycapEvent<'a> {
    /// Index of the record in the file (0 is the first).
    pub index: u64,
    /// Byte offset of the record in the file.
    pub offset: u64,
    /// The record's sequence number.
    pub sequence: u64,
    /// Its type.
    pub event: KycapEventType,
    /// Its queue id (KYCAP numbering; see [`kycap_queue`]).
    pub queue: u32,
    /// The interrupt-on-done flag.
    pub interrupt_on_done: bool,
    /// The primary dwords' bytes (DCB or ACB).
    pub primary: &'a [u8],
    /// The secondary dwords' bytes (CCB).
    pub secondary: &'a [u8],
}

/// A checked KYCAP capture, borrowing the file's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KycapCapture<'a> {
    /// Major version (2).
    pub major: u16,
    /// Minor version (0).
    pub minor: u16,
    /// The records, in file order.
    pub events: Vec<KycapEvent<'a>>,
    /// Total dwords of all records.
    pub total_dwords: u64,
}

fn kycap_error(offset: usize, record: Option<u64>, problem: KycapProblem) -> ImportError {
    ImportError::Kycap { offset: offset as u64, record, problem }
}

/// Little-endian field readers: a field past the end reads as zero (every
/// caller has checked the bounds already).
fn le_bytes<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(field) = at.checked_add(N).and_then(|end| bytes.get(at..end)) {
        out.copy_from_slice(field);
    }
    out
}

fn le16(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(le_bytes(bytes, at))
}

fn le32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(le_bytes(bytes, at))
}

fn le64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(le_bytes(bytes, at))
}

/// Reads and checks a whole KYCAP capture: header, every record (size,
/// bounds, limits, hash, type, flags, sequence, queue and shape) and the
/// footer (magic, hash, counts). The first problem found is the error.
pub fn parse_kycap<'a>(bytes: &'a [u8], limits: &KycapLimits) -> Result<KycapCapture<'a>, ImportError> {
    use kycap::*;

    let Some(header) = bytes.get(..HEADER_LEN) else {
        return Err(kycap_error(0, None, KycapProblem::TruncatedHeader { available: bytes.len() as u64 }));
    };
    let magic = le_bytes::<8>(header, 0);
    if magic != MAGIC {
        return Err(kycap_error(0, None, KycapProblem::BadMagic { found: magic }));
    }
    let (major, minor) = (le16(header, 8), le16(header, 10));
    if major != VERSION_MAJOR || minor > VERSION_MINOR {
        return Err(kycap_error(8, None, KycapProblem::UnsupportedVersion { major, minor }));
    }
    let size = le32(header, 12);
    if size as usize != HEADER_LEN {
        return Err(kycap_error(12, None, KycapProblem::BadHeaderSize { size }));
    }
    let capability = le32(header, 16);
    if capability != CAPABILITY_COMMANDS_ONLY {
        return Err(kycap_error(16, None, KycapProblem::UnknownCapability { capability }));
    }
    let reserved = le32(header, 20);
    if reserved != 0 {
        return Err(kycap_error(20, None, KycapProblem::HeaderReservedNonZero { value: reserved }));
    }

    let mut events = Vec::new();
    let mut total_dwords = 0u64;
    let mut last_sequence = 0u64;
    let mut pos = HEADER_LEN;
    loop {
        let remaining = bytes.len().saturating_sub(pos);
        if remaining == FOOTER_LEN {
            let footer = bytes.get(pos..).unwrap_or(&[]);
            check_footer(footer, pos, events.len() as u64, total_dwords)?;
            return Ok(KycapCapture { major, minor, events, total_dwords });
        }
        let index = events.len() as u64;
        let fail = |problem| kycap_error(pos, Some(index), problem);
        if remaining == 0 {
            return Err(fail(KycapProblem::NotFinalized));
        }
        let Some(head) = bytes.get(pos..pos.saturating_add(RECORD_HEADER_LEN)) else {
            return Err(fail(KycapProblem::TruncatedRecordHeader { available: remaining as u64 }));
        };
        let size = le32(head, 0);
        let primary_dw = le32(head, 24);
        let secondary_dw = le32(head, 28);
        let dwords = u64::from(primary_dw) + u64::from(secondary_dw);
        if u64::from(size) != RECORD_HEADER_LEN as u64 + dwords * 4 {
            return Err(fail(KycapProblem::BadRecordSize { size, primary_dw, secondary_dw }));
        }
        let Some(record) = bytes.get(pos..pos.saturating_add(size as usize)) else {
            return Err(fail(KycapProblem::RecordPastEnd { size, available: remaining as u64 }));
        };
        if index >= limits.max_events {
            return Err(fail(KycapProblem::TooManyEvents { limit: limits.max_events }));
        }
        let total = total_dwords.saturating_add(dwords);
        if total > limits.max_dwords {
            return Err(fail(KycapProblem::TooManyDwords { total, limit: limits.max_dwords }));
        }
        let payload = record.get(RECORD_HEADER_LEN..).unwrap_or(&[]);
        let stored = le64(head, RECORD_HASH_OFFSET);
        let computed = record_hash(head, payload);
        if stored != computed {
            return Err(fail(KycapProblem::BadRecordHash { stored, computed }));
        }
        let raw_type = le32(head, 4);
        let Some(event) = KycapEventType::from_raw(raw_type) else {
            return Err(fail(KycapProblem::UnknownEventType { value: raw_type }));
        };
        let flags = le32(head, 20);
        if flags & !FLAG_INTERRUPT_ON_DONE != 0 {
            return Err(fail(KycapProblem::UnknownFlags { flags }));
        }
        let interrupt_on_done = flags & FLAG_INTERRUPT_ON_DONE != 0;
        let sequence = le64(head, 8);
        let expected = last_sequence.wrapping_add(1);
        if sequence != expected {
            return Err(fail(KycapProblem::SequenceGap { expected, found: sequence }));
        }
        let queue = le32(head, 16);
        check_shape(event, queue, interrupt_on_done, primary_dw, secondary_dw).map_err(fail)?;
        let (primary, secondary) = payload.split_at((primary_dw as usize * 4).min(payload.len()));
        events.push(KycapEvent {
            index,
            offset: pos as u64,
            sequence,
            event,
            queue,
            interrupt_on_done,
            primary,
            secondary,
        });
        last_sequence = sequence;
        total_dwords = total;
        pos += record.len();
    }
}

/// XXH3-64 of a record header (hash field taken as zero) and its payload.
fn record_hash(head: &[u8], payload: &[u8]) -> u64 {
    let mut zeroed = le_bytes::<{ kycap::RECORD_HEADER_LEN }>(head, 0);
    zeroed[kycap::RECORD_HASH_OFFSET..].fill(0);
    let mut hasher = Xxh3Default::new();
    hasher.update(&zeroed);
    hasher.update(payload);
    hasher.digest()
}

/// Which queue, flags and dword counts each event type allows.
fn check_shape(
    event: KycapEventType,
    queue: u32,
    interrupt_on_done: bool,
    primary_dw: u32,
    secondary_dw: u32,
) -> Result<(), KycapProblem> {
    match event {
        KycapEventType::GraphicsSubmit | KycapEventType::ComputeSubmit => {
            let queue_ok = match event {
                KycapEventType::GraphicsSubmit => queue == kycap::GRAPHICS_QUEUE,
                _ => queue != kycap::GRAPHICS_QUEUE && kycap_queue(queue).is_some(),
            };
            if !queue_ok {
                return Err(KycapProblem::BadQueue { event, queue });
            }
            if primary_dw == 0 {
                return Err(KycapProblem::EmptySubmit { event });
            }
            if event == KycapEventType::ComputeSubmit && secondary_dw != 0 {
                return Err(KycapProblem::SecondaryOnCompute { secondary_dw });
            }
        }
        KycapEventType::FlipPreparation | KycapEventType::SuspendRequest => {
            if queue != kycap::NO_QUEUE {
                return Err(KycapProblem::BadQueue { event, queue });
            }
            if interrupt_on_done {
                return Err(KycapProblem::MarkerInterrupt { event });
            }
            if primary_dw != 0 || secondary_dw != 0 {
                return Err(KycapProblem::MarkerPayload { event, primary_dw, secondary_dw });
            }
        }
    }
    Ok(())
}

fn check_footer(footer: &[u8], pos: usize, events: u64, dwords: u64) -> Result<(), ImportError> {
    use kycap::*;
    let fail = |problem| kycap_error(pos, None, problem);
    let magic = le_bytes::<8>(footer, 0);
    if magic != FOOTER_MAGIC {
        return Err(fail(KycapProblem::BadFooterMagic { found: magic }));
    }
    let mut zeroed = le_bytes::<{ FOOTER_LEN }>(footer, 0);
    zeroed[FOOTER_HASH_OFFSET..].fill(0);
    let stored = le64(footer, FOOTER_HASH_OFFSET);
    let computed = xxh3_64(&zeroed);
    if stored != computed {
        return Err(fail(KycapProblem::BadFooterHash { stored, computed }));
    }
    let stored_events = le64(footer, 8);
    if stored_events != events {
        return Err(fail(KycapProblem::FooterEventCount { stored: stored_events, counted: events }));
    }
    let stored_dwords = le64(footer, 16);
    if stored_dwords != dwords {
        return Err(fail(KycapProblem::FooterDwordCount { stored: stored_dwords, counted: dwords }));
    }
    Ok(())
}

/// Places regions one after another from a base, each after the first at
/// a [`REGION_ALIGN`] boundary.
struct Placer {
    next: u64,
}

impl Placer {
    fn place(&mut self, len: u64) -> Result<u64, KycapProblem> {
        let address = self.next;
        let end = address.checked_add(len).filter(|_| region_fits(address, len));
        let Some(end) = end else {
            return Err(KycapProblem::AddressSpaceExhausted { address, len });
        };
        self.next = end.checked_next_multiple_of(REGION_ALIGN).unwrap_or(u64::MAX);
        Ok(address)
    }
}

/// Imports a KYCAP 2.0 capture (checked as [`parse_kycap`] does).
///
/// The trace holds, after `INFO`, a `note` saying what such a trace lacks,
/// then for each record in file order:
///
/// * a graphics or compute submission: a `MEM ` region with its primary
///   dwords (DCB or ACB), then, when it has secondary dwords (the constant
///   engine's CCB), a second `MEM ` region with those, then a `SUBM` of the
///   primary dwords to [`kycap_queue`] of its queue id, then, when it asked
///   for an interrupt or had a CCB, a `note` naming its sequence number and
///   those. A CCB is mapped but not submitted: the trace format has no
///   constant-engine submission, and a replay runs CE buffers only when an
///   `INDIRECT_BUFFER_CONST` packet points at them;
/// * a flip preparation or suspend request marker: a `note`
///   (`KYCAP event N: flip preparation` / `suspend request`).
///
/// Regions are placed from [`ImportOptions::base_address`] on, one after
/// the other, each after the first at the next 256-byte boundary, so they
/// never overlap.
pub fn import_kycap(bytes: &[u8], options: &ImportOptions) -> Result<Vec<u8>, ImportError> {
    let capture = parse_kycap(bytes, &options.kycap_limits)?;
    if !region_fits(options.base_address, 0) {
        return Err(ImportError::BadAddress { address: options.base_address, len: 0 });
    }
    let submissions = capture.events.iter().filter(|e| !e.event.is_marker()).count();
    let what = format!(
        "{} ({}), {}",
        crate::counted(capture.events.len() as u64, "event", "events"),
        crate::counted(submissions as u64, "submission", "submissions"),
        crate::counted(capture.total_dwords, "dword", "dwords")
    );
    let version = format!("{}.{}", capture.major, capture.minor);
    let description = match options.source_text() {
        Some(source) => format!("KYCAP {version} capture {source}: {what}"),
        None => format!("KYCAP {version} capture: {what}"),
    };
    let mut w = options.writer(&description)?;
    w.note(&format!(
        "KYCAP captures hold command buffers only: memory their packets address (indirect buffers, labels, \
         shaders) was not captured, so a replay reports reads of it as unmapped. Command buffers are placed \
         from {:#x} on.",
        options.base_address
    ))?;
    let mut placer = Placer { next: options.base_address };
    for e in &capture.events {
        let place = |placer: &mut Placer, data: &[u8]| {
            placer.place(data.len() as u64).map_err(|problem| ImportError::Kycap {
                offset: e.offset,
                record: Some(e.index),
                problem,
            })
        };
        match e.event {
            KycapEventType::FlipPreparation | KycapEventType::SuspendRequest => {
                w.note(&format!("KYCAP event {}: {}", e.sequence, e.event))?;
            }
            KycapEventType::GraphicsSubmit | KycapEventType::ComputeSubmit => {
                // check_shape allowed only mappable queue ids.
                let queue = kycap_queue(e.queue).unwrap_or(0);
                let address = place(&mut placer, e.primary)?;
                w.mem(address, e.primary)?;
                let ccb = if e.secondary.is_empty() {
                    None
                } else {
                    let ccb_address = place(&mut placer, e.secondary)?;
                    w.mem(ccb_address, e.secondary)?;
                    Some(ccb_address)
                };
                w.submit(queue, address, (e.primary.len() / 4) as u32)?;
                let mut parts = Vec::new();
                if e.interrupt_on_done {
                    parts.push("interrupt on done".to_owned());
                }
                if let Some(ccb_address) = ccb {
                    parts.push(format!(
                        "constant engine buffer (CCB) of {} dwords at {ccb_address:#x}, mapped but not submitted",
                        e.secondary.len() / 4
                    ));
                }
                if !parts.is_empty() {
                    w.note(&format!("KYCAP event {}: {}", e.sequence, parts.join("; ")))?;
                }
            }
        }
    }
    Ok(w.finish())
}
