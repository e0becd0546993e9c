//! The slice — one queue running a bounded number of packets — that both
//! modes are made of. It has three parts: [`Sched::begin_slice`] under the
//! scheduler lock (start the next submission, take the queue's processor
//! out), [`run_slice`] without it (packets against the shared memory,
//! backend and shader registry, the thread marked as running the slice so
//! that a callback calling back is told apart, every call into the
//! embedder's memory and backend guarded so a panic is told as theirs), and
//! [`Sched::end_slice`] under the lock again (put the processor back,
//! complete or suspend, wake the queues whose watched bytes the slice
//! wrote). The deterministic mode runs the three on the driving thread
//! ([`step`]); the threaded mode's workers run them in parallel, one queue
//! each.

use std::panic::{catch_unwind, AssertUnwindSafe};

use parking_lot::{Mutex, MutexGuard};
use tracing::Span;

use crate::backend::Backend;
use crate::memory::GuestMemory;
use crate::processor::{Env, Pm4Error, ProcessStatus, Processor};
use crate::shader::ShaderRegistry;

use super::error::GpuError;
use super::handle::SubmissionId;
use super::reentry::{take_panic_site, PanicSite, SliceMark};
use super::sched::{watch_for, Baseline, HostOp, Running, Sched, Step};
use super::signal::InterruptLines;
use super::tap::{tracked, Guarded, QueueBackend, SliceBackend, WriteLog};
use super::watch::Watch;
use super::worker::Shared;

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
    /// Something panicked: the embedder's memory or backend (the site), or
    /// pm4core itself (`None`); the message, if it had one.
    Panicked(Option<PanicSite>, String),
}

impl Sched {
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
        self.end_stall_episode();
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
        let mut woken = self.wake_for_log(log, Some(queue));
        // Cancelled while the slice ran (shutdown): nothing to settle.
        if self.queues.get(queue).is_some_and(|q| q.running.is_none()) {
            self.put_back(queue, processor);
            return woken;
        }
        let outcome = match result {
            Ok(status) => Ok(status),
            Err(SliceFailure::Processor(source)) => Err(GpuError::Processor { queue: id, submission, source }),
            Err(SliceFailure::Panicked(site, message)) => {
                processor.abort();
                Err(match site {
                    Some(PanicSite::Backend) => GpuError::BackendPanicked { queue: id, submission, message },
                    Some(PanicSite::Memory) => GpuError::MemoryPanicked { queue: id, submission, message },
                    None => GpuError::InternalPanic { queue: id, submission, message },
                })
            }
        };
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
                if !raced {
                    self.record_wait(queue, reason, watch);
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
    pub(crate) backend: Mutex<B>,
    pub(crate) interrupts: Mutex<InterruptLines>,
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
/// against shared memory, backend and shaders, on a thread marked as
/// running a slice of GPU `gpu`. Writes are noted in `log`; a panic is
/// caught here and fails the submission, told as the memory's, the
/// backend's or pm4core's own. With `hold_backend` (deterministic mode: no
/// other slice runs) the GPU's backend is locked once for the slice, not
/// once per call.
pub(crate) fn run_slice<M: GuestMemory, B: Backend>(
    gpu: usize,
    parts: &Parts<M, B>,
    ticket: &mut Ticket,
    log: &mut WriteLog,
    hold_backend: bool,
) -> SliceResult {
    log.clear();
    let _entered = ticket.span.enter();
    let guarded_memory = Guarded(&parts.memory);
    let memory = tracked(&guarded_memory, log);
    let Ticket { processor, backend: queue_backend, submission, slice_packets, queue, .. } = ticket;
    let _ = take_panic_site();
    let result = catch_unwind(AssertUnwindSafe(|| {
        {
            // The factory is asked with the shared backend's lock held.
            let _asking = SliceMark { gpu, queue: *queue, shared_backend: true }.enter();
            queue_backend.settle(&parts.backend, processor.queue());
        }
        let _marked = SliceMark { gpu, queue: *queue, shared_backend: queue_backend.is_shared() }.enter();
        let own = match queue_backend {
            QueueBackend::Own(own) => Some(&mut **own),
            _ => None,
        };
        let mut backend = SliceBackend::new(&parts.backend, own, hold_backend, &parts.interrupts, *queue, *submission);
        let mut env = Env { memory: &memory, backend: &mut backend, shaders: &parts.shaders };
        processor.process_slice(&mut env, *slice_packets)
    }));
    match result {
        Ok(Ok(status)) => Ok(status),
        Ok(Err(error)) => Err(SliceFailure::Processor(error)),
        Err(payload) => Err(SliceFailure::Panicked(take_panic_site(), panic_message(&*payload))),
    }
}

/// One deterministic scheduling step on the driving thread: release
/// submissions, run one slice of the next runnable queue (the scheduler
/// lock released meanwhile, so the slice's callbacks may submit, write or
/// look at the GPU); when none can run, apply the next host write and try
/// again.
pub(crate) fn step<M: GuestMemory, B: Backend>(shared: &Shared<M, B>, sched: &mut MutexGuard<'_, Sched>) -> Step {
    loop {
        sched.release();
        if let Some(queue) = sched.pick() {
            if let Some(mut ticket) = sched.begin_slice(queue) {
                let mut log = sched.step_log.take().unwrap_or_default();
                // No other slice runs: the backend stays locked for this one.
                let result =
                    MutexGuard::unlocked(sched, || run_slice(shared.id(), &shared.parts, &mut ticket, &mut log, true));
                sched.end_slice(ticket, result, &log);
                sched.step_log = Some(log);
                if sched.processor_waiters > 0 {
                    shared.announce_change();
                }
            }
            return Step::Ran;
        }
        match sched.ops.pop_front() {
            Some(HostOp::Submit(sub)) => sched.enqueue(sub),
            Some(HostOp::Write { address, bytes, slot }) => {
                slot.complete(apply_write(&shared.parts, sched, address, bytes.as_slice()));
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
