//! What the GPU tells the host without being asked, from C: interrupts (by
//! poll, by wait, or by a callback on a thread of their own) and stall
//! reports with each wait's queue, packet address, watched address,
//! reference and current value.

use std::ffi::{c_char, c_void};

use pm4core::backend::QueueId;
use pm4core::gpu::{GpuError, Interrupt, InterruptReceiver, QueueStall, StallReceiver, StallReport};
use pm4core::packet::body::PollTarget;
use pm4core::processor::SuspendReason;

use crate::args::{copy_text, nanos, Out};
use crate::backend::pm4_fence;
use crate::error::{boundary, pm4_status, Error};
use crate::gpu::GpuObject;
use crate::handle;

/// A receiver of one queue's interrupts (opaque). Receivers of one queue
/// share its channel: each interrupt goes to exactly one of them (and to
/// one `pm4_gpu_on_interrupt` callback), whichever asks first.
pub struct pm4_interrupts {
    _opaque: [u8; 0],
}

/// A receiver of the GPU's stall reports (opaque).
pub struct pm4_stalls {
    _opaque: [u8; 0],
}

/// A stall report (opaque): every queue that has work waits and no host
/// write is pending. Read it with `pm4_stall_report_count`,
/// `pm4_stall_report_queue` and `pm4_stall_report_text`.
pub struct pm4_stall_report {
    _opaque: [u8; 0],
}

pub(crate) struct InterruptsObject(pub(crate) InterruptReceiver);
pub(crate) struct StallsObject(pub(crate) StallReceiver);
#[derive(Debug)]
pub(crate) struct StallReportObject(pub(crate) StallReport);

handle::object!(InterruptsObject, pm4_interrupts, Interrupts, "pm4_interrupts");
handle::object!(StallsObject, pm4_stalls, Stalls, "pm4_stalls");
handle::object!(StallReportObject, pm4_stall_report, StallReport, "pm4_stall_report");

/// A release with an interrupt select, as the host receives it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_interrupt {
    /// Position among all interrupts of the GPU (every queue), from 0.
    pub sequence: u64,
    /// The submission whose packet raised it.
    pub submission: u64,
    /// The fence (`fence.queue` is the queue).
    pub fence: pm4_fence,
}

pub(crate) fn interrupt(i: &Interrupt) -> pm4_interrupt {
    pm4_interrupt { sequence: i.sequence, submission: i.submission.0, fence: pm4_fence::from(&i.fence) }
}

/// The queue a C caller names.
pub(crate) fn queue_of(queue: u32) -> Result<QueueId, Error> {
    if queue < QueueId::COUNT {
        Ok(QueueId(queue))
    } else {
        Err(Error::from(GpuError::QueueOutOfRange { queue }))
    }
}

