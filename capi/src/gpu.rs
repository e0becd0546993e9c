//! The GPU from C: create (threaded or deterministic), submit, write and
//! notify, drive, look at it, shut it down, free it.

use std::ffi::c_void;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pm4core::gpu::{Gpu, RunStatus};
use pm4core::memory::{check_range, GuestMemory};
use pm4core::recorder::RecorderLog;
use pm4core::regs::REGISTER_FILE_DWORDS;

use crate::args::{slice, slice_mut, OptOut, Out};
use crate::backend::{in_callback, pm4_backend, CBackend};
use crate::config::{pm4_gpu_config, settings};
use crate::error::{boundary, pm4_status, Error};
use crate::handle;
use crate::memory::{pm4_memory, MemoryObject};
use crate::signal::{insert_report, pm4_stall_report, pm4_wait, queue_of, wait};
use crate::submission::{insert_host_write, insert_submission, pm4_host_write, pm4_submission};

/// A GPU front end: the graphics queue and the 56 compute queues over one
/// guest memory and one backend (opaque).
pub struct pm4_gpu {
    _opaque: [u8; 0],
}

/// The GPU type behind a `pm4_gpu`.
pub(crate) type CGpu = Gpu<Arc<dyn GuestMemory>, CBackend>;

/// A library GPU object.
pub(crate) struct GpuObject {
    pub(crate) gpu: CGpu,
    /// The recording log, when the GPU runs over a recorder's memory.
    pub(crate) log: Option<RecorderLog>,
    /// Threads of `pm4_gpu_on_interrupt`.
    pub(crate) listeners: Mutex<Vec<JoinHandle<()>>>,
}

handle::object!(GpuObject, pm4_gpu, Gpu, "pm4_gpu");

impl Drop for GpuObject {
    fn drop(&mut self) {
        self.gpu.shutdown();
        // Shutdown closed the channels: each listener delivers what is
        // left and ends.
        let me = std::thread::current().id();
        for listener in self.listeners.get_mut().drain(..) {
            if listener.thread().id() != me {
                let _ = listener.join();
            }
        }
    }
}

/// `*state` of the `pm4_gpu_run_*` calls: no queue has work.
pub const PM4_RUN_IDLE: u32 = 0;
/// Every queue with work waits on something only the host can change.
pub const PM4_RUN_STALLED: u32 = 1;
/// Work is left that can run (`pm4_gpu_run_slices` ran out of slices).
pub const PM4_RUN_RUNNING: u32 = 2;

/// The submission id written when there is none.
pub const PM4_NO_SUBMISSION: u64 = u64::MAX;

/// Number of queues: 0 is graphics, 1 + pipe * 8 + queue is compute queue
/// `queue` (0..8) of pipe `pipe` (0..7).
pub const PM4_QUEUE_COUNT: u32 = 57;
/// The graphics queue.
pub const PM4_QUEUE_GRAPHICS: u32 = 0;

