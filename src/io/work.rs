//! The work directory of a task run: the name of every work file, the completion markers, the
//! reports tasks leave in them, and the Parquet helpers the stage tasks share.
//!
//! Layout (P parts, B bands or block tables, R bucket ranges, T candidates tasks):
//! ```text
//! plan.json                      the plan (crate::plan)
//! boot_id                        the boot a scratch directory was written in (executor::local)
//! sample/pP.bin                  SimHash: features of the part's sampled documents (stages::sample)
//! frequencies.bin                SimHash: the over-frequent feature filter (stages::frequencies)
//! store/pP.{sig,ids,keys}        document store (io::store)
//! docs/pP.parquet                keep data and id hashes (stages::signatures)
//! exact/pP.bin                   exact-text hashes (stages::signatures)
//! lookup/pP.parquet              matches in the retained index (stages::lookup)
//! bands/bB-rR/pP.bin             band rows (io::band_rows)
//! candidates/tT.bin              candidate pairs cut by part (io::pairs)
//! pair-docs/tT.bin               --work-keys remade: the documents of those pairs (and of giant
//!                                buckets), by part (io::doc_lists)
//! pair-sigs/pP.bin               --work-keys remade: their signatures (io::pair_sigs)
//! giant/tT.parquet               keeper: members of the task's giant buckets (stages::candidates)
//! estimated/pP.parquet           edges the estimate decided (stages::verify)
//! checks/pP.parquet              pairs left to the exact check (stages::verify)
//! needs/tT.bin                   --work-keys remade: their documents, by part (io::doc_lists)
//! keys/pP.{keys,tokens,index}    --work-keys remade: those documents' tokens (io::keys)
//! edges/pP.parquet               verified edges (stages::verify::exact)
//! cluster/pP.parquet             keeper and cluster id per document (stages::cluster)
//! cluster/renewed.bin            keeper + index: indexed documents renewed (index::renew)
//! manifest/pP.parquet            manifest rows (stages::manifest)
//! done/STAGE-tNNNNN.json         completion marker of one task, written last (TaskReport)
//! ```
//! Every file is written whole under a temporary name (or as one object) and renamed; a task is
//! complete exactly when its marker exists.

use polars::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::io::output::{OutputDir, ParquetUse};

/// The plan file.
pub(crate) const PLAN: &str = "plan.json";

/// The documents the signatures tasks counted of the files the plan did not (JSON, written once
/// by the first later task that settles the plan, so the others read one file, not every marker).
pub(crate) const COUNTS: &str = "counted.json";

/// The indexed documents the cluster task renewed (`--cluster keeper` with `--index`).
pub(crate) const RENEWED: &str = "cluster/renewed.bin";
/// Every indexed document that is some document's best index match tonight, by batch.
pub(crate) const MATCHED: &str = "cluster/matched.bin";

/// The cluster task's copies of tonight's held documents and of the indexed documents tonight
/// was dropped against, for the index stage ([`crate::index::copies`]).
pub(crate) const COPIES: &str = "cluster/copies.bin";

/// The SimHash feature filter written by the frequencies task.
pub(crate) const FREQUENCIES: &str = "frequencies.bin";

/// Part `p`'s file in the per-part folder `dir` (`docs`, `edges`, `cluster`, `manifest`: Parquet).
pub(crate) fn part_file(dir: &str, p: usize) -> String {
    format!("{dir}/p{p:05}.parquet")
}

/// Part `p`'s document-frequency sample (SimHash).
pub(crate) fn sample_file(p: usize) -> String {
    format!("sample/p{p:05}.bin")
}

/// Part `p`'s store files: records, ids.
pub(crate) fn store_files(p: usize) -> [String; 2] {
    ["sig", "ids"].map(|ext| format!("store/p{p:05}.{ext}"))
}

/// Part `p`'s shingle keys and their index ([`crate::io::keys`]).
pub(crate) fn keys_file(p: usize) -> String {
    format!("keys/p{p:05}.keys")
}

/// Part `p`'s token dictionary, when its key file holds tokens.
pub(crate) fn keys_tokens_file(p: usize) -> String {
    format!("keys/p{p:05}.tokens")
}

/// See [`keys_file`].
pub(crate) fn keys_index_file(p: usize) -> String {
    format!("keys/p{p:05}.index")
}

/// `--work-keys remade`: the documents candidates task `t`'s pairs and giant buckets name, by
/// part (`stages::pair_signatures`).
pub(crate) fn pair_docs_file(t: usize) -> String {
    format!("pair-docs/t{t:05}.bin")
}

