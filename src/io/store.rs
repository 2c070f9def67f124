//! The document store: what later tasks need to know about a document, written once by the
//! signatures task of its part and read back by document index, without reading the shards again.
//!
//! Two files per part, little-endian:
//! ```text
//! store/pNNNNN.sig   header  "CDSTORE3" | k: u32 | docs: u32 | first_doc: u64        (24 bytes)
//!                    record  signature [u32; k] | shingles: u32 | id_len: u32
//!                            | blob_offset: u64 | check_meta: u64 | check_keys: u64  (4k + 32 bytes)
//!                            ... one per document, in document order ...
//! store/pNNNNN.blob  id bytes then shingle keys ([u32; shingles]) of each document, in order
//! ```
//! The keys are the document's shingle keys in text order, repeats kept (see
//! [`crate::text::shingle::shingle_key`]): exact verification compares the ones it needs
//! ([`crate::text::shingle::KeyTable`]) instead of normalising, tokenising and hashing the text
//! again. `blob_offset` is the id's position in the
//! `.blob` file. `check_meta` is xxh3-64 of the record's first 4k + 4 bytes and the id;
//! `check_keys` of the key bytes; both are verified on every read of what they cover, so a
//! damaged file is reported rather than silently used. Record `i` is at `24 + i * (4k + 32)`: a
//! task reads exactly the documents it needs (two ranged reads per batch and part), so its memory
//! follows its own pairs, not the corpus. Both files are appended to chunk by chunk as the
//! signatures task reads its rows (so it never holds more than a chunk of them), each under a
//! temporary name (or as one object) and renamed when complete: a file is complete or absent, and
//! both exist before the task's marker.

use std::ops::Range;

use rayon::prelude::*;
use xxhash_rust::xxh3::Xxh3;

use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::stages::signature::Signatures;
use crate::stages::verify::{ShingleSets, SigSource};

const MAGIC: &[u8; 8] = b"CDSTORE3";
const HEADER: u64 = 24;

/// Name of part `p`'s signature file (header and records) inside the work directory.
pub fn sig_name(part: usize) -> String {
    format!("store/p{part:05}.sig")
}

/// Name of part `p`'s blob file (ids and shingle keys) inside the work directory.
pub fn blob_name(part: usize) -> String {
    format!("store/p{part:05}.blob")
}

fn record_size(k: usize) -> u64 {
    4 * k as u64 + 32
}

/// Checksum of a record's signature and shingle count (`head`: its first 4k + 4 bytes) and id.
fn check_meta(head: &[u8], id: &[u8]) -> u64 {
    let mut h = Xxh3::new();
    h.update(head);
    h.update(id);
    h.digest()
}

/// Writes one part's store as a stream: [`Writer::append`] adds documents in order to the
/// records (`sig`) and the blob (`blob`: ids and keys); offsets come from the running blob
/// length, so only the caller's current chunk is held. [`Writer::finish`] checks that exactly the
/// announced number of documents was written.
pub struct Writer<'w> {
    sig: &'w mut (dyn std::io::Write + Send),
    blob: &'w mut (dyn std::io::Write + Send),
    k: usize,
    docs: u64,
    written: u64,
    offset: u64,
    rec: Vec<u8>,
    keys: Vec<u8>,
}

impl<'w> Writer<'w> {
    /// Starts a store for `docs` documents from global index `first_doc`, signatures of `k` values.
    pub fn new(
        sig: &'w mut (dyn std::io::Write + Send),
        blob: &'w mut (dyn std::io::Write + Send),
        k: usize,
        first_doc: u64,
        docs: u64,
    ) -> std::io::Result<Self> {
        sig.write_all(MAGIC)?;
        sig.write_all(&(k as u32).to_le_bytes())?;
        sig.write_all(&(docs as u32).to_le_bytes())?;
        sig.write_all(&first_doc.to_le_bytes())?;
        Ok(Writer {
            sig,
            blob,
            k,
            docs,
            written: 0,
            offset: 0,
            rec: Vec::with_capacity(record_size(k) as usize),
            keys: Vec::new(),
        })
    }

