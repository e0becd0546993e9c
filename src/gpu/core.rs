//! The scheduler: 57 queues, their submissions and waits, and the slice —
//! one queue running a bounded number of packets — that both modes are made
//! of. A slice has three parts: [`Sched::begin_slice`] under the scheduler
//! lock (start the next submission, take the queue's processor out),
//! [`run_slice`] without it (packets against the shared memory, backend and
//! shader registry), and [`Sched::end_slice`] under the lock again (put the
//! processor back, complete or suspend, wake the queues whose watched bytes
//! the slice wrote). The deterministic mode runs the three back to back on
//! the caller's thread; the threaded mode's workers release the lock for the
//! middle part, so slices of different queues run in parallel.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use parking_lot::Mutex;
use tracing::Span;

use crate::backend::{Backend, QueueId};
use crate::memory::GuestMemory;
use crate::packet::body::PollTarget;
use crate::processor::{Env, GlobalState, Pm4Error, ProcessStatus, Processor, ProcessorConfig, SuspendReason};
use crate::shader::ShaderRegistry;

use super::error::{GpuError, QueueStall, StallReport};
use super::handle::{Slot, SubmissionId, SubmissionReport};
use super::tap::{QueueBackend, SliceBackend, Tap, Tracked, WriteLog};
use super::watch::{RecentWrites, Watch, WatchIndex};
use super::{GpuStats, QueueStatus, RunStatus};

/// A submission accepted from the host, not started yet.
pub(crate) struct PendingSubmission {
    pub(crate) id: SubmissionId,
    pub(crate) queue: usize,
    pub(crate) address: u64,
    pub(crate) size_dw: u32,
    pub(crate) slot: Arc<Slot<SubmissionReport>>,
}

/// Host operations of the deterministic mode, in the order the host made
/// them (the trace format's WRIT rule orders writes with submissions).
pub(crate) enum HostOp {
    Submit(PendingSubmission),
    Write { address: u64, bytes: HostBytes, slot: Arc<Slot<()>> },
}

/// The bytes of a queued host write: held in place up to 16 (a label, a
/// fence value, a register-sized store: most writes), on the heap beyond.
pub(crate) enum HostBytes {
    Inline { len: u8, bytes: [u8; 16] },
    Heap(Vec<u8>),
}

impl HostBytes {
    pub(crate) fn new(data: &[u8]) -> Self {
        let mut bytes = [0u8; 16];
        match (bytes.get_mut(..data.len()), u8::try_from(data.len())) {
            (Some(head), Ok(len)) => {
                head.copy_from_slice(data);
                HostBytes::Inline { len, bytes }
            }
            _ => HostBytes::Heap(data.to_vec()),
        }
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            HostBytes::Inline { len, bytes } => bytes.get(..usize::from(*len)).unwrap_or_default(),
            HostBytes::Heap(bytes) => bytes,
        }
    }
}

/// Processor counters when a submission started, for its report.
#[derive(Clone, Copy)]
struct Baseline {
    packets: u64,
    dwords: u64,
    waits: u64,
    fences: u64,
    draws: u64,
    dispatches: u64,
}

impl Baseline {
    fn of(p: &Processor) -> Self {
        let s = p.stats();
        Self {
            packets: s.packets,
            dwords: s.dwords,
            waits: s.waits,
            fences: s.fences,
            draws: s.draws,
            dispatches: s.dispatches,
        }
    }
}

/// The submission a processor is running.
struct Running {
    sub: PendingSubmission,
    span: Span,
    base: Baseline,
    slices: u64,
}

impl Running {
    fn report(&self, p: &Processor) -> SubmissionReport {
        let s = p.stats();
        let b = self.base;
        SubmissionReport {
            id: self.sub.id,
            queue: p.queue(),
            address: self.sub.address,
            size_dw: self.sub.size_dw,
            packets: s.packets.wrapping_sub(b.packets),
            dwords: s.dwords.wrapping_sub(b.dwords),
            waits: s.waits.wrapping_sub(b.waits),
            fences: s.fences.wrapping_sub(b.fences),
            draws: s.draws.wrapping_sub(b.draws),
            dispatches: s.dispatches.wrapping_sub(b.dispatches),
            slices: self.slices,
        }
    }
}

