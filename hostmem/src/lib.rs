//! Guest memory over host mappings the emulator already owns.
//!
//! PS4 and PS5 emulators that run guest code natively (KytyPS5, prosper,
//! shadPS4) map guest memory 1:1 at host addresses they choose; the GPU must
//! read and write those very bytes, not a copy. [`HostMappedMemory`] is a
//! [`GuestMemory`] over one or more `(guest base, host pointer, length)`
//! ranges: every access goes straight to the host bytes, and every access is
//! an atomic operation of the width the trait promises (aligned dwords and
//! qwords are single atomic loads and stores; compare-exchanges are the
//! host's). Nothing is copied and nothing is locked.
//!
//! This crate is the one place outside the C ABI where pm4core uses
//! `unsafe`: a host pointer is only as valid as its owner says. Each use is
//! argued sound where it stands; what the caller promises is the contract
//! of [`HostMappedMemory::new`].
//!
//! # Example
//!
//! An emulator maps its guest RAM itself and hands the GPU the mapping:
//!
//! ```
//! use std::sync::Arc;
//! use pm4core::memory::GuestMemory;
//! use pm4core_hostmem::{HostMappedMemory, HostMapping};
//!
//! // The emulator's guest RAM (here a boxed slice; in an emulator an mmap).
//! let mut ram = vec![0u64; 1 << 16].into_boxed_slice(); // 512 KiB, 8-byte aligned
//! let host = ram.as_mut_ptr().cast::<u8>();
//! // SAFETY: `ram` outlives `memory` (dropped after it, below), is only
//! // accessed through `memory` meanwhile, and is 8-byte aligned.
//! let memory = Arc::new(unsafe {
//!     HostMappedMemory::new(&[HostMapping { guest_base: 0x1_0000_0000, host, len: 1 << 19 }])
//! }.unwrap());
//! memory.write_u32(0x1_0000_0040, 7).unwrap();
//! assert_eq!(memory.atomic_update_u32(0x1_0000_0040, &mut |v| v + 1).unwrap(), 7);
//! assert_eq!(memory.read_u64(0x1_0000_0040).unwrap(), 8);
//! assert!(memory.read_u32(0x40).is_err());
//! drop(memory);
//! assert_eq!(ram[8], 8); // the GPU wrote the emulator's own bytes
//! ```

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};

use pm4core::memory::{check_access, check_range, GuestMemory, MemoryError};

/// One range of guest memory the emulator mapped at a host address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostMapping {
    /// The guest (GPU virtual) address of the first byte.
    pub guest_base: u64,
    /// The host address of the first byte.
    pub host: *mut u8,
    /// Bytes mapped.
    pub len: usize,
}

/// Why a set of mappings was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MappingError {
    /// The range runs past the 48-bit guest address space (or wraps).
    OutOfRange { guest_base: u64, len: usize },
    /// The host pointer is null, or the host range wraps the host address space.
    InvalidHost { guest_base: u64 },
    /// Guest and host addresses differ in their low three bits, so an
    /// aligned guest dword or qword would not be an aligned host one.
    Misaligned { guest_base: u64, host: usize },
    /// Two ranges overlap in guest addresses.
    Overlap { first: u64, second: u64 },
}

impl std::fmt::Display for MappingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            MappingError::OutOfRange { guest_base, len } => {
                write!(f, "mapping at guest {guest_base:#x} of {len} bytes runs past the 48-bit address space")
            }
            MappingError::InvalidHost { guest_base } => {
                write!(f, "mapping at guest {guest_base:#x} has a null or wrapping host range")
            }
            MappingError::Misaligned { guest_base, host } => write!(
                f,
                "mapping at guest {guest_base:#x} has host address {host:#x}: the two must agree modulo 8 \
                 (an aligned guest qword must be an aligned host qword)"
            ),
            MappingError::Overlap { first, second } => {
                write!(f, "mappings at guest {first:#x} and {second:#x} overlap")
            }
        }
    }
}

impl std::error::Error for MappingError {}

/// A checked mapping: guest range `[start, end)` at host address `host`.
#[derive(Clone, Copy, Debug)]
struct Range {
    start: u64,
    end: u64,
    host: usize,
}

