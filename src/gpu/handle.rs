//! Handles the host keeps for work it handed to the GPU: [`Submission`] and
//! [`HostWrite`]. Each shares a completion slot with the scheduler; the
//! scheduler fills it exactly once.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::backend::QueueId;

use super::error::GpuError;
use super::worker::poll_for;

/// Number of a submission, unique per [`super::Gpu`], in call order from 0
/// (a replay's submission N is the trace's N-th SUBM chunk, as `pm4 disasm`
/// numbers them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SubmissionId(pub u64);

impl fmt::Display for SubmissionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// What one submission did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubmissionReport {
    pub id: SubmissionId,
    pub queue: QueueId,
    /// The command buffer and its size.
    pub address: u64,
    pub size_dw: u32,
    /// Packets decoded (executed or skipped), dwords consumed.
    pub packets: u64,
    pub dwords: u64,
    /// Times a packet suspended the queue (a resumed wait that still fails
    /// counts again).
    pub waits: u64,
    /// Releases that retired.
    pub fences: u64,
    pub draws: u64,
    pub dispatches: u64,
    /// Scheduler slices it took.
    pub slices: u64,
}

/// A completion slot: filled once by the scheduler, read by any number of
/// host threads, which poll it for [`super::GpuConfig::host_spin`] and then
/// block on it.
pub(crate) struct Slot<T> {
    result: Mutex<Option<Result<T, GpuError>>>,
    ready: Condvar,
    /// Set once `result` is filled: what a waiting thread polls.
    filled: AtomicBool,
    /// How long a waiting thread polls before it blocks.
    spin: Duration,
}

impl<T: Clone> Slot<T> {
    pub(crate) fn new(spin: Duration) -> Arc<Self> {
        Arc::new(Self { result: Mutex::new(None), ready: Condvar::new(), filled: AtomicBool::new(false), spin })
    }

    /// Fills the slot; a second completion is ignored. Returns whether this
    /// call filled it.
    pub(crate) fn complete(&self, result: Result<T, GpuError>) -> bool {
        let mut state = self.result.lock();
        let first = state.is_none();
        if first {
            *state = Some(result);
            self.filled.store(true, Ordering::Release);
        }
        drop(state);
        self.ready.notify_all();
        first
    }

    pub(crate) fn poll(&self) -> Option<Result<T, GpuError>> {
        self.result.lock().clone()
    }

    /// Blocks until the result is there; `None` when the deadline passed.
    /// Polls first (a result that comes within the spin costs no wake-up).
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> Option<Result<T, GpuError>> {
        let spin = match deadline {
            Some(deadline) => self.spin.min(deadline.saturating_duration_since(Instant::now())),
            None => self.spin,
        };
        poll_for(spin, || self.filled.load(Ordering::Acquire));
        let mut state = self.result.lock();
        loop {
            if let Some(result) = &*state {
                return Some(result.clone());
            }
            match deadline {
                None => self.ready.wait(&mut state),
                Some(deadline) => {
                    if self.ready.wait_until(&mut state, deadline).timed_out() {
                        return state.clone();
                    }
                }
            }
        }
    }
}

fn deadline_after(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

/// The host's handle on one submission. Cloning it gives another handle on
/// the same submission. (Examples: [`super::Gpu`]'s, where a thread waits for
/// a CPU label, and [`super::Gpu::run_until_complete`]'s.)
#[derive(Clone)]
pub struct Submission {
    pub(crate) id: SubmissionId,
    pub(crate) queue: QueueId,
    pub(crate) slot: Arc<Slot<SubmissionReport>>,
}

impl fmt::Debug for Submission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Submission")
            .field("id", &self.id)
            .field("queue", &self.queue)
            .field("complete", &self.is_complete())
            .finish()
    }
}

impl Submission {
    /// The submission's number.
    pub fn id(&self) -> SubmissionId {
        self.id
    }

    /// The queue it was submitted to.
    pub fn queue(&self) -> QueueId {
        self.queue
    }

    /// The final result, if the submission has completed (or failed, or was
    /// cancelled). Never blocks.
    pub fn poll(&self) -> Option<Result<SubmissionReport, GpuError>> {
        self.slot.poll()
    }

    /// True once the final result is there.
    pub fn is_complete(&self) -> bool {
        self.slot.poll().is_some()
    }

