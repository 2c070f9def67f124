//! The local executor behind `corpus-dedup run`.
//!
//! Makes the plan, then runs every task of every stage in this process, as many tasks of a stage
//! at a time as there are threads (each task parallel inside on the rayon pool, see
//! [`run_concurrently`]), with the work files under
//! `OUTPUT/_work` (or `--work`). Resumable: when the work directory already holds the plan of the
//! same work, finished tasks are skipped (and the run says so), so a rerun after a kill continues
//! and gives the same manifest. A plan of different work is discarded. The work directory is
//! removed after success unless `--keep-work`.
//!
//! A local work directory is [`OutputDir::Scratch`]: this one process writes and reads it, so its
//! files are not synced to disk (syncing the ~3 KB per document of the store left the run idle
//! for a tenth of its time, and deleted work files then never reach the disk). A renamed scratch
//! file is complete while the machine stays up; after a restart its contents are not guaranteed,
//! so the work directory records the boot it was written in ([`BOOT_FILE`]) and a rerun in
//! another boot starts over instead of resuming.

use std::time::Instant;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::executor::run_task;
use crate::io::output::{boot_id, OutputDir};
use crate::io::work::{read_marker, PLAN};
use crate::plan::read_plan;
use crate::plan::{Plan, Stage};

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
    /// When the output, work directory or index is in use by another run, wait for it instead
    /// of failing.
    #[arg(long)]
    pub wait: bool,
    /// Start even when the work directory's disk has less free space than the plan's estimate
    /// of the run.
    #[arg(long)]
    pub skip_space_check: bool,
}

/// Input bytes per byte of the work directory above which the space check measures nothing: a
/// run's work directory has stayed under 2.5x its Parquet input (and under 1x its text).
const PLENTY: u64 = 8;

/// Input bytes from which `run` says its estimate before it starts even with space to spare:
/// measuring it (~0.5 s) is then well under 1% of the run.
const SAID_FROM: u64 = 1 << 30;

/// Whether `run` measures the estimate: when a local work directory's disk (`free` bytes) is not
/// plenty for `input` bytes of shards, or when the input is large and a person is told.
fn measures_estimate(free: Option<u64>, input: u64, quiet: bool) -> bool {
    let tight = free.is_some_and(|free| free / PLENTY < input);
    tight || (!quiet && input >= SAID_FROM)
}

/// Says the plan's estimate of the run before it starts (large inputs), and fails when a local
/// work directory's disk has less free space than it ([`crate::executor::estimate`], measured
/// only when the space is not plenty or the input is large).
fn check_space(work: &OutputDir, name: &str, plan: &Plan, quiet: bool) -> Result<()> {
    let free = work.local_dir().and_then(free_bytes);
    let input: u64 = plan.files.iter().map(|f| f.bytes).sum();
    if !measures_estimate(free, input, quiet) {
        return Ok(());
    }
    let estimate = crate::executor::estimate::estimate(plan)?;
    if !quiet {
        eprintln!("corpus-dedup: {}", estimate.summary(free));
    }
    let Some(free) = free.filter(|&free| free < estimate.work_bytes) else {
        return Ok(());
    };
    let bytes = crate::report::numbers::bytes;
    Err(Error::NoSpace {
        dir: name.to_string(),
        what: format!(
            "has {} free, and this run needs about {} there at its largest (the plan's estimate)",
            bytes(free),
            bytes(estimate.work_bytes)
        ),
    })
}

/// Free bytes for an unprivileged writer on the disk holding `dir` (None when unknown); the
/// free-space hook may set it in test builds.
fn free_bytes(dir: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    if let Some(free) = crate::hooks::free_bytes() {
        return Some(free);
    }
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain data; the call fills it from a NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `st` a statvfs for the call to fill.
    let rc = unsafe { libc::statvfs(path.as_ptr(), &mut st) };
    (rc == 0).then(|| st.f_bavail.saturating_mul(st.f_frsize))
}

/// The lock file `run` holds in its output and work directories.
pub(crate) const RUN_LOCK: &str = ".corpus-dedup.lock";

/// The lock of a run's output directory (a file in it).
fn dir_lock(dir: &str) -> Result<crate::io::lock::Lock> {
    crate::io::lock::Lock::acquire(dir, RUN_LOCK, |holder| Error::DirInUse {
        dir: dir.to_string(),
        holder,
    })
}

/// The lock of a `--work` directory apart from the output: a file beside it
/// (`.NAME.corpus-dedup.lock`), since a run may delete the work directory while it holds it.
fn work_lock(work: &str) -> Result<crate::io::lock::Lock> {
    let w = work.trim_end_matches('/');
    let (parent, name) = match w.rsplit_once('/') {
        // A bucket's root has no parent to hold the file: the lock goes inside.
        Some(("s3:/", _)) => return dir_lock(work),
        Some(("", n)) => ("/", n),
        Some((p, n)) => (p, n),
        None => (".", w),
    };
    crate::io::lock::Lock::acquire(parent, &format!(".{name}{RUN_LOCK}"), |holder| {
        Error::DirInUse {
            dir: work.to_string(),
            holder,
        }
    })
}

