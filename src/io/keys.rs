//! Shingle key files: one part's documents' shingle keys, read back by document. With
//! `--work-keys stored` the signatures task writes every document's as it goes; with `remade`
//! the keys task of the part writes those an exact check needs ([`crate::stages::keys`]).
//!
//! Two files per part, little-endian:
//! ```text
//! keys/pP.keys    each listed document's shingle keys ([u32; keys], text order, repeats kept)
//! keys/pP.index   header  "CDKEYS02" | docs: u64 | xxh3-64 of the entries: u64       (24 bytes)
//!                 entries per document, ascending: doc: u32 | keys: u32 | offset: u64
//!                         | xxh3-64 of its key bytes: u64                           (24 bytes each)
//! ```
//! `doc` is the document's position in its part ([`KeyIndex::read`] adds the part's first
//! document number). A raw copy's entry points at its original's keys (they are not written
//! twice). Every checksum
//! is verified on each read of what it covers. Each file is written under a temporary name (or as
//! one object) and renamed, the index last: an index names a complete keys file.

use std::io::Write;
use std::ops::Range;

use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::io::work::{keys_file, keys_index_file};
use crate::io::{u32_at, u32s_le, u64_at};

const MAGIC: &[u8; 8] = b"CDKEYS02";
const HEADER: u64 = 24;
const ENTRY: usize = 24;

/// Writes part `p`'s key files: `write` appends documents to a [`KeyWriter`] in ascending order,
/// then the index is written.
pub(crate) fn write_part(
    work: &OutputDir,
    p: usize,
    write: impl FnOnce(&mut KeyWriter) -> Result<()>,
) -> Result<()> {
    let mut index = Vec::new();
    work.write_with(&keys_file(p), |body| {
        let mut w = KeyWriter {
            body,
            offset: 0,
            entries: Vec::new(),
            bytes: Vec::new(),
        };
        write(&mut w)?;
        index = w.index();
        Ok(())
    })?;
    work.write_bytes(&keys_index_file(p), index)
}

/// Appends documents' keys to a part's keys file and keeps their index entries.
pub(crate) struct KeyWriter<'w> {
    body: &'w mut (dyn Write + Send),
    offset: u64,
    /// (doc, keys, offset, checksum), ascending by doc.
    entries: Vec<(u32, u32, u64, u64)>,
    /// The current document's key bytes (reused).
    bytes: Vec<u8>,
}

impl KeyWriter<'_> {
    /// Appends the keys of the part's document `doc` (its position in the part; documents in
    /// ascending order).
    pub(crate) fn push(&mut self, doc: u32, keys: &[u32]) -> std::io::Result<()> {
        let bytes = &mut self.bytes;
        bytes.clear();
        for k in keys {
            bytes.extend_from_slice(&k.to_le_bytes());
        }
        self.body.write_all(bytes)?;
        let n = u32::try_from(keys.len()).map_err(std::io::Error::other)?;
        self.entries.push((doc, n, self.offset, xxh3_64(bytes)));
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// Lists document `doc` with the keys of `original`, an earlier document already pushed.
    pub(crate) fn push_copy(&mut self, doc: u32, original: u32) -> std::io::Result<()> {
        let at = self.entries.binary_search_by_key(&original, |e| e.0);
        let Ok(at) = at else {
            return Err(std::io::Error::other(format!(
                "document {doc} is named a copy of {original}, which has no keys"
            )));
        };
        let (_, n, offset, check) = self.entries[at];
        self.entries.push((doc, n, offset, check));
        Ok(())
    }

    fn index(&self) -> Vec<u8> {
        let mut entries = Vec::with_capacity(self.entries.len() * ENTRY);
        for &(doc, n, offset, check) in &self.entries {
            entries.extend_from_slice(&doc.to_le_bytes());
            entries.extend_from_slice(&n.to_le_bytes());
            entries.extend_from_slice(&offset.to_le_bytes());
            entries.extend_from_slice(&check.to_le_bytes());
        }
        let mut out = Vec::with_capacity(HEADER as usize + entries.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(self.entries.len() as u64).to_le_bytes());
        out.extend_from_slice(&xxh3_64(&entries).to_le_bytes());
        out.extend_from_slice(&entries);
        out
    }
}

/// The index of one part's key files: which documents they hold and where their keys are.
#[derive(Debug, Default)]
pub(crate) struct KeyIndex {
    p: usize,
    docs: Vec<u64>,
    ranges: Vec<Range<u64>>,
    checks: Vec<u64>,
}

