//! Candidate pair files: the pairs one candidates task found, cut by the part of their first
//! document, so that a verify task reads only its own part's pairs from each file.
//!
//! Format of `candidates/tT.bin`: a file of sections by part ([`crate::io::sections`], magic
//! "CDPAIRS2"), each section the part's pairs (a: u32, b: u32), little-endian, sorted by (a, b),
//! a < b (8 bytes each).

use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::io::{sections, u32_at};

const MAGIC: &[u8; 8] = b"CDPAIRS2";

/// Encodes sorted `pairs`; `part_starts[p]` is part p's first global document index (ascending).
pub(crate) fn encode(pairs: &[(u32, u32)], part_starts: &[u64]) -> Vec<u8> {
    let mut cuts: Vec<usize> = (part_starts.iter())
        .map(|&s| pairs.partition_point(|&(a, _)| (a as u64) < s))
        .collect();
    cuts.push(pairs.len());
    let of_part = |p: usize| {
        let mut out = Vec::with_capacity(8 * (cuts[p + 1] - cuts[p]));
        for &(a, b) in &pairs[cuts[p]..cuts[p + 1]] {
            out.extend_from_slice(&a.to_le_bytes());
            out.extend_from_slice(&b.to_le_bytes());
        }
        out
    };
    let parts: Vec<Vec<u8>> = (0..part_starts.len()).map(of_part).collect();
    sections::encode(MAGIC, &parts)
}

/// Reads part `p`'s pairs (of `parts`) from the pair file `name`.
pub(crate) fn read_part(
    work: &OutputDir,
    name: &str,
    parts: usize,
    p: usize,
) -> Result<Vec<(u32, u32)>> {
    let bytes = sections::read(work, name, (MAGIC, "a candidate pair file"), parts, p)?;
    if bytes.len() % 8 != 0 {
        return Err(Error::WorkFile {
            path: work.location(name),
            source: "a part's pairs are not whole (damaged file)".into(),
        });
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| (u32_at(c, 0), u32_at(c, 4)))
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