/// Guest memory over host mappings the emulator owns (see the
/// [crate documentation](crate)): the [`GuestMemory`] contract on the
/// emulator's own bytes, every access atomic, no copy, no lock.
///
/// Accesses are single atomic operations of their width when naturally
/// aligned (`read_u32`, `write_u64`, the compare-exchanges); bulk reads and
/// writes are made of qword atomics on their aligned middle and byte atomics
/// at their ends (`Relaxed`; the GPU orders them with its fence writes and
/// wait reads, as the trait says). An access may span mappings that are
/// contiguous in guest addresses. Zero-length accesses succeed anywhere in
/// the 48-bit space.
///
/// The emulator's own native code may keep using plain loads and stores on
/// these bytes: the GPU's side never makes a non-atomic access, so an
/// aligned dword or qword the CPU stores with one instruction is never seen
/// torn, and a CPU store that races with a bulk access is seen whole or
/// not at all per byte (the hardware's guarantee; Rust's memory model
/// describes only Rust's side of such a race).
pub struct HostMappedMemory {
    /// Sorted by guest start, not overlapping.
    ranges: Box<[Range]>,
}

// SAFETY: `HostMappedMemory` holds host addresses (plain integers) whose
// bytes the caller of `new` promised are valid for reads and writes from
// any thread for the memory's lifetime; every access this type makes to
// them is atomic, so sharing it between threads (`Sync`) or moving it
// (`Send`) creates no data race on the Rust side.
unsafe impl Send for HostMappedMemory {}
// SAFETY: see `Send` above: every access through `&self` is atomic.
unsafe impl Sync for HostMappedMemory {}

impl std::fmt::Debug for HostMappedMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut list = f.debug_list();
        for r in self.ranges.iter() {
            list.entry(&format_args!("guest {:#x}..{:#x} at host {:#x}", r.start, r.end, r.host));
        }
        list.finish()
    }
}

/// Where one access lands: the host address of its first byte, and how many
/// of its bytes lie in that mapping.
#[derive(Clone, Copy)]
struct Piece {
    host: usize,
    len: usize,
}

impl HostMappedMemory {
    /// Guest memory over `mappings` (in any order; a zero-length one is
    /// ignored).
    ///
    /// # Safety
    ///
    /// For every mapping, the caller promises, for as long as this memory
    /// (or anything holding it, such as a `Gpu`) exists:
    /// - `host .. host + len` is one allocation (or one host mapping) valid
    ///   for reads and writes: not freed, unmapped, remapped or made
    ///   read-only meanwhile;
    /// - Rust code elsewhere accesses those bytes only through atomics (or
    ///   through this memory); the emulator's native guest code may use plain
    ///   loads and stores (see the type's documentation).
    ///
    /// What can be checked is checked: the guest range lies in the 48-bit
    /// space, the host range does not wrap and is not null, guest and host
    /// addresses agree modulo 8 (so atomics are aligned on the host), and no
    /// two guest ranges overlap.
    pub unsafe fn new(mappings: &[HostMapping]) -> Result<Self, MappingError> {
        let mut ranges = Vec::with_capacity(mappings.len());
        for m in mappings.iter().filter(|m| m.len > 0) {
            let len = m.len as u64;
            let end = check_range(m.guest_base, len)
                .map_err(|_| MappingError::OutOfRange { guest_base: m.guest_base, len: m.len })?;
            let host = m.host as usize;
            if m.host.is_null() || host.checked_add(m.len).is_none() {
                return Err(MappingError::InvalidHost { guest_base: m.guest_base });
            }
            if (host as u64) % 8 != m.guest_base % 8 {
                return Err(MappingError::Misaligned { guest_base: m.guest_base, host });
            }
            ranges.push(Range { start: m.guest_base, end, host });
        }
        ranges.sort_by_key(|r| r.start);
        for pair in ranges.windows(2) {
            if let [a, b] = pair {
                if b.start < a.end {
                    return Err(MappingError::Overlap { first: a.start, second: b.start });
                }
            }
        }
        Ok(Self { ranges: ranges.into_boxed_slice() })
    }

    /// The mappings as `(guest base, length)` pairs, in guest order.
    pub fn mappings(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().map(|r| (r.start, r.end - r.start))
    }

    /// The mapping holding guest `address`.
    #[inline]
    fn range_of(&self, address: u64) -> Option<&Range> {
        if let [only] = &*self.ranges {
            return (only.start <= address && address < only.end).then_some(only);
        }
        let index = self.ranges.partition_point(|r| r.start <= address).checked_sub(1)?;
        self.ranges.get(index).filter(|r| address < r.end)
    }

    /// The host address of `[address, address + len)` when one mapping holds
    /// it whole.
    #[inline]
    fn host_of(&self, address: u64, len: u64) -> Result<usize, MemoryError> {
        let end = check_range(address, len)?;
        match self.range_of(address) {
            Some(r) if end <= r.end => Ok(r.host + (address - r.start) as usize),
            _ => Err(MemoryError::Unmapped { address, len }),
        }
    }

