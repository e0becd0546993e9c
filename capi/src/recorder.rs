//! The recorder from C: a memory that remembers every 256-byte line of
//! guest memory as it was before its first access; a GPU made over it
//! records its submissions, host writes and notified CPU writes; the trace
//! it writes replays (`pm4 replay`) to the same events.

use std::ffi::c_char;
use std::sync::Arc;

use pm4core::memory::GuestMemory;
use pm4core::recorder::{Recorder, RecorderLog};

use crate::args::{copy_bytes, text, Out};
use crate::error::{boundary, pm4_status, Error};
use crate::handle;
use crate::memory::{insert_memory, pm4_memory, MemoryObject};

/// A recording (opaque).
pub struct pm4_recorder {
    _opaque: [u8; 0],
}

pub(crate) struct RecorderObject {
    recorder: Arc<Recorder<Arc<dyn GuestMemory>>>,
    log: RecorderLog,
}

handle::object!(RecorderObject, pm4_recorder, Recorder, "pm4_recorder");

/// Starts a recording over `inner`: writes the recording handle to
/// `*recorder` and, to `*memory`, a memory to make the GPU over (it goes to
/// `inner` and remembers what it served). A GPU over that memory records
/// each `pm4_gpu_submit`, `pm4_gpu_write_memory` and
/// `pm4_gpu_notify_host_write` (the notified bytes as a host write at that
/// point) in call order; a CPU store nobody notifies is not in the trace.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `recorder` and `memory` are valid for writes.
#[no_mangle]
pub unsafe extern "C" fn pm4_recorder_new(
    inner: *mut pm4_memory,
    recorder: *mut *mut pm4_recorder,
    memory: *mut *mut pm4_memory,
) -> pm4_status {
    boundary("pm4_recorder_new", || {
        let inner = handle::get::<MemoryObject>(inner, "inner")?;
        let recorder_out = Out::new(recorder, "recorder")?;
        let memory_out = Out::new(memory, "memory")?;
        let (recorder, log) = Recorder::new(Arc::clone(&inner.memory));
        let recorder = Arc::new(recorder);
        let object = RecorderObject { recorder: Arc::clone(&recorder), log: log.clone() };
        let h = handle::insert(object)?;
        let mut memory_handle = std::ptr::null_mut();
        if let Err(e) = insert_memory(recorder, Some(log), Out::new(&mut memory_handle, "memory")?) {
            drop(handle::remove::<RecorderObject>(h));
            return Err(e);
        }
        // SAFETY: both checked by `Out::new`; the caller's promise.
        unsafe {
            recorder_out.write(h);
            memory_out.write(memory_handle);
        }
        Ok(())
    })
}

/// Sets an `INFO` key of the trace (`description`, `producer`, …).
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `key` and `value` are NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn pm4_recorder_info(
    recorder: *mut pm4_recorder,
    key: *const c_char,
    value: *const c_char,
) -> pm4_status {
    boundary("pm4_recorder_info", || {
        let r = handle::get::<RecorderObject>(recorder, "recorder")?;
        // SAFETY: the caller's promises for `key` and `value`.
        let (key, value) = unsafe { (text(key, "key")?, text(value, "value")?) };
        r.log.info(key, value);
        Ok(())
    })
}

/// Adds a note for people at this point of the trace.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `note` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pm4_recorder_note(recorder: *mut pm4_recorder, note: *const c_char) -> pm4_status {
    boundary("pm4_recorder_note", || {
        let r = handle::get::<RecorderObject>(recorder, "recorder")?;
        // SAFETY: the caller's promise for `note`.
        let note = unsafe { text(note, "note")? };
        r.log.note(note);
        Ok(())
    })
}

fn finish(r: &RecorderObject) -> Result<Vec<u8>, Error> {
    r.recorder.finish().map_err(|e| Error::new(pm4_status::PM4_STATUS_TRACE_ERROR, e))
}

/// Writes the trace so far into `out[..cap]`, its length to `*len`; a
/// buffer too small answers `PM4_STATUS_BUFFER_TOO_SMALL` with the size
/// needed in `*len` (call with `cap` 0 to learn it). Drive the GPU to the
/// point to record first (`pm4_gpu_run_until_idle`).
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `out .. out + cap` is valid for writes; `len` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_recorder_finish(
    recorder: *mut pm4_recorder,
    out: *mut u8,
    cap: usize,
    len: *mut usize,
) -> pm4_status {
    boundary("pm4_recorder_finish", || {
        let r = handle::get::<RecorderObject>(recorder, "recorder")?;
        let bytes = finish(&r)?;
        // SAFETY: the caller's promises for `out[..cap]` and `len`.
        unsafe { copy_bytes(&bytes, out, cap, len, "the trace") }
    })
}

/// Writes the trace so far to the file `path` (replaced if it exists).
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pm4_recorder_save(recorder: *mut pm4_recorder, path: *const c_char) -> pm4_status {
    boundary("pm4_recorder_save", || {
        let r = handle::get::<RecorderObject>(recorder, "recorder")?;
        // SAFETY: the caller's promise for `path`.
        let path = unsafe { text(path, "path")? };
        let bytes = finish(&r)?;
        std::fs::write(path, bytes)
            .map_err(|e| Error::new(pm4_status::PM4_STATUS_IO_ERROR, format_args!("writing {path}: {e}")))
    })
}

/// Frees a recording handle (a no-op for NULL or a freed handle); its
/// memory keeps working for the GPUs over it.
///
/// Threads: any. From a callback: yes.
#[no_mangle]
pub extern "C" fn pm4_recorder_free(recorder: *mut pm4_recorder) {
    let _ = boundary("pm4_recorder_free", || {
        drop(handle::remove::<RecorderObject>(recorder));
        Ok(())
    });
}
