//! The recorder an emulator embeds to capture traces.
//!
//! [`Recorder`] wraps the emulator's guest memory and is handed to the
//! [`crate::gpu::Gpu`] (or a [`crate::processor::Processor`]) in its place.
//! Every access the command processors make goes through it, and the first
//! time any 256-byte line of guest memory is touched (read or written, by a
//! packet or by the host), the recorder keeps a copy of the line as it was
//! just before. The emulator also tells it about submissions, host writes
//! and shader creations ([`RecorderLog`], shared through a handle). At the
//! end [`Recorder::finish`] writes a trace: the touched lines as `MEM `
//! regions (their contents before the first access), then the submissions,
//! host writes and shaders in the order they happened. Replaying it gives
//! the same packets the same memory, so it produces the same events.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::memory::{check_range, GuestMemory, MemoryError};
use crate::trace::{TraceError, TraceWriter};

/// Size of the unit the recorder snapshots.
pub const LINE: u64 = 256;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Submit { queue: u32, address: u64, size_dw: u32 },
    HostWrite { address: u64, bytes: Vec<u8> },
    Shader { header: u64, code: u64, relocated: bool },
    Note(String),
}

/// What the recorder has seen, shared between the memory wrapper and the
/// emulator's handle.
#[derive(Debug, Default)]
struct Log {
    /// Line address → contents before the first access. A line whose whole
    /// 256 bytes are not mapped keeps only the dwords that were accessed.
    lines: BTreeMap<u64, Vec<u8>>,
    /// Partially mapped lines: byte address → dword contents.
    dwords: BTreeMap<u64, [u8; 4]>,
    steps: Vec<Step>,
    info: Vec<(String, String)>,
}

/// The emulator's handle on a recording: submissions, host writes, shaders.
#[derive(Clone, Debug, Default)]
pub struct RecorderLog {
    log: Arc<Mutex<Log>>,
}

impl RecorderLog {
    /// Records a submission (call it when the emulator submits to the GPU).
    pub fn submit(&self, queue: u32, address: u64, size_dw: u32) {
        self.log.lock().steps.push(Step::Submit { queue, address, size_dw });
    }

    /// Records a host write the emulator hands to the GPU
    /// ([`crate::gpu::Gpu::write_memory`]) at this point of the sequence;
    /// the memory wrapper keeps what the bytes overwrite when the GPU applies
    /// the write.
    pub fn host_write(&self, address: u64, bytes: &[u8]) {
        self.log.lock().steps.push(Step::HostWrite { address, bytes: bytes.to_vec() });
    }

    /// Records a shader creation (`SHDR`): `relocated` says whether the
    /// header in memory is already relocated when the creation is recorded.
    pub fn shader(&self, header_address: u64, code_address: u64, relocated: bool) {
        self.log.lock().steps.push(Step::Shader { header: header_address, code: code_address, relocated });
    }

    /// Adds a `note` for people.
    pub fn note(&self, text: &str) {
        self.log.lock().steps.push(Step::Note(text.to_string()));
    }

    /// Sets an `INFO` key (gpu, producer, description, …).
    pub fn info(&self, key: &str, value: &str) {
        let mut log = self.log.lock();
        log.info.retain(|(k, _)| k != key);
        log.info.push((key.to_string(), value.to_string()));
    }
}

/// Guest memory that remembers what it served, for [`Recorder::finish`].
pub struct Recorder<M> {
    inner: M,
    log: RecorderLog,
}

impl<M: GuestMemory> Recorder<M> {
    /// Wraps `inner`; the returned [`RecorderLog`] is the emulator's handle.
    pub fn new(inner: M) -> (Self, RecorderLog) {
        let log = RecorderLog::default();
        (Self { inner, log: log.clone() }, log)
    }

    /// The wrapped memory.
    pub fn inner(&self) -> &M {
        &self.inner
    }

    /// Keeps the contents of every line of `[address, address + len)` not
    /// kept yet, as they are now.
    fn touch(&self, address: u64, len: u64) {
        if len == 0 || check_range(address, len).is_err() {
            return;
        }
        let mut log = self.log.log.lock();
        let Log { lines, dwords, .. } = &mut *log;
        let first = address / LINE * LINE;
        let end = address + len;
        let mut line = first;
        while line < end {
            if let std::collections::btree_map::Entry::Vacant(slot) = lines.entry(line) {
                let mut bytes = vec![0u8; LINE as usize];
                if self.inner.read_bytes(line, &mut bytes).is_ok() {
                    slot.insert(bytes);
                } else {
                    // Partly mapped: keep the accessed dwords that are mapped.
                    let mut at = address.max(line) / 4 * 4;
                    let hi = end.min(line + LINE);
                    while at < hi {
                        if let std::collections::btree_map::Entry::Vacant(d) = dwords.entry(at) {
                            let mut word = [0u8; 4];
                            if self.inner.read_bytes(at, &mut word).is_ok() {
                                d.insert(word);
                            }
                        }
                        at += 4;
                    }
                }
            }
            line += LINE;
        }
    }

