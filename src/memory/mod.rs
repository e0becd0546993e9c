//! Guest memory: the GPU virtual address space that packets read and write.
//!
//! The processor never touches host pointers: every access goes through the
//! [`GuestMemory`] trait with a 48-bit GPU virtual address, and an address
//! that nothing maps is a [`MemoryError`] naming it. [`SparseMemory`] is the
//! implementation the replayer and the tests use: regions mapped at fixed
//! addresses, backed either by shared read-only bytes (a trace file's `MEM `
//! payload, not copied) or by nothing at all (`ZERO` regions), with 4 KiB
//! copy-on-write pages allocated only when written.

use std::sync::Arc;

pub use flat::FlatMemory;
pub use lent::LentDwords;
pub(crate) use observed::{ObservedMemory, WriteObserver};
pub use sparse::SparseMemory;
pub use translated::{HostAccess, TranslatedMemory};

pub mod contract;
mod flat;
mod lent;
mod observed;
mod sparse;
mod translated;

/// GPU virtual addresses are 48 bits wide; packets carry sign-extended high
/// dwords (0xFFFF8001), so every address read from a packet is masked.
pub const ADDRESS_MASK: u64 = (1 << 48) - 1;

/// The end of the 48-bit address space (exclusive).
pub const ADDRESS_SPACE_END: u64 = 1 << 48;

/// Size of a copy-on-write page of [`SparseMemory`].
pub const PAGE_SIZE: usize = 4096;

/// Combines a packet's low and high address dwords into a 48-bit address,
/// clearing `low_clear_bits` low bits of the low dword (alignment or swap
/// fields that share it).
#[inline]
pub fn address_from_dwords(lo: u32, hi: u32, low_clear_bits: u32) -> u64 {
    let lo = u64::from(lo) & !((1u64 << low_clear_bits) - 1);
    ((u64::from(hi) << 32) | lo) & ADDRESS_MASK
}

/// An access to guest memory that could not be carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    /// Some byte of `[address, address + len)` is not mapped.
    #[error("unmapped guest memory at {address:#x} (access of {len} bytes)")]
    Unmapped { address: u64, len: u64 },
    /// The access runs past the end of the 48-bit address space.
    #[error("guest access at {address:#x} of {len} bytes runs past the 48-bit address space")]
    OutOfRange { address: u64, len: u64 },
    /// The bytes at `address` are mapped but refuse this kind of access (a
    /// write to read-only memory, a read of memory the GPU may not read).
    #[error("protection fault: {access} of {len} bytes at {address:#x} is not allowed")]
    Protection { address: u64, len: u64, access: Access },
    /// A mapping request overlaps an existing region.
    #[error("region at {address:#x} of {len} bytes overlaps an existing region")]
    Overlap { address: u64, len: u64 },
    /// A mapping request, or an atomic access, is not aligned as it must be
    /// (4 bytes for a mapping, the access's width for an atomic one).
    #[error("guest address {address:#x} is not aligned for this access")]
    Misaligned { address: u64 },
    /// The write of `len` bytes at `address` needs a copy of a page that
    /// would take the memory's written pages past their limit
    /// ([`SparseMemory::set_written_limit`]); nothing of it was written.
    #[error(
        "write of {len} bytes at {address:#x} refused: written guest memory would exceed its limit of {limit} bytes"
    )]
    WrittenLimit { address: u64, len: u64, limit: u64 },
    /// The write of `len` bytes at `address` would take the bytes written
    /// over the memory's lifetime past their budget
    /// ([`SparseMemory::set_write_budget`]); nothing of it was written.
    #[error("write of {len} bytes at {address:#x} refused: bytes written to guest memory would exceed their budget of {limit}")]
    WriteBudget { address: u64, len: u64, limit: u64 },
}

/// The kind of access a [`MemoryError::Protection`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    Read,
    Write,
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Access::Read => "read",
            Access::Write => "write",
        })
    }
}

