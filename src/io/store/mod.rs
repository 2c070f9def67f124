//! The document store: what later tasks need to know about a document, written once by the
//! signatures task of its part and read back by document index, without reading the shards again.
//!
//! Two files per part, little-endian:
//! ```text
//! store/pNNNNN.sig   header  "CDSTORE6" | k: u32 | docs: u32 | 0: u64                (24 bytes)
//!                    (`docs` 0 for a part whose files its task counted)
//!                    record  signature [u32; k] | shingles: u32 | id_len: u32
//!                            | id_offset: u64 | copy_of: u64
//!                            | check_record: u64 | check_id: u64                   (4k + 40 bytes)
//!                            ... one per document, in document order ...
//! store/pNNNNN.ids   the id bytes of each document, in order
//! ```
//! With `--work-keys remade` (MinHash without an index) a record holds no signature (k is 0 in
//! its header and size): the pair-signatures stage makes again the signatures of the documents
//! later stages compare, into [`crate::io::pair_sigs`], and [`fetch`] reads them from there
//! ([`Layout`]). The shingle keys are not stored here: they are four bytes per token, three quarters of what
//! the store was, and only the documents an exact check needs them for get them, from the
//! shards again ([`crate::stages::keys`]). The id offset is the id's position in its file. A
//! document whose text is byte for byte an earlier one's of the same part (a raw copy, which the
//! signatures task does not compute again) has `copy_of` = 1 + that original's position in the
//! part, and no signature or shingle count of its own: [`fetch`] gives it its original's (the
//! first occurrence, never itself a copy); `copy_of` is 0 for every other document. The
//! checksums are xxh3-64 of the record's first 4k + 24 bytes and of the id bytes; each is
//! verified on every read of what it covers, so a damaged file is reported rather than silently
//! used. Record `i` is at `24 + i * (4k + 40)`: a task reads exactly the documents it needs, and
//! of them only what it asks for ([`Wanted`]: verify reads records alone, the manifest the ids),
//! so its memory and reads follow its own pairs, not the corpus. The files are appended to chunk
//! by chunk as the signatures task reads its rows (so it never holds more than a chunk of them),
//! each under a temporary name (or as one object) and renamed when complete: a file is complete
//! or absent, and both exist before the task's
//! marker. This file reads a store; `writer.rs` writes one.

use std::ops::Range;

use rayon::prelude::*;
use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};
use crate::io::output::{OutputDir, RangeBytes};
use crate::io::work::store_files;
use crate::io::{read_u32s_le, u32_at, u64_at};
use crate::minhash::SigSource;

mod writer;

pub(crate) use writer::{write_part, Writer};

const MAGIC: &[u8; 8] = b"CDSTORE6";
const HEADER: u64 = 24;

// Part `p`'s two store files (names from [`crate::io::work::store_files`]).
fn sig_name(p: usize) -> String {
    let [sig, _] = store_files(p);
    sig
}

fn ids_name(p: usize) -> String {
    let [_, ids] = store_files(p);
    ids
}

fn record_size(k: usize) -> u64 {
    4 * k as u64 + 40
}

/// Where a run's signatures are: `k` values per document, in the store's records or in the pair
/// signature files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    pub k: usize,
    pub in_records: bool,
}

impl Layout {
    /// Signature values per store record.
    pub(crate) fn record_k(self) -> usize {
        match self.in_records {
            true => self.k,
            false => 0,
        }
    }
}

/// What [`fetch`] reads besides each document's shingle count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wanted {
    /// The signatures (always read when the records hold them).
    pub signatures: bool,
    /// The ids.
    pub ids: bool,
}

impl Wanted {
    pub(crate) const SIGNATURES: Wanted = Wanted {
        signatures: true,
        ids: false,
    };
    pub(crate) const IDS: Wanted = Wanted {
        signatures: false,
        ids: true,
    };
    pub(crate) const ALL: Wanted = Wanted {
        signatures: true,
        ids: true,
    };
}

/// Documents fetched from the store: sorted global indices and their data.
#[derive(Debug, Default)]
pub(crate) struct Fetched {
    k: usize,
    docs: Vec<u64>,
    values: Vec<u32>,
    /// Where each document's signature starts in `values`, when not every fetched document has
    /// one there (signatures from the pair signature files); empty: document i's is at i * k.
    slots: Vec<usize>,
    shingles: Vec<u32>,
    ids: Vec<String>,
}

