//! State of the whole GPU that every queue sees: the UCONFIG registers
//! (0xC000..0xFFFF, one set for the GPU, packets.md §4.2) and the global
//! data share (GDS, byte-addressed, 64 KiB by default).
//!
//! Queues may run on different threads, so the storage is atomic: a write
//! by one queue is seen by the next read of any other. Each part is
//! allocated by its first write (a GPU that never touches GDS pays nothing
//! for it). A [`crate::gpu::Gpu`] owns one `GlobalState` and hands it to
//! every processor; a [`Processor`](super::Processor) created on its own
//! gets a private one.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::regs::space;

/// Size of the global data share when the configuration does not say
/// otherwise.
pub const DEFAULT_GDS_BYTES: u32 = 64 * 1024;

/// A GDS access outside the configured size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("GDS access of {len} bytes at offset {offset:#x} is outside the {size}-byte global data share")]
pub struct GdsError {
    /// Byte offset of the access.
    pub offset: u64,
    /// Bytes accessed.
    pub len: u64,
    /// Size of the GDS in bytes.
    pub size: u32,
}

/// The UCONFIG registers and the GDS, shared by every queue of a GPU.
///
/// ```
/// use pm4core::processor::GlobalState;
/// use pm4core::regs::gfx103;
///
/// let global = GlobalState::new(64 * 1024);
/// global.set_uconfig(gfx103::SCRATCH_REG0, 7);
/// assert_eq!(global.uconfig(gfx103::SCRATCH_REG0), 7);
/// global.write_gds(0x100, &[1, 2]).unwrap();
/// let mut out = [0u32; 2];
/// global.read_gds(0x100, &mut out).unwrap();
/// assert_eq!(out, [1, 2]);
/// assert!(global.read_gds(0xFFFC, &mut out).is_err());
/// ```
#[derive(Debug)]
pub struct GlobalState {
    /// 256-register pages, each allocated by its first write.
    uconfig: [OnceLock<Box<[AtomicU32]>>; UCONFIG_PAGES],
    /// Counts UCONFIG writes: a queue waiting on a UCONFIG register is
    /// checked again when it moves.
    uconfig_writes: AtomicU64,
    gds: OnceLock<Box<[AtomicU32]>>,
    gds_bytes: u32,
}

impl Default for GlobalState {
    fn default() -> Self {
        Self::new(DEFAULT_GDS_BYTES)
    }
}

/// Registers per page of the UCONFIG file.
const UCONFIG_PAGE: u32 = 256;
const UCONFIG_PAGES: usize = (space::UCONFIG_SIZE / UCONFIG_PAGE) as usize;

fn zeroed(dwords: usize) -> Box<[AtomicU32]> {
    (0..dwords).map(|_| AtomicU32::new(0)).collect()
}

impl GlobalState {
    /// Global state with a GDS of `gds_bytes` bytes (rounded down to whole
    /// dwords).
    pub fn new(gds_bytes: u32) -> Self {
        Self {
            uconfig: std::array::from_fn(|_| OnceLock::new()),
            uconfig_writes: AtomicU64::new(0),
            gds: OnceLock::new(),
            gds_bytes: gds_bytes & !3,
        }
    }

    /// True for an absolute register index in the UCONFIG space.
    #[inline]
    pub fn is_uconfig(register: u32) -> bool {
        (space::UCONFIG..space::END).contains(&register)
    }

    /// The value of UCONFIG register `register` (absolute index); 0 outside
    /// the space or never written.
    #[inline]
    pub fn uconfig(&self, register: u32) -> u32 {
        let Some(i) = register.checked_sub(space::UCONFIG) else { return 0 };
        let Some(page) = self.uconfig.get((i / UCONFIG_PAGE) as usize).and_then(OnceLock::get) else { return 0 };
        page.get((i % UCONFIG_PAGE) as usize).map_or(0, |slot| slot.load(Ordering::Acquire))
    }

    /// Stores UCONFIG register `register`; false (nothing stored) outside
    /// the space. Storing the value a register already holds changes
    /// nothing (and wakes no waiter: its compare gives the same result).
    #[inline]
    pub fn set_uconfig(&self, register: u32, value: u32) -> bool {
        let Some(i) = register.checked_sub(space::UCONFIG) else { return false };
        let Some(page) = self.uconfig.get((i / UCONFIG_PAGE) as usize) else { return false };
        let slot_index = (i % UCONFIG_PAGE) as usize;
        let page = match page.get() {
            Some(page) => page,
            // Unwritten pages read as 0.
            None if value == 0 => return true,
            None => page.get_or_init(|| zeroed(UCONFIG_PAGE as usize)),
        };
        if let Some(slot) = page.get(slot_index) {
            if slot.load(Ordering::Acquire) != value {
                slot.store(value, Ordering::Release);
                self.uconfig_writes.fetch_add(1, Ordering::AcqRel);
            }
        }
        true
    }

