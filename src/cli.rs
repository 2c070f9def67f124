//! The `corpus-dedup` command line: the binary edge (anyhow errors, one paragraph on stderr), shared
//! by the binary, the Python package's console script and its `run()`, `apply()` and `explain()`.
//! The functions the Python package calls return [`CommandError`]: the library's error, with what
//! the command was working on.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::executor::local::TaskOptions;
use crate::io::output::OutputDir;
use crate::plan::Stage;
use crate::visible::{json, visible};
use crate::{executor, Config, Settings};

#[derive(Parser)]
#[command(
    name = "corpus-dedup",
    version,
    about = "Find near-duplicate documents in Parquet text corpora and write a keep/drop manifest"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
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
enum IndexCommand {
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
struct IndexArgs {
    /// The index (local directory or s3:// prefix).
    #[arg(long, value_name = "DIR|URL")]
    index: String,
    /// When a run is using the index, wait for it instead of failing.
    #[arg(long)]
    wait: bool,
}

impl IndexArgs {
    /// Takes the index lock, waiting with `--wait`.
    fn lock(&self) -> impl Fn() -> crate::Result<crate::index::Lock> + '_ {
        || {
            crate::io::lock::waiting(self.wait, false, || {
                crate::index::Lock::acquire(&self.index)
            })
        }
    }
}

/// What `run` and `plan` take alike: the job's settings and how its tasks are laid out.
#[derive(clap::Args)]
struct Job {
    /// TOML file with the same keys as the flags (`num-perm = 128`); flags override it.
    #[arg(long, value_name = "FILE.toml")]
    config: Option<PathBuf>,
    #[command(flatten)]
    settings: Settings,
    #[command(flatten)]
    layout: TaskOptions,
}

/// An error of a command run through [`run_job`], [`apply_job`] or [`explain_json`]: the
/// library's [`crate::Error`], after the command started with what it was working on.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// Before the command started (its settings).
    #[error(transparent)]
    Setup(Box<crate::Error>),
    /// The command failed working on `on` (its output, manifest).
    #[error("corpus-dedup {command} failed ({on})")]
    Failed {
        command: &'static str,
        on: String,
        #[source]
        source: Box<crate::Error>,
    },
}

impl From<crate::Error> for CommandError {
    fn from(e: crate::Error) -> CommandError {
        CommandError::Setup(Box::new(e))
    }
}

impl CommandError {
    fn failed(command: &'static str, on: String) -> impl FnOnce(crate::Error) -> CommandError {
        move |source| CommandError::Failed {
            command,
            on,
            source: Box::new(source),
        }
    }

    /// The library's error.
    pub fn error(&self) -> &crate::Error {
        match self {
            CommandError::Setup(e) | CommandError::Failed { source: e, .. } => e,
        }
    }

    /// The paragraph the command prints after `error: ` ([`error_text`]).
    pub fn text(&self) -> String {
        error_text(self)
    }
}

fn resolve(config: Option<PathBuf>, flags: Settings) -> crate::Result<crate::Config> {
    let file = match &config {
        Some(p) => Settings::from_toml_file(p)?,
        None => Settings::default(),
    };
    let cfg = flags.over(file).resolve()?;
    // polars keeps its own thread pool; size it before its first use so --threads holds for it too.
    std::env::set_var("POLARS_MAX_THREADS", cfg.threads.to_string());
    Ok(cfg)
}

/// Runs the whole job (`corpus-dedup run`, and `run()` of the Python package): returns the
/// configuration and the summary.
pub fn run_job(
    config: Option<PathBuf>,
    flags: Settings,
    layout: &TaskOptions,
    work: Option<&str>,
    keep_work: bool,
) -> Result<(Config, serde_json::Value), CommandError> {
    let cfg = resolve(config, flags)?;
    let summary = executor::local::run(&cfg, layout, work, keep_work).map_err(
        CommandError::failed("run", format!("output '{}'", cfg.output)),
    )?;
    Ok((cfg, summary))
}

