//! Pair signature files: with `--work-keys remade` (MinHash, no index) the store keeps no
//! signatures, which were 512 of its 552 bytes per document; the pair-signatures stage makes
//! again, from the shards, the signatures of the documents that candidate pairs or giant buckets
//! name, and writes them here, one file per part ([`crate::stages::pair_signatures`]).
//!
//! Format of `pair-sigs/pP.bin`, little-endian:
//! ```text
//! header     "CDPSIGS1" | k: u32 | blocks: u32 | records: u64                      (24 bytes)
//! directory  per block of 64 documents of the part, in order:
//!            held: u64 (bit i: the block's document i has a record)
//!            | before: u32 (records of the earlier blocks)
//!            | check: u32 (low half of xxh3-64 of held, before and the block number) (16 bytes each)
//! records    values: [u32; k] | check: u64 (xxh3-64 of the values and the document's
//!            position in the part), in document order                         (4k + 8 bytes each)
//! ```
//! A reader finds document d's record from its block's entry alone (`before` + the held bits
//! below d), so a task reads two small ranges per document and holds nothing per part: memory
//! follows the documents asked for, as with the store. Every range read is checked. The file is
//! written whole under a temporary name (or as one object) and renamed.

use std::ops::Range;

use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::io::work::pair_sigs_file as file;
use crate::io::{read_u32s_le, u32_at, u64_at};

const MAGIC: &[u8; 8] = b"CDPSIGS1";
const HEADER: u64 = 24;
const BLOCK: u64 = 64;
const ENTRY: u64 = 16;

fn entry_check(held: u64, before: u32, block: u64) -> u32 {
    let mut b = [0u8; 20];
    b[..8].copy_from_slice(&held.to_le_bytes());
    b[8..12].copy_from_slice(&before.to_le_bytes());
    b[12..].copy_from_slice(&block.to_le_bytes());
    xxh3_64(&b) as u32
}

fn record_check(values: &[u8], local: u64) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(values);
    h.update(&local.to_le_bytes());
    h.digest()
}

/// The file of a part of `part_docs` documents holding the signatures (`k` values each, flat in
/// `values`) of its documents `docs` (positions in the part, ascending, unique).
pub(crate) fn encode(k: usize, part_docs: u64, docs: &[u32], values: &[u32]) -> Vec<u8> {
    debug_assert_eq!(docs.len() * k, values.len());
    let blocks = part_docs.div_ceil(BLOCK);
    let rs = 4 * k + 8;
    let mut out = Vec::with_capacity((HEADER + blocks * ENTRY) as usize + docs.len() * rs);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(k as u32).to_le_bytes());
    out.extend_from_slice(&(blocks as u32).to_le_bytes());
    out.extend_from_slice(&(docs.len() as u64).to_le_bytes());
    let mut i = 0;
    for b in 0..blocks {
        let (before, mut held) = (i as u32, 0u64);
        while i < docs.len() && u64::from(docs[i]) / BLOCK == b {
            held |= 1 << (u64::from(docs[i]) % BLOCK);
            i += 1;
        }
        out.extend_from_slice(&held.to_le_bytes());
        out.extend_from_slice(&before.to_le_bytes());
        out.extend_from_slice(&entry_check(held, before, b).to_le_bytes());
    }
    for (&d, sig) in docs.iter().zip(values.chunks_exact(k.max(1))) {
        let at = out.len();
        for v in sig {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let check = record_check(&out[at..], u64::from(d));
        out.extend_from_slice(&check.to_le_bytes());
    }
    out
}

