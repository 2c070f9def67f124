//! Band row files: the (bucket, document) rows one signatures task wrote for one band and bucket
//! range, read whole by that band's candidates task.
//!
//! Format of `bands/bBBB-rRRR/pPPPPP.bin`, little-endian:
//! ```text
//! header  "CDBANDS2" | rows: u64 | xxh3-64 of the body: u64     (24 bytes)
//! body    bucket: [u64; rows]                                   (8 bytes per row)
//!         doc: [varint; rows], each the difference from the row before (the first: from 0)
//!                                                               (~1 byte per row)
//!         SimHash only: fingerprint: [u64; rows]                (8 more bytes per row)
//! ```
//! `doc` is the document's position in its part, which a reader adds the part's first document
//! number to: a signatures task need not know how many documents the parts before its own hold.
//! A task writes its rows in document order, so the differences are small (1 where every
//! document has a row in the file): a byte a row where four were, a fifth of the work directory
//! less on short documents. Differences wrap (a u32 difference), so any order reads back. The
//! varints are LEB128 ([`crate::io::varint`]).
//! SimHash rows carry each document's fingerprint, so the candidates task checks the Hamming
//! distance of a bucket's pairs without reading the store; the length left after the documents
//! tells which it is. Plain arrays instead of Parquet: the buckets are random 64-bit hashes,
//! which no encoding shrinks, and Parquet's writer spent its time trying a dictionary for them.
//! The checksum is verified on every read. Files are written whole under a temporary name (or as
//! one object) and renamed.

use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::io::varint;

const MAGIC: &[u8; 8] = b"CDBANDS2";
const HEADER: usize = 24;

/// Encodes rows `(bucket[i], doc[i])`, with `values[i]` when `values` is not empty (equal
/// lengths).
pub(crate) fn encode(bucket: &[u64], doc: &[u32], values: &[u64]) -> Vec<u8> {
    debug_assert_eq!(bucket.len(), doc.len());
    debug_assert!(values.is_empty() || values.len() == doc.len());
    let mut out =
        Vec::with_capacity(HEADER + (9 + 8 * usize::from(!values.is_empty())) * doc.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(doc.len() as u64).to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    for b in bucket {
        out.extend_from_slice(&b.to_le_bytes());
    }
    let mut before = 0u32;
    for &d in doc {
        varint::put(&mut out, d.wrapping_sub(before));
        before = d;
    }
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let check = xxh3_64(&out[HEADER..]);
    out[16..24].copy_from_slice(&check.to_le_bytes());
    out
}

/// Reads the rows of the file `name`, calling `row(bucket, doc, value)` for each, in order
/// (`value` is 0 in a file without values).
pub(crate) fn read(work: &OutputDir, name: &str, mut row: impl FnMut(u64, u32, u64)) -> Result<()> {
    let bad = |msg: &str| Error::WorkFile {
        path: work.location(name),
        source: msg.into(),
    };
    let bytes = work.read(name)?.ok_or_else(|| bad("missing"))?;
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return Err(bad("not a band row file (bad header)"));
    }
    let word = |b: &[u8]| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&b[..8]);
        u64::from_le_bytes(x)
    };
    let rows = word(&bytes[8..]);
    let truncated = || bad("length does not match the row count (truncated?)");
    let buckets_end = rows
        .checked_mul(8)
        .and_then(|b| usize::try_from(b).ok())
        .and_then(|b| b.checked_add(HEADER))
        .filter(|&end| end <= bytes.len())
        .ok_or_else(truncated)?;
    let n = rows as usize;
    let mut docs = varint::Reader::new(&bytes[buckets_end..]);
    let mut doc = Vec::with_capacity(n);
    let mut at = 0u32;
    for _ in 0..n {
        at = at.wrapping_add(docs.varint().ok_or_else(truncated)?);
        doc.push(at);
    }
    let values = docs.rest();
    let with_values = match values.len() {
        0 => false,
        len if len == 8 * n => true,
        _ => return Err(truncated()),
    };
    if xxh3_64(&bytes[HEADER..]) != word(&bytes[16..]) {
        return Err(bad("checksum mismatch (damaged file)"));
    }
    let buckets = &bytes[HEADER..buckets_end];
    for (i, (b, &d)) in buckets.chunks_exact(8).zip(&doc).enumerate() {
        let value = if with_values {
            word(&values[8 * i..])
        } else {
            0
        };
        row(word(b), d, value);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_back_and_damage_is_caught() {
        let dir = std::env::temp_dir().join(format!("cd-bands-{}", std::process::id()));
        let work = OutputDir::Local(dir.clone());
        let name = crate::io::work::band_rows_file(3, 0, 1);
        let (bucket, doc) = (vec![u64::MAX, 7, 7], vec![4, 0, u32::MAX]);
        work.write_bytes(&name, encode(&bucket, &doc, &[])).unwrap();
        let mut got = Vec::new();
        read(&work, &name, |b, d, v| got.push((b, d, v))).unwrap();
        assert_eq!(got, vec![(u64::MAX, 4, 0), (7, 0, 0), (7, u32::MAX, 0)]);
        let values = [1, u64::MAX, 3];
        work.write_bytes(&name, encode(&bucket, &doc, &values))
            .unwrap();
        got.clear();
        read(&work, &name, |b, d, v| got.push((b, d, v))).unwrap();
        assert_eq!(got[1], (7, 0, u64::MAX));
        work.write_bytes(&name, encode(&[], &[], &[])).unwrap();
        read(&work, &name, |_, _, _| panic!("no rows")).unwrap();
        let read_err = |bytes: Vec<u8>| {
            work.write_bytes(&name, bytes).unwrap();
            read(&work, &name, |_, _, _| {}).unwrap_err().to_string()
        };
        let good = encode(&bucket, &doc, &[]);
        let mut flipped = good.clone();
        flipped[HEADER + 9] ^= 1;
        assert!(read_err(flipped).contains("checksum"));
        assert!(read_err(good[..good.len() - 4].to_vec()).contains("truncated"));
        // A row's document is a byte where the documents ascend in small steps.
        let docs: Vec<u32> = (0..1000).map(|i| 2 * i).collect();
        let ascending = encode(&vec![1; 1000], &docs, &[]);
        assert_eq!(ascending.len(), HEADER + 9 * 1000);
        work.write_bytes(&name, ascending).unwrap();
        let mut back = Vec::new();
        read(&work, &name, |_, d, _| back.push(d)).unwrap();
        assert_eq!(back, docs);
        assert!(read_err(b"CDPAIRS1".to_vec()).contains("bad header"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
