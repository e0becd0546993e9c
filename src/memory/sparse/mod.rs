//! [`SparseMemory`]: regions mapped at fixed addresses, backed by shared
//! bytes or zero, with 4 KiB copy-on-write pages.

use std::sync::Arc;

use parking_lot::RwLock;

use self::lookup::Pages;
use self::page::WriteSource;
use self::regions::{Backing, Region, Regions};
use super::{check_access, check_range, copy_in_chunks, GuestMemory, LentDwords, MemoryError, PAGE_SIZE};

mod lookup;
mod page;
mod regions;

/// Sparse guest memory made of non-overlapping mapped regions.
///
/// Shared through `&self` like every [`GuestMemory`]: one reader-writer lock
/// guards the regions (reads share it; writes, atomic updates and mappings
/// take it alone), so atomic updates are indivisible and no access is torn.
/// Replay and tests use it; an emulator with one flat guest RAM uses
/// [`FlatMemory`](super::FlatMemory).
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

impl GuestMemory for SparseMemory {
    #[inline]
    fn read_bytes(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError> {
        if out.is_empty() {
            return check_access(address, 0).map(drop);
        }
        self.regions.read().read(address, out)
    }

    fn lend_dwords(&self, address: u64, max_dw: usize) -> Option<LentDwords> {
        self.regions.read().lend_dwords(address, max_dw)
    }

    #[inline]
    fn write_bytes(&self, address: u64, data: &[u8]) -> Result<(), MemoryError> {
        if data.is_empty() {
            return check_access(address, 0).map(drop);
        }
        let mut regions = self.regions.write();
        regions.write(address, data)?;
        regions.wrote();
        Ok(())
    }

    fn is_mapped(&self, address: u64, len: u64) -> bool {
        if len == 0 {
            return check_access(address, 0).is_ok();
        }
        self.regions.read().is_mapped(address, len)
    }

    #[inline]
    fn read_u32(&self, address: u64) -> Result<u32, MemoryError> {
        let mut bytes = [0u8; 4];
        self.regions.read().read(address, &mut bytes)?;
        Ok(u32::from_le_bytes(bytes))
    }

    #[inline]
    fn read_u64(&self, address: u64) -> Result<u64, MemoryError> {
        let mut bytes = [0u8; 8];
        self.regions.read().read(address, &mut bytes)?;
        Ok(u64::from_le_bytes(bytes))
    }

    #[inline]
    fn write_u32(&self, address: u64, value: u32) -> Result<(), MemoryError> {
        self.write_bytes(address, &value.to_le_bytes())
    }

    #[inline]
    fn write_u64(&self, address: u64, value: u64) -> Result<(), MemoryError> {
        self.write_bytes(address, &value.to_le_bytes())
    }

    fn compare_exchange_u32(&self, address: u64, current: u32, new: u32) -> Result<Result<u32, u32>, MemoryError> {
        if address % 4 != 0 {
            return Err(MemoryError::Misaligned { address });
        }
        let mut regions = self.regions.write();
        let mut bytes = [0u8; 4];
        regions.read(address, &mut bytes)?;
        let seen = u32::from_le_bytes(bytes);
        if seen != current {
            return Ok(Err(seen));
        }
        regions.write(address, &new.to_le_bytes())?;
        regions.wrote();
        Ok(Ok(seen))
    }

    fn compare_exchange_u64(&self, address: u64, current: u64, new: u64) -> Result<Result<u64, u64>, MemoryError> {
        if address % 8 != 0 {
            return Err(MemoryError::Misaligned { address });
        }
        let mut regions = self.regions.write();
        let mut bytes = [0u8; 8];
        regions.read(address, &mut bytes)?;
        let seen = u64::from_le_bytes(bytes);
        if seen != current {
            return Ok(Err(seen));
        }
        regions.write(address, &new.to_le_bytes())?;
        regions.wrote();
        Ok(Ok(seen))
    }

    fn atomic_update_u32(&self, address: u64, update: &mut dyn FnMut(u32) -> u32) -> Result<u32, MemoryError> {
        if address % 4 != 0 {
            return Err(MemoryError::Misaligned { address });
        }
        let mut regions = self.regions.write();
        let mut bytes = [0u8; 4];
        regions.read(address, &mut bytes)?;
        let old = u32::from_le_bytes(bytes);
        regions.write(address, &update(old).to_le_bytes())?;
        regions.wrote();
        Ok(old)
    }

    fn atomic_update_u64(&self, address: u64, update: &mut dyn FnMut(u64) -> u64) -> Result<u64, MemoryError> {
        if address % 8 != 0 {
            return Err(MemoryError::Misaligned { address });
        }
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
    use super::page::Page;
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
