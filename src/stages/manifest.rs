//! Stage `manifest`: a part's clusters -> its rows of the manifest (`manifest/pP.parquet`), one
//! per input document, in input order.
//!
//! A dropped document's similarity to its keeper comes from the verified edge between them when
//! there is one (the cluster task recorded it), and is otherwise computed as verification would
//! compute it for that pair ([`verify::pair_similarity`]). The task works through windows of
//! documents, one per thread at a time, each window's store reads and rows on its own thread;
//! rows stay in document order.
//!
//! Columns: id (Utf8), file (Utf8), row (UInt64), keep (Boolean), cluster_id (UInt64, null for
//! singletons), cluster_size (UInt32: the kept document and those dropped against it; a dropped
//! document carries its keeper's), duplicate_of (Utf8, null when kept), similarity (Float32, null when kept; the
//! similarity of the document to its cluster's kept document). The part's ids are read in one
//! piece ([`store::part_ids`]); only keepers in other parts and the documents whose similarity is
//! computed here are read from the stores' records. Rows are in global index order, so
//! the file is byte-identical for the same input and configuration. With `--index`, also
//! duplicate_of_batch (Utf8): the batch of the dropped document's keeper (tonight's own name for a
//! duplicate within tonight), null when kept; a document whose keeper is an indexed one names its
//! id in duplicate_of.

use std::borrow::Cow;
use std::collections::BTreeMap;

use polars::prelude::*;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::io::output::{OutputDir, ParquetUse};
use crate::io::store::{self, PartIds};
use crate::io::work::{part_file, polars_err, series, u32s, u64s};
use crate::minhash::SigSource;
use crate::plan::{doc32, Plan, Stage};
use crate::stages::cluster::INDEXED_KEEPER;
use crate::stages::drop_spans::PartSpans;
use crate::stages::sources;
use crate::stages::verify;
use crate::tally::{count, length_bucket, Breakdown, Cut, LENGTH_BUCKETS};
use crate::text::script;

/// The manifest columns of a run of documents, in document order. Ids and file names are
/// borrowed from the part's ids and the plan (no string per row); a keeper's id is owned only
/// where it was read from another part's store.
#[derive(Debug, Default)]
pub(crate) struct ManifestRows<'a> {
    pub ids: Vec<&'a str>,
    /// (file, row in file) of each document.
    pub files: Vec<(&'a str, u64)>,
    pub keep: Vec<bool>,
    pub duplicate_of: Vec<Option<Cow<'a, str>>>,
    pub similarity: Vec<Option<f32>>,
    /// `--index` only: the batch of each dropped document's keeper.
    pub duplicate_of_batch: Option<Vec<Option<String>>>,
    /// `--reference` only: `contaminated_by` (the item's id) and `contamination` (its share
    /// found in the document).
    pub contamination: Option<[Column; 2]>,
    /// `--paragraphs` or `--substrings` only: each kept row's removed spans.
    pub drop_spans: Option<Column>,
}

/// Builds the manifest frame from its columns; `cluster_id` is a UInt64 column (null for
/// singletons) and `cluster_size` a UInt32 column of the same length.
pub(crate) fn manifest_frame(
    rows: ManifestRows,
    cluster_id: Column,
    cluster_size: Column,
) -> Result<DataFrame> {
    let n = rows.ids.len();
    let (file, row): (Vec<&str>, Vec<u64>) = rows.files.into_iter().unzip();
    let duplicate_of: Vec<Option<&str>> = rows.duplicate_of.iter().map(|d| d.as_deref()).collect();
    let mut columns = vec![
        Column::new("id".into(), rows.ids),
        Column::new("file".into(), file),
        Column::new("row".into(), row),
        Column::new("keep".into(), rows.keep),
        cluster_id.with_name("cluster_id".into()),
        cluster_size.with_name("cluster_size".into()),
        Column::new("duplicate_of".into(), duplicate_of),
        Column::new("similarity".into(), rows.similarity),
    ];
    if let Some(batch) = rows.duplicate_of_batch {
        columns.push(Column::new("duplicate_of_batch".into(), batch));
    }
    columns.extend(rows.contamination.into_iter().flatten());
    columns.extend(rows.drop_spans);
    DataFrame::new(n, columns).map_err(|source| Error::Polars {
        stage: "manifest",
        source,
    })
}