    /// A host write, recorded as `WRIT` and applied to the memory.
    pub fn host_write(&self, address: u64, bytes: &[u8]) -> Result<(), MemoryError> {
        self.touch(address, bytes.len() as u64);
        self.inner.write_bytes(address, bytes)?;
        self.log.log.lock().steps.push(Step::HostWrite { address, bytes: bytes.to_vec() });
        Ok(())
    }

    /// Writes the trace: `INFO`, the touched memory as `MEM ` regions (their
    /// contents before the first access), then every recorded step in order.
    pub fn finish(&self) -> Result<Vec<u8>, TraceError> {
        // Command buffers and shaders must lie in declared memory even where
        // no packet read them (a submission that never ran).
        let ranges: Vec<(u64, u64)> = self
            .log
            .log
            .lock()
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Submit { address, size_dw, .. } => Some((*address, u64::from(*size_dw) * 4)),
                Step::Shader { header, .. } => Some((*header, 4)),
                _ => None,
            })
            .collect();
        for (address, len) in ranges {
            self.touch(address, len);
        }
        if let Some(code) = self.log.log.lock().steps.iter().find_map(|s| match s {
            Step::Shader { code, .. } => Some(*code),
            _ => None,
        }) {
            self.touch(code, 4);
        }
        let log = self.log.log.lock();
        let mut w = TraceWriter::new();
        let mut info = log.info.clone();
        if !info.iter().any(|(k, _)| k == "gpu") {
            info.insert(0, ("gpu".into(), "gfx10.3".into()));
        }
        if !info.iter().any(|(k, _)| k == "producer") {
            info.push(("producer".into(), "pm4core recorder".into()));
        }
        for (k, v) in &info {
            w.info(k, v)?;
        }
        // Coalesce whole lines and loose dwords into contiguous regions.
        let mut pieces: BTreeMap<u64, &[u8]> = BTreeMap::new();
        for (a, b) in &log.lines {
            pieces.insert(*a, b);
        }
        for (a, d) in &log.dwords {
            let line = a / LINE * LINE;
            if !log.lines.contains_key(&line) {
                pieces.insert(*a, d);
            }
        }
        let mut region: Option<(u64, Vec<u8>)> = None;
        for (address, bytes) in pieces {
            match &mut region {
                Some((start, data)) if *start + data.len() as u64 == address => data.extend_from_slice(bytes),
                _ => {
                    if let Some((start, data)) = region.take() {
                        w.mem(start, &data)?;
                    }
                    region = Some((address, bytes.to_vec()));
                }
            }
        }
        if let Some((start, data)) = region {
            w.mem(start, &data)?;
        }
        for step in &log.steps {
            match step {
                Step::Submit { queue, address, size_dw } => w.submit(*queue, *address, *size_dw)?,
                Step::HostWrite { address, bytes } => w.host_write(*address, bytes)?,
                Step::Shader { header, code, relocated } => w.shader(*header, *code, *relocated)?,
                Step::Note(text) => w.note(text)?,
            }
        }
        Ok(w.finish())
    }
}

impl<M: GuestMemory> GuestMemory for Recorder<M> {
    fn read_bytes(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError> {
        self.touch(address, out.len() as u64);
        self.inner.read_bytes(address, out)
    }

    fn write_bytes(&self, address: u64, data: &[u8]) -> Result<(), MemoryError> {
        self.touch(address, data.len() as u64);
        self.inner.write_bytes(address, data)
    }

    fn read_u32(&self, address: u64) -> Result<u32, MemoryError> {
        self.touch(address, 4);
        self.inner.read_u32(address)
    }

    fn read_u64(&self, address: u64) -> Result<u64, MemoryError> {
        self.touch(address, 8);
        self.inner.read_u64(address)
    }

    fn write_u32(&self, address: u64, value: u32) -> Result<(), MemoryError> {
        self.touch(address, 4);
        self.inner.write_u32(address, value)
    }

    fn write_u64(&self, address: u64, value: u64) -> Result<(), MemoryError> {
        self.touch(address, 8);
        self.inner.write_u64(address, value)
    }

    fn compare_exchange_u32(&self, address: u64, current: u32, new: u32) -> Result<Result<u32, u32>, MemoryError> {
        self.touch(address, 4);
        self.inner.compare_exchange_u32(address, current, new)
    }

    fn compare_exchange_u64(&self, address: u64, current: u64, new: u64) -> Result<Result<u64, u64>, MemoryError> {
        self.touch(address, 8);
        self.inner.compare_exchange_u64(address, current, new)
    }

    fn atomic_update_u32(&self, address: u64, update: &mut dyn FnMut(u32) -> u32) -> Result<u32, MemoryError> {
        self.touch(address, 4);
        self.inner.atomic_update_u32(address, update)
    }

    fn atomic_update_u64(&self, address: u64, update: &mut dyn FnMut(u64) -> u64) -> Result<u64, MemoryError> {
        self.touch(address, 8);
        self.inner.atomic_update_u64(address, update)
    }

    fn is_mapped(&self, address: u64, len: u64) -> bool {
        self.inner.is_mapped(address, len)
    }
}
