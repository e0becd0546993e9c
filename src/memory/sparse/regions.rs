//! The regions of a [`super::SparseMemory`]: what each maps, the region
//! lookup, reads and writes across them, and the write budgets.

use std::sync::Arc;

use super::lookup::{Hint, Pages};
use super::page::{Page, WriteSource};
use crate::memory::{check_range, LentDwords, MemoryError, PAGE_SIZE};

/// What a region's untouched bytes are.
#[derive(Clone)]
pub(super) enum Backing {
    /// All zero (`ZERO` chunks, scratch, render targets).
    Zero,
    /// `len` bytes of a shared buffer starting at `offset` (a trace file's
    /// `MEM ` payload or bytes the host handed over). Never copied.
    Shared { bytes: Arc<[u8]>, offset: usize },
}

#[derive(Clone)]
pub(super) struct Region {
    pub(super) start: u64,
    pub(super) len: u64,
    pub(super) backing: Backing,
    /// Pages written since mapping, by page index inside the region.
    pub(super) pages: Pages,
}

impl Region {
    pub(super) fn end(&self) -> u64 {
        self.start + self.len
    }

    pub(super) fn base_byte(&self, offset: u64) -> u8 {
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
    pub(super) fn read(&self, mut offset: u64, mut out: &mut [u8]) {
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
    pub(super) fn missing_pages(&self, offset: u64, len: u64) -> u64 {
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
    pub(super) fn write_with(&mut self, mut offset: u64, len: u64, source: WriteSource<'_>) {
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
    pub(super) fn page_pattern(&self, offset: u64) -> Option<[u8; 4]> {
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
pub(super) struct Regions {
    /// Sorted by start address; never overlapping.
    pub(super) list: Vec<Region>,
    /// Pages copied because they were written, over every region.
    pub(super) written_pages: u64,
    /// Most pages that may be copied ([`SparseMemory::set_written_limit`]).
    pub(super) page_limit: u64,
    /// Bytes written over the memory's lifetime (host and packets).
    pub(super) bytes_written: u64,
    /// Most bytes that may be written ([`SparseMemory::set_write_budget`]).
    pub(super) write_budget: u64,
    /// The regions the last three lookups found, the latest first (see
    /// [`Regions::region_index`]).
    pub(super) last: [Hint; 3],
    /// Bumped on every successful write (host or packet), under the lock
    /// the write holds (see [`SparseMemory::write_generation`]).
    pub(super) generation: u64,
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

impl Regions {
    /// Counts a successful write (the lock held for it orders it).
    #[inline]
    pub(super) fn wrote(&mut self) {
        self.generation = self.generation.wrapping_add(1);
    }

    /// Refuses a write of `len` bytes past the write budget.
    pub(super) fn charge_bytes(&self, address: u64, len: u64) -> Result<(), MemoryError> {
        match self.bytes_written.checked_add(len) {
            Some(total) if total <= self.write_budget => Ok(()),
            _ => Err(MemoryError::WriteBudget { address, len, limit: self.write_budget }),
        }
    }

    /// Refuses a write needing `new_pages` more pages than the cap allows.
    pub(super) fn charge_pages(&mut self, new_pages: u64, address: u64, len: u64) -> Result<(), MemoryError> {
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
    pub(super) fn charge_write(&mut self, address: u64, len: u64, new_pages: u64) -> Result<(), MemoryError> {
        self.charge_bytes(address, len)?;
        self.charge_pages(new_pages, address, len)?;
        self.bytes_written = self.bytes_written.saturating_add(len);
        Ok(())
    }

    pub(super) fn check_new_region(&self, address: u64, len: u64) -> Result<usize, MemoryError> {
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
    pub(super) fn region_index(&self, address: u64) -> Option<usize> {
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
    pub(super) fn lend_dwords(&self, address: u64, max_dw: usize) -> Option<LentDwords> {
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
    pub(super) fn is_mapped(&self, address: u64, len: u64) -> bool {
        let in_one = self
            .region_index(address)
            .and_then(|index| self.list.get(index))
            .is_some_and(|region| check_range(address, len).is_ok_and(|end| end <= region.end()));
        in_one || self.pieces(address, len).is_ok()
    }

    /// The pieces of an access `(region_index, offset_in_region,
    /// start_in_access, n)`, after checking the whole access is mapped.
    pub(super) fn pieces(&self, address: u64, len: u64) -> Result<Pieces, MemoryError> {
        let end = check_range(address, len)?;
        let mut pieces = Pieces::default();
        let mut at = address;
        while at < end {
            let index = self.region_index(at).ok_or(MemoryError::Unmapped { address: at, len })?;
            let region = &self.list[index];
            let n = region.end().min(end) - at;
            pieces.push(index, at - region.start, at - address, n);
            at += n;
        }
        Ok(pieces)
    }

    /// `N` bytes (a dword, a qword) at `address` when they lie in one page
    /// of one region, the common case: no pieces, no copy loop. `None`
    /// otherwise, for [`Regions::read`].
    #[inline]
    pub(super) fn read_small<const N: usize>(&self, address: u64) -> Option<[u8; N]> {
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
    pub(super) fn write_small<const N: usize>(
        &mut self,
        address: u64,
        data: [u8; N],
    ) -> Option<Result<(), MemoryError>> {
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

    pub(super) fn read(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError> {
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

    pub(super) fn write(&mut self, address: u64, data: &[u8]) -> Result<(), MemoryError> {
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
    pub(super) fn write_with(&mut self, address: u64, len: u64, source: WriteSource<'_>) -> Result<(), MemoryError> {
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
    pub(super) fn copy_across(&mut self, dst: u64, src: u64, len: u64) -> Option<Result<(), MemoryError>> {
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

/// The region pieces of one access: almost always one, at most a few.
#[derive(Default)]
pub(super) struct Pieces {
    pub(super) items: [(usize, u64, u64, u64); 4],
    pub(super) count: usize,
    pub(super) overflow: Vec<(usize, u64, u64, u64)>,
}

impl Pieces {
    pub(super) fn push(&mut self, index: usize, offset: u64, at: u64, n: u64) {
        if let Some(slot) = self.items.get_mut(self.count) {
            *slot = (index, offset, at, n);
            self.count += 1;
        } else {
            self.overflow.push((index, offset, at, n));
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &(usize, u64, u64, u64)> {
        self.items.iter().take(self.count).chain(self.overflow.iter())
    }
}
