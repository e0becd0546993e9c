//! Errors of the GPU front end and the report of a global stall.

use std::fmt;

use crate::backend::QueueId;
use crate::memory::MemoryError;
use crate::processor::{Pm4Error, SuspendReason};

use super::handle::SubmissionId;

/// What went wrong with a call on [`super::Gpu`] or with one submission.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// The queue index is not 0 (graphics) or 1..=56 (compute).
    #[error("queue {queue} is out of range (queues are 0..{})", QueueId::COUNT)]
    QueueOutOfRange { queue: u32 },
    /// The processor stopped the submission; the queue went on with its next one.
    #[error("submission {submission} on {queue}: {source}")]
    Processor {
        queue: QueueId,
        submission: SubmissionId,
        #[source]
        source: Pm4Error,
    },
    /// A host write names memory that is not mapped or not addressable.
    #[error("host write of {len} bytes at {address:#x}: {source}")]
    HostWrite {
        address: u64,
        len: u64,
        #[source]
        source: MemoryError,
    },
    /// Every queue with work is suspended and nothing the GPU knows of can
    /// wake them. From [`super::Gpu::run_until_idle`] (a run's answer; nothing
    /// is cancelled) or, on a submission, final: the embedder declared the
    /// stall a deadlock ([`super::Gpu::declare_deadlock`],
    /// [`super::GpuConfig::stall_timeout`]) and the submission was stopped.
    #[error("{}", .0.describe("deadlock"))]
    Deadlock(StallReport),
    /// The backend panicked during one of the submission's packets; the
    /// submission was stopped and its queue went on.
    #[error("submission {submission} on {queue}: the backend panicked: {message}")]
    BackendPanicked { queue: QueueId, submission: SubmissionId, message: String },
    /// The guest memory implementation panicked during one of the
    /// submission's packets; the submission was stopped and its queue went on.
    #[error("submission {submission} on {queue}: the guest memory implementation panicked: {message}")]
    MemoryPanicked { queue: QueueId, submission: SubmissionId, message: String },
    /// pm4core itself panicked while running the submission (a bug: please
    /// report it with the trace); the submission was stopped and its queue
    /// went on.
    #[error("submission {submission} on {queue}: pm4core panicked (a bug): {message}")]
    InternalPanic { queue: QueueId, submission: SubmissionId, message: String },
    /// The submission was refused before anything ran: its command buffer
    /// is not dword-aligned, runs past the 48-bit address space, or is not
    /// mapped (`source` says which, at which address).
    #[error("submission of {size_dw} dwords at {address:#x} on {queue} refused: {source}")]
    InvalidSubmission {
        queue: QueueId,
        address: u64,
        size_dw: u32,
        #[source]
        source: MemoryError,
    },
    /// The call was made from inside one of this GPU's own backend or
    /// memory callbacks, where it would wait for the very slice that made
    /// it (`why` says what it would wait for).
    #[error("{call} cannot be called from a backend or memory callback of the same GPU: {why}")]
    CalledFromCallback { call: &'static str, why: &'static str },
    /// The GPU was shut down ([`super::Gpu::shutdown`], or dropped) before
    /// the work completed, or the call came after.
    #[error("the GPU shut down before the work completed")]
    ShutDown,
    /// The host aborted the submission with [`super::Gpu::abort`].
    #[error("submission {0} was aborted by the host")]
    Aborted(SubmissionId),
    /// The work has not completed (a handle whose wait could not be answered).
    #[error("the work has not completed; drive the deterministic GPU (run_until_idle) first")]
    Pending,
    /// The call exists only in the other mode.
    #[error("{call} is only available in {mode} mode")]
    WrongMode { call: &'static str, mode: &'static str },
    /// The worker thread stopped unexpectedly (a bug); pending work was cancelled.
    #[error("the GPU worker thread stopped unexpectedly")]
    WorkerLost,
    /// The worker thread could not be started.
    #[error("could not start the GPU worker thread: {0}")]
    Spawn(String),
}

impl GpuError {
    /// The stall report, for [`GpuError::Deadlock`].
    pub fn stall(&self) -> Option<&StallReport> {
        match self {
            GpuError::Deadlock(report) => Some(report),
            _ => None,
        }
    }
}

/// One suspended queue of a stall.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueStall {
    pub queue: QueueId,
    /// The submission that waits.
    pub submission: SubmissionId,
    /// Its command buffer and size.
    pub address: u64,
    pub size_dw: u32,
    /// Address of the waiting packet (the drawing engine's cursor).
    pub packet_address: Option<u64>,
    /// Why it waits: target (address or register), function, reference,
    /// mask and the value read at the last check.
    pub reason: SuspendReason,
    /// What the constant engine waits on, when it waits too.
    pub constant_engine: Option<SuspendReason>,
    /// Submissions queued behind it on the same queue.
    pub queued: usize,
}

impl fmt::Display for QueueStall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} submission {} ({:#x}, {} dwords", self.queue, self.submission, self.address, self.size_dw)?;
        if let Some(at) = self.packet_address {
            write!(f, ", packet at {at:#x}")?;
        }
        if self.queued > 0 {
            write!(f, ", {} more queued", self.queued)?;
        }
        write!(f, ") waits: {}", self.reason)?;
        if let Some(ce) = &self.constant_engine {
            write!(f, "; constant engine waits: {ce}")?;
        }
        Ok(())
    }
}

/// Every queue that has work is suspended and no host write is pending:
/// nothing can change without the host. One entry per waiting queue, in
/// queue order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StallReport {
    pub queues: Vec<QueueStall>,
}

impl StallReport {
    /// The entry of `queue`, if it waits.
    pub fn queue(&self, queue: QueueId) -> Option<&QueueStall> {
        self.queues.iter().find(|q| q.queue == queue)
    }
}

impl StallReport {
    /// The report under a heading: `stall:` while the host may still write
    /// a label, `deadlock:` once it is declared final.
    fn describe(&self, heading: &'static str) -> Described<'_> {
        Described { report: self, heading }
    }
}

/// A [`StallReport`] with its heading, as text.
struct Described<'a> {
    report: &'a StallReport,
    heading: &'static str,
}

impl fmt::Display for Described<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.report.queues.len();
        let (queues, wait) = if n == 1 { ("queue", "waits") } else { ("queues", "wait") };
        write!(f, "{}: {n} {queues} {wait} and no host write is pending", self.heading)?;
        for q in &self.report.queues {
            write!(f, "\n  {q}")?;
        }
        Ok(())
    }
}

/// `stall: 2 queues wait and no host write is pending`, then one line per
/// queue. (As [`GpuError::Deadlock`], the same text says `deadlock:`.)
impl fmt::Display for StallReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.describe("stall").fmt(f)
    }
}
