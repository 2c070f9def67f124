//! The run plan: what every task of a run needs to agree on, written once as `plan.json` in the
//! work directory before any task runs.
//!
//! Documents get dense global indices in input order (files sorted, rows in file order). The
//! documents are cut into `parts`, contiguous index ranges of about equal size (a part may cover
//! several files or a row range of one); with files the plan does not count ([`count`]), parts
//! of whole files, numbered once their signatures tasks have counted them. Stages and their
//! tasks: [`stage`].
//!
//! The two SimHash stages exist only for `--method simhash` with `--simhash-max-df` below 1 (they
//! find the over-frequent features every fingerprint leaves out); for MinHash they have no tasks
//! and [`Plan::stages`] leaves them out. File names and formats: [`crate::io::work`].
//!
//! Bucket ranges split a band by the high bits of the bucket hash, so a candidates task holds
//! `docs / ranges` rows of one band however large the corpus. Every result is a function of the
//! documents and the configuration only, never of the task counts, so the manifest is the same
//! byte for byte for any `--tasks` and thread count.

use std::ops::Range;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::config::{Config, Method, WorkKeys};
use crate::error::{Error, Result};
use crate::io::input;
use crate::io::jsonl::GroupStart;
use crate::io::object::is_url;

use crate::io::output::OutputDir;
use crate::io::work;

mod chunks;
mod count;
mod layout;
pub(crate) mod lines;
mod numbers;
mod stage;
pub(crate) use chunks::{At, Chunker};
pub(crate) use count::{heads, spread, FileCount};
use numbers::check_documents;
pub(crate) use numbers::{doc32, docs64, in_memory_rule, MAX_DOCS_32};
pub(crate) use stage::{task_counts, Stage, STAGES};

/// Plan file format version, raised whenever the meaning of a work file changes, so that a work
/// directory left by another build is discarded instead of resumed.
pub(crate) const FORMAT: u32 = 16;

/// Documents per part when `--tasks` is not given. A part's tasks hold its signatures and band
/// keys (~700 bytes per document: ~170 MB) but only one chunk of its text at a time.
pub(crate) const DOCS_PER_PART: u64 = 250_000;

/// Rows a signatures task reads and processes at a time: its text memory is three chunks' (one
/// being read, one computed, one written to the store), not the part's.
pub(crate) const DOCS_PER_CHUNK: u64 = 8_192;

/// The same with `--substrings`: a chunk's windows (a row of 20 bytes per ~12 bytes of text) are
/// held three times over too, and outweigh its text; a quarter of the chunk keeps them at about
/// what a plain run holds.
pub(crate) const DOCS_PER_CHUNK_SUBSTRINGS: u64 = 2_048;

/// Band rows per candidates task when `--bucket-ranges` is not given (~16 bytes each in the sort).
pub(crate) const ROWS_PER_CANDIDATES_TASK: u64 = 32_000_000;

/// Input files whose footers (or first and last MiB) the plan reads at once from object storage.
const REMOTE_READS: usize = 128;

/// One input file and where its rows sit in the global index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct InputFile {
    pub file: String,
    pub rows: u64,
    pub first_doc: u64,
    /// Rows of each row group, in order (empty: read as one group).
    #[serde(default)]
    pub row_groups: Vec<u64>,
    /// Size of the file in bytes and its fingerprint ([`input::identity`]), recorded in
    /// the manifest so `apply` can tell a shard changed since the run.
    #[serde(default)]
    pub bytes: u64,
    #[serde(default)]
    pub fingerprint: String,
    /// JSON Lines: lines of only whitespace, skipped (no documents).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub blank_lines: u64,
    /// Plain local JSON Lines: where each row group after the first starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub group_starts: Vec<GroupStart>,
    /// Counted by the signatures task that reads it, not by the plan ([`count`]): `rows`,
    /// `first_doc` and `row_groups` are 0 and empty until the plan is settled.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub uncounted: bool,
    /// An uncounted file's documents as the plan estimates them (for spreading work only).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub estimated_rows: u64,
    /// Plain local JSON Lines: where each byte range the `lines` stage counts starts ([`lines`]);
    /// empty for other files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranges: Vec<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The plan of one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Plan {
    pub format: u32,
    pub version: String,
    pub config: Config,
    pub files: Vec<InputFile>,
    pub documents: u64,
    /// Parts as (first document, document count), contiguous and in order.
    pub parts: Vec<(u64, u64)>,
    /// Bucket ranges per band (candidates tasks = bands x bucket_ranges).
    pub bucket_ranges: usize,
    /// `--index`: the retained index as this run uses it.
    #[serde(default)]
    pub index: Option<crate::index::IndexPlan>,
    /// `--reference`: the benchmark reference files, as listed when the plan was made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference: Vec<crate::reference::ReferenceFile>,
    /// A plan with files its tasks count ([`count`]): each part's range of whole files (`parts`
    /// is filled in when the plan is settled). Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub part_files: Vec<(usize, usize)>,
}

