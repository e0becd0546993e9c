//! The GPU front end: the graphics queue and the 56 compute queues, each a
//! [`Processor`](crate::processor::Processor) with its own register file, sharing one guest memory, one
//! backend and one [`ShaderRegistry`], scheduled so that no queue starves the
//! others, that a waiting queue costs nothing until memory it watches
//! changes, and that a stall is reported instead of hanging.
//!
//! # Architecture: the GPU front end (`src/gpu/`)
//!
//! Files: this one (the `Gpu`, submitting, host writes, driving, shutdown),
//! `access.rs` (looking at and reaching into the GPU), `config.rs`
//! (settings and counters), `sched.rs` (the scheduler's queues and waits),
//! `slice.rs` (one slice), `worker.rs` (the threaded mode's pool),
//! `poll.rs` (polling of suspended waits), `watch.rs` (who watches which
//! bytes), `signal.rs` (interrupt and stall channels), `tap.rs` (what a
//! slice's memory and backend calls go through), `reentry.rs` (callbacks
//! calling back, panic attribution), `handle.rs`, `error.rs`.
//!
//! [`Gpu<M, B>`] holds 57 lazily created processors (queue 0 = graphics,
//! 1 + pipe*8 + queue = compute), the guest memory `M`, the backend `B` and
//! the shader registry. The memory is shared, not locked: any
//! [`GuestMemory`] (`Send + Sync`, `&self` access), typically an
//! `Arc<`[`FlatMemory`](crate::memory::FlatMemory)`>` whose other clone the
//! emulator's CPU writes directly. The scheduler (`core.rs`, one lock) keeps
//! each queue's submissions and waits; a *slice* of a queue (at most
//! [`GpuConfig::slice_packets`] packets; in threaded mode
//! [`GpuConfig::busy_slice_packets`] while no queue waits; in deterministic
//! mode [`GpuConfig::lone_slice_packets`] while no other queue has work)
//! runs with that lock released.
//!
//! **Modes.**
//! - [`Gpu::deterministic`]: nothing runs on its own. The caller's thread
//!   drives the scheduler with [`Gpu::run_until_stalled`],
//!   [`Gpu::run_until_idle`] or [`Gpu::run_slices`]; one slice at a time, in
//!   a fixed order. The same sequence of calls gives the same interleaving,
//!   the same memory and the same backend log on every run (replay, tests).
//!   Host writes through [`Gpu::write_memory`] follow the trace format's
//!   WRIT rule (below). Other threads may wait on handles meanwhile
//!   ([`Submission::wait`] never drives the GPU: it returns once the
//!   driving thread has run the submission); a thread that drives the GPU
//!   and wants one submission's result calls [`Gpu::run_until_complete`].
//! - [`Gpu::threaded`]: a bounded pool of [`GpuConfig::workers`] threads
//!   (default: the available cores) runs queues as work arrives, slices of
//!   different queues in parallel. A queue is never on two workers at once,
//!   its submissions run in submission order, and a waiting queue holds no
//!   worker. An idle worker polls for [`GpuConfig::worker_spin`] before it
//!   parks, so work offered at once (a label the host writes right after a
//!   stall) does not pay for waking a parked thread. A host thread that
//!   waits for the GPU (a handle's `wait`, [`Gpu::run_until_stalled`])
//!   polls for [`GpuConfig::host_spin`] before it blocks, for the same
//!   reason the other way round.
//!
//! **Scheduling rules** (both modes):
//! 1. A queue is *runnable* when it has a submission running that is not
//!    suspended, or none running and one queued, and no slice has it. The
//!    scheduler gives the first runnable queue at or after the round-robin
//!    cursor (queue index order, wrapping) one slice, then moves the cursor
//!    past it. A slice ends early when the submission completes, fails or
//!    suspends.
//! 2. A suspended queue is not runnable and not polled. Every write a slice
//!    makes (noted as byte ranges), every host write and every
//!    [`Gpu::notify_host_write`] asks an index of watched ranges which
//!    suspended queues it overlaps, and wakes exactly those (to re-execute
//!    the waiting packet): the 4 or 8 bytes polled by WAIT_REG_MEM(64) on
//!    memory, the 8 bytes of an ATOMIC_MEM loop or MEM_SEMAPHORE, the REWIND
//!    body dword. A SET_PREDICATION wait and a constant-engine counter wait
//!    (unless the constant engine itself waits on memory) are woken by any
//!    write; a WAIT_REG_MEM on the queue's own registers only by
//!    [`Gpu::with_registers_mut`]. [`Gpu::with_memory`] and
//!    [`Gpu::with_shared`] wake every suspended queue. In threaded mode a
//!    queue that suspends checks the writes made since its slice began (by
//!    other workers or the host), so a write racing with its last read is
//!    never lost. A woken queue whose wait still fails suspends again.
//! 3. Deterministic mode only: submissions and host writes form one host
//!    sequence in call order. When no queue is runnable the scheduler takes
//!    the next host operation; a host write is applied then: only when every
//!    earlier submission has run as far as it can, and before any later
//!    submission is released (the trace format's WRIT rule). A write made
//!    when that point has already come (no host operation pending, no
//!    queue runnable) is applied in the [`Gpu::write_memory`] call.
//! 4. Nothing runnable, no slice running, no host operation left: *idle* if
//!    no queue has work, otherwise *stalled*: every queue with work waits.
//!    [`StallReport`] names each waiting queue, its submission, the waiting
//!    packet's address and the wait (memory address or register, function,
//!    reference, mask, current value).
//!
//! **Host writes.** Threaded mode: [`Gpu::write_memory`] writes the bytes at
//! once and then notifies; an emulator whose CPU writes guest memory itself
//! calls [`Gpu::notify_host_write`] afterwards. Both wake the overlapping
//! watchers and drop decoded shader containers in the range; prefetched
//! command dwords are dropped at every slice's start (a write during a slice
//! races with that slice's reads, as on hardware). Deterministic mode
//! applies `write_memory` by the WRIT rule and `notify_host_write` at once.
//! Notification is by guest address: a write through another guest address
//! that maps the same host page wakes nothing.
//!
//! **Stores nobody notifies.** An emulator that runs guest code natively
//! cannot trap a game's store to a label. In threaded mode the GPU re-reads
//! suspended waits on memory itself ([`GpuConfig::wait_polling`]): a round
//! comes soon after a suspension (every few microseconds while a worker
//! spins idle, then after [`WaitPolling::first`]) and backs off to
//! [`WaitPolling::ceiling`]; a round costs one read per wait and nothing
//! when nothing waits. A wait whose bytes changed is woken and re-executes
//! its packet, so it ends exactly as a notified one does.
//!
//! **Fairness.** Runnable queues are served round-robin with equal slices:
//! between two slices of a runnable queue at most 56 other slices start.
//! Suspended queues cost nothing until woken.
//!
//! **Ordering guarantees.** Submissions to one queue run in the order they
//! were made (in threaded mode, the order in which `submit` calls took the
//! scheduler lock, consistent with each thread's program order). Different
//! queues interleave; only packets (waits, releases) order them. Interrupts
//! reach each queue's channel in completion order; their
//! [`Interrupt::sequence`] orders them across queues.
//!
//! **Stalls.** A stall is not an error while the host can still write a
//! label. Threaded mode reports each stall that lasts
//! [`GpuConfig::stall_report_delay`] once on [`Gpu::stall_reports`] (and
//! counts it in [`GpuStats::stalls`]); waits keep blocking. It becomes
//! [`GpuError::Deadlock`] on the stalled submissions (they fail; their
//! queues go on with their next submissions) only when the embedder asks:
//! [`GpuConfig::stall_timeout`] (a stall lasting that long), or
//! [`Gpu::declare_deadlock`]. Deterministic mode keeps immediate detection:
//! [`Gpu::run_until_idle`] returns [`GpuError::Deadlock`] with the report
//! (nothing is cancelled; a host write and another run may resolve it).
//!
//! **Backend threading contract.** The GPU owns one backend `B: Send`. At
//! each queue's first slice it asks `B` for that queue's own backend
//! ([`Backend::queue_backend`]): the choice is *one backend per queue from a
//! factory*. A queue with its own backend (a renderer's per-queue command
//! recorder; [`NullBackend`](crate::backend::NullBackend)) has every call of
//! its packets go there, on the worker running its slice, in its packet
//! order, without any lock: queues on different workers call their backends
//! in parallel. A queue without one (the default: an event log ordered
//! across queues, the replay) calls `B` itself behind one lock taken for
//! each call only: calls for different queues interleave and never overlap.
//! [`Gpu::with_backend`] and [`Gpu::into_parts`] reach `B`; per-queue
//! backends are dropped with the `Gpu`. Interrupts are copied to the host's
//! channels whichever backend saw the fence. A panic in a backend call is
//! caught at the worker boundary: that submission fails with
//! [`GpuError::BackendPanicked`] (a panic in the guest memory with
//! [`GpuError::MemoryPanicked`]) and the queue goes on.
//!
//! **Callbacks that call back.** A backend callback may call any method of
//! its own `Gpu` (through an `Arc` or a `Weak` it keeps): each either works
//! or answers [`GpuError::CalledFromCallback`] saying why it cannot be
//! called there; none blocks for ever. Submitting, writing and notifying
//! work (deterministic mode queues them in the host sequence after the
//! callback's packet); so do the counters, the stall and interrupt
//! channels, [`Gpu::with_memory`], [`Gpu::with_shaders`] and
//! [`Gpu::shutdown`]. What would wait for the calling slice itself is
//! refused: driving the GPU ([`Gpu::run_until_idle`] and the other `run_*`),
//! waiting for a submission ([`Submission::wait`]), reaching a processor
//! that a slice has out ([`Gpu::with_processor`], [`Gpu::processor_stats`],
//! … of the running queue; of another queue that a worker runs at that
//! moment), and the shared backend from a queue that calls it
//! ([`Gpu::with_backend`], [`Gpu::with_shared`]). A callback reads its own
//! queue's registers from its arguments ([`Draw::registers`](crate::backend::Draw::registers)).
//! Memory callbacks ([`TranslatedMemory`](crate::memory::TranslatedMemory)'s
//! accessors) must not call the GPU.
//!
//! **Errors.** A [`Pm4Error`](crate::processor::Pm4Error) aborts that
//! submission only: its handle completes with [`GpuError::Processor`] and the
//! queue starts its next submission. A submission is checked before it is
//! queued: a command buffer that is not dword-aligned, leaves the 48-bit
//! space or is not mapped is [`GpuError::InvalidSubmission`] from
//! [`Gpu::submit`], with nothing run.
//!
//! **Shutdown.** [`Gpu::shutdown`] (any thread, any number of times; also
//! what dropping the `Gpu` does) stops the workers between two slices
//! (never inside a packet), completes every submission that has not
//! completed with [`GpuError::ShutDown`] (running ones stop at a packet
//! boundary; their earlier packets' effects stay), drops queued host
//! writes, closes the interrupt and stall channels, wakes every host thread
//! waiting on a handle, a channel or a run, and joins the workers (from
//! inside a callback, the workers are left to stop on their own). Later
//! calls that give the GPU work answer [`GpuError::ShutDown`]; memory,
//! counters and processors stay readable. To drain first, call
//! [`Gpu::run_until_idle`]. If a worker dies of a bug outside a slice,
//! pending work completes with [`GpuError::WorkerLost`].
//!
//! **Tracing.** Each queue has an `info` span `queue` (field `queue`, e.g.
//! `comp0.1`); each submission an `info` span `submission` (fields `id`,
//! `address`, `size_dw`) whose parent is its queue's span, entered for every
//! slice. Stalls are logged at `debug`, failed submissions at `warn`.