fn run(job: Job, work: Option<String>, keep_work: bool) -> anyhow::Result<()> {
    let (cfg, summary) = run_job(
        job.config,
        job.settings,
        &job.layout,
        work.as_deref(),
        keep_work,
    )?;
    if !cfg.quiet && std::io::stderr().is_terminal() {
        eprint!("{}", visible(&human_summary(&summary, &cfg.output)));
    }
    let field = |k: &str| summary.get(k).cloned().unwrap_or_default();
    let seconds = summary["total_seconds"].as_f64().unwrap_or(0.0);
    let line = serde_json::json!({
        "documents_in": field("documents_in"),
        "documents_kept": field("documents_kept"),
        "documents_dropped": field("documents_dropped"),
        "clusters": field("clusters"),
        "seconds": (seconds * 1000.0).round() / 1000.0,
        "peak_rss_mib": summary["peak_rss_mib"].as_f64().unwrap_or(0.0).round(),
        "output": cfg.output,
    });
    print_json(&line);
    Ok(())
}

/// A machine-readable line on stdout, safe on a terminal ([`json`]).
fn print_json(line: &serde_json::Value) {
    println!("{}", json(&line.to_string()));
}

/// The end of a run for a person on a terminal: what was kept and dropped, and where the files
/// are (the JSON line follows on stdout).
fn human_summary(summary: &serde_json::Value, output: &str) -> String {
    use crate::progress::thousands;
    let n = |k: &str| summary[k].as_u64().unwrap_or(0);
    let (docs, dropped) = (n("documents_in"), n("documents_dropped"));
    let exact = n("exact_duplicates").min(dropped);
    let share = 100.0 * dropped as f64 / docs.max(1) as f64;
    let mut s = format!(
        "corpus-dedup: {} documents ({:.1} MB of text) in {:.1} s, peak memory {:.0} MiB\n",
        thousands(docs),
        n("text_bytes") as f64 / 1e6,
        summary["total_seconds"].as_f64().unwrap_or(0.0),
        summary["peak_rss_mib"].as_f64().unwrap_or(0.0),
    );
    s += &format!("  kept     {}\n", thousands(n("documents_kept")));
    s += &format!(
        "  dropped  {} ({share:.1}%): {} exact copies, {} near duplicates; {} clusters\n",
        thousands(dropped),
        thousands(exact),
        thousands(dropped - exact),
        thousands(n("clusters")),
    );
    if let Some(against) = summary["index"]["dropped_against"].as_object() {
        let earlier: u64 = against.values().filter_map(|v| v.as_u64()).sum();
        s += &format!(
            "           {} of them against earlier batches in the index\n",
            thousands(earlier)
        );
    }
    let at = |name: &str| crate::results::in_output(output, name);
    s += &format!("  manifest {}\n", at("manifest.parquet"));
    s += &format!("  summary  {}\n", at("summary.json"));
    s += &format!("  report   {}\n", at("report.html"));
    s
}

fn plan(job: Job, work: String) -> anyhow::Result<()> {
    let Job {
        config,
        settings,
        layout,
    } = job;
    let cfg = resolve(config, settings)?;
    let dir = OutputDir::parse(&work);
    let plan = executor::local::in_pool(cfg.threads, || {
        dir.prepare()?;
        // A run in progress on the index makes a distributed plan fail at start too (the merge
        // task takes the lock again for its commit, which also checks the index is unchanged).
        let index = match &cfg.index {
            Some(index) => {
                let _lock = crate::index::Lock::acquire(index)?;
                crate::index::plan(&cfg)?
            }
            None => None,
        };
        let plan = crate::plan::Plan::build(&cfg, layout.tasks, layout.bucket_ranges, index)?;
        executor::local::install_plan(&dir, &plan, cfg.quiet)?;
        Ok(plan)
    })
    .with_context(|| format!("corpus-dedup plan failed (work '{work}')"))?;
    println!("{}", crate::plan::task_counts(&plan));
    Ok(())
}

/// Writes the deduplicated shards (`corpus-dedup apply`, and `apply()` of the Python package):
/// returns the report and the JSON line the command prints.
pub fn apply_job(
    opts: &crate::apply::ApplyOptions,
    threads: Option<usize>,
) -> Result<(crate::apply::ApplyReport, serde_json::Value), CommandError> {
    let threads =
        threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    std::env::set_var("POLARS_MAX_THREADS", threads.to_string());
    let report = executor::local::in_pool(threads, || crate::apply::apply(opts)).map_err(
        CommandError::failed("apply", format!("manifest '{}'", opts.manifest)),
    )?;
    let line = serde_json::json!({
        "dry_run": report.dry_run,
        "shards": report.shards.len(),
        "shards_written": report.shards_written,
        "shards_already_complete": report.shards_already_complete,
        "rows_in": report.rows_in,
        "rows_kept": report.rows_kept,
        "rows_dropped": report.rows_dropped,
        "rows_written": report.rows_written,
        "bytes_in": report.bytes_in,
        "bytes_out": report.bytes_out,
        "seconds": (report.seconds * 1000.0).round() / 1000.0,
        "output": report.output,
        "dropped": report.dropped,
    });
    Ok((report, line))
}

