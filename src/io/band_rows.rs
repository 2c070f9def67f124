//! Band row files: the (bucket, document) rows one signatures task wrote for one band and bucket
//! range, read whole by that band's candidates task.
//!
//! Format of `bands/bBBB-rRRR/pPPPPP.bin`, little-endian:
//! ```text
//! header  "CDBANDS1" | rows: u64 | xxh3-64 of the body: u64     (24 bytes)
//! body    bucket: [u64; rows] | doc: [u32; rows]                 (12 bytes per row)
//! ```
//! Plain arrays instead of Parquet: the rows are random 64-bit hashes and document numbers,
//! which no encoding shrinks, and Parquet's writer spent its time trying a dictionary for the
//! buckets (~3% of the signatures task at 100k documents). The checksum is verified on every
//! read. Files are written whole under a temporary name (or as one object) and renamed.

use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};
use crate::io::output::OutputDir;

const MAGIC: &[u8; 8] = b"CDBANDS1";
const HEADER: usize = 24;

/// Name of the rows of band `band`, bucket range `range`, written by part `part`'s task.
pub fn band_rows_name(band: usize, range: usize, part: usize) -> String {
    format!("bands/b{band:03}-r{range:03}/p{part:05}.bin")
}

/// Encodes rows `(bucket[i], doc[i])` (equal lengths).
pub fn encode(bucket: &[u64], doc: &[u32]) -> Vec<u8> {
    debug_assert_eq!(bucket.len(), doc.len());
    let mut out = Vec::with_capacity(HEADER + 12 * doc.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(doc.len() as u64).to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    for b in bucket {
        out.extend_from_slice(&b.to_le_bytes());
    }
    for d in doc {
        out.extend_from_slice(&d.to_le_bytes());
    }
    let check = xxh3_64(&out[HEADER..]);
    out[16..24].copy_from_slice(&check.to_le_bytes());
    out
}

/// Reads the rows of the file `name`, calling `row(bucket, doc)` for each, in order.
pub fn read(work: &OutputDir, name: &str, mut row: impl FnMut(u64, u32)) -> Result<()> {
    let bad = |msg: &str| Error::WorkFile {
        path: work.location(name),
        msg: msg.to_string(),
    };
    let bytes = work.read(name)?.ok_or_else(|| bad("missing"))?;
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return Err(bad("not a band row file (bad header)"));
    }
    let word = |at: usize| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(x)
    };
    let rows = word(8);
    if rows
        .checked_mul(12)
        .and_then(|b| b.checked_add(HEADER as u64))
        != Some(bytes.len() as u64)
    {
        return Err(bad("length does not match the row count (truncated?)"));
    }
    if xxh3_64(&bytes[HEADER..]) != word(16) {
        return Err(bad("checksum mismatch (damaged file)"));
    }
    let (buckets, docs) = bytes[HEADER..].split_at(8 * rows as usize);
    for (b, d) in buckets.chunks_exact(8).zip(docs.chunks_exact(4)) {
        let mut x = [0u8; 8];
        x.copy_from_slice(b);
        row(
            u64::from_le_bytes(x),
            u32::from_le_bytes([d[0], d[1], d[2], d[3]]),
        );
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
        let name = band_rows_name(3, 0, 1);
        let (bucket, doc) = (vec![u64::MAX, 7, 7], vec![4, 0, u32::MAX]);
        work.write_bytes(&name, encode(&bucket, &doc)).unwrap();
        let mut got = Vec::new();
        read(&work, &name, |b, d| got.push((b, d))).unwrap();
        assert_eq!(got, vec![(u64::MAX, 4), (7, 0), (7, u32::MAX)]);
        work.write_bytes(&name, encode(&[], &[])).unwrap();
        read(&work, &name, |_, _| panic!("no rows")).unwrap();
        let read_err = |bytes: Vec<u8>| {
            work.write_bytes(&name, bytes).unwrap();
            read(&work, &name, |_, _| {}).unwrap_err().to_string()
        };
        let good = encode(&bucket, &doc);
        let mut flipped = good.clone();
        flipped[HEADER + 9] ^= 1;
        assert!(read_err(flipped).contains("checksum"));
        assert!(read_err(good[..good.len() - 4].to_vec()).contains("truncated"));
        assert!(read_err(b"CDPAIRS1".to_vec()).contains("bad header"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