/// The bytes whose change may end a wait on memory, as a watch.
fn memory_watch(reason: &SuspendReason) -> Option<Watch> {
    let range = |a: u64, len: u64| Some(Watch::Range(a, a.saturating_add(len)));
    match *reason {
        SuspendReason::WaitRegMem { target: PollTarget::Memory(a), is_64, .. } => range(a, if is_64 { 8 } else { 4 }),
        // 32- or 64-bit: watch both.
        SuspendReason::AtomicLoop { address, .. } => range(address, 8),
        SuspendReason::Rewind { address } => range(address, 4),
        SuspendReason::MemSemaphore { address } => range(address, 8),
        // The ZPASS record spans every render backend: any write.
        SuspendReason::Predication { .. } => Some(Watch::AnyWrite),
        _ => None,
    }
}

fn watch_for(reason: &SuspendReason, processor: &Processor) -> Watch {
    if let Some(watch) = memory_watch(reason) {
        return watch;
    }
    match reason {
        // GPU-wide registers: any queue's write may end it (the count of
        // changes is filled in when the wait is recorded).
        SuspendReason::WaitRegMem { target: PollTarget::Register(r), .. } if GlobalState::is_uconfig(*r) => {
            Watch::Uconfig(0)
        }
        SuspendReason::WaitRegMem { target: PollTarget::Register(_), .. } => Watch::Host,
        // The drawing engine waits on the constant engine, which may wait on memory.
        _ => processor.constant_engine().suspended.as_ref().and_then(memory_watch).unwrap_or(Watch::AnyWrite),
    }
}

/// A queue's processor, created by the queue's first use (the 56 compute
/// queues a program never submits to cost no memory), and out on a worker
/// while a slice runs.
pub(crate) struct LazyProcessor {
    id: QueueId,
    config: Arc<ProcessorConfig>,
    global: Arc<GlobalState>,
    inner: Option<Box<Processor>>,
    /// True while a slice has the processor.
    out: bool,
}

impl LazyProcessor {
    /// The processor, if the queue has been used and no slice has it.
    pub(crate) fn get(&self) -> Option<&Processor> {
        self.inner.as_deref()
    }

    /// The processor, created on first use; `None` while a slice has it.
    pub(crate) fn get_mut(&mut self) -> Option<&mut Processor> {
        if self.out {
            return None;
        }
        let (id, config, global) = (self.id, &self.config, &self.global);
        Some(self.inner.get_or_insert_with(|| {
            Box::new(Processor::with_global(id, ProcessorConfig::clone(config), Arc::clone(global)))
        }))
    }

    /// True while a slice has the processor.
    pub(crate) fn is_out(&self) -> bool {
        self.out
    }

    fn take(&mut self) -> Option<Box<Processor>> {
        self.get_mut()?;
        let taken = self.inner.take();
        self.out = taken.is_some();
        taken
    }

    fn put(&mut self, processor: Box<Processor>) {
        self.inner = Some(processor);
        self.out = false;
    }

    fn queue(&self) -> QueueId {
        self.id
    }

    fn abort(&mut self) {
        if let Some(p) = self.inner.as_mut() {
            p.abort();
        }
    }
}

pub(crate) struct QueueSlot {
    pub(crate) processor: LazyProcessor,
    /// Where the queue's backend calls go (out with the processor while a
    /// slice runs).
    backend: QueueBackend,
    fifo: VecDeque<PendingSubmission>,
    running: Option<Running>,
    /// Set while suspended and not yet woken.
    wait: Option<(SuspendReason, Watch)>,
    /// The host aborted the running submission while a slice had it.
    abort_requested: bool,
    span: Span,
}

impl QueueSlot {
    fn runnable(&self) -> bool {
        !self.processor.is_out()
            && match self.running {
                Some(_) => self.wait.is_none(),
                None => !self.fifo.is_empty(),
            }
    }

    fn has_work(&self) -> bool {
        self.running.is_some() || !self.fifo.is_empty()
    }
}

