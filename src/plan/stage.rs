//! The stages of a run, in run order, and what each is called on the command line and in the work
//! directory.
//!
//! | stage         | tasks                        | reads                               | writes                          |
//! |---------------|------------------------------|-------------------------------------|---------------------------------|
//! | `lines`       | one per part (plain local JSON Lines) | a few byte ranges of the files | its marker (the ranges' counts) |
//! | `sample`      | one per part (SimHash)       | its rows that fall in the sample    | `sample/pP.bin`                 |
//! | `frequencies` | one (SimHash)                | `sample/*`                          | `frequencies.bin`               |
//! | `signatures`  | one per part                 | its rows of the shards              | `store/pP.{sig,ids,keys}`, `docs/pP.parquet`, `bands/bB-rR/pP.bin`, `exact/pP.bin` |
//! | `lookup`      | one per part (`--index`)     | its store and exact hashes, the index | `lookup/pP.parquet`           |
//! | `candidates`  | bands (tables) x ranges      | `bands/bB-rR/*`                     | `candidates/tT.bin`, `pair-docs/tT.bin` (`--work-keys remade`) |
//! | `pair-signatures` | one per part (`--work-keys remade`, MinHash, no index) | its part of each `pair-docs/*`, its shards | `pair-sigs/pP.bin` |
//! | `verify`      | one per part                 | its part of each pair file, stores  | `estimated/pP.parquet`, `checks/pP.parquet`, `needs/tT.bin` |
//! | `keys`        | one per part (`--work-keys remade`) | its part of each `needs/*`, its shards | `keys/pP.{keys,tokens,index}` |
//! | `exact`       | one per part                 | its estimates and checks, key files | `edges/pP.parquet`              |
//! | `sweep`       | one per part (`--sweep`)     | its part of each pair file, stores, key files | `sweep/pP.parquet` |
//! | `cluster`     | one                          | `edges/*` (streamed), `docs/*`      | `cluster/pP.parquet`            |
//! | `paragraphs`  | per hash range (`--paragraphs`) | its range of `paragraphs/p*.bin`, `cluster/*` | `paragraphs/drops-rR-pP.parquet` |
//! | `substrings`  | per hash range (`--substrings`) | its range of `substrings/p*.bin`, `cluster/*` | `substrings/drops-rR-pP.parquet` |
//! | `sources`     | one per part (`--substrings`) | the part's drops                   | `substrings/{sources,relies}-pP.parquet` |
//! | `recheck`, `settle` | one per part each (`--substrings`) | the part's lists, the previous round's | `substrings/{recheck,settle}-pP.parquet` |
//! | `manifest`    | one per part                 | `cluster/pP.parquet`, stores, drops | `manifest/pP.parquet`           |
//! | `index`       | bands + 1 (`--index`)        | band rows / stores, exact hashes    | INDEX/batches/NAME-HASH/*       |
//! | `merge`       | one                          | `manifest/*`, `done/*`              | OUTPUT/manifest.parquet, summary.json |

use serde::{Deserialize, Serialize};

use super::Plan;

/// The stages, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Stage {
    /// Plain local JSON Lines: a few byte ranges of the files -> their documents and line starts
    /// ([`super::lines`]).
    Lines,
    /// SimHash: features of the sampled documents of a part (for document frequencies).
    Sample,
    /// SimHash: the sample's feature counts -> the over-frequent feature filter.
    Frequencies,
    /// Shards -> signatures (MinHash) or fingerprints (SimHash), band rows, the document store.
    Signatures,
    /// `--index`: a part's documents looked up in the retained index's batches.
    Lookup,
    /// Band rows of one band (bucket range) -> candidate pairs.
    Candidates,
    /// `--work-keys remade` (MinHash, no index): a part's documents that candidate pairs or
    /// giant buckets name -> their signatures, made from the shards again.
    PairSignatures,
    /// Candidate pairs of a part -> the edges the estimate decides, and the checks that need
    /// shingle keys.
    Verify,
    /// A part's documents that a check needs the shingle keys of -> their keys, made from the
    /// shards again.
    Keys,
    /// A part's checks on shingle keys -> its verified edges.
    Exact,
    /// `--sweep`: the candidate pairs of a part (the run's layout and the sweep's) -> which of
    /// the sweep's thresholds each reaches, decided as verify decides at that threshold.
    Sweep,
    /// All edges (streamed) -> clusters and keepers.
    Cluster,
    /// `--paragraphs`: the paragraphs of one hash range -> those an earlier kept document (or
    /// the same one, or with `--index` an indexed one) already holds.
    Paragraphs,
    /// `--substrings`: the windows of one hash range -> those whose bytes an earlier kept
    /// document (or the same one, earlier) retains, and the retained copies they need.
    Substrings,
    /// `--substrings`, round 1 of 3: a part's first copies that a possible removal of their
    /// document overlaps (the others stay whole).
    Sources,
    /// `--substrings`, round 2 of 3: those a certain removal overlaps (they are cut).
    Recheck,
    /// `--substrings`, round 3 of 3: those that may be cut, the rest settled from round 2 (no
    /// window is removed against them).
    Settle,
    /// Clusters of a part -> manifest rows.
    Manifest,
    /// `--index`: tonight's batch files for the retained index (one task per band, one for the
    /// per-document files).
    Index,
    /// Manifest parts -> manifest.parquet and summary.json in the output.
    Merge,
}

