//! Guest memory from C: the emulator's own host mappings, its own access
//! functions (a callback table), or memory the library allocates.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pm4core::memory::{Access, FlatMemory, GuestMemory, HostAccess, MemoryError, TranslatedMemory};
use pm4core::recorder::RecorderLog;
use pm4core_hostmem::{HostMappedMemory, HostMapping};

use crate::args::{slice, slice_mut, Out};
use crate::backend::InCallback;
use crate::error::{boundary, pm4_status, Error};
use crate::handle;

/// Guest memory a GPU reads and writes (opaque). Made by
/// `pm4_memory_new_host`, `pm4_memory_new_callbacks`,
/// `pm4_memory_new_flat` or `pm4_recorder_new`; a GPU keeps its own
/// reference, so the handle may be freed once the GPU is made.
pub struct pm4_memory {
    _opaque: [u8; 0],
}

/// One range of guest memory the emulator mapped at a host address.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_host_mapping {
    /// Guest (GPU virtual) address of the first byte.
    pub guest_base: u64,
    /// Host address of the first byte.
    pub host: *mut c_void,
    /// Bytes mapped.
    pub len: usize,
}

/// A memory callback succeeded.
pub const PM4_MEMORY_OK: i32 = 0;
/// A memory callback met a byte that is not mapped.
pub const PM4_MEMORY_UNMAPPED: i32 = 1;
/// A memory callback met mapped bytes that refuse the access.
pub const PM4_MEMORY_PROTECTION: i32 = 2;

/// Guest memory reached through the emulator's own functions (the
/// translate-and-copy form). Every entry except `release` is required.
///
/// The emulator's side of the contract:
/// - `read` and `write` of a naturally aligned 4 or 8 bytes are one access
///   of that width (never torn: an atomic or volatile load or store);
///   `write` is a release store and `read` an acquire load (on x86-64
///   every plain aligned load and store already is);
/// - `cas32` and `cas64` are indivisible and acquire-release: when the
///   value at `address` equals `expected` they store `desired`; either way
///   they write the value found to `*found` and return `PM4_MEMORY_OK`;
/// - each returns `PM4_MEMORY_OK`, `PM4_MEMORY_UNMAPPED` or
///   `PM4_MEMORY_PROTECTION`; a write that fails writes nothing at or
///   after the failing byte;
/// - `is_mapped` returns nonzero when every byte of the range is mapped;
/// - they are called from the GPU's worker threads, several at once: they
///   must be thread-safe, must not call any `pm4_` function, and must not
///   throw a C++ exception;
/// - `release` (may be NULL) is called once when the memory is no longer
///   used by anything (the last GPU or handle holding it is gone); never
///   when `pm4_memory_new_callbacks` fails (the table stays the caller's).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_memory_callbacks {
    /// Passed first to every callback.
    pub user_data: *mut c_void,
    /// Copies guest bytes `[address, address + len)` into `out`.
    pub read: Option<unsafe extern "C" fn(user_data: *mut c_void, address: u64, out: *mut c_void, len: usize) -> i32>,
    /// Copies `len` bytes from `data` to guest memory at `address`.
    pub write:
        Option<unsafe extern "C" fn(user_data: *mut c_void, address: u64, data: *const c_void, len: usize) -> i32>,
    /// Nonzero when every byte of `[address, address + len)` is mapped.
    pub is_mapped: Option<unsafe extern "C" fn(user_data: *mut c_void, address: u64, len: u64) -> u8>,
    /// 32-bit compare-exchange at the 4-byte aligned `address`.
    pub cas32: Option<
        unsafe extern "C" fn(user_data: *mut c_void, address: u64, expected: u32, desired: u32, found: *mut u32) -> i32,
    >,
    /// 64-bit compare-exchange at the 8-byte aligned `address`.
    pub cas64: Option<
        unsafe extern "C" fn(user_data: *mut c_void, address: u64, expected: u64, desired: u64, found: *mut u64) -> i32,
    >,
    /// Called once when the memory is dropped (may be NULL).
    pub release: Option<unsafe extern "C" fn(user_data: *mut c_void)>,
}

