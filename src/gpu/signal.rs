//! What the GPU tells the host without being asked: interrupts (fences
//! with an interrupt select) and stall reports, each on channels the host
//! reads through the crate's own receiver types.
//!
//! Each queue has one interrupt channel, kept to
//! [`GpuConfig::interrupt_capacity`](super::GpuConfig::interrupt_capacity)
//! entries: when it is full, the oldest interrupt is dropped to make room
//! and counted (per queue in [`InterruptReceiver::dropped`], over the GPU in
//! [`GpuStats::interrupts_dropped`](super::GpuStats::interrupts_dropped)),
//! and the first drop of a run of them is logged at `warn`. Receivers of one
//! queue are clones of one receiver: each interrupt goes to exactly one of
//! them, whichever asks first. Shutting the GPU down closes every channel:
//! a receiver then gives what is left, then [`GpuError::ShutDown`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError, TrySendError};
use parking_lot::Mutex;

use crate::backend::Fence;

use super::error::{GpuError, StallReport};
use super::handle::SubmissionId;

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

/// Counts of one channel, shared by its sender side and its receivers.
#[derive(Debug, Default)]
struct LineCounts {
    dropped: AtomicU64,
    /// A drop was logged and no entry was taken since.
    warned: AtomicBool,
}

/// One queue's interrupt channel.
struct InterruptLine {
    tx: Sender<Interrupt>,
    /// Kept to drop the oldest entry of a full channel.
    rx: Receiver<Interrupt>,
    counts: Arc<LineCounts>,
}

/// The interrupt channels of every queue (each made by its first use),
/// behind their own lock: raising an interrupt or handing out a receiver
/// never waits for the backend.
pub(crate) struct InterruptLines {
    lines: Vec<Option<InterruptLine>>,
    capacity: usize,
    /// Set by shutdown: no channel is made or kept any more.
    closed: bool,
    raised: u64,
    dropped: u64,
}

impl InterruptLines {
    /// Channels of `capacity` entries (at least 1) for `queues` queues.
    pub(crate) fn new(queues: usize, capacity: usize) -> Self {
        let mut lines = Vec::new();
        lines.resize_with(queues, || None);
        Self { lines, capacity: capacity.max(1), closed: false, raised: 0, dropped: 0 }
    }

    fn line(&mut self, queue: usize) -> Option<&InterruptLine> {
        if self.closed {
            return None;
        }
        let slot = self.lines.get_mut(queue)?;
        Some(slot.get_or_insert_with(|| {
            let (tx, rx) = crossbeam_channel::unbounded();
            InterruptLine { tx, rx, counts: Arc::default() }
        }))
    }

    /// A receiver of `queue`'s interrupts; `None` for a queue out of range
    /// or after shutdown.
    pub(crate) fn receiver(&mut self, queue: usize) -> Option<InterruptReceiver> {
        self.line(queue).map(|l| InterruptReceiver { rx: l.rx.clone(), counts: Arc::clone(&l.counts) })
    }

    /// Interrupts raised and dropped so far.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (self.raised, self.dropped)
    }

    /// Queues `fence`'s interrupt for the host.
    pub(crate) fn raise(&mut self, queue: usize, fence: &Fence, submission: SubmissionId) {
        let (capacity, sequence) = (self.capacity, self.raised);
        let Some(line) = self.line(queue) else {
            return;
        };
        let mut dropped = 0;
        // The host may take entries meanwhile; it never adds any.
        while line.tx.len() >= capacity {
            if line.rx.try_recv().is_err() {
                break;
            }
            dropped += 1;
        }
        if dropped > 0 {
            line.counts.dropped.fetch_add(dropped, Ordering::Relaxed);
            if !line.counts.warned.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    queue = %fence.queue,
                    capacity,
                    "interrupt channel full: the oldest interrupts are dropped (counted in InterruptReceiver::dropped)"
                );
            }
        }
        // The lines hold a receiver, so the channel is never disconnected.
        let _ = line.tx.try_send(Interrupt { sequence, submission, fence: *fence });
        self.raised += 1;
        self.dropped += dropped;
    }

    /// Closes every channel (shutdown): receivers drain what is queued,
    /// then answer [`GpuError::ShutDown`].
    pub(crate) fn close(&mut self) {
        self.closed = true;
        self.lines.iter_mut().for_each(|l| *l = None);
    }
}

