//! One batch of the retained index: its files, how a batch is written from tonight's run, and
//! how a later run looks documents up in it.
//!
//! Files of `batches/NAME-HASH/` (all [`crate::index::blocks`] files, each with its `.meta`):
//!
//! | file            | record (sorted by)                               | filter over   | bytes/doc |
//! |-----------------|--------------------------------------------------|---------------|-----------|
//! | `bands/bBBB.bin`| 16 bits of the band key, document, SimHash: fingerprint (by key, doc) | 64-bit key | 6 (14) per band |
//! | `exact.bin`     | 128-bit hash of the normalised text, document    | its low 64 bits | 20      |
//! | `docs.bin`      | MinHash: K b-bit values (8 bits), shingle count; SimHash: fingerprint, features, shingles | - | K + 4 / 16 |
//! | `ids.bin`       | id length, id bytes                              | -             | 4 + id    |
//! | `keys.bin`      | document, key count, shingle keys: short documents only | -      | 8 + 4 x keys |
//!
//! Documents are numbered as in the run that wrote the batch (its global input order), so the
//! earliest document of a batch is its smallest number. A band file is sorted by the high 32
//! bits of the 64-bit band key, which its block fences hold; each record keeps 16 more bits. A
//! lookup that passes the filter reads the block(s) its fences admit and compares those 16 bits,
//! so a record with another key makes a candidate about once in 1,000 probes, which
//! verification rejects: never a drop.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use ahash::AHashMap;

use crate::error::{Error, Result};
use crate::index::blocks::Blocked;
use crate::index::live;
use crate::index::BatchEntry;
use crate::io::output::OutputDir;
use crate::io::{u32_at, u32s_le, u64_at};

pub(crate) use super::batch_write::{
    band_file, fragment, push, put, write_band, write_exact, Written, BAND_RECORD, EXACT,
};
pub(crate) use super::records::{
    bbit_estimate, id_record, keys_record, minhash_record, minhash_record_shingles, simhash_record,
    simhash_record_parts,
};

/// The per-document records.
pub(crate) const DOCS: &str = "docs.bin";
/// The ids.
pub(crate) const IDS: &str = "ids.bin";
/// The shingle keys of short documents.
pub(crate) const KEYS: &str = "keys.bin";

/// A batch opened for lookups: every file's meta (filters, block tables) in memory.
pub(crate) struct BatchReader {
    pub entry: BatchEntry,
    dir: OutputDir,
    bands: Vec<Blocked>,
    exact: Blocked,
    docs: Blocked,
    ids: Blocked,
    keys: Blocked,
    /// A compacted batch ([`crate::index::compact`], [`crate::index::live`]): how its files are numbered.
    renumbered: Option<Renumbered>,
}

/// What reading a compacted batch needs beyond its metas: the original numbers of the documents
/// its per-document files hold, in file order, and each band's fences before compaction (its
/// band records are keyed by the block they were in then, [`live::BAND_RECORD`]).
struct Renumbered {
    live: Vec<u32>,
    fences: Vec<Vec<u64>>,
}

/// A band record read back: the block it was first written in, its key fragment, its document
/// and (SimHash) its fingerprint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BandRecord {
    pub block: u32,
    pub fragment: [u8; 2],
    pub doc: u32,
    pub value: Option<u64>,
}

/// One batch's place in [`OPEN`]: its directory and the reader while some task holds it.
type Slot = (String, Arc<Mutex<Weak<BatchReader>>>);

/// Batches open in this process, shared by its lookup tasks (a local run runs them all in one
/// process): each batch's filters are loaded and held once, not once per part. A weak reference
/// frees a batch when the last task using it ends (the list keeps only names and empty slots).
static OPEN: Mutex<Vec<Slot>> = Mutex::new(Vec::new());