impl MemoryError {
    /// The guest address the error is about.
    pub fn address(&self) -> u64 {
        match *self {
            MemoryError::Unmapped { address, .. }
            | MemoryError::OutOfRange { address, .. }
            | MemoryError::Protection { address, .. }
            | MemoryError::Overlap { address, .. }
            | MemoryError::WrittenLimit { address, .. }
            | MemoryError::WriteBudget { address, .. }
            | MemoryError::Misaligned { address } => address,
        }
    }
}

/// Checks that `[address, address + len)` lies inside the 48-bit space and
/// returns its end.
#[inline]
pub fn check_range(address: u64, len: u64) -> Result<u64, MemoryError> {
    match address.checked_add(len) {
        Some(end) if end <= ADDRESS_SPACE_END => Ok(end),
        _ => Err(MemoryError::OutOfRange { address, len }),
    }
}

/// Checks `[address, address + len)` as [`check_range`] does, and for a
/// zero-length access that `address` itself lies in the 48-bit space (what
/// the [`GuestMemory`] contract asks of zero-length accesses).
#[inline]
pub fn check_access(address: u64, len: u64) -> Result<u64, MemoryError> {
    if len == 0 && address >= ADDRESS_SPACE_END {
        return Err(MemoryError::OutOfRange { address, len });
    }
    check_range(address, len)
}

