//! The run plan: what every task of a run needs to agree on, written once as `plan.json` in the
//! work directory before any task runs.
//!
//! Documents get dense global indices in input order (files sorted, rows in file order). The
//! documents are cut into `parts`, contiguous index ranges of about equal size (a part may cover
//! several files or a row range of one). Stages and their tasks:
//!
//! | stage        | tasks                  | reads                              | writes                         |
//! |--------------|------------------------|------------------------------------|--------------------------------|
//! | `signatures` | one per part           | its rows of the shards             | `store/pP.{sig,ids,keys}`, `docs/pP.parquet`, `bands/bB-rR/pP.bin` (see `io::band_rows`) |
//! | `candidates` | bands x bucket ranges  | `bands/bB-rR/*`                    | `candidates/tT.bin` (pairs by part, see `io::pairs`) |
//! | `verify`     | one per part           | its part of each pair file, stores | `edges/pP.parquet`          |
//! | `cluster`    | one                    | `edges/*` (streamed), `docs/*`     | `cluster/pP.parquet`           |
//! | `manifest`   | one per part           | `cluster/pP.parquet`, stores       | `manifest/pP.parquet`          |
//! | `merge`      | one                    | `manifest/*`, `done/*`             | OUTPUT/manifest.parquet, summary.json |
//!
//! Bucket ranges split a band by the high bits of the bucket hash, so a candidates task holds
//! `docs / ranges` rows of one band however large the corpus. Every result is a function of the
//! documents and the configuration only, never of the task counts, so the manifest is the same
//! byte for byte for any `--tasks` and thread count.

use std::ops::Range;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::io::input;

/// Plan file format version: raised whenever the work files' meaning changes, so that a work
/// directory left by an older build is discarded instead of resumed (3: MinHash over the affine
/// permutations of [`crate::minhash`], and the three-file document store of
/// [`crate::io::store`], and band rows as [`crate::io::band_rows`] files; 4: the token hash of
/// [`crate::text::shingle::token_hash`]).
pub const FORMAT: u32 = 4;

/// Documents per part when `--tasks` is not given. A part's tasks hold its signatures and band
/// keys (~700 bytes per document: ~170 MB) but only one chunk of its text at a time.
pub const DOCS_PER_PART: u64 = 250_000;

/// Rows a signatures task reads and processes at a time: its text memory is three chunks' (one
/// being read, one computed, one written to the store), not the part's.
pub const DOCS_PER_CHUNK: u64 = 8_192;

/// Band rows per candidates task when `--bucket-ranges` is not given (~16 bytes each in the sort).
pub const ROWS_PER_CANDIDATES_TASK: u64 = 32_000_000;

/// The stages, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// Shards -> signatures, band rows and the document store.
    Signatures,
    /// Band rows of one band (bucket range) -> candidate pairs.
    Candidates,
    /// Candidate pairs of a part -> verified edges.
    Verify,
    /// All edges (streamed) -> clusters and keepers.
    Cluster,
    /// Clusters of a part -> manifest rows.
    Manifest,
    /// Manifest parts -> manifest.parquet and summary.json in the output.
    Merge,
}

/// All stages in run order.
pub const STAGES: [Stage; 6] = [
    Stage::Signatures,
    Stage::Candidates,
    Stage::Verify,
    Stage::Cluster,
    Stage::Manifest,
    Stage::Merge,
];

impl Stage {
    /// The stage's name (as on the command line).
    pub fn name(self) -> &'static str {
        match self {
            Stage::Signatures => "signatures",
            Stage::Candidates => "candidates",
            Stage::Verify => "verify",
            Stage::Cluster => "cluster",
            Stage::Manifest => "manifest",
            Stage::Merge => "merge",
        }
    }
}

/// One input file and where its rows sit in the global index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputFile {
    pub file: String,
    pub rows: u64,
    pub first_doc: u64,
}

/// The plan of one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    pub format: u32,
    pub version: String,
    pub config: Config,
    pub files: Vec<InputFile>,
    pub documents: u64,
    /// Parts as (first document, document count), contiguous and in order.
    pub parts: Vec<(u64, u64)>,
    /// Bucket ranges per band (candidates tasks = bands x bucket_ranges).
    pub bucket_ranges: usize,
}