/// Part `p`'s signatures of the documents that candidate pairs name ([`crate::io::pair_sigs`]).
pub(crate) fn pair_sigs_file(p: usize) -> String {
    format!("pair-sigs/p{p:05}.bin")
}

/// The documents verify task `t` needs shingle keys of, by part (`stages::keys`).
pub(crate) fn needs_file(t: usize) -> String {
    format!("needs/t{t:05}.bin")
}

/// Verify task `p`'s edges decided on the estimate, and its checks that need the shingle keys
/// (`stages::verify`; the exact stage writes the part's edges from both).
pub(crate) fn estimated_file(p: usize) -> String {
    part_file("estimated", p)
}

/// See [`estimated_file`].
pub(crate) fn checks_file(p: usize) -> String {
    part_file("checks", p)
}

/// Part `p`'s exact-text hashes (16 bytes per document, little-endian, document order).
pub(crate) fn exact_file(p: usize) -> String {
    format!("exact/p{p:05}.bin")
}

/// Part `p`'s matches against the retained index (`stages::lookup`).
pub(crate) fn lookup_file(p: usize) -> String {
    part_file("lookup", p)
}

/// The rows of band `band`, bucket range `range`, written by part `part`'s signatures task.
pub(crate) fn band_rows_file(band: usize, range: usize, part: usize) -> String {
    format!("bands/b{band:03}-r{range:03}/p{part:05}.bin")
}

/// `--paragraphs`: the paragraphs part `part`'s signatures task found, by hash range, and the
/// meta file that says where each range's are ([`crate::io::paragraph_rows`]).
pub(crate) fn paragraph_rows_files(part: usize) -> [String; 2] {
    let name = format!("paragraphs/p{part:05}");
    [format!("{name}.bin"), format!("{name}.meta")]
}

/// `--paragraphs`: the paragraphs of part `part` that paragraphs task `range` removed.
pub(crate) fn paragraph_drops_file(range: usize, part: usize) -> String {
    format!("paragraphs/drops-r{range:03}-p{part:05}.parquet")
}

/// `--substrings`: the windows part `part`'s signatures task found, by hash range, and their
/// meta file (the format of [`crate::io::paragraph_rows`]).
pub(crate) fn substring_rows_files(part: usize) -> [String; 2] {
    let name = format!("substrings/p{part:05}");
    [format!("{name}.bin"), format!("{name}.meta")]
}

/// `--substrings`: the windows of part `part` that substrings task `range` removes or keeps as
/// the retained copy of a removed one.
pub(crate) fn substring_drops_file(range: usize, part: usize) -> String {
    format!("substrings/drops-r{range:03}-p{part:05}.parquet")
}

/// `--substrings`: the first copies of part `part`'s windows that round `round` (`sources`,
/// `recheck`, `settle`) lists.
pub(crate) fn substring_round_file(round: &str, part: usize) -> String {
    format!("substrings/{round}-p{part:05}.parquet")
}

/// `--paragraphs` with `--substrings`: the paragraphs of part `part` that retain a paragraph
/// paragraphs task `range` removed (kept whole by the substring rule).
pub(crate) fn paragraph_holders_file(range: usize, part: usize) -> String {
    format!("paragraphs/holders-r{range:03}-p{part:05}.parquet")
}

/// `--paragraphs` with `--index`: the (hash, document) of each paragraph tonight's kept
/// documents retain, of paragraphs task `range`, for tonight's batch.
pub(crate) fn paragraph_retained_file(range: usize) -> String {
    format!("paragraphs/retained-r{range:03}.bin")
}

/// The candidate pairs of candidates task `t`.
pub(crate) fn pairs_file(t: usize) -> String {
    format!("candidates/t{t:05}.bin")
}

/// The candidate pairs of candidates task `t` of the `--sweep` layout (cut by part as
/// [`pairs_file`]'s): the sweep's alone, never the run's verify.
pub(crate) fn sweep_pairs_file(t: usize) -> String {
    format!("sweep-candidates/t{t:05}.bin")
}

/// The giant buckets of candidates task `t` (`--cluster keeper`): (bucket, doc) rows.
pub(crate) fn giant_file(t: usize) -> String {
    format!("giant/t{t:05}.parquet")
}

/// A task's completion marker.
pub(crate) fn marker_file(stage: &str, task: usize) -> String {
    format!("done/{stage}-t{task:05}.json")
}

/// What a task reports in its completion marker.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct TaskReport {
    pub stage: String,
    pub task: usize,
    pub seconds: f64,
    /// Peak RSS of the process that ran the task, MiB (in `run`, of the whole process).
    pub peak_rss_mib: f64,
    /// Stage-specific counters.
    pub stats: serde_json::Value,
}