/// The guest's GPU virtual memory, as the command processor sees it.
///
/// Every method takes `&self`: guest memory is shared. The emulated CPU
/// writes it while queue workers read and write it, so implementations keep
/// their own interior mutability and are `Send + Sync`. The crate has four:
/// [`FlatMemory`] (one allocation the crate makes), [`SparseMemory`]
/// (replay and tests), [`TranslatedMemory`] (an emulator's own read, write
/// and compare-exchange functions) and, in the `pm4core-hostmem` crate,
/// memory the emulator already mapped at host addresses of its choosing.
///
/// # The contract
///
/// What the GPU relies on, and every implementation must give:
///
/// - **Single-copy atomicity.** [`read_u32`](Self::read_u32),
///   [`read_u64`](Self::read_u64), [`write_u32`](Self::write_u32) and
///   [`write_u64`](Self::write_u64) at a naturally aligned address are one
///   access each: never torn, whatever another thread does to the same
///   bytes meanwhile (a label the CPU writes while a queue polls it). They
///   have no default, so that an implementation says how it keeps this.
///   At an unaligned address they are carried out but need not be atomic.
/// - **Read-modify-write.** [`compare_exchange_u32`](Self::compare_exchange_u32)
///   and [`compare_exchange_u64`](Self::compare_exchange_u64) are the
///   indivisible primitive (ATOMIC_MEM, MEM_SEMAPHORE, RELEASE_MEM's atomic
///   add); [`atomic_update_u32`](Self::atomic_update_u32) and
///   [`atomic_update_u64`](Self::atomic_update_u64) are built on them by
///   default (a compare-exchange loop, so never a read then a write). At an
///   address not aligned to their width they fail with
///   [`MemoryError::Misaligned`].
/// - **Ordering.** `write_u32`/`write_u64` are release stores and
///   `read_u32`/`read_u64` acquire loads; the compare-exchanges are
///   acquire-release. The bulk methods (`read_bytes`, `write_bytes`,
///   `read_dwords`, `fill`, `copy`) need no ordering of their own: the
///   processor writes a fence's value (RELEASE_MEM, EVENT_WRITE_EOP, a
///   one-value WRITE_DATA) with `write_u32`/`write_u64` after the packet's
///   other writes, and a wait (WAIT_REG_MEM) reads with `read_u32`/`read_u64`
///   before what follows it, so a CPU thread that acquire-reads a fence sees
///   everything the GPU wrote before it, and the GPU sees everything the CPU
///   wrote before a label it release-stored.
/// - **Ranges.** Addresses are 48-bit GPU virtual addresses; an access
///   past [`ADDRESS_SPACE_END`] is [`MemoryError::OutOfRange`], one with an
///   unmapped byte is [`MemoryError::Unmapped`] naming the access, and a
///   mapped byte that refuses the access is [`MemoryError::Protection`].
///   An access may span several mappings when they are contiguous in guest
///   addresses: it is carried out piece by piece (atomic only within one).
/// - **Failures.** A read that fails leaves `out` unspecified. A write that
///   fails has written nothing at or after the error's address; bytes before
///   it may have been written (every implementation in this crate checks
///   the whole range first and writes nothing). `fill` and `copy` check
///   both ranges before they write.
/// - **Zero-length accesses** succeed at any address inside the 48-bit
///   space (below [`ADDRESS_SPACE_END`]) and touch nothing;
///   `is_mapped(address, 0)` is true there ([`check_access`] checks both).
/// - **Panics.** An implementation should not panic; if it does, a
///   [`Gpu`](crate::gpu::Gpu) reports it as
///   [`GpuError::MemoryPanicked`](crate::gpu::GpuError::MemoryPanicked)
///   and fails that submission only.
///
/// Notification of CPU writes is by guest address: an emulator that writes
/// guest memory behind the GPU's back calls
/// [`Gpu::notify_host_write`](crate::gpu::Gpu::notify_host_write) with the
/// guest range, or relies on the GPU's polling of suspended waits
/// ([`GpuConfig::wait_polling`](crate::gpu::GpuConfig::wait_polling)). Two
/// guest addresses mapping the same host page are two addresses: a write
/// notified at one does not wake a wait on the other (polling still sees
/// it).
///
/// # Example
///
/// An emulator owns its guest RAM and shares it with the GPU:
///
/// ```
/// use std::sync::Arc;
/// use pm4core::memory::{FlatMemory, GuestMemory};
///
/// let ram = Arc::new(FlatMemory::new(0x1_0000_0000, 64 << 20).unwrap());
/// // The CPU thread writes through the same memory the GPU reads.
/// let gpu_view: Arc<dyn GuestMemory> = ram.clone();
/// ram.write_u32(0x1_0000_0040, 7).unwrap();
/// assert_eq!(gpu_view.read_u32(0x1_0000_0040).unwrap(), 7);
/// // An indivisible read-modify-write returns the previous value.
/// assert_eq!(gpu_view.atomic_update_u32(0x1_0000_0040, &mut |v| v + 1).unwrap(), 7);
/// assert_eq!(gpu_view.compare_exchange_u32(0x1_0000_0040, 8, 9).unwrap(), Ok(8));
/// assert_eq!(gpu_view.compare_exchange_u32(0x1_0000_0040, 8, 10).unwrap(), Err(9));
/// // Unmapped memory is an error value naming the address.
/// assert!(ram.read_u32(0x40).is_err());
/// ```
pub trait GuestMemory: Send + Sync {
    /// Reads `out.len()` bytes starting at `address`.
    fn read_bytes(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError>;

    /// Writes `data` starting at `address`.
    fn write_bytes(&self, address: u64, data: &[u8]) -> Result<(), MemoryError>;

    /// True when every byte of `[address, address + len)` is mapped.
    fn is_mapped(&self, address: u64, len: u64) -> bool;

    /// Reads one little-endian dword: an acquire load, single-copy atomic
    /// when `address` is 4-byte aligned.
    fn read_u32(&self, address: u64) -> Result<u32, MemoryError>;

    /// Reads one little-endian qword: an acquire load, single-copy atomic
    /// when `address` is 8-byte aligned.
    fn read_u64(&self, address: u64) -> Result<u64, MemoryError>;

    /// Writes one little-endian dword: a release store, single-copy atomic
    /// when `address` is 4-byte aligned.
    fn write_u32(&self, address: u64, value: u32) -> Result<(), MemoryError>;

    /// Writes one little-endian qword: a release store, single-copy atomic
    /// when `address` is 8-byte aligned.
    fn write_u64(&self, address: u64, value: u64) -> Result<(), MemoryError>;

    /// Stores `new` in the dword at `address` if it holds `current`, as one
    /// indivisible step: `Ok(Ok(current))` when it did, `Ok(Err(seen))`
    /// with the value found when it did not. `address` must be 4-byte
    /// aligned ([`MemoryError::Misaligned`] otherwise).
    fn compare_exchange_u32(&self, address: u64, current: u32, new: u32) -> Result<Result<u32, u32>, MemoryError>;

    /// The qword form of [`compare_exchange_u32`](Self::compare_exchange_u32)
    /// (8-byte aligned).
    fn compare_exchange_u64(&self, address: u64, current: u64, new: u64) -> Result<Result<u64, u64>, MemoryError>;

    /// Reads little-endian dwords.
    fn read_dwords(&self, address: u64, out: &mut [u32]) -> Result<(), MemoryError> {
        self.read_bytes(address, bytemuck::cast_slice_mut(out))?;
        for dword in out.iter_mut() {
            *dword = u32::from_le(*dword);
        }
        Ok(())
    }

    /// Replaces the dword at `address` with `update(old)` as one indivisible
    /// step and returns `old`. `update` may be called more than once (a
    /// retried compare-exchange); only its last result is stored.
    fn atomic_update_u32(&self, address: u64, update: &mut dyn FnMut(u32) -> u32) -> Result<u32, MemoryError> {
        let mut old = self.read_u32(address)?;
        loop {
            match self.compare_exchange_u32(address, old, update(old))? {
                Ok(previous) => return Ok(previous),
                Err(seen) => old = seen,
            }
        }
    }

    /// The qword form of [`atomic_update_u32`](Self::atomic_update_u32).
    fn atomic_update_u64(&self, address: u64, update: &mut dyn FnMut(u64) -> u64) -> Result<u64, MemoryError> {
        let mut old = self.read_u64(address)?;
        loop {
            match self.compare_exchange_u64(address, old, update(old))? {
                Ok(previous) => return Ok(previous),
                Err(seen) => old = seen,
            }
        }
    }

    /// Fills `len` bytes at `address` with the repeated little-endian `pattern`.
    /// The whole range is checked before anything is written.
    fn fill(&self, address: u64, len: u64, pattern: u32) -> Result<(), MemoryError> {
        check_range(address, len)?;
        if !self.is_mapped(address, len) {
            return Err(MemoryError::Unmapped { address, len });
        }
        let mut chunk = [0u8; 256];
        for (i, byte) in chunk.iter_mut().enumerate() {
            *byte = pattern.to_le_bytes()[i % 4];
        }
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(chunk.len() as u64) as usize;
            self.write_bytes(address + done, &chunk[..n])?;
            done += n as u64;
        }
        Ok(())
    }