/// One queue's slice in progress: what [`run_slice`] needs without the lock.
pub(crate) struct Ticket {
    queue: usize,
    processor: Box<Processor>,
    backend: QueueBackend,
    submission: SubmissionId,
    span: Span,
    /// [`RecentWrites::seq`] when the slice began.
    seen: u64,
    /// [`GlobalState::uconfig_writes`] when the slice began.
    uconfig_seen: u64,
    slice_packets: u64,
    /// The processor's packet and dword counts when the slice began (for
    /// [`GpuStats::packets`](super::GpuStats::packets) and `dwords`).
    counts: (u64, u64),
}

/// What the middle of a slice ended with.
pub(crate) type SliceResult = Result<ProcessStatus, SliceFailure>;

/// Why a slice stopped its submission.
pub(crate) enum SliceFailure {
    Processor(Pm4Error),
    /// The backend (or a bug) panicked; the message, if it had one.
    Panicked(String),
}

/// The packets of a slice by circumstance (see [`super::GpuConfig`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SliceSizes {
    /// [`super::GpuConfig::slice_packets`].
    pub(crate) slice: u64,
    /// [`super::GpuConfig::busy_slice_packets`].
    pub(crate) busy: u64,
    /// [`super::GpuConfig::lone_slice_packets`].
    pub(crate) lone: u64,
}

// One bit per queue in `Sched::ready`.
const _: () = assert!(QueueId::COUNT <= 64);

/// Queues, host operations and wait bookkeeping, behind the scheduler lock.
/// Dropping it completes every pending handle with [`GpuError::ShutDown`].
pub(crate) struct Sched {
    pub(crate) queues: Vec<QueueSlot>,
    ops: VecDeque<HostOp>,
    /// Round-robin position: the first queue looked at next.
    cursor: usize,
    /// Bit `q` set while queue `q` is runnable ([`QueueSlot::runnable`],
    /// kept by [`Sched::refresh`] after each change): the next queue is
    /// found without looking at all 57 under the lock.
    ready: u64,
    /// Bit `q` set while queue `q` has work ([`QueueSlot::has_work`]: a
    /// submission running or queued), kept with `ready`.
    busy: u64,
    slice_packets: u64,
    /// Threaded mode: a slice's packets while no queue waits (at least
    /// `slice_packets`).
    busy_slice_packets: u64,
    /// Deterministic mode: a slice's packets while no other queue has work
    /// (at least `slice_packets`).
    lone_slice_packets: u64,
    watches: WatchIndex,
    recent: RecentWrites,
    /// Record writes in `recent` (threaded mode: slices overlap).
    concurrent: bool,
    /// Queues with `wait` set.
    suspended: usize,
    /// Slices in progress.
    pub(crate) in_flight: usize,
    /// Host threads waiting for a slice to give a processor back.
    pub(crate) processor_waiters: usize,
    pub(crate) stats: GpuStats,
    /// Scratch list of queues to wake.
    woken: Vec<usize>,
    /// Counts stall episodes: bumped when the GPU becomes stalled, so a
    /// stall is reported once and a stall timeout applies to one episode.
    pub(crate) stall_episode: u64,
    /// True while the current stall episode lasts.
    pub(crate) stalled: bool,
    /// When the current stall episode began.
    pub(crate) stall_since: Option<std::time::Instant>,
    /// The UCONFIG registers and GDS every queue shares.
    pub(crate) global: Arc<GlobalState>,
    /// Queues waiting on a UCONFIG register.
    uconfig_waiters: usize,
    /// Deterministic mode: the write log [`step`]'s slices share (kept, so
    /// a run does not clear a new one).
    step_log: Option<Box<WriteLog>>,
}

impl Drop for Sched {
    fn drop(&mut self) {
        self.cancel_all(&GpuError::ShutDown);
    }
}

/// What [`step`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Ran a slice or applied a host write.
    Ran,
    /// Nothing to do.
    Idle,
    /// Work is left and none of it can run without the host.
    Stalled,
}