/// A fetched document without a signature in [`Fetched::slots`].
const NO_SLOT: usize = usize::MAX;

impl Fetched {
    fn index(&self, doc: u64) -> usize {
        match self.docs.binary_search(&doc) {
            Ok(i) => i,
            // Callers only ask for documents they fetched: a miss is a bug, not bad input.
            Err(_) => panic!("document {doc} was not fetched from the store"),
        }
    }

    /// The id of `doc` (fetched with [`Wanted::ids`]).
    pub(crate) fn id(&self, doc: u64) -> &str {
        match self.ids.get(self.index(doc)) {
            Some(id) => id,
            // Callers fetch ids where they use them: a miss is a bug, not bad input.
            None => panic!("the id of document {doc} was not fetched"),
        }
    }
}

impl SigSource for Fetched {
    fn k(&self) -> usize {
        self.k
    }
    fn sig(&self, doc: u64) -> &[u32] {
        let i = self.index(doc);
        let at = match self.slots.get(i) {
            None => i * self.k,
            Some(&at) => at,
        };
        match self.values.get(at..at.saturating_add(self.k)) {
            Some(sig) if sig.len() == self.k && at != NO_SLOT => sig,
            // Callers fetch signatures where they use them: a miss is a bug, not bad input.
            _ => panic!("the signature of document {doc} was not fetched"),
        }
    }
    fn shingles(&self, doc: u64) -> u32 {
        self.shingles[self.index(doc)]
    }
}

/// Reads documents `docs` (sorted, unique global indices) from the stores of the parts that hold
/// them: shingle counts, and the signatures and ids as `wanted` asks. `parts[p]` is part p's
/// (first_doc, docs).
pub(crate) fn fetch(
    work: &OutputDir,
    parts: &[(u64, u64)],
    layout: Layout,
    docs: Vec<u64>,
    wanted: Wanted,
) -> Result<Fetched> {
    let mut out = Fetched {
        k: layout.k,
        docs,
        ..Fetched::default()
    };
    if wanted.signatures || layout.in_records {
        out.values.reserve(out.docs.len() * layout.k);
    }
    let mut i = 0;
    while i < out.docs.len() {
        let d = out.docs[i];
        let p = parts.partition_point(|&(first, n)| first + n <= d);
        let Some(&(first, count)) = parts.get(p) else {
            return Err(Error::Internal(format!(
                "document {d} is outside the plan's parts"
            )));
        };
        let end = out.docs[i..].partition_point(|&x| x < first + count) + i;
        fetch_part(work, (p, first), i..end, (layout, wanted), &mut out)?;
        i = end;
    }
    Ok(out)
}

/// A work file's error: `msg` about the file `name` of the work directory.
fn damaged(work: &OutputDir, name: String) -> impl Fn(&str) -> Error + '_ {
    move |msg: &str| Error::WorkFile {
        path: work.location(&name),
        source: msg.into(),
    }
}

/// The records of some documents of a part, checked, and the records of the originals their raw
/// copies name (a copy takes signature and shingle count from its original's record).
struct PartRecords {
    records: RangeBytes,
    originals: Vec<u64>,
    original_records: RangeBytes,
}

impl PartRecords {
    /// Reads the records of `docs` (global indices) of part `p`, whose first document is
    /// `first`, with `k` signature values each.
    fn read(work: &OutputDir, (p, first): (usize, u64), docs: &[u64], k: usize) -> Result<Self> {
        let rs = record_size(k);
        let bad_sig = damaged(work, sig_name(p));
        let ranges: Vec<Range<u64>> = docs
            .iter()
            .map(|&x| {
                let at = HEADER + (x - first) * rs;
                at..at + rs
            })
            .collect();
        let records = work.read_ranges(&sig_name(p), &ranges)?;
        let at = 4 * k;
        let check = |r: &[u8]| {
            if r.len() as u64 != rs {
                return Err(bad_sig("short record"));
            }
            if xxh3_64(&r[..at + 24]) != u64_at(r, at + 24) {
                return Err(bad_sig("checksum mismatch (damaged file)"));
            }
            Ok(())
        };
        let copy_of = |r: &[u8]| u64_at(r, at + 16).checked_sub(1);
        for (j, &d) in docs.iter().enumerate().take(records.len()) {
            let r = records.get(j);
            check(r)?;
            if copy_of(r).is_some_and(|o| o >= d - first) {
                return Err(bad_sig("a copy names a later original (damaged file)"));
            }
        }
        let mut originals: Vec<u64> = (0..records.len())
            .filter_map(|j| copy_of(records.get(j)))
            .collect();
        originals.sort_unstable();
        originals.dedup();
        let original_ranges: Vec<Range<u64>> = originals
            .iter()
            .map(|&o| HEADER + o * rs..HEADER + (o + 1) * rs)
            .collect();
        let original_records = match original_ranges.is_empty() {
            true => RangeBytes::default(),
            false => work.read_ranges(&sig_name(p), &original_ranges)?,
        };
        for j in 0..original_records.len() {
            let r = original_records.get(j);
            check(r)?;
            if copy_of(r).is_some() {
                return Err(bad_sig("a copy names another copy (damaged file)"));
            }
        }
        Ok(PartRecords {
            records,
            originals,
            original_records,
        })
    }