    /// Copies `len` bytes from `src` to `dst` (overlap behaves as memmove).
    /// Both ranges are checked before anything is written.
    fn copy(&self, dst: u64, src: u64, len: u64) -> Result<(), MemoryError> {
        check_range(src, len)?;
        check_range(dst, len)?;
        if !self.is_mapped(src, len) {
            return Err(MemoryError::Unmapped { address: src, len });
        }
        if !self.is_mapped(dst, len) {
            return Err(MemoryError::Unmapped { address: dst, len });
        }
        copy_in_chunks(dst, src, len, |from, to, buf| {
            self.read_bytes(from, buf)?;
            self.write_bytes(to, buf)
        })
    }

    /// Up to `max_dw` dwords at `address` lent without a copy, for a reader
    /// that holds many dwords at once (the processor's prefetch window
    /// reads command buffers this way); `None` when this memory does not
    /// lend them, the default, and the reader copies them with
    /// [`read_dwords`](Self::read_dwords) instead. What is lent is what
    /// `read_dwords` would read at the time of the call; a later write need
    /// not show in it (a reader that may see writes asks again after them,
    /// as it would copy again).
    ///
    /// [`SparseMemory`] lends the dwords of a region mapped from shared
    /// bytes (a trace file's `MEM ` payload) up to its first written page;
    /// an emulator's memory that keeps command buffers in an `Arc<[u8]>`
    /// can lend them the same way (see [`LentDwords`]).
    fn lend_dwords(&self, address: u64, max_dw: usize) -> Option<LentDwords> {
        let _ = (address, max_dw);
        None
    }
}

