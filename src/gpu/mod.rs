//! The GPU front end: the graphics queue and the 56 compute queues, each a
//! [`Processor`] with its own register file, sharing one guest memory, one
//! backend and one [`ShaderRegistry`], scheduled so that no queue starves the
//! others, that a waiting queue costs nothing until memory it watches
//! changes, and that a global stall is reported instead of hanging.
//!
//! # Architecture: the GPU front end (`src/gpu/`)
//!
//! [`Gpu<M, B>`] owns 57 processors (queue 0 = graphics, 1 + pipe*8 + queue
//! = compute), the guest memory `M`, the backend `B` and the shader
//! registry, all behind one lock, plus a scheduler (`core.rs`) that both
//! modes share. It is generic (static dispatch on the hot path) over
//! `M: GuestMemory + Send + 'static` and `B: Backend + Send + 'static`
//! rather than boxing them: the memory is called for every dword a packet
//! reads. A caller that picks the types at run time passes a newtype around
//! `Box<dyn GuestMemory + Send>` / `Box<dyn Backend + Send>` that forwards
//! the trait.
//!
//! **Modes.**
//! - [`Gpu::deterministic`]: nothing runs on its own. The caller's thread
//!   drives the scheduler with [`Gpu::run_until_stalled`],
//!   [`Gpu::run_until_idle`] or [`Gpu::run_slices`]. The same sequence of
//!   calls gives the same interleaving, the same memory and the same backend
//!   log on every run (replay, tests).
//! - [`Gpu::threaded`]: one worker thread runs the scheduler; any thread may
//!   submit, write memory and wait. Submissions, host writes and syncs
//!   travel to the worker through one crossbeam channel. There is a single
//!   worker because every packet needs `&mut` guest memory and `&mut`
//!   backend: packets of different queues never run in parallel (that would
//!   need a memory model with atomic guest accesses, which [`GuestMemory`]
//!   does not offer); the worker's job is interleaving, not parallelism.
//!   With nothing to run it polls the channel for
//!   [`GpuConfig::worker_spin`] before parking, so a host that answers a
//!   stall at once does not pay for waking a parked thread.
//!
//! **Host operations** (submissions, host writes, syncs) form one sequence:
//! call order in deterministic mode, channel order in threaded mode.
//!
//! **Scheduling rules** (one step of the scheduler, both modes):
//! 1. Submissions at the head of the host sequence are released to their
//!    queue's FIFO. A queue runs its submissions one after another, in
//!    order; the next starts when the previous completed or failed.
//! 2. A queue is *runnable* when it has a submission running that is not
//!    suspended, or none running and one queued. The scheduler runs one
//!    *slice* of the first runnable queue at or after the round-robin cursor
//!    (queue index order, wrapping), then moves the cursor past it. A slice
//!    is at most [`GpuConfig::slice_packets`] packets
//!    ([`Processor::process_slice`]); it ends early when the submission
//!    completes, fails or suspends.
//! 3. A suspended queue is not runnable and is not polled. The scheduler
//!    notes every guest-memory byte range each slice and each host write
//!    writes; after it, a suspended queue is woken (made runnable, to
//!    re-execute its waiting packet) only if a range overlaps the bytes it
//!    watches: the 4 or 8 bytes polled by WAIT_REG_MEM(64) on memory, the 8
//!    bytes of an ATOMIC_MEM loop or MEM_SEMAPHORE, the REWIND body dword.
//!    A SET_PREDICATION wait (a record spanning all render backends) and a
//!    constant-engine counter wait (unless the constant engine itself waits
//!    on memory, which is then watched) are woken by any write. A
//!    WAIT_REG_MEM on a register of the queue's own register file is woken
//!    by no packet, since only the host can change it: by
//!    [`Gpu::with_registers_mut`]. [`Gpu::with_memory`] and
//!    [`Gpu::with_shared`] wake every suspended queue, since the scheduler
//!    cannot see what they changed. A woken queue whose wait still fails
//!    suspends again after one packet.
//! 4. When no queue is runnable the scheduler takes the next host operation:
//!    a host write is applied (and wakes its watchers), a sync is answered;
//!    then it goes back to 1. This is the trace format's WRIT rule: a host
//!    write is applied only when every earlier submission has run as far as
//!    it can (finished, or suspended on a wait no queue can satisfy), and
//!    before any later submission is released.
//! 5. No queue runnable and no host operation left: *idle* if no queue has
//!    work, otherwise *stalled*: every queue with work waits on something
//!    only the host can change. [`StallReport`] names each waiting queue,
//!    its submission, the waiting packet's address and the wait
//!    (memory address or register, function, reference, mask, current
//!    value).
//!
//! **Fairness.** Runnable queues are served round-robin with equal slices:
//! between two slices of a runnable queue at most 56 other slices run, so a
//! long command buffer delays another queue by at most 56 ×
//! `slice_packets` packets and never starves it. Suspended queues cost
//! nothing until woken. Host operations: in threaded mode the worker takes
//! new commands after at most [`GpuConfig::worker_batch`] slices (sooner when
//! the channel is non-empty), so a submission is released promptly; a host
//! write waits, by the WRIT rule, until the queues are quiescent, and holds
//! back every later host operation meanwhile (a write can be delayed by long
//! running work, never by a wait, since a waiting queue is quiescent; each
//! submission is finite through [`ProcessorConfig::work_budget`]).
//!
//! **Ordering guarantees.**
//! - Submissions to one queue run in host-sequence order; in threaded mode,
//!   submissions one thread makes to one queue run in that thread's order.
//!   Different queues interleave; only packets (waits, releases) order them.
//! - Deterministic mode: host writes and submissions apply in call order
//!   under the WRIT rule above.
//! - Threaded mode: the host sequence is the order in which `submit`,
//!   `write_memory` and the syncs (`run_until_*`) enter the channel, a total
//!   order consistent with each thread's program order and with
//!   happens-before between threads: if `submit(S)` returned before
//!   `write_memory(W)` was called, W is applied only after S has run as far
//!   as it can; if `write_memory(W)` returned before `submit(S)` was called,
//!   S starts after W is in memory. Calls racing on different threads are
//!   ordered as the channel received them. [`Gpu::with_memory`] and the
//!   other accessors act immediately under the lock (between two slices),
//!   outside this sequence.
//! - Interrupts reach each queue's channel in completion order; their
//!   [`Interrupt::sequence`] orders them across queues.
//!
//! **Stalls.** Deterministic mode: [`Gpu::run_until_idle`] returns
//! [`GpuError::Deadlock`] with the report (nothing is cancelled; a host
//! write and another run may resolve it, or [`Gpu::abort`] a queue).
//! Threaded mode: when the worker finds the GPU stalled it tells every
//! pending submission's handle, and [`Submission::wait`] returns
//! `Err(GpuError::Deadlock(report))` instead of blocking, provided the
//! worker had taken every host command sent so far (each command is counted
//! before it is sent; a stall found before the worker saw them all is
//! ignored and the worker looks again, so `write_memory(label)` followed by
//! `wait()` on the same thread never gets a stale answer). The submission
//! is not cancelled: the answer describes the moment (another host thread
//! may be about to write the label), and after a host write wakes it a
//! later `wait` gives the final result. [`Submission::wait_timeout`] bounds
//! the wait otherwise.
//!
//! **Errors.** A [`Pm4Error`](crate::processor::Pm4Error) aborts that
//! submission only: its handle completes with [`GpuError::Processor`] and the
//! queue starts its next submission.
//!
//! **Shutdown.** Dropping the [`Gpu`] (or [`Gpu::into_parts`]) is a cut in
//! the host sequence: the worker stops between two slices (never inside a
//! packet or a host write), every submission that has not completed
//! completes with [`GpuError::ShutDown`] (running ones stop at a packet
//! boundary; their earlier packets' effects stay), queued submissions never
//! start, host writes not applied yet are not applied (their handles answer
//! `ShutDown`), then the thread is joined. To drain instead, call
//! [`Gpu::run_until_idle`] first. If the worker dies of a bug, pending work
//! completes with [`GpuError::WorkerLost`].
//!
//! **Tracing.** Each queue has an `info` span `queue` (field `queue`, e.g.
//! `comp0.1`); each submission an `info` span `submission` (fields `id`,
//! `address`, `size_dw`) whose parent is its queue's span, entered for every
//! slice, so processor events and `debug`/`trace` events about
//! completion and suspension appear under the queue and submission that ran
//! them. Stalls the worker detects are logged at `debug` (they are normal
//! while the host is about to write a label), failed submissions at `warn`.