/// A window of a part's documents for the manifest: its first document number, and each
/// document's keeper and similarity known from a verified edge.
type ManifestWindow<'a> = (u64, &'a [u64], &'a [Option<f32>]);

/// One manifest row: id, (file, row), keep, duplicate_of, similarity.
type ManifestRow<'a> = (
    &'a str,
    (&'a str, u64),
    bool,
    Option<Cow<'a, str>>,
    Option<f32>,
);

/// `--index`: per document of a part, its indexed keeper's id and record (where its similarity
/// is still to be computed).
struct Indexed<'a> {
    id: &'a StringChunked,
    record: &'a BinaryChunked,
    /// The part's first document.
    first: u64,
}

/// Similarity of a document (signature or SimHash record `mine`) to an indexed document's record.
fn indexed_similarity(plan: &Plan, mine: &[u32], record: &[u8]) -> f64 {
    match plan.config.method {
        crate::config::Method::Minhash => crate::index::batch::bbit_estimate(mine, record),
        crate::config::Method::Simhash => {
            let (fp, _) = crate::index::batch::simhash_record_parts(record);
            let d = crate::simhash::hamming(crate::simhash::record_fingerprint(mine), fp);
            crate::simhash::similarity(d)
        }
    }
}

/// The part's own documents, `range`, and their ids.
struct Own<'a> {
    range: std::ops::Range<u64>,
    ids: &'a PartIds,
}

impl<'a> Own<'a> {
    fn holds(&self, d: u64) -> bool {
        self.range.contains(&d)
    }

    fn id(&self, d: u64) -> &'a str {
        self.ids.get((d - self.range.start) as usize)
    }
}

/// The manifest rows of the window of documents `first ..` whose keepers are `keepers` (and
/// similarities to them, where a verified edge gives it, `known`).
fn manifest_window<'a>(
    work: &OutputDir,
    plan: &'a Plan,
    (first, keepers, known): ManifestWindow,
    own: &Own<'a>,
    indexed: Option<&Indexed<'a>>,
) -> Result<Vec<ManifestRow<'a>>> {
    let window = first..first + keepers.len() as u64;
    // From the stores: the ids of keepers in other parts, and the signatures of documents whose
    // similarity to an indexed keeper is still to be computed (the part's own ids are in `own`).
    let mut also: Vec<u64> = window
        .clone()
        .zip(keepers.iter().copied().zip(known))
        .filter(|&(_, (kd, s))| kd == INDEXED_KEEPER && s.is_none())
        .map(|(d, _)| d)
        .chain(
            keepers
                .iter()
                .copied()
                .filter(|&k| k != INDEXED_KEEPER && !own.holds(k)),
        )
        .collect();
    also.par_sort_unstable();
    also.dedup();
    // Dropped documents with no verified edge to their keeper: similarity computed the way
    // verification would compute it for that pair.
    let unknown: Vec<(u64, u64)> = window
        .zip(keepers.iter().copied())
        .zip(known)
        .filter(|&((d, kd), s)| d != kd && kd != INDEXED_KEEPER && s.is_none())
        .map(|(pair, _)| pair)
        .collect();
    let (fetched, sets) = verify::fetch_for_pairs(work, plan, &unknown, also)?;
    // Each document's row on the workers, in order.
    Ok((0..keepers.len())
        .into_par_iter()
        .with_min_len(256)
        .map(|j| {
            let (d, kd) = (first + j as u64, keepers[j]);
            let (f, r) = plan.locate(d);
            let similarity = (d != kd).then(|| {
                known[j].unwrap_or_else(|| match indexed.filter(|_| kd == INDEXED_KEEPER) {
                    Some(ix) => {
                        let rec = ix.record.get((d - ix.first) as usize).unwrap_or(&[]);
                        indexed_similarity(plan, fetched.sig(d), rec) as f32
                    }
                    None => verify::pair_similarity(plan, d, kd, &fetched, &sets) as f32,
                })
            });
            let duplicate_of = (d != kd).then(|| match indexed.filter(|_| kd == INDEXED_KEEPER) {
                Some(ix) => Cow::Borrowed(ix.id.get((d - ix.first) as usize).unwrap_or("")),
                None if own.holds(kd) => Cow::Borrowed(own.id(kd)),
                None => Cow::Owned(fetched.id(kd).to_string()),
            });
            (own.id(d), (f, r), d == kd, duplicate_of, similarity)
        })
        .collect())
}

