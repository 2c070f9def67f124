//! Compaction: a lingering batch ([`super::renew`]) is rewritten to the documents still compared
//! with, once its files hold at least [`SHRINK`] times as many, so an index that runs for months
//! stays near the size of its live documents.
//!
//! A compacted batch keeps its name and `dir` (renewals name it by `dir`) and its documents'
//! numbers (renewals, copies and origins use them); its files move to a new directory
//! (`DIR.cG`, G the head generation that named it), which [`BatchEntry::compacted`] records:
//! - `live.bin`: the numbers of the documents kept, ascending; `docs.bin` and `ids.bin` hold
//!   their records in that order, so a document's record is at its place in `live.bin`.
//! - `exact.bin`, `keys.bin`: their records of kept documents, as before (they carry numbers).
//! - `bands/bBBB.bin`: a band record carries the document but only 16 bits of its key beyond
//!   the block's fence, so its key cannot be rebuilt. Each kept record is written with the block
//!   it was in ([`BAND_RECORD`]), keyed by that block, and `fences.bin` keeps each band's
//!   fences as first written: a lookup finds a key's old block by those fences, then that
//!   block's records here; the filter holds (old block, fragment) pairs.
//! - `origins.bin`, `copies.bin`, `across.bin`, `renewed.bin`, `paragraphs.bin`: copied (by document number,
//!   about a byte per document).
//!
//! Which documents: those the next night compares with, and those a rerun of the newest batch
//! would: a batch's live documents when it was lingering then, or, when it was in the newest
//! batch's window, that batch's best index matches in it (`matched.bin`): a rerun keeps each
//! document's earliest verified match, so documents that were nobody's match change nothing.
//! Crash safety: the new files are written before a head names them and the old ones deleted
//! after; a crash in between leaves the old head, and the next run compacts again (a rerun into
//! the same directory).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::index::batch::{self, band_file, BatchReader, Written};
use crate::index::filter::Bloom;
use crate::index::live::{self, block_key, Compacted, BAND_RECORD, FENCES, LIVE};
use crate::index::{copies, labels, origins, paragraphs, renew, BatchEntry, Head, HEAD};
use crate::io::output::OutputDir;

/// A batch is compacted when its files hold at least this many times the documents still
/// compared with.
pub(crate) const SHRINK: u64 = 2;

/// What a compaction did, for the summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct CompactedBatch {
    pub batch: String,
    pub documents_before: u64,
    pub documents_after: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

