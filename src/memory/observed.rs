//! [`ObservedMemory`]: the crate's one write-watcher.

use super::{GuestMemory, LentDwords, MemoryError};

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

    #[inline]
    fn compare_exchange_u32(&self, address: u64, current: u32, new: u32) -> Result<Result<u32, u32>, MemoryError> {
        self.observer.wrote(address, 4);
        self.inner.compare_exchange_u32(address, current, new)
    }

    #[inline]
    fn compare_exchange_u64(&self, address: u64, current: u64, new: u64) -> Result<Result<u64, u64>, MemoryError> {
        self.observer.wrote(address, 8);
        self.inner.compare_exchange_u64(address, current, new)
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
