//! [`LentDwords`]: dwords a memory lends to a reader instead of copying them.

use std::sync::Arc;

/// Dwords a [`GuestMemory`](super::GuestMemory) lends instead of copying
/// ([`GuestMemory::lend_dwords`](super::GuestMemory::lend_dwords)): a range of a shared, read-only byte
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