/// Rewrites batch `entry` of `index` to the documents `keep` (numbers its files hold,
/// ascending) in the directory `files`; returns its entry naming them.
pub(crate) fn rewrite(
    index: &OutputDir,
    entry: &BatchEntry,
    keep: &[u32],
    files: &str,
    bands: usize,
) -> Result<BatchEntry> {
    let from = index.child(entry.files());
    let reader = BatchReader::open(index, entry, bands)?;
    let out = index.child(files);
    out.prepare()?;
    out.child("bands").prepare()?;
    let kept = |d: u32| keep.binary_search(&d).is_ok();
    let mut w = Written::default();
    let mut all_fences = Vec::with_capacity(bands);
    for b in 0..bands {
        let (records, fences) = reader.band_all(b)?;
        let records: Vec<_> = records.into_iter().filter(|r| kept(r.doc)).collect();
        let mut filter = Bloom::with_keys(records.len());
        for r in &records {
            filter.insert(block_key(r.block, u16::from_le_bytes(r.fragment)));
        }
        let name = band_file(b);
        w += batch::put(&out, &name, Some(&filter), |wr| {
            let mut rec = Vec::with_capacity(BAND_RECORD + 8);
            for r in &records {
                rec.clear();
                rec.extend_from_slice(&r.fragment);
                rec.extend_from_slice(&r.doc.to_le_bytes());
                rec.extend_from_slice(&r.block.to_le_bytes());
                if let Some(v) = r.value {
                    rec.extend_from_slice(&v.to_le_bytes());
                }
                batch::push(wr, &out, &name, r.block.into(), &rec)?;
            }
            Ok(())
        })?;
        all_fences.push(fences.iter().map(|&f| f as u32).collect());
    }
    let fences = live::encode(&all_fences);
    w.bytes += fences.len() as u64;
    out.write_bytes(FENCES, fences)?;
    let exact = reader
        .exact_all()?
        .into_iter()
        .filter(|e| kept(e.1))
        .collect();
    w += batch::write_exact(&out, exact)?;
    let keys = reader.keys(keep)?;
    w += batch::put(&out, batch::KEYS, None, |wr| {
        for &d in keep {
            if let Some(k) = keys.get(&d) {
                batch::push(wr, &out, batch::KEYS, d.into(), &batch::keys_record(d, k))?;
            }
        }
        Ok(())
    })?;
    let (records, ids) = (reader.records(keep)?, reader.ids(keep)?);
    type Record<'a> = &'a dyn Fn(u32) -> Option<Vec<u8>>;
    let per_doc: [(&str, Record); 2] = [
        (batch::DOCS, &|d| records.get(&d).cloned()),
        (batch::IDS, &|d| ids.get(&d).map(|id| batch::id_record(id))),
    ];
    for (name, get) in per_doc {
        w += batch::put(&out, name, None, |wr| {
            for (at, &d) in keep.iter().enumerate() {
                let rec = get(d).ok_or_else(|| Error::IndexFile {
                    path: from.location(name),
                    source: format!("no record for document {d}").into(),
                })?;
                batch::push(wr, &out, name, at as u64, &rec)?;
            }
            Ok(())
        })?;
    }
    let kept_list = live::encode(&[keep.to_vec()]);
    w.bytes += kept_list.len() as u64;
    out.write_bytes(LIVE, kept_list)?;
    // Files by document number, as they are (a byte or so per document).
    for name in [
        origins::ORIGINS,
        copies::COPIES,
        labels::ACROSS,
        renew::RENEWED,
    ] {
        if let Some(bytes) = from.read(name)? {
            w.bytes += bytes.len() as u64;
            out.write_bytes(name, bytes)?;
        }
    }
    // `--paragraphs`: the texts the batch retained stay until it expires (whichever of its
    // documents holds them: nothing compares their texts again).
    let para_meta = crate::index::blocks::meta_name(paragraphs::PARAGRAPHS);
    if let Some(meta) = from.read(&para_meta)? {
        let data = from.read(paragraphs::PARAGRAPHS)?.unwrap_or_default();
        w.bytes += (meta.len() + data.len()) as u64;
        out.write_bytes(paragraphs::PARAGRAPHS, data)?;
        out.write_bytes(&para_meta, meta)?;
    }
    Ok(BatchEntry {
        bytes: w.bytes,
        filter_bytes: w.memory,
        compacted: Some(Compacted {
            files: files.to_string(),
            documents: keep.len() as u64,
        }),
        ..entry.clone()
    })
}