impl Plan {
    /// Lists the inputs, reads each file's row count from its footer (checking its columns), and
    /// cuts the documents into `tasks` parts (default: one per [`DOCS_PER_PART`] documents).
    /// `index`: tonight's use of the index ([`crate::index::plan`], read by the caller under the
    /// index lock), whose batch directory the plan names after its input.
    pub(crate) fn build(
        cfg: &Config,
        tasks: Option<usize>,
        bucket_ranges: Option<usize>,
        index: Option<crate::index::IndexPlan>,
    ) -> Result<Plan> {
        // What `serve` retained since the last batch comes first: it was seen before tonight.
        let folded = index.as_ref().map(|ip| ip.fold.clone()).unwrap_or_default();
        let names: Vec<String> = folded
            .into_iter()
            .chain(input::expand_inputs(&cfg.input)?)
            .collect();
        let reference = match &cfg.reference {
            Some(r) => crate::reference::list(r)?,
            None => Vec::new(),
        };
        // SimHash's document-frequency sample needs every document's number before the
        // signatures stage: such a run counts every file here.
        let sampled = cfg.method == Method::Simhash
            && cfg.simhash_max_df < 1.0
            && index.as_ref().is_none_or(|ip| ip.frequencies.is_none());
        let listed = |f: &String| {
            lines::counted_in_ranges(f) || (!sampled && crate::io::jsonl::counted_by_tasks(f))
        };
        let count = |f: &String| match listed(f) {
            true => input::list_uncounted(f, cfg),
            false => input::count_rows(f, cfg),
        };
        let count_all = || names.par_iter().map(count).collect::<Result<Vec<_>>>();
        let counted: Vec<input::Counted> = match names.iter().any(|f| is_url(f)) {
            // Object-store reads wait on the network, not on a core: many at once.
            true => rayon::ThreadPoolBuilder::new()
                .num_threads(REMOTE_READS)
                .build()
                .map_err(|e| Error::Config(format!("cannot start {REMOTE_READS} threads: {e}")))?
                .install(count_all)?,
            false => count_all()?,
        };
        let mut files = Vec::with_capacity(names.len());
        let mut next = 0u64;
        for (file, c) in names.into_iter().zip(counted) {
            files.push(InputFile {
                file,
                rows: c.rows,
                first_doc: next,
                row_groups: c.row_groups,
                bytes: c.bytes,
                fingerprint: c.fingerprint,
                blank_lines: c.blank_lines,
                group_starts: c.group_starts,
                uncounted: c.uncounted,
                estimated_rows: 0,
                ranges: Vec::new(),
            });
            next += c.rows;
        }
        count::estimate_rows(&mut files)?;
        let documents = next;
        let uncounted = files.iter().any(|f| f.uncounted);
        let estimate: u64 = match uncounted {
            true => files.iter().map(count::weight).sum(),
            false => documents,
        };
        let n_parts = match tasks {
            Some(0) => return Err(Error::Config("--tasks must be at least 1".into())),
            Some(t) => t as u64,
            None => estimate.div_ceil(DOCS_PER_PART).max(1),
        };
        lines::cut_ranges(&mut files, n_parts);
        let (parts, part_files) = match uncounted {
            false => (count::even_parts(documents, n_parts), Vec::new()),
            true => (
                vec![(0, 0); n_parts as usize],
                count::cut_by_files(&files, n_parts),
            ),
        };
        check_documents(cfg, documents, &parts)?;
        let bucket_ranges = match bucket_ranges {
            Some(0) => return Err(Error::Config("--bucket-ranges must be at least 1".into())),
            Some(r) => r,
            None => estimate.div_ceil(ROWS_PER_CANDIDATES_TASK).max(1) as usize,
        };
        // What tonight's batch is made of names its directory in the index.
        let fingerprint = {
            let what = serde_json::json!([&files, cfg.result_json()]);
            xxhash_rust::xxh3::xxh3_64(what.to_string().as_bytes())
        };
        Ok(Plan {
            format: FORMAT,
            version: env!("CARGO_PKG_VERSION").to_string(),
            config: cfg.clone(),
            files,
            documents,
            parts,
            bucket_ranges,
            index: index.map(|ip| ip.named(fingerprint)),
            reference,
            part_files,
        })
    }