/// Forwards every method, so wrappers keep the inner memory's atomics and
/// fast paths.
macro_rules! forward_guest_memory {
    () => {
        #[inline]
        fn read_bytes(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError> {
            (**self).read_bytes(address, out)
        }
        #[inline]
        fn write_bytes(&self, address: u64, data: &[u8]) -> Result<(), MemoryError> {
            (**self).write_bytes(address, data)
        }
        #[inline]
        fn is_mapped(&self, address: u64, len: u64) -> bool {
            (**self).is_mapped(address, len)
        }
        #[inline]
        fn read_dwords(&self, address: u64, out: &mut [u32]) -> Result<(), MemoryError> {
            (**self).read_dwords(address, out)
        }
        #[inline]
        fn read_u32(&self, address: u64) -> Result<u32, MemoryError> {
            (**self).read_u32(address)
        }
        #[inline]
        fn read_u64(&self, address: u64) -> Result<u64, MemoryError> {
            (**self).read_u64(address)
        }
        #[inline]
        fn write_u32(&self, address: u64, value: u32) -> Result<(), MemoryError> {
            (**self).write_u32(address, value)
        }
        #[inline]
        fn write_u64(&self, address: u64, value: u64) -> Result<(), MemoryError> {
            (**self).write_u64(address, value)
        }
        #[inline]
        fn compare_exchange_u32(&self, address: u64, current: u32, new: u32) -> Result<Result<u32, u32>, MemoryError> {
            (**self).compare_exchange_u32(address, current, new)
        }
        #[inline]
        fn compare_exchange_u64(&self, address: u64, current: u64, new: u64) -> Result<Result<u64, u64>, MemoryError> {
            (**self).compare_exchange_u64(address, current, new)
        }
        fn atomic_update_u32(&self, address: u64, update: &mut dyn FnMut(u32) -> u32) -> Result<u32, MemoryError> {
            (**self).atomic_update_u32(address, update)
        }
        fn atomic_update_u64(&self, address: u64, update: &mut dyn FnMut(u64) -> u64) -> Result<u64, MemoryError> {
            (**self).atomic_update_u64(address, update)
        }
        fn fill(&self, address: u64, len: u64, pattern: u32) -> Result<(), MemoryError> {
            (**self).fill(address, len, pattern)
        }
        fn copy(&self, dst: u64, src: u64, len: u64) -> Result<(), MemoryError> {
            (**self).copy(dst, src, len)
        }
        fn lend_dwords(&self, address: u64, max_dw: usize) -> Option<LentDwords> {
            (**self).lend_dwords(address, max_dw)
        }
    };
}

impl<M: GuestMemory + ?Sized> GuestMemory for &M {
    forward_guest_memory!();
}

impl<M: GuestMemory + ?Sized> GuestMemory for &mut M {
    forward_guest_memory!();
}

impl<M: GuestMemory + ?Sized> GuestMemory for Box<M> {
    forward_guest_memory!();
}

impl<M: GuestMemory + ?Sized> GuestMemory for Arc<M> {
    forward_guest_memory!();
}

/// Copies `len` bytes in 4 KiB steps, backwards when the destination
/// overlaps the source's tail (memmove): `step(src, dst, buffer)` reads the
/// buffer at `src` and writes it at `dst`.
pub(super) fn copy_in_chunks(
    dst: u64,
    src: u64,
    len: u64,
    mut step: impl FnMut(u64, u64, &mut [u8]) -> Result<(), MemoryError>,
) -> Result<(), MemoryError> {
    // A short copy (most CP DMA copies are a few dwords) zeroes a short
    // buffer, not 4 KiB.
    let mut short = [0u8; 256];
    let mut long;
    let chunk: &mut [u8] = if len <= short.len() as u64 {
        &mut short
    } else {
        long = [0u8; 4096];
        &mut long
    };
    let backwards = dst > src && dst < src + len;
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(chunk.len() as u64);
        let offset = if backwards { len - done - n } else { done };
        let Some(buffer) = chunk.get_mut(..n as usize) else { break };
        step(src + offset, dst + offset, buffer)?;
        done += n;
    }
    Ok(())
}
