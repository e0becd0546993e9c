//! Guest memory: the GPU virtual address space that packets read and write.
//!
//! The processor never touches host pointers: every access goes through the
//! [`GuestMemory`] trait with a 48-bit GPU virtual address, and an address
//! that nothing maps is a [`MemoryError`] naming it. [`SparseMemory`] is the
//! implementation the replayer and the tests use: regions mapped at fixed
//! addresses, backed either by shared read-only bytes (a trace file's `MEM `
//! payload, not copied) or by nothing at all (`ZERO` regions), with 4 KiB
//! copy-on-write pages allocated only when written.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

pub use flat::FlatMemory;

mod flat;

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
    /// A mapping request overlaps an existing region.
    #[error("region at {address:#x} of {len} bytes overlaps an existing region")]
    Overlap { address: u64, len: u64 },
    /// A mapping request is not 4-byte aligned.
    #[error("region at {address:#x} is not 4-byte aligned")]
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

impl MemoryError {
    /// The guest address the error is about.
    pub fn address(&self) -> u64 {
        match *self {
            MemoryError::Unmapped { address, .. }
            | MemoryError::OutOfRange { address, .. }
            | MemoryError::Overlap { address, .. }
            | MemoryError::WrittenLimit { address, .. }
            | MemoryError::WriteBudget { address, .. }
            | MemoryError::Misaligned { address } => address,
        }
    }
}

/// Checks that `[address, address + len)` lies inside the 48-bit space.
#[inline]
pub fn check_range(address: u64, len: u64) -> Result<u64, MemoryError> {
    match address.checked_add(len) {
        Some(end) if end <= ADDRESS_SPACE_END => Ok(end),
        _ => Err(MemoryError::OutOfRange { address, len }),
    }
}