impl BatchReader {
    /// Opens batch `entry` of the index in `index` (with `bands` band files), shared with any
    /// other task of this process that has it open.
    pub(crate) fn open(
        index: &OutputDir,
        entry: &BatchEntry,
        bands: usize,
    ) -> Result<Arc<BatchReader>> {
        let dir = index.child(entry.files()).location("");
        let slot = {
            let mut open = OPEN.lock().unwrap_or_else(PoisonError::into_inner);
            match open.iter().find(|(d, _)| *d == dir) {
                Some((_, s)) => Arc::clone(s),
                None => {
                    let s = Arc::new(Mutex::new(Weak::new()));
                    open.push((dir, Arc::clone(&s)));
                    s
                }
            }
        };
        let mut held = slot.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(r) = held
            .upgrade()
            .filter(|r| r.entry == *entry && r.bands.len() == bands)
        {
            return Ok(r);
        }
        let r = Arc::new(Self::load(index, entry, bands)?);
        *held = Arc::downgrade(&r);
        Ok(r)
    }

    /// Loads the batch's metas one after another (callers open batches in parallel). Nothing
    /// here runs parallel work: a pool thread waiting for it while the slot is locked could take
    /// up another task's open of this same batch and block on the lock it holds itself.
    fn load(index: &OutputDir, entry: &BatchEntry, bands: usize) -> Result<BatchReader> {
        let dir = index.child(entry.files());
        let mut names: Vec<String> = (0..bands).map(band_file).collect();
        names.extend([EXACT, DOCS, IDS, KEYS].map(String::from));
        let mut metas: Vec<Blocked> = names
            .iter()
            .map(|n| Blocked::load(&dir, n))
            .collect::<Result<_>>()?;
        let keys = metas.pop();
        let ids = metas.pop();
        let docs = metas.pop();
        let exact = metas.pop();
        let renumbered = match entry.compacted {
            None => None,
            Some(_) => Some(Renumbered {
                live: live::read_live(&dir)?,
                fences: live::read_fences(&dir, bands)?,
            }),
        };
        match (exact, docs, ids, keys) {
            (Some(exact), Some(docs), Some(ids), Some(keys)) => Ok(BatchReader {
                entry: entry.clone(),
                dir,
                bands: metas,
                exact,
                docs,
                ids,
                keys,
                renumbered,
            }),
            _ => Err(Error::Internal("index batch files missing".into())),
        }
    }

    /// The local paths of the data files lookups read at random, by how often a lookup reads
    /// them: band files, exact copies, ids, signatures, shingle keys (none for a remote index).
    pub(crate) fn random_reads(&self) -> [Vec<std::path::PathBuf>; 5] {
        let at = |f: &Blocked| self.dir.local_dir().map(|d| d.join(f.name()));
        let singles = [&self.exact, &self.ids, &self.docs, &self.keys];
        let [e, i, d, k] = singles.map(|f| at(f).into_iter().collect());
        [self.bands.iter().filter_map(at).collect(), e, i, d, k]
    }

    /// Bytes of filters and block tables held.
    pub(crate) fn memory_bytes(&self) -> usize {
        let metas: usize = (self.bands.iter())
            .chain([&self.exact, &self.docs, &self.ids, &self.keys])
            .map(Blocked::memory_bytes)
            .sum();
        let renumbered = self.renumbered.as_ref().map_or(0, |r| {
            4 * r.live.len() + 8 * r.fences.iter().map(Vec::len).sum::<usize>()
        });
        metas + renumbered
    }

