//! The C ABI of pm4core: the GPU front end (graphics queue and 56 compute
//! queues, threaded or deterministic) for emulators written in C, C++ or
//! C#. The header `include/pm4core.h` is generated from this crate
//! (`cargo run -p pm4core-capi-gen-header`).
//!
//! # Conventions
//!
//! - Every name starts with `pm4_` (`PM4_` for constants).
//! - Objects are opaque handles made by a `_new` (or another maker) and
//!   released by a `_free`; freeing NULL, or a handle already freed, does
//!   nothing. A handle is a number, not a pointer: one this library did
//!   not make, one freed, or one of another kind is `PM4_STATUS_INVALID_HANDLE`.
//! - Every call returns a `pm4_status` and writes its outputs only on
//!   success (the one exception: `PM4_STATUS_BUFFER_TOO_SMALL` writes the
//!   size needed). A failure leaves a message on the calling thread
//!   (`pm4_last_error_message`) naming the function and saying what and
//!   where, as pm4core's errors do.
//! - Every pointer argument is checked: NULL where something is needed is
//!   `PM4_STATUS_NULL_ARGUMENT`; a length whose byte size overflows is
//!   `PM4_STATUS_INVALID_ARGUMENT`. (A non-NULL pointer to memory the
//!   caller does not own cannot be checked: that is the caller's promise.)
//! - No panic crosses the boundary: it is caught and answered as
//!   `PM4_STATUS_PANIC` with its message.
//! - Every callback takes `void *user_data` first. A callback must not let
//!   a C++ exception or a `longjmp` leave it (it would cross Rust frames,
//!   which is undefined behaviour): catch everything inside the callback.
//! - Each function's documentation says on which threads it may be called
//!   ("Threads:"): any thread; from inside a GPU callback or not.
//!
//! # Example
//!
//! What a C program does, written with the same calls from Rust: guest
//! memory, a deterministic GPU, one WRITE_DATA submitted and run, the
//! memory read back, and an error's status and message.
//!
//! ```
//! use std::ffi::CStr;
//! use pm4core_capi::{config::*, gpu::*, memory::*, pm4_last_error_message, pm4_status::*};
//!
//! unsafe {
//!     let mut memory = std::ptr::null_mut();
//!     assert_eq!(pm4_memory_new_flat(0, 0x10000, &mut memory), PM4_STATUS_OK);
//!     // WRITE_DATA of 0x1234 to guest 0x8000.
//!     let words: [u32; 5] = [0xC003_3700, (5 << 8) | (1 << 20), 0x8000, 0, 0x1234];
//!     assert_eq!(pm4_memory_write(memory, 0x1000, words.as_ptr().cast(), 20), PM4_STATUS_OK);
//!     let mut config = std::mem::zeroed();
//!     assert_eq!(pm4_gpu_config_default(&mut config), PM4_STATUS_OK);
//!     config.mode = PM4_MODE_DETERMINISTIC;
//!     let mut gpu = std::ptr::null_mut();
//!     assert_eq!(pm4_gpu_new(&config, memory, std::ptr::null(), &mut gpu), PM4_STATUS_OK);
//!     pm4_memory_free(memory); // the GPU keeps its own reference
//!     assert_eq!(pm4_gpu_submit(gpu, PM4_QUEUE_GRAPHICS, 0x1000, 5, std::ptr::null_mut()), PM4_STATUS_OK);
//!     assert_eq!(pm4_gpu_run_until_idle(gpu), PM4_STATUS_OK);
//!     let mut value = 0u32;
//!     assert_eq!(pm4_gpu_read_memory(gpu, 0x8000, (&mut value as *mut u32).cast(), 4), PM4_STATUS_OK);
//!     assert_eq!(value, 0x1234);
//!     // A submission nothing maps: refused with a status and a message.
//!     assert_eq!(pm4_gpu_submit(gpu, 0, 0x20000, 4, std::ptr::null_mut()), PM4_STATUS_INVALID_SUBMISSION);
//!     let message = CStr::from_ptr(pm4_last_error_message()).to_str().unwrap();
//!     assert!(message.starts_with("pm4_gpu_submit: submission of 4 dwords at 0x20000 on gfx refused"), "{message}");
//!     pm4_gpu_free(gpu);
//! }
//! ```
//!
//! # Architecture: the C ABI (`capi/`)
//!
//! `error.rs` (statuses, the per-thread last error, the boundary every
//! function runs in), `handle.rs` (the handle table), `args.rs` (checked
//! pointers, buffers and strings), `config.rs` (`pm4_gpu_config`),
//! `memory.rs` (host mappings, callback tables, library memory),
//! `backend.rs` (the callback struct and its trampolines), `registers.rs`
//! (a callback's registers and their typed views), `gpu.rs`,
//! `submission.rs`, `signal.rs` (interrupts and stalls), `recorder.rs`,
//! `disasm.rs`, and this file (versions, statuses, last error, names).

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![allow(non_camel_case_types)]

mod args;
pub mod backend;
pub mod config;
pub mod disasm;
pub mod error;
pub mod gpu;
mod handle;
pub mod memory;
pub mod recorder;
pub mod registers;
pub mod signal;
pub mod submission;

use std::ffi::c_char;
use std::sync::OnceLock;

use pm4core::packet::Opcode;

pub use error::pm4_status;

use crate::args::{copy_text, Out};
use crate::error::{boundary, Error};