/// The host's receiver of one queue's interrupts ([`Gpu::interrupts`](super::Gpu::interrupts)).
/// Clones share the channel: each interrupt goes to one of them.
///
/// ```
/// use std::time::Duration;
/// use pm4core::backend::{NullBackend, QueueId};
/// use pm4core::gpu::{Gpu, GpuConfig, GpuError};
/// use pm4core::memory::{GuestMemory, SparseMemory};
/// use pm4core::packet::builder::{CommandBuffer, Signal};
///
/// let memory = SparseMemory::new();
/// memory.map_zeroed(0, 0x10000).unwrap();
/// let mut cb = CommandBuffer::new();
/// cb.release32(0x8000, 1, Signal::Interrupt).unwrap();
/// memory.write_bytes(0x1000, &cb.to_bytes()).unwrap();
/// let gpu = Gpu::deterministic(memory, NullBackend, GpuConfig::default());
/// let interrupts = gpu.interrupts(QueueId::GRAPHICS).unwrap();
/// gpu.submit(QueueId::GRAPHICS, 0x1000, cb.len_dw()).unwrap();
/// gpu.run_until_idle().unwrap();
/// let interrupt = interrupts.try_recv().unwrap().unwrap();
/// assert_eq!((interrupt.fence.address, interrupt.fence.data), (0x8000, 1));
/// assert_eq!(interrupts.dropped(), 0);
/// gpu.shutdown();
/// assert_eq!(interrupts.recv_timeout(Duration::from_secs(1)), Err(GpuError::ShutDown));
/// ```
#[derive(Clone, Debug)]
pub struct InterruptReceiver {
    rx: Receiver<Interrupt>,
    counts: Arc<LineCounts>,
}

impl InterruptReceiver {
    fn taken(&self) {
        self.counts.warned.store(false, Ordering::Relaxed);
    }

    /// The next interrupt, waiting for it; [`GpuError::ShutDown`] once the
    /// GPU is shut down and nothing is left.
    pub fn recv(&self) -> Result<Interrupt, GpuError> {
        let interrupt = self.rx.recv().map_err(|_| GpuError::ShutDown)?;
        self.taken();
        Ok(interrupt)
    }

    /// The next interrupt, waiting at most `timeout`: `Ok(None)` when none
    /// came, [`GpuError::ShutDown`] once the GPU is shut down and nothing
    /// is left.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<Option<Interrupt>, GpuError> {
        match self.rx.recv_timeout(timeout) {
            Ok(interrupt) => {
                self.taken();
                Ok(Some(interrupt))
            }
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(GpuError::ShutDown),
        }
    }

    /// The next interrupt if one is queued (`Ok(None)` if not).
    pub fn try_recv(&self) -> Result<Option<Interrupt>, GpuError> {
        match self.rx.try_recv() {
            Ok(interrupt) => {
                self.taken();
                Ok(Some(interrupt))
            }
            Err(TryRecvError::Empty) => Ok(None),
            Err(TryRecvError::Disconnected) => Err(GpuError::ShutDown),
        }
    }

    /// The interrupts queued now, taken one by one, without waiting.
    pub fn try_iter(&self) -> impl Iterator<Item = Interrupt> + '_ {
        self.taken();
        self.rx.try_iter()
    }

    /// Interrupts queued and not taken yet.
    pub fn len(&self) -> usize {
        self.rx.len()
    }

    /// True when no interrupt is queued.
    pub fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }

    /// Interrupts of this queue dropped because the channel was full (the
    /// oldest go first), over the GPU's lifetime.
    pub fn dropped(&self) -> u64 {
        self.counts.dropped.load(Ordering::Relaxed)
    }
}

