//! [`FlatMemory`]: one host allocation mapped at a guest base, the layout
//! most emulators give their guest RAM, shared between the emulated CPU and
//! the queue workers without a lock.
//!
//! Storage is `Box<[AtomicU64]>`, so every access is an atomic access and a
//! concurrent CPU store is never a data race (safe code only). One word size
//! is used for every access: the Rust memory model leaves overlapping atomic
//! accesses of different sizes undefined, so a dword or byte store is a
//! compare-exchange on its containing qword, and a qword store is a plain
//! atomic store. Whole-word loads and stores are `Relaxed` for bulk copies
//! (a plain `mov` on x86-64 and ARM64) and `Acquire`/`Release` for single
//! dword and qword accesses (labels, fences), which is what a CPU thread
//! polling a fence needs to see the data written before it.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{check_access, check_range, GuestMemory, MemoryError};

/// Guest memory made of one zero-initialised host allocation of `len` bytes
/// mapped at guest address `base`; everything else is unmapped.
///
/// Shared by reference: wrap it in an `Arc`, keep one clone in the emulator
/// (its CPU writes through [`GuestMemory`]'s methods) and give the other to
/// the [`crate::gpu::Gpu`].
///
/// # Example
///
/// ```
/// use std::sync::Arc;
/// use pm4core::memory::{FlatMemory, GuestMemory};
///
/// let ram = Arc::new(FlatMemory::new(0x4000_0000, 1 << 20).unwrap());
/// let cpu = Arc::clone(&ram);
/// std::thread::spawn(move || cpu.write_u64(0x4000_0100, u64::MAX).unwrap()).join().unwrap();
/// assert_eq!(ram.read_u64(0x4000_0100).unwrap(), u64::MAX);
/// assert_eq!((ram.base(), ram.len()), (0x4000_0000, 1 << 20));
/// ```
pub struct FlatMemory {
    base: u64,
    len: u64,
    words: Box<[AtomicU64]>,
}

impl std::fmt::Debug for FlatMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FlatMemory({:#x}..{:#x})", self.base, self.base + self.len)
    }
}

/// Replaces the bytes `shift / 8 ..` of a qword selected by `mask` with
/// `value << shift`, as one compare-exchange loop.
#[inline]
fn store_masked(word: &AtomicU64, mask: u64, bits: u64) {
    let mut current = word.load(Ordering::Relaxed);
    loop {
        let new = (current & !mask) | (bits & mask);
        match word.compare_exchange_weak(current, new, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return,
            Err(seen) => current = seen,
        }
    }
}

impl FlatMemory {
    /// `len` zero bytes at guest address `base` (8-byte aligned, inside the
    /// 48-bit space). The allocation is zeroed by the allocator, so untouched
    /// pages of a large memory are typically not committed by the host OS.
    pub fn new(base: u64, len: u64) -> Result<Self, MemoryError> {
        if base % 8 != 0 {
            return Err(MemoryError::Misaligned { address: base });
        }
        check_range(base, len)?;
        let words = usize::try_from(len.div_ceil(8)).map_err(|_| MemoryError::OutOfRange { address: base, len })?;
        let words: Box<[AtomicU64]> = bytemuck::zeroed_slice_box(words);
        Ok(Self { base, len, words })
    }

    /// The guest address of the first byte.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Mapped bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for a memory of zero bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Offset of `[address, address + len)` from the base, if all mapped
    /// (a zero-length access anywhere in the 48-bit space: offset 0).
    #[inline]
    fn offset(&self, address: u64, len: u64) -> Result<u64, MemoryError> {
        let end = check_access(address, len)?;
        if len == 0 {
            return Ok(0);
        }
        if address < self.base || end > self.base + self.len {
            return Err(MemoryError::Unmapped { address, len });
        }
        Ok(address - self.base)
    }

    #[inline]
    fn word(&self, index: u64) -> Result<&AtomicU64, MemoryError> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.words.get(i))
            .ok_or(MemoryError::Unmapped { address: self.base.wrapping_add(index * 8), len: 8 })
    }
}