/// The guest's GPU virtual memory, as the command processor sees it.
///
/// Every method takes `&self`: guest memory is shared. The emulated CPU
/// writes it while queue workers read and write it, so implementations keep
/// their own interior mutability and are `Send + Sync` (a [`FlatMemory`]
/// behind an `Arc` the emulator keeps, a [`SparseMemory`] for replay).
/// Implementations decide what is mapped; every method fails with
/// [`MemoryError`] rather than panicking on any address.
///
/// **Atomicity.** A naturally aligned 4- or 8-byte access
/// ([`read_u32`](Self::read_u32), [`write_u64`](Self::write_u64), …) is
/// never torn in the provided implementations, and
/// [`atomic_update_u32`](Self::atomic_update_u32) /
/// [`atomic_update_u64`](Self::atomic_update_u64) are indivisible
/// read-modify-writes (ATOMIC_MEM, MEM_SEMAPHORE). The default methods build
/// everything from `read_bytes`/`write_bytes`; an implementation shared with
/// other threads overrides the atomic ones.
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
/// assert_eq!(ram.read_u32(0x1_0000_0040).unwrap(), 8);
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

    /// Reads little-endian dwords.
    fn read_dwords(&self, address: u64, out: &mut [u32]) -> Result<(), MemoryError> {
        self.read_bytes(address, bytemuck::cast_slice_mut(out))?;
        for dword in out.iter_mut() {
            *dword = u32::from_le(*dword);
        }
        Ok(())
    }

    /// Reads one little-endian dword.
    fn read_u32(&self, address: u64) -> Result<u32, MemoryError> {
        let mut bytes = [0u8; 4];
        self.read_bytes(address, &mut bytes)?;
        Ok(u32::from_le_bytes(bytes))
    }

    /// Reads one little-endian qword.
    fn read_u64(&self, address: u64) -> Result<u64, MemoryError> {
        let mut bytes = [0u8; 8];
        self.read_bytes(address, &mut bytes)?;
        Ok(u64::from_le_bytes(bytes))
    }

    /// Writes one little-endian dword.
    fn write_u32(&self, address: u64, value: u32) -> Result<(), MemoryError> {
        self.write_bytes(address, &value.to_le_bytes())
    }

    /// Writes one little-endian qword.
    fn write_u64(&self, address: u64, value: u64) -> Result<(), MemoryError> {
        self.write_bytes(address, &value.to_le_bytes())
    }

    /// Replaces the dword at `address` with `update(old)` as one indivisible
    /// step and returns `old`. `update` may be called more than once (a
    /// retried compare-exchange); only its last result is stored.
    ///
    /// The default reads then writes: atomic only for memory no other thread
    /// writes. Shared implementations override it.
    fn atomic_update_u32(&self, address: u64, update: &mut dyn FnMut(u32) -> u32) -> Result<u32, MemoryError> {
        let old = self.read_u32(address)?;
        self.write_u32(address, update(old))?;
        Ok(old)
    }

    /// The qword form of [`atomic_update_u32`](Self::atomic_update_u32).
    fn atomic_update_u64(&self, address: u64, update: &mut dyn FnMut(u64) -> u64) -> Result<u64, MemoryError> {
        let old = self.read_u64(address)?;
        self.write_u64(address, update(old))?;
        Ok(old)
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

/// Dwords a [`GuestMemory`] lends instead of copying
/// ([`GuestMemory::lend_dwords`]): a range of a shared, read-only byte
/// buffer that holds them as they are (little-endian, 4-byte aligned).
/// Cloning it clones the `Arc`, not the bytes.
///
/// # Example
///
/// An emulator keeps a game's command buffers in `Arc<[u8]>` blocks and
/// lends them to the processor's prefetch window:
///
/// ```
/// use std::sync::Arc;
/// use pm4core::memory::LentDwords;
///
/// let block: Arc<[u8]> = [0x00u8, 0x10, 0xFF, 0xC0, 7, 0, 0, 0].into();
/// // Only on a little-endian host (the dwords are the bytes as they are).
/// if cfg!(target_endian = "little") {
///     let lent = LentDwords::new(Arc::clone(&block), 0, 2).unwrap();
///     assert_eq!(lent.dwords(), &[0xC0FF_1000, 7]);
///     // A range past the block is refused, not clamped.
///     assert!(LentDwords::new(block, 4, 2).is_none());
/// }
/// ```
#[derive(Clone)]
pub struct LentDwords {
    bytes: Arc<[u8]>,
    /// Byte offset of the first dword in `bytes`.
    start: usize,
    /// Dwords lent.
    len: usize,
}

impl LentDwords {
    /// `len_dw` dwords from byte `start` of `bytes`, when they lie inside
    /// it, the first is 4-byte aligned in memory and the host is
    /// little-endian (so that the bytes are the dwords as they are); `None`
    /// otherwise, and for no dwords.
    pub fn new(bytes: Arc<[u8]>, start: usize, len_dw: usize) -> Option<Self> {
        if cfg!(target_endian = "big") || len_dw == 0 {
            return None;
        }
        let end = start.checked_add(len_dw.checked_mul(4)?)?;
        bytemuck::try_cast_slice::<u8, u32>(bytes.get(start..end)?).ok()?;
        Some(Self { bytes, start, len: len_dw })
    }

    /// The dwords.
    #[inline]
    pub fn dwords(&self) -> &[u32] {
        // `new` checked the range and its alignment.
        self.bytes
            .get(self.start..self.start + self.len * 4)
            .and_then(|bytes| bytemuck::try_cast_slice(bytes).ok())
            .unwrap_or(&[])
    }

    /// How many dwords are lent.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true: nothing lends no dwords.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::fmt::Debug for LentDwords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LentDwords({} dwords)", self.len)
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
fn copy_in_chunks(
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

/// Told the range of every write made through an [`ObservedMemory`], just
/// before the write is made.
pub(crate) trait WriteObserver: Send + Sync {
    fn wrote(&self, address: u64, len: u64);
}

/// Guest memory that forwards every access to `inner` and tells `observer`
/// the range of each write (plain, atomic, fill, or a copy's destination).
/// The one write-watcher of the crate: the processor notes writes that hit
/// its prefetch window through it, the GPU logs each slice's writes (to wake
/// the queues watching them) through it.
pub(crate) struct ObservedMemory<'a, M: GuestMemory + ?Sized, O: WriteObserver> {
    pub(crate) inner: &'a M,
    pub(crate) observer: O,
}

impl<M: GuestMemory + ?Sized, O: WriteObserver> GuestMemory for ObservedMemory<'_, M, O> {
    #[inline]
    fn read_bytes(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError> {
        self.inner.read_bytes(address, out)
    }

    #[inline]
    fn lend_dwords(&self, address: u64, max_dw: usize) -> Option<LentDwords> {
        self.inner.lend_dwords(address, max_dw)
    }

    #[inline]
    fn read_dwords(&self, address: u64, out: &mut [u32]) -> Result<(), MemoryError> {
        self.inner.read_dwords(address, out)
    }

    #[inline]
    fn read_u32(&self, address: u64) -> Result<u32, MemoryError> {
        self.inner.read_u32(address)
    }

    #[inline]
    fn read_u64(&self, address: u64) -> Result<u64, MemoryError> {
        self.inner.read_u64(address)
    }

    #[inline]
    fn is_mapped(&self, address: u64, len: u64) -> bool {
        self.inner.is_mapped(address, len)
    }

    #[inline]
    fn write_bytes(&self, address: u64, data: &[u8]) -> Result<(), MemoryError> {
        self.observer.wrote(address, data.len() as u64);
        self.inner.write_bytes(address, data)
    }

    #[inline]
    fn write_u32(&self, address: u64, value: u32) -> Result<(), MemoryError> {
        self.observer.wrote(address, 4);
        self.inner.write_u32(address, value)
    }

    #[inline]
    fn write_u64(&self, address: u64, value: u64) -> Result<(), MemoryError> {
        self.observer.wrote(address, 8);
        self.inner.write_u64(address, value)
    }

    fn atomic_update_u32(&self, address: u64, update: &mut dyn FnMut(u32) -> u32) -> Result<u32, MemoryError> {
        self.observer.wrote(address, 4);
        self.inner.atomic_update_u32(address, update)
    }

    fn atomic_update_u64(&self, address: u64, update: &mut dyn FnMut(u64) -> u64) -> Result<u64, MemoryError> {
        self.observer.wrote(address, 8);
        self.inner.atomic_update_u64(address, update)
    }

    fn fill(&self, address: u64, len: u64, pattern: u32) -> Result<(), MemoryError> {
        self.observer.wrote(address, len);
        self.inner.fill(address, len, pattern)
    }

    fn copy(&self, dst: u64, src: u64, len: u64) -> Result<(), MemoryError> {
        self.observer.wrote(dst, len);
        self.inner.copy(dst, src, len)
    }
}

/// What a region's untouched bytes are.
#[derive(Clone)]
enum Backing {
    /// All zero (`ZERO` chunks, scratch, render targets).
    Zero,
    /// `len` bytes of a shared buffer starting at `offset` (a trace file's
    /// `MEM ` payload or bytes the host handed over). Never copied.
    Shared { bytes: Arc<[u8]>, offset: usize },
}

#[derive(Clone)]
struct Region {
    start: u64,
    len: u64,
    backing: Backing,
    /// Pages written since mapping, by page index inside the region.
    pages: Pages,
}

/// The written pages of a [`Region`]: kept in the order they were first
/// written (never removed), with an ordered index from page number to
/// place for the range questions (how many in a range, the first at or
/// after a page). A lookup tries the place the last one found, then the
/// one after it (accesses in a row mostly hit one page, or walk pages
/// written in order, as a fill or copy does), then the page's distance
/// from the first page written (a buffer first written whole, in order),
/// before the index. These are only guesses: the page at a place says
/// which page it is.
#[derive(Clone, Default)]
struct Pages {
    slots: Vec<(u64, Page)>,
    index: BTreeMap<u64, usize>,
    last: Hint,
    /// The last run of places found holding consecutive pages in order,
    /// as `start << 32 | count` (none when `count` is 0). Places are only
    /// ever added and never change their page, so a run found once stays
    /// one: a fill or copy of a buffer written before looks its run up
    /// once, not each time (see [`Pages::run_start`]). One word, so never
    /// torn.
    run: Hint,
}

impl Pages {
    /// The place of `page`, if written.
    #[inline]
    fn slot(&self, page: u64) -> Option<usize> {
        if let Some(slot) = self.hinted(page) {
            return Some(slot);
        }
        // Pages first written in order from the first one (a buffer a
        // fill or a copy wrote whole) sit at their distance from it.
        if let Some(&(first, _)) = self.slots.first() {
            let guess = usize::try_from(page.wrapping_sub(first)).unwrap_or(usize::MAX);
            if self.slots.get(guess).is_some_and(|&(p, _)| p == page) {
                self.last.set(guess);
                return Some(guess);
            }
        }
        let slot = *self.index.get(&page)?;
        self.last.set(slot);
        Some(slot)
    }

    /// The place of `page` when it is the hint's or the next one.
    #[inline]
    fn hinted(&self, page: u64) -> Option<usize> {
        let last = self.last.get();
        let guess = [last, last.wrapping_add(1)]
            .into_iter()
            .find(|&guess| self.slots.get(guess).is_some_and(|&(p, _)| p == page))?;
        self.last.set(guess);
        Some(guess)
    }

    #[inline]
    fn get(&self, page: u64) -> Option<&Page> {
        let slot = self.slot(page)?;
        self.slots.get(slot).map(|(_, p)| p)
    }

    #[inline]
    fn get_mut(&mut self, page: u64) -> Option<&mut Page> {
        let slot = self.slot(page)?;
        self.slots.get_mut(slot).map(|(_, p)| p)
    }

    /// Adds `page`, not written before.
    fn insert(&mut self, page: u64, content: Page) {
        let slot = self.slots.len();
        self.slots.push((page, content));
        self.index.insert(page, slot);
        self.last.set(slot);
    }

    /// How many of pages `first..=last` are written.
    fn count_in(&self, first: u64, last: u64) -> u64 {
        // A short range page by page; a long one in one compare of its
        // places when they hold it in order (as a fill or a copy wrote
        // them), else in one walk over the index.
        if last - first < 4 {
            return (first..=last).filter(|&page| self.slot(page).is_some()).count() as u64;
        }
        let count = usize::try_from(last - first + 1).unwrap_or(usize::MAX);
        if self.run_start(first, count).is_some() {
            return last - first + 1;
        }
        self.index.range(first..=last).count() as u64
    }

    /// The place of `first` when pages `first..first + count` are all
    /// written and sit in consecutive places, in order (pages a fill or a
    /// copy wrote first in one go): a run of whole pages is then written
    /// with no lookup per page ([`Pages::run_mut`]).
    #[inline]
    fn run_start(&self, first: u64, count: usize) -> Option<usize> {
        // Inside the last run found: no compare.
        let known = self.run.word();
        let (known_start, known_count) = ((known >> 32) as usize, known & 0xFFFF_FFFF);
        if let Some(&(known_first, _)) = self.slots.get(known_start) {
            let end = first.checked_add(count as u64)?;
            if known_first <= first && end <= known_first.saturating_add(known_count) {
                return Some(known_start + (first - known_first) as usize);
            }
        }
        let start = self.slot(first)?;
        let run = self.slots.get(start..start.checked_add(count)?)?;
        let found = run.iter().zip(first..).all(|(&(page, _), want)| page == want);
        if found {
            if let (Ok(start32), Ok(count32)) = (u32::try_from(start), u32::try_from(count)) {
                self.run.set_word(u64::from(start32) << 32 | u64::from(count32));
            }
        }
        found.then_some(start)
    }

    /// Pages `first..first + count`, written before, when they sit in
    /// consecutive places (see [`Pages::run_start`]).
    #[inline]
    fn run_mut(&mut self, first: u64, count: usize) -> Option<&mut [(u64, Page)]> {
        let start = self.run_start(first, count)?;
        self.last.set((start + count).saturating_sub(1));
        self.slots.get_mut(start..start + count)
    }

    /// Pages `first..first + count`, written before, when they sit in
    /// consecutive places (see [`Pages::run_start`]).
    #[inline]
    fn run(&self, first: u64, count: usize) -> Option<&[(u64, Page)]> {
        let start = self.run_start(first, count)?;
        self.last.set((start + count).saturating_sub(1));
        self.slots.get(start..start + count)
    }

    /// The first written page at or after `page`.
    fn first_from(&self, page: u64) -> Option<u64> {
        self.index.range(page..).next().map(|(&p, _)| p)
    }

    fn len(&self) -> usize {
        self.slots.len()
    }
}

/// A written page of a [`Region`]: its bytes, or four bytes repeated over
/// the whole page, which is what a fill of the whole page (or a copy of a
/// whole page holding one) leaves, kept as the four bytes rather than
/// written 4 KiB at a time. The page's buffer stays allocated either way.
/// A later write into part of such a page keeps the pattern around it:
/// the page holds the pattern except for one range written over it, which
/// grows to cover each write (the pattern written into the gap between
/// the old range and the new one, if any), so a small write into a
/// cleared buffer writes its own bytes, not the page's 4 KiB.
#[derive(Clone)]
struct Page {
    bytes: Box<[u8; PAGE_SIZE]>,
    /// When set, byte `i` of the page is `pattern[i % 4]`, except for the
    /// `written` range, whose bytes are in `bytes`; the rest of `bytes` is
    /// stale.
    pattern: Option<[u8; 4]>,
    /// With a pattern: the bytes written over it, `start..end` (empty when
    /// `start == end`).
    written: (u16, u16),
}

impl Page {
    /// Writes the whole page from `source`: just its pattern when it has
    /// one, else its bytes (the page's old pattern is not written out
    /// first: every byte is replaced).
    #[inline]
    fn write_whole(&mut self, source: WriteSource<'_>) {
        self.pattern = source.page_pattern();
        self.written = (0, 0);
        if self.pattern.is_none() {
            source.write_into(&mut self.bytes[..]);
        }
    }

    /// Makes the page a copy of `source`, a whole page of another region
    /// (its pattern and the range written over it, or its bytes).
    #[inline]
    fn copy_whole(&mut self, source: &Page) {
        self.pattern = source.pattern;
        self.written = source.written;
        if source.whole_pattern().is_none() {
            self.bytes.copy_from_slice(&source.bytes[..]);
        }
    }

    /// A page holding `pattern` whole.
    fn of_pattern(pattern: [u8; 4]) -> Page {
        Page { bytes: Box::new([0u8; PAGE_SIZE]), pattern: Some(pattern), written: (0, 0) }
    }

    /// A page holding `bytes`.
    fn of_bytes(bytes: Box<[u8; PAGE_SIZE]>) -> Page {
        Page { bytes, pattern: None, written: (0, 0) }
    }

    /// The pattern the whole page holds, if it holds one whole.
    fn whole_pattern(&self) -> Option<[u8; 4]> {
        self.pattern.filter(|_| self.written.0 == self.written.1)
    }

    /// Bytes `start..end` of the page (`start <= end <= PAGE_SIZE`), for a
    /// write of every one of them. On a page holding a pattern, the range
    /// written over it grows to cover them, the pattern going into the gap
    /// between the range and them, if any, and nowhere else. Once the range
    /// would cover more than half the page, the page takes its bytes
    /// instead (the pattern written out around the range), so that a page
    /// written all over in small pieces (query results) is not read and
    /// written as pattern and range for ever.
    #[inline(always)]
    fn writable(&mut self, start: usize, end: usize) -> &mut [u8] {
        if let Some(pattern) = self.pattern {
            self.write_over_pattern(pattern, start, end);
        }
        self.bytes.get_mut(start..end).unwrap_or_default()
    }

    /// [`Page::writable`]'s work on a page holding `pattern`.
    #[inline(never)]
    fn write_over_pattern(&mut self, pattern: [u8; 4], start: usize, end: usize) {
        let (old_start, old_end) = (usize::from(self.written.0), usize::from(self.written.1));
        let (low, high) = if old_start == old_end { (start, end) } else { (old_start.min(start), old_end.max(end)) };
        if high - low > PAGE_SIZE / 2 {
            // Keep the bytes written over the pattern (none when the
            // range is empty), the pattern everywhere else.
            let (keep_start, keep_end) = if old_start == old_end { (0, 0) } else { (old_start, old_end) };
            if let Some(out) = self.bytes.get_mut(..keep_start) {
                fill_pattern(out, pattern);
            }
            if let Some(out) = self.bytes.get_mut(keep_end..) {
                fill_pattern(out, rotate_pattern(pattern, keep_end));
            }
            self.pattern = None;
        } else {
            // The gap between the range written and this one: pattern.
            let gap = if end < old_start { end..old_start } else { old_end.min(start)..start };
            if let Some(out) = self.bytes.get_mut(gap.clone()) {
                fill_pattern(out, rotate_pattern(pattern, gap.start));
            }
            self.written = (low as u16, high as u16);
        }
    }

    /// Copies the page's bytes from `in_page` on into `out` (which fits).
    #[inline]
    fn read(&self, in_page: usize, out: &mut [u8]) {
        let end = in_page + out.len();
        match self.pattern {
            Some(pattern) => {
                fill_pattern(out, rotate_pattern(pattern, in_page));
                // Then the bytes written over the pattern, where they meet.
                let (low, high) = (usize::from(self.written.0).max(in_page), usize::from(self.written.1).min(end));
                if let (Some(dst), Some(src)) =
                    (out.get_mut(low.wrapping_sub(in_page)..high.wrapping_sub(in_page)), self.bytes.get(low..high))
                {
                    dst.copy_from_slice(src);
                }
            }
            None => {
                if let Some(src) = self.bytes.get(in_page..end) {
                    out.copy_from_slice(src);
                }
            }
        }
    }
}

/// What a write lays down, from its first byte on: the one description
/// of a write's bytes that [`Regions::write_with`] and
/// [`Region::write_with`] take. A piece of the write is the source from
/// its place on ([`WriteSource::skip`]); a whole page of it may be known
/// to be four bytes repeated ([`WriteSource::page_pattern`]).
#[derive(Clone, Copy)]
enum WriteSource<'a> {
    /// These bytes (a host or packet write).
    Bytes(&'a [u8]),
    /// Four bytes repeated: byte `i` is `pattern[i % 4]` (a fill).
    Pattern([u8; 4]),
    /// Another region's bytes from `offset` on (a copy from one region
    /// into another).
    Region { region: &'a Region, offset: u64 },
}

impl WriteSource<'_> {
    /// The source from `n` bytes in.
    #[inline]
    fn skip(self, n: usize) -> Self {
        match self {
            WriteSource::Bytes(bytes) => WriteSource::Bytes(bytes.get(n..).unwrap_or_default()),
            WriteSource::Pattern(pattern) => WriteSource::Pattern(rotate_pattern(pattern, n)),
            WriteSource::Region { region, offset } => WriteSource::Region { region, offset: offset + n as u64 },
        }
    }

    /// Writes the source's first `out.len()` bytes into `out` (a region
    /// source's range is inside its region).
    #[inline]
    fn write_into(self, out: &mut [u8]) {
        match self {
            WriteSource::Bytes(bytes) => {
                if let Some(src) = bytes.get(..out.len()) {
                    out.copy_from_slice(src);
                }
            }
            WriteSource::Pattern(pattern) => fill_pattern(out, pattern),
            WriteSource::Region { region, offset } => region.read(offset, out),
        }
    }

    /// The four bytes repeated over the source's first page's worth of
    /// bytes, when that is known without looking at them: a fill's, or a
    /// region page's (see [`Region::page_pattern`]).
    #[inline]
    fn page_pattern(self) -> Option<[u8; 4]> {
        match self {
            WriteSource::Bytes(_) => None,
            WriteSource::Pattern(pattern) => Some(pattern),
            WriteSource::Region { region, offset } => region.page_pattern(offset),
        }
    }
}

/// `pattern` seen from `phase` bytes in: byte `i` of the result is byte
/// `(phase + i) % 4` of `pattern`.
fn rotate_pattern(pattern: [u8; 4], phase: usize) -> [u8; 4] {
    // Little-endian: byte `k` of the word is bits 8k..8k+8.
    u32::from_le_bytes(pattern).rotate_right(8 * (phase % 4) as u32).to_le_bytes()
}

/// Writes `pattern` repeated over `out` (byte `i` is `pattern[i % 4]`),
/// 64 bytes at a time.
fn fill_pattern(out: &mut [u8], pattern: [u8; 4]) {
    let mut block = [0u8; 64];
    for chunk in block.chunks_exact_mut(4) {
        chunk.copy_from_slice(&pattern);
    }
    let mut blocks = out.chunks_exact_mut(64);
    for chunk in blocks.by_ref() {
        chunk.copy_from_slice(&block);
    }
    let rest = blocks.into_remainder();
    let n = rest.len();
    if let Some(src) = block.get(..n) {
        rest.copy_from_slice(src);
    }
}

impl Region {
    fn end(&self) -> u64 {
        self.start + self.len
    }

    fn base_byte(&self, offset: u64) -> u8 {
        match &self.backing {
            Backing::Zero => 0,
            Backing::Shared { bytes, offset: base } => usize::try_from(offset)
                .ok()
                .and_then(|o| o.checked_add(*base))
                .and_then(|i| bytes.get(i))
                .copied()
                .unwrap_or(0),
        }
    }

    /// Copies region bytes `[offset, offset + out.len())` (all inside the region).
    fn read(&self, mut offset: u64, mut out: &mut [u8]) {
        while !out.is_empty() {
            let page = offset / PAGE_SIZE as u64;
            let in_page = (offset % PAGE_SIZE as u64) as usize;
            let n = out.len().min(PAGE_SIZE - in_page);
            let (head, tail) = out.split_at_mut(n);
            if let Some(p) = self.pages.get(page) {
                p.read(in_page, head);
            } else {
                match &self.backing {
                    Backing::Zero => head.fill(0),
                    Backing::Shared { bytes, offset: base } => {
                        let start = usize::try_from(offset).ok().and_then(|o| o.checked_add(*base));
                        match start.and_then(|s| bytes.get(s..s.checked_add(n)?)) {
                            Some(src) => head.copy_from_slice(src),
                            None => {
                                for (i, b) in head.iter_mut().enumerate() {
                                    *b = self.base_byte(offset + i as u64);
                                }
                            }
                        }
                    }
                }
            }
            out = tail;
            offset += n as u64;
        }
    }

    /// Pages of `[offset, offset + len)` (inside the region) not copied yet.
    fn missing_pages(&self, offset: u64, len: u64) -> u64 {
        if len == 0 {
            return 0;
        }
        let first = offset / PAGE_SIZE as u64;
        let last = (offset + len - 1) / PAGE_SIZE as u64;
        let copied = self.pages.count_in(first, last);
        (last - first + 1).saturating_sub(copied)
    }

    /// Writes `len` bytes of `source` from `offset` on, page by page, in
    /// place. A piece covering a whole page whose bytes are four bytes
    /// repeated ([`WriteSource::page_pattern`]) leaves the page holding
    /// just them (see [`Page`]); a run of whole pages written before, in
    /// consecutive places (a buffer a fill or a copy wrote before), is
    /// written in one loop with no lookup per page.
    fn write_with(&mut self, mut offset: u64, len: u64, source: WriteSource<'_>) {
        let mut done = 0usize;
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        while done < len {
            let page = offset / PAGE_SIZE as u64;
            let in_page = (offset % PAGE_SIZE as u64) as usize;
            let n = (len - done).min(PAGE_SIZE - in_page);
            let from = source.skip(done);
            let whole = (len - done) / PAGE_SIZE;
            if n == PAGE_SIZE && whole > 1 {
                if let Some(run) = self.pages.run_mut(page, whole) {
                    // From a run of another region's written pages in
                    // order (a buffer copied again): page by page, no
                    // lookup in the source either.
                    let source_run = match from {
                        WriteSource::Region { region, offset } if offset % PAGE_SIZE as u64 == 0 => {
                            region.pages.run(offset / PAGE_SIZE as u64, whole)
                        }
                        _ => None,
                    };
                    match source_run {
                        Some(source_run) => {
                            for ((_, written), (_, source)) in run.iter_mut().zip(source_run) {
                                written.copy_whole(source);
                            }
                        }
                        None => {
                            for (k, (_, written)) in run.iter_mut().enumerate() {
                                written.write_whole(from.skip(k * PAGE_SIZE));
                            }
                        }
                    }
                    done += whole * PAGE_SIZE;
                    offset += (whole * PAGE_SIZE) as u64;
                    continue;
                }
            }
            // One lookup for a page copied before; a page written for the
            // first time is copied from the backing, written, then kept.
            match self.pages.get_mut(page) {
                Some(written) if n == PAGE_SIZE => written.write_whole(from),
                Some(written) => from.write_into(written.writable(in_page, in_page + n)),
                None => {
                    let fresh = match from.page_pattern().filter(|_| n == PAGE_SIZE) {
                        Some(pattern) => Page::of_pattern(pattern),
                        None => {
                            let mut bytes = Box::new([0u8; PAGE_SIZE]);
                            let page_start = page * PAGE_SIZE as u64;
                            let page_len = (self.len - page_start).min(PAGE_SIZE as u64) as usize;
                            if n < page_len {
                                self.read(page_start, &mut bytes[..page_len]);
                            }
                            from.write_into(&mut bytes[in_page..in_page + n]);
                            Page::of_bytes(bytes)
                        }
                    };
                    self.pages.insert(page, fresh);
                }
            }
            done += n;
            offset += n as u64;
        }
    }

    /// The four bytes repeated over the whole page at `offset` (a page
    /// boundary inside the region), when it is known to hold them without
    /// looking at its bytes: a page kept as a pattern, or an unwritten page
    /// of a zero region.
    fn page_pattern(&self, offset: u64) -> Option<[u8; 4]> {
        if offset % PAGE_SIZE as u64 != 0 || offset.checked_add(PAGE_SIZE as u64)? > self.len {
            return None;
        }
        match self.pages.get(offset / PAGE_SIZE as u64) {
            Some(page) => page.whole_pattern(),
            None => matches!(self.backing, Backing::Zero).then_some([0; 4]),
        }
    }
}

/// The regions of a [`SparseMemory`], behind its lock.
#[derive(Clone)]
struct Regions {
    /// Sorted by start address; never overlapping.
    list: Vec<Region>,
    /// Pages copied because they were written, over every region.
    written_pages: u64,
    /// Most pages that may be copied ([`SparseMemory::set_written_limit`]).
    page_limit: u64,
    /// Bytes written over the memory's lifetime (host and packets).
    bytes_written: u64,
    /// Most bytes that may be written ([`SparseMemory::set_write_budget`]).
    write_budget: u64,
    /// The regions the last three lookups found, the latest first (see
    /// [`Regions::region_index`]).
    last: [Hint; 3],
    /// Bumped on every successful write (host or packet), under the lock
    /// the write holds (see [`SparseMemory::write_generation`]).
    generation: u64,
}

impl Default for Regions {
    fn default() -> Self {
        Regions {
            list: Vec::new(),
            written_pages: 0,
            page_limit: u64::MAX,
            bytes_written: 0,
            write_budget: u64::MAX,
            last: [Hint::default(), Hint::default(), Hint::default()],
            generation: 0,
        }
    }
}

/// Where a lookup last found what it looked for (the index of a region in
/// the list, the place of a page in its region's pages): accesses in a row
/// mostly hit one region (a fence's, a query buffer's, a DMA's) and one
/// page, so a lookup tries it before searching. Only a hint: it is checked
/// each time (the region holds the address, the place holds the page), so
/// a stale one (after a mapping, or another reader's lookup) just costs the
/// search. Relaxed atomics, because readers share the lock.
#[derive(Default)]
struct Hint(AtomicU64);

impl Hint {
    /// The index or place last stored (any value: it is checked on use).
    #[inline]
    fn get(&self) -> usize {
        usize::try_from(self.word()).unwrap_or(usize::MAX)
    }

    #[inline]
    fn set(&self, value: usize) {
        self.set_word(value as u64);
    }

    /// The whole word, for a hint packed into it.
    #[inline]
    fn word(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    #[inline]
    fn set_word(&self, word: u64) {
        self.0.store(word, Ordering::Relaxed);
    }
}

impl Clone for Hint {
    fn clone(&self) -> Self {
        Hint(AtomicU64::new(self.word()))
    }
}

impl Regions {
    /// Counts a successful write (the lock held for it orders it).
    #[inline]
    fn wrote(&mut self) {
        self.generation = self.generation.wrapping_add(1);
    }

    /// Refuses a write of `len` bytes past the write budget.
    fn charge_bytes(&self, address: u64, len: u64) -> Result<(), MemoryError> {
        match self.bytes_written.checked_add(len) {
            Some(total) if total <= self.write_budget => Ok(()),
            _ => Err(MemoryError::WriteBudget { address, len, limit: self.write_budget }),
        }
    }

    /// Refuses a write needing `new_pages` more pages than the cap allows.
    fn charge_pages(&mut self, new_pages: u64, address: u64, len: u64) -> Result<(), MemoryError> {
        if new_pages == 0 {
            return Ok(());
        }
        match self.written_pages.checked_add(new_pages) {
            Some(total) if total <= self.page_limit => {
                self.written_pages = total;
                Ok(())
            }
            _ => {
                Err(MemoryError::WrittenLimit { address, len, limit: self.page_limit.saturating_mul(PAGE_SIZE as u64) })
            }
        }
    }

    /// Charges a write of `len` bytes at `address` that copies `new_pages`
    /// pages: refused past either budget, counted otherwise.
    fn charge_write(&mut self, address: u64, len: u64, new_pages: u64) -> Result<(), MemoryError> {
        self.charge_bytes(address, len)?;
        self.charge_pages(new_pages, address, len)?;
        self.bytes_written = self.bytes_written.saturating_add(len);
        Ok(())
    }

    fn check_new_region(&self, address: u64, len: u64) -> Result<usize, MemoryError> {
        if address % 4 != 0 {
            return Err(MemoryError::Misaligned { address });
        }
        let end = check_range(address, len)?;
        let index = self.list.partition_point(|r| r.start < address);
        if let Some(prev) = index.checked_sub(1).and_then(|i| self.list.get(i)) {
            if prev.end() > address {
                return Err(MemoryError::Overlap { address, len });
            }
        }
        if let Some(next) = self.list.get(index) {
            if next.start < end {
                return Err(MemoryError::Overlap { address, len });
            }
        }
        Ok(index)
    }

    /// The index of the region holding `address`, if any: one of the last
    /// three found when it holds it (a copy or a wait alternates between
    /// two regions, a DMA packet's source and destination and its fence
    /// make three), else a binary search.
    #[inline]
    fn region_index(&self, address: u64) -> Option<usize> {
        let holds = |index: usize| self.list.get(index).is_some_and(|r| r.start <= address && address < r.end());
        let [latest, before, oldest] = &self.last;
        let last = latest.get();
        if holds(last) {
            return Some(last);
        }
        let other = before.get();
        if holds(other) {
            return Some(other);
        }
        let third = oldest.get();
        if holds(third) {
            return Some(third);
        }
        let index = self.list.partition_point(|r| r.start <= address).checked_sub(1)?;
        let region = self.list.get(index)?;
        if address < region.end() {
            oldest.set(other);
            before.set(last);
            latest.set(index);
            return Some(index);
        }
        None
    }

    /// Up to `max_dw` dwords at `address` lent from the shared bytes of the
    /// region holding it: up to the region's end, the end of its bytes and
    /// its first written page (written pages hold what is read there).
    fn lend_dwords(&self, address: u64, max_dw: usize) -> Option<LentDwords> {
        let region = self.list.get(self.region_index(address)?)?;
        let Backing::Shared { bytes, offset: base } = &region.backing else { return None };
        let offset = address - region.start;
        let mut end = region.len;
        if let Some(page) = region.pages.first_from(offset / PAGE_SIZE as u64) {
            end = end.min(page * PAGE_SIZE as u64);
        }
        let start = usize::try_from(offset).ok()?.checked_add(*base)?;
        let in_region = usize::try_from(end.checked_sub(offset)? / 4).ok()?;
        let in_bytes = bytes.len().checked_sub(start)? / 4;
        LentDwords::new(Arc::clone(bytes), start, max_dw.min(in_region).min(in_bytes))
    }

    /// Whether `[address, address + len)` is all mapped: one region's
    /// check when one holds it (almost every access), else its pieces'.
    fn is_mapped(&self, address: u64, len: u64) -> bool {
        let in_one = self
            .region_index(address)
            .and_then(|index| self.list.get(index))
            .is_some_and(|region| check_range(address, len).is_ok_and(|end| end <= region.end()));
        in_one || self.pieces(address, len).is_ok()
    }

    /// The pieces of an access `(region_index, offset_in_region,
    /// start_in_access, n)`, after checking the whole access is mapped.
    fn pieces(&self, address: u64, len: u64) -> Result<Pieces, MemoryError> {
        let end = check_range(address, len)?;
        let mut pieces = Pieces::default();
        let mut at = address;
        while at < end {
            let index = self.region_index(at).ok_or(MemoryError::Unmapped { address: at, len })?;
            let region = &self.list[index];
            let n = region.end().min(end) - at;
            pieces.push(index, at - region.start, at - address, n)?;
            at += n;
        }
        Ok(pieces)
    }

    /// `N` bytes (a dword, a qword) at `address` when they lie in one page
    /// of one region, the common case: no pieces, no copy loop. `None`
    /// otherwise, for [`Regions::read`].
    #[inline]
    fn read_small<const N: usize>(&self, address: u64) -> Option<[u8; N]> {
        let region = self.list.get(self.region_index(address)?)?;
        let offset = address - region.start;
        let in_page = (offset % PAGE_SIZE as u64) as usize;
        if offset.checked_add(N as u64)? > region.len || in_page + N > PAGE_SIZE {
            return None;
        }
        let mut out = [0u8; N];
        match (region.pages.get(offset / PAGE_SIZE as u64), &region.backing) {
            (Some(Page { pattern: None, bytes, .. }), _) => out = bytes.get(in_page..in_page + N)?.try_into().ok()?,
            (Some(page), _) => page.read(in_page, &mut out),
            (None, Backing::Zero) => {}
            (None, Backing::Shared { bytes, offset: base }) => {
                let start = usize::try_from(offset).ok()?.checked_add(*base)?;
                out = bytes.get(start..start.checked_add(N)?)?.try_into().ok()?;
            }
        }
        Some(out)
    }

    /// Writes `N` bytes at `address` when they lie in one page of one
    /// region, written before: charged and checked like any write. `None`
    /// (nothing written) otherwise, for [`Regions::write`].
    #[inline]
    fn write_small<const N: usize>(&mut self, address: u64, data: [u8; N]) -> Option<Result<(), MemoryError>> {
        let index = self.region_index(address)?;
        let region = self.list.get(index)?;
        let offset = address - region.start;
        let in_page = (offset % PAGE_SIZE as u64) as usize;
        if offset.checked_add(N as u64)? > region.len || in_page + N > PAGE_SIZE {
            return None;
        }
        if let Err(e) = self.charge_bytes(address, N as u64) {
            return Some(Err(e));
        }
        let page = self.list.get_mut(index)?.pages.get_mut(offset / PAGE_SIZE as u64)?;
        let bytes: &mut [u8; N] = page.writable(in_page, in_page + N).try_into().ok()?;
        *bytes = data;
        self.bytes_written = self.bytes_written.saturating_add(N as u64);
        Some(Ok(()))
    }

    fn read(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError> {
        let len = out.len() as u64;
        // A dword or a qword: the one-page path when it applies.
        let small = match out.len() {
            4 => self.read_small::<4>(address).and_then(|b| out.get_mut(..4).map(|o| o.copy_from_slice(&b))),
            8 => self.read_small::<8>(address).and_then(|b| out.get_mut(..8).map(|o| o.copy_from_slice(&b))),
            _ => None,
        };
        if small.is_some() {
            return Ok(());
        }
        // Fast path: one region.
        if let Some(index) = self.region_index(address) {
            let region = &self.list[index];
            if check_range(address, len)? <= region.end() {
                region.read(address - region.start, out);
                return Ok(());
            }
        }
        let pieces = self.pieces(address, len)?;
        for &(index, offset, at, n) in pieces.iter() {
            let (at, n) = (at as usize, n as usize);
            self.list[index].read(offset, &mut out[at..at + n]);
        }
        Ok(())
    }

    fn write(&mut self, address: u64, data: &[u8]) -> Result<(), MemoryError> {
        // A dword or a qword (a label, a fence, one WRITE_DATA value): the
        // one-page path when it applies.
        let small = match data.len() {
            4 => data.try_into().ok().and_then(|d: [u8; 4]| self.write_small(address, d)),
            8 => data.try_into().ok().and_then(|d: [u8; 8]| self.write_small(address, d)),
            _ => None,
        };
        if let Some(result) = small {
            return result;
        }
        self.write_with(address, data.len() as u64, WriteSource::Bytes(data))
    }

    /// Writes `len` bytes of `source` at `address` in place, page by page
    /// (see [`Region::write_with`]). Charged and checked like any write
    /// before a byte lands.
    fn write_with(&mut self, address: u64, len: u64, source: WriteSource<'_>) -> Result<(), MemoryError> {
        if let Some(index) = self.region_index(address) {
            let end = check_range(address, len)?;
            let region = &self.list[index];
            if end <= region.end() {
                let offset = address - region.start;
                // Inside one page written before (most packet writes): one
                // page lookup, no page to charge.
                let in_page = (offset % PAGE_SIZE as u64) as usize;
                // (A whole page goes the long way, which may keep a pattern.)
                if len > 0 && len < PAGE_SIZE as u64 && in_page as u64 + len <= PAGE_SIZE as u64 {
                    self.charge_bytes(address, len)?;
                    let page = self.list.get_mut(index).and_then(|r| r.pages.get_mut(offset / PAGE_SIZE as u64));
                    if let Some(bytes) = page.map(|p| p.writable(in_page, in_page + len as usize)) {
                        source.write_into(bytes);
                        self.bytes_written = self.bytes_written.saturating_add(len);
                        return Ok(());
                    }
                }
                let region = &self.list[index];
                let new_pages = region.missing_pages(offset, len);
                self.charge_write(address, len, new_pages)?;
                self.list[index].write_with(offset, len, source);
                return Ok(());
            }
        }
        let pieces = self.pieces(address, len)?;
        let new_pages = pieces.iter().map(|&(index, offset, _, n)| self.list[index].missing_pages(offset, n)).sum();
        self.charge_write(address, len, new_pages)?;
        for &(index, offset, at, n) in pieces.iter() {
            self.list[index].write_with(offset, n, source.skip(at as usize));
        }
        Ok(())
    }
}

impl Regions {
    /// A copy from one region into another, each range inside its region:
    /// the source's bytes land in the destination's pages directly (one
    /// copy per byte, no bounce buffer), charged like any write. `None`
    /// when the ranges are not that (the same region, or more than one).
    fn copy_across(&mut self, dst: u64, src: u64, len: u64) -> Option<Result<(), MemoryError>> {
        let (src_index, dst_index) = (self.region_index(src)?, self.region_index(dst)?);
        let (src_end, dst_end) = (src.checked_add(len)?, dst.checked_add(len)?);
        let (src_region, dst_region) = (self.list.get(src_index)?, self.list.get(dst_index)?);
        if src_index == dst_index || src_end > src_region.end() || dst_end > dst_region.end() {
            return None;
        }
        let (src_offset, dst_offset) = (src - src_region.start, dst - dst_region.start);
        let new_pages = dst_region.missing_pages(dst_offset, len);
        if let Err(e) = self.charge_write(dst, len, new_pages) {
            return Some(Err(e));
        }
        // Two regions of the list at once: the one before the other's index
        // from the left part, the other from the right.
        let (source, destination) = if src_index < dst_index {
            let (left, right) = self.list.split_at_mut(dst_index);
            (left.get(src_index)?, right.first_mut()?)
        } else {
            let (left, right) = self.list.split_at_mut(src_index);
            (right.first()?, left.get_mut(dst_index)?)
        };
        // A whole page from a page holding a pattern (or from an unwritten
        // page of a zero region) takes just the pattern.
        destination.write_with(dst_offset, len, WriteSource::Region { region: source, offset: src_offset });
        Some(Ok(()))
    }
}

/// Sparse guest memory made of non-overlapping mapped regions.
///
/// Shared through `&self` like every [`GuestMemory`]: one reader-writer lock
/// guards the regions (reads share it; writes, atomic updates and mappings
/// take it alone), so atomic updates are indivisible and no access is torn.
/// Replay and tests use it; an emulator with one flat guest RAM uses
/// [`FlatMemory`].
///
/// Written pages are bounded: [`SparseMemory::set_written_limit`] caps the
/// bytes of pages copied because they were written (unlimited by default; a
/// trace replay sets [`crate::limits::Limits::max_written_memory`]). A write
/// that would need a page past the cap is refused with
/// [`MemoryError::WrittenLimit`] naming it, before any of its bytes land.
///
/// A fill that covers a page whole (a DMA clear of a buffer), or a copy of
/// a whole page holding such a fill or never written in a zero region,
/// keeps that page as its four repeated bytes: clearing or copying a large
/// buffer costs per page, not per byte. It still counts as a written page.
/// A write into part of it keeps the pattern around what is written (one
/// range of bytes over the pattern) until that range would cover most of
/// the page, when the page takes its bytes.
///
/// # Example
///
/// ```
/// use std::sync::Arc;
/// use pm4core::memory::{GuestMemory, SparseMemory};
///
/// let memory = SparseMemory::new();
/// // A trace's bytes, mapped without copying; written pages are copied.
/// let bytes: Arc<[u8]> = Arc::from(&[1u8, 0, 0, 0][..]);
/// memory.map_shared(0x1000, bytes, 0, 4).unwrap();
/// memory.map_zeroed(0x10_0000, 1 << 20).unwrap();
/// memory.write_u32(0x10_0010, 5).unwrap();
/// assert_eq!(memory.read_u32(0x1000).unwrap(), 1);
/// assert_eq!(memory.read_u32(0x10_0010).unwrap(), 5);
///
/// // At most two written pages: a third is refused, by name.
/// use pm4core::memory::{MemoryError, PAGE_SIZE};
/// memory.set_written_limit(2 * PAGE_SIZE as u64);
/// memory.fill(0x10_1000, PAGE_SIZE as u64, 0xAAAA_AAAA).unwrap(); // the second page
/// assert_eq!(
///     memory.write_u32(0x10_2000, 1),
///     Err(MemoryError::WrittenLimit { address: 0x10_2000, len: 4, limit: 2 * PAGE_SIZE as u64 })
/// );
/// memory.write_u32(0x10_0014, 7).unwrap(); // written pages stay writable
/// assert_eq!(memory.allocated_page_bytes(), 2 * PAGE_SIZE);
///
/// // A clear of 64 KiB, then a copy of it, as a DMA engine does them: each
/// // page is kept as its pattern, and a write into one as the pattern
/// // around the bytes written.
/// let memory = SparseMemory::new();
/// memory.map_zeroed(0x20_0000, 0x2_0000).unwrap();
/// memory.fill(0x20_0000, 0x1_0000, 0x3F80_0000).unwrap(); // 1.0f
/// memory.copy(0x21_0000, 0x20_0000, 0x1_0000).unwrap();
/// memory.write_u32(0x21_8004, 0).unwrap();
/// assert_eq!(memory.read_u64(0x21_8000).unwrap(), 0x3F80_0000);
/// assert_eq!(memory.read_u32(0x21_FFFC).unwrap(), 0x3F80_0000);
/// assert_eq!(memory.allocated_page_bytes(), 32 * PAGE_SIZE);
/// ```
#[derive(Default)]
pub struct SparseMemory {
    regions: RwLock<Regions>,
}

impl Clone for SparseMemory {
    fn clone(&self) -> Self {
        Self { regions: RwLock::new(self.regions.read().clone()) }
    }
}

impl std::fmt::Debug for SparseMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut list = f.debug_list();
        for r in &self.regions.read().list {
            list.entry(&format_args!("{:#x}..{:#x}", r.start, r.end()));
        }
        list.finish()
    }
}

impl SparseMemory {
    /// An empty address space.
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps `len` zero bytes at `address` without allocating them.
    pub fn map_zeroed(&self, address: u64, len: u64) -> Result<(), MemoryError> {
        let mut regions = self.regions.write();
        let index = regions.check_new_region(address, len)?;
        if len > 0 {
            regions.list.insert(index, Region { start: address, len, backing: Backing::Zero, pages: Pages::default() });
        }
        Ok(())
    }

    /// Maps `bytes[offset..offset + len]` of a shared buffer at `address`
    /// without copying it. A range past the buffer's end is an error.
    pub fn map_shared(&self, address: u64, bytes: Arc<[u8]>, offset: usize, len: usize) -> Result<(), MemoryError> {
        if offset.checked_add(len).is_none_or(|end| end > bytes.len()) {
            return Err(MemoryError::OutOfRange { address, len: len as u64 });
        }
        let mut regions = self.regions.write();
        let index = regions.check_new_region(address, len as u64)?;
        if len > 0 {
            regions.list.insert(
                index,
                Region {
                    start: address,
                    len: len as u64,
                    backing: Backing::Shared { bytes, offset },
                    pages: Pages::default(),
                },
            );
        }
        Ok(())
    }

    /// Maps a copy of `data` at `address`.
    pub fn map_bytes(&self, address: u64, data: &[u8]) -> Result<(), MemoryError> {
        let len = data.len();
        self.map_shared(address, Arc::from(data), 0, len)
    }

    /// Maps dwords (little-endian) at `address`.
    pub fn map_dwords(&self, address: u64, dwords: &[u32]) -> Result<(), MemoryError> {
        let bytes: Vec<u8> = dwords.iter().flat_map(|d| d.to_le_bytes()).collect();
        self.map_bytes(address, &bytes)
    }

    /// The mapped regions as `(start, len)` pairs, in address order (a
    /// snapshot).
    pub fn regions(&self) -> std::vec::IntoIter<(u64, u64)> {
        let list: Vec<(u64, u64)> = self.regions.read().list.iter().map(|r| (r.start, r.len)).collect();
        list.into_iter()
    }

    /// Caps the bytes of pages copied because they were written (rounded
    /// down to whole 4 KiB pages; `u64::MAX` = no cap, the default). Pages
    /// already written stay; only further pages are refused.
    pub fn set_written_limit(&self, bytes: u64) {
        self.regions.write().page_limit = bytes / PAGE_SIZE as u64;
    }

    /// The cap of [`set_written_limit`](Self::set_written_limit), in bytes.
    pub fn written_limit(&self) -> u64 {
        self.regions.read().page_limit.saturating_mul(PAGE_SIZE as u64)
    }

    /// Caps the bytes written over the memory's lifetime (host and packet
    /// writes, each byte as often as it is written; `u64::MAX` = no cap, the
    /// default): a write past it is refused with
    /// [`MemoryError::WriteBudget`]. Bounds the time fills and copies take.
    pub fn set_write_budget(&self, bytes: u64) {
        self.regions.write().write_budget = bytes;
    }

    /// Bytes written over the memory's lifetime (host and packet writes,
    /// each byte as often as it was written).
    pub fn bytes_written(&self) -> u64 {
        self.regions.read().bytes_written
    }

    /// Bytes held in written (copy-on-write) pages.
    pub fn allocated_page_bytes(&self) -> usize {
        self.regions.read().list.iter().map(|r| r.pages.len() * PAGE_SIZE).sum()
    }

    /// A counter that changes on every successful write (kept under the
    /// regions' lock: a write takes no other atomic for it).
    pub fn write_generation(&self) -> u64 {
        self.regions.read().generation
    }
}

/// The region pieces of one access: almost always one, at most a few.
#[derive(Default)]
struct Pieces {
    items: [(usize, u64, u64, u64); 4],
    count: usize,
    overflow: Vec<(usize, u64, u64, u64)>,
}

impl Pieces {
    fn push(&mut self, index: usize, offset: u64, at: u64, n: u64) -> Result<(), MemoryError> {
        if let Some(slot) = self.items.get_mut(self.count) {
            *slot = (index, offset, at, n);
            self.count += 1;
        } else {
            self.overflow.push((index, offset, at, n));
        }
        Ok(())
    }

    fn iter(&self) -> impl Iterator<Item = &(usize, u64, u64, u64)> {
        self.items.iter().take(self.count).chain(self.overflow.iter())
    }
}

impl GuestMemory for SparseMemory {
    #[inline]
    fn read_bytes(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError> {
        self.regions.read().read(address, out)
    }

    fn lend_dwords(&self, address: u64, max_dw: usize) -> Option<LentDwords> {
        self.regions.read().lend_dwords(address, max_dw)
    }

    #[inline]
    fn write_bytes(&self, address: u64, data: &[u8]) -> Result<(), MemoryError> {
        let mut regions = self.regions.write();
        regions.write(address, data)?;
        regions.wrote();
        Ok(())
    }

    fn is_mapped(&self, address: u64, len: u64) -> bool {
        self.regions.read().is_mapped(address, len)
    }

    fn atomic_update_u32(&self, address: u64, update: &mut dyn FnMut(u32) -> u32) -> Result<u32, MemoryError> {
        let mut regions = self.regions.write();
        let mut bytes = [0u8; 4];
        regions.read(address, &mut bytes)?;
        let old = u32::from_le_bytes(bytes);
        regions.write(address, &update(old).to_le_bytes())?;
        regions.wrote();
        Ok(old)
    }

    fn atomic_update_u64(&self, address: u64, update: &mut dyn FnMut(u64) -> u64) -> Result<u64, MemoryError> {
        let mut regions = self.regions.write();
        let mut bytes = [0u8; 8];
        regions.read(address, &mut bytes)?;
        let old = u64::from_le_bytes(bytes);
        regions.write(address, &update(old).to_le_bytes())?;
        regions.wrote();
        Ok(old)
    }

    fn fill(&self, address: u64, len: u64, pattern: u32) -> Result<(), MemoryError> {
        check_range(address, len)?;
        let mut regions = self.regions.write();
        // Any piece of the fill is the pattern from the fill's phase there;
        // a whole page keeps just the pattern (see `Page`).
        let source = WriteSource::Pattern(pattern.to_le_bytes());
        // The whole fill in place when it is mapped and fits the write
        // budget and the written-memory cap (a refused write lands
        // nothing); unmapped, it is refused whole; otherwise it goes in
        // 256-byte writes, so the refusal names the first write past them.
        match regions.write_with(address, len, source) {
            Ok(()) => {}
            Err(MemoryError::Unmapped { .. }) => return Err(MemoryError::Unmapped { address, len }),
            Err(_) => {
                let mut done = 0u64;
                while done < len {
                    let n = (len - done).min(256);
                    regions.write_with(address + done, n, source.skip(done as usize))?;
                    done += n;
                }
            }
        }
        regions.wrote();
        Ok(())
    }

    fn copy(&self, dst: u64, src: u64, len: u64) -> Result<(), MemoryError> {
        check_range(src, len)?;
        check_range(dst, len)?;
        let mut regions = self.regions.write();
        // From one region into another (each range inside its region, so
        // mapped): straight into the destination's pages.
        if let Some(result) = regions.copy_across(dst, src, len) {
            result?;
            regions.wrote();
            return Ok(());
        }
        if !regions.is_mapped(src, len) {
            return Err(MemoryError::Unmapped { address: src, len });
        }
        if !regions.is_mapped(dst, len) {
            return Err(MemoryError::Unmapped { address: dst, len });
        }
        copy_in_chunks(dst, src, len, |from, to, buf| {
            regions.read(from, buf)?;
            regions.write(to, buf)
        })?;
        regions.wrote();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_endian = "little")]
    fn shared_bytes_are_lent_up_to_the_first_written_page() {
        let words: Vec<u32> = (0..3 * PAGE_SIZE as u32 / 4).collect();
        let bytes: Arc<[u8]> = bytemuck::cast_slice::<u32, u8>(&words).into();
        let memory = SparseMemory::new();
        memory.map_shared(0x10_0000, Arc::clone(&bytes), 0, bytes.len()).unwrap();
        memory.map_zeroed(0x20_0000, 0x1000).unwrap();
        // The whole region from the address, or `max_dw` of it.
        let lent = memory.lend_dwords(0x10_0008, usize::MAX).unwrap();
        assert_eq!(lent.len(), 3 * PAGE_SIZE / 4 - 2);
        assert_eq!(lent.dwords()[..3], [2, 3, 4]);
        assert_eq!(memory.lend_dwords(0x10_0008, 5).unwrap().dwords(), &[2, 3, 4, 5, 6]);
        // A write copies the second page: lending stops before it, and a
        // lend from inside it is refused (the reader copies what it reads).
        memory.write_u32(0x10_1010, 0xAAAA).unwrap();
        assert_eq!(memory.lend_dwords(0x10_0008, usize::MAX).unwrap().len(), PAGE_SIZE / 4 - 2);
        assert!(memory.lend_dwords(0x10_1000, 4).is_none());
        let third = memory.lend_dwords(0x10_2000, usize::MAX).unwrap();
        assert_eq!(third.dwords()[0], 2 * PAGE_SIZE as u32 / 4);
        // Zero regions and unmapped addresses lend nothing.
        assert!(memory.lend_dwords(0x20_0000, 4).is_none());
        assert!(memory.lend_dwords(0x30_0000, 4).is_none());
    }

    #[test]
    fn a_lookup_after_a_mapping_moved_the_regions_finds_the_right_one() {
        // The last region found is a hint by index: mapping a region below
        // it shifts the list, and the next access must not use the stale
        // index.
        let m = SparseMemory::new();
        m.map_zeroed(0x10_0000, 0x1000).unwrap();
        m.map_zeroed(0x30_0000, 0x1000).unwrap();
        m.write_u32(0x30_0010, 0x33).unwrap(); // the hint: index 1
        m.map_zeroed(0x20_0000, 0x1000).unwrap(); // now index 1
        m.write_u32(0x20_0010, 0x22).unwrap();
        m.write_u32(0x10_0010, 0x11).unwrap();
        assert_eq!(m.read_u32(0x30_0010).unwrap(), 0x33);
        assert_eq!(m.read_u32(0x20_0010).unwrap(), 0x22);
        assert_eq!(m.read_u32(0x10_0010).unwrap(), 0x11);
        // Past the end of the hinted region, and between regions.
        assert_eq!(m.read_u32(0x20_1000), Err(MemoryError::Unmapped { address: 0x20_1000, len: 4 }));
        assert_eq!(m.read_u32(0x10_1000), Err(MemoryError::Unmapped { address: 0x10_1000, len: 4 }));
        // A clone keeps its own hint and the same bytes.
        let copy = m.clone();
        assert_eq!(copy.read_u32(0x20_0010).unwrap(), 0x22);
        // Every hint stale at once: three lookups (index 0, 2 and 1), then
        // a mapping below them all; every region is still found by address.
        assert_eq!(m.read_u32(0x10_0010).unwrap(), 0x11);
        assert_eq!(m.read_u32(0x30_0010).unwrap(), 0x33);
        assert_eq!(m.read_u32(0x20_0010).unwrap(), 0x22);
        m.map_zeroed(0x1000, 0x1000).unwrap();
        for (address, value) in [(0x30_0010, 0x33), (0x10_0010, 0x11), (0x20_0010, 0x22), (0x1010, 0)] {
            assert_eq!(m.read_u32(address).unwrap(), value, "{address:#x}");
            assert_eq!(
                m.read_u32(address + 0x1000 - 0x10),
                Err(MemoryError::Unmapped { address: address + 0xFF0, len: 4 })
            );
        }
        assert_eq!(m.regions.read().region_index(0x30_0010), Some(3));
    }

    #[test]
    fn the_write_generation_counts_successful_writes_only() {
        let m = SparseMemory::new();
        m.map_zeroed(0x1000, 0x2000).unwrap();
        m.map_zeroed(0x8000, 0x1000).unwrap();
        let g0 = m.write_generation();
        m.write_u32(0x1000, 1).unwrap();
        m.atomic_update_u32(0x1004, &mut |v| v + 1).unwrap();
        m.fill(0x1100, 0x20, 0xAB).unwrap();
        m.copy(0x8000, 0x1000, 8).unwrap(); // across regions
        m.copy(0x2000, 0x1000, 8).unwrap(); // inside one
        assert_eq!(m.write_generation(), g0 + 5);
        // Reads and refused writes leave it.
        m.read_u32(0x1000).unwrap();
        assert!(m.write_u32(0x9000, 1).is_err());
        assert!(m.fill(0x2FF0, 0x20, 0).is_err());
        assert!(m.copy(0x9000, 0x1000, 8).is_err());
        assert_eq!(m.write_generation(), g0 + 5);
        assert_eq!(m.clone().write_generation(), g0 + 5);
    }

    #[test]
    fn bytes_not_aligned_to_a_dword_are_not_lent() {
        let bytes: Arc<[u8]> = vec![0u8; 64].into();
        let memory = SparseMemory::new();
        memory.map_shared(0x10_0000, Arc::clone(&bytes), 1, 32).unwrap();
        assert!(memory.lend_dwords(0x10_0000, 4).is_none());
        // The copy the reader falls back on reads the same bytes.
        let mut out = [1u32; 4];
        memory.read_dwords(0x10_0000, &mut out).unwrap();
        assert_eq!(out, [0; 4]);
        assert!(LentDwords::new(bytes, 1, 1).is_none());
    }

    #[test]
    fn a_fill_keeps_its_pattern_phase_across_pages_and_regions() {
        // Two adjacent regions; the fill starts 2 bytes into a dword, 6
        // bytes before a page end, and runs into the second region.
        let m = SparseMemory::new();
        m.map_zeroed(0x1000, 0x2000).unwrap();
        m.map_zeroed(0x3000, 0x1000).unwrap();
        let (start, len) = (0x2FFA_u64, 0x10_u64);
        m.fill(start, len, 0x4433_2211).unwrap();
        let mut got = [0u8; 0x14];
        m.read_bytes(start - 2, &mut got).unwrap();
        let mut want = [0u8; 0x14];
        for (i, b) in want[2..2 + len as usize].iter_mut().enumerate() {
            *b = [0x11, 0x22, 0x33, 0x44][i % 4];
        }
        assert_eq!(got, want);
        // A fill longer than a page, at an odd offset.
        m.fill(0x1001, 0x1800, 0xA1B2_C3D4).unwrap();
        let mut page = vec![0u8; 0x1802];
        m.read_bytes(0x1000, &mut page).unwrap();
        assert_eq!(page[0], 0);
        assert_eq!(page[0x1801], 0);
        for (i, b) in page[1..0x1801].iter().enumerate() {
            assert_eq!(*b, [0xD4, 0xC3, 0xB2, 0xA1][i % 4], "byte {i}");
        }
    }

    #[test]
    fn written_pages_are_found_and_counted_whatever_the_hint() {
        // Pages written out of order, some not at all: every lookup and
        // every count of a range (short, long, hint right or stale) agrees
        // with the set of pages written.
        let mut pages = Pages::default();
        let written = [7u64, 8, 9, 10, 11, 30, 2, 3, 20, 21, 22, 23, 24, 25, 26, 0];
        for &page in &written {
            pages.insert(page, Page::of_bytes(Box::new([page as u8; PAGE_SIZE])));
        }
        for hint in [0, 4, 9, 15, 16, usize::MAX] {
            for first in 0..32u64 {
                for last in first..32 {
                    pages.last.set(hint);
                    let want = written.iter().filter(|&&p| (first..=last).contains(&p)).count() as u64;
                    assert_eq!(pages.count_in(first, last), want, "{first}..={last}, hint {hint}");
                    // A run: every page written, at consecutive places.
                    let places: Vec<Option<usize>> =
                        (first..=last).map(|p| written.iter().position(|&w| w == p)).collect();
                    let run = places
                        .first()
                        .copied()
                        .flatten()
                        .filter(|&start| places.iter().enumerate().all(|(k, place)| *place == Some(start + k)));
                    let count = (last - first + 1) as usize;
                    assert_eq!(pages.run_start(first, count), run, "run {first}..={last}, hint {hint}");
                }
                let found = pages.get(first).map(|p| p.bytes[0]);
                assert_eq!(found, written.contains(&first).then_some(first as u8), "page {first}");
            }
        }
        assert_eq!(pages.first_from(12), Some(20));
        assert_eq!(pages.first_from(31), None);
    }

    #[test]
    fn zero_region_reads_zero_and_pages_on_write() {
        let m = SparseMemory::new();
        m.map_zeroed(0x1000, 0x10000).unwrap();
        assert_eq!(m.read_u32(0x1000).unwrap(), 0);
        assert_eq!(m.allocated_page_bytes(), 0);
        m.write_u32(0x2004, 0xdead_beef).unwrap();
        assert_eq!(m.read_u32(0x2004).unwrap(), 0xdead_beef);
        assert_eq!(m.allocated_page_bytes(), PAGE_SIZE);
    }

    #[test]
    fn shared_backing_is_copy_on_write() {
        let bytes: Arc<[u8]> = Arc::from(&[1u8, 2, 3, 4, 5, 6, 7, 8][..]);
        let m = SparseMemory::new();
        m.map_shared(0x100, bytes.clone(), 4, 4).unwrap();
        assert_eq!(m.read_u32(0x100).unwrap(), 0x0807_0605);
        m.write_u32(0x100, 7).unwrap();
        assert_eq!(m.read_u32(0x100).unwrap(), 7);
        assert_eq!(bytes[4], 5);
    }

    #[test]
    fn unmapped_and_straddling_accesses() {
        let m = SparseMemory::new();
        m.map_zeroed(0x1000, 0x1000).unwrap();
        m.map_zeroed(0x2000, 0x1000).unwrap();
        assert_eq!(m.read_u32(0x3000), Err(MemoryError::Unmapped { address: 0x3000, len: 4 }));
        m.write_u64(0x1ffc, u64::MAX).unwrap();
        assert_eq!(m.read_u64(0x1ffc).unwrap(), u64::MAX);
        assert!(matches!(m.map_zeroed(0x1800, 0x10), Err(MemoryError::Overlap { .. })));
        assert!(matches!(m.read_u32(u64::MAX - 1), Err(MemoryError::OutOfRange { .. })));
    }

    #[test]
    fn the_write_budget_refuses_the_write_past_it_whole() {
        let m = SparseMemory::new();
        m.map_zeroed(0x1000, 0x1000).unwrap();
        m.set_write_budget(10);
        m.write_u64(0x1000, 1).unwrap();
        assert_eq!(m.write_u32(0x1008, 2), Err(MemoryError::WriteBudget { address: 0x1008, len: 4, limit: 10 }));
        assert_eq!(m.read_u32(0x1008).unwrap(), 0);
        m.write_bytes(0x1008, &[3, 3]).unwrap();
        assert_eq!(m.bytes_written(), 10);
    }

    #[test]
    fn copies_of_every_buffer_size_move_bytes_like_memmove() {
        // Short (one 256-byte buffer), just over it, several 4 KiB steps;
        // overlapping forwards and backwards.
        for len in [1u64, 255, 256, 257, 4096, 9000] {
            for (dst, src) in [(0x100u64, 0x2000u64), (0x2000, 0x100), (0x108, 0x100), (0x100, 0x108)] {
                let m = SparseMemory::new();
                m.map_zeroed(0, 0x8000).unwrap();
                let mut model: Vec<u8> = (0..0x8000u32).map(|i| (i * 7 + i / 251) as u8).collect();
                m.write_bytes(0, &model).unwrap();
                m.copy(dst, src, len).unwrap();
                model.copy_within(src as usize..(src + len) as usize, dst as usize);
                let mut out = vec![0u8; 0x8000];
                m.read_bytes(0, &mut out).unwrap();
                assert!(out == model, "copy of {len} bytes from {src:#x} to {dst:#x}");
            }
        }
    }

    #[test]
    fn copies_between_regions_read_pages_written_and_backing_alike() {
        // The source: shared bytes with one page written over; the
        // destination another region, one of its pages written before.
        let bytes: Vec<u8> = (0..0x3000u32).map(|i| (i * 13 + i / 97) as u8).collect();
        for (len, src, dst) in
            [(4u64, 0x1000u64, 0x20_0000u64), (0x2800, 0x100, 0x20_0804), (0x1000, 0x1FFC, 0x20_1FFC)]
        {
            let m = SparseMemory::new();
            m.map_shared(0, bytes.clone().into(), 0, bytes.len()).unwrap();
            m.map_zeroed(0x20_0000, 0x4000).unwrap();
            m.write_bytes(0x1800, &[0xAB; 0x20]).unwrap();
            m.write_bytes(0x20_1000, &[0xCD; 8]).unwrap();
            let mut model_src = bytes.clone();
            model_src[0x1800..0x1820].fill(0xAB);
            let mut model_dst = vec![0u8; 0x4000];
            model_dst[0x1000..0x1008].fill(0xCD);
            let at = (dst - 0x20_0000) as usize;
            model_dst[at..at + len as usize].copy_from_slice(&model_src[src as usize..(src + len) as usize]);
            let written = m.bytes_written();
            m.copy(dst, src, len).unwrap();
            let mut out = vec![0u8; 0x4000];
            m.read_bytes(0x20_0000, &mut out).unwrap();
            assert!(out == model_dst, "copy of {len:#x} bytes from {src:#x} to {dst:#x}");
            assert_eq!(m.bytes_written(), written + len);
        }
    }

    #[test]
    fn fill_and_copy() {
        let m = SparseMemory::new();
        m.map_zeroed(0, 64).unwrap();
        m.fill(0, 16, 0x1122_3344).unwrap();
        m.copy(8, 0, 16).unwrap();
        assert_eq!(m.read_u32(20).unwrap(), 0x1122_3344);
        assert_eq!(m.read_u32(24).unwrap(), 0);
        assert!(m.fill(60, 8, 0).is_err());
        assert_eq!(m.read_u32(60).unwrap(), 0);
    }
}
