//! One written page, and what a write lays down ([`WriteSource`]).

use super::regions::Region;
use crate::memory::PAGE_SIZE;

/// A written page of a [`Region`]: its bytes, or four bytes repeated over
/// the whole page, which is what a fill of the whole page (or a copy of a
/// whole page holding one) leaves, kept as the four bytes rather than
/// written 4 KiB at a time. The page's buffer stays allocated either way.
/// A later write into part of such a page keeps the pattern around it:
/// the page holds the pattern except for one range written over it, which
/// grows to cover each write (the pattern written into the gap between
/// the old range and the new one, if any), so a small write into a
/// cleared buffer writes its own bytes, not the page's 4 KiB.
#[derive(Clone)]
pub(super) struct Page {
    pub(super) bytes: Box<[u8; PAGE_SIZE]>,
    /// When set, byte `i` of the page is `pattern[i % 4]`, except for the
    /// `written` range, whose bytes are in `bytes`; the rest of `bytes` is
    /// stale.
    pub(super) pattern: Option<[u8; 4]>,
    /// With a pattern: the bytes written over it, `start..end` (empty when
    /// `start == end`).
    pub(super) written: (u16, u16),
}

impl Page {
    /// Writes the whole page from `source`: just its pattern when it has
    /// one, else its bytes (the page's old pattern is not written out
    /// first: every byte is replaced).
    #[inline]
    pub(super) fn write_whole(&mut self, source: WriteSource<'_>) {
        self.pattern = source.page_pattern();
        self.written = (0, 0);
        if self.pattern.is_none() {
            source.write_into(&mut self.bytes[..]);
        }
    }

    /// Makes the page a copy of `source`, a whole page of another region
    /// (its pattern and the range written over it, or its bytes).
    #[inline]
    pub(super) fn copy_whole(&mut self, source: &Page) {
        self.pattern = source.pattern;
        self.written = source.written;
        if source.whole_pattern().is_none() {
            self.bytes.copy_from_slice(&source.bytes[..]);
        }
    }

    /// A page holding `pattern` whole.
    pub(super) fn of_pattern(pattern: [u8; 4]) -> Page {
        Page { bytes: Box::new([0u8; PAGE_SIZE]), pattern: Some(pattern), written: (0, 0) }
    }

    /// A page holding `bytes`.
    pub(super) fn of_bytes(bytes: Box<[u8; PAGE_SIZE]>) -> Page {
        Page { bytes, pattern: None, written: (0, 0) }
    }

    /// The pattern the whole page holds, if it holds one whole.
    pub(super) fn whole_pattern(&self) -> Option<[u8; 4]> {
        self.pattern.filter(|_| self.written.0 == self.written.1)
    }

    /// Bytes `start..end` of the page (`start <= end <= PAGE_SIZE`), for a
    /// write of every one of them. On a page holding a pattern, the range
    /// written over it grows to cover them, the pattern going into the gap
    /// between the range and them, if any, and nowhere else. Once the range
    /// would cover more than half the page, the page takes its bytes
    /// instead (the pattern written out around the range), so that a page
    /// written all over in small pieces (query results) is not read and
    /// written as pattern and range for ever.
    #[inline(always)]
    pub(super) fn writable(&mut self, start: usize, end: usize) -> &mut [u8] {
        if let Some(pattern) = self.pattern {
            self.write_over_pattern(pattern, start, end);
        }
        self.bytes.get_mut(start..end).unwrap_or_default()
    }

    /// [`Page::writable`]'s work on a page holding `pattern`.
    #[inline(never)]
    pub(super) fn write_over_pattern(&mut self, pattern: [u8; 4], start: usize, end: usize) {
        let (old_start, old_end) = (usize::from(self.written.0), usize::from(self.written.1));
        let (low, high) = if old_start == old_end { (start, end) } else { (old_start.min(start), old_end.max(end)) };
        if high - low > PAGE_SIZE / 2 {
            // Keep the bytes written over the pattern (none when the
            // range is empty), the pattern everywhere else.
            let (keep_start, keep_end) = if old_start == old_end { (0, 0) } else { (old_start, old_end) };
            if let Some(out) = self.bytes.get_mut(..keep_start) {
                fill_pattern(out, pattern);
            }
            if let Some(out) = self.bytes.get_mut(keep_end..) {
                fill_pattern(out, rotate_pattern(pattern, keep_end));
            }
            self.pattern = None;
        } else {
            // The gap between the range written and this one: pattern.
            let gap = if end < old_start { end..old_start } else { old_end.min(start)..start };
            if let Some(out) = self.bytes.get_mut(gap.clone()) {
                fill_pattern(out, rotate_pattern(pattern, gap.start));
            }
            self.written = (low as u16, high as u16);
        }
    }