/// A library memory object: any guest memory, and the recording log when
/// it is a recorder's memory.
pub(crate) struct MemoryObject {
    pub(crate) memory: Arc<dyn GuestMemory>,
    pub(crate) log: Option<RecorderLog>,
}

handle::object!(MemoryObject, pm4_memory, Memory, "pm4_memory");

/// The checked callback table.
struct Callbacks {
    user_data: *mut c_void,
    read: unsafe extern "C" fn(*mut c_void, u64, *mut c_void, usize) -> i32,
    write: unsafe extern "C" fn(*mut c_void, u64, *const c_void, usize) -> i32,
    is_mapped: unsafe extern "C" fn(*mut c_void, u64, u64) -> u8,
    cas32: unsafe extern "C" fn(*mut c_void, u64, u32, u32, *mut u32) -> i32,
    cas64: unsafe extern "C" fn(*mut c_void, u64, u64, u64, *mut u64) -> i32,
    release: Option<unsafe extern "C" fn(*mut c_void)>,
    /// Set once the memory exists: a failed `pm4_memory_new_callbacks`
    /// leaves the table the caller's and does not release it.
    armed: Arc<AtomicBool>,
}

// SAFETY: the table holds function pointers and the caller's `user_data`;
// `pm4_memory_new_callbacks`'s contract is that the callbacks may be called
// from any thread, several at once (they are the emulator's thread-safe
// accessors), and `user_data` is only passed to them.
unsafe impl Send for Callbacks {}
// SAFETY: see `Send`: every use through `&self` is a call of a thread-safe
// callback.
unsafe impl Sync for Callbacks {}

impl Drop for Callbacks {
    fn drop(&mut self) {
        if !self.armed.load(Ordering::Acquire) {
            return;
        }
        if let Some(release) = self.release {
            // SAFETY: the caller's contract: `release` may be called once,
            // from any thread, with its `user_data`, when the memory is gone.
            unsafe { release(self.user_data) }
        }
    }
}

/// A callback's result as a memory error for `[address, address + len)`.
fn result(code: i32, address: u64, len: u64, access: Access) -> Result<(), MemoryError> {
    match code {
        PM4_MEMORY_OK => Ok(()),
        PM4_MEMORY_PROTECTION => Err(MemoryError::Protection { address, len, access }),
        // PM4_MEMORY_UNMAPPED, and any code the contract does not name.
        _ => Err(MemoryError::Unmapped { address, len }),
    }
}

