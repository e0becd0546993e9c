//! Resource limits: what any input may cost.
//!
//! A trace of a few hundred bytes can ask for unbounded work (an indirect
//! buffer that chains to itself on every queue), unbounded guest memory
//! (DMA fills of 64 MiB, over and over), unbounded output (an event per
//! packet of such a loop) or an unbounded read (`/dev/zero`). Every such cost
//! is bounded here, with defaults that let any real capture through and stop
//! a hostile one within seconds:
//!
//! | limit | default | bounds | `pm4` option |
//! |---|---|---|---|
//! | [`Limits::max_packets`] | 2^26 | packets all queues run over a whole replay (every submission; each draw of a multi-draw packet counts one more) | `--max-packets` |
//! | [`Limits::max_dwords`] | 2^30 | command dwords all queues read over a whole replay (register runs cost per dword) | `--max-dwords` |
//! | [`Limits::max_write_bytes`] | 2 GiB | bytes packets and host writes write to guest memory over a whole replay (fills and copies cost per byte; checked at the write, [`SparseMemory::set_write_budget`](crate::memory::SparseMemory::set_write_budget)) | `--max-write-bytes` |
//! | [`Limits::max_written_memory`] | 1 GiB | guest memory a replay copies because it was written (4 KiB pages, [`SparseMemory::set_written_limit`](crate::memory::SparseMemory::set_written_limit)) | `--max-memory` |
//! | [`Limits::max_events`] | 2^20 | records of the event log and of the timeline (packets; its wait spans too), each, then one "truncated at N events" record; entries of the summary's `skipped_ibs`; lines a [`RecordingBackend`](crate::backend::RecordingBackend) holds ([`RecordingBackend::with_limits`](crate::backend::RecordingBackend::with_limits)) | `--max-events` |
//! | [`Limits::max_programs`] | 65 536 | distinct program addresses a replay keeps ([`ReplayOutcome::programs`](crate::replay::ReplayOutcome::programs)); more are counted | `--max-programs` |
//! | [`Limits::max_file_bytes`] | 4 GiB | size of any input file (only regular files are read) | `--max-file-size` |
//! | [`DisasmOptions::max_packets`](crate::disasm::DisasmOptions::max_packets) | 2^20, or the input's dwords if more | packets the static walk of `pm4 disasm` visits, over all submissions | `pm4 disasm --max-packets` |
//!
//! The packet and dword limits are checked by the replay between scheduler
//! slices, so a replay stops within a few slices past the limit with
//! [`LimitExceeded`], which names the limit, its library field and its
//! option. The memory limits are checked at the write that would pass them:
//! the write is refused with
//! [`MemoryError::WrittenLimit`](crate::memory::MemoryError::WrittenLimit) or
//! [`MemoryError::WriteBudget`](crate::memory::MemoryError::WriteBudget)
//! (a single DMA packet may fill 64 MiB), named with the limit's option.
//! The defaults are sized so that no input replays for more than about ten
//! seconds on a laptop (measured on hostile loops: about 70 ns a packet,
//! under 1 ns a register dword, 0.5 GB/s of fills); a capture that needs more
//! raises them.
//!
//! ```
//! use pm4core::limits::Limits;
//!
//! // An emulator's replay tool that accepts longer captures:
//! let limits = Limits { max_packets: 1 << 30, ..Limits::default() };
//! assert_eq!(limits.max_written_memory, 1 << 30);
//! ```

use std::fmt;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

/// Limits on what a replay (and the commands built on it) may cost; see the
/// [module documentation](self) for the table of defaults and options.
///
/// ```
/// use pm4core::limits::Limits;
/// use pm4core::replay::{replay, ReplayOptions};
/// use pm4core::trace::TraceWriter;
///
/// let mut writer = TraceWriter::new();
/// writer.zero(0x1000, 0x1000)?;
/// let trace = writer.finish_trace()?;
/// let options = ReplayOptions { limits: Limits { max_packets: 1_000, ..Limits::default() }, ..Default::default() };
/// assert!(replay(&trace, &options).succeeded());
/// # Ok::<(), pm4core::trace::TraceError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Packets all queues together may run over a whole replay, every
    /// submission included; each draw or dispatch a multi-draw packet makes
    /// counts as one more.
    pub max_packets: u64,
    /// Command dwords all queues together may read over a whole replay.
    pub max_dwords: u64,
    /// Bytes packets and host writes may write to guest memory over a whole
    /// replay (a byte written twice counts twice).
    pub max_write_bytes: u64,
    /// Bytes of guest memory pages a replay may copy because they were
    /// written (whole 4 KiB pages).
    pub max_written_memory: u64,
    /// Records the event log may hold, and the timeline: after that many,
    /// one final "truncated at N events" record.
    pub max_events: u64,
    /// Distinct program addresses kept in the replay's program map; further
    /// addresses are counted, not kept.
    pub max_programs: usize,
    /// Largest input file read ([`read_file`]).
    pub max_file_bytes: u64,
}

