//! `run --sweep`: one run counts what each listed threshold would drop, within 1% of separate
//! runs; the manifest is the plain run's, byte for byte; the same on the task path, with remade
//! keys, under either rule; per `--report-group` value; bad lists refused.

use std::path::Path;

use crate::audit::{audit, score};
use crate::common::*;
use crate::tasks::by_hand;

const SWEEP: &str = "0.7,0.75,0.8,0.85,0.9,0.95";

/// The summary's sweep rows as (threshold, dropped).
fn rows(out: &Path) -> Vec<(f64, u64)> {
    let s = summary(out);
    (s["sweep"].as_array().unwrap().iter())
        .map(|r| {
            (
                r["threshold"].as_f64().unwrap(),
                r["dropped"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Runs `glob` with the sweep and at each threshold alone: each row within `share` of its
/// separate run, the manifest the plain run's. Returns the sweep run's output.
fn within(glob: &str, dir: &Path, extra: &[&str], share: f64) -> std::path::PathBuf {
    let out = dir.join("sweep");
    run_ok(glob, &out, &[&["--sweep", SWEEP][..], extra].concat());
    let plain = dir.join("plain");
    run_ok(glob, &plain, extra);
    assert!(
        manifest_bytes(&out) == manifest_bytes(&plain),
        "the sweep changed the manifest"
    );
    let rows = rows(&out);
    assert_eq!(rows.len(), 6);
    for (t, dropped) in rows {
        let alone = dir.join(format!("t{t}"));
        run_ok(
            glob,
            &alone,
            &[&["--threshold", &t.to_string()][..], extra].concat(),
        );
        let want = summary(&alone)["documents_dropped"].as_u64().unwrap();
        let off = (dropped as f64 - want as f64).abs() / want.max(1) as f64;
        assert!(
            off <= share,
            "threshold {t}: the sweep drops {dropped}, a run at it {want}"
        );
    }
    out
}

#[test]
fn a_sweep_counts_what_separate_runs_drop_and_keeps_the_manifest() {
    let dir = temp_dir("sweep-synthetic");
    let (glob, docs) = three_shards(&dir.join("in"));
    let out = within(&glob, &dir, &[], 0.01);
    let s = summary(&out);
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/summary.json"))
            .unwrap(),
    )
    .unwrap();
    let rows = s["sweep"].as_array().unwrap();
    for r in rows {
        check_fields(r, &schema["sweep_row_fields"]);
        assert!(r["text_bytes"].as_u64() <= s["text_bytes"].as_u64());
    }
    // A lower threshold drops at least as much here, and the lowest drops more than the run.
    let dropped: Vec<u64> = rows
        .iter()
        .map(|r| r["dropped"].as_u64().unwrap())
        .collect();
    assert!(dropped.windows(2).all(|w| w[0] >= w[1]), "{dropped:?}");
    assert!(dropped[0] > s["documents_dropped"].as_u64().unwrap());
    assert!(dropped[0] < docs.len() as u64);
    // The recall the layouts give at each threshold, and the report's section.
    assert!(rows.iter().all(|r| r["lsh_recall"].as_f64() >= Some(0.95)));
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(page.contains("What each threshold would drop"));
    // The configuration says what was swept, the manifest's metadata does not.
    assert_eq!(s["config"]["sweep"].as_array().map(Vec::len), Some(6));
}

#[test]
fn a_sweep_on_the_development_corpus_counts_what_separate_runs_drop() {
    let Some(dev) = dev_small() else { return };
    let dir = temp_dir("sweep-dev-small");
    let glob = format!("{}/shard-*.parquet", dev.display());
    within(&glob, &dir, &[], 0.01);
}

#[test]
fn a_sweep_is_the_same_on_the_task_path_with_remade_keys_and_either_rule() {
    let dir = temp_dir("sweep-tasks");
    let (glob, _) = three_shards(&dir.join("in"));
    for (i, rule) in [
        &[][..],
        &["--cluster", "components"][..],
        &["--keep", "longest"][..],
    ]
    .into_iter()
    .enumerate()
    {
        let reference = dir.join(format!("ref{i}"));
        run_ok(&glob, &reference, &[&["--sweep", SWEEP][..], rule].concat());
        let want = rows(&reference);
        let plain = dir.join(format!("plain{i}"));
        run_ok(&glob, &plain, rule);
        let remade = dir.join(format!("remade{i}"));
        let args = [
            &["--sweep", SWEEP, "--work-keys", "remade", "--tasks", "3"][..],
            rule,
        ]
        .concat();
        run_ok(&glob, &remade, &args);
        let out = dir.join(format!("hand{i}"));
        let stages = by_hand(
            &glob,
            &dir.join(format!("work{i}")),
            &out,
            &[&["--sweep", SWEEP][..], rule].concat(),
        );
        assert!(stages.iter().any(|s| s == "sweep"), "{stages:?}");
        for o in [&remade, &out] {
            assert_eq!(rows(o), want, "{rule:?} {}", o.display());
            assert!(manifest_bytes(o) == manifest_bytes(&plain), "{rule:?}");
        }
    }
}

#[test]
fn a_sweep_counts_each_report_group() {
    let dir = temp_dir("sweep-groups");
    let (_, docs) = three_shards(&dir.join("in"));
    let ids: Vec<&str> = docs.iter().map(|d| d.id.as_str()).collect();
    let texts: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
    let source: Vec<&str> = ids.iter().map(|id| &id[..2]).collect();
    let glob = write_shard(
        &dir.join("all.parquet"),
        &ids,
        &texts,
        vec![polars::prelude::Column::new("source".into(), source)],
    );
    let out = dir.join("out");
    run_ok(
        &glob,
        &out,
        &["--sweep", "0.7,0.8", "--report-group", "source"],
    );
    for r in summary(&out)["sweep"].as_array().unwrap() {
        let groups = r["groups"].as_object().unwrap();
        assert_eq!(groups.keys().collect::<Vec<_>>(), ["en", "mx", "zh"]);
        let sum: u64 = groups
            .values()
            .map(|g| g["dropped"].as_u64().unwrap())
            .sum();
        assert_eq!(Some(sum), r["dropped"].as_u64());
        let bytes: u64 = groups
            .values()
            .map(|g| g["text_bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(Some(bytes), r["text_bytes"].as_u64());
    }
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(page.contains("Documents dropped per group"));
    assert!(page.contains("Share of each group&#39;s documents dropped"));
}

#[test]
fn bad_sweeps_are_refused_naming_what_to_pass() {
    let dir = temp_dir("sweep-bad");
    let (glob, _) = three_shards(&dir.join("in"));
    let out = dir.join("out");
    let cases: [(&[&str], &str); 5] = [
        (&["--sweep", "0.7,1.2,0.8"], "--sweep 1.2 is outside (0, 1]"),
        (
            &["--sweep", "0.7,0.9"],
            "does not list the run's threshold 0.8 (the default --threshold)",
        ),
        (
            &["--sweep", "0.7,0.8", "--threshold", "0.75"],
            "threshold 0.75 (--threshold)",
        ),
        (
            &["--sweep", "0.8,0.9", "--method", "simhash"],
            "--sweep is for MinHash",
        ),
        (
            &["--sweep", "0.7,0.8", "--index", "idx", "--batch", "b1"],
            "--sweep with --index is not supported",
        ),
    ];
    for (args, want) in cases {
        let err = run_cmd(&glob, &out, args).fails();
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!out.join("manifest.parquet").exists());
    }
}

#[test]
fn an_audit_samples_what_a_lower_threshold_would_drop_and_scores_it() {
    let dir = temp_dir("sweep-audit");
    let (glob, _) = three_shards(&dir.join("in"));
    let out = dir.join("out");
    run_ok(&glob, &out, &["--sweep", "0.7,0.75,0.8,0.9"]);
    // The documents the run keeps that 0.7 or 0.75 would drop, by manifest row.
    let drops = read_df(&out.join("sweep-drops.parquet"));
    check_columns(&drops, "sweep-drops");
    let rows = manifest(&out);
    let (row, keeper) = (
        drops.column("row").unwrap(),
        drops.column("keeper_row").unwrap(),
    );
    let (row, keeper) = (row.u64().unwrap(), keeper.u64().unwrap());
    assert!(drops.height() > 0);
    for (r, k) in row.into_no_null_iter().zip(keeper.into_no_null_iter()) {
        assert!(rows[r as usize].keep && r != k, "row {r}");
    }
    let thresholds = drops.column("threshold").unwrap().f64().unwrap().clone();
    let at = |t: f64| thresholds.into_no_null_iter().filter(|&x| x == t).count() as u64;
    // Its bands: the run's, then one per lower threshold with its drops.
    let written = audit(&out, &["--pairs", "60"]);
    let bands = written["bands"].as_array().unwrap();
    let swept: Vec<(&str, u64)> = (bands.iter())
        .filter(|b| b.get("sweep").is_some())
        .map(|b| (b["name"].as_str().unwrap(), b["drops"].as_u64().unwrap()))
        .collect();
    let want: Vec<(&str, u64)> = [
        ("would drop at 0.7", at(0.7)),
        ("would drop at 0.75", at(0.75)),
    ]
    .into_iter()
    .filter(|&(_, n)| n > 0)
    .collect();
    assert_eq!(swept, want);
    // Its pairs: a document the run keeps, and its keeper at that threshold, with both texts.
    let pairs = read_df(&out.join("audit-pairs.parquet"));
    let band = str_column(&pairs, "band");
    let (dropped, kept) = (
        str_column(&pairs, "dropped_id"),
        str_column(&pairs, "kept_id"),
    );
    let by_id: std::collections::HashMap<&str, &Row> =
        rows.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut sampled = 0;
    for i in (0..pairs.height()).filter(|&i| band[i].starts_with("would drop at")) {
        sampled += 1;
        assert!(
            by_id[dropped[i]].keep && !kept[i].is_empty(),
            "{}",
            dropped[i]
        );
        assert!(pairs
            .column("kept_text")
            .unwrap()
            .str()
            .unwrap()
            .get(i)
            .is_some());
    }
    assert!(sampled > 0);
    // Labels: every run pair agreed, every sweep pair not: the run's precision is 1, a lower
    // threshold's is the run's drops over all it would drop.
    let pair = str_column(&pairs, "pair");
    let labels: serde_json::Map<String, serde_json::Value> = (0..pairs.height())
        .map(|i| {
            (
                pair[i].to_string(),
                if band[i].starts_with("would") {
                    "n"
                } else {
                    "y"
                }
                .into(),
            )
        })
        .collect();
    let s = score(&out, &serde_json::Value::Object(labels)).unwrap();
    assert_eq!(s["overall"]["precision"], 1.0);
    let run_drops = s["drops"].as_u64().unwrap();
    let lowest = &s["thresholds"][0];
    assert_eq!(lowest["threshold"], 0.7);
    let all = lowest["drops"].as_u64().unwrap();
    assert_eq!(all, run_drops + at(0.7) + at(0.75));
    let p = lowest["precision"]["precision"].as_f64().unwrap();
    assert!((p - run_drops as f64 / all as f64).abs() < 1e-9, "{p}");
}

#[test]
fn a_sweep_compares_giant_buckets_at_each_threshold() {
    // 3,000 near copies of one 327-word page, each with 1-12% of its words replaced: the page's
    // band buckets hold more than 64 of them, so they are giant, and a run compares each member
    // with the bucket's kept documents at its threshold; the sweep does at each of its own.
    // Each layout has its own giant buckets, so the counts agree less closely than elsewhere
    // (without those comparisons the sweep dropped 55% fewer at 0.9).
    let dir = temp_dir("sweep-giant");
    let mut rng = corpus_dedup::synth::Rng::new(7);
    let page: Vec<String> = (0..327)
        .map(|_| format!("w{}", rng.below(50_000)))
        .collect();
    let texts: Vec<String> = (0..3_000)
        .map(|_| {
            let share = 0.01 + 0.11 * rng.unit();
            let words: Vec<String> = (page.iter())
                .map(|w| match rng.unit() < share {
                    true => format!("x{}", rng.below(1_000_000)),
                    false => w.clone(),
                })
                .collect();
            words.join(" ")
        })
        .collect();
    let glob = text_shard(&dir, &texts);
    let out = within(&glob, &dir, &[], 0.03);
    assert!(summary(&out)["giant_buckets"]["buckets"].as_u64() > Some(0));
}
