//! [`TranslatedMemory`]: guest memory an emulator reaches through its own
//! functions (translate the guest address, then copy), as emulators that
//! keep guest memory in their own structures do.

use super::{check_access, check_range, GuestMemory, MemoryError};

/// What an emulator provides to let the GPU reach its guest memory through
/// its own functions: read, write and the two compare-exchanges, each
/// translating the guest address itself. [`TranslatedMemory`] builds the
/// whole [`GuestMemory`] contract on them.
///
/// The emulator's side of the contract:
/// - `read` and `write` of a naturally aligned 4 or 8 bytes are single-copy
///   atomic (one load or store of that width on the host, as a `memcpy` of
///   an aligned dword or qword is on x86-64 and ARM64 only when written as
///   one access: use an atomic or volatile access of that width);
/// - `write` is a release store for an aligned 4 or 8 bytes and `read` an
///   acquire load (on x86-64 every plain load and store already is);
/// - the compare-exchanges are indivisible and acquire-release;
/// - an unmapped byte is [`MemoryError::Unmapped`], a refused access
///   [`MemoryError::Protection`]; a failed write writes nothing at or after
///   the error's address;
/// - none of them calls back into the [`Gpu`](crate::gpu::Gpu) (they run
///   inside the GPU's packet processing).
pub trait HostAccess: Send + Sync {
    /// Copies guest bytes `[address, address + out.len())` into `out`.
    fn read(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError>;
    /// Copies `data` to guest bytes from `address` on.
    fn write(&self, address: u64, data: &[u8]) -> Result<(), MemoryError>;
    /// True when every byte of `[address, address + len)` is mapped.
    fn is_mapped(&self, address: u64, len: u64) -> bool;
    /// Stores `new` at the 4-byte aligned `address` if it holds `current`:
    /// `Ok(Ok(current))`, or `Ok(Err(seen))` with the value found.
    fn compare_exchange_u32(&self, address: u64, current: u32, new: u32) -> Result<Result<u32, u32>, MemoryError>;
    /// The 8-byte form of [`HostAccess::compare_exchange_u32`].
    fn compare_exchange_u64(&self, address: u64, current: u64, new: u64) -> Result<Result<u64, u64>, MemoryError>;
}

/// Guest memory over an emulator's own access functions ([`HostAccess`]):
/// the translate-and-copy form, for an emulator whose guest memory is not
/// one host mapping (paged tables, several processes, a copy per access).
/// Zero-length accesses, the 48-bit range and alignment of the atomics
/// are checked here, so the functions see only real accesses.
///
/// # Example
///
/// An emulator that keeps guest memory in its own page table and hands the
/// GPU its accessors:
///
/// ```
/// use std::collections::HashMap;
/// use std::sync::Arc;
/// use parking_lot::Mutex;
/// use pm4core::memory::{GuestMemory, HostAccess, MemoryError, TranslatedMemory};
///
/// /// 4 KiB guest pages, each a host buffer (one lock: atomic by construction).
/// struct PageTable(Mutex<HashMap<u64, Box<[u8; 4096]>>>);
///
/// impl PageTable {
///     fn each(&self, address: u64, len: usize, mut f: impl FnMut(&mut [u8], usize)) -> Result<(), MemoryError> {
///         let mut pages = self.0.lock();
///         if !(0..len).step_by(1).all(|i| pages.contains_key(&((address + i as u64) / 4096))) {
///             return Err(MemoryError::Unmapped { address, len: len as u64 });
///         }
///         for i in 0..len {
///             let a = address + i as u64;
///             let page = pages.get_mut(&(a / 4096)).unwrap();
///             f(&mut page[(a % 4096) as usize..], i);
///         }
///         Ok(())
///     }
/// }
///
/// impl HostAccess for PageTable {
///     fn read(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError> {
///         let mut bytes = vec![0u8; out.len()];
///         self.each(address, out.len(), |host, i| bytes[i] = host[0])?;
///         out.copy_from_slice(&bytes);
///         Ok(())
///     }
///     fn write(&self, address: u64, data: &[u8]) -> Result<(), MemoryError> {
///         self.each(address, data.len(), |host, i| host[0] = data[i])
///     }
///     fn is_mapped(&self, address: u64, len: u64) -> bool {
///         let pages = self.0.lock();
///         (address / 4096..=(address + len.max(1) - 1) / 4096).all(|p| pages.contains_key(&p))
///     }
///     fn compare_exchange_u32(&self, address: u64, current: u32, new: u32) -> Result<Result<u32, u32>, MemoryError> {
///         let mut bytes = [0u8; 4];
///         self.read(address, &mut bytes)?; // (a real table holds its lock across both)
///         let seen = u32::from_le_bytes(bytes);
///         if seen != current { return Ok(Err(seen)); }
///         self.write(address, &new.to_le_bytes()).map(|()| Ok(seen))
///     }
///     fn compare_exchange_u64(&self, address: u64, current: u64, new: u64) -> Result<Result<u64, u64>, MemoryError> {
///         let mut bytes = [0u8; 8];
///         self.read(address, &mut bytes)?;
///         let seen = u64::from_le_bytes(bytes);
///         if seen != current { return Ok(Err(seen)); }
///         self.write(address, &new.to_le_bytes()).map(|()| Ok(seen))
///     }
/// }
///
/// let table = PageTable(Mutex::new(HashMap::from([(0x10, Box::new([0u8; 4096]))])));
/// let memory = Arc::new(TranslatedMemory::new(table));
/// memory.write_u32(0x10_040, 7).unwrap();
/// assert_eq!(memory.atomic_update_u32(0x10_040, &mut |v| v * 3).unwrap(), 7);
/// assert_eq!(memory.read_u32(0x10_040).unwrap(), 21);
/// assert_eq!(memory.read_u32(0x20_000), Err(MemoryError::Unmapped { address: 0x20_000, len: 4 }));
/// assert_eq!(memory.compare_exchange_u32(0x10_042, 0, 1), Err(MemoryError::Misaligned { address: 0x10_042 }));
/// ```
#[derive(Debug, Default)]
pub struct TranslatedMemory<A> {
    access: A,
}

impl<A: HostAccess> TranslatedMemory<A> {
    /// Guest memory over `access`.
    pub fn new(access: A) -> Self {
        Self { access }
    }