/// Makes a GPU over `memory` (the GPU keeps its own reference: the memory
/// handle may be freed afterwards) calling `backend`'s callbacks (copied;
/// NULL: no callbacks). `config` NULL takes the defaults
/// (`pm4_gpu_config_default`: threaded). Writes the handle to `*out`. On
/// failure the backend's `release` is not called.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `config` and `backend` are NULL or valid; `out` is valid for a write.
/// The backend's callbacks (and those of the per-queue backends its
/// `queue_backend` gives) may be called from the GPU's worker threads and
/// stay valid, with their `user_data`, until their `release` is called (or,
/// with no `release`, until `pm4_gpu_free` has returned).
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_new(
    config: *const pm4_gpu_config,
    memory: *mut pm4_memory,
    backend: *const pm4_backend,
    out: *mut *mut pm4_gpu,
) -> pm4_status {
    boundary("pm4_gpu_new", || {
        let out = Out::new(out, "out")?;
        let memory = handle::get::<MemoryObject>(memory, "memory")?;
        // SAFETY: the caller's promise for `config` (NULL or one element).
        let config = unsafe { slice(config, usize::from(!config.is_null()), "config")? }.first().copied();
        let config = match config {
            Some(c) => c,
            None => {
                let mut c = std::mem::MaybeUninit::<pm4_gpu_config>::uninit();
                // SAFETY: `c` is a valid place for one config.
                let status = unsafe { crate::config::pm4_gpu_config_default(c.as_mut_ptr()) };
                if status != pm4_status::PM4_STATUS_OK {
                    return Err(Error::new(status, "the default settings could not be made"));
                }
                // SAFETY: `pm4_gpu_config_default` answered OK: it wrote `c`.
                unsafe { c.assume_init() }
            }
        };
        // SAFETY: the caller's promise covers the tables the config points to.
        let settings = unsafe { settings(&config)? };
        // SAFETY: the caller's promise for `backend` (NULL or one element).
        let table = unsafe { slice(backend, usize::from(!backend.is_null()), "backend")? }
            .first()
            .copied()
            .unwrap_or(pm4_backend::EMPTY);
        let (backend, armed) = CBackend::unarmed(table);
        let guest = Arc::clone(&memory.memory);
        let gpu = if settings.threaded {
            Gpu::threaded(guest, backend, settings.config)?
        } else {
            Gpu::deterministic(guest, backend, settings.config)
        };
        let object = GpuObject { gpu, log: memory.log.clone(), listeners: Mutex::new(Vec::new()) };
        let h = handle::insert(object)?;
        // The GPU exists: from now on its backend is released when it goes.
        armed.store(true, std::sync::atomic::Ordering::Release);
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// Longest time `pm4_gpu_free` waits for calls in progress on other
/// threads to return after the shutdown.
const FREE_WAIT: Duration = Duration::from_secs(10);

/// Shuts the GPU down (as `pm4_gpu_shutdown`), waits for calls in progress
/// on it to return, and frees it: when it returns (called outside the
/// GPU's callbacks), no callback of this GPU runs any more, the listener
/// threads are joined, and the backends' `release` callbacks were called.
/// A no-op for NULL or a freed handle. Handles of its submissions stay
/// valid (their waits answer `PM4_STATUS_SHUT_DOWN`) until freed.
///
/// Threads: any. From a callback: yes; the GPU then goes when the callback's
/// slice has ended.
#[no_mangle]
pub extern "C" fn pm4_gpu_free(gpu: *mut pm4_gpu) {
    let _ = boundary("pm4_gpu_free", || {
        let Some(object) = handle::remove::<GpuObject>(gpu) else { return Ok(()) };
        object.gpu.shutdown();
        if !in_callback() {
            // Another thread may be in a call on this GPU (a deterministic
            // run that is between two slices): it returns now that the GPU
            // is shut down.
            let deadline = Instant::now() + FREE_WAIT;
            while Arc::strong_count(&object) > 1 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_micros(20));
            }
        }
        drop(object);
        Ok(())
    });
}

/// Stops the GPU: submissions not completed end with
/// `PM4_STATUS_SHUT_DOWN` (running ones at a packet boundary), every
/// waiting host thread wakes (submission waits, interrupt and stall waits,
/// runs), the interrupt and stall channels close, the workers are joined
/// (unless called from a callback, where they stop on their own).
/// Idempotent. Later calls that give the GPU work answer
/// `PM4_STATUS_SHUT_DOWN`; memory, counters and registers stay readable.
///
/// Threads: any. From a callback: yes.
#[no_mangle]
pub extern "C" fn pm4_gpu_shutdown(gpu: *mut pm4_gpu) -> pm4_status {
    boundary("pm4_gpu_shutdown", || {
        handle::get::<GpuObject>(gpu, "gpu")?.gpu.shutdown();
        Ok(())
    })
}

/// Worker threads (0 in deterministic mode) to `*workers`.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `workers` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_workers(gpu: *mut pm4_gpu, workers: *mut u32) -> pm4_status {
    boundary("pm4_gpu_workers", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        let out = Out::new(workers, "workers")?;
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(u32::try_from(gpu.gpu.workers()).unwrap_or(u32::MAX)) };
        Ok(())
    })
}