/// Runs the job; returns the summary (as written to summary.json).
pub(crate) fn run(
    cfg: &Config,
    layout: &TaskOptions,
    work: Option<&str>,
    keep_work: bool,
) -> Result<serde_json::Value> {
    let pool = pool(cfg.threads)?;
    run_tasks(cfg, layout, work, keep_work, &pool)
}

/// A rayon pool of `threads` threads.
fn pool(threads: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Error::Config(format!("cannot start {threads} threads: {e}")))
}

/// Runs `f` in a rayon pool of `threads` threads.
pub(crate) fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    pool(threads)?.install(f)
}

/// Runs `f` for each of `tasks`, at most as many at a time as `pool` has threads: each on a
/// thread of its own that hands the task to the pool, where the task's parallel work runs.
///
/// Why not a parallel iterator over the tasks: a pool thread waiting for a task's parallel work
/// steals other jobs meanwhile, other tasks among them, so any number of a stage's tasks could be
/// open at once, each holding its part's buffers (~175 MiB per signatures task), and memory
/// would grow with the corpus instead of with the thread count.
///
/// After a failure no new task starts; the error of the lowest-numbered failed task is returned.
fn run_concurrently(
    pool: &rayon::ThreadPool,
    tasks: &[usize],
    f: impl Fn(usize) -> Result<()> + Sync,
) -> Result<()> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Mutex, PoisonError};
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let errors = Mutex::new(Vec::new());
    let workers = pool.current_num_threads().min(tasks.len());
    let panicked = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    while !failed.load(Ordering::Relaxed) {
                        let Some(&t) = tasks.get(next.fetch_add(1, Ordering::Relaxed)) else {
                            break;
                        };
                        if let Err(e) = pool.install(|| f(t)) {
                            failed.store(true, Ordering::Relaxed);
                            errors
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .push((t, e));
                        }
                    }
                })
            })
            .collect();
        handles.into_iter().any(|h| h.join().is_err())
    });
    let mut errors = errors.into_inner().unwrap_or_else(PoisonError::into_inner);
    errors.sort_by_key(|&(t, _)| t);
    match errors.into_iter().next() {
        Some((_, e)) => Err(e),
        None if panicked => Err(Error::Panicked(
            "a task panicked (see the message above)".into(),
        )),
        None => Ok(()),
    }
}

/// File of a scratch work directory that holds the [`boot_id`] of the boot it was written in.
pub(crate) const BOOT_FILE: &str = "boot_id";

/// Whether the files of `work` can be trusted now: always for synced and remote directories; for
/// a scratch directory, only in the boot that wrote it.
fn same_boot(work: &OutputDir) -> Result<bool> {
    if !matches!(work, OutputDir::Scratch(_)) {
        return Ok(true);
    }
    let written = work
        .read(BOOT_FILE)?
        .and_then(|b| String::from_utf8(b).ok());
    Ok(written.is_some() && written == boot_id())
}

