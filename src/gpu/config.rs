//! The settings of a [`Gpu`](super::Gpu) and what it reports about itself.

use std::time::Duration;

use crate::processor::{ProcessorConfig, SuspendReason};
use crate::shader::ShaderRegistry;

use super::error::StallReport;
use super::handle::SubmissionId;

/// Settings of a [`Gpu`](super::Gpu).
///
/// Build it with `..GpuConfig::default()` for the fields you leave as they
/// are:
///
/// ```
/// use std::time::Duration;
/// use pm4core::gpu::{GpuConfig, WaitPolling};
///
/// let config = GpuConfig {
///     workers: 2,
///     // A game whose CPU stores its labels natively: poll soon, settle at 500 µs.
///     wait_polling: Some(WaitPolling { first: Duration::from_micros(10), ceiling: Duration::from_micros(500) }),
///     ..GpuConfig::default()
/// };
/// assert_eq!(config.stall_report_delay, Duration::from_millis(1));
/// ```
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
    /// count of [`Gpu::run_slices`](super::Gpu::run_slices) steps the same
    /// packets take, and how far the host's calls between steps may fall
    /// behind. At least [`GpuConfig::slice_packets`] (the default, 0, means
    /// exactly that). The trace replay uses 1024.
    pub lone_slice_packets: u64,
    /// Interrupts kept per queue for the host; when full the oldest is
    /// dropped and counted ([`InterruptReceiver::dropped`](super::InterruptReceiver::dropped),
    /// [`GpuStats::interrupts_dropped`]).
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
    /// [`Submission::wait`](super::Submission::wait),
    /// [`HostWrite::wait`](super::HostWrite::wait) and, in threaded mode,
    /// [`Gpu::run_until_stalled`](super::Gpu::run_until_stalled) and
    /// [`Gpu::run_until_idle`](super::Gpu::run_until_idle). An answer
    /// within it costs no thread wake-up; zero blocks at once.
    pub host_spin: Duration,
    /// Threaded mode: suspended waits on memory are re-read by the GPU
    /// itself, for the CPU stores nobody notifies (an emulator that runs
    /// guest code natively cannot trap a game's store to a label). `None`:
    /// only writes the GPU sees or is told of
    /// ([`Gpu::notify_host_write`](super::Gpu::notify_host_write)) wake a
    /// wait. Deterministic mode never polls (a replay is a fixed sequence).
    /// Default: on, from 20 µs after a suspension, backing off to every 3 ms
    /// (a timed wake-up costs tens of microseconds of CPU on some hosts: on
    /// a virtual machine measured at 50 µs, every 1 ms costs an idle GPU with
    /// waits about 3 % of a core, every 3 ms about 1.5 %).
    pub wait_polling: Option<WaitPolling>,
    /// Threaded mode: a stall is reported on
    /// [`Gpu::stall_reports`](super::Gpu::stall_reports) (and counted in
    /// [`GpuStats::stalls`]) once it has lasted this long; a momentary
    /// stall (the CPU writes its label a few microseconds later) is not.
    /// Default 1 ms; zero reports every stall at once.
    pub stall_report_delay: Duration,
    /// Threaded mode: a stall lasting this long fails the stalled
    /// submissions with [`GpuError::Deadlock`](super::GpuError::Deadlock).
    /// `None` (the default): a stall is only reported and waits go on until
    /// the host writes the label or calls
    /// [`Gpu::declare_deadlock`](super::Gpu::declare_deadlock).
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
            wait_polling: Some(WaitPolling::default()),
            stall_report_delay: Duration::from_millis(1),
            stall_timeout: None,
        }
    }
}

/// How a threaded GPU polls suspended waits on memory that no write it
/// knows of has ended ([`GpuConfig::wait_polling`]).
///
/// A round reads each such wait's watched bytes once (a dword or a qword
/// per wait: the cost is in proportion to the waits that exist, and
/// nothing when none does) and wakes the waits whose bytes changed since
/// the wait read them; a woken wait re-executes its packet, exactly as
/// when a write wakes it, so the result is the same. The first round comes
/// `first` after the latest suspension (within an idle worker's spin, a
/// round is made every few microseconds); each round that wakes nothing
/// doubles the interval, up to `ceiling`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitPolling {
    /// Delay of the first round after a queue suspends.
    pub first: Duration,
    /// Longest interval between two rounds.
    pub ceiling: Duration,
}

impl Default for WaitPolling {
    fn default() -> Self {
        Self { first: Duration::from_micros(20), ceiling: Duration::from_millis(3) }
    }
}

/// Counters of a [`Gpu`](super::Gpu) over its lifetime.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuStats {
    /// Submissions released to their queues.
    pub submissions: u64,
    /// Submissions that ran to their end.
    pub completed: u64,
    /// Submissions stopped by a processor error or a panic.
    pub failed: u64,
    /// Submissions aborted by the host or declared deadlocked.
    pub aborted: u64,
    /// Host writes applied (or refused by memory).
    pub host_writes: u64,
    /// Host writes the memory refused.
    pub host_write_errors: u64,
    /// Host-write notifications ([`Gpu::notify_host_write`](super::Gpu::notify_host_write)).
    pub host_notifications: u64,
    /// Slices run.
    pub slices: u64,
    /// Packets run by all queues (the sum of every processor's
    /// [`ProcessorStats::packets`](crate::processor::ProcessorStats::packets)).
    pub packets: u64,
    /// Command dwords read by all queues.
    pub dwords: u64,
    /// Suspended queues woken to re-check their wait.
    pub wakes: u64,
    /// Polling rounds over suspended waits ([`GpuConfig::wait_polling`]).
    pub poll_rounds: u64,
    /// Waits a polling round woke (their bytes had changed unnotified).
    pub poll_wakes: u64,
    /// Stalls reported (threaded mode: each stall that lasted
    /// [`GpuConfig::stall_report_delay`], once).
    pub stalls: u64,
    /// Stall reports dropped because the host left 64 unread.
    pub stalls_dropped: u64,
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
    /// Work is left that can run ([`Gpu::run_slices`](super::Gpu::run_slices) ran out of slices).
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

/// The parts a [`Gpu`](super::Gpu) was built from, back from
/// [`Gpu::into_parts`](super::Gpu::into_parts).
pub struct GpuParts<M, B> {
    pub memory: M,
    pub backend: B,
    pub shaders: ShaderRegistry,
}