impl Plan {
    /// Lists the inputs, reads each file's row count from its footer (checking its columns), and
    /// cuts the documents into `tasks` parts (default: one per [`DOCS_PER_PART`] documents).
    pub fn build(cfg: &Config, tasks: Option<usize>, bucket_ranges: Option<usize>) -> Result<Plan> {
        let names = input::expand_inputs(&cfg.input)?;
        let rows: Vec<u64> = names
            .par_iter()
            .map(|f| input::count_rows(f, cfg))
            .collect::<Result<_>>()?;
        let mut files = Vec::with_capacity(names.len());
        let mut next = 0u64;
        for (file, rows) in names.into_iter().zip(rows) {
            files.push(InputFile {
                file,
                rows,
                first_doc: next,
            });
            next += rows;
        }
        let documents = next;
        if documents >= u32::MAX as u64 {
            return Err(Error::TooManyDocuments(documents));
        }
        let n_parts = match tasks {
            Some(0) => return Err(Error::Config("--tasks must be at least 1".into())),
            Some(t) => t as u64,
            None => documents.div_ceil(DOCS_PER_PART).max(1),
        };
        let per = documents.div_ceil(n_parts).max(1);
        // More tasks than documents: the surplus parts are empty, which every stage accepts.
        let parts: Vec<(u64, u64)> = (0..n_parts)
            .map(|i| (i * per).min(documents))
            .map(|first| (first, per.min(documents - first)))
            .collect();
        let bucket_ranges = match bucket_ranges {
            Some(0) => return Err(Error::Config("--bucket-ranges must be at least 1".into())),
            Some(r) => r,
            None => documents.div_ceil(ROWS_PER_CANDIDATES_TASK).max(1) as usize,
        };
        Ok(Plan {
            format: FORMAT,
            version: env!("CARGO_PKG_VERSION").to_string(),
            config: cfg.clone(),
            files,
            documents,
            parts,
            bucket_ranges,
        })
    }

    /// Number of tasks of `stage`.
    pub fn tasks(&self, stage: Stage) -> usize {
        match stage {
            Stage::Signatures | Stage::Verify | Stage::Manifest => self.parts.len(),
            Stage::Candidates => self.config.bands * self.bucket_ranges,
            Stage::Cluster | Stage::Merge => 1,
        }
    }

    /// Global index range of part `p`.
    pub fn part_range(&self, p: usize) -> Range<u64> {
        let (first, n) = self.parts[p];
        first..first + n
    }

    /// The (file, row range) slices that make up part `p`, in order.
    pub fn slices(&self, p: usize) -> Vec<(String, Option<Range<u64>>)> {
        let r = self.part_range(p);
        self.files
            .iter()
            .filter(|f| f.rows > 0 && f.first_doc < r.end && f.first_doc + f.rows > r.start)
            .map(|f| {
                let lo = r.start.max(f.first_doc) - f.first_doc;
                let hi = r.end.min(f.first_doc + f.rows) - f.first_doc;
                (f.file.clone(), Some(lo..hi))
            })
            .collect()
    }

    /// Part `p`'s slices cut into chunks of at most `max_docs` rows each (local files only: an
    /// object-store shard is fetched whole, so its slice stays one chunk rather than being
    /// downloaded once per chunk). A signatures task reads and processes one chunk at a time.
    ///
    /// The first chunk is an eighth of `max_docs`, and the last `2 * max_docs` rows are cut into
    /// halving chunks down to an eighth: the task's workers wait for the first chunk to be read
    /// and for the last one to be stored, so short ends keep both waits short. How a part is
    /// chunked never changes a result.
    pub fn chunks(&self, p: usize, max_docs: u64) -> Vec<Vec<(String, Option<Range<u64>>)>> {
        let max_docs = max_docs.max(1);
        let small = (max_docs / 8).max(1);
        let total: u64 = self
            .slices(p)
            .iter()
            .filter_map(|(_, r)| r.as_ref().map(|r| r.end - r.start))
            .sum();
        let size = |done: u64| {
            let left = total - done;
            if done == 0 {
                small
            } else if left > 2 * max_docs {
                max_docs
            } else {
                (left / 2).max(small)
            }
        };
        let mut chunks = Vec::new();
        let mut cur = Vec::new();
        let mut done = 0;
        let mut room = size(0);
        for (file, rows) in self.slices(p) {
            let Some(mut r) = rows else { continue };
            let whole = crate::io::object::is_url(&file);
            if whole && !cur.is_empty() {
                chunks.push(std::mem::take(&mut cur));
                room = size(done);
            }
            while r.start < r.end {
                let take = if whole {
                    r.end - r.start
                } else {
                    room.min(r.end - r.start)
                };
                cur.push((file.clone(), Some(r.start..r.start + take)));
                r.start += take;
                done += take;
                room = room.saturating_sub(take);
                if room == 0 || whole {
                    chunks.push(std::mem::take(&mut cur));
                    room = size(done);
                }
            }
        }
        if !cur.is_empty() {
            chunks.push(cur);
        }
        chunks
    }