fn apply(opts: crate::apply::ApplyOptions, threads: Option<usize>) -> anyhow::Result<()> {
    let (report, line) = apply_job(&opts, threads)?;
    if opts.dry_run {
        print!("{}", visible(&crate::apply::dry_run_table(&report)));
    }
    print_json(&line);
    Ok(())
}

fn index_command(command: IndexCommand) -> anyhow::Result<()> {
    use crate::index::{export, inspect};
    let failed = |what: &str, index: &IndexArgs| {
        format!("corpus-dedup index {what} failed (index '{}')", index.index)
    };
    match command {
        IndexCommand::Export { index, output } => {
            let done = export::export(&index.index, &output, index.lock())
                .with_context(|| failed("export", &index))?;
            print_json(&serde_json::to_value(&done)?);
        }
        IndexCommand::Status { index, json } => {
            let s = inspect::status(&index.index, index.lock())
                .with_context(|| failed("status", &index))?;
            match json {
                true => print_json(&serde_json::to_value(&s)?),
                false => print!("{}", visible(&status_text(&s))),
            }
        }
        IndexCommand::Remove { index, batch } => {
            let r = crate::index::remove(&index.index, &batch, index.lock())
                .with_context(|| failed("remove", &index))?;
            if std::io::stdout().is_terminal() {
                println!(
                    "removed batch {}: its {} documents are no longer matched, so a later night's copies of them are kept{}; {} freed",
                    visible(&r.batch),
                    crate::progress::thousands(r.documents_forgotten),
                    match r.batches_expired.is_empty() {
                        true => String::new(),
                        false => format!(" (expired with it: {})", visible(&r.batches_expired.join(", "))),
                    },
                    crate::report::numbers::bytes(r.bytes_freed)
                );
            }
            print_json(&serde_json::to_value(&r)?);
        }
        IndexCommand::Verify { index, json } => {
            let v = inspect::verify(&index.index, index.lock())
                .with_context(|| failed("verify", &index))?;
            match json {
                true => print_json(&serde_json::to_value(&v)?),
                false => {
                    for d in &v.damaged {
                        println!(
                            "damaged: batch {}: {}",
                            visible(&d.batch),
                            visible(&d.error)
                        );
                    }
                    println!(
                        "{} batches, {} files, {} read in {:.1} s: {}",
                        v.batches,
                        v.files,
                        crate::report::numbers::bytes(v.bytes),
                        v.seconds,
                        match v.damaged.len() {
                            0 => "no damage".to_string(),
                            n => format!("{n} damaged file(s); restore the index from a backup, or start a new --index"),
                        }
                    );
                }
            }
            if !v.damaged.is_empty() {
                anyhow::bail!(
                    "index '{}' has {} damaged file(s), listed above: restore the index from a backup, or start a new --index",
                    index.index,
                    v.damaged.len()
                );
            }
        }
    }
    Ok(())
}

/// `index status` for a person: one line per batch, then the totals.
fn status_text(s: &crate::index::inspect::Status) -> String {
    use crate::progress::thousands;
    use crate::report::numbers::bytes;
    let mut out = format!(
        "index {} (format {}, generation {}), newest batch {}\n{:<24} {:>12} {:>12} {:>12} {:>12}\n",
        s.index,
        s.format,
        s.generation,
        s.newest_batch.as_deref().unwrap_or("-"),
        "batch",
        "documents",
        "held",
        "live",
        "on disk"
    );
    for b in &s.batches {
        let name = format!(
            "{}{}",
            b.batch,
            if b.lingering { " (lingering)" } else { "" }
        );
        out += &format!(
            "{name:<24} {:>12} {:>12} {:>12} {:>12}\n",
            thousands(b.documents),
            thousands(b.held),
            thousands(b.live),
            bytes(b.bytes_on_disk)
        );
    }
    out += &format!(
        "{} live documents in {} batches ({} lingering); {} on disk ({:.0} B per live document), {} in memory for a lookup ({:.0} B per live document)\n",
        thousands(s.live_documents),
        s.batches.len(),
        s.lingering,
        bytes(s.bytes_on_disk),
        s.bytes_on_disk_per_live_document,
        bytes(s.bytes_in_memory),
        s.bytes_in_memory_per_live_document
    );
    out
}

