//! The scheduler's taps on the processors' effects: guest-memory writes are
//! noted (so suspended queues are re-checked only when memory they watch may
//! have changed), interrupts are copied to per-queue channels, and every
//! call into the embedder's memory and backend is guarded, so a panic in
//! either is told as what it was.

use parking_lot::{Mutex, MutexGuard};

use crate::backend::{Backend, Call, Forward, QueueId};
use crate::memory::{GuestMemory, LentDwords, MemoryError, ObservedMemory, WriteObserver};

use super::handle::SubmissionId;
use super::reentry::{guarded, PanicSite};
use super::signal::InterruptLines;

/// Most ranges a [`WriteLog`] keeps before it says "anything may have changed".
const MAX_RANGES: usize = 32;

/// Byte ranges written since the log was last cleared (inline: a slice's
/// log allocates nothing).
#[derive(Debug)]
pub(crate) struct WriteLog {
    ranges: [(u64, u64); MAX_RANGES],
    len: usize,
    overflow: bool,
}

impl Default for WriteLog {
    fn default() -> Self {
        Self { ranges: [(0, 0); MAX_RANGES], len: 0, overflow: false }
    }
}

impl WriteLog {
    pub(crate) fn clear(&mut self) {
        self.len = 0;
        self.overflow = false;
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0 && !self.overflow
    }

    fn kept(&self) -> &[(u64, u64)] {
        self.ranges.get(..self.len).unwrap_or(&[])
    }

    /// Notes a write of `len` bytes at `address`.
    pub(crate) fn record(&mut self, address: u64, len: u64) {
        if self.overflow || len == 0 {
            return;
        }
        let end = address.saturating_add(len);
        if let Some(last) = self.len.checked_sub(1).and_then(|i| self.ranges.get_mut(i)) {
            // Consecutive or overlapping writes (a WRITE_DATA run, a fill) merge.
            if address <= last.1 && end >= last.0 {
                *last = (last.0.min(address), last.1.max(end));
                return;
            }
        }
        match self.ranges.get_mut(self.len) {
            Some(slot) => {
                *slot = (address, end);
                self.len += 1;
            }
            None => {
                self.overflow = true;
                self.len = 0;
            }
        }
    }

    /// Whether a write may have touched `[start, end)`.
    #[cfg(test)]
    pub(crate) fn overlaps(&self, start: u64, end: u64) -> bool {
        self.overflow || self.kept().iter().any(|&(a, b)| a < end && b > start)
    }

    /// The ranges written, or `None` when too many were to keep them apart
    /// (anything may have changed).
    pub(crate) fn ranges(&self) -> Option<&[(u64, u64)]> {
        (!self.overflow).then(|| self.kept())
    }
}

/// Guest memory that notes every write in a [`WriteLog`], with every call
/// into the embedder's memory guarded.
pub(crate) type Tracked<'a, M> = ObservedMemory<'a, Guarded<'a, M>, Mutex<&'a mut WriteLog>>;

/// Makes the memory a slice sees: `memory` guarded, writes noted in `log`.
pub(crate) fn tracked<'a, M: GuestMemory + ?Sized>(guard: &'a Guarded<'a, M>, log: &'a mut WriteLog) -> Tracked<'a, M> {
    ObservedMemory { inner: guard, observer: Mutex::new(log) }
}

/// The embedder's guest memory with each call guarded: a panic inside it
/// is reported as the memory's ([`PanicSite::Memory`]).
pub(crate) struct Guarded<'a, M: ?Sized>(pub(crate) &'a M);

impl<M: GuestMemory + ?Sized> GuestMemory for Guarded<'_, M> {
    #[inline]
    fn read_bytes(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError> {
        guarded(PanicSite::Memory, || self.0.read_bytes(address, out))
    }
    #[inline]
    fn write_bytes(&self, address: u64, data: &[u8]) -> Result<(), MemoryError> {
        guarded(PanicSite::Memory, || self.0.write_bytes(address, data))
    }
    #[inline]
    fn is_mapped(&self, address: u64, len: u64) -> bool {
        guarded(PanicSite::Memory, || self.0.is_mapped(address, len))
    }
    #[inline]
    fn read_u32(&self, address: u64) -> Result<u32, MemoryError> {
        guarded(PanicSite::Memory, || self.0.read_u32(address))
    }
    #[inline]
    fn read_u64(&self, address: u64) -> Result<u64, MemoryError> {
        guarded(PanicSite::Memory, || self.0.read_u64(address))
    }
    #[inline]
    fn write_u32(&self, address: u64, value: u32) -> Result<(), MemoryError> {
        guarded(PanicSite::Memory, || self.0.write_u32(address, value))
    }
    #[inline]
    fn write_u64(&self, address: u64, value: u64) -> Result<(), MemoryError> {
        guarded(PanicSite::Memory, || self.0.write_u64(address, value))
    }
    #[inline]
    fn compare_exchange_u32(&self, address: u64, current: u32, new: u32) -> Result<Result<u32, u32>, MemoryError> {
        guarded(PanicSite::Memory, || self.0.compare_exchange_u32(address, current, new))
    }
    #[inline]
    fn compare_exchange_u64(&self, address: u64, current: u64, new: u64) -> Result<Result<u64, u64>, MemoryError> {
        guarded(PanicSite::Memory, || self.0.compare_exchange_u64(address, current, new))
    }
    #[inline]
    fn read_dwords(&self, address: u64, out: &mut [u32]) -> Result<(), MemoryError> {
        guarded(PanicSite::Memory, || self.0.read_dwords(address, out))
    }
    fn atomic_update_u32(&self, address: u64, update: &mut dyn FnMut(u32) -> u32) -> Result<u32, MemoryError> {
        guarded(PanicSite::Memory, || self.0.atomic_update_u32(address, update))
    }
    fn atomic_update_u64(&self, address: u64, update: &mut dyn FnMut(u64) -> u64) -> Result<u64, MemoryError> {
        guarded(PanicSite::Memory, || self.0.atomic_update_u64(address, update))
    }
    fn fill(&self, address: u64, len: u64, pattern: u32) -> Result<(), MemoryError> {
        guarded(PanicSite::Memory, || self.0.fill(address, len, pattern))
    }
    fn copy(&self, dst: u64, src: u64, len: u64) -> Result<(), MemoryError> {
        guarded(PanicSite::Memory, || self.0.copy(dst, src, len))
    }
    #[inline]
    fn lend_dwords(&self, address: u64, max_dw: usize) -> Option<LentDwords> {
        guarded(PanicSite::Memory, || self.0.lend_dwords(address, max_dw))
    }
}