    /// The record that holds document j's signature and shingle count (its original's for a
    /// raw copy).
    fn source(&self, j: usize, k: usize) -> &[u8] {
        let r = self.records.get(j);
        let original = u64_at(r, 4 * k + 16).checked_sub(1);
        match original.and_then(|o| self.originals.binary_search(&o).ok()) {
            Some(x) => self.original_records.get(x),
            None => r,
        }
    }
}

/// [`fetch`] of the documents `out.docs[docs]`, all of part `p` (first document `first`).
fn fetch_part(
    work: &OutputDir,
    (p, first): (usize, u64),
    docs: Range<usize>,
    (layout, wanted): (Layout, Wanted),
    out: &mut Fetched,
) -> Result<()> {
    let k = layout.record_k();
    let at = 4 * k;
    let recs = PartRecords::read(work, (p, first), &out.docs[docs.clone()], k)?;
    let n = recs.records.len();
    let source = |j: usize| recs.source(j, k);
    if layout.in_records {
        // Signatures straight into the flat buffer, on the worker threads.
        let base = out.values.len();
        out.values.resize(base + n * k, 0);
        out.values[base..]
            .par_chunks_mut(k.max(1))
            .enumerate()
            .with_min_len(64)
            .for_each(|(j, sig)| read_u32s_le(source(j), sig));
    } else if wanted.signatures {
        let local: Vec<u32> = (out.docs[docs.clone()].iter())
            .map(|&d| (d - first) as u32)
            .collect();
        let (held, values) = crate::io::pair_sigs::read(work, p, layout.k, &local)?;
        // The held documents' signatures follow each other in `values`, in document order.
        let mut next = out.values.len();
        for h in held {
            out.slots.push(if h { next } else { NO_SLOT });
            next += if h { layout.k } else { 0 };
        }
        out.values.extend(values);
    }
    out.shingles.extend((0..n).map(|j| u32_at(source(j), at)));
    if !wanted.ids {
        return Ok(());
    }
    let ranges: Vec<Range<u64>> = (0..n)
        .map(|j| {
            let r = recs.records.get(j);
            let off = u64_at(r, at + 8);
            off..off + u64::from(u32_at(r, at + 4))
        })
        .collect();
    let ids = work.read_ranges(&ids_name(p), &ranges)?;
    // Checksums and UTF-8 checks on the worker threads, in document order; collected as one
    // Result (an error is larger than an id).
    let decoded: Vec<String> = (0..n)
        .into_par_iter()
        .with_min_len(64)
        .map(|j| {
            let b = ids.get(j);
            let bad = damaged(work, ids_name(p));
            if xxh3_64(b) != u64_at(recs.records.get(j), at + 32) {
                return Err(bad("checksum mismatch (damaged file)"));
            }
            let id = std::str::from_utf8(b).map_err(|_| bad("invalid UTF-8 id"))?;
            Ok(id.to_string())
        })
        .collect::<Result<_>>()?;
    out.ids.extend(decoded);
    Ok(())
}

/// The ids of all of one part's documents, read as one piece of the store's ids file.
#[derive(Debug, Default)]
pub(crate) struct PartIds {
    ids: String,
    /// End of each document's id in `ids` (its start is the previous end, or 0).
    ends: Vec<usize>,
}

impl PartIds {
    /// The id of the part's document `i` (0-based within the part).
    pub(crate) fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.ids[start..self.ends[i]]
    }
}

