//! Stage 6, manifest: clusters -> one row per input document (the contract in ARCHITECTURE.md §1).
//!
//! Columns: id (Utf8), file (Utf8), row (UInt64), keep (Boolean), cluster_id (UInt64, null for
//! singletons), duplicate_of (Utf8, null when kept), similarity (Float32, null when kept; the
//! similarity of the document to its cluster's kept document). Rows are in global index order, so
//! the file is byte-identical for the same input and configuration.

use polars::prelude::*;
use rayon::prelude::*;

use crate::corpus::Corpus;
use crate::error::{Error, Result};
use crate::stages::cluster::Clusters;

/// Builds the manifest frame. `similarity(doc, keeper)` is asked for every dropped document.
pub fn manifest_frame(
    corpus: &Corpus,
    clusters: &Clusters,
    similarity: impl Fn(u32, u32) -> f64 + Sync,
) -> Result<DataFrame> {
    let n = corpus.len();
    let ids: Vec<String> = (0..n as u32)
        .into_par_iter()
        .map(|d| corpus.id(d))
        .collect();
    let mut file = Vec::with_capacity(n);
    let mut row = Vec::with_capacity(n);
    for (s, shard) in corpus.shards.iter().enumerate() {
        debug_assert_eq!(corpus.start(s), file.len());
        file.extend(std::iter::repeat_n(shard.file.as_str(), shard.len()));
        row.extend(0..shard.len() as u64);
    }
    let keep: Vec<bool> = (0..n as u32).map(|d| clusters.keeper_of(d) == d).collect();
    let cluster_id: Vec<Option<u64>> = (0..n as u32)
        .map(|d| clusters.cluster_id(d).map(u64::from))
        .collect();
    let duplicate_of: Vec<Option<&str>> = (0..n as u32)
        .map(|d| (!keep[d as usize]).then(|| ids[clusters.keeper_of(d) as usize].as_str()))
        .collect();
    let sim: Vec<Option<f32>> = (0..n as u32)
        .into_par_iter()
        .map(|d| (!keep[d as usize]).then(|| similarity(d, clusters.keeper_of(d)) as f32))
        .collect();
    let columns = vec![
        Column::new("id".into(), ids.as_slice()),
        Column::new("file".into(), file),
        Column::new("row".into(), row),
        Column::new("keep".into(), keep.as_slice()),
        Column::new("cluster_id".into(), cluster_id),
        Column::new("duplicate_of".into(), duplicate_of),
        Column::new("similarity".into(), sim),
    ];
    DataFrame::new(n, columns).map_err(|source| Error::Polars {
        stage: "manifest",
        source,
    })
}