    /// The emulator's accessors.
    pub fn access(&self) -> &A {
        &self.access
    }

    /// The accessors back.
    pub fn into_inner(self) -> A {
        self.access
    }

    /// `N` bytes at `address`, read in one call (single-copy atomic when
    /// aligned, by the accessors' contract).
    #[inline]
    fn read_array<const N: usize>(&self, address: u64) -> Result<[u8; N], MemoryError> {
        check_range(address, N as u64)?;
        let mut bytes = [0u8; N];
        self.access.read(address, &mut bytes)?;
        Ok(bytes)
    }

    #[inline]
    fn aligned(address: u64, width: u64) -> Result<(), MemoryError> {
        check_range(address, width)?;
        if address % width != 0 {
            return Err(MemoryError::Misaligned { address });
        }
        Ok(())
    }
}

impl<A: HostAccess> GuestMemory for TranslatedMemory<A> {
    fn read_bytes(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError> {
        check_access(address, out.len() as u64)?;
        if out.is_empty() {
            return Ok(());
        }
        self.access.read(address, out)
    }

    fn write_bytes(&self, address: u64, data: &[u8]) -> Result<(), MemoryError> {
        check_access(address, data.len() as u64)?;
        if data.is_empty() {
            return Ok(());
        }
        self.access.write(address, data)
    }

    fn is_mapped(&self, address: u64, len: u64) -> bool {
        check_access(address, len).is_ok() && (len == 0 || self.access.is_mapped(address, len))
    }

    #[inline]
    fn read_u32(&self, address: u64) -> Result<u32, MemoryError> {
        self.read_array(address).map(u32::from_le_bytes)
    }

    #[inline]
    fn read_u64(&self, address: u64) -> Result<u64, MemoryError> {
        self.read_array(address).map(u64::from_le_bytes)
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
        Self::aligned(address, 4)?;
        self.access.compare_exchange_u32(address, current, new)
    }

    fn compare_exchange_u64(&self, address: u64, current: u64, new: u64) -> Result<Result<u64, u64>, MemoryError> {
        Self::aligned(address, 8)?;
        self.access.compare_exchange_u64(address, current, new)
    }
}
