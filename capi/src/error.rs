//! Statuses, the per-thread last error, and the boundary every exported
//! function runs inside (`boundary`): no panic crosses it, every failure
//! leaves a message naming the function.

use std::any::Any;
use std::cell::RefCell;
use std::ffi::c_char;
use std::fmt::{self, Write as _};
use std::panic::{catch_unwind, AssertUnwindSafe};

use pm4core::gpu::GpuError;
use pm4core::memory::MemoryError;

/// What a call answers. `PM4_STATUS_OK` (0) is success; every other status
/// leaves a message for `pm4_last_error_message` on the calling thread.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum pm4_status {
    /// The call did what it says.
    PM4_STATUS_OK = 0,
    /// A pointer argument that must not be NULL was NULL.
    PM4_STATUS_NULL_ARGUMENT = 1,
    /// An argument is out of its domain (an unknown mode, a zero slice
    /// size, a length whose byte size overflows, text that is not UTF-8).
    PM4_STATUS_INVALID_ARGUMENT = 2,
    /// A handle that this library did not make, that was freed, or that is
    /// of another kind than the function takes; or a `pm4_registers` used
    /// outside the callback it was given to.
    PM4_STATUS_INVALID_HANDLE = 3,
    /// A queue number outside 0..=56.
    PM4_STATUS_BAD_QUEUE = 4,
    /// Guest memory that is not mapped.
    PM4_STATUS_UNMAPPED = 5,
    /// A guest range that runs past the 48-bit address space.
    PM4_STATUS_OUT_OF_RANGE = 6,
    /// A guest address that is not aligned as the access needs.
    PM4_STATUS_MISALIGNED = 7,
    /// Mapped guest memory that refuses the access.
    PM4_STATUS_PROTECTION = 8,
    /// Another guest-memory failure (a mapping overlap, a write limit).
    PM4_STATUS_MEMORY_ERROR = 9,
    /// A submission refused before anything ran (not dword-aligned, past
    /// the 48-bit space, or not mapped: the message says which).
    PM4_STATUS_INVALID_SUBMISSION = 10,
    /// The work has not completed yet (a poll).
    PM4_STATUS_PENDING = 11,
    /// A wait ran out of time before the answer came.
    PM4_STATUS_TIMEOUT = 12,
    /// Nothing was queued (a poll of interrupts or stall reports).
    PM4_STATUS_EMPTY = 13,
    /// A caller's buffer is too small; the length needed is written (the
    /// one output a failing call writes).
    PM4_STATUS_BUFFER_TOO_SMALL = 14,
    /// The GPU was shut down before the work completed, or the call came
    /// after `pm4_gpu_shutdown`.
    PM4_STATUS_SHUT_DOWN = 15,
    /// The call was made from inside one of the GPU's own callbacks, where
    /// it would wait for the very slice that called it.
    PM4_STATUS_CALLED_FROM_CALLBACK = 16,
    /// The call exists only in the other mode (threaded or deterministic).
    PM4_STATUS_WRONG_MODE = 17,
    /// Every queue with work waits and nothing can wake them (a run's
    /// answer, or a submission failed by a declared deadlock).
    PM4_STATUS_DEADLOCK = 18,
    /// The host aborted the submission (`pm4_gpu_abort`).
    PM4_STATUS_ABORTED = 19,
    /// The command processor stopped the submission (a malformed packet,
    /// an unreadable buffer, a budget): the message says what and where.
    PM4_STATUS_PROCESSOR_ERROR = 20,
    /// A backend implementation panicked during the submission.
    PM4_STATUS_BACKEND_PANICKED = 21,
    /// A guest-memory implementation panicked during the submission.
    PM4_STATUS_MEMORY_PANICKED = 22,
    /// A GPU worker thread stopped unexpectedly.
    PM4_STATUS_WORKER_LOST = 23,
    /// A thread could not be started.
    PM4_STATUS_SPAWN_FAILED = 24,
    /// A file could not be written or read.
    PM4_STATUS_IO_ERROR = 25,
    /// A trace could not be written.
    PM4_STATUS_TRACE_ERROR = 26,
    /// The feature is declared in this header but not wired in this build
    /// of the library (the message says which).
    PM4_STATUS_UNSUPPORTED = 27,
    /// pm4core panicked (a bug: please report it with the message).
    PM4_STATUS_PANIC = 28,
    /// Another failure; the message says what.
    PM4_STATUS_ERROR = 29,
}

use pm4_status::*;

/// A failure on its way to the caller: a status and what happened (the
/// function's name is added at the boundary).
#[derive(Debug)]
pub(crate) struct Error {
    pub(crate) status: pm4_status,
    pub(crate) message: String,
}

impl Error {
    pub(crate) fn new(status: pm4_status, message: impl fmt::Display) -> Self {
        Error { status, message: message.to_string() }
    }

    pub(crate) fn null(what: &str) -> Self {
        Error::new(PM4_STATUS_NULL_ARGUMENT, format_args!("{what} is NULL"))
    }

    pub(crate) fn invalid(message: impl fmt::Display) -> Self {
        Error::new(PM4_STATUS_INVALID_ARGUMENT, message)
    }
}

