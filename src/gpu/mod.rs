//! The GPU front end: the graphics queue and the 56 compute queues, each a
//! [`Processor`] with its own register file, sharing one guest memory, one
//! backend and one [`ShaderRegistry`], scheduled so that no queue starves the
//! others, that a waiting queue costs nothing until memory it watches
//! changes, and that a stall is reported instead of hanging.
//!
//! # Architecture: the GPU front end (`src/gpu/`)
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
//! label. Threaded mode reports each stall once on [`Gpu::stall_reports`]
//! (and counts it in [`GpuStats::stalls`]); waits keep blocking. It becomes
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
//! [`GpuError::BackendPanicked`] and the queue goes on.
//!
//! **Errors.** A [`Pm4Error`](crate::processor::Pm4Error) aborts that
//! submission only: its handle completes with [`GpuError::Processor`] and the
//! queue starts its next submission.
//!
//! **Shutdown.** Dropping the [`Gpu`] (or [`Gpu::into_parts`]) stops the
//! workers between two slices (never inside a packet), completes every
//! submission that has not completed with [`GpuError::ShutDown`] (running
//! ones stop at a packet boundary; their earlier packets' effects stay),
//! queued ones never start, then joins the workers. Host threads blocked in
//! a wait return. To drain instead, call [`Gpu::run_until_idle`] first. If a
//! worker dies of a bug outside a slice, pending work completes with
//! [`GpuError::WorkerLost`].
//!
//! **Tracing.** Each queue has an `info` span `queue` (field `queue`, e.g.
//! `comp0.1`); each submission an `info` span `submission` (fields `id`,
//! `address`, `size_dw`) whose parent is its queue's span, entered for every
//! slice. Stalls are logged at `debug`, failed submissions at `warn`.

mod core;
mod error;
mod handle;
mod tap;
mod watch;
mod worker;

pub use error::{GpuError, QueueStall, StallReport};
pub use handle::{HostWrite, Submission, SubmissionId, SubmissionReport};
pub use tap::Interrupt;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::backend::{Backend, QueueId};
use crate::memory::{check_range, GuestMemory, MemoryError};
use crate::processor::{GlobalState, Processor, ProcessorConfig, ProcessorStats, SuspendReason};
use crate::regs::RegisterFile;
use crate::shader::ShaderRegistry;

use self::core::{apply_write, step, HostBytes, HostOp, Parts, PendingSubmission, Sched, SliceSizes, Step};
use self::handle::Slot;
use self::tap::Tap;
use self::worker::{poll_for, Shared, WorkerSettings};

/// Settings of a [`Gpu`].
#[derive(Clone, Debug)]
pub struct GpuConfig {
    /// Configuration of every processor.
    pub processor: ProcessorConfig,
    /// Most packets a queue runs before the next runnable queue's turn
    /// (at least 1).
    pub slice_packets: u64,
    /// Threaded mode: most packets of a slice that starts while no queue
    /// waits (on memory, a register or the constant engine); at least
    /// [`GpuConfig::slice_packets`]. A waiting queue is woken by writes when
    /// the writer's slice ends, so while one waits slices stay short; while
    /// none does, longer slices cost fewer trips through the scheduler lock
    /// per packet (queues then take turns less often, in the same
    /// round-robin order). Deterministic mode uses `slice_packets` (or
    /// [`GpuConfig::lone_slice_packets`]).
    pub busy_slice_packets: u64,
    /// Deterministic mode: most packets of a slice that starts while its
    /// queue is the only one with work (no other queue has a submission
    /// running, queued or waiting). Nothing can run between two such
    /// slices, so a longer one changes no effect and no order: only the
    /// count of [`Gpu::run_slices`] steps the same packets take, and how
    /// far the host's calls between steps may fall behind. At least
    /// [`GpuConfig::slice_packets`] (the default, 0, means exactly that).
    /// The trace replay uses 1024: a single-queue stream then goes through
    /// the scheduler once per 1024 packets instead of once per 64.
    pub lone_slice_packets: u64,
    /// Interrupts kept per queue for the host; when full the oldest is
    /// dropped (and counted in [`GpuStats::interrupts_dropped`]).
    pub interrupt_capacity: usize,
    /// Threaded mode: worker threads running queues in parallel; 0 = the
    /// available cores ([`std::thread::available_parallelism`]).
    pub workers: usize,
    /// Threaded mode: how long an idle worker keeps polling for new work
    /// (yielding the CPU) before it parks. Waking a parked thread costs tens
    /// of microseconds on some hosts; zero parks at once.
    pub worker_spin: Duration,
    /// How long a host thread that must wait for the GPU polls (a few dozen
    /// looks between yields of the CPU) before it blocks:
    /// [`Submission::wait`], [`HostWrite::wait`] and, in threaded mode,
    /// [`Gpu::run_until_stalled`] and [`Gpu::run_until_idle`]. An answer
    /// within it costs no thread wake-up (tens of microseconds on some
    /// hosts); zero blocks at once. (A wait for a queue's processor to come
    /// back from a slice, as [`Gpu::with_processor`] may make, blocks at
    /// once.)
    pub host_spin: Duration,
    /// Threaded mode: a stall lasting this long fails the stalled
    /// submissions with [`GpuError::Deadlock`]. `None` (the default): a
    /// stall is only reported ([`Gpu::stall_reports`]) and waits go on until
    /// the host writes the label or calls [`Gpu::declare_deadlock`].
    pub stall_timeout: Option<Duration>,
}

