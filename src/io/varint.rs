//! LEB128 varints, the compact integers of the index's per-document files (`origins.bin`,
//! `copies.bin`) and of band row files' documents: 7 bits a byte, the high bit set on every byte but the last; and a reader of
//! such files that also takes fixed-size fields.

/// Appends `v` as a varint.
pub(crate) fn put(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads varints from a byte slice, front to back.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, at: 0 }
    }

    /// The next varint; None at the end, or where one is cut short or longer than 5 bytes
    /// (then nothing is consumed, so [`Reader::done`] stays false).
    pub(crate) fn varint(&mut self) -> Option<u32> {
        let (mut v, mut shift, mut at) = (0u32, 0u32, self.at);
        loop {
            let b = *self.bytes.get(at)?;
            at += 1;
            v |= u32::from(b & 0x7f).checked_shl(shift)?;
            if b & 0x80 == 0 {
                self.at = at;
                return Some(v);
            }
            shift += 7;
            if shift > 28 {
                return None;
            }
        }
    }

    /// The next 4 bytes as a little-endian u32 (None past the end).
    pub(crate) fn u32_le(&mut self) -> Option<u32> {
        self.bytes(4).map(|b| super::u32_at(b, 0))
    }

    /// The next `n` bytes (None past the end).
    pub(crate) fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    /// The bytes not read yet.
    pub(crate) fn rest(&self) -> &'a [u8] {
        &self.bytes[self.at..]
    }

    /// Whether every byte was read.
    pub(crate) fn done(&self) -> bool {
        self.at == self.bytes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trip(values in proptest::collection::vec(any::<u32>(), 0..50)) {
            let mut bytes = Vec::new();
            for &v in &values {
                put(&mut bytes, v);
            }
            let mut r = Reader::new(&bytes);
            let back: Vec<u32> = std::iter::from_fn(|| r.varint()).collect();
            prop_assert_eq!(back, values);
            prop_assert!(r.done());
        }
    }

    #[test]
    fn a_cut_varint_is_none() {
        let mut bytes = Vec::new();
        put(&mut bytes, 300);
        let mut r = Reader::new(&bytes[..1]);
        assert_eq!(r.varint(), None);
        assert!(!r.done());
        assert_eq!(Reader::new(&[0xff; 6]).varint(), None);
    }
}