/// The status a guest-memory error answers.
pub(crate) fn memory_status(error: &MemoryError) -> pm4_status {
    match error {
        MemoryError::Unmapped { .. } => PM4_STATUS_UNMAPPED,
        MemoryError::OutOfRange { .. } => PM4_STATUS_OUT_OF_RANGE,
        MemoryError::Misaligned { .. } => PM4_STATUS_MISALIGNED,
        MemoryError::Protection { .. } => PM4_STATUS_PROTECTION,
        _ => PM4_STATUS_MEMORY_ERROR,
    }
}

impl From<MemoryError> for Error {
    fn from(error: MemoryError) -> Self {
        Error::new(memory_status(&error), error)
    }
}

/// The status a GPU error answers.
pub(crate) fn gpu_status(error: &GpuError) -> pm4_status {
    match error {
        GpuError::QueueOutOfRange { .. } => PM4_STATUS_BAD_QUEUE,
        GpuError::Processor { .. } => PM4_STATUS_PROCESSOR_ERROR,
        GpuError::HostWrite { source, .. } => memory_status(source),
        GpuError::Deadlock(_) => PM4_STATUS_DEADLOCK,
        GpuError::BackendPanicked { .. } => PM4_STATUS_BACKEND_PANICKED,
        GpuError::MemoryPanicked { .. } => PM4_STATUS_MEMORY_PANICKED,
        GpuError::InternalPanic { .. } => PM4_STATUS_PANIC,
        GpuError::InvalidSubmission { .. } => PM4_STATUS_INVALID_SUBMISSION,
        GpuError::CalledFromCallback { .. } => PM4_STATUS_CALLED_FROM_CALLBACK,
        GpuError::ShutDown => PM4_STATUS_SHUT_DOWN,
        GpuError::Aborted(_) => PM4_STATUS_ABORTED,
        GpuError::Pending => PM4_STATUS_PENDING,
        GpuError::WrongMode { .. } => PM4_STATUS_WRONG_MODE,
        GpuError::WorkerLost => PM4_STATUS_WORKER_LOST,
        GpuError::Spawn(_) => PM4_STATUS_SPAWN_FAILED,
        _ => PM4_STATUS_ERROR,
    }
}

impl From<GpuError> for Error {
    fn from(error: GpuError) -> Self {
        Error::new(gpu_status(&error), error)
    }
}

/// The text of each status, NUL-terminated.
pub(crate) fn status_text(status: pm4_status) -> &'static str {
    match status {
        PM4_STATUS_OK => "ok\0",
        PM4_STATUS_NULL_ARGUMENT => "a required pointer argument is NULL\0",
        PM4_STATUS_INVALID_ARGUMENT => "invalid argument\0",
        PM4_STATUS_INVALID_HANDLE => "invalid, freed or wrong kind of handle\0",
        PM4_STATUS_BAD_QUEUE => "queue out of range (0..=56)\0",
        PM4_STATUS_UNMAPPED => "guest memory not mapped\0",
        PM4_STATUS_OUT_OF_RANGE => "guest range past the 48-bit address space\0",
        PM4_STATUS_MISALIGNED => "misaligned guest address\0",
        PM4_STATUS_PROTECTION => "guest memory protection fault\0",
        PM4_STATUS_MEMORY_ERROR => "guest memory error\0",
        PM4_STATUS_INVALID_SUBMISSION => "submission refused before it ran\0",
        PM4_STATUS_PENDING => "not completed yet\0",
        PM4_STATUS_TIMEOUT => "timed out\0",
        PM4_STATUS_EMPTY => "nothing queued\0",
        PM4_STATUS_BUFFER_TOO_SMALL => "buffer too small\0",
        PM4_STATUS_SHUT_DOWN => "the GPU is shut down\0",
        PM4_STATUS_CALLED_FROM_CALLBACK => "not allowed from a callback of the same GPU\0",
        PM4_STATUS_WRONG_MODE => "not available in this GPU mode\0",
        PM4_STATUS_DEADLOCK => "deadlock: every queue with work waits\0",
        PM4_STATUS_ABORTED => "aborted by the host\0",
        PM4_STATUS_PROCESSOR_ERROR => "the command processor stopped the submission\0",
        PM4_STATUS_BACKEND_PANICKED => "the backend panicked\0",
        PM4_STATUS_MEMORY_PANICKED => "the guest memory implementation panicked\0",
        PM4_STATUS_WORKER_LOST => "a GPU worker thread stopped unexpectedly\0",
        PM4_STATUS_SPAWN_FAILED => "a thread could not be started\0",
        PM4_STATUS_IO_ERROR => "input/output error\0",
        PM4_STATUS_TRACE_ERROR => "trace error\0",
        PM4_STATUS_UNSUPPORTED => "not supported by this build of the library\0",
        PM4_STATUS_PANIC => "pm4core panicked (a bug)\0",
        PM4_STATUS_ERROR => "error\0",
    }
}

/// The calling thread's last failure: its status and its message,
/// NUL-terminated (the buffer is reused from failure to failure).
struct LastError {
    status: pm4_status,
    message: Vec<u8>,
}