    /// The (key, query) pairs of `keys` whose key some document of the batch may have in band
    /// `b` (the filter's answer), in order.
    pub(crate) fn band_may_have(&self, b: usize, keys: &[(u64, u32)]) -> Vec<(u64, u32)> {
        let Some(r) = &self.renumbered else {
            return may_have(&self.bands[b], keys);
        };
        // Compacted: the filter holds (block before compaction, fragment) of each record.
        let Some(filter) = self.bands[b].filter() else {
            return keys.to_vec();
        };
        let fences = &r.fences[b];
        // Keys sorted by their high bits (as lookups give them) walk the fences once.
        let sorted = keys.windows(2).all(|w| w[0].0 >> 32 <= w[1].0 >> 32);
        let (mut below, mut upto) = (0, 0);
        // (filter key, position in `keys`) of each key's old blocks, probed in one vector pass.
        let mut probes: Vec<(u64, u32)> = Vec::with_capacity(keys.len());
        for (at, &(k, _)) in keys.iter().enumerate() {
            let blocks = match sorted {
                true => {
                    let high = k >> 32;
                    while below < fences.len() && fences[below] < high {
                        below += 1;
                    }
                    while upto < fences.len() && fences[upto] <= high {
                        upto += 1;
                    }
                    let lo = below.saturating_sub(1);
                    lo..upto.max(lo)
                }
                false => old_blocks(fences, k),
            };
            let frag = fragment(k);
            probes.extend(blocks.map(|i| (live::block_key(i as u32, frag), at as u32)));
        }
        let mut out: Vec<(u64, u32)> = (filter.may_contain(&probes, |(p, _)| p).iter())
            .map(|&(_, at)| keys[at as usize])
            .collect();
        // A key probed for two blocks passes once.
        out.dedup();
        out
    }

    /// The (low 64 bits of an exact-text hash, query) pairs of `keys` whose text some document of
    /// the batch may have (the filter's answer), in order.
    pub(crate) fn exact_may_have(&self, keys: &[(u64, u32)]) -> Vec<(u64, u32)> {
        may_have(&self.exact, keys)
    }

    /// The documents of band `b` whose key may match each query (query number, 64-bit key):
    /// (query number, document) pairs. A record matches when it lies in a block whose fences
    /// admit the query's high 32 bits and its 16-bit fragment equals the query's: a block of
    /// 64 records then yields a false candidate about once in 1,000 probes, which verification
    /// rejects.
    /// `keep(query, value)` is asked of each match with the record's value (SimHash: its
    /// fingerprint; 0 without values) and drops the match when false.
    pub(crate) fn find_band(
        &self,
        b: usize,
        queries: &[(usize, u64)],
        keep: impl Fn(usize, u64) -> bool,
    ) -> Result<Vec<(usize, u32)>> {
        if let Some(r) = &self.renumbered {
            return self.find_band_compacted(b, &r.fences[b], queries, keep);
        }
        let file = &self.bands[b];
        let wanted = queries.iter().flat_map(|&(_, k)| file.blocks_with(k >> 32));
        let (blocks, data) = file.read_some(&self.dir, wanted)?;
        // Record size from the block: 64 records (fewer in the last block).
        let per = crate::index::blocks::RECORDS_PER_BLOCK as u64;
        let size = |i: usize, len: usize| {
            let n = file.records().saturating_sub(i as u64 * per).min(per) as usize;
            (n > 0 && len.is_multiple_of(n))
                .then(|| len / n)
                .filter(|&s| s >= BAND_RECORD)
        };
        let mut out = Vec::new();
        for &(q, key) in queries {
            let frag = fragment(key).to_le_bytes();
            for i in file.blocks_with(key >> 32) {
                let Ok(j) = blocks.binary_search(&i) else {
                    continue;
                };
                let rs = size(i, data[j].len()).ok_or_else(|| Error::IndexFile {
                    path: self.dir.location(&band_file(b)),
                    source: crate::error::FileError::Invalid(format!(
                        "block {i} does not hold whole records"
                    )),
                })?;
                for rec in data[j].chunks_exact(rs) {
                    let value = if rs >= BAND_RECORD + 8 {
                        u64_at(rec, BAND_RECORD)
                    } else {
                        0
                    };
                    if rec[..2] == frag && keep(q, value) {
                        out.push((q, u32_at(rec, 2)));
                    }
                }
            }
        }
        Ok(out)
    }

