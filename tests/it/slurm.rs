//! The Slurm recipe (jobs/slurm/submit.sh + stage.sbatch) driven through a stand-in `sbatch`
//! (no Slurm controller runs in CI): the stand-in records each submission's flags and runs the
//! batch script once per array element, the way slurmd would, in dependency order. Checks that
//! every stage is one array of the plan's task count, each depending (afterok) on the previous;
//! that a task killed with SIGKILL on its first attempt is run again by stage.sbatch; and that
//! the manifest is byte-identical to `corpus-dedup run`'s.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::common::*;

/// `sbatch` stand-in: logs its arguments, then runs the script for each array index with the
/// exported CD_* variables; prints a job id (`--parsable` style).
const FAKE_SBATCH: &str = r#"#!/usr/bin/env bash
set -euo pipefail
echo "$*" >> "$SBATCH_LOG"
array= export_vars= script=
for a in "$@"; do
  case $a in
    --array=*) array=${a#--array=} ;;
    --export=*) export_vars=${a#--export=} ;;
    -*) ;;
    *) script=$a ;;
  esac
done
IFS=, read -r -a kv <<< "$export_vars"
for x in "${kv[@]}"; do [ "$x" = ALL ] || export "$x"; done
id=$(( $(wc -l < "$SBATCH_LOG") + 1000 ))
for i in $(seq "${array%-*}" "${array#*-}"); do
  SLURM_ARRAY_TASK_ID=$i SLURM_CPUS_PER_TASK=1 CD_RETRY_DELAY=0 bash "$script" >> "$SBATCH_LOG.out" 2>&1 || { echo "array element $i failed" >&2; exit 1; }
done
echo "$id"
"#;

/// `jobs/slurm/submit.sh --binary .. --work WORK` with a fake `sbatch` (logging to `log`) first
/// on PATH; the caller adds `-- PLAN ARGS`.
fn submit(dir: &Path, work: &Path, log: &Path) -> Command {
    let bin_dir = dir.join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let sbatch = bin_dir.join("sbatch");
    std::fs::write(&sbatch, FAKE_SBATCH).unwrap();
    std::fs::set_permissions(&sbatch, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new("bash");
    c.arg(format!(
        "{}/jobs/slurm/submit.sh",
        env!("CARGO_MANIFEST_DIR")
    ))
    .args(["--binary", env!("CARGO_BIN_EXE_corpus-dedup")])
    .args(["--work", work.to_str().unwrap()])
    .args([
        "--sbatch",
        "cluster=--mem=8G",
        "--sbatch",
        "all=--partition=cpu",
    ])
    .env("PATH", path)
    .env("SBATCH_LOG", log);
    c
}

#[test]
fn slurm_nights_with_an_index_give_the_local_manifests() {
    let dir = temp_dir("slurm-index");
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/synthetic");
    // Night 1: the English shard; night 2: the other two and the English one again.
    for (n, files) in [
        (1, vec!["en-00000"]),
        (2, vec!["mixed-00000", "zh-00000", "en-00000"]),
    ] {
        let night = dir.join(format!("n{n}"));
        std::fs::create_dir_all(&night).unwrap();
        for f in files {
            let to = if n == 2 && f == "en-00000" {
                "z-again"
            } else {
                f
            };
            std::fs::copy(
                samples.join(format!("{f}.parquet")),
                night.join(format!("{to}.parquet")),
            )
            .unwrap();
        }
        let glob = format!("{}/*.parquet", night.display());
        let batch = format!("night-{n}");
        let local = dir.join(format!("local{n}"));
        let index = dir.join("local-index");
        run_ok(
            &glob,
            &local,
            &[
                "--index",
                index.to_str().unwrap(),
                "--batch",
                &batch,
                "--paragraphs",
            ],
        );
        let out = dir.join(format!("out{n}"));
        let index = dir.join("slurm-index");
        let o = submit(
            &dir,
            &dir.join(format!("work{n}")),
            &dir.join(format!("sbatch{n}.log")),
        )
        .args(["--", "--input", &glob, "--output", out.to_str().unwrap()])
        .args([
            "--index",
            index.to_str().unwrap(),
            "--batch",
            &batch,
            "--tasks",
            "2",
            "--paragraphs",
        ])
        .output()
        .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let stages: Vec<String> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["stage"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(stages.contains(&"lookup".to_string()), n == 2, "{stages:?}");
        assert!(stages.contains(&"index".to_string()), "{stages:?}");
        assert!(stages.contains(&"paragraphs".to_string()), "{stages:?}");
        assert!(manifest_bytes(&out) == manifest_bytes(&local), "night {n}");
    }
    assert_eq!(
        summary(&dir.join("out2"))["index"]["dropped_against"]["night-1"],
        240
    );
}

#[test]
fn slurm_recipe_submits_stage_arrays_in_order_and_retries_a_killed_task() {
    let dir = temp_dir("slurm");
    let samples = format!(
        "{}/data-samples/synthetic/*.parquet",
        env!("CARGO_MANIFEST_DIR")
    );
    let reference = dir.join("local");
    run_ok(&samples, &reference, &[]);

    let log = dir.join("sbatch.log");
    let (work, out, once) = (dir.join("work"), dir.join("out"), dir.join("killed-once"));
    let o = submit(&dir, &work, &log)
        .args(["--", "--input", &samples, "--output", out.to_str().unwrap()])
        .args(["--tasks", "3"])
        .env("CORPUS_DEDUP_CRASH", format!("verify:1:{}", once.display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let task_log = std::fs::read_to_string(log.with_extension("log.out")).unwrap_or_default();
    assert!(
        o.status.success(),
        "submit.sh failed:\n{stdout}\n{}\n{task_log}",
        String::from_utf8_lossy(&o.stderr)
    );

    // One submission per stage, arrays of the plan's task counts, each after the previous.
    let subs: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let stages: Vec<&str> = subs.iter().map(|s| s["stage"].as_str().unwrap()).collect();
    assert_eq!(stages, STAGES);
    let calls = std::fs::read_to_string(&log).unwrap();
    let calls: Vec<&str> = calls.lines().collect();
    assert_eq!(calls.len(), STAGES.len());
    for (i, (call, sub)) in calls.iter().zip(&subs).enumerate() {
        let n = sub["tasks"].as_u64().unwrap();
        assert!(call.contains(&format!("--array=0-{}", n - 1)), "{call}");
        assert!(call.contains("--partition=cpu"), "{call}");
        assert_eq!(
            call.contains("--mem=8G"),
            sub["stage"] == "cluster",
            "{call}"
        );
        if i == 0 {
            assert!(!call.contains("--dependency"), "{call}");
        } else {
            let prev = subs[i - 1]["job"].as_str().unwrap();
            assert!(
                call.contains(&format!("--dependency=afterok:{prev}")),
                "{call}"
            );
        }
    }
    assert_eq!(subs[0]["tasks"], 3);

    // The killed verify task was retried by stage.sbatch, and the result is the same.
    assert!(once.exists(), "the crash hook never fired");
    assert!(
        task_log.contains("verify task 1 attempt 1 of 3 failed"),
        "{task_log}"
    );
    assert!(manifest_bytes(&out) == manifest_bytes(&reference));
    let _ = std::fs::remove_dir_all(dir);
}