mod core;
mod error;
mod handle;
mod tap;
mod worker;

pub use error::{GpuError, QueueStall, StallReport};
pub use handle::{HostWrite, Submission, SubmissionId, SubmissionReport};
pub use tap::Interrupt;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;

use crate::backend::{Backend, QueueId};
use crate::memory::{check_range, GuestMemory, MemoryError};
use crate::processor::{Processor, ProcessorConfig, ProcessorStats, SuspendReason};
use crate::regs::RegisterFile;
use crate::shader::ShaderRegistry;

use self::core::{Core, HostOp, PendingSubmission, Sched, Step};
use self::handle::Slot;
use self::tap::Tap;
use self::worker::{Command, Shared};

/// Settings of a [`Gpu`].
#[derive(Clone, Debug)]
pub struct GpuConfig {
    /// Configuration of every processor.
    pub processor: ProcessorConfig,
    /// Most packets a queue runs before the next runnable queue's turn
    /// (at least 1).
    pub slice_packets: u64,
    /// Interrupts kept per queue for the host; when full the oldest is
    /// dropped (and counted in [`GpuStats::interrupts_dropped`]).
    pub interrupt_capacity: usize,
    /// Threaded mode: most slices the worker runs per lock hold before it
    /// looks at the channel again.
    pub worker_batch: usize,
    /// Threaded mode: how long the worker, with nothing to run, keeps polling
    /// the channel (yielding the CPU) before it parks. Waking a parked thread
    /// costs tens of microseconds on some hosts; zero parks at once.
    pub worker_spin: Duration,
}

