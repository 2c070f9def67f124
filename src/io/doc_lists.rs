//! Document lists cut by part: the documents whose shingle keys the verify tasks need (`needs/`)
//! and those that candidate pairs name (`pair-docs/`), each part's read alone by that part's task.
//! A part's documents are stored as a sorted list of positions in the part (4 bytes each) or as
//! a bitmap of the part (one bit per document), whichever is smaller: a candidates task names
//! about a fifth of the documents of every part, where a bitmap is a seventh of a list.
//!
//! Format, little-endian:
//! ```text
//! header  "CDDOCS01" | parts: u32 | reserved: u32                                (16 bytes)
//! index   per part p: first byte of its section: u64 | xxh3-64 of the section: u64
//!         then the body's length: u64                                    (16 x parts + 8 bytes)
//! body    per part: kind: u8 (0: list, 1: bitmap), then
//!         list: position: [u32; n], ascending; bitmap: [u8; ceil(docs / 8)], bit i of byte
//!         i / 8 for the part's document i
//! ```
//! An empty part has an empty section. The checksum is verified on every read. Files are
//! written whole under a temporary name (or as one object) and renamed.

use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::io::{u32s_le, u64_at};

const MAGIC: &[u8; 8] = b"CDDOCS01";
const LIST: u8 = 0;
const BITMAP: u8 = 1;

fn index_len(parts: usize) -> u64 {
    16 + 16 * parts as u64 + 8
}

/// Encodes `docs` (global numbers, ascending, unique) cut by `parts` ((first, count) each).
pub(crate) fn encode(docs: &[u32], parts: &[(u64, u64)]) -> Vec<u8> {
    let mut body = Vec::new();
    let mut index = Vec::with_capacity(parts.len());
    let mut i = 0;
    for &(first, count) in parts {
        let end = docs[i..].partition_point(|&d| u64::from(d) < first + count) + i;
        let of_part = &docs[i..end];
        let start = body.len();
        if !of_part.is_empty() {
            let bitmap = count.div_ceil(8) as usize;
            if bitmap < 4 * of_part.len() {
                body.push(BITMAP);
                let mut bits = vec![0u8; bitmap];
                for &d in of_part {
                    let x = (u64::from(d) - first) as usize;
                    bits[x / 8] |= 1 << (x % 8);
                }
                body.extend_from_slice(&bits);
            } else {
                body.push(LIST);
                for &d in of_part {
                    body.extend_from_slice(&((u64::from(d) - first) as u32).to_le_bytes());
                }
            }
        }
        index.push((start as u64, xxh3_64(&body[start..])));
        i = end;
    }
    debug_assert_eq!(i, docs.len(), "documents past the last part");
    let mut out = Vec::with_capacity(index_len(parts.len()) as usize + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(parts.len() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    for (start, check) in index {
        out.extend_from_slice(&start.to_le_bytes());
        out.extend_from_slice(&check.to_le_bytes());
    }
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// Part `p`'s documents (global numbers, ascending) of the list `name`, cut by `parts`.
pub(crate) fn read_part(
    work: &OutputDir,
    name: &str,
    parts: &[(u64, u64)],
    p: usize,
) -> Result<Vec<u32>> {
    let bad = |msg: &str| Error::WorkFile {
        path: work.location(name),
        source: msg.into(),
    };
    let n = parts.len();
    let head = work
        .read_ranges(name, std::slice::from_ref(&(0..index_len(n))))?
        .into_first();
    if head.len() as u64 != index_len(n) || &head[..8] != MAGIC {
        return Err(bad("not a document list (bad header)"));
    }
    if u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize != n {
        return Err(bad("written for a different number of parts"));
    }
    let (lo, check, hi) = (
        u64_at(&head, 16 + 16 * p),
        u64_at(&head, 24 + 16 * p),
        u64_at(&head, 16 + 16 * (p + 1)),
    );
    if lo > hi {
        return Err(bad("damaged index"));
    }
    if lo == hi {
        return Ok(Vec::new());
    }
    let base = index_len(n);
    let bytes = work
        .read_ranges(name, std::slice::from_ref(&(base + lo..base + hi)))?
        .into_first();
    if bytes.len() as u64 != hi - lo || xxh3_64(&bytes) != check {
        return Err(bad("checksum mismatch (damaged file)"));
    }
    let (first, count) = parts[p];
    let global = |x: u64| (first + x) as u32;
    match (bytes[0], &bytes[1..]) {
        (LIST, list) if list.len() % 4 == 0 => Ok(u32s_le(list)
            .into_iter()
            .map(|x| global(x.into()))
            .collect()),
        (BITMAP, bits) if bits.len() as u64 == count.div_ceil(8) => Ok((0..count)
            .filter(|&x| bits[(x / 8) as usize] & (1 << (x % 8)) != 0)
            .map(global)
            .collect()),
        _ => Err(bad(
            "a part's section is neither a list nor a bitmap (damaged file)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any set of documents reads back part by part, as lists or bitmaps.
        #[test]
        fn parts_read_back(
            docs in proptest::collection::btree_set(0u32..400, 0..300),
            cuts in proptest::collection::btree_set(1u64..400, 0..5),
        ) {
            let dir = std::env::temp_dir().join(format!("cd-doc-lists-{}", std::process::id()));
            let work = OutputDir::Local(dir.clone());
            let mut starts: Vec<u64> = vec![0];
            starts.extend(cuts);
            let parts: Vec<(u64, u64)> = (0..starts.len())
                .map(|i| (starts[i], starts.get(i + 1).copied().unwrap_or(400) - starts[i]))
                .collect();
            let docs: Vec<u32> = docs.into_iter().collect();
            work.write_bytes("needs/t00000.bin", encode(&docs, &parts)).unwrap();
            let mut back = Vec::new();
            for p in 0..parts.len() {
                back.extend(read_part(&work, "needs/t00000.bin", &parts, p).unwrap());
            }
            prop_assert_eq!(back, docs);
        }
    }

    #[test]
    fn a_dense_part_is_a_bitmap_and_damage_is_caught() {
        let dir = std::env::temp_dir().join(format!("cd-doc-lists-d-{}", std::process::id()));
        let work = OutputDir::Local(dir.clone());
        let parts = [(0, 1000), (1000, 100)];
        let docs: Vec<u32> = (0..1000).step_by(3).chain([1002]).collect();
        let bytes = encode(&docs, &parts);
        // 334 documents of part 0: a 125-byte bitmap, not a 1,336-byte list; part 1 a list.
        assert_eq!(bytes.len() as u64, index_len(2) + 1 + 125 + 1 + 4);
        work.write_bytes("l.bin", bytes.clone()).unwrap();
        assert_eq!(read_part(&work, "l.bin", &parts, 1).unwrap(), vec![1002]);
        assert!(read_part(&work, "l.bin", &parts[..1], 0).is_err());
        let mut damaged = bytes;
        let at = index_len(2) as usize + 3;
        damaged[at] ^= 1;
        work.write_bytes("l.bin", damaged).unwrap();
        let e = read_part(&work, "l.bin", &parts, 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("l.bin") && e.contains("checksum"), "{e}");
        assert_eq!(read_part(&work, "l.bin", &parts, 1).unwrap(), vec![1002]);
        let _ = std::fs::remove_dir_all(dir);
    }
}
