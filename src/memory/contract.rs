//! A check of the [`GuestMemory`] contract, for an emulator's own
//! implementation (and the crate's): [`check`] runs every promise the GPU
//! relies on against a scratch range of the memory and says which one
//! fails.

use std::sync::atomic::{AtomicBool, Ordering};

use super::{GuestMemory, MemoryError, ADDRESS_SPACE_END};

/// A promise of the [`GuestMemory`] contract that an implementation broke.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("guest memory contract broken: {what}")]
pub struct ContractViolation {
    /// What was asked and what came back.
    pub what: String,
}

fn broken<T>(what: impl Into<String>) -> Result<T, ContractViolation> {
    Err(ContractViolation { what: what.into() })
}

fn expect<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<(), ContractViolation> {
    if got == want {
        Ok(())
    } else {
        broken(format!("{what}: got {got:?}, want {want:?}"))
    }
}

/// Runs the contract against `memory`: `[base, base + 4096)` must be
/// mapped, writable and not used by anything else meanwhile (it is
/// overwritten), `base` 8-byte aligned, and `unmapped` an address with
/// nothing mapped in its first 16 bytes. Takes a few milliseconds: besides
/// single-threaded checks of every method, four threads race on atomic
/// updates and on torn-dword detection.
///
/// ```
/// use pm4core::memory::{contract, FlatMemory, SparseMemory};
///
/// contract::check(&FlatMemory::new(0x1000, 0x2000).unwrap(), 0x1000, 0x10_0000).unwrap();
/// let sparse = SparseMemory::new();
/// sparse.map_zeroed(0x4000, 0x1000).unwrap();
/// contract::check(&sparse, 0x4000, 0x9000).unwrap();
/// ```
pub fn check<M: GuestMemory + ?Sized>(memory: &M, base: u64, unmapped: u64) -> Result<(), ContractViolation> {
    if base % 8 != 0 || !memory.is_mapped(base, 4096) {
        return broken(format!("the scratch range {base:#x}..+4096 must be 8-byte aligned and mapped"));
    }
    single_threaded(memory, base, unmapped)?;
    races(memory, base)
}

