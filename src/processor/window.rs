//! The prefetch window: dwords of the current command buffer read ahead in
//! one block, so the packet loop reads headers and bodies from a slice
//! instead of asking guest memory once per dword. Like the hardware's
//! prefetch parser, it reads ahead; unlike it, it is invalidated whenever
//! anything writes the dwords it holds (a packet's own write, or the host
//! between calls), so self-modifying streams still see fresh dwords.
//!
//! Memory that lends dwords ([`GuestMemory::lend_dwords`], such as a trace's
//! mapped payload) is not copied: the window then holds the lent dwords,
//! up to the end of the buffer, and the loop reads them where they are.

use crate::memory::{GuestMemory, LentDwords, MemoryError};

/// Dwords read per refill when the buffer has that many left.
const FILL_DW: usize = 1024;
/// Dwords read by the first refill after the window was invalidated: a
/// slice of a few dozen packets (the GPU's scheduling unit) reads little
/// more than it walks; each later refill reads twice as many, up to
/// [`FILL_DW`].
const FIRST_FILL_DW: usize = 256;
/// Capacity: the longest packet (COUNT 0x3FFE + 2 dwords) always fits.
const CAPACITY_DW: usize = 0x4000 + 2;

pub(crate) struct PrefetchWindow {
    /// Copied dwords (when nothing is lent).
    words: Vec<u32>,
    /// Lent dwords: when set, the window's dwords are these.
    lent: Option<LentDwords>,
    /// GPU address of `words[0]`.
    base: u64,
    /// Valid dwords in `words`.
    len: usize,
    /// Dwords the next refill reads (when the buffer has that many left).
    fill: usize,
    /// The end address of the last buffer the memory would not lend: its
    /// refills copy at once (memory that lends nothing, or a buffer in
    /// written pages, is not asked again for every slice). Only which of
    /// the two ways a refill takes depends on it, never what it reads.
    copied_end: u64,
}

impl PrefetchWindow {
    /// An empty window; it grows (once, up to the longest packet) as
    /// refills need room.
    pub(crate) fn new() -> Self {
        Self { words: Vec::new(), lent: None, base: 0, len: 0, fill: FIRST_FILL_DW, copied_end: 0 }
    }

    /// Forgets the window's contents.
    #[inline]
    pub(crate) fn invalidate(&mut self) {
        self.len = 0;
        self.lent = None;
        self.fill = FIRST_FILL_DW;
    }

    /// The guest byte range the window holds.
    #[inline]
    pub(crate) fn range(&self) -> (u64, u64) {
        (self.base, self.base.wrapping_add(self.len as u64 * 4))
    }

    /// Makes `need` dwords at `address` (dword-aligned inside a buffer with
    /// `remaining` dwords from `address` on) available, refilling when
    /// needed; returns their index in the window for [`Self::slice`].
    #[inline]
    pub(crate) fn ensure(
        &mut self,
        memory: &dyn GuestMemory,
        address: u64,
        need: u32,
        remaining: u32,
    ) -> Result<usize, MemoryError> {
        let need = need as usize;
        if address >= self.base {
            let delta = address - self.base;
            if delta % 4 == 0 {
                let start = (delta / 4) as usize;
                if start.saturating_add(need) <= self.len {
                    return Ok(start);
                }
            }
        }
        self.refill(memory, address, need, remaining as usize)?;
        Ok(0)
    }

    /// True when `start..start + need` (as returned by `ensure`) is held.
    #[inline]
    pub(crate) fn holds(&self, start: usize, need: u32) -> bool {
        start.saturating_add(need as usize) <= self.len
    }

    /// The dwords held from `start` (as returned by `ensure`), at most `max`.
    #[inline]
    pub(crate) fn held(&self, start: usize, max: u32) -> &[u32] {
        let end = self.len.min(start.saturating_add(max as usize));
        self.dwords().get(start..end).unwrap_or(&[])
    }

    /// The dword at `start` (as returned by `ensure`).
    #[inline]
    pub(crate) fn word(&self, start: usize) -> u32 {
        self.dwords().get(start).copied().unwrap_or(0)
    }

    /// The dwords `ensure` made available.
    #[inline]
    pub(crate) fn slice(&self, start: usize, need: u32) -> &[u32] {
        self.dwords().get(start..start.saturating_add(need as usize)).unwrap_or(&[])
    }

    /// The dwords the window holds (lent or copied), from `base`.
    #[inline]
    fn dwords(&self) -> &[u32] {
        match &self.lent {
            Some(lent) => lent.dwords(),
            None => &self.words,
        }
    }

    #[cold]
    fn refill(
        &mut self,
        memory: &dyn GuestMemory,
        address: u64,
        need: usize,
        remaining: usize,
    ) -> Result<(), MemoryError> {
        self.len = 0;
        self.lent = None;
        // Lent dwords cost no copy: as many as the memory lends, up to the
        // end of the buffer.
        let end = address.wrapping_add(remaining as u64 * 4);
        if end != self.copied_end {
            match memory.lend_dwords(address, remaining) {
                Some(lent) if lent.len() >= need => {
                    self.base = address;
                    self.len = lent.len();
                    self.lent = Some(lent);
                    return Ok(());
                }
                _ => self.copied_end = end,
            }
        }
        // `need` (one packet) never exceeds `remaining` or the capacity.
        let want = remaining.min(need.max(self.fill)).min(CAPACITY_DW);
        self.fill = (self.fill * 2).min(FILL_DW);
        if self.words.len() < want {
            self.words.resize(want, 0);
        }
        let target = self.words.get_mut(..want).ok_or(MemoryError::Unmapped { address, len: want as u64 * 4 })?;
        let got = match memory.read_dwords(address, target) {
            Ok(()) => want,
            Err(e) => {
                // The buffer's tail may be unmapped while this packet is not.
                let exact = self.words.get_mut(..need).ok_or(e)?;
                memory.read_dwords(address, exact)?;
                need
            }
        };
        self.base = address;
        self.len = got;
        Ok(())
    }
}