impl Sched {
    pub(crate) fn new(config: &ProcessorConfig, slices: SliceSizes, concurrent: bool) -> Self {
        let slice_packets = slices.slice.max(1);
        let global = Arc::new(GlobalState::new(config.gds_bytes));
        let config = Arc::new(config.clone());
        let queues = (0..QueueId::COUNT)
            .map(|q| {
                let id = QueueId(q);
                QueueSlot {
                    processor: LazyProcessor {
                        id,
                        config: Arc::clone(&config),
                        global: Arc::clone(&global),
                        inner: None,
                        out: false,
                    },
                    backend: QueueBackend::Unasked,
                    fifo: VecDeque::new(),
                    running: None,
                    wait: None,
                    abort_requested: false,
                    span: tracing::info_span!("queue", queue = %id),
                }
            })
            .collect();
        Self {
            queues,
            ops: VecDeque::new(),
            cursor: 0,
            ready: 0,
            busy: 0,
            slice_packets,
            busy_slice_packets: slices.busy.max(slice_packets),
            lone_slice_packets: slices.lone.max(slice_packets),
            watches: WatchIndex::default(),
            recent: RecentWrites::default(),
            concurrent,
            suspended: 0,
            in_flight: 0,
            processor_waiters: 0,
            stats: GpuStats::default(),
            woken: Vec::new(),
            stall_episode: 0,
            stalled: false,
            stall_since: None,
            global,
            uconfig_waiters: 0,
            step_log: None,
        }
    }

    pub(crate) fn push(&mut self, op: HostOp) {
        self.ops.push_back(op);
    }

    pub(crate) fn enqueue(&mut self, sub: PendingSubmission) {
        let queue = sub.queue;
        match self.queues.get_mut(queue) {
            Some(q) => {
                self.stats.submissions += 1;
                q.fifo.push_back(sub);
                self.refresh(queue);
            }
            None => {
                let queue = sub.queue as u32;
                sub.slot.complete(Err(GpuError::QueueOutOfRange { queue }));
            }
        }
    }

    /// Releases the submissions at the head of the host operations.
    fn release(&mut self) {
        while matches!(self.ops.front(), Some(HostOp::Submit(_))) {
            if let Some(HostOp::Submit(sub)) = self.ops.pop_front() {
                self.enqueue(sub);
            }
        }
    }

    /// Notes whether `queue` is runnable now (after any change to it).
    fn refresh(&mut self, queue: usize) {
        let slot = self.queues.get(queue);
        let bit = 1u64.checked_shl(queue as u32).unwrap_or(0);
        if slot.is_some_and(QueueSlot::runnable) {
            self.ready |= bit;
        } else {
            self.ready &= !bit;
        }
        if slot.is_some_and(QueueSlot::has_work) {
            self.busy |= bit;
        } else {
            self.busy &= !bit;
        }
    }

    /// The first runnable queue at or after the round-robin cursor.
    pub(crate) fn pick(&self) -> Option<usize> {
        let at_or_after = self.ready & u64::MAX.checked_shl(self.cursor as u32).unwrap_or(0);
        let pick = [at_or_after, self.ready].into_iter().find(|&m| m != 0).map(|m| m.trailing_zeros() as usize);
        debug_assert_eq!(pick, {
            let n = self.queues.len();
            (0..n).map(|i| (self.cursor + i) % n).find(|&q| self.queues.get(q).is_some_and(QueueSlot::runnable))
        });
        pick
    }

    fn has_work(&self) -> bool {
        debug_assert_eq!(self.busy != 0, self.queues.iter().any(QueueSlot::has_work));
        self.busy != 0
    }

    /// No slice runs and none can start.
    pub(crate) fn quiescent(&self) -> bool {
        self.in_flight == 0 && self.pick().is_none()
    }

    /// Deterministic mode: a host write made now would be the next thing a
    /// step does (no host operation is pending and no queue can run), so
    /// it may be applied at once.
    pub(crate) fn host_write_is_next(&self) -> bool {
        self.ops.is_empty() && self.quiescent()
    }

    fn wake(&mut self, queue: usize) -> bool {
        let Some(q) = self.queues.get_mut(queue) else {
            return false;
        };
        let Some((_, watch)) = q.wait.take() else {
            return false;
        };
        if let Watch::Uconfig(_) = watch {
            self.uconfig_waiters = self.uconfig_waiters.saturating_sub(1);
        }
        self.watches.remove(queue, watch);
        self.suspended = self.suspended.saturating_sub(1);
        self.stats.wakes += 1;
        self.refresh(queue);
        true
    }

    fn wake_listed(&mut self, skip: Option<usize>) -> usize {
        let mut woken = std::mem::take(&mut self.woken);
        // A queue listed twice wakes once: the second `wake` finds no wait.
        let mut count = 0;
        for &queue in &woken {
            if Some(queue) != skip && self.wake(queue) {
                count += 1;
            }
        }
        woken.clear();
        self.woken = woken;
        count
    }