    /// Settles `--work-keys auto`: keys made again when the work directory is on object storage
    /// (where writing and reading back keys costs more than a second read of the input) or when
    /// the stored keys would not fit in this machine's memory (beyond the page cache, reading them
    /// back made the exact stage slower than making them again: 10M documents, PERFORMANCE.md);
    /// stored otherwise.
    pub(crate) fn settle_work_keys(&mut self, remote_work: bool) {
        if self.config.work_keys != WorkKeys::Auto {
            return;
        }
        // A Parquet input's work directory with stored keys: 1.9-2.6x its bytes (PERFORMANCE.md).
        let stored: u64 = self
            .files
            .iter()
            .map(|f| f.bytes)
            .sum::<u64>()
            .saturating_mul(3);
        let memory = crate::io::work::memory_bytes().unwrap_or(u64::MAX);
        self.config.work_keys = match remote_work || stored > memory / 2 {
            true => WorkKeys::Remade,
            false => WorkKeys::Stored,
        };
    }

    /// Number of tasks of `stage` (0: the stage does not run for this plan's method).
    pub(crate) fn tasks(&self, stage: Stage) -> usize {
        match stage {
            Stage::Lines => usize::from(self.has_ranges()) * self.parts.len(),
            Stage::Sample => usize::from(self.samples_features()) * self.parts.len(),
            Stage::Frequencies => usize::from(self.samples_features()),
            Stage::Signatures | Stage::Verify | Stage::Exact | Stage::Manifest => self.parts.len(),
            Stage::PairSignatures => match self.store_layout().in_records {
                true => 0,
                false => self.parts.len(),
            },
            Stage::Keys => match self.config.work_keys {
                WorkKeys::Remade => self.parts.len(),
                WorkKeys::Stored | WorkKeys::Auto => 0,
            },
            Stage::Candidates => (self.bands() + self.sweep_bands()) * self.bucket_ranges,
            Stage::Sweep => usize::from(!self.config.sweep.is_empty()) * self.parts.len(),
            Stage::Cluster | Stage::Merge => 1,
            Stage::Lookup => match &self.index {
                Some(ip) if !ip.compare.is_empty() => self.parts.len(),
                _ => 0,
            },
            Stage::Index => usize::from(self.index.is_some()) * (self.bands() + 1),
            Stage::Paragraphs => self.paragraph_ranges(),
            Stage::Substrings => self.substring_ranges(),
            Stage::Sources | Stage::Recheck | Stage::Settle => {
                usize::from(self.config.substrings.is_some()) * self.parts.len()
            }
        }
    }

    /// `--paragraphs`: hash ranges of the paragraphs stage, two per part, so a task holds about
    /// half a part's paragraphs and a run of one part still has two tasks (0 without it).
    pub(crate) fn paragraph_ranges(&self) -> usize {
        match self.config.paragraphs {
            Some(_) => 2 * self.parts.len().max(1),
            None => 0,
        }
    }

    /// `--substrings`: hash ranges of the substrings stage, eight per part (a part's text has
    /// a window per dozen bytes: a task holds an eighth of a part's, 24 bytes each), 0 without
    /// it.
    pub(crate) fn substring_ranges(&self) -> usize {
        match self.config.substrings {
            Some(_) => 8 * self.parts.len().max(1),
            None => 0,
        }
    }

    /// The stages this plan runs, in order.
    pub(crate) fn stages(&self) -> Vec<Stage> {
        STAGES.into_iter().filter(|&s| self.tasks(s) > 0).collect()
    }

    /// Values per document record of the document store: K signature values (MinHash), or the
    /// fingerprint and feature count (SimHash, [`crate::simhash::to_record`]).
    /// Where the signatures are: in the store's records, except with `--work-keys remade` under
    /// MinHash without an index, where the pair-signatures stage makes again those that later
    /// stages compare ([`crate::io::pair_sigs`]).
    pub(crate) fn store_layout(&self) -> crate::io::store::Layout {
        let remade = self.config.work_keys == WorkKeys::Remade;
        let minhash = self.config.method == Method::Minhash;
        let in_records = !(remade && minhash && self.index.is_none());
        crate::io::store::Layout {
            k: self.store_k(),
            in_records,
        }
    }

    pub(crate) fn store_k(&self) -> usize {
        match self.config.method {
            Method::Minhash => self.config.num_perm,
            Method::Simhash => 3,
        }
    }