/// All stages in run order (a plan runs those with tasks: [`Plan::stages`]).
pub(crate) const STAGES: [Stage; 20] = [
    Stage::Lines,
    Stage::Sample,
    Stage::Frequencies,
    Stage::Signatures,
    Stage::Lookup,
    Stage::Candidates,
    Stage::PairSignatures,
    Stage::Verify,
    Stage::Keys,
    Stage::Exact,
    Stage::Sweep,
    Stage::Cluster,
    Stage::Paragraphs,
    Stage::Substrings,
    Stage::Sources,
    Stage::Recheck,
    Stage::Settle,
    Stage::Manifest,
    Stage::Index,
    Stage::Merge,
];

impl Stage {
    /// True when this stage runs after `other`.
    pub(crate) fn after(self, other: Stage) -> bool {
        let at = |s: Stage| STAGES.iter().position(|&x| x == s);
        at(self) > at(other)
    }

    /// True for a stage with one task per part: its progress is counted in documents.
    pub(crate) fn per_part(self) -> bool {
        matches!(
            self,
            Stage::Sample
                | Stage::Signatures
                | Stage::Lookup
                | Stage::PairSignatures
                | Stage::Verify
                | Stage::Keys
                | Stage::Exact
                | Stage::Sweep
                | Stage::Manifest
        )
    }

    /// True for a stage whose tasks advance the progress bar themselves as they go
    /// ([`crate::progress::advance`]), by their part's documents in all.
    pub(crate) fn reports_progress(self) -> bool {
        matches!(self, Stage::Signatures | Stage::Manifest)
    }

    /// Puts `tasks` in the order a local run starts them: the index stage's per-document task
    /// (its last and longest) first, so the band tasks fill the other threads while it runs
    /// instead of leaving them idle at the end.
    pub(crate) fn start_order(self, tasks: &mut [usize]) {
        if self == Stage::Index {
            tasks.sort_by_key(|&t| std::cmp::Reverse(t));
        }
    }

    /// A task's weight on the progress bar and its unit: its part's documents for a stage with a
    /// task per part, else the task itself.
    pub(crate) fn progress(self, plan: &Plan, task: usize) -> (u64, &'static str) {
        match self.per_part() {
            true => (plan.part_weight(task), "docs"),
            false => (1, "tasks"),
        }
    }

    /// The stage's name (as on the command line).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Stage::Lines => "lines",
            Stage::Sample => "sample",
            Stage::Frequencies => "frequencies",
            Stage::Signatures => "signatures",
            Stage::Lookup => "lookup",
            Stage::Index => "index",
            Stage::Candidates => "candidates",
            Stage::PairSignatures => "pair-signatures",
            Stage::Verify => "verify",
            Stage::Keys => "keys",
            Stage::Exact => "exact",
            Stage::Sweep => "sweep",
            Stage::Cluster => "cluster",
            Stage::Paragraphs => "paragraphs",
            Stage::Substrings => "substrings",
            Stage::Sources => "sources",
            Stage::Recheck => "recheck",
            Stage::Settle => "settle",
            Stage::Manifest => "manifest",
            Stage::Merge => "merge",
        }
    }
}

/// The stages this plan runs and their task counts, as printed by `corpus-dedup plan` for drivers.
pub(crate) fn task_counts(plan: &Plan) -> serde_json::Value {
    let stages = plan.stages();
    let mut m = serde_json::Map::new();
    for &s in &stages {
        m.insert(s.name().into(), plan.tasks(s).into());
    }
    let names: Vec<&str> = stages.iter().map(|s| s.name()).collect();
    // Documents the tasks count are numbered after the signatures stage: unknown here.
    let documents = plan.counted().then_some(plan.documents);
    serde_json::json!({ "documents": documents, "stages": names, "tasks": m })
}
