//! Reading a trace: [`Trace::parse`] checks every rule of the format once,
//! up front, and keeps the file's bytes so that `MEM ` regions are mapped
//! straight from them.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use super::error::{TraceError, TraceRule};
use super::event::{ChunkSummary, PayloadRange, TraceEvent};
use super::format::{
    chunk_crc, pad_len, Tag, CHUNK_HEAD_LEN, CHUNK_OVERHEAD, FLAGS_OFFSET, HEADER_LEN, HEADER_RESERVED_OFFSET,
    KNOWN_FLAGS, MAGIC, VERSION, VERSION_OFFSET,
};
use super::rules::{Decoded, Sequence};
use crate::memory::{GuestMemory, MemoryError, SparseMemory};
use crate::regs::db::GpuFamily;

/// `N` bytes of `data` at `at`, if they are there.
fn bytes_at<const N: usize>(data: &[u8], at: u64) -> Option<[u8; N]> {
    let start = usize::try_from(at).ok()?;
    let end = start.checked_add(N)?;
    data.get(start..end).and_then(|b| <[u8; N]>::try_from(b).ok())
}

/// `len` bytes of `data` at `at`, if they are there.
fn slice_at(data: &[u8], at: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(at).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    data.get(start..end)
}

/// A trace file, checked against every rule of the format.
///
/// It holds the file's bytes; events refer to payload bytes by
/// [`PayloadRange`], so neither parsing nor mapping copies region data.
#[derive(Clone)]
pub struct Trace {
    bytes: Arc<[u8]>,
    info: Vec<(String, String)>,
    events: Vec<TraceEvent>,
    chunks: Vec<ChunkSummary>,
}

impl fmt::Debug for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trace")
            .field("len", &self.bytes.len())
            .field("info", &self.info)
            .field("chunks", &self.chunks.len())
            .field("events", &self.events.len())
            .finish()
    }
}

impl Trace {
    /// Parses and checks a whole trace. Never panics; allocates in
    /// proportion to the number of chunks and the `INFO`/`note` text only,
    /// never on behalf of a length field.
    pub fn parse(bytes: Arc<[u8]>) -> Result<Trace, TraceError> {
        let data: &[u8] = &bytes;
        check_header(data)?;
        let file_len = data.len() as u64;
        let mut sequence = Sequence::new();
        let mut info = Vec::new();
        let mut events = Vec::new();
        let mut chunks = Vec::new();
        let mut offset = HEADER_LEN as u64;
        let mut index: u32 = 0;
        let mut last_good_offset = 0u64;
        loop {
            let err = move |rule| TraceError::new(Some(index), offset, rule);
            let available = file_len.saturating_sub(offset);
            if available == 0 {
                return Err(err(TraceRule::MissingEnd { last_good_offset }));
            }
            let (Some(tag), Some(len)) = (bytes_at::<4>(data, offset), bytes_at::<4>(data, offset + 4)) else {
                return Err(err(TraceRule::Truncated { needed: CHUNK_OVERHEAD as u64, available }));
            };
            let tag = Tag(tag);
            let len = u32::from_le_bytes(len);
            let payload_offset = offset + CHUNK_HEAD_LEN as u64;
            let pad = pad_len(u64::from(len));
            let crc_offset = payload_offset + u64::from(len) + pad;
            let next = crc_offset + 4;
            if next > file_len {
                return Err(err(TraceRule::ChunkPastEnd { len, available }));
            }
            let (Some(payload), Some(pad_bytes), Some(stored)) = (
                slice_at(data, payload_offset, u64::from(len)),
                slice_at(data, payload_offset + u64::from(len), pad),
                bytes_at::<4>(data, crc_offset),
            ) else {
                return Err(err(TraceRule::ChunkPastEnd { len, available }));
            };
            let stored = u32::from_le_bytes(stored);
            let computed = chunk_crc(tag, payload);
            if stored != computed {
                return Err(err(TraceRule::CrcMismatch { stored, computed }));
            }
            if let Some(&value) = pad_bytes.iter().find(|&&b| b != 0) {
                return Err(err(TraceRule::ReservedNonZero { field: "chunk pad byte", value: u64::from(value) }));
            }
            let decoded = sequence.chunk(index, tag, payload, payload_offset).map_err(err)?;
            chunks.push(ChunkSummary { tag, index, offset, payload_len: len, crc: stored });
            match decoded {
                Decoded::Info(entries) => info = entries,
                Decoded::Event(event) => events.push(event),
                Decoded::End => {
                    if next != file_len {
                        return Err(TraceError::new(
                            index.checked_add(1),
                            next,
                            TraceRule::BytesAfterEnd { last_good_offset: offset, extra: file_len - next },
                        ));
                    }
                    break;
                }
            }
            last_good_offset = offset;
            offset = next;
            index = index.checked_add(1).ok_or_else(|| err(TraceRule::TooManyChunks))?;
        }
        Ok(Trace { bytes, info, events, chunks })
    }