/// Writes the plan into `work`, or keeps the one there when it describes the same work (and, for
/// a scratch directory, was written in this boot). Returns whether an existing plan was kept
/// (finished tasks will be reused).
pub(crate) fn install_plan(work: &OutputDir, plan: &Plan, quiet: bool) -> Result<bool> {
    if resumable(work, plan)?.is_some() {
        return Ok(true);
    }
    if work.read(PLAN)?.is_some() {
        let same_work = matches!(read_plan(work), Ok(Some(old)) if old.same_work(plan));
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
    work.write_bytes(PLAN, plan.to_json())?;
    Ok(false)
}

/// The plan `work` holds when a run of `plan` resumes it: the same work, written in this boot.
/// An unreadable plan (damaged, or another version's) counts as different work.
fn resumable(work: &OutputDir, plan: &Plan) -> Result<Option<Plan>> {
    match read_plan(work) {
        Ok(Some(old)) if old.same_work(plan) && same_boot(work)? => Ok(Some(old)),
        _ => Ok(None),
    }
}

fn run_tasks(
    cfg: &Config,
    layout: &TaskOptions,
    work: Option<&str>,
    keep_work: bool,
    pool: &rayon::ThreadPool,
) -> Result<serde_json::Value> {
    // The index is this run's from the plan (which reads its head) to the commit. Its lock,
    // settings and batch name are checked, and the plan made (globs, columns, footers), before
    // anything is written: a run that fails there leaves no trace.
    let (wait, quiet) = (layout.wait, cfg.quiet);
    let (_lock, index) = match &cfg.index {
        Some(index) => {
            let lock =
                crate::io::lock::waiting(wait, quiet, || crate::index::Lock::acquire(index))?;
            (Some(lock), crate::index::plan(cfg)?)
        }
        None => (None, None),
    };
    let mut plan = pool.install(|| Plan::build(cfg, layout.tasks, layout.bucket_ranges, index))?;
    // One run per output and work directory at a time.
    let _out_lock = crate::io::lock::waiting(wait, quiet, || dir_lock(&cfg.output))?;
    let out = OutputDir::parse(&cfg.output);
    out.prepare()?;
    let (work_name, work) = match work {
        Some(w) => (w.to_string(), OutputDir::parse(w)),
        None => (out.location("_work"), out.child("_work")),
    };
    let _work_lock = match work_name.trim_end_matches('/') == out.location("_work") {
        true => None,
        false => Some(crate::io::lock::waiting(wait, quiet, || {
            work_lock(&work_name)
        })?),
    };
    let work = work.scratch();
    if let Some(dir) = work.local_dir() {
        crate::io::output::prepare_dir(dir)?;
    }
    plan.settle_work_keys(work.local_dir().is_none());
    // A new run's disk is checked before anything is written to it (a rerun after a refusal is
    // refused again); a run that resumes has its room already.
    let installed = resumable(&work, &plan)?;
    // A resumed run keeps the keys' place its first start chose (its files are in the work).
    if let Some(old) = &installed {
        plan.config.work_keys = old.config.work_keys;
    }
    let resumes = installed.is_some();
    if !resumes && !layout.skip_space_check {
        pool.install(|| check_space(&work, &work_name, &plan, quiet))?;
    }
    let resumed = install_plan(&work, &plan, cfg.quiet)?;
    let mut walls = Vec::new();
    for stage in plan.stages().into_iter().filter(|&s| s != Stage::Merge) {
        let start = Instant::now();
        let n = plan.tasks(stage);
        let mut pending = Vec::with_capacity(n);
        for t in 0..n {
            if !resumed || read_marker(&work, stage.name(), t)?.is_none() {
                pending.push(t);
            }
        }
        stage.start_order(&mut pending);
        if resumed && !cfg.quiet {
            eprintln!(
                "corpus-dedup: resuming {}: {} of {n} tasks already complete",
                stage.name(),
                n - pending.len()
            );
        }
        // Stages with a task per part count documents; the others count tasks.
        let weight = |t: usize| stage.progress(&plan, t).0;
        let unit = stage.progress(&plan, 0).1;
        let total = pending.iter().map(|&t| weight(t)).sum();
        let pb = crate::progress::bar(cfg.quiet, total, stage.name(), unit);
        crate::progress::set_current(Some(pb.clone()));
        let result = run_concurrently(pool, &pending, |t| {
            run_task(&work, &plan, stage, t, None)?;
            if !stage.reports_progress() {
                pb.inc(weight(t));
            }
            Ok(())
        });
        crate::progress::set_current(None);
        pb.finish_and_clear();
        result?;
        if stage == Stage::Lines {
            plan.settle_lines_from(&work)?;
        }
        if stage == Stage::Signatures {
            // No later stage reads the input by parts: the JSON Lines readers kept open for
            // the next part are closed. Files the plan left to the tasks are counted now.
            crate::io::jsonl::close_readers();
            plan.settle_from(&work)?;
        }
        walls.push((stage, start.elapsed().as_secs_f64()));
    }
    // Nothing reads the document store after the manifest stage, and it is most of the work
    // directory (~3 KB per document): it is deleted while the manifest is merged, instead of
    // after (freeing its page cache takes a while). A rerun after a crash in the merge resumes
    // at the merge, which does not need it.
    let report = std::thread::scope(|scope| {
        let store = (!keep_work).then(|| scope.spawn(|| work.child("store").remove_all()));
        let report = pool.install(|| run_task(&work, &plan, Stage::Merge, 0, Some(&walls)));
        let deleted = store.map_or(Ok(()), |h| {
            h.join().unwrap_or_else(|_| {
                Err(Error::Panicked(
                    "deleting the document store panicked".into(),
                ))
            })
        });
        let report = report?;
        deleted.map(|()| report)
    })?;
    if !keep_work {
        work.remove_all()?;
    }
    Ok(report.stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_is_measured_when_space_is_tight_or_the_input_large() {
        let (gb, small) = (1 << 30, 100 << 20);
        // Plenty of room for a small input: nothing measured.
        assert!(!measures_estimate(Some(100 * gb), small, false));
        // Less than 8x the input free: measured, quiet or not.
        assert!(measures_estimate(Some(small * 7), small, true));
        // A large input: said before the run, unless quiet; an object-store work directory
        // (free space unknown) too.
        assert!(measures_estimate(Some(1_000 * gb), 2 * gb, false));
        assert!(measures_estimate(None, 2 * gb, false));
        assert!(!measures_estimate(Some(1_000 * gb), 2 * gb, true));
        assert!(!measures_estimate(None, small, false));
    }
}
