//! Reading a fuzz input as a little-endian byte stream that never runs dry:
//! past the end every field reads as zero and every slice as empty.

/// A fuzz input, consumed front to back.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    /// Starts at the first byte of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Input { data }
    }

    /// Bytes not consumed yet.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True when every byte is consumed.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Up to `n` bytes (fewer when the input ends first).
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, tail) = self.data.split_at(n.min(self.data.len()));
        self.data = tail;
        head
    }

    /// `N` bytes, zero-filled past the end.
    pub fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let got = self.bytes(N);
        if let Some(dst) = out.get_mut(..got.len()) {
            dst.copy_from_slice(got);
        }
        out
    }

    pub fn u8(&mut self) -> u8 {
        u8::from_le_bytes(self.array())
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.array())
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }

    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }

    /// Everything not consumed yet.
    pub fn rest(self) -> &'a [u8] {
        self.data
    }
}
