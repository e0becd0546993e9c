//! Handles the host keeps for work it handed to the GPU: [`Submission`] and
//! [`HostWrite`]. Each shares a completion slot with the scheduler; the
//! scheduler fills it exactly once.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::backend::QueueId;

use super::error::{GpuError, StallReport};

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

struct SlotState<T> {
    result: Option<Result<T, GpuError>>,
    /// Set while the whole GPU is stalled with this work pending.
    /// The number of host commands the worker had taken when it found it.
    stalled: Option<(Arc<StallReport>, u64)>,
}

/// A completion slot: filled once by the scheduler, read by any number of
/// host threads.
pub(crate) struct Slot<T> {
    state: Mutex<SlotState<T>>,
    ready: Condvar,
    /// Threaded mode: host commands sent to the worker so far. `None` in
    /// deterministic mode, where nobody else drives the GPU and waiting
    /// would hang.
    sent: Option<Arc<AtomicU64>>,
}

impl<T: Clone> Slot<T> {
    pub(crate) fn new(sent: Option<Arc<AtomicU64>>) -> Arc<Self> {
        Arc::new(Self { state: Mutex::new(SlotState { result: None, stalled: None }), ready: Condvar::new(), sent })
    }

    /// Fills the slot; a second completion is ignored. Returns whether this
    /// call filled it.
    pub(crate) fn complete(&self, result: Result<T, GpuError>) -> bool {
        let mut state = self.state.lock();
        let first = state.result.is_none();
        if first {
            state.result = Some(result);
        }
        state.stalled = None;
        drop(state);
        self.ready.notify_all();
        first
    }

    /// The worker found the GPU stalled after taking `taken` host commands.
    pub(crate) fn set_stalled(&self, report: &Arc<StallReport>, taken: u64) {
        let mut state = self.state.lock();
        if state.result.is_none() {
            state.stalled = Some((Arc::clone(report), taken));
            drop(state);
            self.ready.notify_all();
        }
    }

    pub(crate) fn clear_stalled(&self) {
        self.state.lock().stalled = None;
    }

    pub(crate) fn poll(&self) -> Option<Result<T, GpuError>> {
        self.state.lock().result.clone()
    }

    /// Waits for the result or a global stall; `None` when the deadline passed.
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> Option<Result<T, GpuError>> {
        let mut state = self.state.lock();
        loop {
            if let Some(result) = &state.result {
                return Some(result.clone());
            }
            let Some(sent) = &self.sent else {
                return Some(Err(GpuError::Pending));
            };
            if let Some((report, taken)) = &state.stalled {
                // A stall found before the worker saw every command sent so
                // far is out of date: the worker will look again.
                if sent.load(Ordering::SeqCst) <= *taken {
                    return Some(Err(GpuError::Deadlock(StallReport::clone(report))));
                }
            }
            match deadline {
                None => self.ready.wait(&mut state),
                Some(deadline) => {
                    if self.ready.wait_until(&mut state, deadline).timed_out() {
                        return state.result.clone();
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
/// the same submission.
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

    /// Blocks until the submission completes, or until the whole GPU is
    /// stalled with this submission pending.
    ///
    /// Threaded mode: returns the final result, or
    /// `Err(GpuError::Deadlock(report))` when the worker, having taken every
    /// host operation sent so far (from any thread), found every queue with
    /// work suspended and no host write pending. That answer is *not* final:
    /// the submission stays suspended (a real GPU would wait for the host),
    /// a later [`super::Gpu::write_memory`] may wake it, and a later `wait`
    /// or `poll` then gives the final result. Never hangs while the GPU
    /// lives; dropping the GPU completes pending work with
    /// [`GpuError::ShutDown`].
    ///
    /// Deterministic mode: nothing runs on other threads, so an incomplete
    /// submission answers `Err(GpuError::Pending)` at once.
    pub fn wait(&self) -> Result<SubmissionReport, GpuError> {
        self.slot.wait(None).unwrap_or(Err(GpuError::Pending))
    }

    /// [`Submission::wait`] for at most `timeout`; `None` when it ran out.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<Result<SubmissionReport, GpuError>> {
        self.slot.wait(deadline_after(timeout))
    }
}

/// The host's handle on one host write ([`super::Gpu::write_memory`]).
#[derive(Clone)]
pub struct HostWrite {
    pub(crate) slot: Arc<Slot<()>>,
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
        self.slot.poll()
    }

    /// True once the write is in guest memory.
    pub fn is_applied(&self) -> bool {
        matches!(self.slot.poll(), Some(Ok(())))
    }

    /// Blocks until the write is applied (threaded mode; the same rules as
    /// [`Submission::wait`], including the `Deadlock` answer, which cannot
    /// happen for a write because a stall never leaves a write pending).
    /// Deterministic mode answers `Err(GpuError::Pending)` if it is not
    /// applied yet.
    pub fn wait(&self) -> Result<(), GpuError> {
        self.slot.wait(None).unwrap_or(Err(GpuError::Pending))
    }

    /// [`HostWrite::wait`] for at most `timeout`; `None` when it ran out.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<Result<(), GpuError>> {
        self.slot.wait(deadline_after(timeout))
    }
}
