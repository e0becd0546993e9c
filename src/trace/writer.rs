//! Writing a trace in memory. The writer runs every chunk through the same
//! rules as the reader, so it never produces a trace the reader refuses.

use super::error::{TraceError, TraceRule};
use super::event::TraceEvent;
use super::format::{
    chunk_crc, pad_len, Tag, CHUNK_HEAD_LEN, HEADER_LEN, KNOWN_FLAGS, MAGIC, SHDR_FLAG_RELOCATED, VERSION,
};
use super::reader::Trace;
use super::rules::{Decoded, Sequence};

/// Builds a trace in memory, chunk by chunk.
///
/// Every method checks its chunk against the rules of the format (the ones
/// [`Trace::parse`] enforces) and leaves the trace unchanged when it fails.
/// `INFO` entries may only be added before any other chunk.
#[derive(Debug, Clone)]
pub struct TraceWriter {
    buf: Vec<u8>,
    sequence: Sequence,
    count: u32,
    info: Vec<(String, String)>,
}

impl Default for TraceWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl TraceWriter {
    /// An empty trace (header only).
    pub fn new() -> Self {
        let mut buf = Vec::with_capacity(4096);
        buf.extend_from_slice(&MAGIC);
        buf.extend_from_slice(&VERSION.to_le_bytes());
        buf.extend_from_slice(&KNOWN_FLAGS.to_le_bytes());
        buf.extend_from_slice(&0u32.to_le_bytes());
        TraceWriter { buf, sequence: Sequence::new(), count: 0, info: Vec::new() }
    }

    /// Number of chunks written so far.
    pub fn chunk_count(&self) -> u32 {
        self.count
    }

    /// Bytes written so far (without the `END ` chunk).
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True when nothing but the header is written.
    pub fn is_empty(&self) -> bool {
        self.buf.len() == HEADER_LEN
    }

    fn error(&self, rule: TraceRule) -> TraceError {
        TraceError::new(Some(self.count), self.buf.len() as u64, rule)
    }

    /// Adds an `INFO` entry. The key must be non-empty without `=` or a
    /// line break, the value without a line break; all entries go into one
    /// `INFO` chunk, which must come first.
    pub fn info(&mut self, key: &str, value: &str) -> Result<(), TraceError> {
        let info_chunks = u32::from(!self.info.is_empty());
        if self.count > info_chunks {
            return Err(self.error(TraceRule::InfoNotFirst));
        }
        if key.is_empty() || key.contains(['=', '\n']) || value.contains('\n') {
            return Err(TraceError::new(
                Some(0),
                HEADER_LEN as u64,
                TraceRule::InfoBadLine { line: self.info.len() + 1 },
            ));
        }
        let mut text = String::new();
        for (k, v) in self.info.iter().map(|(k, v)| (k.as_str(), v.as_str())).chain([(key, value)]) {
            text.push_str(k);
            text.push('=');
            text.push_str(v);
            text.push('\n');
        }
        // No other chunk exists yet: rewrite the INFO chunk from scratch.
        let mut fresh = TraceWriter::new();
        fresh.push_chunk(Tag::INFO, &[text.as_bytes()])?;
        self.buf = fresh.buf;
        self.sequence = fresh.sequence;
        self.count = fresh.count;
        self.info.push((key.to_owned(), value.to_owned()));
        Ok(())
    }

    /// Adds a `MEM ` region holding `data` at `address`.
    pub fn mem(&mut self, address: u64, data: &[u8]) -> Result<(), TraceError> {
        self.push_chunk(Tag::MEM, &[&address.to_le_bytes(), data])
    }

    /// Adds a `ZERO` region of `len` bytes at `address`.
    pub fn zero(&mut self, address: u64, len: u64) -> Result<(), TraceError> {
        self.push_chunk(Tag::ZERO, &[&address.to_le_bytes(), &len.to_le_bytes()])
    }

    /// Adds a `WRIT` host write of `data` at `address`.
    pub fn host_write(&mut self, address: u64, data: &[u8]) -> Result<(), TraceError> {
        self.push_chunk(Tag::WRIT, &[&address.to_le_bytes(), data])
    }

    /// Adds a `SUBM` of the `size_dw` dwords at `address` to `queue`.
    pub fn submit(&mut self, queue: u32, address: u64, size_dw: u32) -> Result<(), TraceError> {
        self.push_chunk(
            Tag::SUBM,
            &[
                &queue.to_le_bytes(),
                &0u32.to_le_bytes(),
                &address.to_le_bytes(),
                &size_dw.to_le_bytes(),
                &0u32.to_le_bytes(),
            ],
        )
    }

    /// Adds a `SHDR` shader creation.
    pub fn shader(&mut self, header_address: u64, code_address: u64, relocated: bool) -> Result<(), TraceError> {
        let flags = if relocated { SHDR_FLAG_RELOCATED } else { 0 };
        self.push_chunk(
            Tag::SHDR,
            &[&header_address.to_le_bytes(), &code_address.to_le_bytes(), &flags.to_le_bytes(), &0u32.to_le_bytes()],
        )
    }

    /// Adds a `note` for people.
    pub fn note(&mut self, text: &str) -> Result<(), TraceError> {
        self.push_chunk(Tag::NOTE, &[text.as_bytes()])
    }