impl Default for GpuConfig {
    fn default() -> Self {
        Self {
            processor: ProcessorConfig::default(),
            slice_packets: 64,
            busy_slice_packets: 256,
            lone_slice_packets: 0,
            interrupt_capacity: 1024,
            workers: 0,
            worker_spin: Duration::from_micros(50),
            host_spin: Duration::from_micros(50),
            stall_timeout: None,
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
    /// Submissions stopped by a processor error or a backend panic.
    pub failed: u64,
    /// Submissions aborted by the host or declared deadlocked.
    pub aborted: u64,
    /// Host writes applied (or refused by memory).
    pub host_writes: u64,
    /// Host writes the memory refused.
    pub host_write_errors: u64,
    /// Host-write notifications ([`Gpu::notify_host_write`]).
    pub host_notifications: u64,
    /// Slices run.
    pub slices: u64,
    /// Packets run by all queues (the sum of every processor's
    /// [`ProcessorStats::packets`]), read in one call to bound total work.
    pub packets: u64,
    /// Command dwords read by all queues ([`ProcessorStats::dwords`]).
    pub dwords: u64,
    /// Suspended queues woken to re-check their wait.
    pub wakes: u64,
    /// Stalls detected (threaded mode: each stall episode once).
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

/// The workers of a threaded [`Gpu`]. Dropping it stops and joins them.
struct Control<M, B> {
    shared: Arc<Shared<M, B>>,
    workers: Vec<JoinHandle<()>>,
}

impl<M, B> Drop for Control<M, B> {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        {
            // Taken so that no worker is between its stop check and its wait.
            let _sched = self.shared.sched.lock();
            self.shared.work.notify_all();
        }
        for worker in self.workers.drain(..) {
            // A worker that died of a bug already cancelled the pending work.
            let _ = worker.join();
        }
        // Waiting host threads get their answer now, not when the last
        // reference goes.
        self.shared.sched.lock().cancel_all(&GpuError::ShutDown);
        self.shared.announce_change();
    }
}

/// The GPU front end: 57 queues sharing one guest memory, one backend and one
/// shader registry. See the [module documentation](self) for the scheduling
/// rules and guarantees.
///
/// All methods take `&self`; a `Gpu` is `Sync` and may be shared between
/// host threads (`Arc<Gpu>` or scoped threads). The backend: one per queue
/// from a factory ([`Backend::queue_backend`], called without a lock on the
/// queue's worker), or the GPU's own behind a lock taken per call (once
/// per slice in deterministic mode, where no other slice runs; see
/// "Backend threading contract" in the module documentation). Do not call `Gpu` methods
/// from inside a `with_*` closure: the locks are not re-entrant.
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
/// use pm4core::packet::{Header, Opcode};
///
/// let ram = Arc::new(FlatMemory::new(0, 1 << 20).unwrap());
/// // WAIT_REG_MEM: memory 0x8000 == 1, then WRITE_DATA 7 to 0x8004.
/// let cmd = [
///     Header::type3(Opcode::WAIT_REG_MEM, 6).0, 0x13, 0x8000, 0, 1, 0xFFFF_FFFF, 4,
///     Header::type3(Opcode::WRITE_DATA, 4).0, 5 << 8 | 1 << 20, 0x8004, 0, 7,
/// ];
/// for (i, dword) in cmd.iter().enumerate() {
///     ram.write_u32(0x1000 + 4 * i as u64, *dword).unwrap();
/// }
/// let gpu = Gpu::threaded(Arc::clone(&ram), NullBackend, GpuConfig::default()).unwrap();
/// let stalls = gpu.stall_reports();
/// let queue = QueueId::compute(0, 0).unwrap();
/// let done = gpu.submit(queue, 0x1000, cmd.len() as u32).unwrap();
/// // The queue waits for the CPU: reported, not an error.
/// let report = stalls.recv_timeout(Duration::from_secs(10)).unwrap();
/// assert_eq!(report.queues[0].queue, queue);
/// assert!(done.wait_timeout(Duration::ZERO).is_none());
/// // The CPU writes the label directly, then notifies.
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
    /// `None` in deterministic mode. Declared first: dropped (workers
    /// stopped and joined) before the shared state.
    control: Option<Control<M, B>>,
    shared: Arc<Shared<M, B>>,
    next_id: AtomicU64,
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
        let backend = Tap::new(backend, QueueId::COUNT as usize, config.interrupt_capacity);
        let slices = SliceSizes {
            slice: config.slice_packets,
            busy: config.busy_slice_packets,
            lone: config.lone_slice_packets,
        };
        let sched = Sched::new(&config.processor, slices, threaded);
        let (stall_tx, stall_rx) = crossbeam_channel::bounded(64);
        Arc::new(Shared {
            parts: Parts { memory, backend: Mutex::new(backend), shaders: ShaderRegistry::default() },
            sched: Mutex::new(sched),
            work: Condvar::new(),
            changed: Condvar::new(),
            changes: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
            spinning: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            lost: AtomicBool::new(false),
            stall_tx,
            stall_rx,
            settings: WorkerSettings {
                spin: config.worker_spin,
                host_spin: config.host_spin,
                stall_timeout: config.stall_timeout,
            },
        })
    }