    /// Calls `each` with the pieces of `[address, address + len)`, mapping by
    /// mapping, after checking that every byte is mapped (so a write that
    /// fails writes nothing).
    fn for_pieces(&self, address: u64, len: u64, mut each: impl FnMut(Piece, usize)) -> Result<(), MemoryError> {
        let end = check_access(address, len)?;
        if len == 0 {
            return Ok(());
        }
        // One mapping holds almost every access.
        if let Some(r) = self.range_of(address) {
            if end <= r.end {
                each(Piece { host: r.host + (address - r.start) as usize, len: len as usize }, 0);
                return Ok(());
            }
        }
        let mut at = address;
        while at < end {
            match self.range_of(at) {
                Some(r) => at = r.end.min(end),
                None => return Err(MemoryError::Unmapped { address, len }),
            }
        }
        let mut at = address;
        while at < end {
            let Some(r) = self.range_of(at) else { break };
            let n = r.end.min(end) - at;
            each(Piece { host: r.host + (at - r.start) as usize, len: n as usize }, (at - address) as usize);
            at += n;
        }
        Ok(())
    }
}

/// Reads `out.len()` bytes at host address `host`: qword atomics on the
/// 8-byte aligned middle, byte atomics at the ends.
///
/// # Safety
///
/// `host .. host + out.len()` lies inside one checked mapping.
#[inline]
unsafe fn read_host(host: usize, out: &mut [u8]) {
    let mut at = host;
    let mut rest = out;
    while !rest.is_empty() {
        if at % 8 == 0 && rest.len() >= 8 {
            let (head, tail) = rest.split_at_mut(8);
            // SAFETY: `at` is 8-byte aligned and `at .. at + 8` lies inside
            // the mapping (the caller's promise for the whole range); the
            // mapping's bytes are valid for reads for its lifetime (the
            // contract of `HostMappedMemory::new`) and accessed only atomically.
            let word = unsafe { AtomicU64::from_ptr(at as *mut u64) }.load(Ordering::Relaxed);
            head.copy_from_slice(&word.to_le_bytes());
            rest = tail;
            at += 8;
        } else {
            let (head, tail) = rest.split_at_mut(1);
            // SAFETY: as above, for the one byte at `at` (any alignment).
            let byte = unsafe { AtomicU8::from_ptr(at as *mut u8) }.load(Ordering::Relaxed);
            head[0] = byte;
            rest = tail;
            at += 1;
        }
    }
}

/// Writes `data` at host address `host`, as [`read_host`] reads.
///
/// # Safety
///
/// `host .. host + data.len()` lies inside one checked mapping.
#[inline]
unsafe fn write_host(host: usize, data: &[u8]) {
    let mut at = host;
    let mut rest = data;
    while let Some(&first) = rest.first() {
        if at % 8 == 0 && rest.len() >= 8 {
            let (head, tail) = rest.split_at(8);
            let mut word = [0u8; 8];
            word.copy_from_slice(head);
            // SAFETY: `at` is 8-byte aligned and inside the mapping (the
            // caller's promise), whose bytes are valid for writes for its
            // lifetime and accessed only atomically.
            unsafe { AtomicU64::from_ptr(at as *mut u64) }.store(u64::from_le_bytes(word), Ordering::Relaxed);
            rest = tail;
            at += 8;
        } else {
            // SAFETY: as above, for the one byte at `at`.
            unsafe { AtomicU8::from_ptr(at as *mut u8) }.store(first, Ordering::Relaxed);
            rest = rest.get(1..).unwrap_or_default();
            at += 1;
        }
    }
}