    /// A write of `[start, end)` happened (a packet's or the host's): wakes
    /// the suspended queues (except `skip`) whose watch it overlaps. Returns
    /// how many woke.
    pub(crate) fn wrote(&mut self, start: u64, end: u64, skip: Option<usize>) -> usize {
        if self.concurrent {
            self.recent.record(start, end);
        }
        if self.suspended == 0 {
            return 0;
        }
        self.watches.overlapping(start, end, &mut self.woken);
        self.wake_listed(skip)
    }

    /// Anything may have been written: wakes every queue watching memory.
    fn wrote_anything(&mut self, skip: Option<usize>) -> usize {
        self.wrote(0, u64::MAX, skip);
        self.watches.all(&mut self.woken);
        self.wake_listed(skip)
    }

    fn wake_for_log(&mut self, log: &WriteLog, skip: Option<usize>) -> usize {
        match log.ranges() {
            Some(ranges) => ranges.iter().map(|&(start, end)| self.wrote(start, end, skip)).sum(),
            None => self.wrote_anything(skip),
        }
    }

    /// Wakes the queues waiting on a UCONFIG register that changed since
    /// they looked. Returns how many woke.
    pub(crate) fn wake_uconfig_watchers(&mut self) -> usize {
        if self.uconfig_waiters == 0 {
            return 0;
        }
        let now = self.global.uconfig_writes();
        let mut count = 0;
        for queue in 0..self.queues.len() {
            let changed = matches!(
                self.queues.get(queue).and_then(|q| q.wait),
                Some((_, Watch::Uconfig(seen))) if seen != now
            );
            if changed && self.wake(queue) {
                count += 1;
            }
        }
        count
    }

    /// The host changed state behind the scheduler's back (memory, registers,
    /// shaders): every suspended queue is checked again.
    pub(crate) fn wake_all(&mut self) -> usize {
        if self.concurrent {
            self.recent.record(0, u64::MAX);
        }
        let mut count = 0;
        for queue in 0..self.queues.len() {
            if self.wake(queue) {
                count += 1;
            }
        }
        count
    }

    /// Re-checks one queue (its registers changed).
    pub(crate) fn wake_queue(&mut self, queue: usize) -> bool {
        self.wake(queue)
    }

    fn finish(&mut self, queue: usize, processor: &Processor, result: Result<(), GpuError>) {
        self.wake(queue);
        let Some(q) = self.queues.get_mut(queue) else {
            return;
        };
        let Some(running) = q.running.take() else {
            return;
        };
        self.refresh(queue);
        let outcome = match result {
            Ok(()) => {
                self.stats.completed += 1;
                let report = running.report(processor);
                tracing::debug!(parent: &running.span, packets = report.packets, slices = report.slices, "submission completed");
                Ok(report)
            }
            Err(e) => {
                self.stats.failed += 1;
                tracing::warn!(parent: &running.span, error = %e, "submission failed");
                Err(e)
            }
        };
        running.sub.slot.complete(outcome);
    }

    /// The stall, if every queue with work is suspended and no host
    /// operation is pending.
    pub(crate) fn stall_report(&self) -> Option<StallReport> {
        if !self.ops.is_empty() || !self.quiescent() || !self.has_work() {
            return None;
        }
        Some(self.collect_stall())
    }

    /// The suspended queues, one entry each (only queues with work are
    /// looked at).
    fn collect_stall(&self) -> StallReport {
        let with_work = std::iter::successors(Some(self.busy), |&rest| Some(rest & rest.wrapping_sub(1)))
            .take_while(|&rest| rest != 0)
            .filter_map(|rest| self.queues.get(rest.trailing_zeros() as usize));
        let queues = with_work
            .filter_map(|q| {
                let running = q.running.as_ref()?;
                let (reason, _) = q.wait?;
                let processor = q.processor.get()?;
                Some(QueueStall {
                    queue: q.processor.queue(),
                    submission: running.sub.id,
                    address: running.sub.address,
                    size_dw: running.sub.size_dw,
                    packet_address: processor.execution().top().map(|c| c.address()),
                    reason,
                    constant_engine: processor.constant_engine().suspended,
                    queued: q.fifo.len(),
                })
            })
            .collect();
        StallReport { queues }
    }

