//! Candidate pair files: the pairs one candidates task found, cut by the part of their first
//! document, so that a verify task reads only its own part's pairs from each file.
//!
//! Format of `candidates/tT.bin`: a file of sections by part ([`crate::io::sections`], magic
//! "CDPAIRS3"), each section the part's pairs (a, b), sorted by (a, b), a < b, as pairs of
//! varints ([`crate::io::varint`]): a minus the pair before's a (the part's first document for
//! the first pair), then b minus the pair before's b when a is the same, else b minus a. Document
//! numbers are 64-bit; a pair takes ~5 bytes at 10^8 documents (8 as two u32s).

use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::io::{sections, varint};

const MAGIC: &[u8; 8] = b"CDPAIRS3";

/// Encodes sorted `pairs`; `part_starts[p]` is part p's first global document index (ascending).
pub(crate) fn encode(pairs: &[(u64, u64)], part_starts: &[u64]) -> Vec<u8> {
    let mut cuts: Vec<usize> = (part_starts.iter())
        .map(|&s| pairs.partition_point(|&(a, _)| a < s))
        .collect();
    cuts.push(pairs.len());
    let of_part = |p: usize| {
        let mut out = Vec::with_capacity(5 * (cuts[p + 1] - cuts[p]));
        let mut before = (part_starts[p], 0);
        for (i, &(a, b)) in pairs[cuts[p]..cuts[p + 1]].iter().enumerate() {
            varint::put_u64(&mut out, a - before.0);
            let from = if i > 0 && a == before.0 { before.1 } else { a };
            varint::put_u64(&mut out, b - from);
            before = (a, b);
        }
        out
    };
    let parts: Vec<Vec<u8>> = (0..part_starts.len()).map(of_part).collect();
    sections::encode(MAGIC, &parts)
}

/// Appends part `p`'s pairs (of `parts`, the part's first document `first`) from the pair file
/// `name` to `out`.
pub(crate) fn read_part(
    work: &OutputDir,
    name: &str,
    parts: usize,
    (p, first): (usize, u64),
    out: &mut Vec<(u64, u64)>,
) -> Result<()> {
    let bytes = sections::read(work, name, (MAGIC, "a candidate pair file"), parts, p)?;
    let damaged = || Error::WorkFile {
        path: work.location(name),
        source: "a part's pairs are not whole (damaged file)".into(),
    };
    let mut r = varint::Reader::new(&bytes);
    let mut before = (first, 0u64);
    // A pair takes two bytes at least.
    out.reserve(bytes.len() / 4);
    let mut started = false;
    while !r.done() {
        let (Some(da), Some(db)) = (r.varint_u64(), r.varint_u64()) else {
            return Err(damaged());
        };
        let a = before.0.checked_add(da).ok_or_else(damaged)?;
        let from = if da == 0 && started { before.1 } else { a };
        let b = from.checked_add(db).ok_or_else(damaged)?;
        out.push((a, b));
        before = (a, b);
        started = true;
    }
    Ok(())
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
        let read = |p: usize| {
            let mut out = Vec::new();
            read_part(&work, &pairs_file(0), 4, (p, starts[p]), &mut out).unwrap();
            out
        };
        assert_eq!(read(0), vec![(0, 5), (1, 2), (1, 9)]);
        assert_eq!(read(1), vec![(7, 8)]);
        assert_eq!(read(2), vec![(9, 10)]);
        assert_eq!(read(3), vec![]);
        assert!(read_part(&work, &pairs_file(0), 3, (0, 0), &mut Vec::new()).is_err());
        let mut bad = encode(&pairs, &starts);
        let n = bad.len();
        bad[n - 1] ^= 1;
        work.write_bytes(&pairs_file(0), bad).unwrap();
        assert!(read_part(&work, &pairs_file(0), 4, (2, 8), &mut Vec::new())
            .unwrap_err()
            .to_string()
            .contains("checksum"));
        assert_eq!(read(0).len(), 3);
        let _ = std::fs::remove_dir_all(dir);
    }

    proptest::proptest! {
        /// Any sorted pairs round-trip, document numbers beyond 32 bits included.
        #[test]
        fn pairs_of_64_bit_documents_read_back(
            raw in proptest::collection::btree_set((0u64..40, 0u64..40), 0..200),
            cuts in proptest::collection::btree_set(1u64..40, 0..4),
            high in proptest::prop_oneof![proptest::strategy::Just(0u64), proptest::strategy::Just(1u64 << 32), (1u64 << 40)..(1u64 << 41)],
        ) {
            let pairs: Vec<(u64, u64)> = (raw.into_iter())
                .filter(|&(a, b)| a < b)
                .map(|(a, b)| (high + a, high + b))
                .collect();
            let starts: Vec<u64> = std::iter::once(0).chain(cuts).map(|c| high + c).collect();
            let dir = std::env::temp_dir()
                .join(format!("cd-pairs64-{}-{}", std::process::id(), pairs.len()));
            let work = OutputDir::Local(dir.clone());
            work.write_bytes(&pairs_file(0), encode(&pairs, &starts)).unwrap();
            let mut back = Vec::new();
            for (p, &first) in starts.iter().enumerate() {
                let mut part = Vec::new();
                read_part(&work, &pairs_file(0), starts.len(), (p, first), &mut part).unwrap();
                let end = starts.get(p + 1).copied().unwrap_or(u64::MAX);
                proptest::prop_assert!(part.iter().all(|&(a, _)| a >= first && a < end));
                back.extend(part);
            }
            let _ = std::fs::remove_dir_all(dir);
            proptest::prop_assert_eq!(back, pairs);
        }
    }
}