/// Tallies a part's documents (`docs`: its `docs/pP.parquet`) for the report.
fn breakdown(
    plan: &Plan,
    docs: &DataFrame,
    rows: &ManifestRows,
    removed: Option<&[Cut]>,
) -> Result<Breakdown> {
    let text_len = u32s(docs, "text_len", "manifest")?;
    let script = u32s(docs, "script", "manifest")?;
    let group = match plan.config.report_group {
        Some(_) => Some(series(docs, "group", "manifest")?),
        None => None,
    };
    let group = match &group {
        Some(g) => Some(g.str().map_err(polars_err("manifest"))?),
        None => None,
    };
    let mut b = Breakdown {
        length_kept: vec![0; LENGTH_BUCKETS],
        length_dropped: vec![0; LENGTH_BUCKETS],
        ..Breakdown::default()
    };
    // Each distinct script code is named once.
    let mut names: BTreeMap<u32, String> = BTreeMap::new();
    for (i, ((file, _), &keep)) in rows.files.iter().zip(&rows.keep).enumerate() {
        let bytes = u64::from(text_len.get(i).copied().unwrap_or(0));
        let dropped = !keep;
        // `--paragraphs`, `--substrings`: what is removed from a kept document.
        let cut = removed.and_then(|r| r.get(i)).copied().unwrap_or_default();
        count(&mut b.by_file, file, bytes, dropped, cut);
        let s = script.get(i).copied().unwrap_or(0);
        let name = names.entry(s).or_insert_with(|| script::name(s));
        count(&mut b.by_script, name, bytes, dropped, cut);
        if let Some(g) = group {
            count(
                &mut b.by_group,
                g.get(i).unwrap_or("(null)"),
                bytes,
                dropped,
                cut,
            );
        }
        let hist = if dropped {
            &mut b.length_dropped
        } else {
            &mut b.length_kept
        };
        hist[length_bucket(bytes)] += 1;
    }
    Ok(b)
}