impl Limits {
    /// No limit at all (tests and trusted inputs only).
    pub const UNLIMITED: Limits = Limits {
        max_packets: u64::MAX,
        max_dwords: u64::MAX,
        max_write_bytes: u64::MAX,
        max_written_memory: u64::MAX,
        max_events: u64::MAX,
        max_programs: usize::MAX,
        max_file_bytes: u64::MAX,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_packets: 1 << 26,
            max_dwords: 1 << 30,
            max_write_bytes: 2 << 30,
            max_written_memory: 1 << 30,
            max_events: 1 << 20,
            max_programs: 1 << 16,
            max_file_bytes: 4 << 30,
        }
    }
}

/// Which limit a run met.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// [`Limits::max_packets`].
    Packets,
    /// [`Limits::max_dwords`].
    Dwords,
    /// [`Limits::max_write_bytes`].
    WriteBytes,
    /// [`Limits::max_written_memory`].
    WrittenMemory,
    /// [`Limits::max_file_bytes`].
    FileBytes,
    /// The static walk's [`DisasmOptions::max_packets`](crate::disasm::DisasmOptions::max_packets).
    WalkPackets,
    /// [`Limits::max_events`]: records of an event log (a log that reaches
    /// it is truncated, not stopped: [`RecordingBackend::truncated`](crate::backend::RecordingBackend::truncated)).
    Events,
}

impl Limit {
    /// The library field that sets it.
    pub fn field(self) -> &'static str {
        match self {
            Limit::Packets => "Limits::max_packets",
            Limit::Dwords => "Limits::max_dwords",
            Limit::WriteBytes => "Limits::max_write_bytes",
            Limit::WrittenMemory => "Limits::max_written_memory",
            Limit::FileBytes => "Limits::max_file_bytes",
            Limit::WalkPackets => "DisasmOptions::max_packets",
            Limit::Events => "Limits::max_events",
        }
    }

    /// The `pm4` option that raises it.
    pub fn option(self) -> &'static str {
        match self {
            Limit::Packets | Limit::WalkPackets => "--max-packets",
            Limit::Dwords => "--max-dwords",
            Limit::WriteBytes => "--max-write-bytes",
            Limit::WrittenMemory => "--max-memory",
            Limit::FileBytes => "--max-file-size",
            Limit::Events => "--max-events",
        }
    }

    /// What it counts, for messages.
    fn what(self) -> &'static str {
        match self {
            Limit::Packets => "packets run over all queues and submissions",
            Limit::Dwords => "command dwords read over all queues and submissions",
            Limit::WriteBytes => "bytes written to guest memory",
            Limit::WrittenMemory => "bytes of written guest memory pages",
            Limit::FileBytes => "bytes in an input file",
            Limit::WalkPackets => "packets visited by the static walk",
            Limit::Events => "records of an event log",
        }
    }
}

/// A run stopped because it reached a limit.
///
/// ```
/// use pm4core::limits::{Limit, LimitExceeded};
///
/// let e = LimitExceeded { limit: Limit::Packets, value: 1 << 26 };
/// assert_eq!(
///     e.to_string(),
///     "limit reached: more than 67108864 packets run over all queues and submissions \
///      (Limits::max_packets; raise it with --max-packets)"
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub struct LimitExceeded {
    pub limit: Limit,
    /// The limit's value.
    pub value: u64,
}

impl fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "limit reached: more than {} {} ({}; raise it with {})",
            self.value,
            self.limit.what(),
            self.limit.field(),
            self.limit.option()
        )
    }
}

/// An input file that was not read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// Not a regular file (a device, a pipe, a directory): its size is not
    /// known, and reading it may never end.
    #[error("{path}: not a regular file ({kind}); only regular files are read")]
    NotRegular { path: String, kind: &'static str },
    /// Larger than [`Limits::max_file_bytes`].
    #[error("{path}: {size} bytes is more than the input file limit of {limit} bytes (Limits::max_file_bytes; raise it with --max-file-size)")]
    TooLarge { path: String, size: u64, limit: u64 },
    /// The file changed size while it was read.
    #[error("{path}: the file changed size while it was read")]
    Changed { path: String },
    /// Opening or reading failed.
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

fn file_kind(kind: std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        "a directory"
    } else {
        "a device, pipe or socket"
    }
}