/// A receiver of `queue`'s interrupts. Writes the handle to `*out`.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_interrupts(
    gpu: *mut crate::gpu::pm4_gpu,
    queue: u32,
    out: *mut *mut pm4_interrupts,
) -> pm4_status {
    boundary("pm4_gpu_interrupts", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        let out = Out::new(out, "out")?;
        let rx = gpu.gpu.interrupts(queue_of(queue)?)?;
        let h = handle::insert(InterruptsObject(rx))?;
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// Takes the next interrupt if one is queued: `PM4_STATUS_EMPTY` when none
/// is, `PM4_STATUS_SHUT_DOWN` once the GPU is shut down and none is left.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_interrupts_poll(interrupts: *mut pm4_interrupts, out: *mut pm4_interrupt) -> pm4_status {
    boundary("pm4_interrupts_poll", || {
        let rx = handle::get::<InterruptsObject>(interrupts, "interrupts")?;
        let out = Out::new(out, "out")?;
        match rx.0.try_recv()? {
            // SAFETY: checked by `Out::new`; the caller's promise.
            Some(i) => unsafe { out.write(interrupt(&i)) },
            None => return Err(Error::new(pm4_status::PM4_STATUS_EMPTY, "no interrupt is queued")),
        }
        Ok(())
    })
}

/// Waits at most `timeout_ns` for the next interrupt: `PM4_STATUS_TIMEOUT`
/// when none came, `PM4_STATUS_SHUT_DOWN` once the GPU is shut down and
/// none is left (shutdown ends the wait at once).
///
/// Threads: any. From a callback: yes (it blocks the calling worker).
///
/// # Safety
///
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_interrupts_wait(
    interrupts: *mut pm4_interrupts,
    timeout_ns: u64,
    out: *mut pm4_interrupt,
) -> pm4_status {
    boundary("pm4_interrupts_wait", || {
        let rx = handle::get::<InterruptsObject>(interrupts, "interrupts")?;
        let out = Out::new(out, "out")?;
        match rx.0.recv_timeout(nanos(timeout_ns))? {
            // SAFETY: checked by `Out::new`; the caller's promise.
            Some(i) => unsafe { out.write(interrupt(&i)) },
            None => {
                return Err(Error::new(
                    pm4_status::PM4_STATUS_TIMEOUT,
                    format_args!("no interrupt within {timeout_ns} ns"),
                ))
            }
        }
        Ok(())
    })
}

/// Interrupts of the queue dropped because its channel was full.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `dropped` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_interrupts_dropped(interrupts: *mut pm4_interrupts, dropped: *mut u64) -> pm4_status {
    boundary("pm4_interrupts_dropped", || {
        let rx = handle::get::<InterruptsObject>(interrupts, "interrupts")?;
        let out = Out::new(dropped, "dropped")?;
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(rx.0.dropped()) };
        Ok(())
    })
}

/// Frees an interrupt receiver (a no-op for NULL or a freed handle).
///
/// Threads: any. From a callback: yes.
#[no_mangle]
pub extern "C" fn pm4_interrupts_free(interrupts: *mut pm4_interrupts) {
    let _ = boundary("pm4_interrupts_free", || {
        drop(handle::remove::<InterruptsObject>(interrupts));
        Ok(())
    });
}

/// Waits at most `timeout_ns` for the next interrupt of `queue`, as
/// `pm4_interrupts_wait` on a receiver made for the call.
///
/// Threads: any. From a callback: yes (it blocks the calling worker).
///
/// # Safety
///
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_wait_interrupt(
    gpu: *mut crate::gpu::pm4_gpu,
    queue: u32,
    timeout_ns: u64,
    out: *mut pm4_interrupt,
) -> pm4_status {
    boundary("pm4_gpu_wait_interrupt", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        let out = Out::new(out, "out")?;
        let q = queue_of(queue)?;
        // The GPU handle is not held while waiting: a free from another
        // thread is not delayed by this wait.
        let rx = gpu.gpu.interrupts(q)?;
        drop(gpu);
        match rx.recv_timeout(nanos(timeout_ns))? {
            // SAFETY: checked by `Out::new`; the caller's promise.
            Some(i) => unsafe { out.write(interrupt(&i)) },
            None => {
                return Err(Error::new(
                    pm4_status::PM4_STATUS_TIMEOUT,
                    format_args!("no interrupt on {q} within {timeout_ns} ns"),
                ))
            }
        }
        Ok(())
    })
}

/// An interrupt callback and its `user_data`.
struct Listener {
    callback: unsafe extern "C" fn(*mut c_void, *const pm4_interrupt),
    user_data: *mut c_void,
}

// SAFETY: `pm4_gpu_on_interrupt`'s contract: the callback may be called on
// the listening thread the library starts, with its `user_data`.
unsafe impl Send for Listener {}