impl GuestMemory for FlatMemory {
    fn read_bytes(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError> {
        let mut offset = self.offset(address, out.len() as u64)?;
        let mut out = out;
        while !out.is_empty() {
            let word = self.word(offset / 8)?.load(Ordering::Relaxed).to_le_bytes();
            let in_word = (offset % 8) as usize;
            let n = out.len().min(8 - in_word);
            let (head, tail) = out.split_at_mut(n);
            head.copy_from_slice(&word[in_word..in_word + n]);
            out = tail;
            offset += n as u64;
        }
        Ok(())
    }

    fn write_bytes(&self, address: u64, data: &[u8]) -> Result<(), MemoryError> {
        let mut offset = self.offset(address, data.len() as u64)?;
        let mut data = data;
        while !data.is_empty() {
            let word = self.word(offset / 8)?;
            let in_word = (offset % 8) as usize;
            let n = data.len().min(8 - in_word);
            let mut bytes = [0u8; 8];
            bytes[in_word..in_word + n].copy_from_slice(&data[..n]);
            if n == 8 {
                word.store(u64::from_le_bytes(bytes), Ordering::Relaxed);
            } else {
                let mut mask = [0u8; 8];
                mask[in_word..in_word + n].fill(0xFF);
                store_masked(word, u64::from_le_bytes(mask), u64::from_le_bytes(bytes));
            }
            data = &data[n..];
            offset += n as u64;
        }
        Ok(())
    }

    fn is_mapped(&self, address: u64, len: u64) -> bool {
        self.offset(address, len).is_ok()
    }

    fn read_dwords(&self, address: u64, out: &mut [u32]) -> Result<(), MemoryError> {
        let offset = self.offset(address, out.len() as u64 * 4)?;
        if offset % 4 != 0 {
            self.read_bytes(address, bytemuck::cast_slice_mut(out))?;
            out.iter_mut().for_each(|d| *d = u32::from_le(*d));
            return Ok(());
        }
        let mut index = offset / 8;
        let out = match out.split_first_mut() {
            Some((first, rest)) if offset % 8 == 4 => {
                *first = (self.word(index)?.load(Ordering::Relaxed) >> 32) as u32;
                index += 1;
                rest
            }
            _ => out,
        };
        let mut pairs = out.chunks_exact_mut(2);
        for pair in &mut pairs {
            let value = self.word(index)?.load(Ordering::Relaxed);
            pair[0] = value as u32;
            pair[1] = (value >> 32) as u32;
            index += 1;
        }
        if let [last] = pairs.into_remainder() {
            *last = self.word(index)?.load(Ordering::Relaxed) as u32;
        }
        Ok(())
    }

    #[inline]
    fn read_u32(&self, address: u64) -> Result<u32, MemoryError> {
        let offset = self.offset(address, 4)?;
        if offset % 4 != 0 {
            let mut bytes = [0u8; 4];
            self.read_bytes(address, &mut bytes)?;
            return Ok(u32::from_le_bytes(bytes));
        }
        let value = self.word(offset / 8)?.load(Ordering::Acquire);
        Ok((value >> ((offset % 8) * 8)) as u32)
    }

    #[inline]
    fn read_u64(&self, address: u64) -> Result<u64, MemoryError> {
        let offset = self.offset(address, 8)?;
        if offset % 8 != 0 {
            let mut bytes = [0u8; 8];
            self.read_bytes(address, &mut bytes)?;
            return Ok(u64::from_le_bytes(bytes));
        }
        Ok(self.word(offset / 8)?.load(Ordering::Acquire))
    }

    #[inline]
    fn write_u32(&self, address: u64, value: u32) -> Result<(), MemoryError> {
        let offset = self.offset(address, 4)?;
        if offset % 4 != 0 {
            return self.write_bytes(address, &value.to_le_bytes());
        }
        let shift = (offset % 8) * 8;
        store_masked(self.word(offset / 8)?, 0xFFFF_FFFF << shift, u64::from(value) << shift);
        Ok(())
    }

    #[inline]
    fn write_u64(&self, address: u64, value: u64) -> Result<(), MemoryError> {
        let offset = self.offset(address, 8)?;
        if offset % 8 != 0 {
            return self.write_bytes(address, &value.to_le_bytes());
        }
        self.word(offset / 8)?.store(value, Ordering::Release);
        Ok(())
    }

    fn compare_exchange_u32(&self, address: u64, current: u32, new: u32) -> Result<Result<u32, u32>, MemoryError> {
        let offset = self.offset(address, 4)?;
        if offset % 4 != 0 {
            return Err(MemoryError::Misaligned { address });
        }
        let shift = (offset % 8) * 8;
        let word = self.word(offset / 8)?;
        let mask = 0xFFFF_FFFFu64 << shift;
        let mut seen = word.load(Ordering::Acquire);
        loop {
            let value = ((seen & mask) >> shift) as u32;
            if value != current {
                return Ok(Err(value));
            }
            let replaced = (seen & !mask) | (u64::from(new) << shift);
            match word.compare_exchange_weak(seen, replaced, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Ok(Ok(current)),
                // The other half of the qword changed, or a spurious
                // failure: look again.
                Err(now) => seen = now,
            }
        }
    }

    fn compare_exchange_u64(&self, address: u64, current: u64, new: u64) -> Result<Result<u64, u64>, MemoryError> {
        let offset = self.offset(address, 8)?;
        if offset % 8 != 0 {
            return Err(MemoryError::Misaligned { address });
        }
        Ok(self.word(offset / 8)?.compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire))
    }

