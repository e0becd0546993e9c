//! Turning what other tools write into pm4core traces
//! (`docs/trace-format.md`), for `pm4 import`.
//!
//! Two inputs are understood:
//!
//! * **Raw dwords** ([`import_raw`]): a file of little-endian command
//!   dwords and nothing else, as emulators' PM4 dump options write and
//!   drivers' IB parsers read. It becomes one `MEM ` region at a given
//!   address and one `SUBM` of all its dwords on a given queue.
//! * **KYCAP** ([`import_kycap`]): the KYCAP command-only capture format,
//!   version 2.0 (layout in [`kycap`]). Every graphics and
//!   compute submission becomes `MEM ` regions and a `SUBM`; flip and
//!   suspend markers become `note` chunks.
//!
//! Neither input holds the memory its packets point at (indirect buffers,
//! labels, shader code), so an imported trace declares only the command
//! buffers themselves: a replay reports a read of anything else as an
//! unmapped address, which is the honest answer.
//!
//! # Where imported buffers go
//!
//! Imported command buffers are placed from [`IMPORT_BASE`]
//! (`0xfff0_0000_0000`, the last 64 GiB of the 48-bit GPU address space) on.
//! The place is chosen so that it is unlikely to be an address the imported
//! stream itself refers to: PS5 guest memory lies in the lower half of the
//! 48-bit space (x86-64 user addresses), and the Linux drivers for these
//! GPUs hand out upper-half addresses from its bottom (`0x8000_0000_0000`)
//! up. Had the
//! buffers been put where a stream's own pointers lead, a replay would read
//! command dwords where it should report an unmapped address. A raw import
//! takes its address from the caller ([`DEFAULT_RAW_ADDRESS`] when the
//! caller has none); pass the buffer's original address to let its own
//! chained or nested indirect buffers resolve.
//!
//! # Guarantees
//!
//! The importers never panic on any input, never allocate on behalf of a
//! count or size field (every buffer they make is in proportion to the
//! bytes actually present), and only ever produce traces that
//! [`Trace::parse`](crate::trace::Trace::parse) accepts.
//!
//! ```
//! use pm4core::import::{detect, import_raw, ImportFormat, ImportOptions, DEFAULT_RAW_ADDRESS};
//! use pm4core::trace::Trace;
//!
//! let nops = [0xffff_1000u32; 4].iter().flat_map(|d| d.to_le_bytes()).collect::<Vec<u8>>();
//! assert_eq!(detect(&nops), ImportFormat::Raw);
//! let trace = Trace::from_bytes(import_raw(&nops, DEFAULT_RAW_ADDRESS, 0, &ImportOptions::default())?)?;
//! assert_eq!(trace.submissions().collect::<Vec<_>>(), [(0, DEFAULT_RAW_ADDRESS, 4)]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;

use xxhash_rust::xxh3::{xxh3_64, Xxh3Default};

use crate::memory::ADDRESS_SPACE_END;
use crate::trace::format::{ADDRESS_ALIGN, MAGIC as TRACE_MAGIC, MAX_QUEUE};
use crate::trace::{TraceError, TraceWriter};

/// Where imported command buffers are placed by default: the last 64 GiB
/// of the 48-bit address space (see the module documentation for why).
pub const IMPORT_BASE: u64 = 0xfff0_0000_0000;

/// The address a raw import uses when the caller gives none.
pub const DEFAULT_RAW_ADDRESS: u64 = IMPORT_BASE;

/// The queue a raw import uses when the caller gives none: the graphics
/// queue.
pub const DEFAULT_RAW_QUEUE: u32 = 0;

/// Alignment of every region a KYCAP import places after the first.
pub const REGION_ALIGN: u64 = 256;

/// The `gpu` an import writes into `INFO` by default.
pub const DEFAULT_GPU: &str = "gfx10.3";

/// The `producer` an import writes into `INFO`.
pub const PRODUCER: &str = "pm4core import";

/// What a file is, by its first bytes ([`detect`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImportFormat {
    /// No magic, a non-zero multiple of 4 bytes: taken for raw dwords.
    Raw,
    /// A KYCAP capture (magic `KYCAP\r\n\x1a`).
    Kycap,
    /// Already a pm4core trace (magic `PM4TRACE`).
    Trace,
    /// None of these.
    Unknown,
}

impl fmt::Display for ImportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ImportFormat::Raw => "raw dwords",
            ImportFormat::Kycap => "KYCAP capture",
            ImportFormat::Trace => "pm4core trace",
            ImportFormat::Unknown => "unknown",
        })
    }
}

/// Tells what `bytes` are by their magic. A file with neither magic is
/// taken for raw dwords when its length is a non-zero multiple of 4 (raw
/// dwords have no magic, so this is a guess), and is unknown otherwise.
pub fn detect(bytes: &[u8]) -> ImportFormat {
    if bytes.starts_with(&kycap::MAGIC) {
        ImportFormat::Kycap
    } else if bytes.starts_with(&TRACE_MAGIC) {
        ImportFormat::Trace
    } else if !bytes.is_empty() && bytes.len() % 4 == 0 {
        ImportFormat::Raw
    } else {
        ImportFormat::Unknown
    }
}

/// Limits a KYCAP import enforces on top of the format's own rules. The
/// defaults are those the format's own loader applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KycapLimits {
    /// Most events (records) a capture may hold.
    pub max_events: u64,
    /// Most command dwords (primary and secondary, all records) a capture
    /// may hold.
    pub max_dwords: u64,
}

