//! LEB128 varints, the compact integers of the index's per-document files (`origins.bin`,
//! `copies.bin`) and of band row files' documents: 7 bits a byte, the high bit set on every byte but the last; and a reader of
//! such files that also takes fixed-size fields.

/// Appends `v` as a varint.
pub(crate) fn put(out: &mut Vec<u8>, v: u32) {
    put_u64(out, u64::from(v));
}

/// Appends `v` as a varint (the same bytes as [`put`] below 2^32; up to 10 bytes).
pub(crate) fn put_u64(out: &mut Vec<u8>, mut v: u64) {
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
        let at = self.at;
        let v = self.varint_u64().and_then(|v| u32::try_from(v).ok());
        if v.is_none() {
            self.at = at;
        }
        v
    }

    /// The next varint of up to 64 bits; None as for [`Reader::varint`] (longer than 10 bytes).
    pub(crate) fn varint_u64(&mut self) -> Option<u64> {
        // Most values are below 128: one byte.
        if let Some(&b) = self.bytes.get(self.at).filter(|&&b| b < 0x80) {
            self.at += 1;
            return Some(u64::from(b));
        }
        let (mut v, mut shift, mut at) = (0u64, 0u32, self.at);
        loop {
            let b = *self.bytes.get(at)?;
            at += 1;
            let bits = u64::from(b & 0x7f);
            // The 10th byte may hold one bit only.
            if shift == 63 && bits > 1 {
                return None;
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                self.at = at;
                return Some(v);
            }
            shift += 7;
            if shift > 63 {
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
        /// Values of either width read back; below 2^32 both writers give the same bytes.
        #[test]
        fn round_trip(values in proptest::collection::vec(any::<u64>().prop_map(|v| v >> (v % 64)), 0..50)) {
            let (mut bytes, mut narrow) = (Vec::new(), Vec::new());
            for &v in &values {
                put_u64(&mut bytes, v);
                if let Ok(v) = u32::try_from(v) {
                    put(&mut narrow, v);
                }
            }
            let mut r = Reader::new(&bytes);
            let back: Vec<u64> = std::iter::from_fn(|| r.varint_u64()).collect();
            prop_assert_eq!(&back, &values);
            prop_assert!(r.done());
            let mut r = Reader::new(&narrow);
            let small: Vec<u64> = std::iter::from_fn(|| r.varint().map(u64::from)).collect();
            let want: Vec<u64> = values.iter().copied().filter(|&v| v <= u64::from(u32::MAX)).collect();
            prop_assert_eq!(small, want);
            prop_assert!(r.done());
        }
    }

    #[test]
    fn a_varint_too_wide_is_none() {
        let mut bytes = Vec::new();
        put_u64(&mut bytes, u64::from(u32::MAX) + 1);
        assert_eq!(Reader::new(&bytes).varint(), None);
        assert_eq!(Reader::new(&bytes).varint_u64(), Some(1 << 32));
        // 11 bytes, or a 10th byte with more than the top bit.
        assert_eq!(Reader::new(&[0xff; 11]).varint_u64(), None);
        let mut over = vec![0xff; 9];
        over.push(0x02);
        assert_eq!(Reader::new(&over).varint_u64(), None);
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