    /// Appends the documents of `sigs` (local index i), with their shingle keys and ids.
    pub fn append<'a>(
        &mut self,
        sigs: &Signatures,
        keys: impl Fn(usize) -> &'a [u32],
        id: impl Fn(usize) -> &'a str,
    ) -> std::io::Result<()> {
        let k = self.k;
        if sigs.k != k || self.written + sigs.len() as u64 > self.docs {
            return Err(std::io::Error::other(format!(
                "store announced {} documents of {k} values; got {} more of {}",
                self.docs,
                sigs.len(),
                sigs.k
            )));
        }
        for i in 0..sigs.len() {
            let sig = &sigs.values[i * k..(i + 1) * k];
            let shingles = sigs.shingles[i];
            let keys = keys(i);
            if keys.len() != shingles as usize {
                return Err(std::io::Error::other(format!(
                    "document {i} of the chunk has {shingles} shingles but {} keys",
                    keys.len()
                )));
            }
            let kb = &mut self.keys;
            kb.clear();
            for v in keys {
                kb.extend_from_slice(&v.to_le_bytes());
            }
            let idb = id(i).as_bytes();
            let rec = &mut self.rec;
            rec.clear();
            for v in sig {
                rec.extend_from_slice(&v.to_le_bytes());
            }
            rec.extend_from_slice(&shingles.to_le_bytes());
            let meta = check_meta(rec, idb);
            rec.extend_from_slice(&(idb.len() as u32).to_le_bytes());
            rec.extend_from_slice(&self.offset.to_le_bytes());
            rec.extend_from_slice(&meta.to_le_bytes());
            rec.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(kb).to_le_bytes());
            self.sig.write_all(rec)?;
            self.blob.write_all(idb)?;
            self.blob.write_all(kb)?;
            self.offset += (idb.len() + kb.len()) as u64;
        }
        self.written += sigs.len() as u64;
        Ok(())
    }

    /// Ends the store; fails unless every announced document was appended.
    pub fn finish(self) -> std::io::Result<()> {
        if self.written != self.docs {
            return Err(std::io::Error::other(format!(
                "store announced {} documents but {} were written",
                self.docs, self.written
            )));
        }
        Ok(())
    }
}

/// Documents fetched from the store: sorted global indices and their data.
#[derive(Debug, Default)]
pub struct Fetched {
    k: usize,
    docs: Vec<u32>,
    values: Vec<u32>,
    shingles: Vec<u32>,
    sets: Vec<Vec<u32>>,
    ids: Vec<String>,
}

impl Fetched {
    fn index(&self, doc: u32) -> usize {
        match self.docs.binary_search(&doc) {
            Ok(i) => i,
            // Callers only ask for documents they fetched: a miss is a bug, not bad input.
            Err(_) => panic!("document {doc} was not fetched from the store"),
        }
    }

    /// The id of `doc`.
    pub fn id(&self, doc: u32) -> &str {
        &self.ids[self.index(doc)]
    }

    /// The exact shingle sets of the fetched documents (empty sets unless fetched with sets).
    pub fn into_sets(self) -> ShingleSets {
        ShingleSets::new(self.docs, self.sets)
    }
}

impl SigSource for Fetched {
    fn k(&self) -> usize {
        self.k
    }
    fn sig(&self, doc: u32) -> &[u32] {
        let i = self.index(doc) * self.k;
        &self.values[i..i + self.k]
    }
    fn shingles(&self, doc: u32) -> u32 {
        self.shingles[self.index(doc)]
    }
}

/// One document as read back: shingle count, id, exact set (empty if not asked for).
type Record = (u32, String, Vec<u32>);

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