/// Reads a whole regular file of at most `max_bytes` bytes into one shared
/// buffer, allocated once at the file's size: the bytes are never copied
/// again (a trace maps its regions straight from them), so a replay's peak
/// memory is the file plus what the stream writes.
///
/// ```
/// use pm4core::limits::{read_file, InputError};
///
/// let path = std::env::temp_dir().join(format!("pm4-limits-doc-{}", std::process::id()));
/// std::fs::write(&path, b"PM4T")?;
/// assert_eq!(&read_file(&path, 16).unwrap()[..], b"PM4T");
/// assert!(matches!(read_file(&path, 3), Err(InputError::TooLarge { size: 4, limit: 3, .. })));
/// assert!(matches!(read_file(&std::env::temp_dir(), 16), Err(InputError::NotRegular { .. })));
/// std::fs::remove_file(&path)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn read_file(path: &Path, max_bytes: u64) -> Result<Arc<[u8]>, InputError> {
    let name = || path.display().to_string();
    let io = |source| InputError::Io { path: name(), source };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let metadata = file.metadata().map_err(io)?;
    if !metadata.is_file() {
        return Err(InputError::NotRegular { path: name(), kind: file_kind(metadata.file_type()) });
    }
    let size = metadata.len();
    if size > max_bytes {
        return Err(InputError::TooLarge { path: name(), size, limit: max_bytes });
    }
    let len = usize::try_from(size).map_err(|_| InputError::TooLarge { path: name(), size, limit: max_bytes })?;
    // `repeat_n` has an exact length, so the shared slice is allocated once,
    // at its final size, and filled in place.
    let mut bytes: Arc<[u8]> = std::iter::repeat_n(0u8, len).collect();
    let Some(buffer) = Arc::get_mut(&mut bytes) else {
        return Err(InputError::Changed { path: name() });
    };
    file.read_exact(buffer).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => InputError::Changed { path: name() },
        _ => io(e),
    })?;
    let mut probe = [0u8; 1];
    match file.read(&mut probe) {
        Ok(0) => Ok(bytes),
        Ok(_) => Err(InputError::Changed { path: name() }),
        Err(e) => Err(io(e)),
    }
}

/// Where a bounded collector's records go.
#[cfg(feature = "replay")]
pub(crate) enum RecordOut {
    /// Kept as lines (the event log of [`crate::replay::ReplayOutcome::log`]).
    Lines(Vec<String>),
    /// Kept as text (the timeline of [`crate::replay::ReplayOutcome::timeline`]).
    Text(String),
    /// Written as they come.
    Stream(std::io::BufWriter<Box<dyn std::io::Write + Send>>),
}

/// A collector that takes at most `max` records, then one final
/// "truncated" record, and nothing after it; records go to memory or
/// straight to a writer (the first write error is kept and ends the output).
#[cfg(feature = "replay")]
pub(crate) struct Records {
    out: RecordOut,
    count: u64,
    max: u64,
    full: bool,
    error: Option<std::io::Error>,
}

#[cfg(feature = "replay")]
impl Records {
    pub(crate) fn new(out: RecordOut, max: u64) -> Self {
        Records { out, count: 0, max, full: false, error: None }
    }

    /// True while records are taken (callers skip formatting otherwise).
    pub(crate) fn accepts(&self) -> bool {
        !self.full && self.error.is_none()
    }

    /// Records taken so far.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// True once the limit was reached.
    pub(crate) fn truncated(&self) -> bool {
        self.full
    }

    /// Writes `text` as it is (framing outside the count).
    pub(crate) fn raw(&mut self, text: &str) {
        if self.error.is_some() {
            return;
        }
        let result = match &mut self.out {
            RecordOut::Lines(lines) => {
                lines.push(text.to_string());
                Ok(())
            }
            RecordOut::Text(s) => {
                s.push_str(text);
                Ok(())
            }
            RecordOut::Stream(w) => std::io::Write::write_all(w, text.as_bytes()),
        };
        if let Err(e) = result {
            self.error = Some(e);
        }
    }

    /// Takes one record, or, at the limit, writes `truncated(max)` once
    /// instead and refuses every later record. Returns whether it was taken.
    pub(crate) fn record(&mut self, text: &str, truncated: impl FnOnce(u64) -> String) -> bool {
        if !self.take(truncated) {
            return false;
        }
        self.raw(text);
        true
    }

    /// [`record`](Self::record) for a line without its newline: kept as it
    /// is in memory, written with a newline to a stream.
    pub(crate) fn record_line(&mut self, line: String, truncated: impl FnOnce(u64) -> String) -> bool {
        let in_lines = matches!(self.out, RecordOut::Lines(_));
        if !self.take(|n| {
            let mut last = truncated(n);
            if !in_lines {
                last.push('\n');
            }
            last
        }) {
            return false;
        }
        let result = match &mut self.out {
            RecordOut::Lines(lines) => {
                lines.push(line);
                Ok(())
            }
            RecordOut::Text(s) => {
                s.push_str(&line);
                s.push('\n');
                Ok(())
            }
            RecordOut::Stream(w) => {
                std::io::Write::write_all(w, line.as_bytes()).and_then(|()| std::io::Write::write_all(w, b"\n"))
            }
        };
        if let Err(e) = result {
            self.error = Some(e);
        }
        true
    }

    /// Counts one more record if the limit allows; at the limit writes the
    /// final record (once) and refuses.
    fn take(&mut self, truncated: impl FnOnce(u64) -> String) -> bool {
        if !self.accepts() {
            return false;
        }
        if self.count >= self.max {
            self.full = true;
            let last = truncated(self.max);
            self.raw(&last);
            return false;
        }
        self.count += 1;
        true
    }

    /// Flushes a stream and hands back what was kept in memory, with the
    /// first write error.
    pub(crate) fn finish(self) -> (RecordOut, Option<std::io::Error>) {
        let mut out = self.out;
        let mut error = self.error;
        if let RecordOut::Stream(w) = &mut out {
            if error.is_none() {
                error = std::io::Write::flush(w).err();
            }
        }
        (out, error)
    }
}