/// The manifest task of part `p`: the part's rows of the manifest; returns its tallies for the
/// report.
pub(crate) fn run(work: &OutputDir, plan: &Plan, p: usize) -> Result<Breakdown> {
    // The exact checks and the keeper rule are done: the part's shingle keys go, so the work
    // directory at its largest is smaller by them (a similarity that needs one remakes it).
    if crate::stages::keys::releases_keys(plan) {
        crate::io::keys::release(work, p)?;
    }
    let range = plan.part_range(p);
    let cl = work.read_parquet(&part_file("cluster", p))?;
    let docs = work.read_parquet(&part_file("docs", p))?;
    let id_hash: Vec<u64> = series(&docs, "id_hash", "manifest")?
        .u64()
        .map_err(polars_err("manifest"))?
        .into_no_null_iter()
        .collect();
    let own_ids = store::part_ids(work, p, &u32s(&docs, "id_len", "manifest")?, &id_hash)?;
    let own = Own {
        range: range.clone(),
        ids: &own_ids,
    };
    let keeper = u64s(&cl, "keeper", "manifest")?;
    let column = |name: &str| cl.column(name).map_err(polars_err("manifest")).cloned();
    let (cluster_id, cluster_size) = (column("cluster_id")?, column("cluster_size")?);
    let known: Vec<Option<f32>> = series(&cl, "similarity", "manifest")?
        .f32()
        .map_err(polars_err("manifest"))?
        .iter()
        .collect();
    // One window of own documents at a time per thread: their ids, and the dropped ones' keepers
    // (ids, signatures, and exact sets where a similarity not known from a verified edge is
    // computed exactly). Each window's reads and rows are its own work item (a window alone left
    // the second thread waiting on the first's reads), so at most one window's fetches per
    // thread are held at once, and a thread that finishes early takes the next window instead of
    // waiting for a group to end; rows stay in document order.
    let start = range.start;
    let (ids, records);
    let indexed = if plan.index.is_some() {
        ids = series(&cl, "indexed_id", "manifest")?;
        records = series(&cl, "indexed_record", "manifest")?;
        Some(Indexed {
            id: ids.str().map_err(polars_err("manifest"))?,
            record: records.binary().map_err(polars_err("manifest"))?,
            first: start,
        })
    } else {
        None
    };
    let windows: Vec<ManifestWindow> = keeper
        .chunks(verify::WINDOW as usize)
        .zip(known.chunks(verify::WINDOW as usize))
        .enumerate()
        .map(|(w, (k, s))| (start + w as u64 * verify::WINDOW, k, s))
        .collect();
    let built: Vec<Vec<ManifestRow>> = windows
        .par_iter()
        .with_max_len(1)
        .map(|&w| {
            let rows = manifest_window(work, plan, w, &own, indexed.as_ref());
            crate::progress::advance(w.1.len() as u64);
            rows
        })
        .collect::<Result<_>>()?;
    let mut rows = ManifestRows::default();
    for (id, file, keep, duplicate_of, similarity) in built.into_iter().flatten() {
        rows.ids.push(id);
        rows.files.push(file);
        rows.keep.push(keep);
        rows.duplicate_of.push(duplicate_of);
        rows.similarity.push(similarity);
    }
    if plan.index.is_some() {
        let b = series(&cl, "duplicate_of_batch", "manifest")?;
        let b = b.str().map_err(polars_err("manifest"))?;
        rows.duplicate_of_batch = Some(b.iter().map(|x| x.map(str::to_string)).collect());
    }
    if plan.config.reference.is_some() {
        // A document holding benchmark text is never kept, whatever its duplicates.
        let by = docs
            .column("contaminated_by")
            .map_err(polars_err("manifest"))?;
        let share = docs
            .column("contamination")
            .map_err(polars_err("manifest"))?;
        for (keep, hit) in rows.keep.iter_mut().zip(by.is_not_null().iter()) {
            *keep &= hit != Some(true);
        }
        rows.contamination = Some([by.clone(), share.clone()]);
    }
    let spans = match plan.config.paragraphs.is_some() || plan.config.substrings.is_some() {
        true => Some(PartSpans::read(work, plan, p, |docs| {
            sources::listed_in_parts(work, plan, Stage::Settle, docs)
        })?),
        false => None,
    };
    if let Some(s) = &spans {
        rows.drop_spans = Some(s.column(doc32(start), &rows.keep));
    }
    let removed = match spans {
        Some(s) => {
            let small = match plan.config.paragraphs {
                Some(_) => u32s(&docs, "paragraph_small", "manifest")?,
                None => Vec::new(),
            };
            Some(s.cuts(doc32(start), &small))
        }
        None => None,
    };
    let tallies = breakdown(plan, &docs, &rows, removed.as_deref())?;
    let mut df = manifest_frame(rows, cluster_id, cluster_size)?;
    work.write_parquet(
        &part_file("manifest", p),
        &mut df,
        Vec::new(),
        ParquetUse::Work,
    )?;
    Ok(tallies)
}
