//! The scheduler: 57 queues, the ordered host operations and the loop that
//! picks which queue runs next. Both modes drive the same [`Core`]; the
//! deterministic mode from the caller's thread, the threaded mode from its
//! worker.

use std::collections::VecDeque;
use std::sync::Arc;

use tracing::Span;

use crate::backend::{Backend, QueueId};
use crate::memory::GuestMemory;
use crate::packet::body::PollTarget;
use crate::processor::{Env, ProcessStatus, Processor, ProcessorConfig, SuspendReason};
use crate::shader::ShaderRegistry;

use super::error::{GpuError, QueueStall, StallReport};
use super::handle::{Slot, SubmissionId, SubmissionReport};
use super::tap::{Tap, Tracked, WriteLog};
use super::{GpuStats, QueueStatus, RunStatus};

/// A submission accepted from the host, not started yet.
pub(crate) struct PendingSubmission {
    pub(crate) id: SubmissionId,
    pub(crate) queue: usize,
    pub(crate) address: u64,
    pub(crate) size_dw: u32,
    pub(crate) slot: Arc<Slot<SubmissionReport>>,
}

/// Host operations, in the order the host made them.
pub(crate) enum HostOp {
    Submit(PendingSubmission),
    Write {
        address: u64,
        bytes: Vec<u8>,
        slot: Arc<Slot<()>>,
    },
    /// Answered when every earlier operation has run as far as it can.
    Sync(Arc<Slot<RunStatus>>),
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

/// What may end a suspension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Watch {
    /// A write overlapping these bytes.
    Range(u64, u64),
    /// Any write to guest memory (waits without an address).
    AnyWrite,
    /// Only the host (a wait on the queue's own register file).
    Host,
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
        SuspendReason::WaitRegMem { target: PollTarget::Register(_), .. } => Watch::Host,
        // The drawing engine waits on the constant engine, which may wait on memory.
        _ => processor.constant_engine().suspended.as_ref().and_then(memory_watch).unwrap_or(Watch::AnyWrite),
    }
}

/// A queue's processor, created by the queue's first use: the 56 compute
/// queues a program never submits to cost no memory.
pub(crate) struct LazyProcessor {
    id: QueueId,
    config: Arc<ProcessorConfig>,
    inner: Option<Box<Processor>>,
}

impl LazyProcessor {
    /// The processor, if the queue has been used.
    pub(crate) fn get(&self) -> Option<&Processor> {
        self.inner.as_deref()
    }

    /// The processor, created on first use.
    pub(crate) fn get_mut(&mut self) -> &mut Processor {
        let (id, config) = (self.id, &self.config);
        self.inner.get_or_insert_with(|| Box::new(Processor::with_config(id, ProcessorConfig::clone(config))))
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
    fifo: VecDeque<PendingSubmission>,
    running: Option<Running>,
    /// Set while suspended and not yet woken.
    wait: Option<(SuspendReason, Watch)>,
    span: Span,
}

impl QueueSlot {
    fn runnable(&self) -> bool {
        match self.running {
            Some(_) => self.wait.is_none(),
            None => !self.fifo.is_empty(),
        }
    }