fn report(output: String) -> anyhow::Result<()> {
    let bytes = crate::report::write(&output)
        .with_context(|| format!("corpus-dedup report failed (output '{output}')"))?;
    let line = serde_json::json!({
        "report": crate::results::in_output(&output, crate::report::REPORT),
        "bytes": bytes,
    });
    print_json(&line);
    Ok(())
}

/// The cluster of one document, with the command's context on an error.
fn explanation(
    output: &str,
    id: &str,
    limit: usize,
) -> Result<crate::explain::Explanation, CommandError> {
    crate::explain::explain(output, id, limit).map_err(CommandError::failed(
        "explain",
        format!("output '{output}'"),
    ))
}

/// The cluster of one document as the JSON `corpus-dedup explain --json` prints.
pub fn explain_json(output: &str, id: &str, limit: usize) -> Result<String, CommandError> {
    let e = explanation(output, id, limit)?;
    // Serialising plain data into memory does not fail.
    Ok(serde_json::to_string(&e).unwrap_or_default())
}

fn explain(output: String, id: String, limit: usize, json: bool) -> anyhow::Result<()> {
    if json {
        let text = explain_json(&output, &id, limit)?;
        println!("{}", crate::visible::json(&text));
    } else {
        let e = explanation(&output, &id, limit)?;
        print!(
            "{}",
            crate::explain::to_text(&e, std::io::stdout().is_terminal())
        );
    }
    Ok(())
}

fn task(
    stage: Stage,
    index: usize,
    tasks: usize,
    work: String,
    threads: Option<usize>,
) -> anyhow::Result<()> {
    let threads =
        threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    std::env::set_var("POLARS_MAX_THREADS", threads.to_string());
    let dir = OutputDir::parse(&work);
    let what = format!(
        "corpus-dedup task {} {index} failed (work '{work}')",
        stage.name()
    );
    let report = executor::local::in_pool(threads, || {
        let plan = crate::plan::read_plan(&dir)?.ok_or_else(|| crate::Error::NoPlan {
            work: work.to_string(),
        })?;
        let n = plan.tasks(stage);
        if n != tasks {
            return Err(crate::Error::NoSuchTask(format!(
                "the plan in '{work}' has {n} {} tasks, not {tasks}: the driver and the plan disagree",
                stage.name()
            )));
        }
        if let Some(done) = crate::io::work::read_marker(&dir, stage.name(), index)? {
            return Ok((done, true));
        }
        // On a terminal, the task's progress (documents of its part, or the task itself).
        let (weight, unit) = stage.progress(&plan, index);
        let pb = crate::progress::bar(false, weight, stage.name(), unit);
        crate::progress::set_current(Some(pb.clone()));
        let report = executor::run_task(&dir, &plan, stage, index, None);
        crate::progress::set_current(None);
        pb.finish_and_clear();
        report.map(|r| (r, false))
    })
    .context(what)?;
    let (report, skipped) = report;
    let line = serde_json::json!({
        "stage": stage.name(),
        "task": index,
        "already_complete": skipped,
        "seconds": (report.seconds * 1000.0).round() / 1000.0,
        "peak_rss_mib": report.peak_rss_mib.round(),
    });
    print_json(&line);
    Ok(())
}