/// Submits `size_dw` dwords of PM4 packets at guest `address` to `queue`
/// (0..=56); it starts after every earlier submission to that queue.
/// Checked first: `address` dword-aligned, the buffer inside the 48-bit
/// space and mapped (`PM4_STATUS_INVALID_SUBMISSION` saying which, with
/// nothing run). Writes a submission handle to `*out` unless `out` is NULL
/// (no handle wanted). A GPU over a recorder's memory records the
/// submission.
///
/// Threads: any. From a callback: yes (deterministic mode queues it after
/// the callback's packet).
///
/// # Safety
///
/// `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_submit(
    gpu: *mut pm4_gpu,
    queue: u32,
    address: u64,
    size_dw: u32,
    out: *mut *mut pm4_submission,
) -> pm4_status {
    boundary("pm4_gpu_submit", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        let out = OptOut::new(out, "out")?;
        let submission = gpu.gpu.submit(queue_of(queue)?, address, size_dw)?;
        if let Some(log) = &gpu.log {
            log.submit(queue, address, size_dw);
        }
        if out.wanted() {
            insert_submission(submission, out)?;
        }
        Ok(())
    })
}

/// Writes `len` bytes from `data` to guest memory as the host. Threaded
/// mode: written at once, then the overlapping waits wake (as
/// `pm4_gpu_notify_host_write`). Deterministic mode: ordered with
/// submissions (applied when every earlier submission has run as far as
/// it can, before any later one starts). Writes a handle to `*out` unless
/// NULL (`pm4_host_write_wait` says when it is applied). A range outside
/// the 48-bit space or not mapped is an error at once. A GPU over a
/// recorder's memory records the write.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `data .. data + len` is valid for reads; `out` is NULL or valid for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_write_memory(
    gpu: *mut pm4_gpu,
    address: u64,
    data: *const c_void,
    len: usize,
    out: *mut *mut pm4_host_write,
) -> pm4_status {
    boundary("pm4_gpu_write_memory", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        // SAFETY: the caller's promise for `data[..len]`.
        let bytes = unsafe { slice(data.cast::<u8>(), len, "data")? };
        let out = OptOut::new(out, "out")?;
        let write = gpu.gpu.write_memory(address, bytes)?;
        if let Some(log) = &gpu.log {
            log.host_write(address, bytes);
        }
        if out.wanted() {
            insert_host_write(write, out)?;
        }
        Ok(())
    })
}

/// Reads `len` bytes of the GPU's guest memory at `address` into `out`.
///
/// Threads: any. From a backend callback: yes.
///
/// # Safety
///
/// `out .. out + len` is valid for writes.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_read_memory(
    gpu: *mut pm4_gpu,
    address: u64,
    out: *mut c_void,
    len: usize,
) -> pm4_status {
    boundary("pm4_gpu_read_memory", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        // SAFETY: the caller's promise for `out[..len]`.
        let out = unsafe { slice_mut(out.cast::<u8>(), len, "out")? };
        Ok(gpu.gpu.memory().read_bytes(address, out)?)
    })
}

/// The host (the CPU, a DMA engine, a file read) wrote guest bytes
/// `[address, address + len)` directly: wakes the waits that watch them
/// and drops cached decodes of the range; `*woken` (unless NULL) gets how
/// many queues woke. Notification is by guest address. A store nobody
/// notifies is still seen in threaded mode by the GPU's polling
/// (`wait_polling`), later. On a GPU over a recorder's memory the range's
/// bytes are recorded as a host write at this point.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `woken` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_notify_host_write(
    gpu: *mut pm4_gpu,
    address: u64,
    len: u64,
    woken: *mut usize,
) -> pm4_status {
    boundary("pm4_gpu_notify_host_write", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        let out = OptOut::new(woken, "woken")?;
        if let Some(log) = &gpu.log {
            // The bytes as the CPU left them, read before the GPU wakes
            // (and may write them), recorded where the host sequence says:
            // a replay writes them at the same point. A range the GPU
            // would refuse is refused by it below, with nothing recorded.
            let readable = check_range(address, len).is_ok() && gpu.gpu.memory().is_mapped(address, len);
            if let (true, Ok(size)) = (readable, usize::try_from(len)) {
                let mut bytes = vec![0u8; size];
                gpu.gpu.memory().read_bytes(address, &mut bytes)?;
                log.host_write(address, &bytes);
            }
        }
        let n = gpu.gpu.notify_host_write(address, len)?;
        // SAFETY: checked by `OptOut::new`; the caller's promise.
        unsafe { out.write(n) };
        Ok(())
    })
}

