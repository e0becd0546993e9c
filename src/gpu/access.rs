//! Looking at a [`Gpu`] and reaching into it: stalls and interrupts, the
//! memory, backend and shader registry, each queue's processor, the
//! counters, and taking it apart.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::MutexGuard;

use crate::backend::{Backend, QueueId};
use crate::memory::GuestMemory;
use crate::processor::{GlobalState, Processor, ProcessorStats};
use crate::regs::RegisterFile;
use crate::shader::ShaderRegistry;

use super::config::{GpuParts, GpuStats, QueueStatus};
use super::error::{GpuError, StallReport};
use super::reentry;
use super::sched::Sched;
use super::signal::{Interrupt, InterruptReceiver, StallReceiver};
use super::slice::Parts;
use super::worker::Shared;
use super::{queue_index, Gpu};
use crate::gpu::SubmissionId;

/// Why a callback may not wait for a processor.
const PROCESSOR_OUT: &str =
    "the queue's processor is out on a slice (the calling one, or another worker's that may be waiting for this callback)";

/// Why a callback may not take the shared backend.
const BACKEND_HELD: &str = "the calling queue's backend calls go to the shared backend, whose lock this callback holds";

impl<M, B> Gpu<M, B>
where
    M: GuestMemory + 'static,
    B: Backend + Send + 'static,
{
    /// The current stall, if every queue with work is suspended, no slice
    /// runs and no host operation is pending (a snapshot).
    pub fn stall_report(&self) -> Option<StallReport> {
        self.shared.sched.lock().stall_report()
    }

    /// The channel on which threaded mode reports each stall that lasts
    /// [`GpuConfig::stall_report_delay`](super::GpuConfig::stall_report_delay),
    /// once (see [`StallReceiver`]).
    pub fn stall_reports(&self) -> StallReceiver {
        self.shared.stalls.receiver()
    }

    /// The embedder decides that the current stall will not resolve: every
    /// suspended submission fails with [`GpuError::Deadlock`] (its queue goes
    /// on with its next submission). Returns the report, or `None` when the
    /// GPU is not stalled.
    pub fn declare_deadlock(&self) -> Result<Option<StallReport>, GpuError> {
        self.check_open()?;
        let report = self.shared.sched.lock().declare_deadlock();
        if report.is_some() {
            self.shared.offer_work(true);
            self.shared.announce_change();
        }
        Ok(report)
    }

    /// Stops the submission `queue` is running (between packets; at the end
    /// of the slice if one runs); its handle completes with
    /// [`GpuError::Aborted`] and the queue goes on with its next submission.
    /// Returns the aborted submission, if one was running.
    pub fn abort(&self, queue: QueueId) -> Result<Option<SubmissionId>, GpuError> {
        let index = queue_index(queue)?;
        self.check_open()?;
        let aborted = self.shared.sched.lock().abort(index);
        self.shared.offer_work(false);
        Ok(aborted)
    }

    /// A receiver of `queue`'s interrupts (see [`InterruptReceiver`]: its
    /// clones share one channel, and each interrupt goes to one of them).
    pub fn interrupts(&self, queue: QueueId) -> Result<InterruptReceiver, GpuError> {
        let index = queue_index(queue)?;
        self.check_open()?;
        self.shared.parts.interrupts.lock().receiver(index).ok_or(GpuError::ShutDown)
    }

    /// The next interrupt of `queue`, waiting at most `timeout`; `None` when
    /// none came. Shutdown ends the wait with [`GpuError::ShutDown`].
    pub fn wait_interrupt(&self, queue: QueueId, timeout: Duration) -> Result<Option<Interrupt>, GpuError> {
        self.interrupts(queue)?.recv_timeout(timeout)
    }

    /// Guest memory for set-up (map regions as a trace declares them, write
    /// many things at once). The GPU cannot see what changed, so afterwards
    /// every decoded shader container is dropped and every suspended queue
    /// re-checks its wait. Acts at once: a replayer that must act exactly at
    /// a trace position calls [`Gpu::run_until_stalled`] first.
    pub fn with_memory<R>(&self, f: impl FnOnce(&M) -> R) -> R {
        let result = f(&self.shared.parts.memory);
        self.host_changed_everything();
        result
    }

    fn host_changed_everything(&self) {
        self.shared.parts.shaders.invalidate_all();
        let woken = self.shared.sched.lock().wake_all();
        if woken > 0 {
            self.shared.offer_work(true);
        }
    }

    /// Guest memory, read-only; wakes nothing.
    pub fn with_memory_ref<R>(&self, f: impl FnOnce(&M) -> R) -> R {
        f(&self.shared.parts.memory)
    }

    /// Refuses a call that takes the shared backend from a slice whose
    /// calls go to it.
    fn check_backend_free(&self, call: &'static str) -> Result<(), GpuError> {
        match reentry::in_slice(self.shared.id()) {
            Some(mark) if mark.shared_backend => Err(GpuError::CalledFromCallback { call, why: BACKEND_HELD }),
            _ => Ok(()),
        }
    }

    /// The backend (the user's), between two backend calls. Queues with a
    /// backend of their own ([`Backend::queue_backend`]) call that one
    /// instead; it is not reachable here. From a callback of a queue that
    /// calls this backend: [`GpuError::CalledFromCallback`].
    pub fn with_backend<R>(&self, f: impl FnOnce(&mut B) -> R) -> Result<R, GpuError> {
        self.check_backend_free("with_backend")?;
        Ok(f(&mut self.shared.parts.backend.lock()))
    }

    /// The shader registry.
    pub fn with_shaders<R>(&self, f: impl FnOnce(&ShaderRegistry) -> R) -> R {
        f(&self.shared.parts.shaders)
    }

    /// Memory, backend and shader registry at once (for example to create a
    /// shader, which reads and patches memory). Every suspended queue is
    /// re-checked afterwards, and decoded containers other than those the
    /// closure registered are dropped. From a callback of a queue that calls
    /// the shared backend: [`GpuError::CalledFromCallback`].
    pub fn with_shared<R>(&self, f: impl FnOnce(&M, &mut B, &ShaderRegistry) -> R) -> Result<R, GpuError> {
        self.check_backend_free("with_shared")?;
        let parts: &Parts<M, B> = &self.shared.parts;
        let result = f(&parts.memory, &mut parts.backend.lock(), &parts.shaders);
        let woken = self.shared.sched.lock().wake_all();
        if woken > 0 {
            self.shared.offer_work(true);
        }
        Ok(result)
    }

    /// The scheduler with `queue`'s processor at home: waits for a slice
    /// that has it to end, except from a callback (which that slice may be,
    /// or may wait for) or after shutdown.
    fn queue_home(&self, index: usize, call: &'static str) -> Result<MutexGuard<'_, Sched>, GpuError> {
        let shared: &Shared<M, B> = &self.shared;
        let in_slice = reentry::in_slice(shared.id()).is_some();
        let mut sched = shared.sched.lock();
        while sched.queues.get(index).is_some_and(|q| q.processor.is_out()) {
            if in_slice {
                return Err(GpuError::CalledFromCallback { call, why: PROCESSOR_OUT });
            }
            if shared.lost.load(std::sync::atomic::Ordering::Acquire) {
                return Err(GpuError::WorkerLost);
            }
            sched.processor_waiters += 1;
            shared.changed.wait(&mut sched);
            sched.processor_waiters -= 1;
        }
        Ok(sched)
    }

    /// A look at `queue`'s processor (registers, stats, execution state),
    /// between two of its slices.
    pub fn with_processor<R>(&self, queue: QueueId, f: impl FnOnce(&Processor) -> R) -> Result<R, GpuError> {
        let index = queue_index(queue)?;
        let mut sched = self.queue_home(index, "with_processor")?;
        let q = sched.queues.get_mut(index).ok_or(GpuError::QueueOutOfRange { queue: queue.0 })?;
        let processor = q.processor.get_mut().ok_or(GpuError::QueueOutOfRange { queue: queue.0 })?;
        Ok(f(processor))
    }

    /// A look at `queue`'s processor and the guest memory together, between
    /// two of its slices: what a per-packet observer reads.
    pub fn with_processor_and_memory<R>(
        &self,
        queue: QueueId,
        f: impl FnOnce(&Processor, &M) -> R,
    ) -> Result<R, GpuError> {
        let index = queue_index(queue)?;
        let mut sched = self.queue_home(index, "with_processor_and_memory")?;
        let q = sched.queues.get_mut(index).ok_or(GpuError::QueueOutOfRange { queue: queue.0 })?;
        let processor = q.processor.get_mut().ok_or(GpuError::QueueOutOfRange { queue: queue.0 })?;
        Ok(f(processor, &self.shared.parts.memory))
    }

    /// `queue`'s register file, for host-side set-up, between two of its
    /// slices; the queue re-checks a wait afterwards.
    pub fn with_registers_mut<R>(&self, queue: QueueId, f: impl FnOnce(&mut RegisterFile) -> R) -> Result<R, GpuError> {
        let index = queue_index(queue)?;
        let mut sched = self.queue_home(index, "with_registers_mut")?;
        let q = sched.queues.get_mut(index).ok_or(GpuError::QueueOutOfRange { queue: queue.0 })?;
        let processor = q.processor.get_mut().ok_or(GpuError::QueueOutOfRange { queue: queue.0 })?;
        let result = f(processor.registers_mut());
        // UCONFIG registers are GPU-wide: what the host changed is seen by
        // every queue, and their waits are checked again.
        processor.publish_host_registers();
        let woke = sched.wake_queue(index) | (sched.wake_uconfig_watchers() > 0);
        drop(sched);
        if woke {
            self.shared.offer_work(false);
        }
        Ok(result)
    }

    /// `queue`'s processor counters.
    pub fn processor_stats(&self, queue: QueueId) -> Result<ProcessorStats, GpuError> {
        let index = queue_index(queue)?;
        let sched = self.queue_home(index, "processor_stats")?;
        let q = sched.queues.get(index).ok_or(GpuError::QueueOutOfRange { queue: queue.0 })?;
        // A queue never used has no processor yet: all counters are zero.
        Ok(q.processor.get().map(|p| p.stats().clone()).unwrap_or_default())
    }

    /// What `queue` is doing.
    pub fn queue_status(&self, queue: QueueId) -> Result<QueueStatus, GpuError> {
        let index = queue_index(queue)?;
        self.shared.sched.lock().queue_status(index).ok_or(GpuError::QueueOutOfRange { queue: queue.0 })
    }

    /// The GPU-wide state every queue shares: the UCONFIG registers and the
    /// global data share. Reads are atomic; they may run while queues do.
    pub fn global(&self) -> Arc<GlobalState> {
        Arc::clone(&self.shared.sched.lock().global)
    }

    /// The GPU's counters.
    pub fn stats(&self) -> GpuStats {
        let (interrupts, interrupts_dropped) = self.shared.parts.interrupts.lock().counts();
        let stalls_dropped = self.shared.stalls.dropped();
        GpuStats { interrupts, interrupts_dropped, stalls_dropped, ..self.shared.sched.lock().stats }
    }

    /// Stops the GPU (as [`Gpu::shutdown`]) and gives back memory, backend
    /// and shader registry. Not from a callback of this GPU.
    pub fn into_parts(self) -> Result<GpuParts<M, B>, GpuError> {
        reentry::refuse_in_slice(self.shared.id(), "into_parts", "the calling slice still uses the parts")?;
        self.shutdown();
        let shared = Arc::clone(&self.shared);
        drop(self);
        let shared = Arc::try_unwrap(shared).map_err(|_| GpuError::WorkerLost)?;
        let Shared { parts, sched, .. } = shared;
        // Cancels what is pending (deterministic mode).
        drop(sched);
        let Parts { memory, backend, shaders, .. } = parts;
        Ok(GpuParts { memory, backend: backend.into_inner(), shaders })
    }
}
