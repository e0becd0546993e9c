//! Bounded little-endian reads from byte slices.
//!
//! Every decoder in this module reads through these helpers: a read that
//! would run past the end of its slice is `None` (or a
//! [`ShaderError::Truncated`] naming what was being read), never a panic.

use super::ShaderError;

/// `len` bytes at `offset`, or `None` when they are not all inside `bytes`.
#[inline]
pub(crate) fn sub(bytes: &[u8], offset: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    let len = usize::try_from(len).ok()?;
    bytes.get(start..start.checked_add(len)?)
}

#[inline]
pub(crate) fn u8_at(bytes: &[u8], offset: u64) -> Option<u8> {
    bytes.get(usize::try_from(offset).ok()?).copied()
}

#[inline]
pub(crate) fn u16_at(bytes: &[u8], offset: u64) -> Option<u16> {
    sub(bytes, offset, 2)?.try_into().ok().map(u16::from_le_bytes)
}

#[inline]
pub(crate) fn u32_at(bytes: &[u8], offset: u64) -> Option<u32> {
    sub(bytes, offset, 4)?.try_into().ok().map(u32::from_le_bytes)
}

#[inline]
pub(crate) fn u64_at(bytes: &[u8], offset: u64) -> Option<u64> {
    sub(bytes, offset, 8)?.try_into().ok().map(u64::from_le_bytes)
}

/// A read that names what it reads, for error messages.
#[derive(Clone, Copy)]
pub(crate) struct Bytes<'a> {
    pub(crate) bytes: &'a [u8],
}

impl<'a> Bytes<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    pub(crate) fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn truncated(&self, what: &'static str, offset: u64, len: u64) -> ShaderError {
        ShaderError::Truncated { what, offset, len, available: self.len() }
    }

    pub(crate) fn sub(&self, what: &'static str, offset: u64, len: u64) -> Result<&'a [u8], ShaderError> {
        sub(self.bytes, offset, len).ok_or_else(|| self.truncated(what, offset, len))
    }

    #[cfg_attr(not(feature = "legacy-shaders"), allow(dead_code))]
    pub(crate) fn u8(&self, what: &'static str, offset: u64) -> Result<u8, ShaderError> {
        u8_at(self.bytes, offset).ok_or_else(|| self.truncated(what, offset, 1))
    }

    #[cfg_attr(not(feature = "legacy-shaders"), allow(dead_code))]
    pub(crate) fn u16(&self, what: &'static str, offset: u64) -> Result<u16, ShaderError> {
        u16_at(self.bytes, offset).ok_or_else(|| self.truncated(what, offset, 2))
    }

    #[cfg_attr(not(feature = "legacy-shaders"), allow(dead_code))]
    pub(crate) fn u32(&self, what: &'static str, offset: u64) -> Result<u32, ShaderError> {
        u32_at(self.bytes, offset).ok_or_else(|| self.truncated(what, offset, 4))
    }

    #[cfg_attr(not(feature = "legacy-shaders"), allow(dead_code))]
    pub(crate) fn u64(&self, what: &'static str, offset: u64) -> Result<u64, ShaderError> {
        u64_at(self.bytes, offset).ok_or_else(|| self.truncated(what, offset, 8))
    }
}

/// Rounds `value` up to a multiple of `align` (a power of two), or `None` on
/// overflow.
#[inline]
#[cfg_attr(not(feature = "legacy-shaders"), allow(dead_code))]
pub(crate) fn align_up(value: u64, align: u64) -> Option<u64> {
    let mask = align.checked_sub(1)?;
    Some(value.checked_add(mask)? & !mask)
}

/// Writes a little-endian value into `out` at `offset` when it fits; returns
/// whether it did. Used by the builders and corruption helpers.
pub(crate) fn put(out: &mut [u8], offset: usize, value: &[u8]) -> bool {
    match offset.checked_add(value.len()).and_then(|end| out.get_mut(offset..end)) {
        Some(dst) => {
            dst.copy_from_slice(value);
            true
        }
        None => false,
    }
}