impl Default for KycapLimits {
    fn default() -> Self {
        KycapLimits { max_events: kycap::DEFAULT_MAX_EVENTS, max_dwords: kycap::DEFAULT_MAX_DWORDS }
    }
}

/// How to import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportOptions {
    /// `gpu` written into `INFO` (default [`DEFAULT_GPU`]).
    pub gpu: String,
    /// Name of the file imported, for the `INFO` description (line breaks
    /// are replaced by spaces).
    pub source: Option<String>,
    /// Where a KYCAP import places its first command buffer (default
    /// [`IMPORT_BASE`]; must be 4-byte aligned). Raw imports take their
    /// address as an argument instead.
    pub base_address: u64,
    /// Limits on KYCAP captures.
    pub kycap_limits: KycapLimits,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            gpu: DEFAULT_GPU.to_owned(),
            source: None,
            base_address: IMPORT_BASE,
            kycap_limits: KycapLimits::default(),
        }
    }
}

impl ImportOptions {
    /// The defaults, naming the source file.
    pub fn with_source(source: impl Into<String>) -> Self {
        ImportOptions { source: Some(source.into()), ..ImportOptions::default() }
    }

    fn source_text(&self) -> Option<String> {
        self.source.as_deref().map(|s| s.replace(['\n', '\r'], " "))
    }

    fn writer(&self, description: &str) -> Result<TraceWriter, ImportError> {
        let mut w = TraceWriter::new();
        w.info("gpu", &self.gpu)?;
        w.info("producer", PRODUCER)?;
        w.info("description", description)?;
        Ok(w)
    }
}

/// An input that could not be imported: what was wrong and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// A raw dword file whose length is not a multiple of 4.
    #[error("raw dword file of {len} bytes: the length is not a multiple of 4")]
    RawLength { len: u64 },
    /// A raw dword file with no bytes.
    #[error("raw dword file is empty")]
    RawEmpty,
    /// A raw dword file holding more dwords than one submission can.
    #[error("raw dword file of {len} bytes holds more than 0xffffffff dwords")]
    RawTooLarge { len: u64 },
    /// A queue the trace format does not have (0 = graphics, 1..=56 =
    /// compute).
    #[error("queue {queue} does not exist (0 = graphics, 1..=56 = compute)")]
    QueueOutOfRange { queue: u32 },
    /// An address not 4-byte aligned, or a region of `len` bytes there
    /// that does not end inside the 48-bit address space.
    #[error("cannot place {len} bytes at {address:#x}: not 4-byte aligned or past the 48-bit address space")]
    BadAddress { address: u64, len: u64 },
    /// A KYCAP capture that breaks a rule of its format. `offset` is the
    /// byte offset of what is at fault: the header field, the record's
    /// first byte, or the footer's first byte. `record` is the index of the
    /// record at fault (0 is the first after the header).
    #[error("KYCAP capture, byte {offset:#x}{}: {problem}", record_text(.record))]
    Kycap { offset: u64, record: Option<u64>, problem: KycapProblem },
    /// The trace could not be written (an `INFO` value with a line break,
    /// for one).
    #[error("writing the trace: {0}")]
    Trace(#[from] TraceError),
}

fn record_text(record: &Option<u64>) -> String {
    record.map(|r| format!(" (record {r})")).unwrap_or_default()
}

mod capture;

pub use capture::*;

/// True when `len` bytes at `address` make a valid region: 4-byte aligned
/// and ending inside the 48-bit space.
fn region_fits(address: u64, len: u64) -> bool {
    address % ADDRESS_ALIGN == 0 && address.checked_add(len).is_some_and(|end| end <= ADDRESS_SPACE_END)
}

/// Imports a raw little-endian dword file: one `MEM ` region holding the
/// file's bytes at `address` and one `SUBM` of all its dwords to `queue`
/// (0 = graphics, 1..=56 = compute `1 + pipe * 8 + queue`), after an
/// `INFO` with `gpu`, `producer` and a description naming the source.
/// [`DEFAULT_RAW_ADDRESS`] and [`DEFAULT_RAW_QUEUE`] are the defaults for
/// callers with no address or queue of their own.
pub fn import_raw(bytes: &[u8], address: u64, queue: u32, options: &ImportOptions) -> Result<Vec<u8>, ImportError> {
    let len = bytes.len() as u64;
    if len % 4 != 0 {
        return Err(ImportError::RawLength { len });
    }
    if len == 0 {
        return Err(ImportError::RawEmpty);
    }
    let Ok(size_dw) = u32::try_from(len / 4) else {
        return Err(ImportError::RawTooLarge { len });
    };
    if queue > MAX_QUEUE {
        return Err(ImportError::QueueOutOfRange { queue });
    }
    if !region_fits(address, len) {
        return Err(ImportError::BadAddress { address, len });
    }
    let what = format!("{} at {address:#x} on queue {queue}", crate::counted(u64::from(size_dw), "dword", "dwords"));
    let description = match options.source_text() {
        Some(source) => format!("raw dwords from {source}: {what}"),
        None => format!("raw dwords: {what}"),
    };
    let mut w = options.writer(&description)?;
    w.mem(address, bytes)?;
    w.submit(queue, address, size_dw)?;
    Ok(w.finish())
}