/// Calls `callback(user_data, &interrupt)` for each interrupt of `queue`,
/// in completion order, on a thread the library starts for this call
/// ("pm4-irq-QUEUE"); the callback may call any `pm4_` function (it is not
/// a GPU callback: waiting and driving are allowed). The thread ends when
/// the GPU shuts down (after the interrupts left are delivered); it is
/// joined by `pm4_gpu_free`. The callback shares the queue's channel with
/// its receivers: each interrupt goes to one of them.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `callback` and `user_data` stay valid until `pm4_gpu_free` has returned;
/// the callback must not let a C++ exception leave it.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_on_interrupt(
    gpu: *mut crate::gpu::pm4_gpu,
    queue: u32,
    callback: Option<unsafe extern "C" fn(user_data: *mut c_void, interrupt: *const pm4_interrupt)>,
    user_data: *mut c_void,
) -> pm4_status {
    boundary("pm4_gpu_on_interrupt", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        let callback = callback.ok_or_else(|| Error::null("callback"))?;
        let q = queue_of(queue)?;
        let rx = gpu.gpu.interrupts(q)?;
        let listener = Listener { callback, user_data };
        let thread = std::thread::Builder::new()
            .name(format!("pm4-irq-{q}"))
            .spawn(move || {
                let listener = listener;
                while let Ok(i) = rx.recv() {
                    let i = interrupt(&i);
                    // SAFETY: the caller's contract for `callback` and
                    // `user_data`; `i` lives for the call.
                    unsafe { (listener.callback)(listener.user_data, &i) }
                }
            })
            .map_err(|e| Error::new(pm4_status::PM4_STATUS_SPAWN_FAILED, format_args!("listener thread: {e}")))?;
        gpu.listeners.lock().push(thread);
        Ok(())
    })
}

/// A receiver of the stall reports: threaded mode reports each stall that
/// lasts `stall_report_delay_ns` once. Writes the handle to `*out`.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_stalls(gpu: *mut crate::gpu::pm4_gpu, out: *mut *mut pm4_stalls) -> pm4_status {
    boundary("pm4_gpu_stalls", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        let out = Out::new(out, "out")?;
        let h = handle::insert(StallsObject(gpu.gpu.stall_reports()))?;
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(h) };
        Ok(())
    })
}

pub(crate) fn insert_report(report: StallReport, out: Out<*mut pm4_stall_report>) -> Result<(), Error> {
    let h = handle::insert(StallReportObject(report))?;
    // SAFETY: `out` was checked by `Out::new` in the exported function,
    // whose contract makes it valid for a write.
    unsafe { out.write(h) };
    Ok(())
}

/// Takes the next stall report if one is queued (`PM4_STATUS_EMPTY` if
/// not; `PM4_STATUS_SHUT_DOWN` after shutdown). Writes a report handle to
/// `*out` (free it with `pm4_stall_report_free`).
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_stalls_poll(stalls: *mut pm4_stalls, out: *mut *mut pm4_stall_report) -> pm4_status {
    boundary("pm4_stalls_poll", || {
        let rx = handle::get::<StallsObject>(stalls, "stalls")?;
        let out = Out::new(out, "out")?;
        match rx.0.try_recv()? {
            Some(report) => insert_report(report, out),
            None => Err(Error::new(pm4_status::PM4_STATUS_EMPTY, "no stall report is queued")),
        }
    })
}

/// Waits at most `timeout_ns` for the next stall report
/// (`PM4_STATUS_TIMEOUT` when none came; shutdown ends the wait with
/// `PM4_STATUS_SHUT_DOWN`).
///
/// Threads: any. From a callback: yes (it blocks the calling worker).
///
/// # Safety
///
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_stalls_wait(
    stalls: *mut pm4_stalls,
    timeout_ns: u64,
    out: *mut *mut pm4_stall_report,
) -> pm4_status {
    boundary("pm4_stalls_wait", || {
        let rx = handle::get::<StallsObject>(stalls, "stalls")?;
        let out = Out::new(out, "out")?;
        match rx.0.recv_timeout(nanos(timeout_ns))? {
            Some(report) => insert_report(report, out),
            None => {
                Err(Error::new(pm4_status::PM4_STATUS_TIMEOUT, format_args!("no stall report within {timeout_ns} ns")))
            }
        }
    })
}

