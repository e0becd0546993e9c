//! The scheduler: 57 queues, their submissions, the host's operations, and
//! the bookkeeping of waits (who watches which bytes, what a polling round
//! reads, when a stall began), all behind one lock. The slice that both
//! modes are made of is in [`super::slice`].

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use tracing::Span;

use crate::backend::QueueId;
use crate::packet::body::PollTarget;
use crate::processor::{GlobalState, Processor, ProcessorConfig, SuspendReason};

use super::config::{GpuStats, QueueStatus, RunStatus, WaitPolling};
use super::error::{GpuError, QueueStall, StallReport};
use super::handle::{Slot, SubmissionId, SubmissionReport};
use super::poll::{PollSchedule, Probe};
use super::tap::{QueueBackend, WriteLog};
use super::watch::{RecentWrites, Watch, WatchIndex};

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
pub(crate) struct Baseline {
    packets: u64,
    dwords: u64,
    waits: u64,
    fences: u64,
    draws: u64,
    dispatches: u64,
}

impl Baseline {
    pub(crate) fn of(p: &Processor) -> Self {
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
pub(crate) struct Running {
    pub(crate) sub: PendingSubmission,
    pub(crate) span: Span,
    pub(crate) base: Baseline,
    pub(crate) slices: u64,
}

impl Running {
    pub(crate) fn report(&self, p: &Processor) -> SubmissionReport {
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

pub(crate) fn watch_for(reason: &SuspendReason, processor: &Processor) -> Watch {
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

    pub(crate) fn take(&mut self) -> Option<Box<Processor>> {
        self.get_mut()?;
        let taken = self.inner.take();
        self.out = taken.is_some();
        taken
    }

    pub(crate) fn put(&mut self, processor: Box<Processor>) {
        self.inner = Some(processor);
        self.out = false;
    }

    pub(crate) fn queue(&self) -> QueueId {
        self.id
    }

    pub(crate) fn abort(&mut self) {
        if let Some(p) = self.inner.as_mut() {
            p.abort();
        }
    }
}

pub(crate) struct QueueSlot {
    pub(crate) processor: LazyProcessor,
    /// Where the queue's backend calls go (out with the processor while a
    /// slice runs).
    pub(crate) backend: QueueBackend,
    pub(crate) fifo: VecDeque<PendingSubmission>,
    pub(crate) running: Option<Running>,
    /// Set while suspended and not yet woken.
    pub(crate) wait: Option<(SuspendReason, Watch)>,
    /// What a polling round reads for that wait (threaded mode).
    pub(crate) wait_probe: Option<Probe>,
    /// The host aborted the running submission while a slice had it.
    pub(crate) abort_requested: bool,
    pub(crate) span: Span,
}

impl QueueSlot {
    pub(crate) fn runnable(&self) -> bool {
        !self.processor.is_out()
            && match self.running {
                Some(_) => self.wait.is_none(),
                None => !self.fifo.is_empty(),
            }
    }

    pub(crate) fn has_work(&self) -> bool {
        self.running.is_some() || !self.fifo.is_empty()
    }
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
    pub(super) queues: Vec<QueueSlot>,
    pub(super) ops: VecDeque<HostOp>,
    /// Round-robin position: the first queue looked at next.
    pub(super) cursor: usize,
    /// Bit `q` set while queue `q` is runnable ([`QueueSlot::runnable`],
    /// kept by [`Sched::refresh`] after each change): the next queue is
    /// found without looking at all 57 under the lock.
    pub(super) ready: u64,
    /// Bit `q` set while queue `q` has work ([`QueueSlot::has_work`]: a
    /// submission running or queued), kept with `ready`.
    pub(super) busy: u64,
    pub(super) slice_packets: u64,
    /// Threaded mode: a slice's packets while no queue waits (at least
    /// `slice_packets`).
    pub(super) busy_slice_packets: u64,
    /// Deterministic mode: a slice's packets while no other queue has work
    /// (at least `slice_packets`).
    pub(super) lone_slice_packets: u64,
    pub(super) watches: WatchIndex,
    pub(super) recent: RecentWrites,
    /// Record writes in `recent` (threaded mode: slices overlap).
    pub(super) concurrent: bool,
    /// Queues with `wait` set.
    pub(super) suspended: usize,
    /// Slices in progress.
    pub(super) in_flight: usize,
    /// Host threads waiting for a slice to give a processor back.
    pub(super) processor_waiters: usize,
    pub(super) stats: GpuStats,
    /// Scratch list of queues to wake.
    pub(super) woken: Vec<usize>,
    /// Counts stall episodes: bumped when the GPU becomes stalled, so a
    /// stall is reported once and a stall timeout applies to one episode.
    pub(super) stall_episode: u64,
    /// True while the current stall episode lasts.
    pub(super) stalled: bool,
    /// When the current stall episode began.
    pub(super) stall_since: Option<Instant>,
    /// The current stall episode was reported (threaded mode: once it
    /// lasted [`super::GpuConfig::stall_report_delay`]).
    pub(super) stall_reported: bool,
    /// When the next polling round of suspended waits is due.
    pub(super) poll: PollSchedule,
    /// Suspended queues whose wait a polling round reads.
    pub(super) probed: usize,
    /// Threaded mode: an idle worker is parked until the next timed duty
    /// (a polling round, a stall's report or timeout); the others park
    /// until work is offered.
    pub(super) duty_keeper: bool,
    /// The UCONFIG registers and GDS every queue shares.
    pub(super) global: Arc<GlobalState>,
    /// Queues waiting on a UCONFIG register.
    pub(super) uconfig_waiters: usize,
    /// Deterministic mode: the write log [`super::slice::step`]'s slices share (kept, so
    /// a run does not clear a new one).
    pub(super) step_log: Option<Box<WriteLog>>,
}

impl Drop for Sched {
    fn drop(&mut self) {
        self.cancel_all(&GpuError::ShutDown);
    }
}

/// What [`super::slice::step`] did.
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
    pub(crate) fn new(
        config: &ProcessorConfig,
        slices: SliceSizes,
        concurrent: bool,
        polling: Option<WaitPolling>,
    ) -> Self {
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
                    wait_probe: None,
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
            stall_reported: false,
            poll: PollSchedule::new(if concurrent { polling } else { None }),
            probed: 0,
            duty_keeper: false,
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
    pub(super) fn release(&mut self) {
        while matches!(self.ops.front(), Some(HostOp::Submit(_))) {
            if let Some(HostOp::Submit(sub)) = self.ops.pop_front() {
                self.enqueue(sub);
            }
        }
    }

    /// Notes whether `queue` is runnable now (after any change to it).
    pub(super) fn refresh(&mut self, queue: usize) {
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

    pub(super) fn has_work(&self) -> bool {
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

    pub(super) fn wake(&mut self, queue: usize) -> bool {
        let Some(q) = self.queues.get_mut(queue) else {
            return false;
        };
        let Some((_, watch)) = q.wait.take() else {
            return false;
        };
        if let Watch::Uconfig(_) = watch {
            self.uconfig_waiters = self.uconfig_waiters.saturating_sub(1);
        }
        if q.wait_probe.take().is_some() {
            self.probed = self.probed.saturating_sub(1);
            if self.probed == 0 {
                self.poll.idle();
            }
        }
        self.watches.remove(queue, watch);
        self.suspended = self.suspended.saturating_sub(1);
        self.stats.wakes += 1;
        self.refresh(queue);
        true
    }

    /// Records that `queue` suspended with `reason`, woken by `watch`.
    pub(super) fn record_wait(&mut self, queue: usize, reason: SuspendReason, watch: Watch) {
        let probe = if self.poll.enabled() { Probe::of(&reason, &watch) } else { None };
        let Some(q) = self.queues.get_mut(queue) else { return };
        if q.wait.replace((reason, watch)).is_none() {
            self.suspended += 1;
            if let Watch::Uconfig(_) = watch {
                self.uconfig_waiters += 1;
            }
        }
        let had = q.wait_probe.is_some();
        q.wait_probe = probe;
        match (had, probe.is_some()) {
            (false, true) => self.probed += 1,
            (true, false) => self.probed = self.probed.saturating_sub(1),
            _ => {}
        }
        if probe.is_some() {
            self.poll.suspended(Instant::now());
        }
        self.watches.insert(queue, watch);
    }

    /// The probes of every suspended wait a polling round reads, into `out`.
    pub(super) fn probes_into(&self, out: &mut Vec<(usize, Probe)>) {
        out.clear();
        if self.probed == 0 {
            return;
        }
        let with_work = std::iter::successors(Some(self.busy), |&rest| Some(rest & rest.wrapping_sub(1)))
            .take_while(|&rest| rest != 0)
            .map(|rest| rest.trailing_zeros() as usize);
        for queue in with_work {
            if let Some(probe) = self.queues.get(queue).and_then(|q| q.wait_probe) {
                out.push((queue, probe));
            }
        }
    }

    /// Ends a polling round made at `now`: wakes the `fired` queues (still
    /// suspended) and, for the scheduled (`due`) round, schedules the next.
    /// Returns how many woke.
    pub(super) fn poll_round_done(&mut self, now: Instant, fired: &[usize], due: bool) -> usize {
        let mut woke = 0;
        for &queue in fired {
            if self.wake(queue) {
                woke += 1;
            }
        }
        self.stats.poll_rounds += 1;
        self.stats.poll_wakes += woke as u64;
        let waiting = self.probed > 0;
        self.poll.round_done(now, woke > 0, waiting, due);
        woke
    }

    pub(super) fn wake_listed(&mut self, skip: Option<usize>) -> usize {
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
    pub(super) fn wrote_anything(&mut self, skip: Option<usize>) -> usize {
        self.wrote(0, u64::MAX, skip);
        self.watches.all(&mut self.woken);
        self.wake_listed(skip)
    }

    pub(super) fn wake_for_log(&mut self, log: &WriteLog, skip: Option<usize>) -> usize {
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

    pub(super) fn finish(&mut self, queue: usize, processor: &Processor, result: Result<(), GpuError>) {
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

    pub(super) fn abort_now(
        &mut self,
        queue: usize,
        error: impl FnOnce(SubmissionId) -> GpuError,
    ) -> Option<SubmissionId> {
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
        self.end_stall_episode();
        Some(report)
    }

    /// A slice starts, or the stall was declared a deadlock: the stall
    /// episode, if one lasted, is over.
    pub(super) fn end_stall_episode(&mut self) {
        self.stalled = false;
        self.stall_since = None;
        self.stall_reported = false;
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
            q.wait_probe = None;
            for sub in q.fifo.drain(..) {
                sub.slot.complete(Err(error.clone()));
            }
        }
        self.watches = WatchIndex::default();
        self.ready = 0;
        self.busy = 0;
        self.suspended = 0;
        self.uconfig_waiters = 0;
        self.probed = 0;
        self.poll.idle();
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
}