    /// (file, row) of global document `doc`.
    pub fn locate(&self, doc: u64) -> (&str, u64) {
        let i = self.files.partition_point(|f| f.first_doc + f.rows <= doc);
        let f = &self.files[i.min(self.files.len().saturating_sub(1))];
        (&f.file, doc - f.first_doc)
    }

    /// True when `other` would compute the same results (same inputs, row counts, parts and
    /// result-determining configuration): then a rerun may reuse this plan's finished tasks.
    pub fn same_work(&self, other: &Plan) -> bool {
        self.format == other.format
            && self.version == other.version
            && self.files == other.files
            && self.parts == other.parts
            && self.bucket_ranges == other.bucket_ranges
            && self.config.result_json() == other.config.result_json()
    }

    /// The plan as JSON.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }

    /// Parses `plan.json`.
    pub fn from_json(bytes: &[u8], location: &str) -> Result<Plan> {
        let plan: Plan = serde_json::from_slice(bytes).map_err(|e| Error::WorkFile {
            path: location.to_string(),
            msg: format!("not a plan: {e}"),
        })?;
        if plan.format != FORMAT || plan.version != env!("CARGO_PKG_VERSION") {
            return Err(Error::WorkFile {
                path: location.to_string(),
                msg: format!(
                    "written by corpus-dedup {} (plan format {}); this is {} (format {FORMAT})",
                    plan.version,
                    plan.format,
                    env!("CARGO_PKG_VERSION")
                ),
            });
        }
        Ok(plan)
    }
}

/// Task counts per stage, as printed by `corpus-dedup plan` for drivers.
pub fn task_counts(plan: &Plan) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for s in STAGES {
        m.insert(s.name().into(), plan.tasks(s).into());
    }
    serde_json::json!({ "documents": plan.documents, "stages": STAGES.map(Stage::name), "tasks": m })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(rows: &[u64], parts: Vec<(u64, u64)>) -> Plan {
        let mut files = Vec::new();
        let mut next = 0;
        for (i, &r) in rows.iter().enumerate() {
            files.push(InputFile {
                file: format!("f{i}"),
                rows: r,
                first_doc: next,
            });
            next += r;
        }
        let cfg = crate::Settings {
            input: vec!["x".into()],
            output: Some("o".into()),
            ..Default::default()
        }
        .resolve()
        .unwrap();
        Plan {
            format: FORMAT,
            version: "t".into(),
            config: cfg,
            files,
            documents: next,
            parts,
            bucket_ranges: 1,
        }
    }

    #[test]
    fn slices_cover_each_part() {
        let p = plan(&[5, 0, 3], vec![(0, 4), (4, 4)]);
        assert_eq!(p.slices(0), vec![("f0".to_string(), Some(0..4))]);
        assert_eq!(
            p.slices(1),
            vec![
                ("f0".to_string(), Some(4..5)),
                ("f2".to_string(), Some(0..3))
            ]
        );
        assert_eq!(p.locate(5), ("f2", 0));
        // Chunks of at most 2 rows cover part 1 in order, crossing the file boundary (the
        // first and the last ones of a single row).
        let c = p.chunks(1, 2);
        assert_eq!(
            c,
            vec![
                vec![("f0".to_string(), Some(4..5))],
                vec![("f2".to_string(), Some(0..1))],
                vec![("f2".to_string(), Some(1..2))],
                vec![("f2".to_string(), Some(2..3))],
            ]
        );
        // Chunk sizes: an eighth first, whole chunks, then halving down to an eighth.
        let big = plan(&[100_000], vec![(0, 100_000)]);
        let sizes: Vec<u64> = big
            .chunks(0, 8_192)
            .iter()
            .map(|c| {
                c.iter()
                    .map(|(_, r)| r.as_ref().map_or(0, |r| r.end - r.start))
                    .sum()
            })
            .collect();
        assert_eq!(sizes.iter().sum::<u64>(), 100_000);
        assert_eq!(sizes[0], 1_024);
        assert!(sizes.iter().all(|&s| s <= 8_192));
        assert!(*sizes.last().unwrap_or(&0) <= 1_024, "{sizes:?}");
        assert_eq!(sizes.len(), 17, "{sizes:?}");
        assert_eq!(p.locate(4), ("f0", 4));
    }
}
