//! The rules of a trace's sequence, shared by the reader and the writer so
//! that the writer never produces a trace the reader refuses.

use std::collections::BTreeMap;

use super::error::TraceRule;
use super::event::{PayloadRange, TraceEvent};
use super::format::{
    Tag, ADDRESS_ALIGN, END_LEN, MAX_QUEUE, MEM_HEADER_LEN, SHADER_CODE_ALIGN, SHADER_PROBE_LEN, SHDR_FLAG_RELOCATED,
    SHDR_KNOWN_FLAGS, SHDR_LEN, SUBM_LEN, ZERO_LEN,
};
use crate::memory::ADDRESS_SPACE_END;

/// The end of `[address, address + len)` if it lies inside the 48-bit space.
fn range_end(address: u64, len: u64) -> Option<u64> {
    address.checked_add(len).filter(|&end| end <= ADDRESS_SPACE_END)
}

/// The union of the regions declared so far, as disjoint, non-adjacent
/// spans (adjacent regions are merged), so that overlap and containment
/// checks are one ordered-map lookup each.
#[derive(Debug, Default, Clone)]
pub(crate) struct DeclaredMemory {
    /// start -> end (exclusive); never empty, never touching.
    spans: BTreeMap<u64, u64>,
}

impl DeclaredMemory {
    /// True when `[address, end)` overlaps declared memory.
    fn overlaps(&self, address: u64, end: u64) -> bool {
        self.spans.range(..end).next_back().is_some_and(|(_, &span_end)| span_end > address)
    }

    /// Adds `[address, end)`, which must not overlap.
    fn insert(&mut self, address: u64, end: u64) {
        if end <= address {
            return;
        }
        let mut start = address;
        let mut stop = end;
        if let Some((&prev_start, &prev_end)) = self.spans.range(..address).next_back() {
            if prev_end == address {
                start = prev_start;
            }
        }
        if let Some(next_end) = self.spans.remove(&end) {
            stop = next_end;
        }
        self.spans.insert(start, stop);
    }

    /// True when every byte of `[address, address + len)` is declared
    /// (an empty range inside the address space is).
    fn contains(&self, address: u64, len: u64) -> bool {
        let Some(end) = range_end(address, len) else {
            return false;
        };
        if len == 0 {
            return true;
        }
        self.spans.range(..=address).next_back().is_some_and(|(_, &span_end)| span_end >= end)
    }
}

/// What one chunk amounts to.
#[derive(Debug)]
pub(crate) enum Decoded {
    /// `INFO` key/value pairs.
    Info(Vec<(String, String)>),
    /// A step of the sequence.
    Event(TraceEvent),
    /// `END `.
    End,
}

/// Little-endian fields of a payload whose length was checked already; a
/// short payload still gives an error, never a panic.
struct Fields<'a> {
    tag: Tag,
    payload: &'a [u8],
}

impl Fields<'_> {
    fn bytes<const N: usize>(&self, at: usize) -> Result<[u8; N], TraceRule> {
        at.checked_add(N)
            .and_then(|end| self.payload.get(at..end))
            .and_then(|b| <[u8; N]>::try_from(b).ok())
            .ok_or(TraceRule::BadPayloadLength { tag: self.tag, len: self.payload.len() as u64, expected: "longer" })
    }

    fn u32(&self, at: usize) -> Result<u32, TraceRule> {
        self.bytes::<4>(at).map(u32::from_le_bytes)
    }

    fn u64(&self, at: usize) -> Result<u64, TraceRule> {
        self.bytes::<8>(at).map(u64::from_le_bytes)
    }
}

fn exact_len(tag: Tag, payload: &[u8], len: usize, expected: &'static str) -> Result<(), TraceRule> {
    if payload.len() == len {
        Ok(())
    } else {
        Err(TraceRule::BadPayloadLength { tag, len: payload.len() as u64, expected })
    }
}

fn aligned(address: u64, alignment: u64) -> Result<(), TraceRule> {
    if address % alignment == 0 {
        Ok(())
    } else {
        Err(TraceRule::Misaligned { address, alignment })
    }
}