/// Of documents `docs` (positions in part `p`, ascending): which ones the part's file holds a
/// signature of, and those signatures (`k` values each, flat, in the order of `docs`). The file
/// holds every document a later stage compares; a caller may ask for more (the manifest fetches
/// keepers for their ids and signatures in one read).
pub(crate) fn read(
    work: &OutputDir,
    p: usize,
    k: usize,
    docs: &[u32],
) -> Result<(Vec<bool>, Vec<u32>)> {
    let name = file(p);
    let bad = |msg: String| Error::WorkFile {
        path: work.location(&name),
        source: msg.into(),
    };
    if docs.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let header = work
        .read_ranges(&name, std::slice::from_ref(&(0..HEADER)))?
        .into_first();
    if header.len() as u64 != HEADER || &header[..8] != MAGIC {
        return Err(bad("not a pair signature file (bad header)".into()));
    }
    if u32_at(&header, 8) as usize != k {
        return Err(bad(format!(
            "holds {} values per signature, not {k}",
            u32_at(&header, 8)
        )));
    }
    let (blocks, records) = (u64::from(u32_at(&header, 12)), u64_at(&header, 16));
    let mut wanted: Vec<u64> = docs.iter().map(|&d| u64::from(d) / BLOCK).collect();
    wanted.dedup();
    if wanted.last().is_some_and(|&b| b >= blocks) {
        return Err(bad(
            "fewer blocks than the part has documents (damaged file)".into(),
        ));
    }
    let entry_ranges: Vec<Range<u64>> = (wanted.iter())
        .map(|&b| HEADER + b * ENTRY..HEADER + (b + 1) * ENTRY)
        .collect();
    let entries = work.read_ranges(&name, &entry_ranges)?;
    let rs = 4 * k as u64 + 8;
    let base = HEADER + blocks * ENTRY;
    let mut record_ranges = Vec::with_capacity(docs.len());
    let mut held_by = Vec::with_capacity(docs.len());
    let mut e = 0;
    for &d in docs {
        let block = u64::from(d) / BLOCK;
        while wanted[e] != block {
            e += 1;
        }
        let entry = entries.get(e);
        if entry.len() as u64 != ENTRY {
            return Err(bad("short directory (damaged file)".into()));
        }
        let (held, before) = (u64_at(entry, 0), u32_at(entry, 8));
        if entry_check(held, before, block) != u32_at(entry, 12) {
            return Err(bad("directory checksum mismatch (damaged file)".into()));
        }
        let bit = u64::from(d) % BLOCK;
        held_by.push(held & (1 << bit) != 0);
        if held & (1 << bit) == 0 {
            continue;
        }
        let rank = u64::from(before) + u64::from((held & ((1u64 << bit) - 1)).count_ones());
        if rank >= records {
            return Err(bad("a record past the file's count (damaged file)".into()));
        }
        record_ranges.push(base + rank * rs..base + (rank + 1) * rs);
    }
    let bytes = work.read_ranges(&name, &record_ranges)?;
    let mut values = vec![0u32; record_ranges.len() * k];
    let held_docs = docs
        .iter()
        .zip(&held_by)
        .filter(|(_, &h)| h)
        .map(|(&d, _)| d);
    for (j, (d, out)) in held_docs.zip(values.chunks_exact_mut(k.max(1))).enumerate() {
        let r = bytes.get(j);
        if r.len() as u64 != rs {
            return Err(bad("short record (damaged file)".into()));
        }
        if record_check(&r[..4 * k], u64::from(d)) != u64_at(r, 4 * k) {
            return Err(bad("checksum mismatch (damaged file)".into()));
        }
        read_u32s_le(r, out);
    }
    Ok((held_by, values))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A fresh work directory named `name` under the temporary directory.
    fn dir(name: &str) -> (std::path::PathBuf, OutputDir) {
        let t = std::env::temp_dir().join(format!("cd-pair-sigs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&t);
        (t.clone(), OutputDir::Local(t))
    }

    proptest! {
        /// Any subset of a part's documents reads back the signatures written for it.
        #[test]
        fn reads_back_any_subset(
            held in proptest::collection::btree_set(0u32..300, 0..120),
            pick in proptest::collection::vec(any::<bool>(), 120),
            k in 1usize..5,
        ) {
            let (_t, w) = dir("subset");
            let docs: Vec<u32> = held.into_iter().collect();
            let values: Vec<u32> = (0..docs.len() * k).map(|i| (i as u32).wrapping_mul(2654435761)).collect();
            w.write_bytes(&file(3), encode(k, 300, &docs, &values)).unwrap();
            // Asked: the picked documents the file holds, and every fifth position it may not.
            let mut asked: Vec<u32> = docs.iter().zip(&pick).filter(|(_, &b)| b).map(|(&d, _)| d).collect();
            asked.extend((0..300).step_by(5));
            asked.sort_unstable();
            asked.dedup();
            let (held, got) = read(&w, 3, k, &asked).unwrap();
            let expected: Vec<u32> = asked
                .iter()
                .filter_map(|d| docs.binary_search(d).ok())
                .flat_map(|i| values[i * k..(i + 1) * k].to_vec())
                .collect();
            let in_file: Vec<bool> = asked.iter().map(|d| docs.binary_search(d).is_ok()).collect();
            prop_assert_eq!(held, in_file);
            prop_assert_eq!(got, expected);
        }
    }

    #[test]
    fn documents_without_a_record_are_said_and_a_damaged_byte_is_an_error() {
        let (t, w) = dir("errors");
        let bytes = encode(2, 130, &[1, 64, 129], &[1, 2, 3, 4, 5, 6]);
        w.write_bytes(&file(0), bytes.clone()).unwrap();
        let (held, values) = read(&w, 0, 2, &[2, 64, 129]).unwrap();
        assert_eq!((held, values), (vec![false, true, true], vec![3, 4, 5, 6]));
        assert!(read(&w, 0, 3, &[1]).unwrap_err().to_string().contains("3"));
        let e = read(&w, 0, 2, &[200]).unwrap_err().to_string();
        assert!(e.contains("fewer blocks"), "{e}");
        let mut damaged = bytes;
        let last = damaged.len() - 9;
        damaged[last] ^= 1;
        std::fs::write(t.join(file(0)), damaged).unwrap();
        let e = read(&w, 0, 2, &[129]).unwrap_err().to_string();
        assert!(e.contains("checksum mismatch"), "{e}");
    }
}