    /// Adds an ancillary chunk (the tag must be valid and start with a
    /// lowercase letter).
    pub fn ancillary(&mut self, tag: Tag, payload: &[u8]) -> Result<(), TraceError> {
        if !tag.is_valid() || !tag.is_ancillary() {
            return Err(self.error(TraceRule::InvalidTag { tag }));
        }
        self.push_chunk(tag, &[payload])
    }

    /// Writes `event` as `trace` holds it (its payload from `trace`'s
    /// bytes): copying, cutting or repeating a capture event by event.
    ///
    /// ```
    /// use pm4core::trace::{Trace, TraceEvent, TraceWriter};
    ///
    /// // A capture of one frame: a command buffer and its submission.
    /// let mut one = TraceWriter::new();
    /// one.mem(0x1000, &0xFFFF_1000u32.to_le_bytes()).unwrap(); // a NOP pad
    /// one.submit(0, 0x1000, 1).unwrap();
    /// let one = one.finish_trace().unwrap();
    ///
    /// // The same memory with the frame's submissions three times over.
    /// let mut three = TraceWriter::new();
    /// let is_region = |e: &&TraceEvent| e.region().is_some();
    /// for event in one.events().iter().filter(is_region) {
    ///     three.event(&one, event).unwrap();
    /// }
    /// for _ in 0..3 {
    ///     for event in one.events().iter().filter(|e| e.region().is_none()) {
    ///         three.event(&one, event).unwrap();
    ///     }
    /// }
    /// let three = three.finish_trace().unwrap();
    /// assert_eq!(three.submissions().count(), 3);
    /// ```
    pub fn event(&mut self, trace: &Trace, event: &TraceEvent) -> Result<(), TraceError> {
        match event {
            TraceEvent::MemRegion { address, data, .. } => self.mem(*address, trace.bytes_of(data)),
            TraceEvent::ZeroRegion { address, len, .. } => self.zero(*address, *len),
            TraceEvent::HostWrite { address, data, .. } => self.host_write(*address, trace.bytes_of(data)),
            TraceEvent::Submit { queue, address, size_dw, .. } => self.submit(*queue, *address, *size_dw),
            TraceEvent::Shader { header_address, code_address, relocated, .. } => {
                self.shader(*header_address, *code_address, *relocated)
            }
            TraceEvent::Note { text, .. } => self.note(text),
            TraceEvent::Ancillary { chunk, tag } => {
                let payload = usize::try_from(*chunk)
                    .ok()
                    .and_then(|i| trace.chunks().get(i))
                    .and_then(|c| {
                        let start = usize::try_from(c.offset).ok()?.checked_add(CHUNK_HEAD_LEN)?;
                        trace.bytes().get(start..start.checked_add(c.payload_len as usize)?)
                    })
                    .unwrap_or(&[]);
                self.ancillary(*tag, payload)
            }
        }
    }

    /// Ends the trace with `END ` and returns the file's bytes.
    pub fn finish(mut self) -> Vec<u8> {
        let count = self.count.to_le_bytes();
        self.write_raw(Tag::END, &[&count]);
        self.buf
    }

    /// Ends the trace and parses it back.
    pub fn finish_trace(self) -> Result<Trace, TraceError> {
        Trace::from_bytes(self.finish())
    }

    /// Checks a chunk against the rules, then appends it.
    fn push_chunk(&mut self, tag: Tag, parts: &[&[u8]]) -> Result<(), TraceError> {
        let len = parts.iter().try_fold(0usize, |sum, p| sum.checked_add(p.len()));
        let Some(len) = len.filter(|&len| u32::try_from(len).is_ok()) else {
            return Err(self.error(TraceRule::BadPayloadLength { tag, len: u64::MAX, expected: "at most 0xffffffff" }));
        };
        // One more chunk must still leave room for END's count.
        let Some(next) = self.count.checked_add(1).filter(|&n| n < u32::MAX) else {
            return Err(self.error(TraceRule::TooManyChunks));
        };
        let start = self.buf.len();
        let payload_start = start + CHUNK_HEAD_LEN;
        self.buf.reserve(len + 16);
        self.write_raw(tag, parts);
        let payload = self.buf.get(payload_start..payload_start + len).unwrap_or(&[]);
        match self.sequence.chunk(self.count, tag, payload, payload_start as u64) {
            Ok(Decoded::Info(_) | Decoded::Event(_)) => {
                self.count = next;
                Ok(())
            }
            Ok(Decoded::End) => {
                self.buf.truncate(start);
                Err(self.error(TraceRule::InvalidTag { tag }))
            }
            Err(rule) => {
                self.buf.truncate(start);
                Err(self.error(rule))
            }
        }
    }

    /// Appends tag, length, payload, pad and CRC, unchecked.
    fn write_raw(&mut self, tag: Tag, parts: &[&[u8]]) {
        let payload_start = self.buf.len() + CHUNK_HEAD_LEN;
        let len: usize = parts.iter().map(|p| p.len()).sum();
        self.buf.extend_from_slice(&tag.0);
        self.buf.extend_from_slice(&(len as u32).to_le_bytes());
        for part in parts {
            self.buf.extend_from_slice(part);
        }
        let crc = chunk_crc(tag, self.buf.get(payload_start..).unwrap_or(&[]));
        let pad = pad_len(len as u64) as usize;
        self.buf.resize(self.buf.len() + pad, 0);
        self.buf.extend_from_slice(&crc.to_le_bytes());
    }
}