    pub(crate) fn run_status(&self) -> RunStatus {
        match self.stall_report() {
            Some(report) => RunStatus::Stalled(report),
            None if self.has_work() || !self.ops.is_empty() => RunStatus::Running,
            None => RunStatus::Idle,
        }
    }

    pub(crate) fn queue_status(&self, queue: usize) -> Option<QueueStatus> {
        let q = self.queues.get(queue)?;
        Some(QueueStatus {
            running: q.running.as_ref().map(|r| r.sub.id),
            suspended: q.wait.map(|(reason, _)| reason),
            queued: q.fifo.len(),
        })
    }

    /// Aborts the running submission of `queue` (at the end of its slice if
    /// one is in progress).
    pub(crate) fn abort(&mut self, queue: usize) -> Option<SubmissionId> {
        let q = self.queues.get_mut(queue)?;
        let id = q.running.as_ref()?.sub.id;
        if q.processor.is_out() {
            q.abort_requested = true;
            return Some(id);
        }
        self.abort_now(queue, GpuError::Aborted)
    }

    fn abort_now(&mut self, queue: usize, error: impl FnOnce(SubmissionId) -> GpuError) -> Option<SubmissionId> {
        self.wake(queue);
        let q = self.queues.get_mut(queue)?;
        q.abort_requested = false;
        let running = q.running.take()?;
        q.processor.abort();
        self.refresh(queue);
        self.stats.aborted += 1;
        let id = running.sub.id;
        tracing::info!(parent: &running.span, "submission aborted");
        running.sub.slot.complete(Err(error(id)));
        Some(id)
    }

    /// The embedder declared the current stall a deadlock: every suspended
    /// submission fails with [`GpuError::Deadlock`] and its queue goes on
    /// with its next submission. Returns the report, or `None` when the GPU
    /// is not stalled.
    pub(crate) fn declare_deadlock(&mut self) -> Option<StallReport> {
        let report = self.stall_report()?;
        for entry in &report.queues {
            let queue = entry.queue.0 as usize;
            self.abort_now(queue, |_| GpuError::Deadlock(report.clone()));
        }
        self.stalled = false;
        self.stall_since = None;
        Some(report)
    }

    /// Completes everything pending with `error`: running submissions are
    /// stopped where they are (between packets), queued ones never start,
    /// host writes not applied yet are dropped.
    pub(crate) fn cancel_all(&mut self, error: &GpuError) {
        for q in &mut self.queues {
            if let Some(running) = q.running.take() {
                q.processor.abort();
                running.sub.slot.complete(Err(error.clone()));
            }
            q.wait = None;
            for sub in q.fifo.drain(..) {
                sub.slot.complete(Err(error.clone()));
            }
        }
        self.watches = WatchIndex::default();
        self.ready = 0;
        self.busy = 0;
        self.suspended = 0;
        self.uconfig_waiters = 0;
        for op in self.ops.drain(..) {
            match op {
                HostOp::Submit(sub) => {
                    sub.slot.complete(Err(error.clone()));
                }
                HostOp::Write { slot, .. } => {
                    slot.complete(Err(error.clone()));
                }
            }
        }
    }

    /// Starts a slice of `queue`: its next submission if none runs, then
    /// takes its processor out. `None` when there is nothing to run (the
    /// submission could not start: its handle is completed).
    pub(crate) fn begin_slice(&mut self, queue: usize) -> Option<Ticket> {
        let ticket = self.start_slice(queue);
        self.refresh(queue);
        ticket
    }