fn run_state(status: RunStatus, state: Out<u32>, report: OptOut<*mut pm4_stall_report>) -> Result<(), Error> {
    let (code, stall) = match status {
        RunStatus::Idle => (PM4_RUN_IDLE, None),
        RunStatus::Stalled(r) => (PM4_RUN_STALLED, Some(r)),
        RunStatus::Running => (PM4_RUN_RUNNING, None),
    };
    match (stall, report.wanted()) {
        (Some(r), true) => {
            let mut handle = std::ptr::null_mut();
            // `insert_report` writes through an `Out`; the report handle
            // is made before anything is written to the caller.
            insert_report(r, Out::new(&mut handle, "report")?)?;
            // SAFETY: checked by `OptOut::new`; the caller's promise.
            unsafe { report.write(handle) };
        }
        // SAFETY: as above.
        _ => unsafe { report.write(std::ptr::null_mut()) },
    }
    // SAFETY: checked by `Out::new`; the caller's promise.
    unsafe { state.write(code) };
    Ok(())
}

/// Runs until no queue can run and every host operation made before the
/// call is applied (deterministic mode: on this thread; threaded: blocks
/// until the workers get there). `*state` gets `PM4_RUN_IDLE` or
/// `PM4_RUN_STALLED`; `*report` (unless NULL) the stall report, or NULL
/// when idle.
///
/// Threads: any. From a callback: no (`PM4_STATUS_CALLED_FROM_CALLBACK`).
///
/// # Safety
///
/// `state` is valid for a write; `report` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_run_until_stalled(
    gpu: *mut pm4_gpu,
    state: *mut u32,
    report: *mut *mut pm4_stall_report,
) -> pm4_status {
    boundary("pm4_gpu_run_until_stalled", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        let state = Out::new(state, "state")?;
        let report = OptOut::new(report, "report")?;
        run_state(gpu.gpu.run_until_stalled()?, state, report)
    })
}

/// `pm4_gpu_run_until_stalled` with a stall answered as
/// `PM4_STATUS_DEADLOCK` (its message is the report; nothing is
/// cancelled: a host write and another run may resolve it).
///
/// Threads: any. From a callback: no (`PM4_STATUS_CALLED_FROM_CALLBACK`).
#[no_mangle]
pub extern "C" fn pm4_gpu_run_until_idle(gpu: *mut pm4_gpu) -> pm4_status {
    boundary("pm4_gpu_run_until_idle", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        Ok(gpu.gpu.run_until_idle()?)
    })
}

/// Deterministic mode: runs at most `max_slices` scheduler steps on this
/// thread. `*state` gets `PM4_RUN_RUNNING` when work that can run is left,
/// else as `pm4_gpu_run_until_stalled`. Threaded mode:
/// `PM4_STATUS_WRONG_MODE`.
///
/// Threads: any. From a callback: no (`PM4_STATUS_CALLED_FROM_CALLBACK`).
///
/// # Safety
///
/// `state` is valid for a write; `report` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_run_slices(
    gpu: *mut pm4_gpu,
    max_slices: u64,
    state: *mut u32,
    report: *mut *mut pm4_stall_report,
) -> pm4_status {
    boundary("pm4_gpu_run_slices", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        let state = Out::new(state, "state")?;
        let report = OptOut::new(report, "report")?;
        run_state(gpu.gpu.run_slices(max_slices)?, state, report)
    })
}

/// The current stall, if every queue with work waits and nothing else can
/// run (a snapshot): `*report` gets a report handle, or NULL when the GPU is
/// not stalled.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `report` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_stall_report(gpu: *mut pm4_gpu, report: *mut *mut pm4_stall_report) -> pm4_status {
    boundary("pm4_gpu_stall_report", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        let out = Out::new(report, "report")?;
        match gpu.gpu.stall_report() {
            Some(r) => insert_report(r, out),
            None => {
                // SAFETY: checked by `Out::new`; the caller's promise.
                unsafe { out.write(std::ptr::null_mut()) };
                Ok(())
            }
        }
    })
}