fn reserved(field: &'static str, value: u32) -> Result<(), TraceRule> {
    if value == 0 {
        Ok(())
    } else {
        Err(TraceRule::ReservedNonZero { field, value: u64::from(value) })
    }
}

/// Parses `INFO` text into key/value pairs. Empty lines are skipped; every
/// other line needs `=` after a non-empty key.
pub(crate) fn parse_info(payload: &[u8]) -> Result<Vec<(String, String)>, TraceRule> {
    let text = std::str::from_utf8(payload).map_err(|e| TraceRule::InfoNotUtf8 { valid_up_to: e.valid_up_to() })?;
    let mut entries = Vec::new();
    for (n, line) in text.split('\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        match line.split_once('=') {
            Some((key, value)) if !key.is_empty() => {
                entries.push((key.to_owned(), value.to_owned()));
            }
            _ => return Err(TraceRule::InfoBadLine { line: n + 1 }),
        }
    }
    Ok(entries)
}

/// The state of a sequence being read or written.
#[derive(Debug, Default, Clone)]
pub(crate) struct Sequence {
    memory: DeclaredMemory,
    info_seen: bool,
}

impl Sequence {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Checks chunk `index` (tag and payload; the CRC was checked by the
    /// caller) against the sequence so far and, when it is valid, takes it
    /// in. `payload_offset` is the payload's byte offset in the file. On an
    /// error the state is unchanged.
    pub(crate) fn chunk(
        &mut self,
        index: u32,
        tag: Tag,
        payload: &[u8],
        payload_offset: u64,
    ) -> Result<Decoded, TraceRule> {
        if !tag.is_valid() {
            return Err(TraceRule::InvalidTag { tag });
        }
        let fields = Fields { tag, payload };
        let chunk = index;
        let event = match tag {
            Tag::INFO => {
                if self.info_seen {
                    return Err(TraceRule::DuplicateInfo);
                }
                if index != 0 {
                    return Err(TraceRule::InfoNotFirst);
                }
                let entries = parse_info(payload)?;
                self.info_seen = true;
                return Ok(Decoded::Info(entries));
            }
            Tag::MEM => {
                if payload.len() < MEM_HEADER_LEN {
                    return Err(TraceRule::BadPayloadLength { tag, len: payload.len() as u64, expected: "at least 8" });
                }
                let address = fields.u64(0)?;
                let len = (payload.len() - MEM_HEADER_LEN) as u64;
                self.region(address, len)?;
                TraceEvent::MemRegion {
                    chunk,
                    address,
                    data: PayloadRange::new(payload_offset + MEM_HEADER_LEN as u64, len),
                }
            }
            Tag::ZERO => {
                exact_len(tag, payload, ZERO_LEN, "exactly 16")?;
                let address = fields.u64(0)?;
                let len = fields.u64(8)?;
                self.region(address, len)?;
                TraceEvent::ZeroRegion { chunk, address, len }
            }
            Tag::WRIT => {
                if payload.len() < MEM_HEADER_LEN {
                    return Err(TraceRule::BadPayloadLength { tag, len: payload.len() as u64, expected: "at least 8" });
                }
                let address = fields.u64(0)?;
                let len = (payload.len() - MEM_HEADER_LEN) as u64;
                aligned(address, ADDRESS_ALIGN)?;
                if !self.memory.contains(address, len) {
                    return Err(TraceRule::WriteOutsideMemory { address, len });
                }
                TraceEvent::HostWrite {
                    chunk,
                    address,
                    data: PayloadRange::new(payload_offset + MEM_HEADER_LEN as u64, len),
                }
            }
            Tag::SUBM => {
                exact_len(tag, payload, SUBM_LEN, "exactly 24")?;
                let queue = fields.u32(0)?;
                let flags = fields.u32(4)?;
                let address = fields.u64(8)?;
                let size_dw = fields.u32(16)?;
                let reserved_field = fields.u32(20)?;
                if queue > MAX_QUEUE {
                    return Err(TraceRule::QueueOutOfRange { queue });
                }
                reserved("SUBM flags", flags)?;
                reserved("SUBM reserved field", reserved_field)?;
                aligned(address, ADDRESS_ALIGN)?;
                if !self.memory.contains(address, u64::from(size_dw) * 4) {
                    return Err(TraceRule::CommandBufferOutsideMemory { address, size_dw });
                }
                TraceEvent::Submit { chunk, queue, address, size_dw }
            }
            Tag::SHDR => {
                exact_len(tag, payload, SHDR_LEN, "exactly 24")?;
                let header_address = fields.u64(0)?;
                let code_address = fields.u64(8)?;
                let flags = fields.u32(16)?;
                let reserved_field = fields.u32(20)?;
                reserved("SHDR flags (bits other than 0)", flags & !SHDR_KNOWN_FLAGS)?;
                reserved("SHDR reserved field", reserved_field)?;
                aligned(header_address, ADDRESS_ALIGN)?;
                aligned(code_address, SHADER_CODE_ALIGN)?;
                if !self.memory.contains(header_address, SHADER_PROBE_LEN) {
                    return Err(TraceRule::ShaderOutsideMemory { what: "header", address: header_address });
                }
                if !self.memory.contains(code_address, SHADER_PROBE_LEN) {
                    return Err(TraceRule::ShaderOutsideMemory { what: "code", address: code_address });
                }
                TraceEvent::Shader { chunk, header_address, code_address, relocated: flags & SHDR_FLAG_RELOCATED != 0 }
            }
            Tag::END => {
                exact_len(tag, payload, END_LEN, "exactly 4")?;
                let stored = fields.u32(0)?;
                if stored != index {
                    return Err(TraceRule::EndCountMismatch { stored, actual: index });
                }
                return Ok(Decoded::End);
            }
            Tag::NOTE => TraceEvent::Note { chunk, text: String::from_utf8_lossy(payload).into_owned() },
            _ if tag.is_critical() => return Err(TraceRule::UnknownCriticalChunk { tag }),
            _ => TraceEvent::Ancillary { chunk, tag },
        };
        Ok(Decoded::Event(event))
    }

    /// Checks and declares a `MEM `/`ZERO` region.
    fn region(&mut self, address: u64, len: u64) -> Result<(), TraceRule> {
        aligned(address, ADDRESS_ALIGN)?;
        let end = range_end(address, len).ok_or(TraceRule::RegionPastAddressSpace { address, len })?;
        // An empty region holds no byte, so it overlaps nothing.
        if len != 0 && self.memory.overlaps(address, end) {
            return Err(TraceRule::OverlappingRegions { address, len });
        }
        self.memory.insert(address, end);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_memory_merges_and_checks() {
        let mut m = DeclaredMemory::default();
        m.insert(0x1000, 0x2000);
        m.insert(0x3000, 0x4000);
        assert!(!m.contains(0x1000, 0x3000));
        m.insert(0x2000, 0x3000);
        assert_eq!(m.spans.len(), 1);
        assert!(m.contains(0x1000, 0x3000));
        assert!(!m.contains(0xffc, 8));
        assert!(!m.contains(0x3ffc, 8));
        assert!(m.contains(0x5000, 0));
        assert!(!m.contains(u64::MAX, 0));
        assert!(m.overlaps(0x3fff, 0x5000));
        assert!(!m.overlaps(0x4000, 0x5000));
        assert!(!m.overlaps(0, 0x1000));
        assert!(m.overlaps(0, 0x1001));
    }

    #[test]
    fn info_lines() {
        let parsed = parse_info(b"gpu=gfx10.3\n\nx=a=b\nempty=\n").unwrap_or_default();
        assert_eq!(
            parsed,
            vec![
                ("gpu".to_owned(), "gfx10.3".to_owned()),
                ("x".to_owned(), "a=b".to_owned()),
                ("empty".to_owned(), String::new()),
            ]
        );
        assert_eq!(parse_info(b"gpu\n"), Err(TraceRule::InfoBadLine { line: 1 }));
        assert_eq!(parse_info(b"a=1\n=2"), Err(TraceRule::InfoBadLine { line: 2 }));
        assert_eq!(parse_info(b"a=\xff"), Err(TraceRule::InfoNotUtf8 { valid_up_to: 2 }));
    }
}