impl GuestMemory for HostMappedMemory {
    fn read_bytes(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError> {
        let len = out.len() as u64;
        self.for_pieces(address, len, |piece, at| {
            if let Some(part) = out.get_mut(at..at + piece.len) {
                // SAFETY: `for_pieces` gives pieces inside one checked mapping.
                unsafe { read_host(piece.host, part) }
            }
        })
    }

    fn write_bytes(&self, address: u64, data: &[u8]) -> Result<(), MemoryError> {
        self.for_pieces(address, data.len() as u64, |piece, at| {
            if let Some(part) = data.get(at..at + piece.len) {
                // SAFETY: `for_pieces` gives pieces inside one checked mapping.
                unsafe { write_host(piece.host, part) }
            }
        })
    }

    fn is_mapped(&self, address: u64, len: u64) -> bool {
        self.for_pieces(address, len, |_, _| {}).is_ok()
    }

    fn read_dwords(&self, address: u64, out: &mut [u32]) -> Result<(), MemoryError> {
        let len = out.len() as u64 * 4;
        if address % 4 != 0 {
            self.read_bytes(address, bytemuck_u8(out))?;
            out.iter_mut().for_each(|d| *d = u32::from_le(*d));
            return Ok(());
        }
        let Ok(host) = self.host_of(address, len) else {
            self.read_bytes(address, bytemuck_u8(out))?;
            out.iter_mut().for_each(|d| *d = u32::from_le(*d));
            return Ok(());
        };
        for (i, dword) in out.iter_mut().enumerate() {
            // SAFETY: `host .. host + len` lies inside one checked mapping
            // (`host_of`) and `host + 4 * i` is 4-byte aligned (the guest
            // address is, and guest and host agree modulo 8).
            *dword = u32::from_le(unsafe { AtomicU32::from_ptr((host + 4 * i) as *mut u32) }.load(Ordering::Relaxed));
        }
        Ok(())
    }

    #[inline]
    fn read_u32(&self, address: u64) -> Result<u32, MemoryError> {
        // Unaligned, or spanning two mappings: byte by byte.
        let Some(host) = self.host_of(address, 4).ok().filter(|_| address % 4 == 0) else {
            let mut bytes = [0u8; 4];
            self.read_bytes(address, &mut bytes)?;
            return Ok(u32::from_le_bytes(bytes));
        };
        // SAFETY: inside one checked mapping (`host_of`), 4-byte aligned
        // (guest aligned, guest and host agree modulo 8).
        Ok(u32::from_le(unsafe { AtomicU32::from_ptr(host as *mut u32) }.load(Ordering::Acquire)))
    }

    #[inline]
    fn read_u64(&self, address: u64) -> Result<u64, MemoryError> {
        let Some(host) = self.host_of(address, 8).ok().filter(|_| address % 8 == 0) else {
            let mut bytes = [0u8; 8];
            self.read_bytes(address, &mut bytes)?;
            return Ok(u64::from_le_bytes(bytes));
        };
        // SAFETY: inside one checked mapping, 8-byte aligned.
        Ok(u64::from_le(unsafe { AtomicU64::from_ptr(host as *mut u64) }.load(Ordering::Acquire)))
    }

    #[inline]
    fn write_u32(&self, address: u64, value: u32) -> Result<(), MemoryError> {
        let Some(host) = self.host_of(address, 4).ok().filter(|_| address % 4 == 0) else {
            return self.write_bytes(address, &value.to_le_bytes());
        };
        // SAFETY: inside one checked mapping, 4-byte aligned.
        unsafe { AtomicU32::from_ptr(host as *mut u32) }.store(value.to_le(), Ordering::Release);
        Ok(())
    }

    #[inline]
    fn write_u64(&self, address: u64, value: u64) -> Result<(), MemoryError> {
        let Some(host) = self.host_of(address, 8).ok().filter(|_| address % 8 == 0) else {
            return self.write_bytes(address, &value.to_le_bytes());
        };
        // SAFETY: inside one checked mapping, 8-byte aligned.
        unsafe { AtomicU64::from_ptr(host as *mut u64) }.store(value.to_le(), Ordering::Release);
        Ok(())
    }

    fn compare_exchange_u32(&self, address: u64, current: u32, new: u32) -> Result<Result<u32, u32>, MemoryError> {
        if address % 4 != 0 {
            return Err(MemoryError::Misaligned { address });
        }
        let host = self.host_of(address, 4)?;
        // SAFETY: inside one checked mapping, 4-byte aligned.
        let word = unsafe { AtomicU32::from_ptr(host as *mut u32) };
        Ok(word
            .compare_exchange(current.to_le(), new.to_le(), Ordering::AcqRel, Ordering::Acquire)
            .map(u32::from_le)
            .map_err(u32::from_le))
    }

    fn compare_exchange_u64(&self, address: u64, current: u64, new: u64) -> Result<Result<u64, u64>, MemoryError> {
        if address % 8 != 0 {
            return Err(MemoryError::Misaligned { address });
        }
        let host = self.host_of(address, 8)?;
        // SAFETY: inside one checked mapping, 8-byte aligned.
        let word = unsafe { AtomicU64::from_ptr(host as *mut u64) };
        Ok(word
            .compare_exchange(current.to_le(), new.to_le(), Ordering::AcqRel, Ordering::Acquire)
            .map(u64::from_le)
            .map_err(u64::from_le))
    }
}

/// The bytes of a dword slice.
fn bytemuck_u8(words: &mut [u32]) -> &mut [u8] {
    bytemuck::cast_slice_mut(words)
}