/// Stall reports dropped because 64 were left unread.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `dropped` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_stalls_dropped(stalls: *mut pm4_stalls, dropped: *mut u64) -> pm4_status {
    boundary("pm4_stalls_dropped", || {
        let rx = handle::get::<StallsObject>(stalls, "stalls")?;
        let out = Out::new(dropped, "dropped")?;
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(rx.0.dropped()) };
        Ok(())
    })
}

/// Frees a stall receiver (a no-op for NULL or a freed handle).
///
/// Threads: any. From a callback: yes.
#[no_mangle]
pub extern "C" fn pm4_stalls_free(stalls: *mut pm4_stalls) {
    let _ = boundary("pm4_stalls_free", || {
        drop(handle::remove::<StallsObject>(stalls));
        Ok(())
    });
}

/// `pm4_wait.kind`: nothing (the field is unused).
pub const PM4_WAIT_NONE: u32 = 0;
/// WAIT_REG_MEM(64) whose compare is false (on memory or a register).
pub const PM4_WAIT_REG_MEM: u32 = 1;
/// ATOMIC_MEM loop whose compare has not succeeded.
pub const PM4_WAIT_ATOMIC_LOOP: u32 = 2;
/// REWIND whose VALID bit is not set.
pub const PM4_WAIT_REWIND: u32 = 3;
/// MEM_SEMAPHORE wait on a zero semaphore.
pub const PM4_WAIT_MEM_SEMAPHORE: u32 = 4;
/// SET_PREDICATION waiting for final ZPASS data.
pub const PM4_WAIT_PREDICATION: u32 = 5;
/// WAIT_ON_CE_COUNTER: the constant engine has not produced yet.
pub const PM4_WAIT_CE_COUNTER: u32 = 6;
/// WAIT_ON_DE_COUNTER_DIFF on the constant engine.
pub const PM4_WAIT_DE_COUNTER_DIFF: u32 = 7;

/// Why a queue waits.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct pm4_wait {
    /// One of `PM4_WAIT_*`.
    pub kind: u32,
    /// Nonzero when `address` is the guest address whose change may end
    /// the wait.
    pub has_address: u8,
    /// Nonzero when the wait polls register `register_index` (WAIT_REG_MEM
    /// on a register).
    pub has_register: u8,
    /// Nonzero for WAIT_REG_MEM64.
    pub is_64: u8,
    pub address: u64,
    pub register_index: u32,
    /// WAIT_REG_MEM's compare function (0 always, 1 <, 2 <=, 3 ==, 4 !=,
    /// 5 >=, 6 >); ATOMIC_MEM's loop compares for equality.
    pub function: u32,
    /// The reference (ATOMIC_MEM: the compare value).
    pub reference: u64,
    pub mask: u64,
    /// The value read at the last check.
    pub current: u64,
    /// Constant-engine and drawing-engine counters (the counter waits).
    pub ce: u32,
    pub de: u32,
    pub diff: u32,
}

pub(crate) fn wait(reason: &SuspendReason) -> pm4_wait {
    let mut w = pm4_wait::default();
    match *reason {
        SuspendReason::WaitRegMem { target, function, reference, mask, current, is_64 } => {
            w.kind = PM4_WAIT_REG_MEM;
            match target {
                PollTarget::Memory(a) => (w.has_address, w.address) = (1, a),
                PollTarget::Register(r) => (w.has_register, w.register_index) = (1, r),
            }
            (w.function, w.reference, w.mask, w.current, w.is_64) =
                (function.to_bits(), reference, mask, current, u8::from(is_64));
        }
        SuspendReason::AtomicLoop { address, compare, current } => {
            (w.kind, w.has_address, w.address, w.function, w.reference, w.mask, w.current) =
                (PM4_WAIT_ATOMIC_LOOP, 1, address, 3, compare, u64::MAX, current);
        }
        SuspendReason::Rewind { address } => (w.kind, w.has_address, w.address) = (PM4_WAIT_REWIND, 1, address),
        SuspendReason::MemSemaphore { address } => {
            (w.kind, w.has_address, w.address) = (PM4_WAIT_MEM_SEMAPHORE, 1, address)
        }
        SuspendReason::Predication { address } => {
            (w.kind, w.has_address, w.address) = (PM4_WAIT_PREDICATION, 1, address)
        }
        SuspendReason::WaitOnCeCounter { ce, de } => (w.kind, w.ce, w.de) = (PM4_WAIT_CE_COUNTER, ce, de),
        SuspendReason::WaitOnDeCounterDiff { ce, de, diff } => {
            (w.kind, w.ce, w.de, w.diff) = (PM4_WAIT_DE_COUNTER_DIFF, ce, de, diff)
        }
    }
    w
}