impl WriteObserver for Mutex<&mut WriteLog> {
    #[inline]
    fn wrote(&self, address: u64, len: u64) {
        self.lock().record(address, len);
    }
}

/// Where one queue's backend calls go, settled at its first slice by
/// [`Backend::queue_backend`]. It travels with the queue's processor.
#[derive(Default)]
pub(crate) enum QueueBackend {
    /// The queue has not run yet.
    #[default]
    Unasked,
    /// The queue's own backend: called on its worker, no lock.
    Own(Box<dyn Backend + Send>),
    /// The GPU's backend, behind its lock.
    Shared,
}

impl QueueBackend {
    /// Asks the GPU's backend, once, where `queue`'s calls go.
    pub(crate) fn settle<B: Backend>(&mut self, backend: &Mutex<B>, queue: QueueId) {
        if let QueueBackend::Unasked = self {
            let own = guarded(PanicSite::Backend, || backend.lock().queue_backend(queue));
            *self = match own {
                Some(own) => QueueBackend::Own(own),
                None => QueueBackend::Shared,
            };
        }
    }

    /// True when the queue's calls go to the GPU's shared backend (or it
    /// has not been asked yet, which takes that backend's lock).
    pub(crate) fn is_shared(&self) -> bool {
        !matches!(self, QueueBackend::Own(_))
    }
}

/// The backend as one queue's slice sees it: the queue's own backend
/// without a lock, or the GPU's behind its lock (threaded mode: taken for
/// each call only, so queues on other workers call it in between;
/// deterministic mode: held for the whole slice, as no other slice runs);
/// fences with an interrupt select are copied to the interrupt channels,
/// tagged with the running submission. Every call is guarded, so a panic
/// in it is reported as the backend's.
pub(crate) struct SliceBackend<'a, B> {
    target: SliceTarget<'a, B>,
    interrupts: &'a Mutex<InterruptLines>,
    queue: usize,
    submission: SubmissionId,
}

/// Where a [`SliceBackend`]'s calls go.
enum SliceTarget<'a, B> {
    /// The queue's own backend.
    Own(&'a mut (dyn Backend + Send + 'static)),
    /// The GPU's backend, locked per call.
    Shared(&'a Mutex<B>),
    /// The GPU's backend, locked until the slice ends.
    Held(MutexGuard<'a, B>),
}

impl<'a, B: Backend> SliceBackend<'a, B> {
    /// The slice's view of `own` (the queue's backend, if it has one) or of
    /// the GPU's `backend`; with `hold`, the GPU's backend is locked until
    /// the slice backend is dropped.
    pub(crate) fn new(
        backend: &'a Mutex<B>,
        own: Option<&'a mut (dyn Backend + Send + 'static)>,
        hold: bool,
        interrupts: &'a Mutex<InterruptLines>,
        queue: usize,
        submission: SubmissionId,
    ) -> Self {
        let target = match own {
            Some(own) => SliceTarget::Own(own),
            None if hold => SliceTarget::Held(backend.lock()),
            None => SliceTarget::Shared(backend),
        };
        Self { target, interrupts, queue, submission }
    }
}

impl<'a, B: Backend + 'a> Forward for SliceBackend<'a, B> {
    type Target = dyn Backend + 'a;

    #[inline]
    fn forward<R>(&mut self, _queue: QueueId, call: impl FnOnce(&mut Self::Target) -> R) -> Option<R> {
        Some(guarded(PanicSite::Backend, || match &mut self.target {
            SliceTarget::Own(own) => call(&mut **own),
            SliceTarget::Shared(backend) => call(&mut *backend.lock()),
            SliceTarget::Held(backend) => call(&mut **backend),
        }))
    }

    #[inline]
    fn forwarded(&mut self, call: Call<'_>) {
        if let Call::Fence(fence) = call {
            if fence.interrupt {
                self.interrupts.lock().raise(self.queue, fence, self.submission);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::WriteLog;

    #[test]
    fn write_log_merges_and_overflows() {
        let mut log = WriteLog::default();
        assert!(log.is_empty());
        log.record(0x100, 4);
        log.record(0x104, 4);
        assert!(log.overlaps(0x106, 0x107));
        assert!(!log.overlaps(0x108, 0x110));
        assert!(!log.overlaps(0xF0, 0x100));
        for i in 0..40u64 {
            log.record(0x1000 + i * 0x100, 4);
        }
        assert!(log.overlaps(0, 1));
        log.clear();
        assert!(log.is_empty());
    }
}
