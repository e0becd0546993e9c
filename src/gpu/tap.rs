//! The scheduler's taps on the processors' effects: guest-memory writes are
//! noted (so suspended queues are re-checked only when memory they watch may
//! have changed) and interrupts are copied to per-queue channels.

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use crate::backend::{
    Backend, CacheAction, Dispatch, Draw, Event, Fence, Flip, Marker, NotEmulated, QueueId, SampleKind, UnknownPacket,
};
use crate::memory::{GuestMemory, MemoryError, ObservedMemory, WriteObserver};
use crate::packet::{Header, PacketLocation};

use super::handle::SubmissionId;

/// Most ranges a [`WriteLog`] keeps before it says "anything may have changed".
const MAX_RANGES: usize = 32;

/// Byte ranges written since the log was last cleared.
#[derive(Debug, Default)]
pub(crate) struct WriteLog {
    ranges: Vec<(u64, u64)>,
    overflow: bool,
}

impl WriteLog {
    pub(crate) fn clear(&mut self) {
        self.ranges.clear();
        self.overflow = false;
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.ranges.is_empty() && !self.overflow
    }

    /// Notes a write of `len` bytes at `address`.
    pub(crate) fn record(&mut self, address: u64, len: u64) {
        if self.overflow || len == 0 {
            return;
        }
        let end = address.saturating_add(len);
        if let Some(last) = self.ranges.last_mut() {
            // Consecutive or overlapping writes (a WRITE_DATA run, a fill) merge.
            if address <= last.1 && end >= last.0 {
                *last = (last.0.min(address), last.1.max(end));
                return;
            }
        }
        if self.ranges.len() >= MAX_RANGES {
            self.overflow = true;
            self.ranges.clear();
        } else {
            self.ranges.push((address, end));
        }
    }

    /// Whether a write may have touched `[start, end)`.
    #[cfg(test)]
    pub(crate) fn overlaps(&self, start: u64, end: u64) -> bool {
        self.overflow || self.ranges.iter().any(|&(a, b)| a < end && b > start)
    }

    /// The ranges written, or `None` when too many were to keep them apart
    /// (anything may have changed).
    pub(crate) fn ranges(&self) -> Option<&[(u64, u64)]> {
        (!self.overflow).then_some(&self.ranges)
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

/// The backend as one queue's slice sees it: every call takes the GPU's
/// backend lock for that call only (queues on other workers call it in
/// between), and fences with an interrupt select are copied to the
/// interrupt channels, tagged with the running submission.
pub(crate) struct SharedBackend<'a, B> {
    pub(crate) tap: &'a Mutex<Tap<B>>,
    pub(crate) submission: SubmissionId,
}

impl<B: Backend> Backend for SharedBackend<'_, B> {
    fn packet(&mut self, queue: QueueId, header: Header, location: &PacketLocation) {
        self.tap.lock().inner.packet(queue, header, location)
    }

    fn draw(&mut self, draw: &Draw<'_>) {
        self.tap.lock().inner.draw(draw)
    }

    fn dispatch(&mut self, dispatch: &Dispatch<'_>) {
        self.tap.lock().inner.dispatch(dispatch)
    }

    fn event(&mut self, event: &Event) {
        self.tap.lock().inner.event(event)
    }

    fn cache_action(&mut self, queue: QueueId, action: &CacheAction) {
        self.tap.lock().inner.cache_action(queue, action)
    }

    fn fence(&mut self, fence: &Fence) {
        let mut tap = self.tap.lock();
        tap.inner.fence(fence);
        if fence.interrupt {
            tap.raise(fence, self.submission);
        }
    }

    fn flip(&mut self, flip: &Flip) {
        self.tap.lock().inner.flip(flip)
    }

    fn marker(&mut self, queue: QueueId, marker: &Marker<'_>) {
        self.tap.lock().inner.marker(queue, marker)
    }

    fn host_command(&mut self, queue: QueueId, code: u32, payload: &[u32]) {
        self.tap.lock().inner.host_command(queue, code, payload)
    }

    fn not_emulated(&mut self, packet: &NotEmulated) {
        self.tap.lock().inner.not_emulated(packet)
    }

    fn unknown_packet(&mut self, report: &UnknownPacket) {
        self.tap.lock().inner.unknown_packet(report)
    }

    fn skipped_indirect_buffer(&mut self, queue: QueueId, location: &PacketLocation, address: u64, size_dw: u32) {
        self.tap.lock().inner.skipped_indirect_buffer(queue, location, address, size_dw)
    }

    fn gpu_clock(&mut self) -> Option<u64> {
        self.tap.lock().inner.gpu_clock()
    }

    fn sample_event(
        &mut self,
        queue: QueueId,
        kind: SampleKind,
        address: u64,
        render_backends: u32,
        memory: &dyn GuestMemory,
    ) -> Result<(), MemoryError> {
        self.tap.lock().inner.sample_event(queue, kind, address, render_backends, memory)
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
