//! Executors: [`run_task`] runs one task of a plan and writes its completion marker (what
//! `corpus-dedup task` runs on a cluster node); [`local`] runs a whole plan in this process
//! (`corpus-dedup run`), as many tasks at a time as there are threads, resumable.

pub(crate) mod estimate;
pub(crate) mod local;

use std::time::Instant;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::io::work::{peak_rss_mib, write_marker, TaskReport};
use crate::plan::{Plan, Stage};
use crate::stages::{
    candidates, cluster, frequencies, index, keys, lines, lookup, manifest, merge, pair_signatures,
    paragraphs, sample, signatures, sources, substrings, sweep, verify,
};

/// Runs task `task` of `stage` and writes its marker (last). `walls` (stage wall times of a
/// one-process run) only matters to the merge task's summary.
pub(crate) fn run_task(
    work: &OutputDir,
    plan: &Plan,
    stage: Stage,
    task: usize,
    walls: merge::StageWalls,
) -> Result<TaskReport> {
    let n = plan.tasks(stage);
    if task >= n {
        return Err(Error::NoSuchTask(format!(
            "stage {} has {n} tasks (0..{n}) in this plan; task {task} does not exist",
            stage.name()
        )));
    }
    let start = Instant::now();
    let stats = match stage {
        Stage::Lines => to_json(lines::run(plan, task)?),
        Stage::Sample => to_json(sample::run(work, plan, task)?),
        Stage::Frequencies => to_json(frequencies::run(work, plan)?),
        Stage::Signatures => to_json(signatures::run(work, plan, task)?),
        Stage::Lookup => to_json(lookup::run(work, plan, task)?),
        Stage::Index => to_json(index::run(work, plan, task)?),
        Stage::Candidates => to_json(candidates::run(work, plan, task)?),
        Stage::PairSignatures => to_json(pair_signatures::run(work, plan, task)?),
        Stage::Verify => to_json(verify::run(work, plan, task)?),
        Stage::Keys => to_json(keys::run(work, plan, task)?),
        Stage::Exact => to_json(verify::exact::run(work, plan, task)?),
        Stage::Sweep => to_json(sweep::run(work, plan, task)?),
        Stage::Cluster => to_json(cluster::run(work, plan)?),
        Stage::Paragraphs => to_json(paragraphs::run(work, plan, task)?),
        Stage::Substrings => to_json(substrings::run(work, plan, task)?),
        Stage::Sources | Stage::Recheck | Stage::Settle => {
            to_json(sources::run(work, plan, stage, task)?)
        }
        Stage::Manifest => to_json(manifest::run(work, plan, task)?),
        Stage::Merge => merge::run(work, plan, walls)?,
    };
    let report = TaskReport {
        stage: stage.name().to_string(),
        task,
        seconds: start.elapsed().as_secs_f64(),
        peak_rss_mib: peak_rss_mib(),
        stats,
    };
    crate::hooks::crash_point(stage.name(), task);
    write_marker(work, &report, stage.name())?;
    Ok(report)
}

fn to_json<T: Serialize>(v: T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}
