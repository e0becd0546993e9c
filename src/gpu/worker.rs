//! The threaded mode's workers: a bounded pool of threads that take
//! runnable queues from the scheduler and run one slice each, with the
//! scheduler lock released while the packets run, so queues run in
//! parallel. An idle worker also keeps the time-driven duties: it polls
//! suspended waits for stores nobody notified ([`super::WaitPolling`]),
//! reports a stall once it has lasted [`super::GpuConfig::stall_report_delay`],
//! and declares it a deadlock after [`super::GpuConfig::stall_timeout`].

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::backend::Backend;
use crate::memory::GuestMemory;

use super::error::GpuError;
use super::poll::Probe;
use super::sched::Sched;
use super::signal::StallLine;
use super::slice::{run_slice, Parts};
use super::tap::WriteLog;

/// Settings the workers read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WorkerSettings {
    /// How long an idle worker polls for new work before it parks.
    pub(crate) spin: Duration,
    /// How long a host thread polls before it blocks ([`super::GpuConfig::host_spin`]).
    pub(crate) host_spin: Duration,
    /// A stall is reported once it has lasted this long.
    pub(crate) stall_report_delay: Duration,
    /// A stall lasting this long fails the stalled submissions with
    /// [`GpuError::Deadlock`].
    pub(crate) stall_timeout: Option<Duration>,
}

/// State shared by the [`super::Gpu`] and its workers.
pub(crate) struct Shared<M, B> {
    pub(crate) parts: Parts<M, B>,
    pub(crate) sched: Mutex<Sched>,
    /// Deterministic mode: held by the thread driving the GPU, so that two
    /// host threads never run slices at once.
    pub(crate) driver: Mutex<()>,
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
    pub(crate) stalls: StallLine,
    pub(crate) settings: WorkerSettings,
    /// The workers, joined by shutdown.
    pub(crate) workers: Mutex<Vec<JoinHandle<()>>>,
}

impl<M, B> Shared<M, B> {
    /// This GPU's identity for [`super::reentry`]: its shared state's address.
    pub(crate) fn id(&self) -> usize {
        std::ptr::from_ref(self).cast::<()>() as usize
    }

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

    /// The GPU went quiet with work left: starts the stall episode (if it
    /// has not started) and reports it once it has lasted the report delay.
    pub(crate) fn note_stall(&self, sched: &mut Sched, now: Instant) {
        if !sched.stalled {
            if sched.stall_report().is_none() {
                return;
            }
            sched.stalled = true;
            sched.stall_since = Some(now);
            sched.stall_reported = false;
            sched.stall_episode += 1;
        }
        if sched.stall_reported || sched.stall_since.is_some_and(|since| now < since + self.settings.stall_report_delay)
        {
            return;
        }
        let Some(report) = sched.stall_report() else {
            return;
        };
        sched.stall_reported = true;
        sched.stats.stalls += 1;
        // Normal while the host is about to write a label: not a warning.
        tracing::debug!("{report}");
        self.stalls.send(report);
    }

    /// When a worker with nothing to run must look again on its own: the
    /// next polling round, the stall's report, the stall's timeout.
    fn next_duty(&self, sched: &Sched) -> Option<Instant> {
        let report = match (sched.stalled, sched.stall_reported, sched.stall_since) {
            (true, false, Some(since)) => since.checked_add(self.settings.stall_report_delay),
            _ => None,
        };
        let timeout = match (sched.stalled, sched.stall_since, self.settings.stall_timeout) {
            (true, Some(since), Some(timeout)) => since.checked_add(timeout),
            _ => None,
        };
        [sched.poll.next(), report, timeout].into_iter().flatten().min()
    }
}