/// Reads documents `docs` (sorted, unique global indices) from the stores of the parts that hold
/// them: signatures, shingle counts and ids, and, when `sets` is set, their shingle keys (as
/// stored: text order, repeats kept). `parts[p]` is part p's (first_doc, docs); `k` the
/// signature length.
pub fn fetch(
    work: &OutputDir,
    parts: &[(u64, u64)],
    k: usize,
    docs: Vec<u32>,
    sets: bool,
) -> Result<Fetched> {
    let rs = record_size(k);
    let mut out = Fetched {
        k,
        docs,
        ..Fetched::default()
    };
    out.values.reserve(out.docs.len() * k);
    let mut i = 0;
    while i < out.docs.len() {
        let d = out.docs[i] as u64;
        let p = parts.partition_point(|&(first, n)| first + n <= d);
        let Some(&(first, count)) = parts.get(p) else {
            return Err(Error::Task(format!(
                "document {d} is outside the plan's parts"
            )));
        };
        let end = out.docs[i..].partition_point(|&x| (x as u64) < first + count) + i;
        let name = sig_name(p);
        let bad = |msg: String| Error::WorkFile {
            path: work.location(&name),
            msg,
        };
        let ranges: Vec<Range<u64>> = out.docs[i..end]
            .iter()
            .map(|&x| {
                let at = HEADER + (x as u64 - first) * rs;
                at..at + rs
            })
            .collect();
        let records = work.read_ranges(&name, &ranges)?;
        let mut blobs = Vec::with_capacity(records.len());
        for j in 0..records.len() {
            let r = records.get(j);
            if r.len() as u64 != rs {
                return Err(bad("short record".into()));
            }
            let at = 4 * k;
            let keys = if sets { 4 * u32_at(r, at) as u64 } else { 0 };
            let ilen = u32_at(r, at + 4) as u64;
            let off = u64_at(r, at + 8);
            blobs.push(off..off + ilen + keys);
        }
        let blob_bytes = work.read_ranges(&blob_name(p), &blobs)?;
        // Signatures straight into the flat buffer; checksums, UTF-8 checks and set sorting on
        // the worker threads, results kept in document order.
        let base = out.values.len();
        out.values.resize(base + records.len() * k, 0);
        out.values[base..]
            .par_chunks_mut(k.max(1))
            .enumerate()
            .with_min_len(64)
            .for_each(|(j, sig)| {
                for (v, c) in sig.iter_mut().zip(records.get(j).chunks_exact(4)) {
                    *v = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                }
            });
        let decoded: Vec<Result<Record>> = (0..records.len())
            .into_par_iter()
            .with_min_len(64)
            .map(|j| {
                let (r, b) = (records.get(j), blob_bytes.get(j));
                let at = 4 * k;
                let shingles = u32_at(r, at);
                let ilen = u32_at(r, at + 4) as usize;
                let damaged = || bad("checksum mismatch (damaged file)".into());
                if b.len() < ilen || check_meta(&r[..at + 4], &b[..ilen]) != u64_at(r, at + 16) {
                    return Err(damaged());
                }
                let (id, keys) = b.split_at(ilen);
                let id = std::str::from_utf8(id)
                    .map_err(|_| bad("invalid UTF-8 id".into()))?
                    .to_string();
                let mut set = Vec::new();
                if sets {
                    if keys.len() != 4 * shingles as usize
                        || xxhash_rust::xxh3::xxh3_64(keys) != u64_at(r, at + 24)
                    {
                        return Err(damaged());
                    }
                    set = keys.chunks_exact(4).map(|c| u32_at(c, 0)).collect();
                }
                Ok((shingles, id, set))
            })
            .collect();
        for d in decoded {
            let (shingles, id, set) = d?;
            out.ids.push(id);
            out.sets.push(set);
            out.shingles.push(shingles);
        }
        i = end;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let dir = std::env::temp_dir().join(format!("cd-store-{}", std::process::id()));
        let work = OutputDir::Local(dir.clone());
        let sigs = Signatures {
            k: 2,
            values: vec![1, 2, 3, 4, 5, 6],
            shingles: vec![4, 0, 1],
        };
        let keys: [&[u32]; 3] = [&[9, 3, 9, 1], &[], &[7]];
        let ids = ["id0", "id1", "id2"];
        let (mut sig, mut bytes) = (Vec::new(), Vec::new());
        {
            let mut w = Writer::new(&mut sig, &mut bytes, 2, 10, 3).unwrap();
            // Two chunks: the second's blob offsets continue from the first's.
            let head = Signatures {
                k: 2,
                values: sigs.values[..2].to_vec(),
                shingles: sigs.shingles[..1].to_vec(),
            };
            let tail = Signatures {
                k: 2,
                values: sigs.values[2..].to_vec(),
                shingles: sigs.shingles[1..].to_vec(),
            };
            w.append(&head, |i| keys[i], |i| ids[i]).unwrap();
            w.append(&tail, |i| keys[i + 1], |i| ids[i + 1]).unwrap();
            w.finish().unwrap();
        }
        assert_eq!(&sig[..8], MAGIC);
        assert_eq!(sig.len() as u64, HEADER + 3 * record_size(2));
        assert_eq!(bytes.len(), 3 * 3 + 4 * 5);
        work.write_bytes(&sig_name(1), sig).unwrap();
        work.write_bytes(&blob_name(1), bytes.clone()).unwrap();
        let parts = [(0, 10), (10, 3)];
        let f = fetch(&work, &parts, 2, vec![10, 11, 12], true).unwrap();
        assert_eq!(f.sig(11), &[3, 4]);
        assert_eq!(f.shingles(10), 4);
        assert_eq!(f.shingles(12), 1);
        assert_eq!(f.id(12), "id2");
        // Keys come back as stored: text order, repeats kept.
        let sets = f.into_sets();
        assert_eq!(sets.get(10), Some(&[9, 3, 9, 1][..]));
        assert_eq!(sets.get(11), Some(&[][..]));
        assert_eq!(sets.get(12), Some(&[7][..]));
        // One flipped key byte is caught.
        let mut bad = bytes;
        bad[3 + 5] ^= 1; // inside document 10's keys
        work.write_bytes(&blob_name(1), bad).unwrap();
        let e = fetch(&work, &parts, 2, vec![10], true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("checksum"), "{e}");
        // Without sets the (intact) id and signature still read.
        assert_eq!(
            fetch(&work, &parts, 2, vec![10], false).unwrap().id(10),
            "id0"
        );
        assert!(fetch(&work, &parts, 2, vec![13], true).is_err());
        // A writer that gets fewer documents than announced fails at the end, and one whose keys
        // disagree with the shingle count at once.
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let w = Writer::new(&mut a, &mut b, 2, 0, 1).unwrap();
        assert!(w.finish().is_err());
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let mut w = Writer::new(&mut a, &mut b, 2, 0, 1).unwrap();
        assert!(w.append(&head_of(&sigs), |_| &[1, 2], |_| "x").is_err());
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
