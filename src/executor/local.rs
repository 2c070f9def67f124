//! The local executor behind `corpus-dedup run`.
//!
//! MinHash: makes the plan, then runs every task of every stage in this process, the tasks of a
//! stage in parallel on rayon threads (each task parallel inside too), with the work files under
//! `OUTPUT/_work` (or `--work`). Resumable: when the work directory already holds the plan of the
//! same work, finished tasks are skipped (and the run says so), so a rerun after a kill continues
//! and gives the same manifest. A plan of different work is discarded. The work directory is
//! removed after success unless `--keep-work`.
//!
//! A local work directory is [`OutputDir::Scratch`]: this one process writes and reads it, so its
//! files are not synced to disk (syncing the ~3 KB per document of the store cost 0.4 s of idle
//! wait per 100k documents, a tenth of the run, and deleted work files then never reach the
//! disk). A renamed scratch file is complete while the machine stays up; after a restart its
//! contents are not guaranteed, so the work directory records the boot it was written in
//! ([`BOOT_FILE`]) and a rerun in another boot starts over instead of resuming.
//!
//! SimHash runs in memory ([`super::memory`]).

use std::time::Instant;

use rayon::prelude::*;

use crate::config::{Config, Method};
use crate::error::{Error, Result};
use crate::executor::memory::{bar, run_simhash};
use crate::executor::tasks::{read_marker, read_plan, run_task};
use crate::io::output::{boot_id, OutputDir};
use crate::plan::{Plan, Stage, STAGES};

/// How `run` lays out its tasks (none of this changes the result).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TaskOptions {
    /// Parts the documents are cut into: tasks of the signatures, verify and manifest stages
    /// (default: one per 250,000 documents).
    #[arg(long, value_name = "N")]
    pub tasks: Option<usize>,
    /// Bucket ranges per LSH band: candidates tasks = bands x ranges (default: one per 32M
    /// documents).
    #[arg(long, value_name = "R")]
    pub bucket_ranges: Option<usize>,
}

/// Runs the job; returns the summary (as written to summary.json).
pub fn run(
    cfg: &Config,
    layout: &TaskOptions,
    work: Option<&str>,
    keep_work: bool,
) -> Result<serde_json::Value> {
    in_pool(cfg.threads, || match cfg.method {
        Method::Simhash => run_simhash(cfg).map(|s| serde_json::to_value(s).unwrap_or_default()),
        Method::Minhash => run_tasks(cfg, layout, work, keep_work),
    })
}

/// Runs `f` in a rayon pool of `threads` threads.
pub fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Error::Config(format!("cannot start {threads} threads: {e}")))?;
    pool.install(f)
}

/// File of a scratch work directory that holds the [`boot_id`] of the boot it was written in.
pub const BOOT_FILE: &str = "boot_id";

/// Whether the files of `work` can be trusted now: always for synced and remote directories; for
/// a scratch directory, only in the boot that wrote it.
fn same_boot(work: &OutputDir) -> Result<bool> {
    if !matches!(work, OutputDir::Scratch(_)) {
        return Ok(true);
    }
    let written = work.read(BOOT_FILE)?;
    Ok(written.is_some() && written.map(String::from_utf8) == boot_id().map(Ok))
}

/// Writes the plan into `work`, or keeps the one there when it describes the same work (and, for
/// a scratch directory, was written in this boot). Returns whether an existing plan was kept
/// (finished tasks will be reused).
pub fn install_plan(work: &OutputDir, plan: &Plan, quiet: bool) -> Result<bool> {
    // An unreadable plan (damaged, or another version's) counts as different work.
    let mut same_work = false;
    if let Ok(Some(old)) = read_plan(work) {
        same_work = old.same_work(plan);
        if same_work && same_boot(work)? {
            return Ok(true);
        }
    }
    if work.read("plan.json")?.is_some() {
        if !quiet {
            let why = if same_work {
                "was written before the machine restarted (or not by `run`), and its files are not synced to disk"
            } else {
                "holds work of a different run (other input or settings)"
            };
            eprintln!("corpus-dedup: {} {why}: discarding it", work.location(""));
        }
        work.remove_all()?;
    }
    if let (OutputDir::Scratch(_), Some(boot)) = (work, boot_id()) {
        work.write_bytes(BOOT_FILE, boot.into_bytes())?;
    }
    work.write_bytes("plan.json", plan.to_json())?;
    Ok(false)
}

fn run_tasks(
    cfg: &Config,
    layout: &TaskOptions,
    work: Option<&str>,
    keep_work: bool,
) -> Result<serde_json::Value> {
    let out = OutputDir::parse(&cfg.output);
    out.prepare()?;
    let work = match work {
        Some(w) => OutputDir::parse(w),
        None => out.child("_work"),
    }
    .scratch();
    if let Some(dir) = work.local_dir() {
        crate::io::output::prepare_dir(dir)?;
    }
    let plan = Plan::build(cfg, layout.tasks, layout.bucket_ranges)?;
    let resumed = install_plan(&work, &plan, cfg.quiet)?;
    let mut walls = Vec::new();
    for stage in STAGES.iter().copied().filter(|&s| s != Stage::Merge) {
        let start = Instant::now();
        let n = plan.tasks(stage);
        let mut pending = Vec::with_capacity(n);
        for t in 0..n {
            if !resumed || read_marker(&work, stage, t)?.is_none() {
                pending.push(t);
            }
        }
        if resumed && !cfg.quiet {
            eprintln!(
                "corpus-dedup: resuming {}: {} of {n} tasks already complete",
                stage.name(),
                n - pending.len()
            );
        }
        let pb = bar(cfg.quiet, pending.len() as u64, stage.name());
        pending.par_iter().with_max_len(1).try_for_each(|&t| {
            run_task(&work, &plan, stage, t, None)?;
            pb.inc(1);
            Ok::<(), Error>(())
        })?;
        pb.finish_and_clear();
        walls.push((stage, start.elapsed().as_secs_f64()));
    }
    // Nothing reads the document store after the manifest stage, and it is most of the work
    // directory (~3 KB per document): it is deleted while the manifest is merged, instead of
    // after (freeing its page cache takes ~0.1 s per 100k documents). A rerun after a crash in
    // the merge resumes at the merge, which does not need it.
    let report = std::thread::scope(|scope| {
        let store = (!keep_work).then(|| scope.spawn(|| work.child("store").remove_all()));
        let report = run_task(&work, &plan, Stage::Merge, 0, Some(&walls));
        let deleted = store.map_or(Ok(()), |h| {
            h.join()
                .unwrap_or_else(|_| Err(Error::Task("deleting the document store panicked".into())))
        });
        let report = report?;
        deleted.map(|()| report)
    })?;
    if !keep_work {
        work.remove_all()?;
    }
    Ok(report.stats)
}