    fn atomic_update_u32(&self, address: u64, update: &mut dyn FnMut(u32) -> u32) -> Result<u32, MemoryError> {
        let offset = self.offset(address, 4)?;
        if offset % 4 != 0 {
            // Straddles two qwords: no single atomic covers it.
            return Err(MemoryError::Misaligned { address });
        }
        let shift = (offset % 8) * 8;
        let word = self.word(offset / 8)?;
        let previous = word
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                let new = update((w >> shift) as u32);
                Some((w & !(0xFFFF_FFFF << shift)) | (u64::from(new) << shift))
            })
            .unwrap_or_else(|w| w);
        Ok((previous >> shift) as u32)
    }

    fn atomic_update_u64(&self, address: u64, update: &mut dyn FnMut(u64) -> u64) -> Result<u64, MemoryError> {
        let offset = self.offset(address, 8)?;
        if offset % 8 != 0 {
            return Err(MemoryError::Misaligned { address });
        }
        let word = self.word(offset / 8)?;
        Ok(word.fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| Some(update(w))).unwrap_or_else(|w| w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_dwords_and_qwords_at_every_alignment() {
        let m = FlatMemory::new(0x1000, 64).unwrap();
        m.write_bytes(0x1003, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]).unwrap();
        let mut out = [0u8; 12];
        m.read_bytes(0x1002, &mut out).unwrap();
        assert_eq!(out, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0]);
        m.write_u32(0x1014, 0xAABB_CCDD).unwrap();
        assert_eq!(m.read_u64(0x1010).unwrap(), 0xAABB_CCDD_0000_0000);
        m.write_u64(0x1018, 0x1122_3344_5566_7788).unwrap();
        let mut dwords = [0u32; 3];
        m.read_dwords(0x1014, &mut dwords).unwrap();
        assert_eq!(dwords, [0xAABB_CCDD, 0x5566_7788, 0x1122_3344]);
        m.write_u32(0x1021, 0xDEAD_BEEF).unwrap();
        assert_eq!(m.read_u32(0x1021).unwrap(), 0xDEAD_BEEF);
        assert_eq!(m.atomic_update_u32(0x101C, &mut |v| v + 1).unwrap(), 0x1122_3344);
        assert_eq!(m.read_u64(0x1018).unwrap(), 0x1122_3345_5566_7788);
        assert_eq!(m.atomic_update_u64(0x1018, &mut |_| 9).unwrap(), 0x1122_3345_5566_7788);
        assert_eq!(m.read_u64(0x1018).unwrap(), 9);
    }

    #[test]
    fn outside_the_allocation_is_an_error() {
        let m = FlatMemory::new(0x1000, 60).unwrap();
        assert_eq!(m.read_u32(0x103C), Err(MemoryError::Unmapped { address: 0x103C, len: 4 }));
        assert_eq!(m.write_u32(0xFFC, 0), Err(MemoryError::Unmapped { address: 0xFFC, len: 4 }));
        assert!(matches!(m.read_u32(u64::MAX - 1), Err(MemoryError::OutOfRange { .. })));
        assert!(m.is_mapped(0x1038, 4));
        assert!(!m.is_mapped(0x1038, 5));
        assert_eq!(m.atomic_update_u32(0x1006, &mut |v| v), Err(MemoryError::Misaligned { address: 0x1006 }));
        assert!(matches!(FlatMemory::new(0x1004, 8), Err(MemoryError::Misaligned { .. })));
        assert!(matches!(FlatMemory::new(u64::MAX - 8, 8), Err(MemoryError::Misaligned { .. })));
        assert!(matches!(FlatMemory::new(1 << 48, 8), Err(MemoryError::OutOfRange { .. })));
    }

    #[test]
    fn concurrent_dword_stores_to_one_qword_do_not_clobber_each_other() {
        let m = FlatMemory::new(0, 8).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| (0..10_000u32).for_each(|i| m.write_u32(0, i).unwrap()));
            s.spawn(|| (0..10_000u32).for_each(|i| m.write_u32(4, i).unwrap()));
            s.spawn(|| (0..10_000u32).for_each(|_| m.atomic_update_u32(0, &mut |v| v).map(drop).unwrap()));
        });
        assert_eq!(m.read_u64(0).unwrap(), (9_999u64 << 32) | 9_999);
    }

    #[test]
    fn concurrent_atomic_adds_all_land() {
        let m = FlatMemory::new(0, 16).unwrap();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| (0..1000).for_each(|_| m.atomic_update_u64(8, &mut |v| v + 1).map(drop).unwrap()));
            }
        });
        assert_eq!(m.read_u64(8).unwrap(), 4000);
    }
}