/// glibc's allocator, tuned for this workload before any thread starts: blocks up to 256 MiB come
/// from the heap and freed memory is kept up to 1 GiB (the defaults map each large buffer fresh
/// and unmap it when freed, so every signature chunk and store read faulted its pages in again,
/// which is slow on virtual machines), and at most two arenas. The price: freed heap is kept
/// for reuse, so peak RSS at millions of documents is higher (docs/PERFORMANCE.md).
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; it is called before any other thread runs.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// SIGINT and SIGTERM (Ctrl-C, a scheduler's time limit): blocked in every thread and taken by
/// one thread that says what happened and ends the process at once with 128 + the signal. That
/// is as safe as a crash, which every command survives: files are written under temporary names
/// and renamed, a task's marker comes last, locks die with the process, and the next run sweeps
/// temporary files and resumes. Must run before any other thread starts (they inherit the mask).
fn handle_signals() {
    #[cfg(unix)]
    // SAFETY: the signal set is initialised by sigemptyset before use; pthread_sigmask and
    // sigwait only read it; _exit ends the process without running anything else.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return;
        }
        std::thread::spawn(move || {
            let mut sig: libc::c_int = 0;
            if libc::sigwait(&set, &mut sig) == 0 {
                let name = if sig == libc::SIGINT {
                    "SIGINT"
                } else {
                    "SIGTERM"
                };
                eprintln!("\ncorpus-dedup: interrupted ({name}); rerun the same command to resume");
                libc::_exit(128 + sig);
            }
        });
    }
}

/// The one paragraph of an error as the command prints it after `error: `: the context chain,
/// outermost first, with ids, paths and values quoted from the input shown, never emitted raw.
pub fn error_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut msg: Vec<String> = Vec::new();
    let mut next = Some(e);
    while let Some(c) = next {
        // The library's errors say their cause in their own message: the sources below would
        // repeat it (a transparent `Setup` shows its error's message and forwards its sources).
        if let Some(CommandError::Setup(inner)) = c.downcast_ref::<CommandError>() {
            let inner: &crate::Error = inner;
            msg.push(inner.to_string());
            break;
        }
        msg.push(c.to_string());
        if c.is::<crate::Error>() || c.is::<Box<crate::Error>>() {
            break;
        }
        next = c.source();
    }
    visible(&msg.join(": ")).into_owned()
}

/// The command line: parses `args` (the program name first), runs the command and returns its
/// exit code (0 or 1; usage errors and `--help` exit from here, signals end the process with
/// 128 + the signal). It blocks SIGINT and SIGTERM for the process and tunes the allocator, so
/// it is for a process that is the command (the binary, the Python package's console script).
pub fn main<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    handle_signals();
    tune_allocator();
    // A panic is a bug, not a user error: one paragraph on stderr, no backtrace dump.
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let msg = visible(&msg);
        eprintln!("error: internal error in corpus-dedup{at}: {msg}. This is a bug; please report it with the command line.");
    }));
    // `run --help` and `plan --help` show each option's default, as the run resolves it.
    let cmd = Cli::command()
        .mut_subcommand("run", crate::config::help_with_defaults)
        .mut_subcommand("plan", crate::config::help_with_defaults);
    let cli = Cli::from_arg_matches(&cmd.get_matches_from(args)).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        Command::Run {
            job,
            work,
            keep_work,
        } => run(job, work, keep_work),
        Command::Plan { job, work } => plan(job, work),
        Command::Apply { options, threads } => apply(options, threads),
        Command::Report { output } => report(output),
        Command::Explain {
            output,
            id,
            limit,
            json,
        } => explain(output, id, limit, json),
        Command::Index { command } => index_command(command),
        Command::Task {
            stage,
            task: index,
            tasks,
            work,
            threads,
        } => task(stage, index, tasks, work, threads),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {}", error_text(e.as_ref()));
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_says_its_cause_once() {
        let e = crate::Error::Output {
            path: "out/m.parquet".into(),
            source: std::io::Error::from_raw_os_error(28).into(),
        };
        let text = error_text(
            anyhow::Error::new(e)
                .context("corpus-dedup run failed")
                .as_ref(),
        );
        assert_eq!(text.matches("os error 28").count(), 1, "{text}");
        assert!(
            text.starts_with("corpus-dedup run failed: no space left on device"),
            "{text}"
        );
        // The same through the library's command errors, before and after the command started.
        let full = || crate::Error::Output {
            path: "out/m.parquet".into(),
            source: std::io::Error::from_raw_os_error(28).into(),
        };
        let failed = CommandError::failed("run", "output 'out'".into())(full());
        let text = failed.text();
        assert_eq!(text.matches("os error 28").count(), 1, "{text}");
        assert!(
            text.starts_with("corpus-dedup run failed (output 'out'): no space"),
            "{text}"
        );
        assert_eq!(failed.error().kind(), crate::error::ErrorKind::Storage);
        let setup = CommandError::from(full());
        assert_eq!(setup.text(), full().to_string());
    }
}