impl HostAccess for Callbacks {
    fn read(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError> {
        let _in = InCallback::enter();
        // SAFETY: `out` is a valid writable buffer of `out.len()` bytes for
        // the call; the callback's contract is to write at most that.
        let code = unsafe { (self.read)(self.user_data, address, out.as_mut_ptr().cast(), out.len()) };
        result(code, address, out.len() as u64, Access::Read)
    }

    fn write(&self, address: u64, data: &[u8]) -> Result<(), MemoryError> {
        let _in = InCallback::enter();
        // SAFETY: `data` is valid for reads of `data.len()` bytes for the call.
        let code = unsafe { (self.write)(self.user_data, address, data.as_ptr().cast(), data.len()) };
        result(code, address, data.len() as u64, Access::Write)
    }

    fn is_mapped(&self, address: u64, len: u64) -> bool {
        let _in = InCallback::enter();
        // SAFETY: plain values; the callback's contract.
        unsafe { (self.is_mapped)(self.user_data, address, len) != 0 }
    }

    fn compare_exchange_u32(&self, address: u64, current: u32, new: u32) -> Result<Result<u32, u32>, MemoryError> {
        let mut found = 0u32;
        let _in = InCallback::enter();
        // SAFETY: `found` is a valid `u32` for the call.
        let code = unsafe { (self.cas32)(self.user_data, address, current, new, &mut found) };
        result(code, address, 4, Access::Write)?;
        Ok(if found == current { Ok(found) } else { Err(found) })
    }

    fn compare_exchange_u64(&self, address: u64, current: u64, new: u64) -> Result<Result<u64, u64>, MemoryError> {
        let mut found = 0u64;
        let _in = InCallback::enter();
        // SAFETY: `found` is a valid `u64` for the call.
        let code = unsafe { (self.cas64)(self.user_data, address, current, new, &mut found) };
        result(code, address, 8, Access::Write)?;
        Ok(if found == current { Ok(found) } else { Err(found) })
    }
}

/// Puts a memory in the table.
pub(crate) fn insert_memory(
    memory: Arc<dyn GuestMemory>,
    log: Option<RecorderLog>,
    out: Out<*mut pm4_memory>,
) -> Result<(), Error> {
    let handle = handle::insert(MemoryObject { memory, log })?;
    // SAFETY: `out` was checked by the caller's `Out::new`; the exported
    // function's contract makes it valid for a write.
    unsafe { out.write(handle) };
    Ok(())
}

/// Makes guest memory over host mappings the emulator owns: every GPU
/// access goes straight to the emulator's bytes, each aligned dword or
/// qword as one atomic access, nothing copied. Mappings may come in any
/// order; zero-length ones are ignored. Writes the handle to `*out`.
///
/// Checked: each guest range lies in the 48-bit space, each host range is
/// not NULL and does not wrap, guest and host addresses agree modulo 8,
/// guest ranges do not overlap (`PM4_STATUS_INVALID_ARGUMENT` naming the
/// mapping otherwise).
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `mappings` points to `count` mappings (may be NULL when `count` is 0);
/// `out` is valid for a write. For every mapping, for as long as the memory
/// or any GPU made over it exists (until the last is freed and
/// `pm4_gpu_free` has returned): `host .. host + len` stays one allocation
/// valid for reads and writes (not freed, unmapped or made read-only).
/// The emulator's native guest code may keep using plain loads and stores
/// on those bytes.
#[no_mangle]
pub unsafe extern "C" fn pm4_memory_new_host(
    mappings: *const pm4_host_mapping,
    count: usize,
    out: *mut *mut pm4_memory,
) -> pm4_status {
    boundary("pm4_memory_new_host", || {
        let out = Out::new(out, "out")?;
        // SAFETY: the caller's promise for `mappings[..count]`.
        let mappings = unsafe { slice(mappings, count, "mappings")? };
        let ranges: Vec<HostMapping> = mappings
            .iter()
            .map(|m| HostMapping { guest_base: m.guest_base, host: m.host.cast(), len: m.len })
            .collect();
        // SAFETY: the caller promises each host range stays valid for reads
        // and writes for the memory's lifetime (this function's contract is
        // `HostMappedMemory::new`'s); what can be checked is checked there.
        let memory = unsafe { HostMappedMemory::new(&ranges) }.map_err(Error::invalid)?;
        insert_memory(Arc::new(memory), None, out)
    })
}

/// Makes guest memory reached through the emulator's own functions (see
/// `pm4_memory_callbacks` for their contract). The table is copied. A NULL
/// required entry is `PM4_STATUS_NULL_ARGUMENT` naming it. Writes the handle
/// to `*out`.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `callbacks` points to a valid table; `out` is valid for a write. The
/// callbacks and `user_data` stay valid until `release` is called (or, with
/// no `release`, until the memory and every GPU over it are freed).
#[no_mangle]
pub unsafe extern "C" fn pm4_memory_new_callbacks(
    callbacks: *const pm4_memory_callbacks,
    out: *mut *mut pm4_memory,
) -> pm4_status {
    boundary("pm4_memory_new_callbacks", || {
        let out = Out::new(out, "out")?;
        // SAFETY: the caller's promise for `callbacks` (one element).
        let table = unsafe { slice(callbacks, 1, "callbacks")? }[0];
        let need = |name: &str| Error::null(&format!("callbacks->{name}"));
        let callbacks = Callbacks {
            user_data: table.user_data,
            read: table.read.ok_or_else(|| need("read"))?,
            write: table.write.ok_or_else(|| need("write"))?,
            is_mapped: table.is_mapped.ok_or_else(|| need("is_mapped"))?,
            cas32: table.cas32.ok_or_else(|| need("cas32"))?,
            cas64: table.cas64.ok_or_else(|| need("cas64"))?,
            release: table.release,
            armed: Arc::new(AtomicBool::new(false)),
        };
        let armed = Arc::clone(&callbacks.armed);
        insert_memory(Arc::new(TranslatedMemory::new(callbacks)), None, out)?;
        armed.store(true, Ordering::Release);
        Ok(())
    })
}

/// The largest memory `pm4_memory_new_flat` allocates.
const FLAT_MAX: u64 = 16 << 30;

/// Makes `size` bytes of zeroed guest memory at guest address `base`,
/// allocated and owned by the library (for tools and tests; an emulator
/// usually hands the GPU its own memory with `pm4_memory_new_host`).
/// `base` must be a multiple of 8 and `size` at most 16 GiB
/// (`PM4_STATUS_INVALID_ARGUMENT` above: a larger allocation that the host
/// cannot give would end the process). Writes the handle to `*out`.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_memory_new_flat(base: u64, size: u64, out: *mut *mut pm4_memory) -> pm4_status {
    boundary("pm4_memory_new_flat", || {
        let out = Out::new(out, "out")?;
        if size > FLAT_MAX {
            return Err(Error::invalid(format_args!(
                "size {size:#x} is above the {FLAT_MAX:#x} bytes library memory may have"
            )));
        }
        let memory = FlatMemory::new(base, size)?;
        insert_memory(Arc::new(memory), None, out)
    })
}