/// Rewrites the lingering batches of `head` whose files hold at least [`SHRINK`] times
/// the documents compared with (by the next batch or by a rerun of the newest, which compares
/// with what the newest was), then writes the head naming their new files and deletes the old
/// ones. Returns the head now on disk and what was compacted.
pub(super) fn compact_lingering(
    index: &OutputDir,
    head: &Head,
    bands: usize,
) -> Result<(Head, Vec<CompactedBatch>)> {
    // Only lingering batches are compacted: without any, no renewals need reading.
    if head.lingering.is_empty() || crate::hooks::compaction_off() {
        return Ok((head.clone(), Vec::new()));
    }
    let next = head.next_compare();
    let alive_next = renew::alive(index, &next)?;
    let alive_rerun = renew::alive(index, &head.compared)?;
    // What a rerun of the newest batch finds in a batch that was in its window: its best matches
    // there (it compares with all that batch held, and keeps the best match of each document).
    let newest_matched = match head.batches.last() {
        Some(n) => index
            .child(n.files())
            .read(renew::MATCHED)?
            .map(|bytes| renew::decode(&bytes, &index.child(n.files()).location(renew::MATCHED))),
        None => None,
    }
    .transpose()?;
    let mut done: Vec<(BatchEntry, CompactedBatch)> = Vec::new();
    for (b, now) in next.iter().zip(&alive_next) {
        let Some(now) = now else {
            continue;
        };
        // What a rerun of the newest batch compares with in it: the live documents when it was
        // lingering then, the documents that were best matches when it was in the window.
        let was = head
            .compared
            .iter()
            .zip(&alive_rerun)
            .find(|(c, _)| c.dir == b.dir);
        let none = Vec::new();
        let rerun = match was {
            Some((c, a)) if c.lingering => a.as_ref(),
            Some(_) => newest_matched
                .as_ref()
                .map(|m| m.get(&b.dir).unwrap_or(&none)),
            None => None,
        };
        let Some(rerun) = rerun else {
            continue;
        };
        let mut keep: Vec<u32> = now.iter().chain(rerun).copied().collect();
        keep.sort_unstable();
        keep.dedup();
        if keep.len() as u64 * SHRINK > b.in_files() {
            continue;
        }
        let files = format!("{}.c{}", b.dir, head.generation);
        let new = rewrite(index, b, &keep, &files, bands)?;
        done.push((
            new.clone(),
            CompactedBatch {
                batch: b.name.clone(),
                documents_before: b.in_files(),
                documents_after: keep.len() as u64,
                bytes_before: b.bytes,
                bytes_after: new.bytes,
            },
        ));
    }
    if done.is_empty() {
        return Ok((head.clone(), Vec::new()));
    }
    let swap = |list: &[BatchEntry]| -> Vec<BatchEntry> {
        (list.iter())
            .map(|e| match done.iter().find(|(n, _)| n.dir == e.dir) {
                Some((n, _)) => BatchEntry {
                    lingering: e.lingering,
                    ..n.clone()
                },
                None => e.clone(),
            })
            .collect()
    };
    let new_head = Head {
        generation: head.generation + 1,
        batches: swap(&head.batches),
        lingering: swap(&head.lingering),
        compared: swap(&head.compared),
        ..head.clone()
    };
    crate::hooks::crash_at("index-compact");
    index.write_bytes(
        HEAD,
        serde_json::to_vec_pretty(&new_head).unwrap_or_default(),
    )?;
    let kept = new_head.on_disk();
    for b in head.on_disk() {
        if kept.iter().all(|k| k.files() != b.files()) {
            index.child(b.files()).remove_all()?;
        }
    }
    Ok((new_head, done.into_iter().map(|(_, c)| c).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::batch::{
        id_record, keys_record, minhash_record, push, put, write_band, write_exact, DOCS, IDS, KEYS,
    };
    use crate::lsh::mix64;

    const N: u32 = 3000;

    /// A batch of N documents: 2 bands (one with SimHash-style values), key k shared by
    /// documents k, k + 700, ...; exact texts shared by d % 900; keys of every 7th.
    fn batch(index: &OutputDir) -> BatchEntry {
        let entry = BatchEntry {
            name: "n1".into(),
            dir: "batches/n1-0123456789abcdef".into(),
            documents: u64::from(N),
            held: None,
            bytes: 0,
            filter_bytes: 0,
            dropped: None,
            lingering: true,
            renews: Default::default(),
            compacted: None,
        };
        let dir = index.child(&entry.dir);
        dir.prepare().unwrap();
        dir.child("bands").prepare().unwrap();
        for (b, values) in [(0, false), (1, true)] {
            let rows = (0..N)
                .map(|d| {
                    (
                        mix64(u64::from(d % 700) + 10_000 * b as u64),
                        d,
                        u64::from(d) * 3,
                    )
                })
                .collect();
            write_band(&dir, b, rows, values).unwrap();
        }
        put(&dir, DOCS, None, |w| {
            (0..N).try_for_each(|d| push(w, &dir, DOCS, d.into(), &minhash_record(&[d, 7], d)))
        })
        .unwrap();
        put(&dir, IDS, None, |w| {
            (0..N).try_for_each(|d| push(w, &dir, IDS, d.into(), &id_record(&format!("doc-{d}"))))
        })
        .unwrap();
        put(&dir, KEYS, None, |w| {
            (0..N)
                .filter(|d| d % 7 == 0)
                .try_for_each(|d| push(w, &dir, KEYS, d.into(), &keys_record(d, &[d, 1])))
        })
        .unwrap();
        let exact = (0..N).map(|d| (u128::from(d % 900) + 1, d)).collect();
        write_exact(&dir, exact).unwrap();
        dir.write_bytes(origins::ORIGINS, vec![1, 2, 3]).unwrap();
        entry
    }

    /// What a lookup finds in `r` for every key and text, with each document's record and id.
    fn lookups(r: &BatchReader, docs: &[u32]) -> Vec<String> {
        let mut out = Vec::new();
        for b in 0..2 {
            let keys: Vec<(u64, u32)> = (0..800u64)
                .map(|k| (mix64(k + 10_000 * b as u64), k as u32))
                .collect();
            // Sorted by their high bits (as lookups give them, a walk) or not (a search).
            let mut passed = r.band_may_have(b, &keys);
            let mut by_high = keys.clone();
            by_high.sort_by_key(|k| (k.0 >> 32, k.1));
            let mut walked = r.band_may_have(b, &by_high);
            passed.sort_unstable();
            walked.sort_unstable();
            assert_eq!(passed, walked);
            let queries: Vec<(usize, u64)> = passed.iter().map(|&(k, q)| (q as usize, k)).collect();
            let mut found = r.find_band(b, &queries, |_, v| v % 2 == 0).unwrap();
            found.retain(|f| docs.binary_search(&f.1).is_ok());
            found.sort_unstable();
            out.push(format!("{found:?}"));
        }
        let texts: Vec<(usize, u128)> = (0..1000).map(|t| (t, t as u128)).collect();
        let mut exact = r.find_exact(&texts).unwrap();
        exact.retain(|f| docs.binary_search(&f.1).is_ok());
        out.push(format!("{exact:?}"));
        let (recs, ids, keys) = (
            r.records(docs).unwrap(),
            r.ids(docs).unwrap(),
            r.keys(docs).unwrap(),
        );
        for d in docs {
            out.push(format!(
                "{d} {:?} {:?} {:?}",
                recs.get(d),
                ids.get(d),
                keys.get(d)
            ));
        }
        out
    }

    #[test]
    fn a_compacted_band_record_is_a_band_record_and_its_block() {
        assert_eq!(BAND_RECORD, batch::BAND_RECORD + 4);
    }

    #[test]
    fn a_compacted_batch_finds_what_it_found_for_the_documents_kept() {
        let tmp = std::env::temp_dir().join(format!("cd-compact-{}", std::process::id()));
        let index = OutputDir::parse(tmp.to_str().unwrap());
        let entry = batch(&index);
        let first: Vec<u32> = (0..N).filter(|d| d % 3 != 1).collect();
        let second: Vec<u32> = first.iter().copied().filter(|d| d % 5 == 0).collect();
        let whole = BatchReader::open(&index, &entry, 2).unwrap();
        let want = (lookups(&whole, &first), lookups(&whole, &second));
        // Every kept document is found by its band keys (band 1 keeps even values only).
        assert_eq!(want.0[0].matches('(').count(), first.len());
        let even = first.iter().filter(|&&d| d % 2 == 0).count();
        assert_eq!(want.0[1].matches('(').count(), even);
        assert!(want.0[2].matches('(').count() > 500);
        let once = rewrite(&index, &entry, &first, "batches/n1-0123456789abcdef.c2", 2).unwrap();
        assert_eq!(
            once.compacted.as_ref().map(|c| c.documents),
            Some(first.len() as u64)
        );
        assert!(once.bytes < entry.bytes.max(1) || entry.bytes == 0);
        let r = BatchReader::open(&index, &once, 2).unwrap();
        assert_eq!(lookups(&r, &first), want.0);
        // Compacted again, from the compacted files.
        let twice = rewrite(&index, &once, &second, "batches/n1-0123456789abcdef.c3", 2).unwrap();
        let r = BatchReader::open(&index, &twice, 2).unwrap();
        assert_eq!(lookups(&r, &second), want.1);
        assert_eq!(r.in_files(), second);
        let dir = index.child(twice.files());
        assert_eq!(dir.read(origins::ORIGINS).unwrap(), Some(vec![1, 2, 3]));
        // A damaged live list is named.
        dir.write_bytes(LIVE, vec![1, 0, 0, 0]).unwrap();
        let err = live::read_live(&dir).unwrap_err().to_string();
        assert!(
            err.contains("live.bin") && err.contains("index remove"),
            "{err}"
        );
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