impl TaskReport {
    /// The counters as the stage's own type (defaults where a field is missing).
    pub(crate) fn stats<T: serde::de::DeserializeOwned + Default>(&self) -> T {
        serde_json::from_value(self.stats.clone()).unwrap_or_default()
    }
}

/// Reads a task's marker, if the task is complete.
pub(crate) fn read_marker(
    work: &OutputDir,
    stage: &str,
    task: usize,
) -> Result<Option<TaskReport>> {
    let name = marker_file(stage, task);
    match work.read(&name)? {
        None => Ok(None),
        Some(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|source| Error::WorkFile {
                path: work.location(&name),
                source: crate::error::FileError::Parse {
                    what: "a task marker",
                    source,
                },
            }),
    }
}

/// Writes a task's marker (the last thing a task does).
pub(crate) fn write_marker(work: &OutputDir, report: &TaskReport, stage: &str) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(report).unwrap_or_default();
    work.write_bytes(&marker_file(stage, report.task), bytes)
}

/// This machine's memory in bytes (Linux `MemTotal`), if known.
pub(crate) fn memory_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Process peak RSS in MiB (Linux `VmHWM`); 0 where unavailable.
pub(crate) fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<f64>().ok())
            })
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

/// Maps a polars error of `stage` into the library error.
pub(crate) fn polars_err(stage: &'static str) -> impl Fn(PolarsError) -> Error {
    move |source| Error::Polars { stage, source }
}

/// Writes `columns` as the Parquet work file `name`.
pub(crate) fn write_frame(
    work: &OutputDir,
    name: &str,
    stage: &'static str,
    columns: Vec<Column>,
) -> Result<()> {
    let h = columns.first().map_or(0, |c| c.len());
    let mut df = DataFrame::new(h, columns).map_err(polars_err(stage))?;
    work.write_parquet(name, &mut df, Vec::new(), ParquetUse::Work)
}

/// A column of a work file as one contiguous series.
pub(crate) fn series(df: &DataFrame, name: &str, stage: &'static str) -> Result<Series> {
    Ok(df
        .column(name)
        .map_err(polars_err(stage))?
        .as_materialized_series()
        .rechunk())
}

/// A column of a work file as an f32 vector (nulls as NaN).
pub(crate) fn f32s(df: &DataFrame, name: &str, stage: &'static str) -> Result<Vec<f32>> {
    let s = series(df, name, stage)?;
    Ok(s.f32()
        .map_err(polars_err(stage))?
        .iter()
        .map(|x| x.unwrap_or(f32::NAN))
        .collect())
}

/// A column of a work file as a u64 vector (document numbers, written by [`doc_column`] or as
/// u64).
pub(crate) fn u64s(df: &DataFrame, name: &str, stage: &'static str) -> Result<Vec<u64>> {
    let s = series(df, name, stage)?;
    if let Ok(narrow) = s.u32() {
        return Ok(narrow.into_no_null_iter().map(u64::from).collect());
    }
    Ok(s.u64()
        .map_err(polars_err(stage))?
        .into_no_null_iter()
        .collect())
}

/// A column of document numbers, in 32 bits when they all fit (every run below 2^32
/// documents: half the bytes to write and compress), else in 64; [`u64s`] reads either.
pub(crate) fn doc_column(name: &str, docs: Vec<u64>) -> Column {
    match docs.iter().all(|&d| d <= u64::from(u32::MAX)) {
        true => Column::new(
            name.into(),
            docs.into_iter().map(|d| d as u32).collect::<Vec<_>>(),
        ),
        false => Column::new(name.into(), docs),
    }
}

/// A column of a work file as a u32 vector.
pub(crate) fn u32s(df: &DataFrame, name: &str, stage: &'static str) -> Result<Vec<u32>> {
    let s = series(df, name, stage)?;
    Ok(s.u32()
        .map_err(polars_err(stage))?
        .into_no_null_iter()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_columns_are_as_narrow_as_their_numbers_and_read_back() {
        let small = vec![0, 7, u64::from(u32::MAX)];
        let large = vec![0, 1 << 32, u64::MAX - 1];
        for (docs, dtype) in [(small, DataType::UInt32), (large, DataType::UInt64)] {
            let column = doc_column("a", docs.clone());
            assert_eq!(column.dtype(), &dtype);
            let df = DataFrame::new(docs.len(), vec![column]).unwrap();
            assert_eq!(u64s(&df, "a", "test").unwrap(), docs);
        }
    }
}
