//! Stage `lookup` (`--index`, one task per part): the part's documents looked up in the retained
//! index's batches -> for each document that duplicates an indexed one, the earliest such document
//! (`lookup/pP.parquet`: doc, batch, xdoc, similarity, exact, xid, xrec).
//!
//! Order of work, per batch from the oldest:
//! 1. Exact pre-pass: a document whose exact-text hash is in the batch (filter, then one block of
//!    the sorted hash table) matches with similarity 1.0; it looks no further than that batch.
//! 2. Bands: each band key of a document goes through the batch's filter for that band; only
//!    keys that pass cost a block read of the sorted band keys. Every document found is a
//!    candidate, verified as in batch mode: MinHash on the b-bit signature estimate, with exact
//!    Jaccard on the stored shingle keys for short documents and (`--index-keys all`, the
//!    default) for pairs near the threshold; SimHash on the Hamming distance of the
//!    fingerprints (plus the Jaccard check for short documents).
//!
//! A lingering batch (`--cluster keeper`) is searched the same way; only its live documents
//! ([`crate::index::renew::alive`]) can match.
//!
//! Invariants: the match kept is the smallest (batch, document) among verified matches, so the
//! earliest document wins whatever order things are found in; a filter false positive or a key
//! collision costs a read, never a match (every match is verified); memory is the part's
//! records plus the window's filters and block tables.

use polars::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::index::batch::BatchReader;
use crate::io::output::{OutputDir, ParquetUse};
use crate::io::work::{exact_file, lookup_file};
use crate::io::{store, u64_at};
use crate::minhash::SigSource;
use crate::plan::Plan;
use crate::stages::keys::KeySource;
use crate::text::sets::ShingleSets;

mod search;
pub(crate) use search::{open_batches, search, Live, Probes, Queries};

/// Counters of a lookup task.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct LookupStats {
    /// Documents that duplicate an indexed document.
    pub matched: u64,
    /// Of those, exact copies.
    pub exact: u64,
    /// Band keys that passed a filter (each costs a block read).
    pub filter_passes: u64,
    /// (document, indexed document) candidates verified.
    pub candidates: u64,
    /// Bytes of the window's filters and block tables the task held.
    pub filter_bytes: u64,
}

/// A verified match: (batch position in the plan's compare list, document in that batch,
/// similarity).
pub(crate) type Match = (u32, u32, f32);

/// Reads part `p`'s exact-text hashes.
pub(crate) fn read_exact(work: &OutputDir, p: usize, n: usize) -> Result<Vec<u128>> {
    let name = exact_file(p);
    let bytes = work.read(&name)?.ok_or_else(|| Error::WorkFile {
        path: work.location(&name),
        source: "missing".into(),
    })?;
    if bytes.len() != 16 * n {
        return Err(Error::WorkFile {
            path: work.location(&name),
            source: crate::error::FileError::Invalid(format!(
                "{} bytes for {n} documents",
                bytes.len()
            )),
        });
    }
    Ok(bytes
        .chunks_exact(16)
        .map(|c| u128::from(u64_at(c, 0)) | (u128::from(u64_at(c, 8)) << 64))
        .collect())
}

/// A part's documents as [`Queries`]: query q is document `first + q`, its sets made from the
/// shards (this stage runs before the keys stage).
struct PartQueries<'a> {
    work: &'a OutputDir,
    plan: &'a Plan,
    sigs: &'a store::Fetched,
    first: u64,
}

impl Queries for PartQueries<'_> {
    fn sig(&self, q: usize) -> &[u32] {
        self.sigs.sig(self.first + q as u64)
    }
    fn shingles(&self, q: usize) -> u32 {
        self.sigs.shingles(self.first + q as u64)
    }
    fn sets(&self, qs: Vec<u64>) -> Result<ShingleSets> {
        let docs = qs.iter().map(|q| self.first + q).collect();
        let mut sets = KeySource::new(self.work, self.plan, false).sets(docs)?;
        sets.sort_dedup();
        let first = self.first;
        let (docs, sets): (Vec<u64>, Vec<Vec<u32>>) =
            sets.into_pairs().map(|(d, s)| (d - first, s)).unzip();
        Ok(ShingleSets::new(docs, sets))
    }
}

/// A matched document: its global index, its match, the indexed document's id and record.
type MatchRow = (u32, Match, String, Vec<u8>);