    /// [`BatchReader::find_band`] in a compacted batch: a query's blocks are those its key falls
    /// in before compaction (`fences`), whose records the band file keys by that block.
    fn find_band_compacted(
        &self,
        b: usize,
        fences: &[u64],
        queries: &[(usize, u64)],
        keep: impl Fn(usize, u64) -> bool,
    ) -> Result<Vec<(usize, u32)>> {
        let file = &self.bands[b];
        let wanted = (queries.iter())
            .flat_map(|&(_, k)| old_blocks(fences, k))
            .flat_map(|i| file.blocks_with(i as u64));
        let (blocks, data) = file.read_some(&self.dir, wanted)?;
        let mut out = Vec::new();
        for &(q, key) in queries {
            let frag = fragment(key).to_le_bytes();
            for i in old_blocks(fences, key) {
                for j in file.blocks_with(i as u64) {
                    let Ok(x) = blocks.binary_search(&j) else {
                        continue;
                    };
                    for r in self.band_block(b, j, &data[x])? {
                        if r.block == i as u32
                            && r.fragment == frag
                            && keep(q, r.value.unwrap_or(0))
                        {
                            out.push((q, r.doc));
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// The records of block `i` of band `b`'s file (bytes `bytes`).
    fn band_block(&self, b: usize, i: usize, bytes: &[u8]) -> Result<Vec<BandRecord>> {
        let file = &self.bands[b];
        let per = crate::index::blocks::RECORDS_PER_BLOCK as u64;
        let n = file.records().saturating_sub(i as u64 * per).min(per) as usize;
        let compacted = self.renumbered.is_some();
        let least = if compacted {
            live::BAND_RECORD
        } else {
            BAND_RECORD
        };
        let size = (n > 0 && bytes.len().is_multiple_of(n))
            .then(|| bytes.len() / n)
            .filter(|&s| s >= least)
            .ok_or_else(|| Error::IndexFile {
                path: self.dir.location(&band_file(b)),
                source: format!("block {i} does not hold whole records").into(),
            })?;
        Ok(bytes
            .chunks_exact(size)
            .map(|rec| BandRecord {
                block: if compacted { u32_at(rec, 6) } else { i as u32 },
                fragment: [rec[0], rec[1]],
                doc: u32_at(rec, 2),
                value: (size >= least + 8).then(|| u64_at(rec, least)),
            })
            .collect())
    }

    /// Every record of band `b`, in file order, and the band's fences as first written.
    pub(crate) fn band_all(&self, b: usize) -> Result<(Vec<BandRecord>, Vec<u64>)> {
        let mut out = Vec::new();
        let file = &self.bands[b];
        file.for_each_block(&self.dir, |i, bytes| {
            out.extend(self.band_block(b, i, bytes)?);
            Ok(())
        })?;
        let fences = match &self.renumbered {
            Some(r) => r.fences[b].clone(),
            None => file.fences(),
        };
        Ok((out, fences))
    }

    /// Every (exact-text hash, document) of the batch.
    pub(crate) fn exact_all(&self) -> Result<Vec<(u128, u32)>> {
        let mut out = Vec::new();
        self.exact.for_each_block(&self.dir, |_, bytes| {
            out.extend(bytes.chunks_exact(20).map(|rec| {
                let mut x = [0u8; 16];
                x.copy_from_slice(&rec[..16]);
                (u128::from_le_bytes(x), u32_at(rec, 16))
            }));
            Ok(())
        })?;
        Ok(out)
    }

    /// The documents its files hold (original numbers, ascending).
    pub(crate) fn in_files(&self) -> Vec<u32> {
        match &self.renumbered {
            Some(r) => r.live.clone(),
            None => (0..self.entry.held() as u32).collect(),
        }
    }

    /// The first document with each queried exact-text hash: (query number, document).
    pub(crate) fn find_exact(&self, queries: &[(usize, u128)]) -> Result<Vec<(usize, u32)>> {
        let f = &self.exact;
        let fence = |h: u128| (h >> 64) as u64;
        let wanted = queries.iter().flat_map(|&(_, h)| f.blocks_with(fence(h)));
        let (blocks, data) = f.read_some(&self.dir, wanted)?;
        let mut out = Vec::new();
        for &(q, h) in queries {
            let found = f.blocks_with(fence(h)).find_map(|i| {
                let j = blocks.binary_search(&i).ok()?;
                data[j].chunks_exact(20).find_map(|rec| {
                    let mut x = [0u8; 16];
                    x.copy_from_slice(&rec[..16]);
                    (u128::from_le_bytes(x) == h).then(|| u32_at(rec, 16))
                })
            });
            out.extend(found.map(|d| (q, d)));
        }
        Ok(out)
    }

    /// Reads the records of `docs` (sorted, unique) from the per-document file `file`: `parse`
    /// splits a block's bytes into its `n` records (None: the block does not parse).
    fn per_doc<T>(
        &self,
        file: &Blocked,
        docs: &[u32],
        parse: impl Fn(&[u8], usize) -> Option<Vec<T>>,
    ) -> Result<AHashMap<u32, T>> {
        let Some(r) = &self.renumbered else {
            return self.per_position(file, docs, parse);
        };
        // Compacted: a document's record is at its place among the documents kept.
        let (positions, originals): (Vec<u32>, Vec<u32>) = (docs.iter())
            .filter_map(|&d| Some((r.live.binary_search(&d).ok()? as u32, d)))
            .unzip();
        let mut at = self.per_position(file, &positions, parse)?;
        Ok((positions.iter().zip(originals))
            .filter_map(|(p, d)| Some((d, at.remove(p)?)))
            .collect())
    }

    /// [`BatchReader::per_doc`] by position in the file.
    fn per_position<T>(
        &self,
        file: &Blocked,
        docs: &[u32],
        parse: impl Fn(&[u8], usize) -> Option<Vec<T>>,
    ) -> Result<AHashMap<u32, T>> {
        let mut blocks: Vec<usize> = docs.iter().map(|&d| file.block_of(u64::from(d))).collect();
        blocks.dedup();
        let data = file.read(&self.dir, &blocks)?;
        let per = crate::index::blocks::RECORDS_PER_BLOCK as u64;
        let mut out = AHashMap::with_capacity(docs.len());
        for (&b, bytes) in blocks.iter().zip(&data) {
            let first = b as u64 * per;
            let n = file.records().saturating_sub(first).min(per) as usize;
            let mut recs: Vec<Option<T>> = parse(bytes, n)
                .filter(|r| r.len() == n)
                .ok_or_else(|| Error::IndexFile {
                    path: self.dir.location(file.name()),
                    source: crate::error::FileError::Invalid(format!(
                        "block {b} does not hold {n} records"
                    )),
                })?
                .into_iter()
                .map(Some)
                .collect();
            let lo = docs.partition_point(|&d| u64::from(d) < first);
            let hi = docs.partition_point(|&d| u64::from(d) < first + n as u64);
            for &d in &docs[lo..hi] {
                if let Some(r) = recs[(u64::from(d) - first) as usize].take() {
                    out.insert(d, r);
                }
            }
        }
        Ok(out)
    }

    /// The `docs.bin` records of `docs` (sorted, unique).
    pub(crate) fn records(&self, docs: &[u32]) -> Result<AHashMap<u32, Vec<u8>>> {
        self.per_doc(&self.docs, docs, |bytes, n| {
            (n > 0 && bytes.len().is_multiple_of(n)).then(|| {
                bytes
                    .chunks_exact(bytes.len() / n)
                    .map(<[u8]>::to_vec)
                    .collect()
            })
        })
    }

    /// The ids of `docs` (sorted, unique).
    pub(crate) fn ids(&self, docs: &[u32]) -> Result<AHashMap<u32, String>> {
        self.per_doc(&self.ids, docs, |bytes, n| {
            let mut out = Vec::with_capacity(n);
            let mut at = 0;
            while at < bytes.len() {
                let len = u32_at(bytes.get(at..at + 4)?, 0) as usize;
                let id = bytes.get(at + 4..at + 4 + len)?;
                out.push(String::from_utf8_lossy(id).into_owned());
                at += 4 + len;
            }
            Some(out)
        })
    }

    /// The stored shingle keys of those of `docs` that have them (short documents).
    pub(crate) fn keys(&self, docs: &[u32]) -> Result<AHashMap<u32, Vec<u32>>> {
        let f = &self.keys;
        let wanted = docs.iter().flat_map(|&d| f.blocks_with(u64::from(d)));
        let (_, data) = f.read_some(&self.dir, wanted)?;
        let mut out = AHashMap::new();
        for bytes in &data {
            let mut at = 0;
            while at + 8 <= bytes.len() {
                let (doc, n) = (u32_at(bytes, at), u32_at(bytes, at + 4) as usize);
                let Some(body) = bytes.get(at + 8..at + 8 + 4 * n) else {
                    return Err(Error::IndexFile {
                        path: self.dir.location(KEYS),
                        source: "a key record is cut short".into(),
                    });
                };
                if docs.binary_search(&doc).is_ok() {
                    out.insert(doc, u32s_le(body));
                }
                at += 8 + 4 * n;
            }
        }
        Ok(out)
    }
}

/// The blocks a key falls in by `fences` (a band's fences before compaction).
fn old_blocks(fences: &[u64], key: u64) -> std::ops::Range<usize> {
    crate::index::blocks::blocks_with(fences, |&f| f, key >> 32)
}

/// The (key, query) pairs of `keys` whose key passes `file`'s filter (all without a filter).
fn may_have(file: &Blocked, keys: &[(u64, u32)]) -> Vec<(u64, u32)> {
    match file.filter() {
        Some(f) => f.may_contain(keys, |(k, _)| k),
        None => keys.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_round_trips() {
        let tmp = std::env::temp_dir().join(format!("cd-batch-{}", std::process::id()));
        let index = OutputDir::parse(tmp.to_str().unwrap());
        let entry = BatchEntry {
            name: "n1".into(),
            dir: "batches/n1-0".into(),
            documents: 150,
            held: None,
            bytes: 0,
            filter_bytes: 0,
            dropped: None,
            lingering: false,
            renews: Default::default(),
            compacted: None,
        };
        let dir = index.child(entry.files());
        dir.prepare().unwrap();
        dir.child("bands").prepare().unwrap();
        let rows: Vec<(u64, u32, u64)> = (0..150u32)
            .map(|d| (crate::lsh::mix64(u64::from(d % 50)), d, 0))
            .collect();
        write_band(&dir, 0, rows, false).unwrap();
        let keys = vec![7u32, 8, 9];
        put(&dir, DOCS, None, |w| {
            (0..150u32)
                .try_for_each(|d| push(w, &dir, DOCS, d.into(), &minhash_record(&[d, d + 1], d)))
        })
        .unwrap();
        put(&dir, IDS, None, |w| {
            (0..150u32)
                .try_for_each(|d| push(w, &dir, IDS, d.into(), &id_record(&format!("doc-{d}"))))
        })
        .unwrap();
        put(&dir, KEYS, None, |w| {
            (0..150u32)
                .filter(|d| d % 40 == 0)
                .try_for_each(|d| push(w, &dir, KEYS, d.into(), &keys_record(d, &keys)))
        })
        .unwrap();
        write_exact(
            &dir,
            (0..150u32).map(|d| (u128::from(d % 70) + 1, d)).collect(),
        )
        .unwrap();
        let r = BatchReader::open(&index, &entry, 1).unwrap();
        assert!(r.memory_bytes() > 0);
        let key = crate::lsh::mix64(3);
        assert_eq!(r.band_may_have(0, &[(key, 4)]), vec![(key, 4)]);
        let mut found = r.find_band(0, &[(0, key)], |_, _| true).unwrap();
        found.sort_unstable();
        assert_eq!(found, vec![(0, 3), (0, 53), (0, 103)]);
        // Exact: the first document with the text wins.
        assert_eq!(
            r.find_exact(&[(5, 70), (6, 999), (7, 1)]).unwrap(),
            vec![(5, 69), (7, 0)]
        );
        let recs = r.records(&[1, 64, 149]).unwrap();
        assert_eq!(recs[&149], minhash_record(&[149, 150], 149));
        assert_eq!(minhash_record_shingles(&recs[&64]), 64);
        assert_eq!(r.ids(&[0, 130]).unwrap()[&130], "doc-130");
        let k = r.keys(&[40, 41, 120]).unwrap();
        assert_eq!(k.len(), 2);
        assert_eq!(k[&120], keys);
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