/// Reads `len` guest bytes at `address` into `out`.
///
/// Threads: any. From a backend callback: yes (not from a memory callback).
///
/// # Safety
///
/// `out .. out + len` is valid for writes (may be NULL when `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn pm4_memory_read(
    memory: *mut pm4_memory,
    address: u64,
    out: *mut c_void,
    len: usize,
) -> pm4_status {
    boundary("pm4_memory_read", || {
        let memory = handle::get::<MemoryObject>(memory, "memory")?;
        // SAFETY: the caller's promise for `out[..len]`.
        let out = unsafe { slice_mut(out.cast::<u8>(), len, "out")? };
        Ok(memory.memory.read_bytes(address, out)?)
    })
}

/// Writes `len` bytes from `data` to guest memory at `address`, as the CPU
/// would: a GPU over this memory is not told (call
/// `pm4_gpu_notify_host_write`, or let its polling see the change).
///
/// Threads: any. From a backend callback: yes (not from a memory callback).
///
/// # Safety
///
/// `data .. data + len` is valid for reads (may be NULL when `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn pm4_memory_write(
    memory: *mut pm4_memory,
    address: u64,
    data: *const c_void,
    len: usize,
) -> pm4_status {
    boundary("pm4_memory_write", || {
        let memory = handle::get::<MemoryObject>(memory, "memory")?;
        // SAFETY: the caller's promise for `data[..len]`.
        let data = unsafe { slice(data.cast::<u8>(), len, "data")? };
        Ok(memory.memory.write_bytes(address, data)?)
    })
}

/// Frees a memory handle (a no-op for NULL, and for a handle already
/// freed). A GPU made over the memory keeps using it; the memory itself
/// goes (and a callback table's `release` is called) when nothing holds
/// it any more.
///
/// Threads: any. From a callback: yes.
#[no_mangle]
pub extern "C" fn pm4_memory_free(memory: *mut pm4_memory) {
    let _ = boundary("pm4_memory_free", || {
        drop(handle::remove::<MemoryObject>(memory));
        Ok(())
    });
}