impl Default for GpuConfig {
    fn default() -> Self {
        Self {
            processor: ProcessorConfig::default(),
            slice_packets: 64,
            interrupt_capacity: 1024,
            worker_batch: 16,
            worker_spin: Duration::from_micros(50),
        }
    }
}

/// Counters of a [`Gpu`] over its lifetime.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuStats {
    /// Submissions released to their queues.
    pub submissions: u64,
    /// Submissions that ran to their end.
    pub completed: u64,
    /// Submissions stopped by a processor error.
    pub failed: u64,
    /// Submissions aborted by the host.
    pub aborted: u64,
    /// Host writes applied (or refused by memory).
    pub host_writes: u64,
    /// Host writes the memory refused.
    pub host_write_errors: u64,
    /// Slices run.
    pub slices: u64,
    /// Suspended queues woken to re-check their wait.
    pub wakes: u64,
    /// Stalls detected (threaded mode: each time the worker found the GPU
    /// stalled and told the waiting handles).
    pub stalls: u64,
    /// Interrupts raised.
    pub interrupts: u64,
    /// Interrupts dropped because the host did not take them.
    pub interrupts_dropped: u64,
}

/// Where the GPU stands after a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunStatus {
    /// No queue has work.
    Idle,
    /// Every queue with work waits on something only the host can change.
    Stalled(StallReport),
    /// Work is left that can run ([`Gpu::run_slices`] ran out of slices).
    Running,
}

/// What one queue is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueStatus {
    /// The submission it runs.
    pub running: Option<SubmissionId>,
    /// Why that submission waits, if it does.
    pub suspended: Option<SuspendReason>,
    /// Submissions queued behind it.
    pub queued: usize,
}

/// The parts a [`Gpu`] was built from, back from [`Gpu::into_parts`].
pub struct GpuParts<M, B> {
    pub memory: M,
    pub backend: B,
    pub shaders: ShaderRegistry,
}

