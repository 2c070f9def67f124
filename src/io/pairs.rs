//! Candidate pair files: the pairs one candidates task found, cut by the part of their first
//! document, so that a verify task reads only its own part's pairs from each file (two ranged
//! reads per file) instead of every file whole.
//!
//! Format of `candidates/tT.bin`, little-endian:
//! ```text
//! header  "CDPAIRS1" | parts: u32 | reserved: u32                              (16 bytes)
//! index   per part p: first pair: u64 | xxh3-64 of part p's pair bytes: u64     (16 bytes x parts)
//!         then the total pair count: u64                                        (8 bytes)
//! pairs   (a: u32, b: u32) per pair, sorted by (a, b), a < b                    (8 bytes each)
//! ```
//! Part p's pairs are pairs `first[p]..first[p + 1]` (the total for the last part). The checksum
//! is verified on every read. Files are written whole under a temporary name (or as one object)
//! and renamed.

use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};
use crate::io::output::OutputDir;

const MAGIC: &[u8; 8] = b"CDPAIRS1";

fn index_len(parts: usize) -> u64 {
    16 + 16 * parts as u64 + 8
}

fn pair_bytes(pairs: &[(u32, u32)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(pairs.len() * 8);
    for &(a, b) in pairs {
        out.extend_from_slice(&a.to_le_bytes());
        out.extend_from_slice(&b.to_le_bytes());
    }
    out
}

/// Encodes sorted `pairs`; `part_starts[p]` is part p's first global document index (ascending).
pub(crate) fn encode(pairs: &[(u32, u32)], part_starts: &[u64]) -> Vec<u8> {
    let parts = part_starts.len();
    let bytes = pair_bytes(pairs);
    let mut out = Vec::with_capacity(index_len(parts) as usize + bytes.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(parts as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    let first: Vec<usize> = part_starts
        .iter()
        .map(|&s| pairs.partition_point(|&(a, _)| (a as u64) < s))
        .chain([pairs.len()])
        .collect();
    for p in 0..parts {
        out.extend_from_slice(&(first[p] as u64).to_le_bytes());
        out.extend_from_slice(&xxh3_64(&bytes[first[p] * 8..first[p + 1] * 8]).to_le_bytes());
    }
    out.extend_from_slice(&(pairs.len() as u64).to_le_bytes());
    out.extend_from_slice(&bytes);
    out
}

/// Reads part `p`'s pairs (of `parts`) from the pair file `name`.
pub(crate) fn read_part(
    work: &OutputDir,
    name: &str,
    parts: usize,
    p: usize,
) -> Result<Vec<(u32, u32)>> {
    let bad = |msg: &str| Error::WorkFile {
        path: work.location(name),
        source: msg.into(),
    };
    let head = work
        .read_ranges(name, std::slice::from_ref(&(0..index_len(parts))))?
        .into_first();
    if head.len() as u64 != index_len(parts) || &head[..8] != MAGIC {
        return Err(bad("not a candidate pair file (bad header)"));
    }
    if u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize != parts {
        return Err(bad("written for a different number of parts"));
    }
    let u64_at = |at: usize| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&head[at..at + 8]);
        u64::from_le_bytes(x)
    };
    let (lo, check) = (u64_at(16 + 16 * p), u64_at(24 + 16 * p));
    let hi = u64_at(16 + 16 * (p + 1));
    if lo > hi {
        return Err(bad("damaged index"));
    }
    if lo == hi {
        return Ok(Vec::new());
    }
    let base = index_len(parts);
    let bytes = work
        .read_ranges(name, std::slice::from_ref(&(base + 8 * lo..base + 8 * hi)))?
        .into_first();
    if bytes.len() as u64 != 8 * (hi - lo) || xxh3_64(&bytes) != check {
        return Err(bad("checksum mismatch (damaged file)"));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| {
            (
                u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
                u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::work::pairs_file;

    #[test]
    fn parts_read_back_and_damage_is_caught() {
        let dir = std::env::temp_dir().join(format!("cd-pairs-{}", std::process::id()));
        let work = OutputDir::Local(dir.clone());
        let pairs = [(0, 5), (1, 2), (1, 9), (7, 8), (9, 10)];
        let starts = [0, 4, 8, 20];
        work.write_bytes(&pairs_file(0), encode(&pairs, &starts))
            .unwrap();
        let read = |p| read_part(&work, &pairs_file(0), 4, p).unwrap();
        assert_eq!(read(0), vec![(0, 5), (1, 2), (1, 9)]);
        assert_eq!(read(1), vec![(7, 8)]);
        assert_eq!(read(2), vec![(9, 10)]);
        assert_eq!(read(3), vec![]);
        assert!(read_part(&work, &pairs_file(0), 3, 0).is_err());
        let mut bad = encode(&pairs, &starts);
        let n = bad.len();
        bad[n - 1] ^= 1;
        work.write_bytes(&pairs_file(0), bad).unwrap();
        assert!(read_part(&work, &pairs_file(0), 4, 2)
            .unwrap_err()
            .to_string()
            .contains("checksum"));
        assert_eq!(read(0).len(), 3);
        let _ = std::fs::remove_dir_all(dir);
    }
}
