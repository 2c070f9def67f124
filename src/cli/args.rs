//! The command line's definitions (clap): the commands, their options and the job they share.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::executor::local::TaskOptions;
use crate::plan::Stage;
use crate::Settings;

#[derive(Parser)]
#[command(
    name = "corpus-dedup",
    version,
    about = "Find near-duplicate documents in Parquet text corpora and write a keep/drop manifest"
)]
pub(super) struct Cli {
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(Subcommand)]
pub(super) enum Command {
    /// Run the whole job: read shards, find near-duplicates, write manifest.parquet and summary.json.
    /// Runs as resumable tasks: rerun the same command after a crash to continue.
    Run {
        #[command(flatten)]
        job: Job,
        /// Work directory for the task files (local or s3://); default OUTPUT/_work.
        #[arg(long, value_name = "DIR|URL")]
        work: Option<String>,
        /// Keep the work directory after success (it is removed by default).
        #[arg(long)]
        keep_work: bool,
    },
    /// Plan a task run: count the input rows and write plan.json into the work directory; prints
    /// the stages and their task counts as JSON, for a driver.
    Plan {
        #[command(flatten)]
        job: Job,
        /// Work directory shared by all tasks (a shared filesystem path or s3:// URL).
        #[arg(long, value_name = "DIR|URL")]
        work: String,
    },
    /// Write the deduplicated shards: each input shard's kept rows, same name, schema, row order
    /// and codec. Rerun the same command after a crash to finish (complete shards are skipped).
    Apply {
        #[command(flatten)]
        options: crate::apply::ApplyOptions,
        /// Worker threads (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
    },
    /// Rebuild OUT/report.html (the run's report) from OUT's summary.json and manifest.
    Report {
        /// The output directory of a run (local or s3://).
        #[arg(value_name = "OUT")]
        output: String,
    },
    /// Sample the run's drops, stratified by similarity band, for a person to label: writes
    /// OUT/audit-pairs.parquet and OUT/audit.html (keys y / n / s, arrows); with --score, reads
    /// the labels the page exported and prints precision per band and overall as JSON.
    Audit {
        /// The output directory of a run (local or s3://).
        #[arg(value_name = "OUT")]
        output: String,
        /// Pairs sampled at most, shared equally among the bands.
        #[arg(long, default_value_t = 200)]
        pairs: usize,
        /// Strata of each band per value of the run's --report-group column (its precision
        /// per source or domain); a run without --report-group is refused.
        #[arg(long)]
        by_group: bool,
        /// A labels file the page exported (pair -> "y", "n" or "s"): score it instead of
        /// sampling.
        #[arg(long, value_name = "LABELS.json")]
        score: Option<String>,
    },
    /// Show the cluster of one document: its kept document, every member's similarity (the
    /// run's, the MinHash estimate and the exact Jaccard) and a word diff against the keeper.
    Explain {
        /// The output directory of a run (local or s3://).
        #[arg(value_name = "OUT")]
        output: String,
        /// The document's id (as in the manifest).
        #[arg(long)]
        id: String,
        /// Members shown at most (the keeper and the document always are).
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Read the retained index of a nightly job (`run --index`).
    Index {
        #[command(subcommand)]
        command: IndexCommand,
    },
    /// Answer "is this text a near-duplicate of anything retained?" over HTTP/JSON, one request
    /// at a time, over the index nightly runs keep: POST /check, POST /add (retains a text that
    /// is none, durably, before answering), DELETE /documents/ID, GET /health, GET /stats.
    Serve {
        #[command(flatten)]
        options: crate::serve::ServeOptions,
    },
    /// Run one task of a planned run (what a cluster scheduler launches).
    Task {
        /// The stage.
        #[arg(value_enum)]
        stage: Stage,
        /// Task index, 0-based.
        #[arg(long, value_name = "I")]
        task: usize,
        /// Number of tasks of the stage (must match the plan; a guard against a stale driver).
        #[arg(long, value_name = "N")]
        tasks: usize,
        /// Work directory of the planned run.
        #[arg(long, value_name = "DIR|URL")]
        work: String,
        /// Worker threads (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
    },
}

#[derive(Subcommand)]
pub(super) enum IndexCommand {
    /// Write one row per live indexed document (id, batch, copies across nights, latest_batch)
    /// as a Parquet file.
    Export {
        #[command(flatten)]
        index: IndexArgs,
        /// The Parquet file to write (local or s3://).
        #[arg(long, value_name = "FILE.parquet")]
        output: String,
    },
    /// What the index holds: its batches (lingering ones too), live documents, bytes on disk
    /// and in memory per document, the newest batch and the settings.
    Status {
        #[command(flatten)]
        index: IndexArgs,
        /// JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Read every file of the index, check every checksum and the files of each batch against
    /// each other; exit 1 naming each damaged file and its batch.
    Verify {
        #[command(flatten)]
        index: IndexArgs,
        /// JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove one batch (after damage, or to forget a bad night): its documents are no longer
    /// matched by later nights. The index head changes in one step.
    Remove {
        #[command(flatten)]
        index: IndexArgs,
        /// The batch's name (as --batch gave it).
        #[arg(long, value_name = "NAME")]
        batch: String,
    },
}

/// The index an `index` command reads, and whether to wait for a run using it.
#[derive(clap::Args)]
pub(super) struct IndexArgs {
    /// The index (local directory or s3:// prefix).
    #[arg(long, value_name = "DIR|URL")]
    pub(super) index: String,
    /// When a run is using the index, wait for it instead of failing.
    #[arg(long)]
    pub(super) wait: bool,
}

impl IndexArgs {
    /// Takes the index lock, waiting with `--wait`.
    pub(super) fn lock(&self) -> impl Fn() -> crate::Result<crate::index::Lock> + '_ {
        || {
            crate::io::lock::waiting(self.wait, false, || {
                crate::index::Lock::acquire(&self.index)
            })
        }
    }
}

/// What `run` and `plan` take alike: the job's settings and how its tasks are laid out.
#[derive(clap::Args)]
pub(super) struct Job {
    /// TOML file with the same keys as the flags (`num-perm = 128`); flags override it.
    #[arg(long, value_name = "FILE.toml")]
    pub(super) config: Option<PathBuf>,
    #[command(flatten)]
    pub(super) settings: Settings,
    #[command(flatten)]
    pub(super) layout: TaskOptions,
}