    /// A GPU that runs only when the caller drives it, with a fixed
    /// interleaving (see the module documentation).
    pub fn deterministic(memory: M, backend: B, config: GpuConfig) -> Self {
        let shared = Self::build(memory, backend, &config, false);
        Self { shared, control: None, next_id: AtomicU64::new(0) }
    }

    /// A GPU with a pool of [`GpuConfig::workers`] threads that run queues
    /// in parallel as work arrives.
    pub fn threaded(memory: M, backend: B, config: GpuConfig) -> Result<Self, GpuError> {
        let shared = Self::build(memory, backend, &config, true);
        let count = match config.workers {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let mut control = Control { shared: Arc::clone(&shared), workers: Vec::with_capacity(count) };
        for i in 0..count {
            let shared = Arc::clone(&shared);
            let worker = std::thread::Builder::new()
                .name(format!("pm4-gpu-{i}"))
                .spawn(move || worker::run(shared))
                .map_err(|e| GpuError::Spawn(e.to_string()))?;
            control.workers.push(worker);
        }
        Ok(Self { shared, control: Some(control), next_id: AtomicU64::new(0) })
    }

    /// True for a GPU made by [`Gpu::threaded`].
    pub fn is_threaded(&self) -> bool {
        self.control.is_some()
    }

    /// Worker threads (0 in deterministic mode).
    pub fn workers(&self) -> usize {
        self.control.as_ref().map_or(0, |c| c.workers.len())
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

    /// The guest memory the GPU works on (shared: reads and writes through
    /// it go straight to guest memory; tell the GPU about writes with
    /// [`Gpu::notify_host_write`]).
    pub fn memory(&self) -> &M {
        &self.shared.parts.memory
    }

    /// Submits `size_dw` dwords of PM4 packets at `address` to `queue`. The
    /// submission starts after every earlier submission to that queue.
    pub fn submit(&self, queue: QueueId, address: u64, size_dw: u32) -> Result<Submission, GpuError> {
        let index = queue_index(queue)?;
        if let Some(error) = self.closed() {
            return Err(error);
        }
        let id = SubmissionId(self.next_id.fetch_add(1, Ordering::Relaxed));
        let slot = Slot::new(self.shared.settings.host_spin);
        let sub = PendingSubmission { id, queue: index, address, size_dw, slot: Arc::clone(&slot) };
        let mut sched = self.shared.sched.lock();
        if self.is_threaded() {
            sched.enqueue(sub);
            drop(sched);
            self.shared.offer_work(false);
        } else {
            sched.push(HostOp::Submit(sub));
        }
        Ok(Submission { id, queue, slot })
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
        let len = bytes.len() as u64;
        self.check_host_range(address, len)?;
        if self.is_threaded() {
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
    /// on hardware. Returns how many queues woke.
    ///
    /// A range outside the 48-bit space, wrapping, or not mapped is an
    /// error and changes nothing.
    pub fn notify_host_write(&self, address: u64, len: u64) -> Result<usize, GpuError> {
        self.check_host_range(address, len)?;
        self.shared.sched.lock().stats.host_notifications += 1;
        Ok(self.invalidate(address, len))
    }

    /// Runs until no queue can run and every host operation made before
    /// this call is applied. Returns [`RunStatus::Idle`] or
    /// [`RunStatus::Stalled`] with the report.
    ///
    /// Deterministic mode: runs on the caller's thread. Threaded mode:
    /// blocks until the workers reach that point.
    pub fn run_until_stalled(&self) -> Result<RunStatus, GpuError> {
        let mut sched = self.shared.sched.lock();
        if !self.is_threaded() {
            loop {
                match step(&self.shared.parts, &mut sched) {
                    Step::Ran => {}
                    Step::Idle => return Ok(RunStatus::Idle),
                    Step::Stalled => {
                        let report = sched.stall_report().unwrap_or_default();
                        return Ok(RunStatus::Stalled(report));
                    }
                }
            }
        }
        // `None`: a spin too long to reach an end (it never ends).
        let spin_until = Instant::now().checked_add(self.shared.settings.host_spin);
        loop {
            if let Some(error) = self.closed() {
                return Err(error);
            }
            if sched.quiescent() {
                self.shared.note_stall(&mut sched);
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
    /// use pm4core::packet::{Header, Opcode};
    ///
    /// let memory = SparseMemory::new();
    /// memory.map_zeroed(0, 0x10000).unwrap();
    /// // WAIT_REG_MEM: memory 0x8000 == 1.
    /// let cmd = [Header::type3(Opcode::WAIT_REG_MEM, 6).0, 0x13, 0x8000, 0, 1, 0xFFFF_FFFF, 4];
    /// for (i, dword) in cmd.iter().enumerate() {
    ///     memory.write_u32(0x1000 + 4 * i as u64, *dword).unwrap();
    /// }
    /// let gpu = Gpu::deterministic(memory, NullBackend, GpuConfig::default());
    /// let done = gpu.submit(QueueId::GRAPHICS, 0x1000, cmd.len() as u32).unwrap();
    /// // Nothing else drives this GPU: the wait would stall for ever.
    /// assert!(matches!(gpu.run_until_complete(&done), Err(GpuError::Deadlock(_))));
    /// gpu.write_memory(0x8000, &1u32.to_le_bytes()).unwrap();
    /// assert_eq!(gpu.run_until_complete(&done).unwrap().waits, 1);
    /// ```
    pub fn run_until_complete(&self, submission: &Submission) -> Result<SubmissionReport, GpuError> {
        if self.is_threaded() {
            return submission.wait();
        }
        let mut sched = self.shared.sched.lock();
        loop {
            if let Some(result) = submission.poll() {
                return result;
            }
            match step(&self.shared.parts, &mut sched) {
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
        if self.is_threaded() {
            return Err(GpuError::WrongMode { call: "run_slices", mode: "deterministic" });
        }
        let mut sched = self.shared.sched.lock();
        for _ in 0..max_slices {
            match step(&self.shared.parts, &mut sched) {
                Step::Ran => {}
                Step::Idle => return Ok(RunStatus::Idle),
                Step::Stalled => return Ok(RunStatus::Stalled(sched.stall_report().unwrap_or_default())),
            }
        }
        Ok(sched.run_status())
    }

    /// The current stall, if every queue with work is suspended, no slice
    /// runs and no host operation is pending (a snapshot).
    pub fn stall_report(&self) -> Option<StallReport> {
        self.shared.sched.lock().stall_report()
    }

    /// The channel on which threaded mode reports each stall once (bounded:
    /// reports the host does not read are dropped when 64 are waiting).
    pub fn stall_reports(&self) -> Receiver<StallReport> {
        self.shared.stall_rx.clone()
    }

    /// The embedder decides that the current stall will not resolve: every
    /// suspended submission fails with [`GpuError::Deadlock`] (its queue goes
    /// on with its next submission). Returns the report, or `None` when the
    /// GPU is not stalled.
    pub fn declare_deadlock(&self) -> Option<StallReport> {
        let report = self.shared.sched.lock().declare_deadlock();
        if report.is_some() {
            self.shared.offer_work(true);
            self.shared.announce_change();
        }
        report
    }

    /// Stops the submission `queue` is running (between packets; at the end
    /// of the slice if one runs); its handle completes with
    /// [`GpuError::Aborted`] and the queue goes on with its next submission.
    /// Returns the aborted submission, if one was running.
    pub fn abort(&self, queue: QueueId) -> Result<Option<SubmissionId>, GpuError> {
        let index = queue_index(queue)?;
        let aborted = self.shared.sched.lock().abort(index);
        self.shared.offer_work(false);
        Ok(aborted)
    }

    /// The host's receiver of `queue`'s interrupts (a clone: receivers share
    /// one channel, each interrupt goes to one of them).
    pub fn interrupts(&self, queue: QueueId) -> Result<Receiver<Interrupt>, GpuError> {
        let index = queue_index(queue)?;
        self.shared.parts.backend.lock().receiver(index).ok_or(GpuError::QueueOutOfRange { queue: queue.0 })
    }

    /// The next interrupt of `queue`, waiting at most `timeout`; `None` when
    /// none came.
    pub fn wait_interrupt(&self, queue: QueueId, timeout: Duration) -> Result<Option<Interrupt>, GpuError> {
        let rx = self.interrupts(queue)?;
        match rx.recv_timeout(timeout) {
            Ok(interrupt) => Ok(Some(interrupt)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(GpuError::ShutDown),
        }
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

    /// The backend (the user's), between two backend calls. Queues with a
    /// backend of their own ([`Backend::queue_backend`]) call that one
    /// instead; it is not reachable here.
    pub fn with_backend<R>(&self, f: impl FnOnce(&mut B) -> R) -> R {
        f(&mut self.shared.parts.backend.lock().inner)
    }

    /// The shader registry.
    pub fn with_shaders<R>(&self, f: impl FnOnce(&ShaderRegistry) -> R) -> R {
        f(&self.shared.parts.shaders)
    }

    /// Memory, backend and shader registry at once (for example to create a
    /// shader, which reads and patches memory). Every suspended queue is
    /// re-checked afterwards, and decoded containers other than those the
    /// closure registered are dropped.
    pub fn with_shared<R>(&self, f: impl FnOnce(&M, &mut B, &ShaderRegistry) -> R) -> R {
        let parts = &self.shared.parts;
        let result = f(&parts.memory, &mut parts.backend.lock().inner, &parts.shaders);
        let woken = self.shared.sched.lock().wake_all();
        if woken > 0 {
            self.shared.offer_work(true);
        }
        result
    }

    /// The scheduler with `queue`'s processor at home (waiting for a slice
    /// that has it to end).
    fn queue_home(&self, index: usize) -> MutexGuard<'_, Sched> {
        let mut sched = self.shared.sched.lock();
        while sched.queues.get(index).is_some_and(|q| q.processor.is_out()) {
            sched.processor_waiters += 1;
            self.shared.changed.wait(&mut sched);
            sched.processor_waiters -= 1;
        }
        sched
    }

    /// A look at `queue`'s processor (registers, stats, execution state),
    /// between two of its slices.
    pub fn with_processor<R>(&self, queue: QueueId, f: impl FnOnce(&Processor) -> R) -> Result<R, GpuError> {
        let index = queue_index(queue)?;
        let mut sched = self.queue_home(index);
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
        let mut sched = self.queue_home(index);
        let q = sched.queues.get_mut(index).ok_or(GpuError::QueueOutOfRange { queue: queue.0 })?;
        let processor = q.processor.get_mut().ok_or(GpuError::QueueOutOfRange { queue: queue.0 })?;
        Ok(f(processor, &self.shared.parts.memory))
    }

    /// `queue`'s register file, for host-side set-up, between two of its
    /// slices; the queue re-checks a wait afterwards.
    pub fn with_registers_mut<R>(&self, queue: QueueId, f: impl FnOnce(&mut RegisterFile) -> R) -> Result<R, GpuError> {
        let index = queue_index(queue)?;
        let mut sched = self.queue_home(index);
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
        let sched = self.queue_home(index);
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
        let (interrupts, dropped) = {
            let tap = self.shared.parts.backend.lock();
            (tap.interrupts, tap.dropped)
        };
        GpuStats { interrupts, interrupts_dropped: dropped, ..self.shared.sched.lock().stats }
    }

    /// Stops the GPU (pending work completes with [`GpuError::ShutDown`], as
    /// on drop) and gives back memory, backend and shader registry.
    pub fn into_parts(self) -> Result<GpuParts<M, B>, GpuError> {
        let Gpu { shared, control, .. } = self;
        // Stops and joins the workers, which cancels what is pending.
        drop(control);
        let shared = Arc::try_unwrap(shared).map_err(|_| GpuError::WorkerLost)?;
        let Shared { parts, sched, .. } = shared;
        // Cancels what is pending (deterministic mode).
        drop(sched);
        let Parts { memory, backend, shaders } = parts;
        Ok(GpuParts { memory, backend: backend.into_inner().inner, shaders })
    }
}
