//! End-to-end tests: the binary on generated corpora with known duplicates.

use crate::common::*;
use polars::prelude::*;

#[test]
fn finds_planted_duplicates_with_high_recall_and_precision() {
    let dir = temp_dir("quality");
    let (glob, docs) = three_shards(&dir);
    let out = dir.join("out");
    run_ok(&glob, &out, &[]);
    let rows = manifest(&out);
    assert_eq!(rows.len(), docs.len(), "one manifest row per input row");
    for (r, d) in rows.iter().zip(&docs) {
        assert_eq!(r.id, d.id, "manifest rows follow input order");
    }
    let texts: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
    let truth = truth_components(&texts, 0.8);
    let dropped: Vec<bool> = rows.iter().map(|r| !r.keep).collect();
    let (recall, precision) = doc_scores(&truth, &dropped);
    let should: usize = {
        let mut c = std::collections::HashMap::new();
        truth
            .iter()
            .for_each(|&t| *c.entry(t).or_insert(0usize) += 1);
        c.values().map(|k| k - 1).sum()
    };
    assert!(
        should > 60,
        "the generator must plant duplicates (found {should})"
    );
    assert!(recall >= 0.95, "recall {recall}");
    assert!(precision >= 0.99, "precision {precision}");

    // Every dropped row points at a kept row of the same cluster with similarity >= threshold.
    let by_id: std::collections::HashMap<&str, &Row> =
        rows.iter().map(|r| (r.id.as_str(), r)).collect();
    for r in rows.iter().filter(|r| !r.keep) {
        let k = by_id[r.duplicate_of.as_deref().unwrap()];
        assert!(k.keep);
        assert_eq!(k.cluster_id, r.cluster_id);
        assert!(r.cluster_id.is_some());
        let s = r.similarity.unwrap();
        assert!((0.0..=1.0).contains(&s));
    }
    for r in rows.iter().filter(|r| r.keep) {
        assert!(r.duplicate_of.is_none() && r.similarity.is_none());
    }
    let s = summary(&out);
    assert_eq!(s["documents_in"], docs.len() as u64);
    assert_eq!(
        s["documents_dropped"],
        dropped.iter().filter(|&&d| d).count() as u64
    );
}

#[test]
fn a_rerun_after_a_crash_replaces_outputs_and_sweeps_temporary_files() {
    let dir = temp_dir("crash");
    let (glob, docs) = three_shards(&dir);
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    // What a run killed while writing leaves: a half-written temporary file and an old manifest.
    std::fs::write(
        out.join("manifest.parquet.tmp-424242"),
        b"PAR1 half written",
    )
    .unwrap();
    std::fs::write(out.join("manifest.parquet"), b"stale").unwrap();
    run_ok(&glob, &out, &[]);
    assert_eq!(manifest(&out).len(), docs.len());
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains(".tmp-")), "{names:?}");
}