/// The version of the ABI this header describes: the layouts of its
/// structs and the signatures of its functions. A library whose
/// `pm4_version` gives another `abi` is not compatible with this header.
pub const PM4_ABI_VERSION: u32 = 1;

/// The library's version.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_version_info {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
    /// The library's `PM4_ABI_VERSION`.
    pub abi: u32,
}

/// The library's version and ABI version; an embedder that loads the
/// library at run time compares `abi` with its header's `PM4_ABI_VERSION`.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_version(out: *mut pm4_version_info) -> pm4_status {
    boundary("pm4_version", || {
        let out = Out::new(out, "out")?;
        let number = |s: &str| s.parse().unwrap_or(0);
        let info = pm4_version_info {
            major: number(env!("CARGO_PKG_VERSION_MAJOR")),
            minor: number(env!("CARGO_PKG_VERSION_MINOR")),
            patch: number(env!("CARGO_PKG_VERSION_PATCH")),
            abi: PM4_ABI_VERSION,
        };
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(info) };
        Ok(())
    })
}

/// A short description of `status` (static, NUL-terminated; never NULL).
///
/// Threads: any. From a callback: yes.
#[no_mangle]
pub extern "C" fn pm4_status_str(status: pm4_status) -> *const c_char {
    error::status_text(status).as_ptr().cast()
}

/// The status of the last call that failed on this thread
/// (`PM4_STATUS_OK` if none has). A successful call does not change it.
///
/// Threads: any. From a callback: yes.
#[no_mangle]
pub extern "C" fn pm4_last_error_status() -> pm4_status {
    error::last_status()
}

/// The message of the last call that failed on this thread: the function's
/// name, then what went wrong and where (`pm4_gpu_submit: submission of 4
/// dwords at 0x40 on gfx refused: unmapped guest memory at 0x40 …`). Empty
/// if no call has failed. The pointer stays valid until the next call that
/// fails on this thread; never NULL.
///
/// Threads: any. From a callback: yes.
#[no_mangle]
pub extern "C" fn pm4_last_error_message() -> *const c_char {
    error::last_message_ptr()
}

/// Copies the last error's message (as `pm4_last_error_message`) into
/// `out[..cap]`, NUL-terminated, its length without the NUL to `*len`.
/// A buffer too small answers `PM4_STATUS_BUFFER_TOO_SMALL` with the size
/// needed in `*len` (and leaves the last error as it was).
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `out .. out + cap` is valid for writes; `len` for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_last_error_copy(out: *mut c_char, cap: usize, len: *mut usize) -> pm4_status {
    let message = error::last_message_bytes();
    // Not through `boundary` on failure: the message copied is the one to
    // keep. The copy cannot panic.
    // SAFETY: the caller's promises for `out[..cap]` and `len`.
    match unsafe { copy_text(&message, out, cap, len, "the last error message") } {
        Ok(()) => pm4_status::PM4_STATUS_OK,
        Err(e) => e.status,
    }
}

/// NUL-terminated opcode names, made once.
fn opcode_names() -> &'static [Vec<u8>] {
    static NAMES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    NAMES.get_or_init(|| {
        (0..=255u8)
            .map(|op| {
                let mut name = Opcode(op).to_string().into_bytes();
                name.push(0);
                name
            })
            .collect()
    })
}

/// NUL-terminated VGT_EVENT_TYPE names (gfx10.3), made once; an event
/// type the register database does not name is written as its number.
fn event_names() -> &'static [Vec<u8>] {
    static NAMES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    NAMES.get_or_init(|| {
        (0..64u32)
            .map(|event| {
                let mut name = pm4core::regs::db::event_name(pm4core::GpuFamily::Gfx103, event)
                    .map_or_else(|| format!("{event:#x}"), str::to_owned)
                    .into_bytes();
                name.push(0);
                name
            })
            .collect()
    })
}

/// The VGT_EVENT_TYPE name of `event_type` (`"BOTTOM_OF_PIPE_TS"` for
/// 0x28; `"0x3f"` for a type the register database does not name) to
/// `*name`: static, NUL-terminated, as the disassembler and the recording
/// backend's log write it. `PM4_STATUS_INVALID_ARGUMENT` above 63 (EVENT_TYPE
/// is 6 bits).
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `name` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_event_name(event_type: u32, name: *mut *const c_char) -> pm4_status {
    boundary("pm4_event_name", || {
        let out = Out::new(name, "name")?;
        let entry = usize::try_from(event_type)
            .ok()
            .and_then(|i| event_names().get(i))
            .ok_or_else(|| Error::invalid(format_args!("event type {event_type:#x} is not 6 bits (0..=63)")))?;
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(entry.as_ptr().cast()) };
        Ok(())
    })
}

/// The gfx10.3 name of type-3 opcode `opcode` (`"DRAW_INDEX_AUTO"`, or
/// `"UNKNOWN_0x01"`) to `*name`: static, NUL-terminated.
/// `PM4_STATUS_INVALID_ARGUMENT` above 0xFF.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `name` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_opcode_name(opcode: u32, name: *mut *const c_char) -> pm4_status {
    boundary("pm4_opcode_name", || {
        let out = Out::new(name, "name")?;
        let names = opcode_names();
        let entry = usize::try_from(opcode)
            .ok()
            .and_then(|i| names.get(i))
            .ok_or_else(|| Error::invalid(format_args!("opcode {opcode:#x} is not a byte (0..=0xFF)")))?;
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(entry.as_ptr().cast()) };
        Ok(())
    })
}
