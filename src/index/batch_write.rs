//! Writing a batch from tonight's run: its band files (16 bits of each key kept beside the
//! document), its exact-text hashes and the blocked record files, with what was written.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::index::blocks::{meta_name, Writer};
use crate::index::filter::Bloom;
use crate::io::output::OutputDir;

/// Band (or block table) `b`'s key file.
pub(crate) fn band_file(b: usize) -> String {
    format!("bands/b{b:03}.bin")
}

/// The exact-text hash file.
pub(crate) const EXACT: &str = "exact.bin";

/// Bytes of a written file pair: (on disk, held in memory by a reader).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Written {
    pub bytes: u64,
    pub memory: u64,
}

impl std::ops::AddAssign for Written {
    fn add_assign(&mut self, o: Written) {
        self.bytes += o.bytes;
        self.memory += o.memory;
    }
}

/// Streams the blocked file `name` into `dir` through `fill`, then its meta (with `filter`).
pub(crate) fn put(
    dir: &OutputDir,
    name: &str,
    filter: Option<&Bloom>,
    fill: impl FnOnce(&mut Writer) -> Result<()>,
) -> Result<Written> {
    let io = |e: std::io::Error| Error::Output {
        path: dir.location(name),
        source: e.into(),
    };
    let mut meta = Vec::new();
    let mut data_bytes = 0;
    dir.write_with(name, |sink| {
        let mut w = Writer::new(sink);
        fill(&mut w)?;
        data_bytes = w.bytes();
        meta = w.finish(filter).map_err(io)?;
        Ok(())
    })?;
    // A reader holds the meta (block table and filter) as loaded.
    let memory = meta.len() as u64;
    let bytes = data_bytes + memory;
    dir.write_bytes(&meta_name(name), meta)?;
    Ok(Written { bytes, memory })
}

/// Pushes one record, naming the file on a write error.
pub(crate) fn push(
    w: &mut Writer,
    dir: &OutputDir,
    name: &str,
    key: u64,
    rec: &[u8],
) -> Result<()> {
    w.push(key, rec).map_err(|e| Error::Output {
        path: dir.location(name),
        source: e.into(),
    })
}

/// Bytes of a band record: a 16-bit key fragment and the document, then (SimHash) the document's
/// 64-bit fingerprint, so a lookup checks the Hamming distance without reading `docs.bin`.
pub(crate) const BAND_RECORD: usize = 6;

/// The 16 bits of a band key a band record keeps (bits 32..48: the block's fences hold the high
/// 32 bits of its first key, so a record's own key is known to lie between two fences).
pub(crate) fn fragment(key: u64) -> u16 {
    (key >> 32) as u16
}

/// Writes band `b`'s file from its (64-bit key, document, value) rows, in any order; the value
/// (SimHash's fingerprint) is stored when `values`.
pub(crate) fn write_band(
    dir: &OutputDir,
    b: usize,
    mut rows: Vec<(u64, u32, u64)>,
    values: bool,
) -> Result<Written> {
    let mut filter = Bloom::with_keys(rows.len());
    for &(key, _, _) in &rows {
        filter.insert(key);
    }
    // Records are ordered by (high 32 bits of the key, document), which is one u64: sorting
    // those (plus the value only where there is one) is cheaper than sorting the row tuples.
    let order = |k: u64, d: u32| (k >> 32) << 32 | u64::from(d);
    let sorted: Vec<(u64, u64)> = if values {
        rows.par_sort_unstable_by_key(|&(k, d, _)| order(k, d));
        rows.iter().map(|&(k, d, v)| (order(k, d), v)).collect()
    } else {
        let mut keys: Vec<u64> = rows.iter().map(|&(k, d, _)| order(k, d)).collect();
        drop(rows);
        keys.par_sort_unstable();
        keys.into_iter().map(|o| (o, 0)).collect()
    };
    let name = band_file(b);
    put(dir, &name, Some(&filter), |w| {
        let mut rec = Vec::with_capacity(BAND_RECORD + 8);
        for &(o, value) in &sorted {
            let (high, doc) = (o >> 32, o as u32);
            rec.clear();
            rec.extend_from_slice(&fragment(high << 32).to_le_bytes());
            rec.extend_from_slice(&doc.to_le_bytes());
            if values {
                rec.extend_from_slice(&value.to_le_bytes());
            }
            push(w, dir, &name, high, &rec)?;
        }
        Ok(())
    })
}

/// Writes the exact-text hash table from (hash, document) pairs (hash 0: none); of documents with
/// the same text only the first is kept (a lookup wants the earliest).
pub(crate) fn write_exact(dir: &OutputDir, mut hashes: Vec<(u128, u32)>) -> Result<Written> {
    hashes.retain(|h| h.0 != 0);
    hashes.par_sort_unstable();
    hashes.dedup_by_key(|e| e.0);
    let mut filter = Bloom::with_keys(hashes.len());
    for &(h, _) in &hashes {
        filter.insert(h as u64);
    }
    put(dir, EXACT, Some(&filter), |w| {
        for &(h, doc) in &hashes {
            let mut rec = [0u8; 20];
            rec[..16].copy_from_slice(&h.to_le_bytes());
            rec[16..].copy_from_slice(&doc.to_le_bytes());
            push(w, dir, EXACT, (h >> 64) as u64, &rec)?;
        }
        Ok(())
    })
}