mod access;
mod config;
mod error;
mod handle;
mod poll;
mod reentry;
mod sched;
mod signal;
mod slice;
mod tap;
mod watch;
mod worker;

pub use config::{GpuConfig, GpuParts, GpuStats, QueueStatus, RunStatus, WaitPolling};
pub use error::{GpuError, QueueStall, StallReport};
pub use handle::{HostWrite, Submission, SubmissionId, SubmissionReport};
pub use signal::{Interrupt, InterruptReceiver, StallReceiver};

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::backend::{Backend, QueueId};
use crate::memory::{check_range, GuestMemory, MemoryError};
use crate::shader::ShaderRegistry;

use self::handle::Slot;
use self::sched::{HostBytes, HostOp, PendingSubmission, Sched, SliceSizes, Step};
use self::signal::{InterruptLines, StallLine};
use self::slice::{apply_write, step, Parts};
use self::worker::{poll_for, Shared, WorkerSettings};

/// The GPU front end: 57 queues sharing one guest memory, one backend and one
/// shader registry. See the [module documentation](self) for the scheduling
/// rules and guarantees.
///
/// All methods take `&self`; a `Gpu` is `Sync` and may be shared between
/// host threads (`Arc<Gpu>` or scoped threads), and its backend's callbacks
/// may call it back (see "Callbacks that call back" in the module
/// documentation). The backend: one per queue from a factory
/// ([`Backend::queue_backend`], called without a lock on the queue's
/// worker), or the GPU's own behind a lock taken per call (once per slice
/// in deterministic mode, where no other slice runs). Do not call `Gpu`
/// methods from inside a `with_*` closure: the locks are not re-entrant.
///
/// # Example
///
/// An emulator shares its guest RAM, submits from any thread, writes a label
/// with its CPU and tells the GPU:
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use pm4core::backend::{NullBackend, QueueId};
/// use pm4core::gpu::{Gpu, GpuConfig};
/// use pm4core::memory::{FlatMemory, GuestMemory};
/// use pm4core::packet::builder::CommandBuffer;
/// use pm4core::packet::body::CompareFunction;
///
/// let ram = Arc::new(FlatMemory::new(0, 1 << 20).unwrap());
/// // WAIT_REG_MEM: memory 0x8000 == 1, then WRITE_DATA 7 to 0x8004.
/// let mut cb = CommandBuffer::new();
/// cb.wait_mem(0x8000, CompareFunction::Equal, 1, u32::MAX).unwrap().write_mem(0x8004, &[7]).unwrap();
/// ram.write_bytes(0x1000, &cb.to_bytes()).unwrap();
/// let gpu = Gpu::threaded(Arc::clone(&ram), NullBackend, GpuConfig::default()).unwrap();
/// let stalls = gpu.stall_reports();
/// let queue = QueueId::compute(0, 0).unwrap();
/// let done = gpu.submit(queue, 0x1000, cb.len_dw()).unwrap();
/// // The queue waits for the CPU: reported once it lasts 1 ms, not an error.
/// let report = stalls.recv_timeout(Duration::from_secs(10)).unwrap().unwrap();
/// assert_eq!(report.queues[0].queue, queue);
/// assert!(done.wait_timeout(Duration::ZERO).is_none());
/// // The CPU writes the label directly, then notifies (without the
/// // notification, the GPU's polling would see it within a few milliseconds).
/// ram.write_u32(0x8000, 1).unwrap();
/// gpu.notify_host_write(0x8000, 4).unwrap();
/// done.wait().unwrap();
/// assert_eq!(ram.read_u32(0x8004).unwrap(), 7);
/// ```
pub struct Gpu<M, B>
where
    M: GuestMemory + 'static,
    B: Backend + Send + 'static,
{
    shared: Arc<Shared<M, B>>,
    next_id: AtomicU64,
    threaded: bool,
    workers: usize,
}

