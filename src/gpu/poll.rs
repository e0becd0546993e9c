//! Polling of suspended waits (threaded mode): what a round reads for each
//! wait, and when the next round comes ([`super::WaitPolling`]).
//!
//! A round never decides a wait: it only notices that the bytes a wait
//! read have changed (or, for waits without a value, that a round came) and
//! wakes that queue, which re-executes its waiting packet as a write's
//! wake-up would. So a wait resumed by polling ends exactly as one resumed
//! by a notification, and a round that is wrong about a change costs one
//! slice, never a result.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use crate::memory::GuestMemory;
use crate::packet::body::PollTarget;
use crate::processor::SuspendReason;

use super::config::WaitPolling;
use super::watch::Watch;

/// What a round reads for one wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    /// The dword the wait read differs from what it read.
    Changed32 { address: u64, seen: u32 },
    /// The qword the wait read differs from what it read.
    Changed64 { address: u64, seen: u64 },
    /// REWIND: bit 31 (VALID) of the dword is set.
    Valid { address: u64 },
    /// MEM_SEMAPHORE wait: the qword is not zero.
    NonZero { address: u64 },
    /// A wait with no one value to read (predication on ZPASS data that
    /// spans the render backends, a constant-engine wait): every round
    /// wakes it.
    Every,
}

impl Probe {
    /// The probe of a wait that suspended with `reason` and watches `watch`;
    /// `None` for waits memory cannot end (a queue's own registers, the
    /// UCONFIG registers, which their writers wake).
    pub(crate) fn of(reason: &SuspendReason, watch: &Watch) -> Option<Probe> {
        match (*reason, watch) {
            (_, Watch::Host | Watch::Uconfig(_)) => None,
            (SuspendReason::WaitRegMem { target: PollTarget::Memory(address), current, is_64, .. }, _) => {
                Some(if is_64 {
                    Probe::Changed64 { address, seen: current }
                } else {
                    Probe::Changed32 { address, seen: current as u32 }
                })
            }
            // The loop's width is not kept: its low dword holds the value
            // compared in either width.
            (SuspendReason::AtomicLoop { address, current, .. }, _) => {
                Some(Probe::Changed32 { address, seen: current as u32 })
            }
            (SuspendReason::Rewind { address }, _) => Some(Probe::Valid { address }),
            (SuspendReason::MemSemaphore { address }, _) => Some(Probe::NonZero { address }),
            (_, Watch::Range(..) | Watch::AnyWrite) => Some(Probe::Every),
        }
    }

    /// Whether the wait may have ended. A read that fails (or panics)
    /// answers yes: the queue's own re-execution then reports the fault.
    pub(crate) fn fired<M: GuestMemory + ?Sized>(&self, memory: &M) -> bool {
        let read = catch_unwind(AssertUnwindSafe(|| match *self {
            Probe::Changed32 { address, seen } => memory.read_u32(address).map(|v| v != seen),
            Probe::Changed64 { address, seen } => memory.read_u64(address).map(|v| v != seen),
            Probe::Valid { address } => memory.read_u32(address).map(|v| v & (1 << 31) != 0),
            Probe::NonZero { address } => memory.read_u64(address).map(|v| v != 0),
            Probe::Every => Ok(true),
        }));
        !matches!(read, Ok(Ok(false)))
    }
}

/// When the next round is due.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PollSchedule {
    settings: Option<WaitPolling>,
    /// The interval the next fruitless round doubles.
    interval: Duration,
    /// When the next round is due; `None` when nothing waits on memory.
    next: Option<Instant>,
}

impl PollSchedule {
    pub(crate) fn new(settings: Option<WaitPolling>) -> Self {
        let interval = settings.map_or(Duration::ZERO, |s| s.first);
        Self { settings, interval, next: None }
    }

    /// Whether rounds are made at all.
    pub(crate) fn enabled(&self) -> bool {
        self.settings.is_some()
    }

