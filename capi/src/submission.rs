//! The host's handles on work it gave the GPU: submissions and host writes,
//! each polled, waited for with or without a timeout, and freed.

use pm4core::gpu::{GpuError, HostWrite, Submission, SubmissionReport};

use crate::args::{nanos, OptOut, Out};
use crate::error::{boundary, gpu_status, pm4_status, Error};
use crate::gpu::{pm4_gpu, GpuObject};
use crate::handle;

/// A submission (opaque): its result, once the GPU has run it. Freeing it
/// does not cancel the work.
pub struct pm4_submission {
    _opaque: [u8; 0],
}

/// A host write given to the GPU (opaque).
pub struct pm4_host_write {
    _opaque: [u8; 0],
}

#[derive(Debug)]
pub(crate) struct SubmissionObject(pub(crate) Submission);
pub(crate) struct HostWriteObject(pub(crate) HostWrite);

handle::object!(SubmissionObject, pm4_submission, Submission, "pm4_submission");
handle::object!(HostWriteObject, pm4_host_write, HostWrite, "pm4_host_write");

pub(crate) fn insert_submission(submission: Submission, out: OptOut<*mut pm4_submission>) -> Result<(), Error> {
    let h = handle::insert(SubmissionObject(submission))?;
    // SAFETY: `out` was checked by `OptOut::new` in the exported function,
    // whose contract makes it NULL or valid for a write.
    unsafe { out.write(h) };
    Ok(())
}

pub(crate) fn insert_host_write(write: HostWrite, out: OptOut<*mut pm4_host_write>) -> Result<(), Error> {
    let h = handle::insert(HostWriteObject(write))?;
    // SAFETY: as in `insert_submission`.
    unsafe { out.write(h) };
    Ok(())
}

/// What one submission did.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct pm4_submission_report {
    /// The submission's number (from 0, in submit order, per GPU).
    pub id: u64,
    pub queue: u32,
    pub size_dw: u32,
    /// The command buffer.
    pub address: u64,
    /// Packets decoded, dwords consumed.
    pub packets: u64,
    pub dwords: u64,
    /// Times a packet suspended the queue.
    pub waits: u64,
    /// Releases that retired.
    pub fences: u64,
    pub draws: u64,
    pub dispatches: u64,
    /// Scheduler slices it took.
    pub slices: u64,
}

fn report(r: &SubmissionReport) -> pm4_submission_report {
    pm4_submission_report {
        id: r.id.0,
        queue: r.queue.0,
        size_dw: r.size_dw,
        address: r.address,
        packets: r.packets,
        dwords: r.dwords,
        waits: r.waits,
        fences: r.fences,
        draws: r.draws,
        dispatches: r.dispatches,
        slices: r.slices,
    }
}

/// A submission's failure, saying which submission.
fn failed(s: &Submission, error: GpuError) -> Error {
    let names_it = matches!(
        error,
        GpuError::Processor { .. }
            | GpuError::BackendPanicked { .. }
            | GpuError::MemoryPanicked { .. }
            | GpuError::InternalPanic { .. }
            | GpuError::Aborted(_)
    );
    if names_it {
        Error::from(error)
    } else {
        Error::new(gpu_status(&error), format_args!("submission {} on {}: {error}", s.id(), s.queue()))
    }
}

/// A final result as the caller's report or the failure's status.
///
/// # Safety
///
/// `out` was checked; the exported function's contract makes it valid.
unsafe fn answer(
    s: &Submission,
    result: Result<SubmissionReport, GpuError>,
    out: OptOut<pm4_submission_report>,
) -> Result<(), Error> {
    let r = result.map_err(|e| failed(s, e))?;
    // SAFETY: the caller's promise.
    unsafe { out.write(report(&r)) };
    Ok(())
}

/// The submission's id to `*id`.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `id` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_submission_id(submission: *mut pm4_submission, id: *mut u64) -> pm4_status {
    boundary("pm4_submission_id", || {
        let s = handle::get::<SubmissionObject>(submission, "submission")?;
        let out = Out::new(id, "id")?;
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(s.0.id().0) };
        Ok(())
    })
}

/// The final result if the submission has completed: `PM4_STATUS_OK` with
/// `*out` (unless NULL) filled, the failure's status (`PM4_STATUS_PROCESSOR_ERROR`,
/// `PM4_STATUS_DEADLOCK`, `PM4_STATUS_ABORTED`, `PM4_STATUS_SHUT_DOWN`, …)
/// with its message, or `PM4_STATUS_PENDING` while it runs. Never blocks.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_submission_poll(
    submission: *mut pm4_submission,
    out: *mut pm4_submission_report,
) -> pm4_status {
    boundary("pm4_submission_poll", || {
        let s = handle::get::<SubmissionObject>(submission, "submission")?;
        let out = OptOut::new(out, "out")?;
        match s.0.poll() {
            // SAFETY: checked by `OptOut::new`; the caller's promise.
            Some(result) => unsafe { answer(&s.0, result, out) },
            None => Err(Error::new(
                pm4_status::PM4_STATUS_PENDING,
                format_args!("submission {} on {} has not completed", s.0.id(), s.0.queue()),
            )),
        }
    })
}