    fn start_slice(&mut self, queue: usize) -> Option<Ticket> {
        self.cursor = (queue + 1) % self.queues.len().max(1);
        self.stats.slices += 1;
        self.stalled = false;
        self.stall_since = None;
        let q = self.queues.get_mut(queue)?;
        if q.running.is_none() {
            let sub = q.fifo.pop_front()?;
            let Some(processor) = q.processor.get_mut() else {
                q.fifo.push_front(sub);
                return None;
            };
            if let Err(e) = processor.submit(sub.address, sub.size_dw) {
                self.stats.failed += 1;
                let error = GpuError::Processor { queue: q.processor.queue(), submission: sub.id, source: e };
                sub.slot.complete(Err(error));
                return None;
            }
            let span = tracing::info_span!(
                parent: &q.span,
                "submission",
                id = sub.id.0,
                address = format_args!("{:#x}", sub.address),
                size_dw = sub.size_dw
            );
            q.running = Some(Running { base: Baseline::of(processor), sub, span, slices: 0 });
        }
        let running = q.running.as_mut()?;
        let processor = q.processor.take()?;
        running.slices += 1;
        self.in_flight += 1;
        let counts = (processor.stats().packets, processor.stats().dwords);
        Some(Ticket {
            counts,
            queue,
            processor,
            backend: std::mem::take(&mut q.backend),
            submission: running.sub.id,
            span: running.span.clone(),
            seen: self.recent.seq(),
            uconfig_seen: self.global.uconfig_writes(),
            // No queue waits for a write this slice may make (threaded
            // mode), or no other queue could run before it ends anyway
            // (deterministic mode): fewer, longer slices, so less scheduling
            // per packet.
            slice_packets: if self.concurrent {
                if self.suspended == 0 {
                    self.busy_slice_packets
                } else {
                    self.slice_packets
                }
            } else if self.busy & !1u64.checked_shl(queue as u32).unwrap_or(0) == 0 {
                self.lone_slice_packets
            } else {
                self.slice_packets
            },
        })
    }

    /// Ends a slice: puts the processor back, completes, fails or suspends
    /// the submission, and wakes the queues whose watched bytes the slice
    /// wrote. Returns how many queues woke.
    pub(crate) fn end_slice(&mut self, ticket: Ticket, result: SliceResult, log: &WriteLog) -> usize {
        let Ticket { queue, mut processor, backend, submission, span, seen, uconfig_seen, counts, .. } = ticket;
        self.in_flight = self.in_flight.saturating_sub(1);
        if let Some(q) = self.queues.get_mut(queue) {
            q.backend = backend;
        }
        self.stats.packets += processor.stats().packets.wrapping_sub(counts.0);
        self.stats.dwords += processor.stats().dwords.wrapping_sub(counts.1);
        let id = processor.queue();
        let outcome = match result {
            Ok(status) => Ok(status),
            Err(SliceFailure::Processor(source)) => Err(GpuError::Processor { queue: id, submission, source }),
            Err(SliceFailure::Panicked(message)) => {
                processor.abort();
                Err(GpuError::BackendPanicked { queue: id, submission, message })
            }
        };
        let mut woken = self.wake_for_log(log, Some(queue));
        match outcome {
            Ok(ProcessStatus::Yielded) => self.put_back(queue, processor),
            Ok(ProcessStatus::Suspended(reason)) => {
                tracing::trace!(parent: &span, %reason, "suspended");
                let mut watch = watch_for(&reason, &processor);
                if let Watch::Uconfig(since) = &mut watch {
                    // Slices overlap in threaded mode: a change since this
                    // slice began may have come after the wait's read, so it
                    // counts (at worst the wait is checked once more).
                    *since = if self.concurrent { uconfig_seen } else { self.global.uconfig_writes() };
                }
                self.put_back(queue, processor);
                // A write since the slice began may already have changed
                // what it read (another queue, or the CPU): look again.
                let raced = self.concurrent && self.recent.hit_since(seen, &watch);
                if let Some(q) = self.queues.get_mut(queue) {
                    if !raced {
                        if q.wait.replace((reason, watch)).is_none() {
                            self.suspended += 1;
                            if let Watch::Uconfig(_) = watch {
                                self.uconfig_waiters += 1;
                            }
                        }
                        self.watches.insert(queue, watch);
                    }
                }
            }
            Ok(ProcessStatus::Completed | ProcessStatus::Idle) => {
                self.finish(queue, &processor, Ok(()));
                self.put_back(queue, processor);
            }
            Err(error) => {
                self.finish(queue, &processor, Err(error));
                self.put_back(queue, processor);
            }
        }
        woken += self.wake_uconfig_watchers();
        if self.queues.get(queue).is_some_and(|q| q.abort_requested) {
            self.abort_now(queue, GpuError::Aborted);
        }
        self.refresh(queue);
        woken += usize::from(self.ready & 1u64.checked_shl(queue as u32).unwrap_or(0) != 0);
        woken
    }