    fn has_work(&self) -> bool {
        self.running.is_some() || !self.fifo.is_empty()
    }
}

/// Queues and host operations. Dropping it completes every pending handle
/// with [`GpuError::ShutDown`].
pub(crate) struct Sched {
    pub(crate) queues: Vec<QueueSlot>,
    ops: VecDeque<HostOp>,
    /// Round-robin position: the first queue looked at next.
    cursor: usize,
    slice_packets: u64,
    log: WriteLog,
    /// Queues with `wait` set.
    suspended: usize,
    pub(crate) stats: GpuStats,
    /// Handles told about the current stall (threaded mode).
    flagged: Vec<Arc<Slot<SubmissionReport>>>,
}

impl Drop for Sched {
    fn drop(&mut self) {
        self.cancel_all(&GpuError::ShutDown);
    }
}

/// Guest memory, backend, shaders and the scheduler: everything one slice
/// needs, behind one lock.
pub(crate) struct Core<M, B> {
    pub(crate) memory: M,
    pub(crate) backend: Tap<B>,
    pub(crate) shaders: ShaderRegistry,
    pub(crate) sched: Sched,
}

/// What [`Core::step`] did.
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
    pub(crate) fn new(config: &ProcessorConfig, slice_packets: u64) -> Self {
        let config = Arc::new(config.clone());
        let queues = (0..QueueId::COUNT)
            .map(|q| {
                let id = QueueId(q);
                QueueSlot {
                    processor: LazyProcessor { id, config: Arc::clone(&config), inner: None },
                    fifo: VecDeque::new(),
                    running: None,
                    wait: None,
                    span: tracing::info_span!("queue", queue = %id),
                }
            })
            .collect();
        Self {
            queues,
            ops: VecDeque::new(),
            cursor: 0,
            slice_packets: slice_packets.max(1),
            log: WriteLog::default(),
            suspended: 0,
            stats: GpuStats::default(),
            flagged: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, op: HostOp) {
        self.ops.push_back(op);
    }

    fn enqueue(&mut self, sub: PendingSubmission) {
        match self.queues.get_mut(sub.queue) {
            Some(q) => {
                self.stats.submissions += 1;
                q.fifo.push_back(sub);
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

    fn pick(&self) -> Option<usize> {
        let n = self.queues.len();
        (0..n).map(|i| (self.cursor + i) % n).find(|&q| self.queues.get(q).is_some_and(QueueSlot::runnable))
    }

    fn has_work(&self) -> bool {
        self.queues.iter().any(QueueSlot::has_work)
    }

    /// Wakes suspended queues (except `skip`) whose watch the write log hits.
    fn wake_watchers(&mut self, skip: Option<usize>) {
        if self.suspended == 0 || self.log.is_empty() {
            return;
        }
        for (i, q) in self.queues.iter_mut().enumerate() {
            if Some(i) == skip {
                continue;
            }
            let hit = match q.wait {
                Some((_, Watch::Range(start, end))) => self.log.overlaps(start, end),
                Some((_, Watch::AnyWrite)) => true,
                Some((_, Watch::Host)) | None => false,
            };
            if hit {
                q.wait = None;
                self.suspended = self.suspended.saturating_sub(1);
                self.stats.wakes += 1;
            }
        }
    }

    /// The host changed state behind the scheduler's back (memory, registers,
    /// shaders): every suspended queue is checked again.
    pub(crate) fn wake_all(&mut self) {
        for q in &mut self.queues {
            if q.wait.take().is_some() {
                self.stats.wakes += 1;
            }
        }
        self.suspended = 0;
    }

    /// Re-checks one queue (its registers changed).
    pub(crate) fn wake_queue(&mut self, queue: usize) {
        if let Some(q) = self.queues.get_mut(queue) {
            if q.wait.take().is_some() {
                self.suspended = self.suspended.saturating_sub(1);
                self.stats.wakes += 1;
            }
        }
    }

    fn finish(&mut self, queue: usize, result: Result<(), GpuError>) {
        let Some(q) = self.queues.get_mut(queue) else {
            return;
        };
        if q.wait.take().is_some() {
            self.suspended = self.suspended.saturating_sub(1);
        }
        let Some(running) = q.running.take() else {
            return;
        };
        let outcome = match result {
            Ok(()) => {
                self.stats.completed += 1;
                let report = running.report(q.processor.get_mut());
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
        if !self.ops.is_empty() || self.pick().is_some() || !self.has_work() {
            return None;
        }
        Some(self.collect_stall())
    }

    /// The suspended queues, one entry each.
    fn collect_stall(&self) -> StallReport {
        let queues = self
            .queues
            .iter()
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

    /// What a sync answers when it reaches the head of the host operations
    /// and no queue can run: operations after it do not count.
    fn quiescent_status(&self) -> RunStatus {
        if self.has_work() {
            RunStatus::Stalled(self.collect_stall())
        } else {
            RunStatus::Idle
        }
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
            suspended: q.processor.get().and_then(Processor::suspended).filter(|_| q.running.is_some()),
            queued: q.fifo.len(),
        })
    }

    /// Tells every pending submission's handle about the current stall,
    /// found after taking `taken` host commands.
    pub(crate) fn flag_stall(&mut self, taken: u64) {
        self.clear_stall_flags();
        let Some(report) = self.stall_report() else {
            return;
        };
        self.stats.stalls += 1;
        // Normal while the host is about to write a label: not a warning.
        tracing::debug!("{report}");
        let report = Arc::new(report);
        for q in &self.queues {
            for slot in q.running.iter().map(|r| &r.sub.slot).chain(q.fifo.iter().map(|s| &s.slot)) {
                slot.set_stalled(&report, taken);
                self.flagged.push(Arc::clone(slot));
            }
        }
    }

    pub(crate) fn clear_stall_flags(&mut self) {
        for slot in self.flagged.drain(..) {
            slot.clear_stalled();
        }
    }

    /// Aborts the running submission of `queue`.
    pub(crate) fn abort(&mut self, queue: usize) -> Option<SubmissionId> {
        let q = self.queues.get_mut(queue)?;
        let running = q.running.take()?;
        q.processor.abort();
        if q.wait.take().is_some() {
            self.suspended = self.suspended.saturating_sub(1);
        }
        self.stats.aborted += 1;
        let id = running.sub.id;
        tracing::info!(parent: &running.span, "submission aborted by the host");
        running.sub.slot.complete(Err(GpuError::Aborted(id)));
        Some(id)
    }

    /// Completes everything pending with `error`: running submissions are
    /// stopped where they are (between packets), queued ones never start,
    /// host writes not applied yet are dropped.
    pub(crate) fn cancel_all(&mut self, error: &GpuError) {
        self.clear_stall_flags();
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
        self.suspended = 0;
        for op in self.ops.drain(..) {
            match op {
                HostOp::Submit(sub) => {
                    sub.slot.complete(Err(error.clone()));
                }
                HostOp::Write { slot, .. } => {
                    slot.complete(Err(error.clone()));
                }
                HostOp::Sync(slot) => {
                    slot.complete(Err(error.clone()));
                }
            }
        }
    }
}

impl<M: GuestMemory, B: Backend> Core<M, B> {
    /// One scheduling step: release submissions, run one slice of the next
    /// runnable queue; when none can run, apply the next host write (or
    /// answer a sync) and try again.
    pub(crate) fn step(&mut self) -> Step {
        loop {
            self.sched.release();
            if let Some(queue) = self.sched.pick() {
                self.run_slice(queue);
                return Step::Ran;
            }
            match self.sched.ops.pop_front() {
                Some(HostOp::Submit(sub)) => self.sched.enqueue(sub),
                Some(HostOp::Write { address, bytes, slot }) => {
                    self.apply_write(address, &bytes, &slot);
                    return Step::Ran;
                }
                Some(HostOp::Sync(slot)) => {
                    slot.complete(Ok(self.sched.quiescent_status()));
                }
                None => return if self.sched.has_work() { Step::Stalled } else { Step::Idle },
            }
        }
    }

    /// Applies a host write; shader containers it overlaps are decoded again
    /// at their next use (the host may rewrite a container in place).
    fn apply_write(&mut self, address: u64, bytes: &[u8], slot: &Slot<()>) {
        let sched = &mut self.sched;
        sched.log.clear();
        let memory = Tracked::new(&self.memory, &mut sched.log);
        let result = memory.write_bytes(address, bytes);
        sched.stats.host_writes += 1;
        match result {
            Ok(()) => {
                self.shaders.invalidate_range(address, bytes.len() as u64);
                slot.complete(Ok(()));
            }
            Err(source) => {
                sched.stats.host_write_errors += 1;
                tracing::warn!(address, len = bytes.len(), error = %source, "host write failed");
                slot.complete(Err(GpuError::HostWrite { address, len: bytes.len() as u64, source }));
            }
        }
        sched.wake_watchers(None);
    }

    /// Runs one slice of `queue` (starting its next submission if it has
    /// none running), then wakes the queues whose watched memory it wrote.
    fn run_slice(&mut self, queue: usize) {
        let Core { memory, backend, shaders, sched } = self;
        sched.cursor = (queue + 1) % sched.queues.len().max(1);
        sched.stats.slices += 1;
        let Some(q) = sched.queues.get_mut(queue) else {
            return;
        };
        if q.running.is_none() {
            let Some(sub) = q.fifo.pop_front() else {
                return;
            };
            if let Err(e) = q.processor.get_mut().submit(sub.address, sub.size_dw) {
                sched.stats.failed += 1;
                let error = GpuError::Processor { queue: q.processor.queue(), submission: sub.id, source: e };
                sub.slot.complete(Err(error));
                return;
            }
            let span = tracing::info_span!(
                parent: &q.span,
                "submission",
                id = sub.id.0,
                address = format_args!("{:#x}", sub.address),
                size_dw = sub.size_dw
            );
            q.running = Some(Running { base: Baseline::of(q.processor.get_mut()), sub, span, slices: 0 });
        }
        let Some(running) = q.running.as_mut() else {
            return;
        };
        running.slices += 1;
        backend.current = running.sub.id;
        sched.log.clear();
        let status = {
            let _entered = running.span.enter();
            let tracked = Tracked::new(&*memory, &mut sched.log);
            let mut env = Env { memory: &tracked, backend, shaders };
            q.processor.get_mut().process_slice(&mut env, sched.slice_packets)
        };
        let id = running.sub.id;
        match status {
            Ok(ProcessStatus::Yielded) => {}
            Ok(ProcessStatus::Suspended(reason)) => {
                tracing::trace!(parent: &running.span, %reason, "suspended");
                let watch = watch_for(&reason, q.processor.get_mut());
                if q.wait.replace((reason, watch)).is_none() {
                    sched.suspended += 1;
                }
            }
            Ok(ProcessStatus::Completed | ProcessStatus::Idle) => sched.finish(queue, Ok(())),
            Err(source) => {
                let error = GpuError::Processor { queue: q.processor.queue(), submission: id, source };
                sched.finish(queue, Err(error));
            }
        }
        sched.wake_watchers(Some(queue));
    }
}