/// The embedder decides the current stall will not resolve: every
/// suspended submission fails with `PM4_STATUS_DEADLOCK` and its queue goes
/// on. `*report` (unless NULL) gets the report, or NULL when the GPU was
/// not stalled (nothing happened).
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `report` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_declare_deadlock(gpu: *mut pm4_gpu, report: *mut *mut pm4_stall_report) -> pm4_status {
    boundary("pm4_gpu_declare_deadlock", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        let report = OptOut::new(report, "report")?;
        match gpu.gpu.declare_deadlock()? {
            Some(r) if report.wanted() => {
                let mut handle = std::ptr::null_mut();
                insert_report(r, Out::new(&mut handle, "report")?)?;
                // SAFETY: checked by `OptOut::new`; the caller's promise.
                unsafe { report.write(handle) };
            }
            // SAFETY: as above.
            _ => unsafe { report.write(std::ptr::null_mut()) },
        }
        Ok(())
    })
}

/// Stops the submission `queue` runs (between packets); its handle answers
/// `PM4_STATUS_ABORTED` and the queue goes on. `*aborted` (unless NULL)
/// gets its id, or `PM4_NO_SUBMISSION` when none ran.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `aborted` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_abort(gpu: *mut pm4_gpu, queue: u32, aborted: *mut u64) -> pm4_status {
    boundary("pm4_gpu_abort", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        let out = OptOut::new(aborted, "aborted")?;
        let id = gpu.gpu.abort(queue_of(queue)?)?;
        // SAFETY: checked by `OptOut::new`; the caller's promise.
        unsafe { out.write(id.map_or(PM4_NO_SUBMISSION, |id| id.0)) };
        Ok(())
    })
}

/// Counters of a GPU over its lifetime.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct pm4_gpu_stats {
    pub submissions: u64,
    pub completed: u64,
    pub failed: u64,
    pub aborted: u64,
    pub host_writes: u64,
    pub host_write_errors: u64,
    pub host_notifications: u64,
    pub slices: u64,
    pub packets: u64,
    pub dwords: u64,
    /// Suspended queues woken to re-check their wait.
    pub wakes: u64,
    /// Polling rounds over suspended waits, and the waits they woke.
    pub poll_rounds: u64,
    pub poll_wakes: u64,
    pub stalls: u64,
    pub stalls_dropped: u64,
    pub interrupts: u64,
    pub interrupts_dropped: u64,
}

/// The GPU's counters.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_get_stats(gpu: *mut pm4_gpu, out: *mut pm4_gpu_stats) -> pm4_status {
    boundary("pm4_gpu_get_stats", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        let out = Out::new(out, "out")?;
        let s = gpu.gpu.stats();
        let stats = pm4_gpu_stats {
            submissions: s.submissions,
            completed: s.completed,
            failed: s.failed,
            aborted: s.aborted,
            host_writes: s.host_writes,
            host_write_errors: s.host_write_errors,
            host_notifications: s.host_notifications,
            slices: s.slices,
            packets: s.packets,
            dwords: s.dwords,
            wakes: s.wakes,
            poll_rounds: s.poll_rounds,
            poll_wakes: s.poll_wakes,
            stalls: s.stalls,
            stalls_dropped: s.stalls_dropped,
            interrupts: s.interrupts,
            interrupts_dropped: s.interrupts_dropped,
        };
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(stats) };
        Ok(())
    })
}

/// What one queue is doing.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_queue_status {
    /// The submission it runs, or `PM4_NO_SUBMISSION`.
    pub running: u64,
    /// Nonzero when that submission waits (`wait` says on what).
    pub suspended: u8,
    pub wait: pm4_wait,
    /// Submissions queued behind it.
    pub queued: u64,
}

/// What `queue` is doing.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_queue_status(gpu: *mut pm4_gpu, queue: u32, out: *mut pm4_queue_status) -> pm4_status {
    boundary("pm4_gpu_queue_status", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        let out = Out::new(out, "out")?;
        let s = gpu.gpu.queue_status(queue_of(queue)?)?;
        let status = pm4_queue_status {
            running: s.running.map_or(PM4_NO_SUBMISSION, |id| id.0),
            suspended: u8::from(s.suspended.is_some()),
            wait: s.suspended.as_ref().map(wait).unwrap_or_default(),
            queued: s.queued as u64,
        };
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(status) };
        Ok(())
    })
}