    /// Parses a byte vector (see [`Trace::parse`]).
    pub fn from_bytes(bytes: impl Into<Arc<[u8]>>) -> Result<Trace, TraceError> {
        Self::parse(bytes.into())
    }

    /// Reads and parses a trace file (a regular file, read once into the
    /// buffer the trace keeps: see [`crate::limits::read_file`]); I/O errors
    /// become [`TraceRule::Io`].
    pub fn read_file(path: &Path) -> Result<Trace, TraceError> {
        let bytes = crate::limits::read_file(path, u64::MAX).map_err(|e| {
            let error = match e {
                crate::limits::InputError::Io { source, .. } => source,
                other => std::io::Error::other(other.to_string()),
            };
            TraceError::io(&format!("reading {}", path.display()), &error)
        })?;
        Self::parse(bytes)
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &Arc<[u8]> {
        &self.bytes
    }

    /// `INFO` key/value pairs in file order (unknown keys included).
    pub fn info(&self) -> &[(String, String)] {
        &self.info
    }

    /// The first value of an `INFO` key.
    pub fn info_value(&self, key: &str) -> Option<&str> {
        self.info.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The register map the trace targets (`INFO` key `gpu`).
    pub fn gpu(&self) -> Option<&str> {
        self.info_value("gpu")
    }

    /// The GPU family `INFO gpu=` names (`gfx10.3`, `gfx103`, `gfx7`);
    /// `None` when the key is absent or names no family pm4core knows
    /// (callers then take the default, gfx10.3).
    ///
    /// ```
    /// use pm4core::trace::TraceWriter;
    /// use pm4core::GpuFamily;
    ///
    /// let mut w = TraceWriter::new();
    /// w.info("gpu", "gfx7")?;
    /// assert_eq!(w.finish_trace()?.gpu_family(), Some(GpuFamily::Gfx7));
    /// # Ok::<(), pm4core::trace::TraceError>(())
    /// ```
    pub fn gpu_family(&self) -> Option<GpuFamily> {
        self.gpu().and_then(|g| g.parse().ok())
    }

    /// The sequence of events, in file order (`INFO` and `END ` excluded).
    pub fn events(&self) -> &[TraceEvent] {
        &self.events
    }

    /// Every chunk, `INFO` and `END ` included, in file order.
    pub fn chunks(&self) -> &[ChunkSummary] {
        &self.chunks
    }

    /// The submissions as `(queue, address, size_dw)`, in file order.
    pub fn submissions(&self) -> impl Iterator<Item = (u32, u64, u32)> + '_ {
        self.events.iter().filter_map(|e| match *e {
            TraceEvent::Submit { queue, address, size_dw, .. } => Some((queue, address, size_dw)),
            _ => None,
        })
    }

    /// The bytes of a range of this trace's file (empty if the range is
    /// not one of this file's).
    pub fn bytes_of(&self, range: &PayloadRange) -> &[u8] {
        slice_at(&self.bytes, range.offset(), range.len()).unwrap_or(&[])
    }

    /// Maps a `MEM ` region (sharing the file's bytes, no copy) or a `ZERO`
    /// region (nothing allocated); an empty region or any other event does
    /// nothing.
    pub fn map_region(&self, mem: &SparseMemory, event: &TraceEvent) -> Result<(), MemoryError> {
        if event.region().is_some_and(|(_, len)| len == 0) {
            return Ok(());
        }
        match *event {
            TraceEvent::MemRegion { address, data, .. } => {
                let out_of_range = MemoryError::OutOfRange { address, len: data.len() };
                let offset = usize::try_from(data.offset()).map_err(|_| out_of_range)?;
                let len = usize::try_from(data.len()).map_err(|_| out_of_range)?;
                mem.map_shared(address, Arc::clone(&self.bytes), offset, len)
            }
            TraceEvent::ZeroRegion { address, len, .. } => mem.map_zeroed(address, len),
            _ => Ok(()),
        }
    }

    /// Applies a `WRIT` host write; any other event does nothing.
    pub fn apply_host_write<M: GuestMemory + ?Sized>(
        &self,
        mem: &mut M,
        event: &TraceEvent,
    ) -> Result<(), MemoryError> {
        match event {
            TraceEvent::HostWrite { address, data, .. } => mem.write_bytes(*address, self.bytes_of(data)),
            _ => Ok(()),
        }
    }

    /// Guest memory with every region of the trace mapped and no host write
    /// applied (for static tools such as a disassembler).
    pub fn build_memory(&self) -> Result<SparseMemory, TraceError> {
        let mem = SparseMemory::new();
        for event in &self.events {
            self.map_region(&mem, event).map_err(|e| self.memory_error(event, e))?;
        }
        Ok(mem)
    }

    /// Guest memory as it is just before event `end` (an index into
    /// [`Trace::events`]): every earlier region mapped and every earlier
    /// host write applied. Shader creations are not applied.
    pub fn memory_before(&self, end: usize) -> Result<SparseMemory, TraceError> {
        let mut mem = SparseMemory::new();
        for event in self.events.iter().take(end) {
            self.map_region(&mem, event).map_err(|e| self.memory_error(event, e))?;
            self.apply_host_write(&mut mem, event).map_err(|e| self.memory_error(event, e))?;
        }
        Ok(mem)
    }

    fn memory_error(&self, event: &TraceEvent, error: MemoryError) -> TraceError {
        let chunk = event.chunk();
        let offset = usize::try_from(chunk).ok().and_then(|i| self.chunks.get(i)).map_or(0, |c| c.offset);
        TraceError::new(Some(chunk), offset, TraceRule::Memory(error))
    }
}

/// Checks the 16-byte header.
fn check_header(data: &[u8]) -> Result<(), TraceError> {
    let header = |offset: usize, rule| TraceError::new(None, offset as u64, rule);
    let magic_len = data.len().min(MAGIC.len());
    if data.get(..magic_len) != MAGIC.get(..magic_len) {
        return Err(header(0, TraceRule::BadMagic));
    }
    let (Some(version), Some(flags), Some(reserved)) = (
        bytes_at::<2>(data, VERSION_OFFSET as u64),
        bytes_at::<2>(data, FLAGS_OFFSET as u64),
        bytes_at::<4>(data, HEADER_RESERVED_OFFSET as u64),
    ) else {
        return Err(header(0, TraceRule::Truncated { needed: HEADER_LEN as u64, available: data.len() as u64 }));
    };
    let version = u16::from_le_bytes(version);
    if version != VERSION {
        return Err(header(VERSION_OFFSET, TraceRule::UnsupportedVersion { version }));
    }
    let flags = u16::from_le_bytes(flags);
    if flags & !KNOWN_FLAGS != 0 {
        return Err(header(FLAGS_OFFSET, TraceRule::UnknownFlags { flags }));
    }
    let reserved = u32::from_le_bytes(reserved);
    if reserved != 0 {
        return Err(header(
            HEADER_RESERVED_OFFSET,
            TraceRule::ReservedNonZero { field: "header reserved field", value: u64::from(reserved) },
        ));
    }
    Ok(())
}
