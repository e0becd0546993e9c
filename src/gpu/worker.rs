//! The threaded mode's workers: a bounded pool of threads that take
//! runnable queues from the scheduler and run one slice each, with the
//! scheduler lock released while the packets run, so queues run in parallel.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::backend::Backend;
use crate::memory::GuestMemory;

use super::core::{run_slice, Parts, Sched};
use super::error::{GpuError, StallReport};
use super::tap::WriteLog;

/// Settings the workers read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WorkerSettings {
    /// How long an idle worker polls for new work before it parks.
    pub(crate) spin: Duration,
    /// How long a host thread polls before it blocks ([`super::GpuConfig::host_spin`]).
    pub(crate) host_spin: Duration,
    /// A stall lasting this long fails the stalled submissions with
    /// [`GpuError::Deadlock`].
    pub(crate) stall_timeout: Option<Duration>,
}

/// State shared by the [`super::Gpu`] and its workers.
pub(crate) struct Shared<M, B> {
    pub(crate) parts: Parts<M, B>,
    pub(crate) sched: Mutex<Sched>,
    /// Idle workers wait here for runnable queues.
    pub(crate) work: Condvar,
    /// Host threads wait here for quiescence or for a processor a slice has.
    pub(crate) changed: Condvar,
    /// Bumped with every notification of `changed`, for polling host threads.
    pub(crate) changes: AtomicU64,
    /// Bumped whenever work is offered, for spinning workers.
    pub(crate) epoch: AtomicU64,
    /// Workers polling `epoch` (not parked): an offer of one piece of work
    /// while one polls wakes no parked thread.
    pub(crate) spinning: AtomicUsize,
    pub(crate) stop: AtomicBool,
    /// Set when a worker died of a bug.
    pub(crate) lost: AtomicBool,
    pub(crate) stall_tx: Sender<StallReport>,
    pub(crate) stall_rx: Receiver<StallReport>,
    pub(crate) settings: WorkerSettings,
}

impl<M, B> Shared<M, B> {
    /// New work may be runnable (made so under the scheduler lock, now
    /// released): wake an idle worker, unless one is polling and will see
    /// it. A worker that stops polling takes the scheduler lock and looks
    /// for work before it parks, so an offer it missed is either seen then
    /// or made after it parked (and then it is woken here).
    pub(crate) fn offer_work(&self, all: bool) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        if all {
            self.work.notify_all();
        } else if self.spinning.load(Ordering::SeqCst) == 0 {
            self.work.notify_one();
        }
    }

    /// Something host threads wait for may have happened (quiescence, a
    /// processor back, shutdown): wakes the waiting and the polling ones.
    pub(crate) fn announce_change(&self) {
        self.changes.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_all();
    }

    /// Notes a stall the first time it is seen in its episode, and reports
    /// it on the stall channel (dropped if the host does not read them).
    pub(crate) fn note_stall(&self, sched: &mut Sched) {
        if sched.stalled {
            return;
        }
        let Some(report) = sched.stall_report() else {
            return;
        };
        sched.stalled = true;
        sched.stall_since = Some(Instant::now());
        sched.stall_episode += 1;
        sched.stats.stalls += 1;
        // Normal while the host is about to write a label: not a warning.
        tracing::debug!("{report}");
        let _ = self.stall_tx.try_send(report);
    }
}

/// Completes pending work with [`GpuError::WorkerLost`] if a worker unwinds
/// outside a slice (a bug), so no host thread waits forever.
struct LostGuard<'a, M, B> {
    shared: &'a Shared<M, B>,
}

impl<M, B> Drop for LostGuard<'_, M, B> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.shared.lost.store(true, Ordering::Release);
            self.shared.stop.store(true, Ordering::Release);
            self.shared.sched.lock().cancel_all(&GpuError::WorkerLost);
            self.shared.work.notify_all();
            self.shared.announce_change();
        }
    }
}

/// Polls `done` for up to `spin` ([`SPINS_PER_YIELD`] looks, then the CPU
/// yielded, in turn); true when it answered true. What a thread does before
/// it blocks: an answer that comes within the spin costs no wake-up.
pub(crate) fn poll_for(spin: Duration, mut done: impl FnMut() -> bool) -> bool {
    if spin.is_zero() {
        return done();
    }
    let start = Instant::now();
    loop {
        for _ in 0..SPINS_PER_YIELD {
            if done() {
                return true;
            }
            std::hint::spin_loop();
        }
        if start.elapsed() >= spin {
            return false;
        }
        std::thread::yield_now();
    }
}

/// Looks [`poll_for`] takes between two yields of the CPU: an answer from
/// a thread running on another core is seen within a few hundred
/// nanoseconds, not after a system call.
const SPINS_PER_YIELD: usize = 64;

/// Polls the work epoch for up to `spin` without the lock; true when it moved.
fn spin_for_work<M, B>(shared: &Shared<M, B>, spin: Duration) -> bool {
    shared.spinning.fetch_add(1, Ordering::SeqCst);
    let epoch = shared.epoch.load(Ordering::SeqCst);
    let moved = poll_for(spin, || shared.epoch.load(Ordering::SeqCst) != epoch || shared.stop.load(Ordering::Acquire));
    shared.spinning.fetch_sub(1, Ordering::SeqCst);
    moved
}

/// One worker's loop: pick a runnable queue (never one another worker has),
/// run a slice of it without the lock, end the slice, repeat; with nothing
/// to run, note a stall, spin briefly, then park until work is offered (or
/// the stall timeout, if set, passes).
pub(crate) fn run<M: GuestMemory, B: Backend>(shared: Arc<Shared<M, B>>) {
    let shared = &*shared;
    let _guard = LostGuard { shared };
    let mut log = WriteLog::default();
    let mut sched = shared.sched.lock();
    loop {
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        if let Some(queue) = sched.pick() {
            let Some(mut ticket) = sched.begin_slice(queue) else {
                shared.announce_change();
                continue;
            };
            // More to run: let another worker take it.
            if sched.pick().is_some() {
                shared.offer_work(false);
            }
            let result = MutexGuard::unlocked(&mut sched, || run_slice(&shared.parts, &mut ticket, &mut log, false));
            let woken = sched.end_slice(ticket, result, &log);
            if woken > 1 {
                shared.offer_work(true);
            }
            // Host threads wait for quiescence or for a processor back:
            // not woken by every slice of a busy GPU.
            if sched.processor_waiters > 0 || sched.quiescent() {
                shared.announce_change();
            }
            continue;
        }
        if sched.in_flight == 0 {
            shared.note_stall(&mut sched);
            shared.announce_change();
        }
        let spin = shared.settings.spin;
        if !spin.is_zero() && MutexGuard::unlocked(&mut sched, || spin_for_work(shared, spin)) {
            continue;
        }
        if sched.pick().is_some() || shared.stop.load(Ordering::Acquire) {
            continue;
        }
        match (sched.stalled, sched.stall_since, shared.settings.stall_timeout) {
            (true, Some(since), Some(timeout)) => {
                let episode = sched.stall_episode;
                let deadline = since.checked_add(timeout).unwrap_or_else(Instant::now);
                let timed_out = Instant::now() >= deadline || shared.work.wait_until(&mut sched, deadline).timed_out();
                if timed_out && sched.stalled && sched.stall_episode == episode {
                    if let Some(report) = sched.declare_deadlock() {
                        tracing::warn!("stall declared a deadlock after {timeout:?}: {report}");
                        shared.announce_change();
                        shared.offer_work(true);
                    }
                }
            }
            _ => shared.work.wait(&mut sched),
        }
    }
}