#[test]
fn manifest_is_byte_identical_across_threads_and_reruns() {
    let dir = temp_dir("determinism");
    let (glob, _) = three_shards(&dir);
    let mut bytes = Vec::new();
    for (name, threads) in [("t1", "1"), ("t2", "2"), ("t2-again", "2"), ("t4", "4")] {
        let out = dir.join(name);
        run_ok(&glob, &out, &["--threads", threads]);
        bytes.push(std::fs::read(out.join("manifest.parquet")).unwrap());
    }
    assert!(bytes.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn output_matches_schemas() {
    let dir = temp_dir("schemas");
    let (glob, _) = three_shards(&dir);
    let out = dir.join("out");
    run_ok(&glob, &out, &[]);
    let schema = check_columns(&read_df(&out.join("manifest.parquet")), "manifest");
    // Key/value metadata carries the configuration.
    let f = std::fs::File::open(out.join("manifest.parquet")).unwrap();
    let mut reader = ParquetReader::new(f);
    let md = reader.get_metadata().unwrap().clone();
    let kv = md.key_value_metadata().clone().unwrap_or_default();
    let keys: Vec<&str> = kv.iter().map(|k| k.key.as_str()).collect();
    for k in schema["metadata_keys"].as_array().unwrap() {
        assert!(
            keys.contains(&k.as_str().unwrap()),
            "metadata key {k} missing; have {keys:?}"
        );
    }
    let config = kv
        .iter()
        .find(|k| k.key == "corpus_dedup.config")
        .and_then(|k| k.value.clone())
        .unwrap();
    let config: serde_json::Value = serde_json::from_str(&config).unwrap();
    assert_eq!(config["threshold"], 0.8);
    assert_eq!(config["num_perm"], 128);

    let sschema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/summary.json"))
            .unwrap(),
    )
    .unwrap();
    let s = summary(&out);
    check_fields(&s, &sschema["fields"]);
    check_fields(&s["candidates"], &sschema["candidates_fields"]);
    for st in s["stages"].as_array().unwrap() {
        check_fields(st, &sschema["stage_fields"]);
    }
    check_fields(&s["breakdown"], &sschema["breakdown_fields"]);
    for t in s["breakdown"]["by_file"].as_object().unwrap().values() {
        check_fields(t, &sschema["tally_fields"]);
    }
    let in_files: u64 = s["breakdown"]["by_file"]
        .as_object()
        .unwrap()
        .values()
        .map(|t| t["documents"].as_u64().unwrap())
        .sum();
    assert_eq!(in_files, s["documents_in"].as_u64().unwrap());
    for k in sschema["lsh_s_curve_keys"].as_array().unwrap() {
        assert!(s["lsh_s_curve"][k.as_str().unwrap()].is_number());
    }
    assert!(s["lsh_s_curve"]["0.8"].as_f64().unwrap() >= 0.95);
}

#[test]
fn nulls_empties_and_a_huge_document_are_kept_and_counted() {
    let dir = temp_dir("nulls");
    let big: String = (0..1_500_000)
        .map(|i| format!("w{} ", i % 100_003))
        .collect(); // ~10 MB
    assert!(big.len() > 10_000_000);
    let text: Vec<Option<&str>> = vec![
        Some("alpha beta gamma delta epsilon zeta eta"),
        None,
        Some(""),
        Some("  ,,, !"),
        None,
        Some(big.as_str()),
        Some(big.as_str()),
        Some("alpha beta gamma delta epsilon zeta eta"),
    ];
    let id: Vec<&str> = vec!["a", "n1", "e1", "p1", "n2", "big1", "big2", "a2"];
    write_df(
        &dir.join("s.parquet"),
        DataFrame::new(
            8,
            vec![
                Column::new("id".into(), id),
                Column::new("text".into(), text),
            ],
        )
        .unwrap(),
    );
    let out = dir.join("out");
    run_ok(&format!("{}/s.parquet", dir.display()), &out, &[]);
    let rows = manifest(&out);
    assert_eq!(rows.len(), 8);
    let keep: Vec<bool> = rows.iter().map(|r| r.keep).collect();
    assert_eq!(keep, vec![true, true, true, true, true, true, false, false]);
    assert_eq!(rows[6].duplicate_of.as_deref(), Some("big1"));
    assert_eq!(rows[7].duplicate_of.as_deref(), Some("a"));
    let s = summary(&out);
    assert_eq!(s["null_texts"], 2);
    assert_eq!(s["empty_texts"], 2);
    assert_eq!(s["documents_dropped"], 2);
}

#[test]
fn keep_rules_and_missing_ids() {
    let dir = temp_dir("keep");
    let base = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty";
    let longer = format!("{base} twentyone");
    let text = vec![base, longer.as_str(), base];
    let prio = vec![Some(1i64), Some(0), Some(5)];
    write_df(
        &dir.join("k.parquet"),
        DataFrame::new(
            3,
            vec![
                Column::new("text".into(), text),
                Column::new("prio".into(), prio),
            ],
        )
        .unwrap(),
    );
    let glob = format!("{}/k.parquet", dir.display());
    let file = glob.clone();

    let out = dir.join("first");
    run_ok(&glob, &out, &[]);
    let rows = manifest(&out);
    // No id column: ids are file:row.
    assert_eq!(rows[1].id, format!("{file}:1"));
    assert_eq!(
        rows.iter().map(|r| r.keep).collect::<Vec<_>>(),
        vec![true, false, false]
    );
    assert_eq!(rows[2].similarity, Some(1.0));

    let out = dir.join("longest");
    run_ok(&glob, &out, &["--keep", "longest"]);
    assert_eq!(
        manifest(&out).iter().map(|r| r.keep).collect::<Vec<_>>(),
        vec![false, true, false]
    );

    let out = dir.join("prio");
    run_ok(&glob, &out, &["--keep", "prio"]);
    let rows = manifest(&out);
    assert_eq!(
        rows.iter().map(|r| r.keep).collect::<Vec<_>>(),
        vec![false, false, true]
    );
    assert_eq!(
        rows[0].duplicate_of.as_deref(),
        Some(format!("{file}:2").as_str())
    );
    // A cluster is a keeper and its drops; its id the keeper's global index.
    assert_eq!(rows[0].cluster_id, Some(2));
    let out = dir.join("prio-components");
    run_ok(&glob, &out, &["--keep", "prio", "--cluster", "components"]);
    let comp = manifest(&out);
    assert_eq!(
        comp.iter().map(|r| r.keep).collect::<Vec<_>>(),
        vec![false, false, true]
    );
    // A component's id is its first document's index.
    assert_eq!(comp[0].cluster_id, Some(0));
    // Document 2 is a raw copy of document 0: not computed again, its store record names
    // document 0. Document 1's similarity to it is the one to document 0.
    let to_first = manifest(&dir.join("first"))[1].similarity;
    assert!(to_first.is_some_and(|s| s > 0.8 && s < 1.0), "{to_first:?}");
    assert_eq!(rows[1].similarity, to_first);
}

#[test]
fn config_file_sets_options_and_flags_override_it() {
    let dir = temp_dir("config");
    let (glob, _) = three_shards(&dir);
    let cfg = dir.join("job.toml");
    std::fs::write(&cfg, "threshold = 0.9\nnum-perm = 64\nkeep = \"longest\"\n").unwrap();
    let out = dir.join("out");
    run_ok(
        &glob,
        &out,
        &["--config", cfg.to_str().unwrap(), "--threshold", "0.85"],
    );
    let c = &summary(&out)["config"];
    assert_eq!(c["threshold"], 0.85);
    assert_eq!(c["num_perm"], 64);
    assert_eq!(c["keep"], "longest");
    assert!(c["bands"].as_u64().unwrap() * c["rows"].as_u64().unwrap() <= 64);
}

/// `run --help` shows each option's default, and they are what a run without the option uses;
/// a config file still wins over them (`threshold = 0.9` above).
#[test]
fn help_shows_the_defaults_a_run_uses() {
    let help = String::from_utf8(cd(["run", "--help"]).ok().stdout).unwrap();
    // "--flag <VALUE>" then its help paragraph, ending in "[default: X]".
    let mut defaults = Vec::new();
    let mut flag = None;
    for line in help.lines().map(str::trim) {
        if let Some(f) = line.strip_prefix("--") {
            flag = f.split_whitespace().next().map(str::to_string);
        } else if let (Some(f), Some(at)) = (&flag, line.rfind("[default: ")) {
            let value = line[at + 10..].trim_end_matches(']').to_string();
            defaults.push((f.replace('-', "_"), value));
            flag = None;
        }
    }
    let names: Vec<&str> = defaults.iter().map(|(f, _)| f.as_str()).collect();
    for f in [
        "threshold",
        "num_perm",
        "ngram",
        "keep",
        "cluster",
        "tokenizer",
        "window",
    ] {
        assert!(names.contains(&f), "--{f} shows no default: {help}");
    }
    assert!(defaults.len() >= 24, "{defaults:?}");
    let dir = temp_dir("help-defaults");
    let (glob, _) = three_shards(&dir);
    let out = dir.join("out");
    run_ok(&glob, &out, &["--paragraphs", "--substrings"]);
    let c = &summary(&out)["config"];
    for (f, shown) in &defaults {
        // The reference's options are used only with --reference (tests/it/decontam.rs).
        if f.starts_with("reference_") {
            continue;
        }
        // The paragraphs' options are under "paragraphs", the substrings' under "substrings".
        let value = match (f.strip_prefix("paragraph_"), f.strip_prefix("substring_")) {
            (Some(key), _) => &c["paragraphs"][key],
            (_, Some(key)) => &c["substrings"][key],
            _ => &c[f.as_str()],
        };
        let used = match value {
            serde_json::Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        assert_eq!(
            &used, shown,
            "--{f}: help says {shown}, the run used {used}"
        );
    }
}

#[test]
fn the_nightly_job_config_parses_and_runs_with_overrides() {
    let dir = temp_dir("nightly");
    let (glob, docs) = three_shards(&dir);
    let out = dir.join("out");
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/jobs/nightly.toml");
    cd(["run", "--config", cfg, "--input", &glob, "--output"])
        .arg(&out)
        .arg("--index")
        .arg(dir.join("index"))
        .args(["--batch", "2026-11-23"])
        .ok();
    assert_eq!(manifest(&out).len(), docs.len());
    let s = summary(&out);
    assert_eq!(s["config"]["keep"], "first");
    assert_eq!(s["index"]["window"], 7);
    assert_eq!(s["index"]["batches"], serde_json::json!(["2026-11-23"]));
}

#[test]
fn several_globs_and_estimate_mode() {
    let dir = temp_dir("globs");
    let (_, docs) = three_shards(&dir);
    let out = dir.join("out");
    let g1 = format!("{}/a-*.parquet", dir.display());
    let g2 = format!("{}/[bc]-*.parquet", dir.display());
    let o = run_cmd(
        &g1,
        &out,
        &["--input", &g2, "--input", &g1, "--verify", "estimate"],
    )
    .ok();
    // A file matched by two globs is read once.
    assert_eq!(manifest(&out).len(), docs.len());
    let s = summary(&out);
    assert_eq!(s["input_files"], 3);
    // The last stdout line is the machine-readable summary.
    let line: serde_json::Value = serde_json::from_str(
        String::from_utf8_lossy(&o.stdout)
            .trim()
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(line["documents_in"], docs.len() as u64);
}

#[test]
fn simhash_finds_near_duplicates_with_the_same_contract() {
    let dir = temp_dir("simhash");
    let (glob, docs) = three_shards(&dir);
    let out = dir.join("out");
    // The generated corpus is small: every sampled feature is rare, so no document-frequency cut.
    run_ok(
        &glob,
        &out,
        &["--method", "simhash", "--simhash-max-df", "1"],
    );
    let rows = manifest(&out);
    assert_eq!(rows.len(), docs.len());
    let texts: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
    let truth = truth_components(&texts, 0.8);
    let dropped: Vec<bool> = rows.iter().map(|r| !r.keep).collect();
    let (recall, precision) = doc_scores(&truth, &dropped);
    // SimHash at k = 3 is stricter than Jaccard 0.8 (medium edits fall outside): see README.
    assert!(recall >= 0.6, "recall {recall}");
    assert!(precision >= 0.9, "precision {precision}");
    // Whatever it drops derives from the same base document as what it keeps (no unrelated merge).
    let by_id: std::collections::HashMap<&str, &Row> =
        rows.iter().map(|r| (r.id.as_str(), r)).collect();
    let doc_of: std::collections::HashMap<&str, &corpus_dedup::synth::Doc> =
        docs.iter().map(|d| (d.id.as_str(), d)).collect();
    for r in rows.iter().filter(|r| !r.keep) {
        let (a, b) = (
            doc_of[r.id.as_str()],
            doc_of[r.duplicate_of.as_deref().unwrap()],
        );
        assert!(
            a.source == b.source && a.id[..2] == b.id[..2],
            "{} ({:?}) merged with unrelated {}",
            a.id,
            a.kind,
            b.id
        );
    }
    // Exact copies are always found.
    for d in docs
        .iter()
        .filter(|d| d.kind == corpus_dedup::synth::Kind::Exact)
    {
        let base = docs
            .iter()
            .find(|b| {
                b.kind == corpus_dedup::synth::Kind::Base
                    && b.source == d.source
                    && b.id[..2] == d.id[..2]
            })
            .unwrap();
        assert_eq!(
            by_id[d.id.as_str()].cluster_id,
            by_id[base.id.as_str()].cluster_id,
            "{} ~ {}",
            d.id,
            base.id
        );
    }
    for r in rows.iter().filter(|r| !r.keep) {
        // 1 - hamming/64 to the kept document (which may be more than k bits away through a chain).
        let s = r.similarity.unwrap();
        assert!(
            (0.0..=1.0).contains(&s) && (s * 64.0).fract() == 0.0,
            "similarity {s}"
        );
    }
    let s = summary(&out);
    assert_eq!(s["method"], "simhash");
    assert_eq!(s["simhash_tables"], 4);
    assert!(s["lsh_bands"].is_null());
    // Deterministic across thread counts.
    let out1 = dir.join("out1");
    run_ok(
        &glob,
        &out1,
        &[
            "--method",
            "simhash",
            "--simhash-max-df",
            "1",
            "--threads",
            "1",
        ],
    );
    assert_eq!(
        std::fs::read(out.join("manifest.parquet")).unwrap(),
        std::fs::read(out1.join("manifest.parquet")).unwrap()
    );
}

/// On a terminal (a pseudo-terminal made by util-linux `script`), `run` shows progress in
/// documents and ends with a human summary before the JSON line; with `--quiet` neither.
#[test]
fn a_terminal_gets_progress_in_documents_and_a_human_summary() {
    let Some(script) = installed(
        std::path::PathBuf::from("/usr/bin/script"),
        "script (util-linux)",
    ) else {
        return;
    };
    let dir = temp_dir("run-terminal");
    let (glob, _) = three_shards(&dir.join("in"));
    let on_terminal = |quiet: bool| {
        let out = dir.join(if quiet { "quiet" } else { "loud" });
        let cmd = format!(
            "{} run --input '{glob}' --output '{}' --tasks 1 --threads 1 {}",
            env!("CARGO_BIN_EXE_corpus-dedup"),
            out.display(),
            if quiet { "--quiet" } else { "" }
        );
        let o = std::process::Command::new(&script)
            .args(["-qec", &cmd, "/dev/null"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let text = on_terminal(false);
    assert!(
        text.contains("signatures [") && text.contains("/420 docs"),
        "{text}"
    );
    assert!(text.contains("corpus-dedup: 420 documents"), "{text}");
    assert!(
        text.contains("  kept ") && text.contains("report.html"),
        "{text}"
    );
    assert!(text.contains("\"documents_in\":420"), "{text}");
    let quiet = on_terminal(true);
    assert!(
        !quiet.contains("docs (") && !quiet.contains("corpus-dedup: 420"),
        "{quiet}"
    );
    assert!(quiet.contains("\"documents_in\":420"), "{quiet}");
}

/// Two runs on one output: the second fails at once naming the first (its lock), with advice
/// that never destroys the first run's work; `--wait` waits for it instead. A run that fails
/// before any work (an empty glob) leaves nothing behind.
#[test]
fn a_second_run_on_a_busy_output_is_refused_or_waits() {
    let dir = temp_dir("run-busy");
    let (glob, _) = three_shards(&dir.join("in"));
    let out = dir.join("out");
    // The first run sleeps in its verify task (the pause hook) while it holds the lock.
    let first = run_cmd(&glob, &out, &[])
        .env("CORPUS_DEDUP_PAUSE", "verify:0:3")
        .spawn();
    wait_for(
        &out.join(".corpus-dedup.lock"),
        20,
        "the first run did not start",
    );
    let err = run_cmd(&glob, &out, &[]).fails();
    assert!(
        err.contains("is in use by pid") && err.contains("--wait"),
        "{err}"
    );
    assert!(!err.contains("delete it"), "{err}");
    // --wait: finishes after the first, with the same manifest.
    let waited = run_cmd(&glob, &out, &["--wait"]).ok();
    assert!(first.wait_with_output().unwrap().status.success());
    assert!(waited.status.success());
    let m = manifest(&out);
    assert_eq!(m.len(), 420);

    // An empty glob: an error, and no output directory.
    let none = dir.join("none");
    let err = run_cmd(&format!("{}/nothing-*.parquet", dir.display()), &none, &[]).fails();
    assert!(err.contains("matches no file"), "{err}");
    assert!(!none.exists(), "a failed run left {}", none.display());
}

/// SIGTERM or SIGINT in the middle of a run: it stops at once with 143 / 130 and says how to
/// resume; the same command then gives the manifest of an uninterrupted run.
#[test]
fn sigterm_and_sigint_stop_the_run_and_a_rerun_resumes() {
    let dir = temp_dir("run-signals");
    let (glob, _) = three_shards(&dir.join("in"));
    let whole = dir.join("whole");
    run_ok(&glob, &whole, &[]);
    for (signal, code, stage) in [
        (libc::SIGTERM, 143, "verify"),
        (libc::SIGINT, 130, "manifest"),
    ] {
        let out = dir.join(format!("out-{code}"));
        let child = run_cmd(&glob, &out, &["--tasks", "2"])
            .env("CORPUS_DEDUP_PAUSE", format!("{stage}:0:30"))
            .spawn();
        // Wait until the paused task has written its outputs (its marker comes after the pause).
        let part = out.join(format!(
            "_work/{}/p00000.parquet",
            if stage == "verify" {
                "estimated"
            } else {
                "manifest"
            }
        ));
        wait_for(&part, 30, &format!("{stage} did not start"));
        let sent = std::time::Instant::now();
        // SAFETY: kill(2) on a child this test started.
        unsafe {
            libc::kill(child.id() as i32, signal);
        }
        let o = child.wait_with_output().unwrap();
        assert!(sent.elapsed().as_secs() < 5, "took {:?}", sent.elapsed());
        assert_eq!(o.status.code(), Some(code));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("interrupted") && err.contains("rerun the same command to resume"),
            "{err}"
        );
        assert!(!out.join("manifest.parquet").exists());
        run_ok(&glob, &out, &["--tasks", "2"]);
        assert_eq!(manifest_bytes(&out), manifest_bytes(&whole), "after {code}");
    }
}

/// A plan over thousands of shards counts them all from their footers (it once ran a polars
/// query per file inside its own thread pool, whose waits nested until the stack overflowed).
#[test]
fn a_plan_over_thousands_of_shards_counts_every_one() {
    let dir = temp_dir("run-many-shards");
    let shards = 2_000;
    for i in 0..shards {
        let (id, text) = (
            format!("d{i}"),
            format!("document {i} of many small shards"),
        );
        write_shard(
            &dir.join(format!("in/s-{i:05}.parquet")),
            &[&id],
            &[&text],
            Vec::new(),
        );
    }
    let glob = format!("{}/in/*.parquet", dir.display());
    let p = cd(["plan", "--quiet", "--input", &glob, "--output"])
        .arg(dir.join("out"))
        .arg("--work")
        .arg(dir.join("work"))
        .ok();
    let counts: serde_json::Value = serde_json::from_slice(&p.stdout).unwrap();
    assert_eq!(counts["documents"], shards);
}

/// The plan says how large the work directory gets, and `run` refuses to start on a disk with
/// less free space than that, saying what to do, unless told to go on.
#[test]
fn the_plan_estimates_the_work_directory_and_run_refuses_a_disk_too_small() {
    let dir = temp_dir("run-estimate");
    let (glob, _) = three_shards(&dir.join("in"));
    let p = cd(["plan", "--quiet", "--input", &glob, "--output"])
        .arg(dir.join("planned"))
        .arg("--work")
        .arg(dir.join("planned-work"))
        .ok();
    let counts: serde_json::Value = serde_json::from_slice(&p.stdout).unwrap();
    let estimate = &counts["estimate"];
    let work_bytes = estimate["work_bytes"].as_u64().unwrap();
    assert!(estimate["sample_documents"].as_u64().unwrap() > 0);
    for stage in counts["stages"].as_array().unwrap() {
        let s = &estimate["stages"][stage.as_str().unwrap()];
        assert_eq!(
            s["tasks"],
            counts["tasks"][stage.as_str().unwrap()],
            "{stage}"
        );
        assert!(s["written_bytes"].as_u64().is_some(), "{stage}");
    }
    // Against the work directory of the run itself (every work file kept until it succeeds).
    let kept = dir.join("kept");
    run_ok(&glob, &kept, &["--keep-work"]);
    let actual: u64 = walk_bytes(&kept.join("_work"));
    let ratio = work_bytes as f64 / actual as f64;
    assert!(
        (0.75..=1.25).contains(&ratio),
        "{work_bytes} against {actual}"
    );
    // With --index a run keeps what a plain one releases (band rows for the index stage, the
    // store's signatures with remade keys): so does the sample, whose index is its own scratch.
    let index = dir.join("index").display().to_string();
    let indexed = ["--work-keys", "remade", "--index", &index, "--batch", "n1"];
    let p = cd(["plan", "--quiet", "--input", &glob, "--output"])
        .arg(dir.join("planned-ix"))
        .arg("--work")
        .arg(dir.join("planned-ix-work"))
        .args(indexed)
        .ok();
    let counts: serde_json::Value = serde_json::from_slice(&p.stdout).unwrap();
    let work_bytes_ix = counts["estimate"]["work_bytes"].as_u64().unwrap();
    assert!(!dir.join("index/batches").exists());
    let kept_ix = dir.join("kept-ix");
    run_ok(&glob, &kept_ix, &[&["--keep-work"][..], &indexed].concat());
    let actual = walk_bytes(&kept_ix.join("_work"));
    let ratio = work_bytes_ix as f64 / actual as f64;
    assert!(
        (0.75..=1.25).contains(&ratio),
        "{work_bytes_ix} against {actual}"
    );

    // A disk with less free space than that: refused before any task, naming the directory and
    // the ways on; the output holds no manifest.
    let out = dir.join("small-disk");
    let free = (work_bytes / 2).to_string();
    let err = run_cmd(&glob, &out, &[])
        .env("CORPUS_DEDUP_FREE_BYTES", &free)
        .fails();
    assert!(err.contains("_work") && err.contains("free"), "{err}");
    assert!(
        err.contains("--work-keys remade") && err.contains("--skip-space-check"),
        "{err}"
    );
    assert!(!out.join("manifest.parquet").exists());
    assert!(!out.join("_work/done").exists());
    // Told to go on, it runs to the manifest of a run with room.
    run_cmd(&glob, &out, &["--skip-space-check"])
        .env("CORPUS_DEDUP_FREE_BYTES", &free)
        .ok();
    assert!(manifest_bytes(&out) == manifest_bytes(&kept));
    // Room enough: the estimate is said and the run goes on.
    let roomy = dir.join("roomy");
    let err = cd(["run", "--input", &glob, "--output"])
        .arg(&roomy)
        .env("CORPUS_DEDUP_FREE_BYTES", (work_bytes * 2).to_string())
        .stderr();
    assert!(
        err.contains("estimate: the work directory takes up to"),
        "{err}"
    );
}

/// Bytes of the files under `dir`.
fn walk_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| match e.file_type().unwrap().is_dir() {
            true => walk_bytes(&e.path()),
            false => e.metadata().unwrap().len(),
        })
        .sum()
}

/// A full disk (a 2 MB tmpfs, when the test may mount one) ends the run with "no space left on
/// device writing PATH" and no manifest; after space is freed the same command resumes and gives
/// the manifest of a run that had room. A read-only output is named as such.
#[test]
fn a_full_disk_is_named_and_a_rerun_after_freeing_space_resumes() {
    // Two real shards: enough output to fill the 2 MiB disk part way through the run.
    let Some(corpus) = dev_small() else {
        return;
    };
    let dir = temp_dir("run-full-disk");
    let disk = dir.join("disk");
    std::fs::create_dir_all(&disk).unwrap();
    let mount = |opts: &str| {
        std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", opts, "tmpfs"])
            .arg(&disk)
            .status()
            .is_ok_and(|s| s.success())
    };
    if !mount("size=2m") {
        eprintln!("skipped: cannot mount a tmpfs (the test needs root)");
        return;
    }
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(disk.clone());
    let glob = format!("{}/shard-0000[01].parquet", corpus.display());
    let whole = dir.join("whole");
    run_ok(&glob, &whole, &[]);
    let out = disk.join("out");
    // The plan's estimate says it will not fit: refused before anything is written, again on a
    // rerun.
    for _ in 0..2 {
        let err = run_cmd(&glob, &out, &[]).fails();
        assert!(
            err.contains("needs about") && err.contains("--skip-space-check"),
            "{err}"
        );
        assert!(!out.join("_work/plan.json").exists());
    }
    // Started anyway, the disk fills part way through the run.
    let err = run_cmd(&glob, &out, &["--skip-space-check"]).fails();
    assert!(err.contains("no space left on device writing '"), "{err}");
    assert!(err.contains("rerun the same command"), "{err}");
    assert!(!err.contains("input changed"), "{err}");
    assert!(!out.join("manifest.parquet").exists());
    // More room, the same command: it resumes and finishes.
    assert!(mount("remount,size=256m"));
    run_ok(&glob, &out, &["--skip-space-check"]);
    assert_eq!(manifest_bytes(&out), manifest_bytes(&whole));
    // A read-only file system.
    assert!(mount("remount,ro"));
    let err = run_cmd(&glob, &disk.join("out2"), &[]).fails();
    assert!(err.contains("read-only file system at '"), "{err}");
}

#[test]
fn every_flag_of_every_command_is_in_the_readme() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let commands: [&[&str]; 10] = [
        &["run"],
        &["plan"],
        &["task"],
        &["apply"],
        &["explain"],
        &["report"],
        &["index", "export"],
        &["index", "status"],
        &["index", "verify"],
        &["index", "remove"],
    ];
    let mut missing = Vec::new();
    for args in commands {
        let help = cd(args.iter().chain(&["--help"])).ok();
        for line in String::from_utf8_lossy(&help.stdout).lines() {
            let Some(flag) = line.trim_start().strip_prefix("--") else {
                continue;
            };
            let flag: String = flag
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            if ["help", "version"].contains(&flag.as_str()) {
                continue;
            }
            if !readme.contains(&format!("--{flag}")) {
                missing.push(format!("{} --{flag}", args.join(" ")));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "flags the README does not mention: {missing:?}"
    );
}