impl KeyIndex {
    /// Reads and checks part `p`'s key index; `first` is the part's first document number.
    pub(crate) fn read(work: &OutputDir, p: usize, first: u64) -> Result<KeyIndex> {
        let name = keys_index_file(p);
        let bad = damaged(work, &name);
        let bytes = work.read(&name)?.ok_or_else(|| bad("missing"))?;
        if bytes.len() < HEADER as usize || &bytes[..8] != MAGIC {
            return Err(bad("not a shingle key index (bad header)"));
        }
        let n = u64_at(&bytes, 8) as usize;
        let entries = &bytes[HEADER as usize..];
        if entries.len() != n.saturating_mul(ENTRY) || xxh3_64(entries) != u64_at(&bytes, 16) {
            return Err(bad("checksum mismatch (damaged file)"));
        }
        let mut out = KeyIndex {
            p,
            docs: Vec::with_capacity(n),
            ranges: Vec::with_capacity(n),
            checks: Vec::with_capacity(n),
        };
        for e in entries.chunks_exact(ENTRY) {
            let (keys, offset) = (u64::from(u32_at(e, 4)), u64_at(e, 8));
            out.docs.push(first + u64::from(u32_at(e, 0)));
            out.ranges.push(offset..offset + 4 * keys);
            out.checks.push(u64_at(e, 16));
        }
        if out.docs.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad("documents out of order (damaged file)"));
        }
        Ok(out)
    }

    /// Whether the files hold document `doc`'s keys.
    pub(crate) fn holds(&self, doc: u64) -> bool {
        self.docs.binary_search(&doc).is_ok()
    }

    /// The keys of `docs` (ascending, each held), read and checked.
    pub(crate) fn keys(&self, work: &OutputDir, docs: &[u64]) -> Result<Vec<Vec<u32>>> {
        let name = keys_file(self.p);
        let bad = damaged(work, &name);
        let at: Vec<usize> = docs
            .iter()
            .map(|d| self.docs.binary_search(d))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| Error::Internal(format!("{name}: a document is not held")))?;
        let ranges: Vec<Range<u64>> = at.iter().map(|&i| self.ranges[i].clone()).collect();
        let read = work.read_ranges(&name, &ranges)?;
        (0..at.len())
            .map(|j| {
                let b = read.get(j);
                if b.len() as u64 != ranges[j].end - ranges[j].start {
                    return Err(bad("shorter than its index (damaged file)"));
                }
                if xxh3_64(b) != self.checks[at[j]] {
                    return Err(bad("checksum mismatch (damaged file)"));
                }
                Ok(u32s_le(b))
            })
            .collect()
    }
}

/// A key file's error: `msg` about the file `name` of the work directory.
fn damaged<'a>(work: &'a OutputDir, name: &'a str) -> impl Fn(&str) -> Error + 'a {
    move |msg: &str| Error::WorkFile {
        path: work.location(name),
        source: msg.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_copies_and_damage() {
        let dir = std::env::temp_dir().join(format!("cd-keys-{}", std::process::id()));
        let work = OutputDir::Local(dir.clone());
        let keys = [vec![5, 1, 5], vec![], vec![u32::MAX]];
        write_part(&work, 0, |w| {
            let io = |e: std::io::Error| Error::Internal(e.to_string());
            w.push(3, &keys[0]).map_err(io)?;
            w.push(7, &keys[1]).map_err(io)?;
            w.push_copy(8, 3).map_err(io)?;
            w.push(9, &keys[2]).map_err(io)?;
            assert!(w.push_copy(10, 4).is_err());
            Ok(())
        })
        .unwrap();
        let index = KeyIndex::read(&work, 0, 0).unwrap();
        assert!(index.holds(8) && !index.holds(4));
        let got = index.keys(&work, &[3, 8, 9]).unwrap();
        assert_eq!(got, vec![keys[0].clone(), keys[0].clone(), keys[2].clone()]);
        assert_eq!(index.keys(&work, &[7]).unwrap(), vec![Vec::<u32>::new()]);
        // Read as part of a run whose part starts at document 100: the same keys, numbered so.
        let shifted = KeyIndex::read(&work, 0, 100).unwrap();
        assert!(shifted.holds(108) && !shifted.holds(8));
        assert_eq!(shifted.keys(&work, &[109]).unwrap(), vec![keys[2].clone()]);
        // A part beyond 2^32 documents.
        let far = KeyIndex::read(&work, 0, 1 << 33).unwrap();
        assert!(far.holds((1 << 33) + 9) && !far.holds(9));
        assert!(index.keys(&work, &[4]).is_err());
        // A flipped key byte is caught when that document is read; a flipped index byte at once.
        let body = std::fs::read(dir.join(keys_file(0))).unwrap();
        let mut b = body.clone();
        let last = b.len() - 1;
        b[last] ^= 1;
        work.write_bytes(&keys_file(0), b).unwrap();
        assert!(index.keys(&work, &[3]).is_ok());
        let e = index.keys(&work, &[9]).unwrap_err().to_string();
        assert!(e.contains("p00000.keys") && e.contains("checksum"), "{e}");
        let mut b = std::fs::read(dir.join(keys_index_file(0))).unwrap();
        b[HEADER as usize + 1] ^= 1;
        work.write_bytes(&keys_index_file(0), b).unwrap();
        assert!(KeyIndex::read(&work, 0, 0).is_err());
        let e = KeyIndex::read(&work, 1, 0).unwrap_err().to_string();
        assert!(e.contains("p00001.index") && e.contains("missing"), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
