//! Reading a C caller's arguments: buffers, strings and output pointers,
//! each checked (NULL, alignment, a length whose byte size overflows)
//! before it is touched.

use std::ffi::{c_char, CStr};
use std::time::Duration;

use crate::error::{pm4_status, Error};

/// Checks that `ptr` may hold a `T` for `len` elements: not NULL unless
/// `len` is 0, aligned, and `len` elements fit in `isize::MAX` bytes.
fn check<T>(ptr: *const T, len: usize, what: &str) -> Result<bool, Error> {
    if len == 0 {
        return Ok(false);
    }
    if ptr.is_null() {
        return Err(Error::null(what));
    }
    if (ptr as usize) % std::mem::align_of::<T>() != 0 {
        return Err(Error::invalid(format_args!(
            "{what} ({ptr:p}) is not aligned to {} bytes",
            std::mem::align_of::<T>()
        )));
    }
    if len > isize::MAX as usize / std::mem::size_of::<T>().max(1) {
        return Err(Error::invalid(format_args!("the length of {what} ({len} elements) overflows the address space")));
    }
    Ok(true)
}

/// `len` elements at `ptr`, read-only (an empty slice for `len == 0`,
/// whatever `ptr` is).
///
/// # Safety
///
/// When `len > 0` and `ptr` is not NULL, `ptr .. ptr + len` must be valid
/// for reads and not written for `'a`.
pub(crate) unsafe fn slice<'a, T>(ptr: *const T, len: usize, what: &str) -> Result<&'a [T], Error> {
    if !check(ptr, len, what)? {
        return Ok(&[]);
    }
    // SAFETY: `ptr` is non-NULL and aligned, `len * size_of::<T>()` fits in
    // `isize` (checked above), and the caller promises the elements are
    // valid for reads and unchanged for `'a`.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// `len` elements at `ptr`, writable.
///
/// # Safety
///
/// When `len > 0` and `ptr` is not NULL, `ptr .. ptr + len` must be valid
/// for writes and not otherwise accessed for `'a`.
pub(crate) unsafe fn slice_mut<'a, T>(ptr: *mut T, len: usize, what: &str) -> Result<&'a mut [T], Error> {
    if !check(ptr, len, what)? {
        return Ok(&mut []);
    }
    // SAFETY: as in `slice`, and the caller promises exclusive access.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
}

/// A NUL-terminated UTF-8 string.
///
/// # Safety
///
/// When not NULL, `ptr` must point to a NUL-terminated string valid for
/// reads for `'a`.
pub(crate) unsafe fn text<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, Error> {
    if ptr.is_null() {
        return Err(Error::null(what));
    }
    // SAFETY: non-NULL, and the caller promises a NUL-terminated string.
    let bytes = unsafe { CStr::from_ptr(ptr) };
    bytes.to_str().map_err(|e| Error::invalid(format_args!("{what} is not UTF-8 ({e})")))
}

/// An output pointer, checked before the call does anything.
pub(crate) struct Out<T> {
    ptr: *mut T,
}

impl<T> Out<T> {
    /// Checks that `ptr` is not NULL and is aligned.
    pub(crate) fn new(ptr: *mut T, what: &str) -> Result<Self, Error> {
        check(ptr, 1, what)?;
        Ok(Out { ptr })
    }

    /// Writes the output (on success only: call it last).
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for writing one `T`.
    pub(crate) unsafe fn write(self, value: T) {
        // SAFETY: non-NULL and aligned (checked in `new`); the caller
        // promises it is valid for a write. `write` does not read or drop
        // the old contents, which may be uninitialised.
        unsafe { self.ptr.write(value) }
    }
}

/// An output pointer the caller may leave NULL (the output is not wanted).
pub(crate) struct OptOut<T> {
    ptr: *mut T,
}

impl<T> OptOut<T> {
    /// Checks alignment when `ptr` is not NULL.
    pub(crate) fn new(ptr: *mut T, what: &str) -> Result<Self, Error> {
        if !ptr.is_null() {
            check(ptr, 1, what)?;
        }
        Ok(OptOut { ptr })
    }

    /// True when the caller wants the output.
    pub(crate) fn wanted(&self) -> bool {
        !self.ptr.is_null()
    }

    /// Writes the output if the caller wants it.
    ///
    /// # Safety
    ///
    /// When not NULL, `ptr` must be valid for writing one `T`.
    pub(crate) unsafe fn write(self, value: T) {
        if !self.ptr.is_null() {
            // SAFETY: non-NULL and aligned (checked in `new`); the caller
            // promises it is valid for a write.
            unsafe { self.ptr.write(value) }
        }
    }
}

/// Copies `bytes` and a NUL into the caller's `out[..cap]`, writing the
/// length (without the NUL) to `len_out`; a buffer too small answers
/// `PM4_STATUS_BUFFER_TOO_SMALL` with the size needed (NUL included)
/// written to `len_out` and nothing written to `out`.
///
/// # Safety
///
/// `out .. out + cap` valid for writes (when `cap > 0`), `len_out` valid for
/// writing a `usize` (checked not NULL).
pub(crate) unsafe fn copy_text(
    bytes: &[u8],
    out: *mut c_char,
    cap: usize,
    len_out: *mut usize,
    what: &str,
) -> Result<(), Error> {
    let len = Out::new(len_out, "len_out")?;
    let needed = bytes.len() + 1;
    if cap < needed {
        // SAFETY: the caller's promise for `len_out`.
        unsafe { len.write(needed) };
        return Err(Error::new(
            pm4_status::PM4_STATUS_BUFFER_TOO_SMALL,
            format_args!("{what} needs {needed} bytes (NUL included); the buffer holds {cap}"),
        ));
    }
    // SAFETY: the caller promises `out[..cap]` is writable; `needed <= cap`.
    let buffer = unsafe { slice_mut(out.cast::<u8>(), needed, "out")? };
    buffer[..bytes.len()].copy_from_slice(bytes);
    buffer[bytes.len()] = 0;
    // SAFETY: the caller's promise for `len_out`.
    unsafe { len.write(bytes.len()) };
    Ok(())
}

/// Copies `bytes` into `out[..cap]`, as [`copy_text`] without the NUL.
///
/// # Safety
///
/// As [`copy_text`].
pub(crate) unsafe fn copy_bytes(
    bytes: &[u8],
    out: *mut u8,
    cap: usize,
    len_out: *mut usize,
    what: &str,
) -> Result<(), Error> {
    let len = Out::new(len_out, "len_out")?;
    if cap < bytes.len() {
        // SAFETY: the caller's promise for `len_out`.
        unsafe { len.write(bytes.len()) };
        return Err(Error::new(
            pm4_status::PM4_STATUS_BUFFER_TOO_SMALL,
            format_args!("{what} needs {} bytes; the buffer holds {cap}", bytes.len()),
        ));
    }
    // SAFETY: the caller promises `out[..cap]` is writable.
    let buffer = unsafe { slice_mut(out, bytes.len(), "out")? };
    buffer.copy_from_slice(bytes);
    // SAFETY: the caller's promise for `len_out`.
    unsafe { len.write(bytes.len()) };
    Ok(())
}

/// A duration in nanoseconds.
pub(crate) fn nanos(ns: u64) -> Duration {
    Duration::from_nanos(ns)
}

/// Nanoseconds of a duration, saturating.
pub(crate) fn to_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