    /// Copies the page's bytes from `in_page` on into `out` (which fits).
    #[inline]
    pub(super) fn read(&self, in_page: usize, out: &mut [u8]) {
        let end = in_page + out.len();
        match self.pattern {
            Some(pattern) => {
                fill_pattern(out, rotate_pattern(pattern, in_page));
                // Then the bytes written over the pattern, where they meet.
                let (low, high) = (usize::from(self.written.0).max(in_page), usize::from(self.written.1).min(end));
                if let (Some(dst), Some(src)) =
                    (out.get_mut(low.wrapping_sub(in_page)..high.wrapping_sub(in_page)), self.bytes.get(low..high))
                {
                    dst.copy_from_slice(src);
                }
            }
            None => {
                if let Some(src) = self.bytes.get(in_page..end) {
                    out.copy_from_slice(src);
                }
            }
        }
    }
}

/// What a write lays down, from its first byte on: the one description
/// of a write's bytes that [`Regions::write_with`] and
/// [`Region::write_with`] take. A piece of the write is the source from
/// its place on ([`WriteSource::skip`]); a whole page of it may be known
/// to be four bytes repeated ([`WriteSource::page_pattern`]).
#[derive(Clone, Copy)]
pub(super) enum WriteSource<'a> {
    /// These bytes (a host or packet write).
    Bytes(&'a [u8]),
    /// Four bytes repeated: byte `i` is `pattern[i % 4]` (a fill).
    Pattern([u8; 4]),
    /// Another region's bytes from `offset` on (a copy from one region
    /// into another).
    Region { region: &'a Region, offset: u64 },
}

impl WriteSource<'_> {
    /// The source from `n` bytes in.
    #[inline]
    pub(super) fn skip(self, n: usize) -> Self {
        match self {
            WriteSource::Bytes(bytes) => WriteSource::Bytes(bytes.get(n..).unwrap_or_default()),
            WriteSource::Pattern(pattern) => WriteSource::Pattern(rotate_pattern(pattern, n)),
            WriteSource::Region { region, offset } => WriteSource::Region { region, offset: offset + n as u64 },
        }
    }

    /// Writes the source's first `out.len()` bytes into `out` (a region
    /// source's range is inside its region).
    #[inline]
    pub(super) fn write_into(self, out: &mut [u8]) {
        match self {
            WriteSource::Bytes(bytes) => {
                if let Some(src) = bytes.get(..out.len()) {
                    out.copy_from_slice(src);
                }
            }
            WriteSource::Pattern(pattern) => fill_pattern(out, pattern),
            WriteSource::Region { region, offset } => region.read(offset, out),
        }
    }

    /// The four bytes repeated over the source's first page's worth of
    /// bytes, when that is known without looking at them: a fill's, or a
    /// region page's (see [`Region::page_pattern`]).
    #[inline]
    pub(super) fn page_pattern(self) -> Option<[u8; 4]> {
        match self {
            WriteSource::Bytes(_) => None,
            WriteSource::Pattern(pattern) => Some(pattern),
            WriteSource::Region { region, offset } => region.page_pattern(offset),
        }
    }
}

/// `pattern` seen from `phase` bytes in: byte `i` of the result is byte
/// `(phase + i) % 4` of `pattern`.
pub(super) fn rotate_pattern(pattern: [u8; 4], phase: usize) -> [u8; 4] {
    // Little-endian: byte `k` of the word is bits 8k..8k+8.
    u32::from_le_bytes(pattern).rotate_right(8 * (phase % 4) as u32).to_le_bytes()
}

/// Writes `pattern` repeated over `out` (byte `i` is `pattern[i % 4]`),
/// 64 bytes at a time.
pub(super) fn fill_pattern(out: &mut [u8], pattern: [u8; 4]) {
    let mut block = [0u8; 64];
    for chunk in block.chunks_exact_mut(4) {
        chunk.copy_from_slice(&pattern);
    }
    let mut blocks = out.chunks_exact_mut(64);
    for chunk in blocks.by_ref() {
        chunk.copy_from_slice(&block);
    }
    let rest = blocks.into_remainder();
    let n = rest.len();
    if let Some(src) = block.get(..n) {
        rest.copy_from_slice(src);
    }
}