/// Reads the ids of every document of part `p` in one read, without the records: `id_len` and
/// `id_hash` (xxh3-64 of each id, as the record's id checksum) come from the part's
/// `docs/pP.parquet`, beside the store; they delimit and check each id.
pub(crate) fn part_ids(
    work: &OutputDir,
    p: usize,
    id_len: &[u32],
    id_hash: &[u64],
) -> Result<PartIds> {
    let name = ids_name(p);
    let bad = |msg: &str| Error::WorkFile {
        path: work.location(&name),
        source: msg.into(),
    };
    let bytes = work.read(&name)?.ok_or_else(|| bad("missing"))?;
    let mut ends = Vec::with_capacity(id_len.len());
    let mut end = 0usize;
    for &n in id_len {
        end += n as usize;
        ends.push(end);
    }
    if end != bytes.len() || id_hash.len() != ends.len() {
        return Err(bad(
            "its length does not match the part's ids (damaged file)",
        ));
    }
    (0..ends.len())
        .into_par_iter()
        .with_min_len(1024)
        .try_for_each(|i| {
            let b = &bytes[if i == 0 { 0 } else { ends[i - 1] }..ends[i]];
            if xxh3_64(b) != id_hash[i] {
                return Err(bad("checksum mismatch (damaged file)"));
            }
            // Each id valid on its own, so every end is a character boundary of the whole.
            std::str::from_utf8(b).map_err(|_| bad("invalid UTF-8 id"))?;
            Ok(())
        })?;
    let ids = String::from_utf8(bytes).map_err(|_| bad("invalid UTF-8 id"))?;
    Ok(PartIds { ids, ends })
}

#[cfg(test)]
mod tests {
    use super::writer::Files;
    use super::*;
    use crate::minhash::Signatures;

    const TWO: Layout = Layout {
        k: 2,
        in_records: true,
    };

    /// A store of `docs` documents, k = 2, written by `write` (then finished): its two files'
    /// bytes, or the writer's first error.
    fn store_bytes(
        docs: u64,
        write: impl FnOnce(&mut Writer) -> std::io::Result<()>,
    ) -> std::io::Result<[Vec<u8>; 2]> {
        let (mut sig, mut idb) = (Vec::new(), Vec::new());
        let files = Files {
            sig: &mut sig,
            ids: &mut idb,
        };
        let mut w = Writer::new(files, TWO, Some(docs))?;
        write(&mut w)?;
        w.finish()?;
        Ok([sig, idb])
    }

    /// The store of `sigs` (3 documents, k = 2) as its two files' bytes, written in two
    /// chunks (the second's offsets continue from the first's).
    fn three_docs(sigs: &Signatures, ids: [&str; 3]) -> [Vec<u8>; 2] {
        let tail = Signatures {
            k: 2,
            values: sigs.values[2..].to_vec(),
            shingles: sigs.shingles[1..].to_vec(),
        };
        store_bytes(3, |w| {
            w.append(&head_of(sigs), |i| ids[i], |_| None)?;
            w.append(&tail, |i| ids[i + 1], |_| None)
        })
        .unwrap()
    }

