//! The scheduler's taps on the processors' effects: guest-memory writes are
//! noted (so suspended queues are re-checked only when memory they watch may
//! have changed) and interrupts are copied to per-queue channels.

use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Mutex, MutexGuard};

use crate::backend::{Backend, Call, Fence, Forward, QueueId};
use crate::memory::{GuestMemory, ObservedMemory, WriteObserver};

use super::handle::SubmissionId;

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

/// Guest memory that notes every write in a [`WriteLog`].
pub(crate) type Tracked<'a, M> = ObservedMemory<'a, M, Mutex<&'a mut WriteLog>>;

impl<'a, M: GuestMemory + ?Sized> Tracked<'a, M> {
    pub(crate) fn new(inner: &'a M, log: &'a mut WriteLog) -> Self {
        ObservedMemory { inner, observer: Mutex::new(log) }
    }
}

impl WriteObserver for Mutex<&mut WriteLog> {
    #[inline]
    fn wrote(&self, address: u64, len: u64) {
        self.lock().record(address, len);
    }
}

/// A release with an interrupt select (RELEASE_MEM, EVENT_WRITE_EOP) as the
/// host sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interrupt {
    /// Position among all interrupts of this GPU (every queue), from 0: the
    /// completion order.
    pub sequence: u64,
    /// The submission whose packet raised it.
    pub submission: SubmissionId,
    /// The fence, as the backend received it (`fence.queue` is the queue).
    pub fence: Fence,
}

/// One queue's interrupt channel: unbounded (allocated as it fills) but
/// kept to `capacity` entries. The tap holds a receiver too, so a full
/// channel drops its oldest entry instead of blocking the scheduler.
struct InterruptLine {
    tx: Sender<Interrupt>,
    rx: Receiver<Interrupt>,
}

/// The user's backend and the interrupt channels, behind the GPU's backend
/// lock.
pub(crate) struct Tap<B> {
    pub(crate) inner: B,
    /// Created by the queue's first interrupt or the host's first request.
    lines: Vec<Option<InterruptLine>>,
    capacity: usize,
    pub(crate) interrupts: u64,
    pub(crate) dropped: u64,
}

impl<B: Backend> Tap<B> {
    /// A tap with one channel of `capacity` (at least 1) per queue, each
    /// created when first needed.
    pub(crate) fn new(inner: B, queues: usize, capacity: usize) -> Self {
        let mut lines = Vec::new();
        lines.resize_with(queues, || None);
        let capacity = capacity.max(1);
        Self { inner, lines, capacity, interrupts: 0, dropped: 0 }
    }

    fn line(&mut self, queue: usize) -> Option<&InterruptLine> {
        let slot = self.lines.get_mut(queue)?;
        Some(slot.get_or_insert_with(|| {
            let (tx, rx) = crossbeam_channel::unbounded();
            InterruptLine { tx, rx }
        }))
    }

    /// The host's receiver of `queue`'s interrupts.
    pub(crate) fn receiver(&mut self, queue: usize) -> Option<Receiver<Interrupt>> {
        self.line(queue).map(|l| l.rx.clone())
    }

    fn raise(&mut self, fence: &Fence, submission: SubmissionId) {
        let (capacity, sequence) = (self.capacity, self.interrupts);
        let mut dropped = 0;
        let Some(line) = self.line(fence.queue.0 as usize) else {
            return;
        };
        let interrupt = Interrupt { sequence, submission, fence: *fence };
        // The host may take entries meanwhile; it never adds any.
        while line.tx.len() >= capacity {
            if line.rx.try_recv().is_err() {
                break;
            }
            dropped += 1;
        }
        // The tap holds a receiver, so the channel is never disconnected.
        let _ = line.tx.try_send(interrupt);
        self.interrupts += 1;
        self.dropped += dropped;
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
    pub(crate) fn settle<B: Backend>(&mut self, tap: &Mutex<Tap<B>>, queue: QueueId) {
        if let QueueBackend::Unasked = self {
            *self = match tap.lock().inner.queue_backend(queue) {
                Some(own) => QueueBackend::Own(own),
                None => QueueBackend::Shared,
            };
        }
    }
}

/// The backend as one queue's slice sees it: the queue's own backend
/// without a lock, or the GPU's behind its lock (threaded mode: taken for
/// each call only, so queues on other workers call it in between;
/// deterministic mode: held for the whole slice, as no other slice runs);
/// fences with an interrupt select are copied to the interrupt channels,
/// tagged with the running submission.
pub(crate) struct SliceBackend<'a, B> {
    target: SliceTarget<'a, B>,
    submission: SubmissionId,
}

/// Where a [`SliceBackend`]'s calls go.
enum SliceTarget<'a, B> {
    /// The queue's own backend; the GPU's (for interrupts) locked per call.
    Own(&'a mut (dyn Backend + Send + 'static), &'a Mutex<Tap<B>>),
    /// The GPU's backend, locked per call.
    Shared(&'a Mutex<Tap<B>>),
    /// The GPU's backend, locked until the slice ends.
    Held(MutexGuard<'a, Tap<B>>),
}

impl<'a, B: Backend> SliceBackend<'a, B> {
    /// The slice's view of `own` (the queue's backend, if it has one) or of
    /// the GPU's backend in `tap`; with `hold`, the GPU's backend is locked
    /// until the slice backend is dropped.
    pub(crate) fn new(
        tap: &'a Mutex<Tap<B>>,
        own: Option<&'a mut (dyn Backend + Send + 'static)>,
        hold: bool,
        submission: SubmissionId,
    ) -> Self {
        let target = match own {
            Some(own) => SliceTarget::Own(own, tap),
            None if hold => SliceTarget::Held(tap.lock()),
            None => SliceTarget::Shared(tap),
        };
        Self { target, submission }
    }
}

impl<'a, B: Backend + 'a> Forward for SliceBackend<'a, B> {
    type Target = dyn Backend + 'a;

    #[inline]
    fn forward<R>(&mut self, _queue: QueueId, call: impl FnOnce(&mut Self::Target) -> R) -> Option<R> {
        Some(match &mut self.target {
            SliceTarget::Own(own, _) => call(&mut **own),
            SliceTarget::Shared(tap) => call(&mut tap.lock().inner),
            SliceTarget::Held(tap) => call(&mut tap.inner),
        })
    }

    #[inline]
    fn forwarded(&mut self, call: Call<'_>) {
        if let Call::Fence(fence) = call {
            if fence.interrupt {
                match &mut self.target {
                    SliceTarget::Own(_, tap) | SliceTarget::Shared(tap) => tap.lock().raise(fence, self.submission),
                    SliceTarget::Held(tap) => tap.raise(fence, self.submission),
                }
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