    /// [`GlobalState::set_uconfig`] where `register`'s page is allocated
    /// already (the loop's fast path: no allocation); false, with nothing
    /// stored, otherwise.
    #[inline]
    pub(crate) fn set_uconfig_allocated(&self, register: u32, value: u32) -> bool {
        let Some(i) = register.checked_sub(space::UCONFIG) else { return false };
        let Some(page) = self.uconfig.get((i / UCONFIG_PAGE) as usize).and_then(OnceLock::get) else {
            return false;
        };
        let Some(slot) = page.get((i % UCONFIG_PAGE) as usize) else { return false };
        if slot.load(Ordering::Acquire) != value {
            slot.store(value, Ordering::Release);
            self.uconfig_writes.fetch_add(1, Ordering::AcqRel);
        }
        true
    }

    /// How many UCONFIG writes changed a value so far (any queue).
    #[inline]
    pub fn uconfig_writes(&self) -> u64 {
        self.uconfig_writes.load(Ordering::Acquire)
    }

    /// Size of the GDS in bytes.
    pub fn gds_bytes(&self) -> u32 {
        self.gds_bytes
    }

    fn gds_range(&self, offset: u64, dwords: usize) -> Result<std::ops::Range<usize>, GdsError> {
        let len = dwords as u64 * 4;
        let error = GdsError { offset, len, size: self.gds_bytes };
        let end = offset.checked_add(len).ok_or(error)?;
        if end > u64::from(self.gds_bytes) {
            return Err(error);
        }
        // Byte addresses: the low two bits select nothing in a dword store.
        let first = (offset / 4) as usize;
        Ok(first..first + dwords)
    }

    /// Reads `out.len()` dwords of GDS from byte `offset`.
    pub fn read_gds(&self, offset: u64, out: &mut [u32]) -> Result<(), GdsError> {
        let range = self.gds_range(offset, out.len())?;
        match self.gds.get().and_then(|g| g.get(range)) {
            Some(slots) => {
                for (o, slot) in out.iter_mut().zip(slots) {
                    *o = slot.load(Ordering::Acquire);
                }
            }
            None => out.fill(0),
        }
        Ok(())
    }

    /// Writes `data` to GDS from byte `offset`.
    pub fn write_gds(&self, offset: u64, data: &[u32]) -> Result<(), GdsError> {
        let range = self.gds_range(offset, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        let gds = self.gds.get_or_init(|| zeroed(self.gds_bytes as usize / 4));
        if let Some(slots) = gds.get(range) {
            for (slot, value) in slots.iter().zip(data) {
                slot.store(*value, Ordering::Release);
            }
        }
        Ok(())
    }

    /// Fills `len` bytes of GDS from byte `offset` with `value` (whole
    /// dwords).
    pub fn fill_gds(&self, offset: u64, len: u64, value: u32) -> Result<(), GdsError> {
        let dwords = (len / 4) as usize;
        let range = self.gds_range(offset, dwords)?;
        if dwords == 0 {
            return Ok(());
        }
        let gds = self.gds.get_or_init(|| zeroed(self.gds_bytes as usize / 4));
        if let Some(slots) = gds.get(range) {
            for slot in slots {
                slot.store(value, Ordering::Release);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        let g = GlobalState::new(16);
        assert_eq!(g.write_gds(12, &[5]), Ok(()));
        assert_eq!(g.write_gds(16, &[5]), Err(GdsError { offset: 16, len: 4, size: 16 }));
        assert_eq!(g.fill_gds(0, 16, 9), Ok(()));
        let mut out = [0; 4];
        g.read_gds(0, &mut out).unwrap();
        assert_eq!(out, [9; 4]);
        assert!(!g.set_uconfig(0xBFFF, 1));
        assert_eq!(g.uconfig_writes(), 0);
        assert!(g.set_uconfig(0xFFFF, 1));
        assert_eq!(g.uconfig(0xFFFF), 1);
        assert_eq!(g.uconfig_writes(), 1);
    }
}
