//! The commands but `index`: each resolves its settings, runs the library and prints what it did.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context;

use crate::executor::local::TaskOptions;
use crate::io::output::OutputDir;
use crate::plan::Stage;
use crate::visible::{json, visible};
use crate::{executor, Config, Settings};

use super::args::Job;
use super::CommandError;

pub(super) fn resolve(config: Option<PathBuf>, flags: Settings) -> crate::Result<crate::Config> {
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

pub(super) fn run(job: Job, work: Option<String>, keep_work: bool) -> anyhow::Result<()> {
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
pub(super) fn print_json(line: &serde_json::Value) {
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

pub(super) fn plan(job: Job, work: String) -> anyhow::Result<()> {
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
        let mut plan = crate::plan::Plan::build(&cfg, layout.tasks, layout.bucket_ranges, index)?;
        plan.settle_work_keys(dir.local_dir().is_none());
        executor::local::install_plan(&dir, &plan, cfg.quiet)?;
        let estimate = executor::estimate::estimate(&plan)?;
        Ok((plan, estimate))
    })
    .with_context(|| format!("corpus-dedup plan failed (work '{work}')"))?;
    let (plan, estimate) = plan;
    let mut counts = crate::plan::task_counts(&plan);
    counts["estimate"] = serde_json::to_value(&estimate)?;
    println!("{counts}");
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

pub(super) fn apply(
    opts: crate::apply::ApplyOptions,
    threads: Option<usize>,
) -> anyhow::Result<()> {
    let (report, line) = apply_job(&opts, threads)?;
    if opts.dry_run {
        print!("{}", visible(&crate::apply::dry_run_table(&report)));
    }
    print_json(&line);
    Ok(())
}

pub(super) fn report(output: String) -> anyhow::Result<()> {
    let bytes = crate::report::write(&output)
        .with_context(|| format!("corpus-dedup report failed (output '{output}')"))?;
    let line = serde_json::json!({
        "report": crate::results::in_output(&output, crate::report::REPORT),
        "bytes": bytes,
    });
    print_json(&line);
    Ok(())
}

/// `audit OUT`: samples the pairs and writes the page, or with `--score` scores labels.
pub(super) fn audit(
    output: String,
    pairs: usize,
    by_group: bool,
    score: Option<String>,
) -> anyhow::Result<()> {
    let line = match score {
        None => audit_json(&output, pairs, by_group)?,
        Some(file) => {
            let missing = || {
                crate::Error::Config(format!(
                    "labels file '{file}': no such file; pass the file the audit page exported"
                ))
            };
            let labels = crate::results::read_location(&file)
                .and_then(|bytes| bytes.ok_or_else(missing))
                .map_err(CommandError::failed("audit", format!("output '{output}'")))?;
            score_json(&output, &String::from_utf8_lossy(&labels))?
        }
    };
    if std::io::stderr().is_terminal() {
        let said: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        eprint!("{}", visible(&audit_for_a_person(&said, &output)));
    }
    println!("{}", json(&line));
    Ok(())
}

/// What `audit` did, for a person on a terminal (the JSON line follows on stdout).
fn audit_for_a_person(said: &serde_json::Value, output: &str) -> String {
    let n = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
    if let Some(page) = said["page"].as_str() {
        return format!(
            "corpus-dedup: {} pairs to label in {page}: open it in a browser, press y, n or s for each, export the labels, then run corpus-dedup audit {output} --score LABELS.json\n",
            said["pairs"]
        );
    }
    let o = &said["overall"];
    if o.is_null() {
        return "corpus-dedup: no pair is labelled y or n yet\n".to_string();
    }
    let w = &said["wrong_drops"];
    format!(
        "corpus-dedup: precision {:.3} ({:.3}-{:.3}, 95%) from {} labels, over {} drops: about {:.0} wrong drops ({:.0}-{:.0})\n",
        n(&o["precision"]),
        n(&o["low"]),
        n(&o["high"]),
        o["labelled"],
        said["drops"],
        n(&w["estimate"]),
        n(&w["low"]),
        n(&w["high"])
    )
}

/// `audit OUT`: samples the run's pairs and writes the page; what it wrote, as JSON.
pub fn audit_json(output: &str, pairs: usize, by_group: bool) -> Result<String, CommandError> {
    let written = crate::audit::write(output, pairs, by_group)
        .map_err(CommandError::failed("audit", format!("output '{output}'")))?;
    // Serialising plain data into memory does not fail.
    Ok(serde_json::to_string(&written).unwrap_or_default())
}

/// `audit OUT --score`: `labels` (the JSON the audit page exports) scored against the run's
/// audit, as JSON.
pub fn score_json(output: &str, labels: &str) -> Result<String, CommandError> {
    let fail = || CommandError::failed("audit", format!("output '{output}'"));
    let labels = crate::audit::score::parse_labels(labels).map_err(fail())?;
    let (run, bands, of_pair) = crate::audit::recorded(output).map_err(fail())?;
    let s = crate::audit::score::score(&run, &bands, &of_pair, &labels).map_err(fail())?;
    Ok(serde_json::to_string(&s).unwrap_or_default())
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

pub(super) fn explain(output: String, id: String, limit: usize, json: bool) -> anyhow::Result<()> {
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

pub(super) fn task(
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
        let mut plan = crate::plan::read_plan(&dir)?.ok_or_else(|| crate::Error::NoPlan {
            work: work.to_string(),
        })?;
        // A stage after the lines (signatures) sees the documents its tasks counted.
        if stage.after(Stage::Lines) {
            plan.settle_lines_from(&dir)?;
        }
        if stage.after(Stage::Signatures) {
            plan.settle_from(&dir)?;
        }
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

pub(super) fn serve(options: crate::serve::ServeOptions) -> anyhow::Result<()> {
    let what = format!("corpus-dedup serve failed (index '{}')", options.index);
    crate::serve::serve(&options, |addr| {
        // The address on one line of its own, for a script that started it on port 0.
        eprintln!(
            "corpus-dedup: serving index '{}' on http://{addr}",
            visible(&options.index)
        );
    })
    .with_context(|| what)
}