    /// Blocks until the submission completes, fails or is cancelled, and
    /// returns that final result. It polls for
    /// [`super::GpuConfig::host_spin`] first (a result within that costs no
    /// thread wake-up), then sleeps.
    ///
    /// A stall (every queue with work waiting on memory) does not end the
    /// wait: the host may still write the label. It is reported on
    /// [`super::Gpu::stall_reports`]; the submission fails with
    /// [`GpuError::Deadlock`] only when the embedder says so
    /// ([`super::GpuConfig::stall_timeout`], [`super::Gpu::declare_deadlock`]).
    /// Dropping the GPU completes pending work with [`GpuError::ShutDown`],
    /// so a wait never outlives the GPU.
    ///
    /// **Deterministic mode: this call never drives the GPU.** Nothing runs
    /// there unless a thread drives it ([`super::Gpu::run_until_stalled`],
    /// `run_until_idle`, `run_slices`), so that thread keeps the
    /// interleaving it chose; a guest thread may block here meanwhile. If no
    /// thread drives the GPU, this wait blocks until the GPU is dropped. A
    /// thread that drives the GPU itself calls
    /// [`super::Gpu::run_until_complete`] instead (or [`Submission::poll`]
    /// between its runs).
    ///
    /// From inside a backend or memory callback, a submission not complete
    /// yet answers [`GpuError::CalledFromCallback`] (it may need the very
    /// slice that waits); [`Submission::wait_timeout`] is bounded and works
    /// there.
    pub fn wait(&self) -> Result<SubmissionReport, GpuError> {
        if let Some(result) = self.poll() {
            return result;
        }
        if super::reentry::in_any_slice() {
            return Err(GpuError::CalledFromCallback {
                call: "Submission::wait",
                why: "the submission may need the slice that is waiting for it",
            });
        }
        self.slot.wait(None).unwrap_or(Err(GpuError::Pending))
    }

    /// [`Submission::wait`] for at most `timeout`; `None` when it ran out.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<Result<SubmissionReport, GpuError>> {
        self.slot.wait(deadline_after(timeout))
    }
}

/// The host's handle on one host write ([`super::Gpu::write_memory`]).
///
/// Threaded mode applies the write in the call. Deterministic mode orders it
/// with submissions (the trace format's WRIT rule): in the call when no
/// host operation is pending and no queue can run, else when the caller's
/// run reaches it.
///
/// ```
/// use pm4core::backend::{NullBackend, QueueId};
/// use pm4core::gpu::{Gpu, GpuConfig};
/// use pm4core::memory::{GuestMemory, SparseMemory};
/// use pm4core::packet::{Header, Opcode};
///
/// let memory = SparseMemory::new();
/// memory.map_zeroed(0, 0x10000).unwrap();
/// // WRITE_DATA: 0x8000 = 7.
/// let cmd = [Header::type3(Opcode::WRITE_DATA, 3).0, 5 << 8 | 1 << 20, 0x8000, 0, 7];
/// for (i, dword) in cmd.iter().enumerate() {
///     memory.write_u32(0x1000 + 4 * i as u64, *dword).unwrap();
/// }
/// let gpu = Gpu::deterministic(memory, NullBackend, GpuConfig::default());
/// // Nothing ahead of it: in memory at once.
/// assert!(gpu.write_memory(0x8000, &1u32.to_le_bytes()).unwrap().is_applied());
/// // Behind a submission the GPU has not run: applied after it.
/// gpu.submit(QueueId::GRAPHICS, 0x1000, cmd.len() as u32).unwrap();
/// let late = gpu.write_memory(0x8000, &2u32.to_le_bytes()).unwrap();
/// assert_eq!(late.poll(), None);
/// gpu.run_until_idle().unwrap();
/// assert_eq!(late.wait(), Ok(()));
/// assert_eq!(gpu.memory().read_u32(0x8000).unwrap(), 2);
/// ```
#[derive(Clone)]
pub struct HostWrite {
    /// The write's completion slot; `None` for a write applied before
    /// [`super::Gpu::write_memory`] returned (nothing to wait for, nothing
    /// allocated), filled at once for one refused then.
    pub(crate) slot: Option<Arc<Slot<()>>>,
}

impl fmt::Debug for HostWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostWrite").field("applied", &self.is_applied()).finish()
    }
}

impl HostWrite {
    /// `Some(Ok(()))` once applied, `Some(Err(..))` when it could not be
    /// (memory refused it, or the GPU shut down first), `None` while pending.
    pub fn poll(&self) -> Option<Result<(), GpuError>> {
        match &self.slot {
            Some(slot) => slot.poll(),
            None => Some(Ok(())),
        }
    }

    /// True once the write is in guest memory.
    pub fn is_applied(&self) -> bool {
        matches!(self.poll(), Some(Ok(())))
    }

    /// Blocks until the write is applied or refused (threaded mode applies
    /// it before [`super::Gpu::write_memory`] returns; deterministic mode
    /// in that call when nothing is ahead of it, else when the caller's run
    /// reaches it).
    ///
    /// From inside a backend or memory callback, a write not applied yet
    /// answers [`GpuError::CalledFromCallback`] (deterministic mode applies
    /// it after the calling slice).
    pub fn wait(&self) -> Result<(), GpuError> {
        match &self.slot {
            Some(slot) => {
                if let Some(result) = slot.poll() {
                    return result;
                }
                if super::reentry::in_any_slice() {
                    return Err(GpuError::CalledFromCallback {
                        call: "HostWrite::wait",
                        why: "the write is applied after the slice that is waiting for it",
                    });
                }
                slot.wait(None).unwrap_or(Err(GpuError::Pending))
            }
            None => Ok(()),
        }
    }

    /// [`HostWrite::wait`] for at most `timeout`; `None` when it ran out.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<Result<(), GpuError>> {
        match &self.slot {
            Some(slot) => slot.wait(deadline_after(timeout)),
            None => Some(Ok(())),
        }
    }
}