/// Most stall reports kept for the host.
const STALL_CAPACITY: usize = 64;

/// The stall channel: reports a threaded GPU sends once a stall has lasted
/// [`GpuConfig::stall_report_delay`](super::GpuConfig::stall_report_delay).
pub(crate) struct StallLine {
    tx: Mutex<Option<Sender<StallReport>>>,
    rx: Receiver<StallReport>,
    counts: Arc<LineCounts>,
}

impl StallLine {
    pub(crate) fn new() -> Self {
        let (tx, rx) = crossbeam_channel::bounded(STALL_CAPACITY);
        Self { tx: Mutex::new(Some(tx)), rx, counts: Arc::default() }
    }

    /// A receiver of the stall reports.
    pub(crate) fn receiver(&self) -> StallReceiver {
        StallReceiver { rx: self.rx.clone(), counts: Arc::clone(&self.counts) }
    }

    /// Sends `report`; a full channel drops its oldest report (counted).
    pub(crate) fn send(&self, report: StallReport) {
        let tx = self.tx.lock();
        let Some(tx) = tx.as_ref() else { return };
        let mut report = report;
        loop {
            match tx.try_send(report) {
                Ok(()) => return,
                Err(TrySendError::Full(back)) => {
                    report = back;
                    if self.rx.try_recv().is_ok() {
                        self.counts.dropped.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Err(TrySendError::Disconnected(_)) => return,
            }
        }
    }

    /// Closes the channel (shutdown).
    pub(crate) fn close(&self) {
        self.tx.lock().take();
    }

    /// Reports dropped so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.counts.dropped.load(Ordering::Relaxed)
    }
}

/// The host's receiver of stall reports ([`Gpu::stall_reports`](super::Gpu::stall_reports)):
/// each stall that lasts
/// [`GpuConfig::stall_report_delay`](super::GpuConfig::stall_report_delay)
/// is reported once. Up to 64 reports are kept; when full the oldest is
/// dropped and counted ([`StallReceiver::dropped`]). Clones share the
/// channel: each report goes to one of them.
#[derive(Clone, Debug)]
pub struct StallReceiver {
    rx: Receiver<StallReport>,
    counts: Arc<LineCounts>,
}

impl StallReceiver {
    /// The next report, waiting for it; [`GpuError::ShutDown`] once the GPU
    /// is shut down and nothing is left.
    pub fn recv(&self) -> Result<StallReport, GpuError> {
        self.rx.recv().map_err(|_| GpuError::ShutDown)
    }

    /// The next report, waiting at most `timeout` (`Ok(None)` when none came).
    pub fn recv_timeout(&self, timeout: Duration) -> Result<Option<StallReport>, GpuError> {
        match self.rx.recv_timeout(timeout) {
            Ok(report) => Ok(Some(report)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(GpuError::ShutDown),
        }
    }

    /// The next report if one is queued.
    pub fn try_recv(&self) -> Result<Option<StallReport>, GpuError> {
        match self.rx.try_recv() {
            Ok(report) => Ok(Some(report)),
            Err(TryRecvError::Empty) => Ok(None),
            Err(TryRecvError::Disconnected) => Err(GpuError::ShutDown),
        }
    }

    /// The reports queued now, taken one by one, without waiting.
    pub fn try_iter(&self) -> impl Iterator<Item = StallReport> + '_ {
        self.rx.try_iter()
    }

    /// Reports queued and not taken yet.
    pub fn len(&self) -> usize {
        self.rx.len()
    }

    /// True when no report is queued.
    pub fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }

    /// Reports dropped because 64 were waiting.
    pub fn dropped(&self) -> u64 {
        self.counts.dropped.load(Ordering::Relaxed)
    }
}