impl<M: GuestMemory, B> Shared<M, B> {
    /// One polling round: reads each probed wait's bytes without the lock
    /// (`probes` and `fired` are the worker's reused buffers) and wakes the
    /// queues whose bytes changed. Returns how many woke.
    fn poll_round(
        &self,
        sched: &mut MutexGuard<'_, Sched>,
        probes: &mut Vec<(usize, Probe)>,
        fired: &mut Vec<usize>,
    ) -> usize {
        let due = sched.poll.due(Instant::now());
        sched.probes_into(probes);
        fired.clear();
        MutexGuard::unlocked(sched, || {
            fired.extend(probes.iter().filter(|(_, probe)| probe.fired(&self.parts.memory)).map(|&(queue, _)| queue));
        });
        let woke = sched.poll_round_done(Instant::now(), fired, due);
        if woke > 0 {
            self.offer_work(woke > 1);
        }
        woke
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

/// How often an idle worker's spin makes a polling round while waits exist.
const SPIN_POLL_EVERY: Duration = Duration::from_micros(5);

/// What an idle worker's spin ended with.
enum Spun {
    /// New work was offered, or the GPU stops.
    Work,
    /// A polling round is due (or the spin, with waits to poll, made one).
    Poll,
    /// The spin ran out.
    Idle,
}

/// Polls the work epoch for up to `spin` without the lock; with `polling`,
/// ends after [`SPIN_POLL_EVERY`] for a polling round.
fn spin_for_work<M, B>(shared: &Shared<M, B>, spin: Duration, polling: bool) -> Spun {
    shared.spinning.fetch_add(1, Ordering::SeqCst);
    let epoch = shared.epoch.load(Ordering::SeqCst);
    let start = Instant::now();
    let mut poll_at = start + SPIN_POLL_EVERY;
    let mut poll = false;
    let moved = poll_for(spin, || {
        if shared.epoch.load(Ordering::SeqCst) != epoch || shared.stop.load(Ordering::Acquire) {
            return true;
        }
        if polling && Instant::now() >= poll_at {
            poll_at += SPIN_POLL_EVERY;
            poll = true;
            return true;
        }
        false
    });
    shared.spinning.fetch_sub(1, Ordering::SeqCst);
    match (moved, poll) {
        (true, true) => Spun::Poll,
        (true, false) => Spun::Work,
        (false, _) => Spun::Idle,
    }
}

/// One worker's loop: pick a runnable queue (never one another worker has),
/// run a slice of it without the lock, end the slice, repeat; with nothing
/// to run, spin briefly (polling waits meanwhile), then park until work is
/// offered or a duty is due (a polling round, a stall's report, its
/// timeout).
pub(crate) fn run<M: GuestMemory, B: Backend>(shared: Arc<Shared<M, B>>) {
    let shared = &*shared;
    let _guard = LostGuard { shared };
    let mut log = WriteLog::default();
    let mut probes = Vec::new();
    let mut fired = Vec::new();
    let gpu = shared.id();
    let mut sched = shared.sched.lock();
    // A new idle period (after a slice, or woken by an offer of work)
    // starts with a spin; a worker woken only to poll parks again at once,
    // so an idle GPU with waits costs a round per interval, not a spin.
    let mut fresh = true;
    let mut spin_until: Option<Instant> = None;
    loop {
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        if let Some(queue) = sched.pick() {
            (fresh, spin_until) = (true, None);
            let Some(mut ticket) = sched.begin_slice(queue) else {
                shared.announce_change();
                continue;
            };
            // More to run: let another worker take it.
            if sched.pick().is_some() {
                shared.offer_work(false);
            }
            let result =
                MutexGuard::unlocked(&mut sched, || run_slice(gpu, &shared.parts, &mut ticket, &mut log, false));
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
        let now = Instant::now();
        if sched.in_flight == 0 {
            shared.note_stall(&mut sched, now);
            shared.announce_change();
        }
        if sched.poll.due(now) {
            if shared.poll_round(&mut sched, &mut probes, &mut fired) > 0 {
                (fresh, spin_until) = (true, None);
            }
            continue;
        }
        let spin = shared.settings.spin;
        if fresh && !spin.is_zero() {
            spin_until = now.checked_add(spin);
        }
        fresh = false;
        if let Some(until) = spin_until.filter(|&until| until > now) {
            // Within the spin, a store soon after a suspension is seen
            // within a few microseconds.
            let polling = sched.probed > 0;
            match MutexGuard::unlocked(&mut sched, || spin_for_work(shared, until - now, polling)) {
                Spun::Work => (fresh, spin_until) = (true, None),
                Spun::Poll => {
                    if shared.poll_round(&mut sched, &mut probes, &mut fired) > 0 {
                        (fresh, spin_until) = (true, None);
                    }
                }
                Spun::Idle => spin_until = None,
            }
            continue;
        }
        spin_until = None;
        if sched.pick().is_some() || shared.stop.load(Ordering::Acquire) {
            continue;
        }
        let episode = sched.stall_episode;
        // One idle worker keeps the timed duties; the others park until
        // work is offered (an idle GPU with waits wakes one thread per
        // round, not every worker).
        match shared.next_duty(&sched).filter(|_| !sched.duty_keeper) {
            Some(deadline) => {
                sched.duty_keeper = true;
                // Woken before the deadline: by an offer of work (spin next).
                fresh = Instant::now() < deadline && !shared.work.wait_until(&mut sched, deadline).timed_out();
                sched.duty_keeper = false;
            }
            None => {
                shared.work.wait(&mut sched);
                fresh = true;
            }
        }
        // A stall that outlasted its timeout becomes a deadlock.
        if let (true, Some(since), Some(timeout)) = (sched.stalled, sched.stall_since, shared.settings.stall_timeout) {
            if sched.stall_episode == episode && Instant::now() >= since + timeout {
                if let Some(report) = sched.declare_deadlock() {
                    tracing::warn!("stall declared a deadlock after {timeout:?}: {report}");
                    shared.announce_change();
                    shared.offer_work(true);
                }
            }
        }
    }
}
