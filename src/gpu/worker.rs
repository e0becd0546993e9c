//! The threaded mode's worker: takes host operations from the channel and
//! drives the [`Core`] between them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvError, TryRecvError};
use parking_lot::Mutex;

use crate::backend::Backend;
use crate::memory::GuestMemory;

use super::core::{Core, HostOp, Step};
use super::error::GpuError;

/// What host threads send to the worker.
pub(crate) enum Command {
    /// A submission, host write or sync, in the order the host made them.
    Op(HostOp),
    /// The host changed state under the lock; look again.
    Wake,
    /// Cancel what is pending and stop.
    Shutdown,
}

/// State shared by the [`super::Gpu`] and its worker.
pub(crate) struct Shared<M, B> {
    pub(crate) core: Mutex<Core<M, B>>,
    /// Set when the worker died of a bug.
    pub(crate) lost: AtomicBool,
}

/// Completes pending work with [`GpuError::WorkerLost`] if the worker
/// unwinds, so no host thread waits forever.
struct LostGuard<'a, M: GuestMemory, B: Backend> {
    shared: &'a Shared<M, B>,
}

impl<M: GuestMemory, B: Backend> Drop for LostGuard<'_, M, B> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.shared.lost.store(true, Ordering::Release);
            self.shared.core.lock().sched.cancel_all(&GpuError::WorkerLost);
        }
    }
}

fn shut_down<M: GuestMemory, B: Backend>(core: &mut Core<M, B>) {
    core.sched.cancel_all(&GpuError::ShutDown);
}

/// The next command: polled (yielding the CPU between polls) for up to
/// `spin`, then waited for. A host that answers a stall quickly (writes the
/// label a queue waits on) finds the worker awake, instead of paying for
/// waking a parked thread.
fn wait_for_command(rx: &Receiver<Command>, spin: Duration) -> Result<Command, RecvError> {
    if !spin.is_zero() {
        let start = Instant::now();
        while start.elapsed() < spin {
            match rx.try_recv() {
                Ok(command) => return Ok(command),
                Err(TryRecvError::Disconnected) => return Err(RecvError),
                Err(TryRecvError::Empty) => std::thread::yield_now(),
            }
        }
    }
    rx.recv()
}

/// The worker's loop. Per round: take every command that arrived, run up to
/// `batch` steps (fewer when a command arrives), release the lock. When no
/// queue can run it blocks on the channel, flagging the stall to waiting
/// handles first.
pub(crate) fn run<M, B>(
    shared: Arc<Shared<M, B>>,
    rx: Receiver<Command>,
    stop: Arc<AtomicBool>,
    batch: usize,
    spin: Duration,
) where
    M: GuestMemory,
    B: Backend,
{
    let _guard = LostGuard { shared: &shared };
    let batch = batch.max(1);
    let mut next: Option<Command> = None;
    // Commands taken from the channel (the host counts those it sent).
    let mut taken: u64 = 0;
    loop {
        let mut core = shared.core.lock();
        let mut pending = next.take();
        let mut took = pending.is_some();
        loop {
            let command = match pending.take() {
                Some(c) => c,
                None => match rx.try_recv() {
                    Ok(c) => c,
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => return shut_down(&mut core),
                },
            };
            took = true;
            taken += 1;
            match command {
                Command::Op(op) => core.sched.push(op),
                Command::Wake => {}
                Command::Shutdown => return shut_down(&mut core),
            }
        }
        if stop.load(Ordering::Acquire) {
            return shut_down(&mut core);
        }
        if took {
            // The host acted: a stall answer given before is out of date.
            core.sched.clear_stall_flags();
        }
        let mut step = Step::Ran;
        for _ in 0..batch {
            step = core.step();
            if step != Step::Ran || !rx.is_empty() || stop.load(Ordering::Relaxed) {
                break;
            }
        }
        match step {
            Step::Ran => {
                core.sched.clear_stall_flags();
                // Release the lock between rounds so host accessors get in.
                continue;
            }
            Step::Idle => core.sched.clear_stall_flags(),
            Step::Stalled => core.sched.flag_stall(taken),
        }
        drop(core);
        match wait_for_command(&rx, spin) {
            Ok(command) => next = Some(command),
            Err(_) => return shut_down(&mut shared.core.lock()),
        }
    }
}
