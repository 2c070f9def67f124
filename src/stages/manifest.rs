//! Stage 6, manifest: clusters -> one row per input document (the contract in ARCHITECTURE.md §1).
//!
//! Columns: id (Utf8), file (Utf8), row (UInt64), keep (Boolean), cluster_id (UInt64, null for
//! singletons), duplicate_of (Utf8, null when kept), similarity (Float32, null when kept; the
//! similarity of the document to its cluster's kept document). Rows are in global index order, so
//! the file is byte-identical for the same input and configuration.

use polars::prelude::*;

use crate::error::{Error, Result};

/// The manifest columns of a run of documents, in document order.
#[derive(Debug, Default)]
pub struct ManifestRows {
    pub ids: Vec<String>,
    /// (file, row in file) of each document.
    pub files: Vec<(String, u64)>,
    pub keep: Vec<bool>,
    pub duplicate_of: Vec<Option<String>>,
    pub similarity: Vec<Option<f32>>,
}

/// Builds the manifest frame from its columns; `cluster_id` is a UInt64 column (null for
/// singletons) of the same length.
pub fn manifest_frame(rows: ManifestRows, cluster_id: Column) -> Result<DataFrame> {
    let n = rows.ids.len();
    let (file, row): (Vec<String>, Vec<u64>) = rows.files.into_iter().unzip();
    let columns = vec![
        Column::new("id".into(), rows.ids),
        Column::new("file".into(), file),
        Column::new("row".into(), row),
        Column::new("keep".into(), rows.keep),
        cluster_id.with_name("cluster_id".into()),
        Column::new("duplicate_of".into(), rows.duplicate_of),
        Column::new("similarity".into(), rows.similarity),
    ];
    DataFrame::new(n, columns).map_err(|source| Error::Polars {
        stage: "manifest",
        source,
    })
}