    /// True when SimHash drops over-frequent features.
    pub(crate) fn drops_frequent_features(&self) -> bool {
        self.config.method == Method::Simhash && self.config.simhash_max_df < 1.0
    }

    /// True when the over-frequent features are found from a sample of tonight's documents (not
    /// when the retained index has its filter already: every batch of an index uses the same).
    pub(crate) fn samples_features(&self) -> bool {
        self.drops_frequent_features()
            && self
                .index
                .as_ref()
                .is_none_or(|ip| ip.frequencies.is_none())
    }

    /// SimHash: the sampled documents are every `stride`-th one in input order (about
    /// `--simhash-df-sample` of them).
    pub(crate) fn sample_stride(&self) -> u64 {
        let sample = self.config.simhash_df_sample.max(1) as u64;
        self.documents.div_ceil(sample).max(1)
    }

    /// Global index range of part `p`.
    /// `rows` (in document order, `doc` giving a row's global document number) cut into each
    /// part's slice, one per part in order.
    pub(crate) fn by_part<'a, T>(&self, rows: &'a [T], doc: impl Fn(&T) -> u64) -> Vec<&'a [T]> {
        let mut rest = rows;
        (0..self.parts.len())
            .map(|q| {
                let end = self.part_range(q).end;
                let n = rest.partition_point(|x| doc(x) < end);
                let (part, tail) = rest.split_at(n);
                rest = tail;
                part
            })
            .collect()
    }

    /// The part holding document `doc` (global number).
    pub(crate) fn part_of(&self, doc: u64) -> usize {
        self.parts.partition_point(|&(first, n)| first + n <= doc)
    }

    pub(crate) fn part_range(&self, p: usize) -> Range<u64> {
        let (first, n) = self.parts[p];
        first..first + n
    }

    /// (file, row) of global document `doc`.
    pub(crate) fn locate(&self, doc: u64) -> (&str, u64) {
        let i = self.files.partition_point(|f| f.first_doc + f.rows <= doc);
        let f = &self.files[i.min(self.files.len().saturating_sub(1))];
        (&f.file, doc - f.first_doc)
    }

    /// True when `other` would compute the same results (same inputs, row counts, parts and
    /// result-determining configuration): then a rerun may reuse this plan's finished tasks.
    pub(crate) fn same_work(&self, other: &Plan) -> bool {
        self.format == other.format
            && self.version == other.version
            && self.files == other.files
            && self.parts == other.parts
            && self.part_files == other.part_files
            && self.bucket_ranges == other.bucket_ranges
            && self.config.result_json() == other.config.result_json()
            && self.index == other.index
            && self.reference == other.reference
    }

    /// The plan as JSON.
    pub(crate) fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }

    /// Parses `plan.json`.
    pub(crate) fn from_json(bytes: &[u8], location: &str) -> Result<Plan> {
        let plan: Plan = serde_json::from_slice(bytes).map_err(|source| Error::WorkFile {
            path: location.to_string(),
            source: crate::error::FileError::Parse {
                what: "a plan",
                source,
            },
        })?;
        if plan.format != FORMAT || plan.version != env!("CARGO_PKG_VERSION") {
            return Err(Error::WorkFile {
                path: location.to_string(),
                source: crate::error::FileError::Invalid(format!(
                    "written by corpus-dedup {} (plan format {}); this is {} (format {FORMAT})",
                    plan.version,
                    plan.format,
                    env!("CARGO_PKG_VERSION")
                )),
            });
        }
        Ok(plan)
    }
}

/// Reads the plan of a work directory.
pub(crate) fn read_plan(work: &OutputDir) -> Result<Option<Plan>> {
    match work.read(work::PLAN)? {
        None => Ok(None),
        Some(b) => Plan::from_json(&b, &work.location(work::PLAN)).map(Some),
    }
}

