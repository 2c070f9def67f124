//! `corpus-dedup index export`: one row per live indexed document with its copies across
//! nights ([`super::copies`]), as Parquet for the training mix to join on.
//!
//! Columns: `id` (String), `batch` (String: the batch that holds it, as `duplicate_of_batch`
//! names it), `copies` (UInt32: itself and every document dropped against it in any night),
//! `latest_batch` (String: the batch of its latest copy). Rows by batch (oldest first), then by
//! the document's number in its batch.

use polars::prelude::*;
use serde::Serialize;

use super::{copies, read_head, renew, BatchEntry, Lock};
use crate::error::{Error, Result};
use crate::io::output::{OutputDir, ParquetUse};

/// What an export wrote.
#[derive(Debug, Clone, Serialize)]
pub struct Exported {
    pub index: String,
    pub output: String,
    pub documents: u64,
    pub batches: usize,
}

/// Writes the live documents of the index at `location` to the Parquet file `output` (local or
/// s3://), holding the index lock meanwhile so no commit removes a batch being read.
pub fn export(location: &str, output: &str) -> Result<Exported> {
    let index = OutputDir::parse(location);
    let _lock = Lock::acquire(location)?;
    let head = read_head(&index)?.ok_or_else(|| Error::Index {
        index: location.to_string(),
        msg: "there is no index here (no index.json): check the --index location".into(),
    })?;
    // The compare order of a next run: lingering batches, then the window, oldest first.
    let batches: Vec<BatchEntry> = head
        .lingering
        .iter()
        .chain(&head.batches)
        .cloned()
        .collect();
    let alive = renew::alive(&index, &batches)?;
    let live = |b: usize, x: u32| {
        alive[b]
            .as_ref()
            .is_none_or(|l| l.binary_search(&x).is_ok())
    };
    let counts = copies::counts(&index, &batches, live)?;
    let n = counts.len();
    let (mut id, mut batch, mut copies, mut latest) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for (b, entry) in batches.iter().enumerate() {
        let numbers: Vec<u32> = counts
            .range((b, 0)..=(b, u32::MAX))
            .map(|(&(_, x), _)| x)
            .collect();
        let reader = super::batch::BatchReader::open(&index, entry, 0)?;
        let ids = reader.ids(&numbers)?;
        for x in numbers {
            let c = counts[&(b, x)];
            let doc_id = ids.get(&x).ok_or_else(|| Error::IndexFile {
                path: index.child(&entry.dir).location(super::batch::IDS),
                msg: format!("no id for document {x}"),
            })?;
            id.push(doc_id.clone());
            batch.push(entry.name.as_str());
            copies.push(c.copies);
            latest.push(batches[c.latest].name.as_str());
        }
    }
    let mut df = DataFrame::new(
        n,
        vec![
            Column::new("id".into(), id),
            Column::new("batch".into(), batch),
            Column::new("copies".into(), copies),
            Column::new("latest_batch".into(), latest),
        ],
    )
    .map_err(|source| Error::Polars {
        stage: "index export",
        source,
    })?;
    let (dir, name) = match output.trim_end_matches('/').rsplit_once('/') {
        Some((dir, name)) => (OutputDir::parse(dir), name),
        None => (OutputDir::parse("."), output),
    };
    dir.prepare()?;
    dir.write_parquet(name, &mut df, Vec::new(), ParquetUse::Output)?;
    Ok(Exported {
        index: location.to_string(),
        output: output.to_string(),
        documents: n as u64,
        batches: batches.len(),
    })
}