    fn put_back(&mut self, queue: usize, processor: Box<Processor>) {
        if let Some(q) = self.queues.get_mut(queue) {
            q.processor.put(processor);
        }
        self.refresh(queue);
    }
}

/// Everything a slice needs besides the scheduler: shared by the [`super::Gpu`]
/// and its workers.
pub(crate) struct Parts<M, B> {
    pub(crate) memory: M,
    pub(crate) backend: Mutex<Tap<B>>,
    pub(crate) shaders: ShaderRegistry,
}

/// The text of a panic payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-text panic payload".to_string()
    }
}

/// The middle of a slice, without the scheduler lock: the queue's packets
/// against shared memory, backend and shaders. Writes are noted in `log`; a
/// panic (a backend's, or a bug) is caught here and fails the submission.
/// With `hold_backend` (deterministic mode: no other slice runs) the GPU's
/// backend is locked once for the slice, not once per call.
pub(crate) fn run_slice<M: GuestMemory, B: Backend>(
    parts: &Parts<M, B>,
    ticket: &mut Ticket,
    log: &mut WriteLog,
    hold_backend: bool,
) -> SliceResult {
    log.clear();
    let _entered = ticket.span.enter();
    let tracked = Tracked::new(&parts.memory, log);
    let Ticket { processor, backend: queue_backend, submission, slice_packets, .. } = ticket;
    let result = catch_unwind(AssertUnwindSafe(|| {
        queue_backend.settle(&parts.backend, processor.queue());
        let own = match queue_backend {
            QueueBackend::Own(own) => Some(&mut **own),
            _ => None,
        };
        let mut backend = SliceBackend::new(&parts.backend, own, hold_backend, *submission);
        let mut env = Env { memory: &tracked, backend: &mut backend, shaders: &parts.shaders };
        processor.process_slice(&mut env, *slice_packets)
    }));
    match result {
        Ok(Ok(status)) => Ok(status),
        Ok(Err(error)) => Err(SliceFailure::Processor(error)),
        Err(payload) => Err(SliceFailure::Panicked(panic_message(&*payload))),
    }
}

/// One deterministic scheduling step on the caller's thread: release
/// submissions, run one slice of the next runnable queue; when none can run,
/// apply the next host write and try again.
pub(crate) fn step<M: GuestMemory, B: Backend>(parts: &Parts<M, B>, sched: &mut Sched) -> Step {
    loop {
        sched.release();
        if let Some(queue) = sched.pick() {
            if let Some(mut ticket) = sched.begin_slice(queue) {
                let mut log = sched.step_log.take().unwrap_or_default();
                // No other slice runs: the backend stays locked for this one.
                let result = run_slice(parts, &mut ticket, &mut log, true);
                sched.end_slice(ticket, result, &log);
                sched.step_log = Some(log);
            }
            return Step::Ran;
        }
        match sched.ops.pop_front() {
            Some(HostOp::Submit(sub)) => sched.enqueue(sub),
            Some(HostOp::Write { address, bytes, slot }) => {
                slot.complete(apply_write(parts, sched, address, bytes.as_slice()));
                return Step::Ran;
            }
            None => return if sched.has_work() { Step::Stalled } else { Step::Idle },
        }
    }
}

/// Applies a host write of the host sequence (the WRIT rule); shader
/// containers it overlaps are decoded again at their next use, and the
/// queues watching its bytes wake.
pub(crate) fn apply_write<M: GuestMemory, B>(
    parts: &Parts<M, B>,
    sched: &mut Sched,
    address: u64,
    bytes: &[u8],
) -> Result<(), GpuError> {
    let result = parts.memory.write_bytes(address, bytes);
    sched.stats.host_writes += 1;
    let len = bytes.len() as u64;
    let outcome = match result {
        Ok(()) => {
            parts.shaders.invalidate_range(address, len);
            Ok(())
        }
        Err(source) => {
            sched.stats.host_write_errors += 1;
            tracing::warn!(address, len, error = %source, "host write failed");
            Err(GpuError::HostWrite { address, len, source })
        }
    };
    // A refused write may have stored a prefix: its watchers look again.
    sched.wrote(address, address.saturating_add(len), None);
    outcome
}