    #[test]
    fn round_trip_and_damage() {
        let dir = std::env::temp_dir().join(format!("cd-store-{}", std::process::id()));
        let work = OutputDir::Local(dir.clone());
        let sigs = Signatures {
            k: 2,
            values: vec![1, 2, 3, 4, 5, 6],
            shingles: vec![4, 0, 1],
        };
        let [sig, idb] = three_docs(&sigs, ["id0", "id1", "id2"]);
        assert_eq!(&sig[..8], MAGIC);
        assert_eq!(sig.len() as u64, HEADER + 3 * record_size(2));
        assert_eq!(idb.len(), 3 * 3);
        work.write_bytes(&sig_name(1), sig.clone()).unwrap();
        work.write_bytes(&ids_name(1), idb.clone()).unwrap();
        let parts = [(0, 10), (10, 3)];
        let all = Wanted::ALL;
        let f = fetch(&work, &parts, TWO, vec![10, 11, 12], all).unwrap();
        assert_eq!(f.sig(11), &[3, 4]);
        assert_eq!(f.shingles(10), 4);
        assert_eq!(f.shingles(12), 1);
        assert_eq!(f.id(12), "id2");
        // Records alone need no ids file.
        std::fs::remove_file(dir.join(ids_name(1))).unwrap();
        let f = fetch(&work, &parts, TWO, vec![10, 12], Wanted::SIGNATURES).unwrap();
        assert_eq!((f.sig(12), f.shingles(12)), (&[5, 6][..], 1));
        assert!(fetch(&work, &parts, TWO, vec![10], all).is_err());
        // A flipped byte is caught in each file, when what it covers is read.
        let flip = |mut b: Vec<u8>, at: usize| {
            b[at] ^= 1;
            b
        };
        work.write_bytes(&ids_name(1), flip(idb.clone(), 1))
            .unwrap();
        let e = fetch(&work, &parts, TWO, vec![10], all)
            .unwrap_err()
            .to_string();
        assert!(e.contains("checksum"), "{e}");
        assert_eq!(
            fetch(&work, &parts, TWO, vec![11], all).unwrap().id(11),
            "id1"
        );
        work.write_bytes(&sig_name(1), flip(sig, HEADER as usize + 2))
            .unwrap();
        let e = fetch(&work, &parts, TWO, vec![10], Wanted::SIGNATURES)
            .unwrap_err()
            .to_string();
        assert!(e.contains("p00001.sig") && e.contains("checksum"), "{e}");
        assert!(fetch(&work, &parts, TWO, vec![13], all).is_err());
        // A writer that gets fewer documents than announced fails at the end.
        assert!(store_bytes(1, |_| Ok(())).is_err());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn raw_copies_read_as_their_originals() {
        let dir = std::env::temp_dir().join(format!("cd-store-copies-{}", std::process::id()));
        let work = OutputDir::Local(dir.clone());
        // Documents 0 and 1 computed; 2 a copy of 0 and 3 a copy of 1 (their values unused).
        let sigs = Signatures {
            k: 2,
            values: vec![1, 2, 3, 4, 0, 0, 0, 0],
            shingles: vec![3, 1, 0, 0],
        };
        let ids = ["a", "b", "c", "d"];
        let copy_of = |i: usize| [None, None, Some(0), Some(1)][i];
        let [sig, idb] = store_bytes(4, |w| w.append(&sigs, |i| ids[i], copy_of)).unwrap();
        work.write_bytes(&sig_name(0), sig).unwrap();
        work.write_bytes(&ids_name(0), idb).unwrap();
        let all = Wanted::ALL;
        for docs in [vec![2, 3], vec![0, 1, 2, 3], vec![3]] {
            let f = fetch(&work, &[(0, 4)], TWO, docs.clone(), all).unwrap();
            for &d in &docs {
                let o = copy_of(d as usize).map_or(d as usize, |o| o as usize);
                assert_eq!(f.sig(d), &sigs.values[2 * o..2 * o + 2]);
                assert_eq!(f.shingles(d), sigs.shingles[o]);
                assert_eq!(f.id(d), ids[d as usize]);
            }
        }
        // A copy must name an earlier document.
        let later = |i: usize| (i == 1).then_some(1);
        assert!(store_bytes(4, |w| w.append(&sigs, |i| ids[i], later)).is_err());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn part_ids_read_in_one_piece_and_checked() {
        let dir = std::env::temp_dir().join(format!("cd-store-ids-{}", std::process::id()));
        let work = OutputDir::Local(dir.clone());
        let ids = ["a", "", "日本", "id-3"];
        let len: Vec<u32> = ids.iter().map(|i| i.len() as u32).collect();
        let hash: Vec<u64> = ids.iter().map(|i| xxh3_64(i.as_bytes())).collect();
        work.write_bytes(&ids_name(0), ids.concat().into_bytes())
            .unwrap();
        let got = part_ids(&work, 0, &len, &hash).unwrap();
        assert_eq!((0..4).map(|i| got.get(i)).collect::<Vec<_>>(), ids);
        // A damaged byte, a wrong length and a missing file each name the file.
        let mut bytes = ids.concat().into_bytes();
        bytes[3] ^= 1;
        work.write_bytes(&ids_name(0), bytes).unwrap();
        let e = part_ids(&work, 0, &len, &hash).unwrap_err().to_string();
        assert!(e.contains("p00000.ids") && e.contains("checksum"), "{e}");
        let e = part_ids(&work, 0, &len[..3], &hash[..3])
            .unwrap_err()
            .to_string();
        assert!(e.contains("length"), "{e}");
        let e = part_ids(&work, 1, &len, &hash).unwrap_err().to_string();
        assert!(e.contains("p00001.ids") && e.contains("missing"), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }

    fn head_of(s: &Signatures) -> Signatures {
        Signatures {
            k: s.k,
            values: s.values[..s.k].to_vec(),
            shingles: s.shingles[..1].to_vec(),
        }
    }
}