/// One waiting queue of a stall.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_queue_stall {
    pub queue: u32,
    /// The submission that waits, its command buffer and size.
    pub submission: u64,
    pub address: u64,
    pub size_dw: u32,
    /// Nonzero when `packet_address` is the waiting packet's address.
    pub has_packet_address: u8,
    /// Nonzero when the constant engine waits too (`constant_engine`).
    pub constant_engine_waits: u8,
    pub packet_address: u64,
    /// What the drawing engine waits on.
    pub wait: pm4_wait,
    pub constant_engine: pm4_wait,
    /// Submissions queued behind it on the same queue.
    pub queued: u64,
}

fn queue_stall(q: &QueueStall) -> pm4_queue_stall {
    pm4_queue_stall {
        queue: q.queue.0,
        submission: q.submission.0,
        address: q.address,
        size_dw: q.size_dw,
        has_packet_address: u8::from(q.packet_address.is_some()),
        constant_engine_waits: u8::from(q.constant_engine.is_some()),
        packet_address: q.packet_address.unwrap_or(0),
        wait: wait(&q.reason),
        constant_engine: q.constant_engine.as_ref().map(wait).unwrap_or_default(),
        queued: q.queued as u64,
    }
}

/// The number of waiting queues in a report.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `count` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_stall_report_count(report: *mut pm4_stall_report, count: *mut usize) -> pm4_status {
    boundary("pm4_stall_report_count", || {
        let report = handle::get::<StallReportObject>(report, "report")?;
        let out = Out::new(count, "count")?;
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(report.0.queues.len()) };
        Ok(())
    })
}

/// Waiting queue `index` of a report (in queue order).
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_stall_report_queue(
    report: *mut pm4_stall_report,
    index: usize,
    out: *mut pm4_queue_stall,
) -> pm4_status {
    boundary("pm4_stall_report_queue", || {
        let report = handle::get::<StallReportObject>(report, "report")?;
        let out = Out::new(out, "out")?;
        let q = report.0.queues.get(index).ok_or_else(|| {
            Error::new(
                pm4_status::PM4_STATUS_OUT_OF_RANGE,
                format_args!("entry {index} of a report of {} waiting queues", report.0.queues.len()),
            )
        })?;
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(queue_stall(q)) };
        Ok(())
    })
}

/// The report as text (`stall: 1 queue waits and no host write is
/// pending`, then a line per queue), NUL-terminated, into `out[..cap]`;
/// its length (without the NUL) goes to `*len`. A buffer too small answers
/// `PM4_STATUS_BUFFER_TOO_SMALL` with the size needed in `*len`.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `out .. out + cap` is valid for writes; `len` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_stall_report_text(
    report: *mut pm4_stall_report,
    out: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> pm4_status {
    boundary("pm4_stall_report_text", || {
        let report = handle::get::<StallReportObject>(report, "report")?;
        let text = report.0.to_string();
        // SAFETY: the caller's promises for `out[..cap]` and `len`.
        unsafe { copy_text(text.as_bytes(), out, cap, len, "the report's text") }
    })
}

/// Frees a stall report (a no-op for NULL or a freed handle).
///
/// Threads: any. From a callback: yes.
#[no_mangle]
pub extern "C" fn pm4_stall_report_free(report: *mut pm4_stall_report) {
    let _ = boundary("pm4_stall_report_free", || {
        drop(handle::remove::<StallReportObject>(report));
        Ok(())
    });
}