thread_local! {
    static LAST: RefCell<LastError> = const { RefCell::new(LastError { status: PM4_STATUS_OK, message: Vec::new() }) };
}

/// Records `function: message` as this thread's last error.
pub(crate) fn set_last_error(function: &str, error: &Error) {
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        last.status = error.status;
        let mut text = String::with_capacity(function.len() + 2 + error.message.len());
        let _ = write!(text, "{function}: {}", error.message);
        last.message.clear();
        // A NUL inside the message would end it early in C.
        last.message.extend(text.bytes().map(|b| if b == 0 { b'?' } else { b }));
        last.message.push(0);
    });
}

/// This thread's last error status.
pub(crate) fn last_status() -> pm4_status {
    LAST.with(|last| last.borrow().status)
}

/// A pointer to this thread's last message (NUL-terminated), valid until
/// the next failing call on this thread.
pub(crate) fn last_message_ptr() -> *const c_char {
    LAST.with(|last| {
        let last = last.borrow();
        if last.message.is_empty() {
            c"".as_ptr()
        } else {
            last.message.as_ptr().cast()
        }
    })
}

/// This thread's last message without its NUL.
pub(crate) fn last_message_bytes() -> Vec<u8> {
    LAST.with(|last| {
        let last = last.borrow();
        last.message.strip_suffix(&[0]).unwrap_or(&last.message).to_vec()
    })
}

/// The text of a panic's payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a payload that is not text".to_string()
    }
}

/// Runs an exported function's body: its error becomes the status (and
/// this thread's last error, prefixed with `function`), a panic becomes
/// `PM4_STATUS_PANIC` with its message; nothing unwinds to the caller.
#[inline]
pub(crate) fn boundary(function: &'static str, body: impl FnOnce() -> Result<(), Error>) -> pm4_status {
    // The body's state is dropped or reported; a caught panic leaves no
    // half-updated value the caller can observe except through statuses.
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => PM4_STATUS_OK,
        Ok(Err(error)) => {
            set_last_error(function, &error);
            error.status
        }
        Err(payload) => {
            let error = Error::new(PM4_STATUS_PANIC, format_args!("pm4core panicked: {}", panic_message(&*payload)));
            set_last_error(function, &error);
            PM4_STATUS_PANIC
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_inside_a_call_is_a_status_and_a_message_not_an_unwind() {
        let status = boundary("pm4_test_call", || panic!("the bug's own words"));
        assert_eq!(status, PM4_STATUS_PANIC);
        assert_eq!(last_status(), PM4_STATUS_PANIC);
        assert_eq!(last_message_bytes(), b"pm4_test_call: pm4core panicked: the bug's own words");
        // A success leaves the last error as it was.
        assert_eq!(boundary("pm4_other", || Ok(())), PM4_STATUS_OK);
        assert_eq!(last_status(), PM4_STATUS_PANIC);
    }

    #[test]
    fn a_nul_inside_a_message_does_not_cut_it_short() {
        set_last_error("pm4_f", &Error::invalid("a\0b"));
        assert_eq!(last_message_bytes(), b"pm4_f: a?b");
    }

    #[test]
    fn the_statuses_are_numbered_from_0_each_with_a_nul_terminated_text() {
        let all = [
            PM4_STATUS_OK,
            PM4_STATUS_NULL_ARGUMENT,
            PM4_STATUS_INVALID_ARGUMENT,
            PM4_STATUS_INVALID_HANDLE,
            PM4_STATUS_BAD_QUEUE,
            PM4_STATUS_UNMAPPED,
            PM4_STATUS_OUT_OF_RANGE,
            PM4_STATUS_MISALIGNED,
            PM4_STATUS_PROTECTION,
            PM4_STATUS_MEMORY_ERROR,
            PM4_STATUS_INVALID_SUBMISSION,
            PM4_STATUS_PENDING,
            PM4_STATUS_TIMEOUT,
            PM4_STATUS_EMPTY,
            PM4_STATUS_BUFFER_TOO_SMALL,
            PM4_STATUS_SHUT_DOWN,
            PM4_STATUS_CALLED_FROM_CALLBACK,
            PM4_STATUS_WRONG_MODE,
            PM4_STATUS_DEADLOCK,
            PM4_STATUS_ABORTED,
            PM4_STATUS_PROCESSOR_ERROR,
            PM4_STATUS_BACKEND_PANICKED,
            PM4_STATUS_MEMORY_PANICKED,
            PM4_STATUS_WORKER_LOST,
            PM4_STATUS_SPAWN_FAILED,
            PM4_STATUS_IO_ERROR,
            PM4_STATUS_TRACE_ERROR,
            PM4_STATUS_UNSUPPORTED,
            PM4_STATUS_PANIC,
            PM4_STATUS_ERROR,
        ];
        for (number, status) in all.into_iter().enumerate() {
            assert_eq!(status as usize, number);
            let text = status_text(status);
            assert!(text.ends_with('\0') && text.len() > 1 && !text[..text.len() - 1].contains('\0'));
        }
    }
}
