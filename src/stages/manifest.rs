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
//! singletons), duplicate_of (Utf8, null when kept), similarity (Float32, null when kept; the
//! similarity of the document to its cluster's kept document). Rows are in global index order, so
//! the file is byte-identical for the same input and configuration. With `--index`, also
//! duplicate_of_batch (Utf8): the batch of the dropped document's keeper (tonight's own name for a
//! duplicate within tonight), null when kept; a document whose keeper is an indexed one names its
//! id in duplicate_of.

use polars::prelude::*;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::io::output::{OutputDir, ParquetUse};
use crate::io::work::{part_file, polars_err, series, u32s};
use crate::minhash::SigSource;
use crate::plan::Plan;
use crate::stages::cluster::INDEXED;
use crate::stages::verify;

/// The manifest columns of a run of documents, in document order.
#[derive(Debug, Default)]
pub struct ManifestRows {
    pub ids: Vec<String>,
    /// (file, row in file) of each document.
    pub files: Vec<(String, u64)>,
    pub keep: Vec<bool>,
    pub duplicate_of: Vec<Option<String>>,
    pub similarity: Vec<Option<f32>>,
    /// `--index` only: the batch of each dropped document's keeper.
    pub duplicate_of_batch: Option<Vec<Option<String>>>,
}

/// Builds the manifest frame from its columns; `cluster_id` is a UInt64 column (null for
/// singletons) of the same length.
pub fn manifest_frame(rows: ManifestRows, cluster_id: Column) -> Result<DataFrame> {
    let n = rows.ids.len();
    let (file, row): (Vec<String>, Vec<u64>) = rows.files.into_iter().unzip();
    let mut columns = vec![
        Column::new("id".into(), rows.ids),
        Column::new("file".into(), file),
        Column::new("row".into(), row),
        Column::new("keep".into(), rows.keep),
        cluster_id.with_name("cluster_id".into()),
        Column::new("duplicate_of".into(), rows.duplicate_of),
        Column::new("similarity".into(), rows.similarity),
    ];
    if let Some(batch) = rows.duplicate_of_batch {
        columns.push(Column::new("duplicate_of_batch".into(), batch));
    }
    DataFrame::new(n, columns).map_err(|source| Error::Polars {
        stage: "manifest",
        source,
    })
}

/// A window of a part's documents for the manifest: its first document number, and each
/// document's keeper and similarity known from a verified edge.
type ManifestWindow<'a> = (u32, &'a [u32], &'a [Option<f32>]);

/// One manifest row: id, (file, row), keep, duplicate_of, similarity.
type ManifestRow = (String, (String, u64), bool, Option<String>, Option<f32>);

/// `--index`: per document of a part, its indexed keeper's id and record (where its similarity
/// is still to be computed).
struct Indexed<'a> {
    id: &'a StringChunked,
    record: &'a BinaryChunked,
    /// The part's first document.
    first: u32,
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

/// The manifest rows of the window of documents `first ..` whose keepers are `keepers` (and
/// similarities to them, where a verified edge gives it, `known`).
fn manifest_window(
    work: &OutputDir,
    plan: &Plan,
    first: u32,
    keepers: &[u32],
    known: &[Option<f32>],
    indexed: Option<&Indexed>,
) -> Result<Vec<ManifestRow>> {
    let own = first..first + keepers.len() as u32;
    let mut also: Vec<u32> = own
        .clone()
        .chain(keepers.iter().copied().filter(|&k| k != INDEXED))
        .collect();
    also.par_sort_unstable();
    also.dedup();
    // Dropped documents with no verified edge to their keeper: similarity computed the way
    // verification would compute it for that pair.
    let unknown: Vec<(u32, u32)> = own
        .zip(keepers.iter().copied())
        .zip(known)
        .filter(|&((d, kd), s)| d != kd && kd != INDEXED && s.is_none())
        .map(|(pair, _)| pair)
        .collect();
    let (fetched, sets) = verify::fetch_for_pairs(work, plan, &unknown, also)?;
    // Each document's row on the workers, in order.
    Ok((0..keepers.len())
        .into_par_iter()
        .with_min_len(256)
        .map(|j| {
            let (d, kd) = (first + j as u32, keepers[j]);
            let (f, r) = plan.locate(d as u64);
            let similarity = (d != kd).then(|| {
                known[j].unwrap_or_else(|| match indexed.filter(|_| kd == INDEXED) {
                    Some(ix) => {
                        let rec = ix.record.get((d - ix.first) as usize).unwrap_or(&[]);
                        indexed_similarity(plan, fetched.sig(d), rec) as f32
                    }
                    None => verify::pair_similarity(plan, d, kd, &fetched, &sets) as f32,
                })
            });
            let duplicate_of = (d != kd).then(|| match indexed.filter(|_| kd == INDEXED) {
                Some(ix) => ix.id.get((d - ix.first) as usize).unwrap_or("").to_string(),
                None => fetched.id(kd).to_string(),
            });
            (
                fetched.id(d).to_string(),
                (f.to_string(), r),
                d == kd,
                duplicate_of,
                similarity,
            )
        })
        .collect())
}

/// The manifest task of part `p`: the part's rows of the manifest.
pub fn run(work: &OutputDir, plan: &Plan, p: usize) -> Result<()> {
    let range = plan.part_range(p);
    let cl = work.read_parquet(&part_file("cluster", p))?;
    let keeper = u32s(&cl, "keeper", "manifest")?;
    let cluster_id = cl
        .column("cluster_id")
        .map_err(polars_err("manifest"))?
        .clone();
    let known: Vec<Option<f32>> = series(&cl, "similarity", "manifest")?
        .f32()
        .map_err(polars_err("manifest"))?
        .iter()
        .collect();
    // One window of own documents at a time per thread: their ids, and the dropped ones' keepers
    // (ids, signatures, and exact sets where a similarity not known from a verified edge is
    // computed exactly). Windows run in groups of one per thread, each window's reads and rows
    // on its own (a window alone left the second thread waiting on the first's reads), so a
    // group holds as many windows' fetches as there are threads; rows stay in document order.
    let start = range.start as u32;
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
        .map(|(w, (k, s))| (start + (w as u64 * verify::WINDOW) as u32, k, s))
        .collect();
    let mut rows = ManifestRows::default();
    for group in windows.chunks(rayon::current_num_threads().max(1)) {
        let built: Vec<Vec<ManifestRow>> = group
            .par_iter()
            .with_max_len(1)
            .map(|&(first, keepers, known)| {
                manifest_window(work, plan, first, keepers, known, indexed.as_ref())
            })
            .collect::<Result<_>>()?;
        crate::progress::advance(group.iter().map(|w| w.1.len() as u64).sum());
        for (id, file, keep, duplicate_of, similarity) in built.into_iter().flatten() {
            rows.ids.push(id);
            rows.files.push(file);
            rows.keep.push(keep);
            rows.duplicate_of.push(duplicate_of);
            rows.similarity.push(similarity);
        }
    }
    if plan.index.is_some() {
        let b = series(&cl, "duplicate_of_batch", "manifest")?;
        let b = b.str().map_err(polars_err("manifest"))?;
        rows.duplicate_of_batch = Some(b.iter().map(|x| x.map(str::to_string)).collect());
    }
    let mut df = manifest_frame(rows, cluster_id)?;
    work.write_parquet(
        &part_file("manifest", p),
        &mut df,
        Vec::new(),
        ParquetUse::Work,
    )
}