/// The worker of a threaded [`Gpu`]. Dropping it stops and joins the worker.
struct Control {
    tx: Sender<Command>,
    /// Commands sent, counted before each send (see [`Submission::wait`]).
    sent: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    worker: Option<JoinHandle<()>>,
}

impl Drop for Control {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wakes a worker blocked on the channel; fails only if it is gone.
        let _ = self.tx.send(Command::Shutdown);
        if let Some(worker) = self.worker.take() {
            // A worker that died of a bug already cancelled the pending work.
            let _ = worker.join();
        }
    }
}

/// The GPU front end: 57 queues sharing one guest memory, one backend and one
/// shader registry. See the [module documentation](self) for the scheduling
/// rules and guarantees.
///
/// All methods take `&self`; a threaded `Gpu` is `Sync` and may be shared
/// between host threads (`Arc<Gpu>` or scoped threads). Do not call `Gpu`
/// methods from inside a `with_*` closure: the lock is not re-entrant.
pub struct Gpu<M, B>
where
    M: GuestMemory + Send + 'static,
    B: Backend + Send + 'static,
{
    shared: Arc<Shared<M, B>>,
    /// `None` in deterministic mode.
    control: Option<Control>,
    next_id: AtomicU64,
}

impl<M, B> std::fmt::Debug for Gpu<M, B>
where
    M: GuestMemory + Send + 'static,
    B: Backend + Send + 'static,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu").field("threaded", &self.is_threaded()).finish_non_exhaustive()
    }
}

fn queue_index(queue: QueueId) -> Result<usize, GpuError> {
    if queue.0 < QueueId::COUNT {
        Ok(queue.0 as usize)
    } else {
        Err(GpuError::QueueOutOfRange { queue: queue.0 })
    }
}

