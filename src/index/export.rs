//! `corpus-dedup index export`: one row per live indexed document with its copies across
//! nights ([`super::copies`]), as Parquet for the training mix to join on.
//!
//! Columns: `id` (String), `batch` (String: the batch that holds it, as `duplicate_of_batch`
//! names it), `copies` (UInt32: itself and every document dropped against it in any night),
//! `latest_batch` (String: the batch of its latest copy). Rows by batch (oldest first), then by
//! the document's number in its batch; one row group per batch, written as it is read.

use polars::prelude::*;
use serde::Serialize;

use super::{copies, renew, Lock};
use crate::error::{Error, Result};
use crate::io::output::OutputDir;

/// What an export wrote.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Exported {
    pub index: String,
    pub output: String,
    pub documents: u64,
    pub batches: usize,
}

/// Writes the live documents of the index at `location` to the Parquet file `output` (local or
/// s3://), holding the index lock (taken through `lock`, which can wait) meanwhile so no commit
/// removes a batch being read.
pub(crate) fn export(
    location: &str,
    output: &str,
    lock: impl Fn() -> Result<Lock>,
) -> Result<Exported> {
    let (index, head, _lock) = super::locked_head(location, lock)?;
    let batches = head.next_compare();
    let alive = renew::alive(&index, &batches)?;
    let live = |b: usize, x: u32| {
        alive[b]
            .as_ref()
            .is_none_or(|l| l.binary_search(&x).is_ok())
    };
    let (dir, name) = match output.trim_end_matches('/').rsplit_once('/') {
        Some((dir, name)) => (OutputDir::parse(dir), name),
        None => (OutputDir::parse("."), output),
    };
    dir.prepare()?;
    let out_err = |e: PolarsError| Error::Output {
        path: dir.location(name),
        source: e.into(),
    };
    // One batch at a time, one row group each, so memory follows the largest batch, not the
    // index (the copies files are re-read per batch: about a byte per document each).
    let mut documents = 0u64;
    dir.write_with(name, |w| {
        let empty = frame(Vec::new(), Vec::new(), Vec::new(), Vec::new())?;
        let mut bw = ParquetWriter::new(w)
            .batched(empty.schema())
            .map_err(out_err)?;
        for (b, entry) in batches.iter().enumerate() {
            let counts = copies::counts(&index, &batches, |at, x| at == b && live(at, x))?;
            let numbers: Vec<u32> = counts.keys().map(|&(_, x)| x).collect();
            let reader = super::batch::BatchReader::open(&index, entry, 0)?;
            let ids = reader.ids(&numbers)?;
            let mut id = Vec::with_capacity(numbers.len());
            for x in &numbers {
                let found = ids.get(x).ok_or_else(|| Error::IndexFile {
                    path: index.child(entry.files()).location(super::batch::IDS),
                    source: crate::error::FileError::Invalid(format!("no id for document {x}")),
                })?;
                id.push(found.as_str());
            }
            let n = numbers.len();
            let copies = counts.values().map(|c| c.copies).collect();
            let latest = counts
                .values()
                .map(|c| batches[c.latest].name.as_str())
                .collect();
            let df = frame(id, vec![entry.name.as_str(); n], copies, latest)?;
            bw.write_batch(&df).map_err(out_err)?;
            documents += n as u64;
        }
        bw.finish().map(|_| ()).map_err(out_err)
    })?;
    Ok(Exported {
        index: location.to_string(),
        output: output.to_string(),
        documents,
        batches: batches.len(),
    })
}

/// The export's columns as a frame.
fn frame(
    id: Vec<&str>,
    batch: Vec<&str>,
    copies: Vec<u32>,
    latest: Vec<&str>,
) -> Result<DataFrame> {
    let columns = vec![
        Column::new("id".into(), id),
        Column::new("batch".into(), batch),
        Column::new("copies".into(), copies),
        Column::new("latest_batch".into(), latest),
    ];
    DataFrame::new(columns[0].len(), columns).map_err(|source| Error::Polars {
        stage: "index export",
        source,
    })
}