/// Blocks until the submission completes, fails or is cancelled, and
/// answers as `pm4_submission_poll`. A stall does not end the wait (the
/// host may still write the label); shutdown does. Deterministic mode: this
/// never drives the GPU (another thread must, or use
/// `pm4_gpu_run_until_complete`).
///
/// Threads: any. From a callback: not while the submission is pending
/// (`PM4_STATUS_CALLED_FROM_CALLBACK`; `pm4_submission_wait_timeout` works
/// there).
///
/// # Safety
///
/// `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_submission_wait(
    submission: *mut pm4_submission,
    out: *mut pm4_submission_report,
) -> pm4_status {
    boundary("pm4_submission_wait", || {
        let s = handle::get::<SubmissionObject>(submission, "submission")?;
        let out = OptOut::new(out, "out")?;
        let result = s.0.wait();
        // SAFETY: checked by `OptOut::new`; the caller's promise.
        unsafe { answer(&s.0, result, out) }
    })
}

/// `pm4_submission_wait` for at most `timeout_ns`: `PM4_STATUS_TIMEOUT`
/// when the time ran out first.
///
/// Threads: any. From a callback: yes (it blocks the calling worker).
///
/// # Safety
///
/// `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_submission_wait_timeout(
    submission: *mut pm4_submission,
    timeout_ns: u64,
    out: *mut pm4_submission_report,
) -> pm4_status {
    boundary("pm4_submission_wait_timeout", || {
        let s = handle::get::<SubmissionObject>(submission, "submission")?;
        let out = OptOut::new(out, "out")?;
        match s.0.wait_timeout(nanos(timeout_ns)) {
            // SAFETY: checked by `OptOut::new`; the caller's promise.
            Some(result) => unsafe { answer(&s.0, result, out) },
            None => Err(Error::new(
                pm4_status::PM4_STATUS_TIMEOUT,
                format_args!("submission {} on {} did not complete within {timeout_ns} ns", s.0.id(), s.0.queue()),
            )),
        }
    })
}

/// Deterministic mode: drives the GPU on this thread until `submission`
/// completes and answers as `pm4_submission_wait`; a stall first answers
/// `PM4_STATUS_DEADLOCK` (nothing cancelled: a host write and another call
/// may resolve it). Threaded mode: as `pm4_submission_wait`.
///
/// Threads: any. From a callback: no (`PM4_STATUS_CALLED_FROM_CALLBACK`).
///
/// # Safety
///
/// `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_run_until_complete(
    gpu: *mut pm4_gpu,
    submission: *mut pm4_submission,
    out: *mut pm4_submission_report,
) -> pm4_status {
    boundary("pm4_gpu_run_until_complete", || {
        let gpu = handle::get::<GpuObject>(gpu, "gpu")?;
        let s = handle::get::<SubmissionObject>(submission, "submission")?;
        let out = OptOut::new(out, "out")?;
        let result = gpu.gpu.run_until_complete(&s.0);
        // SAFETY: checked by `OptOut::new`; the caller's promise.
        unsafe { answer(&s.0, result, out) }
    })
}

/// Frees a submission handle (a no-op for NULL or a freed handle); the
/// submission itself runs on.
///
/// Threads: any. From a callback: yes.
#[no_mangle]
pub extern "C" fn pm4_submission_free(submission: *mut pm4_submission) {
    let _ = boundary("pm4_submission_free", || {
        drop(handle::remove::<SubmissionObject>(submission));
        Ok(())
    });
}

/// `PM4_STATUS_OK` once the write is in guest memory, the refusal's status
/// when the memory refused it or the GPU shut down first,
/// `PM4_STATUS_PENDING` while a deterministic GPU has not reached it.
///
/// Threads: any. From a callback: yes.
#[no_mangle]
pub extern "C" fn pm4_host_write_poll(write: *mut pm4_host_write) -> pm4_status {
    boundary("pm4_host_write_poll", || {
        let w = handle::get::<HostWriteObject>(write, "write")?;
        match w.0.poll() {
            Some(result) => Ok(result?),
            None => Err(Error::new(pm4_status::PM4_STATUS_PENDING, "the host write is not applied yet")),
        }
    })
}

/// Blocks until the write is applied or refused, answering as
/// `pm4_host_write_poll`; `timeout_ns` bounds the wait
/// (`PM4_STATUS_TIMEOUT`; `UINT64_MAX` waits as long as it takes).
///
/// Threads: any. From a callback: with a pending write only with a finite
/// timeout (a write a deterministic GPU applies after the calling slice
/// answers `PM4_STATUS_CALLED_FROM_CALLBACK` without one).
#[no_mangle]
pub extern "C" fn pm4_host_write_wait(write: *mut pm4_host_write, timeout_ns: u64) -> pm4_status {
    boundary("pm4_host_write_wait", || {
        let w = handle::get::<HostWriteObject>(write, "write")?;
        if timeout_ns == u64::MAX {
            return Ok(w.0.wait()?);
        }
        match w.0.wait_timeout(nanos(timeout_ns)) {
            Some(result) => Ok(result?),
            None => Err(Error::new(
                pm4_status::PM4_STATUS_TIMEOUT,
                format_args!("the host write was not applied within {timeout_ns} ns"),
            )),
        }
    })
}

/// Frees a host-write handle (a no-op for NULL or a freed handle).
///
/// Threads: any. From a callback: yes.
#[no_mangle]
pub extern "C" fn pm4_host_write_free(write: *mut pm4_host_write) {
    let _ = boundary("pm4_host_write_free", || {
        drop(handle::remove::<HostWriteObject>(write));
        Ok(())
    });
}