/// The markers of every task of `stage`, or an error naming the first incomplete one (the inputs
/// of the next stage do not exist yet).
pub(crate) fn require_stage(
    work: &OutputDir,
    plan: &Plan,
    stage: Stage,
) -> Result<Vec<work::TaskReport>> {
    (0..plan.tasks(stage))
        .map(|t| {
            work::read_marker(work, stage.name(), t)?.ok_or_else(|| Error::StageIncomplete {
                stage: stage.name(),
                task: t,
                tasks: plan.tasks(stage),
                marker: work.location(&work::marker_file(stage.name(), t)),
            })
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::corpus::Slice;

    /// A plan of one file of ten rows in one part, default settings (for other modules' tests).
    pub(crate) fn tiny_plan() -> Plan {
        plan(&[10], vec![(0, 10)])
    }

    fn plan(rows: &[u64], parts: Vec<(u64, u64)>) -> Plan {
        let mut files = Vec::new();
        let mut next = 0;
        for (i, &r) in rows.iter().enumerate() {
            files.push(InputFile {
                row_groups: Vec::new(),
                file: format!("f{i}"),
                rows: r,
                first_doc: next,
                bytes: 0,
                fingerprint: String::new(),
                blank_lines: 0,
                group_starts: Vec::new(),
                uncounted: false,
                estimated_rows: 0,
                ranges: Vec::new(),
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
            index: None,
            reference: Vec::new(),
            part_files: Vec::new(),
        }
    }

    #[test]
    fn auto_work_keys_are_remade_on_object_storage_or_beyond_memory() {
        let settled = |bytes: u64, remote: bool, asked: WorkKeys| {
            let mut p = plan(&[10], vec![(0, 10)]);
            p.files[0].bytes = bytes;
            p.config.work_keys = asked;
            p.settle_work_keys(remote);
            p.config.work_keys
        };
        assert_eq!(settled(1_000, false, WorkKeys::Auto), WorkKeys::Stored);
        assert_eq!(settled(1_000, true, WorkKeys::Auto), WorkKeys::Remade);
        assert_eq!(
            settled(u64::MAX / 4, false, WorkKeys::Auto),
            WorkKeys::Remade
        );
        // An explicit choice stands.
        assert_eq!(
            settled(u64::MAX / 4, true, WorkKeys::Stored),
            WorkKeys::Stored
        );
        assert_eq!(settled(1_000, false, WorkKeys::Remade), WorkKeys::Remade);
    }

    #[test]
    fn slices_cover_each_part() {
        let p = plan(&[5, 0, 3], vec![(0, 4), (4, 4)]);
        let names = |part: usize| -> Vec<&str> {
            (p.files_of_part(part).iter())
                .map(|f| f.file.as_str())
                .collect()
        };
        assert_eq!(names(0), vec!["f0"]);
        assert_eq!(names(1), vec!["f0", "f1", "f2"]);
        assert_eq!(p.locate(5), ("f2", 0));
        // Chunks of at most 2 rows cover part 1 in order; f2's 3 rows (one row group) are cut
        // into equal pieces of 2 and 1.
        let c: Vec<Vec<(String, Option<Range<u64>>)>> = (p.chunks(1, 2).into_iter())
            .map(|c| c.into_iter().map(|s| (s.file, s.rows)).collect())
            .collect();
        assert_eq!(
            c,
            vec![
                vec![("f0".to_string(), Some(4..5))],
                vec![("f2".to_string(), Some(0..2))],
                vec![("f2".to_string(), Some(2..3))],
            ]
        );
        // Row groups of 2,000 rows: chunks end on group boundaries, the first and last of one
        // group, whole chunks of four, halving between.
        let mut grouped = plan(&[100_000], vec![(0, 100_000)]);
        grouped.files[0].row_groups = vec![2_000; 50];
        let chunks = grouped.chunks(0, 8_192);
        let sizes: Vec<u64> = chunks
            .iter()
            .map(|c| {
                c.iter()
                    .map(|s| s.rows.as_ref().map_or(0, |r| r.end - r.start))
                    .sum()
            })
            .collect();
        assert_eq!(sizes.iter().sum::<u64>(), 100_000);
        assert!(chunks.iter().flatten().all(|s| s
            .rows
            .as_ref()
            .is_some_and(|r| r.start % 2_000 == 0 && r.end - r.start == 2_000)));
        assert_eq!(sizes[0], 2_000);
        assert_eq!(sizes[1], 8_000);
        assert!(sizes.iter().all(|&s| s <= 8_192));
        assert!(*sizes.last().unwrap_or(&0) == 2_000, "{sizes:?}");
        // One row group larger than a chunk: equal pieces, one per chunk.
        let mut big = plan(&[31_250], vec![(0, 31_250)]);
        big.files[0].row_groups = vec![31_250];
        let sizes: Vec<Vec<Slice>> = big.chunks(0, 8_192);
        assert_eq!(
            sizes,
            (0..4)
                .map(|i| vec![Slice {
                    file: "f0".to_string(),
                    rows: Some(i * 7_813..((i + 1) * 7_813).min(31_250)),
                    start: None,
                    open: false,
                }])
                .collect::<Vec<_>>()
        );
        assert_eq!(p.locate(4), ("f0", 4));
    }
}