impl<M, B> Gpu<M, B>
where
    M: GuestMemory + Send + 'static,
    B: Backend + Send + 'static,
{
    fn build(memory: M, backend: B, config: &GpuConfig) -> Arc<Shared<M, B>> {
        let backend = Tap::new(backend, QueueId::COUNT as usize, config.interrupt_capacity);
        let sched = Sched::new(&config.processor, config.slice_packets);
        let shaders = ShaderRegistry::default();
        let core = Core { memory, backend, shaders, sched };
        Arc::new(Shared { core: Mutex::new(core), lost: AtomicBool::new(false) })
    }

    /// A GPU that runs only when the caller drives it, with a fixed
    /// interleaving (see the module documentation).
    pub fn deterministic(memory: M, backend: B, config: GpuConfig) -> Self {
        let shared = Self::build(memory, backend, &config);
        Self { shared, control: None, next_id: AtomicU64::new(0) }
    }

    /// A GPU with a worker thread that runs queues as work arrives.
    pub fn threaded(memory: M, backend: B, config: GpuConfig) -> Result<Self, GpuError> {
        let shared = Self::build(memory, backend, &config);
        let (tx, rx) = crossbeam_channel::unbounded();
        let stop = Arc::new(AtomicBool::new(false));
        let worker = {
            let shared = Arc::clone(&shared);
            let stop = Arc::clone(&stop);
            let (batch, spin) = (config.worker_batch, config.worker_spin);
            std::thread::Builder::new()
                .name("pm4-gpu".into())
                .spawn(move || worker::run(shared, rx, stop, batch, spin))
                .map_err(|e| GpuError::Spawn(e.to_string()))?
        };
        Ok(Self {
            shared,
            control: Some(Control { tx, sent: Arc::new(AtomicU64::new(0)), stop, worker: Some(worker) }),
            next_id: AtomicU64::new(0),
        })
    }

    /// True for a GPU made by [`Gpu::threaded`].
    pub fn is_threaded(&self) -> bool {
        self.control.is_some()
    }

    fn closed(&self) -> GpuError {
        if self.shared.lost.load(Ordering::Acquire) {
            GpuError::WorkerLost
        } else {
            GpuError::ShutDown
        }
    }

    /// A completion slot for this mode.
    fn slot<T: Clone>(&self) -> Arc<Slot<T>> {
        Slot::new(self.control.as_ref().map(|c| Arc::clone(&c.sent)))
    }

    /// Sends a command to the worker, counted first so that a handle can
    /// tell a stale stall answer from a current one. False when the worker
    /// is gone.
    fn send(control: &Control, command: Command) -> bool {
        control.sent.fetch_add(1, Ordering::SeqCst);
        control.tx.send(command).is_ok()
    }

    /// Adds a host operation to the sequence.
    fn push(&self, op: HostOp) -> Result<(), GpuError> {
        match &self.control {
            None => {
                self.shared.core.lock().sched.push(op);
                Ok(())
            }
            Some(control) if Self::send(control, Command::Op(op)) => Ok(()),
            Some(_) => Err(self.closed()),
        }
    }

    /// Tells a threaded worker that the host changed state under the lock.
    fn poke(&self) {
        if let Some(control) = &self.control {
            // Fails only when the worker is gone, and then nothing waits.
            Self::send(control, Command::Wake);
        }
    }

    /// Submits `size_dw` dwords of PM4 packets at `address` to `queue`. The
    /// submission starts after every earlier submission to that queue.
    pub fn submit(&self, queue: QueueId, address: u64, size_dw: u32) -> Result<Submission, GpuError> {
        let index = queue_index(queue)?;
        let id = SubmissionId(self.next_id.fetch_add(1, Ordering::Relaxed));
        let slot = self.slot();
        let sub = PendingSubmission { id, queue: index, address, size_dw, slot: Arc::clone(&slot) };
        self.push(HostOp::Submit(sub))?;
        Ok(Submission { id, queue, slot })
    }

    /// Writes guest memory as the host (the CPU), ordered with submissions by
    /// the WRIT rule: applied when every earlier submission has run as far as
    /// it can, before any later submission starts. The bytes are copied.
    ///
    /// Errors at once for a range outside the 48-bit space; deterministic
    /// mode also checks at once that the range is mapped. In threaded mode a
    /// range the memory refuses when the write is applied answers through
    /// the returned handle.
    pub fn write_memory(&self, address: u64, bytes: &[u8]) -> Result<HostWrite, GpuError> {
        let len = bytes.len() as u64;
        check_range(address, len).map_err(|source| GpuError::HostWrite { address, len, source })?;
        if !self.is_threaded() && !self.shared.core.lock().memory.is_mapped(address, len) {
            return Err(GpuError::HostWrite { address, len, source: MemoryError::Unmapped { address, len } });
        }
        let slot = self.slot();
        self.push(HostOp::Write { address, bytes: bytes.to_vec(), slot: Arc::clone(&slot) })?;
        Ok(HostWrite { slot })
    }

    /// Runs until no queue can run and every host operation made before this
    /// call is applied. Returns [`RunStatus::Idle`] or
    /// [`RunStatus::Stalled`] with the report.
    ///
    /// Deterministic mode: runs on the caller's thread. Threaded mode: blocks
    /// until the worker reaches that point (a sync in the host sequence);
    /// host operations made after the call by other threads are not waited
    /// for.
    pub fn run_until_stalled(&self) -> Result<RunStatus, GpuError> {
        match &self.control {
            None => {
                let mut core = self.shared.core.lock();
                loop {
                    match core.step() {
                        Step::Ran => {}
                        Step::Idle => return Ok(RunStatus::Idle),
                        Step::Stalled => {
                            let report = core.sched.stall_report().unwrap_or_default();
                            return Ok(RunStatus::Stalled(report));
                        }
                    }
                }
            }
            Some(_) => {
                let slot = self.slot();
                self.push(HostOp::Sync(Arc::clone(&slot)))?;
                slot.wait(None).unwrap_or(Err(GpuError::Pending))
            }
        }
    }

    /// [`Gpu::run_until_stalled`], with a stall turned into
    /// [`GpuError::Deadlock`]. Nothing is cancelled by a stall.
    pub fn run_until_idle(&self) -> Result<(), GpuError> {
        match self.run_until_stalled()? {
            RunStatus::Stalled(report) => Err(GpuError::Deadlock(report)),
            RunStatus::Idle | RunStatus::Running => Ok(()),
        }
    }

    /// Deterministic mode: runs at most `max_slices` scheduler steps (slices
    /// or host writes). [`RunStatus::Running`] when work is left that can run.
    pub fn run_slices(&self, max_slices: u64) -> Result<RunStatus, GpuError> {
        if self.is_threaded() {
            return Err(GpuError::WrongMode { call: "run_slices", mode: "deterministic" });
        }
        let mut core = self.shared.core.lock();
        for _ in 0..max_slices {
            match core.step() {
                Step::Ran => {}
                Step::Idle => return Ok(RunStatus::Idle),
                Step::Stalled => return Ok(RunStatus::Stalled(core.sched.stall_report().unwrap_or_default())),
            }
        }
        Ok(core.sched.run_status())
    }

    /// The current stall, if every queue with work is suspended and no host
    /// operation is pending (threaded mode: a snapshot; operations still in
    /// the channel are not seen).
    pub fn stall_report(&self) -> Option<StallReport> {
        self.shared.core.lock().sched.stall_report()
    }

    /// Stops the submission `queue` is running (between packets); its handle
    /// completes with [`GpuError::Aborted`] and the queue goes on with its
    /// next submission. Returns the aborted submission, if one was running.
    pub fn abort(&self, queue: QueueId) -> Result<Option<SubmissionId>, GpuError> {
        let index = queue_index(queue)?;
        let aborted = self.shared.core.lock().sched.abort(index);
        self.poke();
        Ok(aborted)
    }

    /// The host's receiver of `queue`'s interrupts (a clone: receivers share
    /// one channel, each interrupt goes to one of them).
    pub fn interrupts(&self, queue: QueueId) -> Result<Receiver<Interrupt>, GpuError> {
        let index = queue_index(queue)?;
        self.shared.core.lock().backend.receiver(index).ok_or(GpuError::QueueOutOfRange { queue: queue.0 })
    }

    /// The next interrupt of `queue`, waiting at most `timeout`; `None` when
    /// none came.
    pub fn wait_interrupt(&self, queue: QueueId, timeout: Duration) -> Result<Option<Interrupt>, GpuError> {
        let index = queue_index(queue)?;
        let Some(rx) = self.shared.core.lock().backend.receiver(index) else {
            return Err(GpuError::QueueOutOfRange { queue: queue.0 });
        };
        match rx.recv_timeout(timeout) {
            Ok(interrupt) => Ok(Some(interrupt)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(GpuError::ShutDown),
        }
    }

    /// Guest memory, between two slices (map regions as a trace declares
    /// them, inspect results). Every suspended queue is re-checked afterwards.
    /// Acts at once, outside the host sequence (not ordered like
    /// [`Gpu::write_memory`]): a replayer that must act exactly at a trace
    /// position (a region, a `SHDR` shader creation with
    /// [`Gpu::with_shared`]) calls [`Gpu::run_until_stalled`] first, which
    /// applies the earlier host operations under the WRIT rule.
    pub fn with_memory<R>(&self, f: impl FnOnce(&mut M) -> R) -> R {
        let result = {
            let mut core = self.shared.core.lock();
            let result = f(&mut core.memory);
            core.sched.wake_all();
            result
        };
        self.poke();
        result
    }

    /// Guest memory, read-only, between two slices; wakes nothing.
    pub fn with_memory_ref<R>(&self, f: impl FnOnce(&M) -> R) -> R {
        f(&self.shared.core.lock().memory)
    }

    /// The backend (the user's, without the interrupt tap), between two slices.
    pub fn with_backend<R>(&self, f: impl FnOnce(&mut B) -> R) -> R {
        f(&mut self.shared.core.lock().backend.inner)
    }

    /// The shader registry, between two slices.
    pub fn with_shaders<R>(&self, f: impl FnOnce(&mut ShaderRegistry) -> R) -> R {
        f(&mut self.shared.core.lock().shaders)
    }

    /// Memory, backend and shader registry at once (for example to create a
    /// shader, which reads and patches memory). Every suspended queue is
    /// re-checked afterwards.
    pub fn with_shared<R>(&self, f: impl FnOnce(&mut M, &mut B, &mut ShaderRegistry) -> R) -> R {
        let result = {
            let mut guard = self.shared.core.lock();
            let core = &mut *guard;
            let result = f(&mut core.memory, &mut core.backend.inner, &mut core.shaders);
            core.sched.wake_all();
            result
        };
        self.poke();
        result
    }

    /// A look at `queue`'s processor (registers, stats, execution state).
    pub fn with_processor<R>(&self, queue: QueueId, f: impl FnOnce(&Processor) -> R) -> Result<R, GpuError> {
        let index = queue_index(queue)?;
        let mut core = self.shared.core.lock();
        let q = core.sched.queues.get_mut(index).ok_or(GpuError::QueueOutOfRange { queue: queue.0 })?;
        Ok(f(q.processor.get_mut()))
    }

    /// A look at `queue`'s processor and the guest memory together (one
    /// lock): what a per-packet observer reads between slices.
    pub fn with_processor_and_memory<R>(
        &self,
        queue: QueueId,
        f: impl FnOnce(&Processor, &M) -> R,
    ) -> Result<R, GpuError> {
        let index = queue_index(queue)?;
        let mut core = self.shared.core.lock();
        let core = &mut *core;
        let q = core.sched.queues.get_mut(index).ok_or(GpuError::QueueOutOfRange { queue: queue.0 })?;
        Ok(f(q.processor.get_mut(), &core.memory))
    }

    /// `queue`'s register file, for host-side set-up; the queue re-checks a
    /// wait afterwards.
    pub fn with_registers_mut<R>(&self, queue: QueueId, f: impl FnOnce(&mut RegisterFile) -> R) -> Result<R, GpuError> {
        let index = queue_index(queue)?;
        let result = {
            let mut core = self.shared.core.lock();
            let q = core.sched.queues.get_mut(index).ok_or(GpuError::QueueOutOfRange { queue: queue.0 })?;
            let result = f(q.processor.get_mut().registers_mut());
            core.sched.wake_queue(index);
            result
        };
        self.poke();
        Ok(result)
    }

    /// `queue`'s processor counters.
    pub fn processor_stats(&self, queue: QueueId) -> Result<ProcessorStats, GpuError> {
        let index = queue_index(queue)?;
        let core = self.shared.core.lock();
        let q = core.sched.queues.get(index).ok_or(GpuError::QueueOutOfRange { queue: queue.0 })?;
        // A queue never used has no processor yet: all counters are zero.
        Ok(q.processor.get().map(|p| p.stats().clone()).unwrap_or_default())
    }

    /// What `queue` is doing.
    pub fn queue_status(&self, queue: QueueId) -> Result<QueueStatus, GpuError> {
        let index = queue_index(queue)?;
        self.shared.core.lock().sched.queue_status(index).ok_or(GpuError::QueueOutOfRange { queue: queue.0 })
    }

    /// The GPU's counters.
    pub fn stats(&self) -> GpuStats {
        let core = self.shared.core.lock();
        GpuStats { interrupts: core.backend.interrupts, interrupts_dropped: core.backend.dropped, ..core.sched.stats }
    }

    /// Stops the GPU (pending work completes with [`GpuError::ShutDown`], as
    /// on drop) and gives back memory, backend and shader registry.
    pub fn into_parts(self) -> Result<GpuParts<M, B>, GpuError> {
        let Gpu { shared, control, .. } = self;
        // Stops and joins the worker, which cancels what is pending.
        drop(control);
        let shared = Arc::try_unwrap(shared).map_err(|_| GpuError::WorkerLost)?;
        let Core { memory, backend, shaders, sched } = shared.core.into_inner();
        // Cancels what is pending (deterministic mode).
        drop(sched);
        Ok(GpuParts { memory, backend: backend.inner, shaders })
    }
}