fn single_threaded<M: GuestMemory + ?Sized>(m: &M, base: u64, unmapped: u64) -> Result<(), ContractViolation> {
    let err = |r: Result<(), MemoryError>| r.map_err(|e| ContractViolation { what: format!("unexpected error: {e}") });
    // Bytes, dwords and qwords at every alignment, little-endian.
    err(m.write_bytes(base, &[0; 1024]))?;
    err(m.write_bytes(base + 3, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]))?;
    let mut out = [0u8; 12];
    err(m.read_bytes(base + 2, &mut out))?;
    expect("bytes written at an odd address read back", out, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0])?;
    err(m.write_u32(base + 16, 0xAABB_CCDD))?;
    expect("a dword is little-endian", m.read_u64(base + 16).ok(), Some(0xAABB_CCDD))?;
    err(m.write_u64(base + 24, 0x1122_3344_5566_7788))?;
    let mut dwords = [0u32; 3];
    err(m.read_dwords(base + 20, &mut dwords))?;
    expect("read_dwords", dwords, [0, 0x5566_7788, 0x1122_3344])?;
    err(m.write_u32(base + 41, 0xDEAD_BEEF))?;
    expect("an unaligned dword round-trips", m.read_u32(base + 41).ok(), Some(0xDEAD_BEEF))?;
    // Compare-exchange and the atomic updates built on it.
    err(m.write_u32(base + 48, 5))?;
    expect("compare_exchange_u32 that matches", m.compare_exchange_u32(base + 48, 5, 6), Ok(Ok(5)))?;
    expect("compare_exchange_u32 that does not", m.compare_exchange_u32(base + 48, 5, 7), Ok(Err(6)))?;
    expect("after the compare-exchanges", m.read_u32(base + 48).ok(), Some(6))?;
    err(m.write_u64(base + 56, u64::MAX))?;
    expect("compare_exchange_u64", m.compare_exchange_u64(base + 56, u64::MAX, 1), Ok(Ok(u64::MAX)))?;
    expect("atomic_update_u64 returns the old value", m.atomic_update_u64(base + 56, &mut |v| v + 2), Ok(1))?;
    expect("atomic_update_u32 returns the old value", m.atomic_update_u32(base + 48, &mut |v| v * 2), Ok(6))?;
    expect("after the atomic updates", (m.read_u32(base + 48).ok(), m.read_u64(base + 56).ok()), (Some(12), Some(3)))?;
    expect(
        "compare_exchange_u32 at an unaligned address",
        m.compare_exchange_u32(base + 50, 0, 0),
        Err(MemoryError::Misaligned { address: base + 50 }),
    )?;
    expect(
        "compare_exchange_u64 at an address 4 but not 8 aligned",
        m.compare_exchange_u64(base + 52, 0, 0),
        Err(MemoryError::Misaligned { address: base + 52 }),
    )?;
    // Fill and copy, overlapping as memmove.
    err(m.fill(base + 256, 40, 0x0403_0201))?;
    let mut filled = [0u8; 8];
    err(m.read_bytes(base + 292, &mut filled))?;
    expect("fill's pattern and its end", filled, [1, 2, 3, 4, 0, 0, 0, 0])?;
    err(m.copy(base + 258, base + 256, 40))?;
    let mut copied = [0u8; 6];
    err(m.read_bytes(base + 256, &mut copied))?;
    expect("an overlapping copy moves as memmove", copied, [1, 2, 1, 2, 3, 4])?;
    // Ranges.
    expect("a zero-length read of mapped memory", m.read_bytes(base, &mut []), Ok(()))?;
    expect("a zero-length read of unmapped memory", m.read_bytes(unmapped, &mut []), Ok(()))?;
    expect("is_mapped of zero bytes anywhere in the space", m.is_mapped(unmapped, 0), true)?;
    expect("is_mapped of unmapped bytes", m.is_mapped(unmapped, 4), false)?;
    expect("is_mapped past the 48-bit space", m.is_mapped(ADDRESS_SPACE_END - 2, 4), false)?;
    expect("a zero-length write at the end of the space", m.write_bytes(ADDRESS_SPACE_END, &[]).is_err(), true)?;
    match m.read_u32(unmapped) {
        Err(MemoryError::Unmapped { .. } | MemoryError::Protection { .. }) => {}
        other => return broken(format!("read_u32 of unmapped {unmapped:#x}: got {other:?}, want Unmapped")),
    }
    match m.write_u32(ADDRESS_SPACE_END - 2, 0) {
        Err(MemoryError::OutOfRange { .. } | MemoryError::Unmapped { .. }) => {}
        other => return broken(format!("a write past the 48-bit space: got {other:?}, want OutOfRange")),
    }
    // A fill or copy that runs off the mapping writes nothing.
    err(m.write_u32(base + 512, 0x5A5A_5A5A))?;
    if m.fill(base + 512, unmapped.wrapping_sub(base + 512).saturating_add(16), 0).is_ok() {
        return broken("a fill running into unmapped memory succeeded");
    }
    expect("a refused fill writes nothing", m.read_u32(base + 512).ok(), Some(0x5A5A_5A5A))?;
    Ok(())
}

fn races<M: GuestMemory + ?Sized>(m: &M, base: u64) -> Result<(), ContractViolation> {
    let counter = base + 1024;
    let halves = base + 1032;
    let flicker = base + 1040;
    let err = |r: Result<(), MemoryError>| r.map_err(|e| ContractViolation { what: format!("unexpected error: {e}") });
    err(m.write_u64(counter, 0))?;
    err(m.write_u64(halves, 0))?;
    err(m.write_u64(flicker, 0))?;
    let torn = AtomicBool::new(false);
    let failed = AtomicBool::new(false);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..1000 {
                    if m.atomic_update_u32(counter, &mut |v| v.wrapping_add(1)).is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                }
            });
        }
        // Two writers to the two dwords of one qword must not clobber each other.
        s.spawn(|| {
            (0..2000u32).for_each(|i| {
                let _ = m.write_u32(halves, i);
            })
        });
        s.spawn(|| {
            (0..2000u32).for_each(|i| {
                let _ = m.write_u32(halves + 4, i);
            })
        });
        // A dword flipping between all-zero and all-one bits is never seen mixed.
        s.spawn(|| {
            (0..4000u32).for_each(|i| {
                let _ = m.write_u32(flicker, if i % 2 == 0 { 0 } else { u32::MAX });
            })
        });
        s.spawn(|| {
            for _ in 0..4000 {
                if let Ok(v) = m.read_u32(flicker) {
                    if v != 0 && v != u32::MAX {
                        torn.store(true, Ordering::Relaxed);
                    }
                }
            }
        });
    });
    if failed.load(Ordering::Relaxed) {
        return broken("atomic_update_u32 failed on mapped, aligned memory");
    }
    expect("4 threads x 1000 atomic increments", m.read_u32(counter).ok(), Some(4000))?;
    expect("two dword writers into one qword", m.read_u64(halves).ok(), Some((1999u64 << 32) | 1999))?;
    if torn.load(Ordering::Relaxed) {
        return broken("an aligned dword was read torn");
    }
    Ok(())
}