impl<M, B> std::fmt::Debug for Gpu<M, B>
where
    M: GuestMemory + 'static,
    B: Backend + Send + 'static,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu").field("workers", &self.workers()).finish_non_exhaustive()
    }
}

impl<M, B> Drop for Gpu<M, B>
where
    M: GuestMemory + 'static,
    B: Backend + Send + 'static,
{
    fn drop(&mut self) {
        self.shutdown();
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
    M: GuestMemory + 'static,
    B: Backend + Send + 'static,
{
    fn build(memory: M, backend: B, config: &GpuConfig, threaded: bool) -> Arc<Shared<M, B>> {
        let slices = SliceSizes {
            slice: config.slice_packets,
            busy: config.busy_slice_packets,
            lone: config.lone_slice_packets,
        };
        let sched = Sched::new(&config.processor, slices, threaded, config.wait_polling);
        Arc::new(Shared {
            parts: Parts {
                memory,
                backend: Mutex::new(backend),
                interrupts: Mutex::new(InterruptLines::new(QueueId::COUNT as usize, config.interrupt_capacity)),
                shaders: ShaderRegistry::default(),
            },
            sched: Mutex::new(sched),
            driver: Mutex::new(()),
            work: Condvar::new(),
            changed: Condvar::new(),
            changes: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
            spinning: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            lost: AtomicBool::new(false),
            stalls: StallLine::new(),
            settings: WorkerSettings {
                spin: config.worker_spin,
                host_spin: config.host_spin,
                stall_report_delay: config.stall_report_delay,
                stall_timeout: config.stall_timeout,
            },
            workers: Mutex::new(Vec::new()),
        })
    }

    /// A GPU that runs only when the caller drives it, with a fixed
    /// interleaving (see the module documentation).
    pub fn deterministic(memory: M, backend: B, config: GpuConfig) -> Self {
        let shared = Self::build(memory, backend, &config, false);
        Self { shared, next_id: AtomicU64::new(0), threaded: false, workers: 0 }
    }

    /// A GPU with a pool of [`GpuConfig::workers`] threads that run queues
    /// in parallel as work arrives.
    pub fn threaded(memory: M, backend: B, config: GpuConfig) -> Result<Self, GpuError> {
        let shared = Self::build(memory, backend, &config, true);
        let count = match config.workers {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        // Made before the first worker starts: a failed spawn stops (and
        // joins) the ones already started when it is dropped.
        let gpu = Self { shared: Arc::clone(&shared), next_id: AtomicU64::new(0), threaded: true, workers: count };
        for i in 0..count {
            let shared = Arc::clone(&shared);
            let worker = std::thread::Builder::new()
                .name(format!("pm4-gpu-{i}"))
                .spawn(move || worker::run(shared))
                .map_err(|e| GpuError::Spawn(e.to_string()))?;
            gpu.shared.workers.lock().push(worker);
        }
        Ok(gpu)
    }

    /// True for a GPU made by [`Gpu::threaded`].
    pub fn is_threaded(&self) -> bool {
        self.threaded
    }

    /// Worker threads (0 in deterministic mode).
    pub fn workers(&self) -> usize {
        self.workers
    }

    fn closed(&self) -> Option<GpuError> {
        if self.shared.lost.load(Ordering::Acquire) {
            Some(GpuError::WorkerLost)
        } else if self.shared.stop.load(Ordering::Acquire) {
            Some(GpuError::ShutDown)
        } else {
            None
        }
    }

    fn check_open(&self) -> Result<(), GpuError> {
        self.closed().map_or(Ok(()), Err)
    }

    /// The guest memory the GPU works on (shared: reads and writes through
    /// it go straight to guest memory; tell the GPU about writes with
    /// [`Gpu::notify_host_write`]).
    pub fn memory(&self) -> &M {
        &self.shared.parts.memory
    }

    /// Stops the GPU (see "Shutdown" in the module documentation): work not
    /// completed ends with [`GpuError::ShutDown`], every waiting host thread
    /// wakes, the interrupt and stall channels close, and the workers are
    /// joined (unless called from one of this GPU's callbacks, where they
    /// stop on their own). Idempotent; any thread, any time. Later calls
    /// that give the GPU work answer [`GpuError::ShutDown`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::{Duration, Instant};
    /// use pm4core::backend::{NullBackend, QueueId};
    /// use pm4core::gpu::{Gpu, GpuConfig, GpuError};
    /// use pm4core::memory::FlatMemory;
    ///
    /// let gpu = Arc::new(Gpu::threaded(FlatMemory::new(0, 1 << 16).unwrap(), NullBackend, GpuConfig::default()).unwrap());
    /// let waiter = {
    ///     let gpu = Arc::clone(&gpu);
    ///     std::thread::spawn(move || gpu.wait_interrupt(QueueId::GRAPHICS, Duration::from_secs(30)))
    /// };
    /// std::thread::sleep(Duration::from_millis(10));
    /// let start = Instant::now();
    /// gpu.shutdown();
    /// assert_eq!(waiter.join().unwrap(), Err(GpuError::ShutDown));
    /// assert!(start.elapsed() < Duration::from_secs(5));
    /// assert_eq!(gpu.submit(QueueId::GRAPHICS, 0, 4).unwrap_err(), GpuError::ShutDown);
    /// gpu.shutdown(); // again: nothing more to do
    /// ```
    pub fn shutdown(&self) {
        let shared = &*self.shared;
        shared.stop.store(true, Ordering::Release);
        {
            let mut sched = shared.sched.lock();
            sched.cancel_all(&GpuError::ShutDown);
            // Under the lock: no worker is between its stop check and its wait.
            shared.work.notify_all();
        }
        shared.parts.interrupts.lock().close();
        shared.stalls.close();
        shared.announce_change();
        // From inside a slice (a callback), joining would wait for this very
        // thread, or for a worker whose callback waits for it.
        if reentry::in_slice(shared.id()).is_some() {
            return;
        }
        let workers = std::mem::take(&mut *shared.workers.lock());
        let me = std::thread::current().id();
        for worker in workers {
            if worker.thread().id() != me {
                // A worker that died of a bug already cancelled the pending work.
                let _ = worker.join();
            }
        }
    }

    /// Submits `size_dw` dwords of PM4 packets at `address` to `queue`. The
    /// submission starts after every earlier submission to that queue.
    ///
    /// The command buffer is checked first: `address` dword-aligned, the
    /// buffer inside the 48-bit space and mapped (for an empty one, its
    /// first dword); otherwise [`GpuError::InvalidSubmission`] says which
    /// and nothing runs. Every call takes the next [`SubmissionId`],
    /// refused or not, so ids count the host's submissions.
    pub fn submit(&self, queue: QueueId, address: u64, size_dw: u32) -> Result<Submission, GpuError> {
        let index = queue_index(queue)?;
        self.check_open()?;
        let id = SubmissionId(self.next_id.fetch_add(1, Ordering::Relaxed));
        self.check_submission(queue, address, size_dw)?;
        let slot = Slot::new(self.shared.settings.host_spin);
        let sub = PendingSubmission { id, queue: index, address, size_dw, slot: Arc::clone(&slot) };
        let mut sched = self.shared.sched.lock();
        if self.threaded {
            sched.enqueue(sub);
            drop(sched);
            self.shared.offer_work(false);
        } else {
            sched.push(HostOp::Submit(sub));
        }
        Ok(Submission { id, queue, slot })
    }

    fn check_submission(&self, queue: QueueId, address: u64, size_dw: u32) -> Result<(), GpuError> {
        let refuse = |source| Err(GpuError::InvalidSubmission { queue, address, size_dw, source });
        if address % 4 != 0 {
            return refuse(MemoryError::Misaligned { address });
        }
        // An empty buffer still names a place: its first dword.
        let len = (u64::from(size_dw) * 4).max(4);
        if let Err(source) = check_range(address, len) {
            return refuse(source);
        }
        if !self.shared.parts.memory.is_mapped(address, len) {
            return refuse(MemoryError::Unmapped { address, len });
        }
        Ok(())
    }

    fn check_host_range(&self, address: u64, len: u64) -> Result<(), GpuError> {
        check_range(address, len).map_err(|source| GpuError::HostWrite { address, len, source })?;
        if !self.shared.parts.memory.is_mapped(address, len) {
            return Err(GpuError::HostWrite { address, len, source: MemoryError::Unmapped { address, len } });
        }
        Ok(())
    }

    /// Writes guest memory as the host (the CPU). The bytes are copied.
    ///
    /// Threaded mode: written at once, then as [`Gpu::notify_host_write`];
    /// the returned handle is already applied. Deterministic mode: ordered
    /// with submissions by the WRIT rule (applied when every earlier
    /// submission has run as far as it can, before any later one starts):
    /// at once when that is already so (no host operation is pending and no
    /// queue can run), else when the caller's run reaches it; the handle
    /// says whether the memory took it. A write applied in the call is in
    /// memory for every later call (a `with_memory` that writes the same
    /// bytes then writes over it; a stall it does not end is reported at
    /// once). A range outside the 48-bit space or not mapped is an error at
    /// once.
    pub fn write_memory(&self, address: u64, bytes: &[u8]) -> Result<HostWrite, GpuError> {
        self.check_open()?;
        let len = bytes.len() as u64;
        self.check_host_range(address, len)?;
        if self.threaded {
            let written = self.shared.parts.memory.write_bytes(address, bytes);
            let mut sched = self.shared.sched.lock();
            sched.stats.host_writes += 1;
            if let Err(source) = written {
                sched.stats.host_write_errors += 1;
                return Err(GpuError::HostWrite { address, len, source });
            }
            drop(sched);
            self.invalidate(address, len);
            return Ok(HostWrite { slot: None });
        }
        let mut sched = self.shared.sched.lock();
        if sched.host_write_is_next() {
            // What the next step would do first: apply it now, with no
            // host operation queued and (unless the memory refuses it, which
            // the handle says as for a write applied later) no handle to
            // complete.
            return Ok(match apply_write(&self.shared.parts, &mut sched, address, bytes) {
                Ok(()) => HostWrite { slot: None },
                Err(refused) => {
                    let slot = Slot::new(self.shared.settings.host_spin);
                    slot.complete(Err(refused));
                    HostWrite { slot: Some(slot) }
                }
            });
        }
        let slot = Slot::new(self.shared.settings.host_spin);
        sched.push(HostOp::Write { address, bytes: HostBytes::new(bytes), slot: Arc::clone(&slot) });
        Ok(HostWrite { slot: Some(slot) })
    }

    /// Drops cached decodes of `[address, address + len)` and wakes the
    /// queues watching it; returns how many woke.
    fn invalidate(&self, address: u64, len: u64) -> usize {
        self.shared.parts.shaders.invalidate_range(address, len);
        let woken = self.shared.sched.lock().wrote(address, address.saturating_add(len), None);
        if woken > 0 {
            self.shared.offer_work(woken > 1);
        }
        woken
    }

    /// The host (the emulated CPU, a DMA engine, a file read) wrote
    /// `[address, address + len)` of guest memory directly: wakes exactly
    /// the suspended queues whose watched bytes overlap (at a cost in
    /// proportion to what overlaps, not to the number of queues) and drops
    /// decoded shader containers in the range. Prefetched command dwords
    /// are dropped at every slice's start: a queue that resumes (or next
    /// runs) after this call runs the dwords as the CPU rewrote them; a
    /// write racing with a running slice may or may not be seen by it, as
    /// on hardware. Returns how many queues woke. Notification is by guest
    /// address (see "Host writes" in the module documentation).
    ///
    /// A range outside the 48-bit space, wrapping, or not mapped is an
    /// error and changes nothing.
    pub fn notify_host_write(&self, address: u64, len: u64) -> Result<usize, GpuError> {
        self.check_open()?;
        self.check_host_range(address, len)?;
        self.shared.sched.lock().stats.host_notifications += 1;
        Ok(self.invalidate(address, len))
    }

    /// Deterministic mode: the scheduler, with this thread the GPU's only
    /// driver (another driving thread is waited for).
    fn drive(&self, call: &'static str) -> Result<(MutexGuard<'_, ()>, MutexGuard<'_, Sched>), GpuError> {
        reentry::refuse_in_slice(self.shared.id(), call, "it would run slices inside the slice that called it")?;
        self.check_open()?;
        let driver = self.shared.driver.lock();
        Ok((driver, self.shared.sched.lock()))
    }

    /// Runs until no queue can run and every host operation made before
    /// this call is applied. Returns [`RunStatus::Idle`] or
    /// [`RunStatus::Stalled`] with the report.
    ///
    /// Deterministic mode: runs on the caller's thread. Threaded mode:
    /// blocks until the workers reach that point. Not from a callback of
    /// this GPU ([`GpuError::CalledFromCallback`]).
    pub fn run_until_stalled(&self) -> Result<RunStatus, GpuError> {
        if !self.threaded {
            let (_driver, mut sched) = self.drive("run_until_stalled")?;
            loop {
                self.check_open()?;
                match step(&self.shared, &mut sched) {
                    Step::Ran => {}
                    Step::Idle => return Ok(RunStatus::Idle),
                    Step::Stalled => {
                        let report = sched.stall_report().unwrap_or_default();
                        return Ok(RunStatus::Stalled(report));
                    }
                }
            }
        }
        reentry::refuse_in_slice(
            self.shared.id(),
            "run_until_stalled",
            "the GPU cannot become quiet while the calling slice runs",
        )?;
        let mut sched = self.shared.sched.lock();
        // `None`: a spin too long to reach an end (it never ends).
        let spin_until = Instant::now().checked_add(self.shared.settings.host_spin);
        loop {
            if let Some(error) = self.closed() {
                return Err(error);
            }
            if sched.quiescent() {
                return Ok(match sched.stall_report() {
                    Some(report) => RunStatus::Stalled(report),
                    None => RunStatus::Idle,
                });
            }
            // Poll (without the lock) for a change while the spin lasts,
            // then look again under the lock; after it, block.
            let left = spin_until.map_or(Duration::MAX, |until| until.saturating_duration_since(Instant::now()));
            if !left.is_zero() {
                let seen = self.shared.changes.load(Ordering::SeqCst);
                MutexGuard::unlocked(&mut sched, || {
                    poll_for(left, || self.shared.changes.load(Ordering::SeqCst) != seen)
                });
                continue;
            }
            self.shared.changed.wait(&mut sched);
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

    /// Runs until `submission` completes and returns its final result, as
    /// [`Submission::wait`] does; what a single-threaded embedder of a
    /// deterministic GPU calls, since nothing else drives it.
    ///
    /// Deterministic mode: drives the GPU on the caller's thread, one step
    /// at a time as [`Gpu::run_until_stalled`] does, until the submission
    /// has its result. When the GPU stalls first, answers
    /// [`GpuError::Deadlock`] with the report (the run's answer, as
    /// [`Gpu::run_until_idle`] gives it: nothing is cancelled; a host write
    /// and another call may resolve it). Threaded mode: blocks as
    /// [`Submission::wait`].
    ///
    /// ```
    /// use pm4core::backend::{NullBackend, QueueId};
    /// use pm4core::gpu::{Gpu, GpuConfig, GpuError};
    /// use pm4core::memory::{GuestMemory, SparseMemory};
    /// use pm4core::packet::body::CompareFunction;
    /// use pm4core::packet::builder::CommandBuffer;
    ///
    /// let memory = SparseMemory::new();
    /// memory.map_zeroed(0, 0x10000).unwrap();
    /// let mut cb = CommandBuffer::new();
    /// cb.wait_mem(0x8000, CompareFunction::Equal, 1, u32::MAX).unwrap();
    /// memory.write_bytes(0x1000, &cb.to_bytes()).unwrap();
    /// let gpu = Gpu::deterministic(memory, NullBackend, GpuConfig::default());
    /// let done = gpu.submit(QueueId::GRAPHICS, 0x1000, cb.len_dw()).unwrap();
    /// // Nothing else drives this GPU: the wait would stall for ever.
    /// assert!(matches!(gpu.run_until_complete(&done), Err(GpuError::Deadlock(_))));
    /// gpu.write_memory(0x8000, &1u32.to_le_bytes()).unwrap();
    /// assert_eq!(gpu.run_until_complete(&done).unwrap().waits, 1);
    /// ```
    pub fn run_until_complete(&self, submission: &Submission) -> Result<SubmissionReport, GpuError> {
        if self.threaded {
            return submission.wait();
        }
        let (_driver, mut sched) = self.drive("run_until_complete")?;
        loop {
            if let Some(result) = submission.poll() {
                return result;
            }
            self.check_open()?;
            match step(&self.shared, &mut sched) {
                Step::Ran => {}
                Step::Idle => return submission.poll().unwrap_or(Err(GpuError::Pending)),
                Step::Stalled => {
                    let report = sched.stall_report().unwrap_or_default();
                    return submission.poll().unwrap_or(Err(GpuError::Deadlock(report)));
                }
            }
        }
    }

    /// Deterministic mode: runs at most `max_slices` scheduler steps (slices
    /// or queued host writes; a write applied in its [`Gpu::write_memory`]
    /// call is no step). [`RunStatus::Running`] when work is left that can
    /// run.
    pub fn run_slices(&self, max_slices: u64) -> Result<RunStatus, GpuError> {
        if self.threaded {
            return Err(GpuError::WrongMode { call: "run_slices", mode: "deterministic" });
        }
        let (_driver, mut sched) = self.drive("run_slices")?;
        for _ in 0..max_slices {
            self.check_open()?;
            match step(&self.shared, &mut sched) {
                Step::Ran => {}
                Step::Idle => return Ok(RunStatus::Idle),
                Step::Stalled => return Ok(RunStatus::Stalled(sched.stall_report().unwrap_or_default())),
            }
        }
        Ok(sched.run_status())
    }
}
