//! Document lists cut by part: the documents whose shingle keys the verify tasks need (`needs/`)
//! and those that candidate pairs name (`pair-docs/`), each part's read alone by that part's task.
//! A part's documents are stored as a sorted list of positions in the part (4 bytes each) or as
//! a bitmap of the part (one bit per document), whichever is smaller: a candidates task names
//! about a fifth of the documents of every part, where a bitmap is a seventh of a list.
//!
//! Format: a file of sections by part ([`crate::io::sections`], magic "CDDOCS01"), each section
//! empty for a part without documents, else, little-endian: kind: u8 (0: list, 1: bitmap), then
//! list: position: [u32; n], ascending; bitmap: [u8; ceil(docs / 8)], bit i of byte i / 8 for
//! the part's document i.

use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::io::{sections, u32s_le};

const MAGIC: &[u8; 8] = b"CDDOCS01";
const LIST: u8 = 0;
const BITMAP: u8 = 1;

/// Encodes `docs` (global numbers, ascending, unique) cut by `parts` ((first, count) each).
pub(crate) fn encode(docs: &[u64], parts: &[(u64, u64)]) -> Vec<u8> {
    let mut sections = Vec::with_capacity(parts.len());
    let mut i = 0;
    for &(first, count) in parts {
        let end = docs[i..].partition_point(|&d| d < first + count) + i;
        let local = docs[i..end].iter().map(|&d| (d - first) as usize);
        let bitmap = count.div_ceil(8) as usize;
        let section = match end - i {
            0 => Vec::new(),
            n if bitmap < 4 * n => {
                let mut bits = vec![0u8; 1 + bitmap];
                bits[0] = BITMAP;
                for x in local {
                    bits[1 + x / 8] |= 1 << (x % 8);
                }
                bits
            }
            n => {
                let mut list = Vec::with_capacity(1 + 4 * n);
                list.push(LIST);
                for x in local {
                    list.extend_from_slice(&(x as u32).to_le_bytes());
                }
                list
            }
        };
        sections.push(section);
        i = end;
    }
    debug_assert_eq!(i, docs.len(), "documents past the last part");
    sections::encode(MAGIC, &sections)
}

/// Part `p`'s documents (global numbers, ascending) of the list `name`, cut by `parts`.
pub(crate) fn read_part(
    work: &OutputDir,
    name: &str,
    parts: &[(u64, u64)],
    p: usize,
) -> Result<Vec<u64>> {
    let bytes = sections::read(work, name, (MAGIC, "a document list"), parts.len(), p)?;
    let (first, count) = parts[p];
    let global = |x: u64| first + x;
    match bytes.split_first() {
        None => Ok(Vec::new()),
        Some((&LIST, list)) if list.len() % 4 == 0 => Ok(u32s_le(list)
            .into_iter()
            .map(|x| global(x.into()))
            .collect()),
        Some((&BITMAP, bits)) if bits.len() as u64 == count.div_ceil(8) => Ok((0..count)
            .filter(|&x| bits[(x / 8) as usize] & (1 << (x % 8)) != 0)
            .map(global)
            .collect()),
        _ => Err(Error::WorkFile {
            path: work.location(name),
            source: "a part's section is neither a list nor a bitmap (damaged file)".into(),
        }),
    }
}

/// The documents of part `p` (ascending, unique) that any of the lists `names` holds.
pub(crate) fn read_part_of_all(
    work: &OutputDir,
    names: impl Iterator<Item = String>,
    parts: &[(u64, u64)],
    p: usize,
) -> Result<Vec<u64>> {
    let mut docs = Vec::new();
    for name in names {
        docs.extend(read_part(work, &name, parts, p)?);
    }
    docs.sort_unstable();
    docs.dedup();
    Ok(docs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any set of documents reads back part by part, as lists or bitmaps.
        #[test]
        fn parts_read_back(
            docs in proptest::collection::btree_set(0u64..400, 0..300),
            cuts in proptest::collection::btree_set(1u64..400, 0..5),
            high in prop_oneof![Just(0u64), Just(1u64 << 32), (1u64 << 40)..(1u64 << 41)],
        ) {
            let dir = std::env::temp_dir().join(format!("cd-doc-lists-{}", std::process::id()));
            let work = OutputDir::Local(dir.clone());
            let mut starts: Vec<u64> = vec![high];
            starts.extend(cuts.into_iter().map(|c| high + c));
            let parts: Vec<(u64, u64)> = (0..starts.len())
                .map(|i| (starts[i], starts.get(i + 1).copied().unwrap_or(high + 400) - starts[i]))
                .collect();
            let docs: Vec<u64> = docs.into_iter().map(|d| high + d).collect();
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
        let docs: Vec<u64> = (0..1000).step_by(3).chain([1002]).collect();
        let bytes = encode(&docs, &parts);
        // 334 documents of part 0: a 125-byte bitmap, not a 1,336-byte list; part 1 a list.
        assert_eq!(bytes.len(), 16 + 2 * 16 + 8 + 1 + 125 + 1 + 4);
        work.write_bytes("l.bin", bytes.clone()).unwrap();
        assert_eq!(read_part(&work, "l.bin", &parts, 1).unwrap(), vec![1002]);
        assert!(read_part(&work, "l.bin", &parts[..1], 0).is_err());
        let mut damaged = bytes;
        let at = 16 + 2 * 16 + 8 + 3;
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