/// Counters of one queue's command processor.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct pm4_processor_stats {
    /// Packets decoded (executed or skipped), dwords consumed.
    pub packets: u64,
    pub dwords: u64,
    /// Draw packets (a multi-draw packet counts once) and dispatches.
    pub draws: u64,
    pub dispatches: u64,
    /// Releases that retired; times a packet suspended the queue.
    pub fences: u64,
    pub waits: u64,
    /// Packets skipped by predication (and runs skipped by COND_EXEC).
    pub skipped: u64,
    /// Type-0 packets, type-2 fillers, unknown packets.
    pub type0: u64,
    pub type2: u64,
    pub unknown: u64,
}

/// `queue`'s processor counters, between two of its slices (a queue never
/// used has all zero).
///
/// Threads: any. From a callback: not for the calling queue, nor for a
/// queue another worker runs at that moment
/// (`PM4_STATUS_CALLED_FROM_CALLBACK`).
///
/// # Safety
///
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_processor_stats(
    gpu: *mut pm4_gpu,
    queue: u32,
    out: *mut pm4_processor_stats,
) -> pm4_status {
    boundary("pm4_gpu_processor_stats", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        let out = Out::new(out, "out")?;
        let s = gpu.gpu.processor_stats(queue_of(queue)?)?;
        let stats = pm4_processor_stats {
            packets: s.packets,
            dwords: s.dwords,
            draws: s.draws,
            dispatches: s.dispatches,
            fences: s.fences,
            waits: s.waits,
            skipped: s.skipped,
            type0: s.type0,
            type2: s.type2,
            unknown: s.unknown,
        };
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(stats) };
        Ok(())
    })
}

fn register_range(start: u32, count: usize) -> Result<(), Error> {
    let end = (start as usize).checked_add(count);
    if end.is_none_or(|end| end > REGISTER_FILE_DWORDS) {
        return Err(Error::new(
            pm4_status::PM4_STATUS_OUT_OF_RANGE,
            format_args!("registers {start:#x}..+{count} run past the register file (0..{REGISTER_FILE_DWORDS:#x})"),
        ));
    }
    Ok(())
}

/// Reads `count` registers of `queue` from `start` on into `out`, between
/// two of its slices (waits for a running slice to end).
///
/// Threads: any. From a callback: not for the calling queue, nor for a
/// queue another worker runs at that moment
/// (`PM4_STATUS_CALLED_FROM_CALLBACK`): a draw or dispatch callback reads
/// its own queue's registers with `pm4_registers_*`.
///
/// # Safety
///
/// `out .. out + count` is valid for writes.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_read_registers(
    gpu: *mut pm4_gpu,
    queue: u32,
    start: u32,
    out: *mut u32,
    count: usize,
) -> pm4_status {
    boundary("pm4_gpu_read_registers", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        register_range(start, count)?;
        // SAFETY: the caller's promise for `out[..count]`.
        let out = unsafe { slice_mut(out, count, "out")? };
        let mut values = vec![0u32; count];
        gpu.gpu.with_processor(queue_of(queue)?, |p| p.registers().read_into(start, &mut values))?;
        out.copy_from_slice(&values);
        Ok(())
    })
}

/// Writes `count` registers of `queue` from `start` on (host set-up,
/// between two of its slices); the queue re-checks a register wait after.
///
/// Threads: any. From a callback: as `pm4_gpu_read_registers`.
///
/// # Safety
///
/// `values .. values + count` is valid for reads.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_write_registers(
    gpu: *mut pm4_gpu,
    queue: u32,
    start: u32,
    values: *const u32,
    count: usize,
) -> pm4_status {
    boundary("pm4_gpu_write_registers", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        register_range(start, count)?;
        // SAFETY: the caller's promise for `values[..count]`.
        let values = unsafe { slice(values, count, "values")? };
        gpu.gpu.with_registers_mut(queue_of(queue)?, |r| {
            for (i, v) in values.iter().enumerate() {
                r.set(start + i as u32, *v);
            }
        })?;
        Ok(())
    })
}