/// The documents of batch `bi` that some query's match names (sorted, unique), and those
/// queries with their matches.
pub(crate) fn matched_in(best: &[Option<Match>], bi: usize) -> (Vec<u32>, Vec<(usize, Match)>) {
    let of_batch: Vec<(usize, Match)> = (best.iter().enumerate())
        .filter_map(|(q, m)| Some((q, m.filter(|m| m.0 == bi as u32)?)))
        .collect();
    let mut xs: Vec<u32> = of_batch.iter().map(|(_, m)| m.1).collect();
    xs.sort_unstable();
    xs.dedup();
    (xs, of_batch)
}

/// Ids and records of the matched documents, read batch by batch; rows in document order.
fn matched_rows(
    readers: &[std::sync::Arc<BatchReader>],
    best: &[Option<Match>],
    first: u64,
) -> Result<Vec<MatchRow>> {
    let mut rows: Vec<MatchRow> = Vec::new();
    for (bi, r) in readers.iter().enumerate() {
        let (xs, matched) = matched_in(best, bi);
        if xs.is_empty() {
            continue;
        }
        let ids = r.ids(&xs)?;
        let recs = r.records(&xs)?;
        for (q, m) in matched {
            let id = ids.get(&m.1).cloned().unwrap_or_default();
            let rec = recs.get(&m.1).cloned().unwrap_or_default();
            rows.push((crate::plan::doc32(first + q as u64), m, id, rec));
        }
    }
    rows.sort_unstable_by_key(|r| r.0);
    Ok(rows)
}

/// The lookup file's frame; `exact(doc)` says whether the document has an exact copy in the
/// index (also where its earliest match is a near-duplicate).
fn matches_frame(rows: &[MatchRow], exact: impl Fn(u32) -> bool) -> Result<DataFrame> {
    DataFrame::new(
        rows.len(),
        vec![
            Column::new("doc".into(), rows.iter().map(|r| r.0).collect::<Vec<u32>>()),
            Column::new(
                "batch".into(),
                rows.iter().map(|r| r.1 .0).collect::<Vec<u32>>(),
            ),
            Column::new(
                "xdoc".into(),
                rows.iter().map(|r| r.1 .1).collect::<Vec<u32>>(),
            ),
            Column::new(
                "similarity".into(),
                rows.iter().map(|r| r.1 .2).collect::<Vec<f32>>(),
            ),
            Column::new(
                "exact".into(),
                rows.iter().map(|r| exact(r.0)).collect::<Vec<bool>>(),
            ),
            Column::new(
                "xid".into(),
                rows.iter().map(|r| r.2.as_str()).collect::<Vec<&str>>(),
            ),
            Column::new(
                "xrec".into(),
                rows.iter().map(|r| r.3.as_slice()).collect::<Vec<&[u8]>>(),
            ),
        ],
    )
    .map_err(|source| Error::Polars {
        stage: "lookup",
        source,
    })
}

/// The lookup task of part `p`.
pub(crate) fn run(work: &OutputDir, plan: &Plan, p: usize) -> Result<LookupStats> {
    let ip = plan
        .index
        .as_ref()
        .ok_or_else(|| Error::Internal("lookup without --index".into()))?;
    let cfg = &plan.config;
    let range = plan.part_range(p);
    let first = range.start;
    let n = (range.end - range.start) as usize;
    let docs: Vec<u64> = range.clone().collect();
    let none = store::Wanted::SIGNATURES;
    let sigs = store::fetch(work, &plan.parts, plan.store_layout(), docs, none)?;
    let exact = read_exact(work, p, n)?;
    let index = ip.dir();
    let readers = open_batches(&index, &ip.compare, plan.bands())?;
    let mine = match cfg.across.is_some() {
        true => crate::io::doc_columns::label_keys(work, p, "across", true)?,
        false => Vec::new(),
    };
    let mut live = Live::read(&index, &ip.compare, cfg.across.is_some(), mine)?;
    live.remove_ids(&readers, &ip.removed.iter().cloned().collect())?;
    let queries = PartQueries {
        work,
        plan,
        sigs: &sigs,
        first,
    };
    let partitions =
        crate::io::doc_columns::label_keys(work, p, "partition", cfg.partition_by.is_some())?;
    let probes = Probes::of(plan, n, &queries, exact, &partitions);
    let (best, copy, stats) = search(plan, &readers, &probes, &live, &queries)?;
    let rows = matched_rows(&readers, &best, first)?;
    let stats = LookupStats {
        matched: rows.len() as u64,
        exact: rows
            .iter()
            .filter(|r| copy[(u64::from(r.0) - first) as usize])
            .count() as u64,
        ..stats
    };
    let mut df = matches_frame(&rows, |d| copy[(u64::from(d) - first) as usize])?;
    work.write_parquet(&lookup_file(p), &mut df, Vec::new(), ParquetUse::Work)?;
    Ok(stats)
}