    /// A queue suspended on something a round can see: the next round comes
    /// `first` from now (sooner if one was already due).
    pub(crate) fn suspended(&mut self, now: Instant) {
        let Some(settings) = self.settings else { return };
        self.interval = settings.first;
        let at = now.checked_add(settings.first);
        self.next = match (self.next, at) {
            (Some(next), Some(at)) => Some(next.min(at)),
            (None, at) => at,
            (next, None) => next,
        };
    }

    /// A round ran at `now`; `woke` whether it woke a wait, `waiting`
    /// whether waits a round sees are left, and `due` whether it was the
    /// scheduled round (a round an idle worker's spin makes on the way is
    /// free: it moves no schedule).
    pub(crate) fn round_done(&mut self, now: Instant, woke: bool, waiting: bool, due: bool) {
        let Some(settings) = self.settings else { return };
        if !waiting {
            self.next = None;
            self.interval = settings.first;
            return;
        }
        if !due && !woke {
            return;
        }
        self.interval =
            if woke { settings.first } else { (self.interval * 2).min(settings.ceiling.max(settings.first)) };
        self.next = now.checked_add(self.interval);
    }

    /// Nothing waits on memory any more.
    pub(crate) fn idle(&mut self) {
        self.next = None;
    }

    /// When the next round is due.
    pub(crate) fn next(&self) -> Option<Instant> {
        self.next
    }

    /// Whether a round is due at `now`.
    pub(crate) fn due(&self, now: Instant) -> bool {
        self.next.is_some_and(|next| next <= now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::body::CompareFunction;

    #[test]
    fn a_probe_fires_when_the_bytes_it_watches_change() {
        let memory = crate::memory::FlatMemory::new(0, 64).unwrap();
        let wait = SuspendReason::WaitRegMem {
            target: PollTarget::Memory(8),
            function: CompareFunction::Equal,
            reference: 1,
            mask: u64::MAX,
            current: 0,
            is_64: false,
        };
        let probe = Probe::of(&wait, &Watch::Range(8, 12)).unwrap();
        assert!(!probe.fired(&memory));
        memory.write_u32(8, 2).unwrap();
        assert!(probe.fired(&memory));
        let rewind = Probe::of(&SuspendReason::Rewind { address: 16 }, &Watch::Range(16, 20)).unwrap();
        memory.write_u32(16, 0x7FFF_FFFF).unwrap();
        assert!(!rewind.fired(&memory));
        memory.write_u32(16, 0x8000_0000).unwrap();
        assert!(rewind.fired(&memory));
        let semaphore = Probe::of(&SuspendReason::MemSemaphore { address: 24 }, &Watch::Range(24, 32)).unwrap();
        assert!(!semaphore.fired(&memory));
        memory.write_u64(24, 1 << 40).unwrap();
        assert!(semaphore.fired(&memory));
        // Unmapped: fires, so the queue reports the fault itself.
        assert!(Probe::Changed32 { address: 1 << 20, seen: 0 }.fired(&memory));
        assert_eq!(Probe::of(&wait, &Watch::Host), None);
    }

    #[test]
    fn rounds_back_off_to_the_ceiling_and_start_again_on_a_suspension() {
        let settings = WaitPolling { first: Duration::from_micros(10), ceiling: Duration::from_micros(35) };
        let mut schedule = PollSchedule::new(Some(settings));
        let t0 = Instant::now();
        assert_eq!(schedule.next(), None);
        schedule.suspended(t0);
        assert_eq!(schedule.next(), Some(t0 + Duration::from_micros(10)));
        let mut now = t0;
        let mut gaps = Vec::new();
        for _ in 0..4 {
            now = schedule.next().unwrap();
            // A spin's round in between moves nothing.
            schedule.round_done(now, false, true, false);
            schedule.round_done(now, false, true, true);
            gaps.push(schedule.next().unwrap() - now);
        }
        assert_eq!(gaps, [20, 35, 35, 35].map(Duration::from_micros));
        schedule.suspended(now);
        assert_eq!(schedule.next(), Some(now + Duration::from_micros(10)));
        schedule.round_done(now, false, false, true);
        assert_eq!(schedule.next(), None);
        let mut off = PollSchedule::new(None);
        off.suspended(t0);
        assert_eq!(off.next(), None);
    }
}
