//! The task model: determinism across thread and task counts, `plan` + `task` by hand (what a
//! cluster driver does), and kill -9 in every stage followed by a rerun.

use std::path::Path;

use crate::common::*;

#[test]
fn manifest_is_identical_for_any_threads_and_tasks() {
    let dir = temp_dir("tasks-determinism");
    let (glob, docs) = three_shards(&dir);
    let reference = dir.join("ref");
    run_ok(&glob, &reference, &["--threads", "1", "--tasks", "1"]);
    let want = manifest_bytes(&reference);
    assert_eq!(manifest(&reference).len(), docs.len());
    assert!(manifest(&reference).iter().any(|r| !r.keep));
    for threads in ["1", "2", "8"] {
        for (tasks, ranges) in [("1", "1"), ("3", "2"), ("7", "3")] {
            let out = dir.join(format!("t{threads}-n{tasks}"));
            run_ok(
                &glob,
                &out,
                &[
                    "--threads",
                    threads,
                    "--tasks",
                    tasks,
                    "--bucket-ranges",
                    ranges,
                ],
            );
            assert!(
                manifest_bytes(&out) == want,
                "--threads {threads} --tasks {tasks} differs"
            );
            // The work directory is removed after success.
            assert!(!out.join("_work").exists());
        }
    }
}

#[test]
fn a_cluster_task_in_many_passes_and_ranges_gives_the_same_manifest() {
    // No budget: the cluster task finds copies and checks ids in several passes over hash
    // ranges, and reads the edges a part at a time.
    let dir = temp_dir("tasks-cluster-budget");
    let (glob, _) = three_shards(&dir);
    for (i, args) in [&["--tasks", "7"][..], &["--tasks", "7", "--paragraphs"][..]]
        .into_iter()
        .enumerate()
    {
        let reference = dir.join(format!("ref{i}"));
        run_ok(&glob, &reference, args);
        let out = dir.join(format!("budget{i}"));
        run_cmd(&glob, &out, args)
            .env("CORPUS_DEDUP_CLUSTER_BYTES", "0")
            .ok();
        assert!(
            manifest_bytes(&out) == manifest_bytes(&reference),
            "{args:?}"
        );
        assert!(summary(&out)["documents_dropped"].as_u64() > Some(0));
    }
}

#[test]
fn tiny_signature_chunks_give_the_same_manifest() {
    // Chunks of 7 rows: the pipelined reader/computer/store writer crosses ~60 chunk and 3 shard
    // boundaries per run.
    let dir = temp_dir("tasks-chunks");
    let (glob, _) = three_shards(&dir);
    let reference = dir.join("ref");
    run_ok(&glob, &reference, &["--tasks", "2"]);
    for threads in ["1", "2"] {
        let out = dir.join(format!("chunks-t{threads}"));
        run_cmd(&glob, &out, &["--tasks", "2", "--threads", threads])
            .env("CORPUS_DEDUP_CHUNK_ROWS", "7")
            .ok();
        assert!(
            manifest_bytes(&out) == manifest_bytes(&reference),
            "--threads {threads}"
        );
    }
}

/// Plans with `method` flags and runs every task of every stage by hand, as a cluster driver
/// would (tasks of a stage in reverse order: they are independent); returns the stage list.
pub(crate) fn by_hand(glob: &str, work: &Path, out: &Path, method: &[&str]) -> Vec<String> {
    let p = cd(["plan", "--quiet", "--input", glob, "--output"])
        .arg(out)
        .arg("--work")
        .arg(work)
        .args(["--tasks", "3", "--bucket-ranges", "2"])
        .args(method)
        .ok();
    let counts: serde_json::Value = serde_json::from_slice(&p.stdout).unwrap();
    let stages: Vec<String> = counts["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    assert_eq!(counts["tasks"]["signatures"], 3);
    every_task(&counts, |stage, t, n| {
        task_cmd(stage, t, n)
            .arg("--work")
            .arg(work)
            .args(["--threads", "1"])
            .ok();
    });
    stages
}

/// Runs `run(stage, task, tasks)` for every task of every stage a `plan` printed (`counts`),
/// stage by stage, the tasks of a stage in reverse order (they are independent).
pub(crate) fn every_task(counts: &serde_json::Value, mut run: impl FnMut(&str, u64, u64)) {
    for stage in counts["stages"].as_array().unwrap() {
        let stage = stage.as_str().unwrap();
        let n = counts["tasks"][stage].as_u64().unwrap();
        for t in (0..n).rev() {
            run(stage, t, n);
        }
    }
}

/// `corpus-dedup task STAGE --task T --tasks N`.
pub(crate) fn task_cmd(stage: &str, t: u64, n: u64) -> Cmd {
    cd([
        "task",
        stage,
        "--task",
        &t.to_string(),
        "--tasks",
        &n.to_string(),
    ])
}

#[test]
fn plan_and_tasks_by_hand_give_the_run_manifest() {
    let dir = temp_dir("tasks-by-hand");
    let (glob, _) = three_shards(&dir);
    let reference = dir.join("ref");
    run_ok(&glob, &reference, &[]);
    let (work, out) = (dir.join("work"), dir.join("out"));
    let task = |stage: &str, t: &str, n: &str| {
        cd(["task", stage, "--task", t, "--tasks", n])
            .arg("--work")
            .arg(&work)
    };

    // A task before the plan exists says what to do.
    assert!(task("signatures", "0", "3")
        .fails()
        .contains("corpus-dedup plan"));
    cd(["plan", "--quiet", "--input", &glob, "--output"])
        .arg(&out)
        .arg("--work")
        .arg(&work)
        .args(["--tasks", "3", "--bucket-ranges", "2"])
        .ok();
    // A stage whose inputs are missing fails, naming the missing file.
    assert!(task("verify", "0", "3")
        .fails()
        .contains("candidates/t00000.bin"));
    // The driver's task count must match the plan.
    assert!(task("signatures", "0", "4")
        .fails()
        .contains("has 3 signatures tasks"));

    let stages = by_hand(&glob, &work, &out, &[]);
    assert_eq!(stages, STAGES);
    assert!(manifest_bytes(&out) == manifest_bytes(&reference));
    // A finished task is not run again.
    let again = task("signatures", "1", "3").ok();
    let line: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(line["already_complete"], true);
}

#[test]
fn remade_keys_give_the_same_manifests_in_a_smaller_work_directory() {
    // `--work-keys remade`: the keys stage makes the keys the exact checks need from the shards
    // again, and under MinHash the pair-signatures stage the signatures of the documents pairs
    // name (the store keeps none). Every method and rule, local and by hand, and kill -9 in the
    // new stages.
    let dir = temp_dir("tasks-remade-keys");
    let (glob, docs) = three_shards(&dir);
    let remade = ["--work-keys", "remade"];
    let families: [&[&str]; 5] = [
        &[],
        &["--cluster", "components"],
        &["--method", "simhash", "--simhash-min-features", "400"],
        &["--verify", "exact"],
        &["--max-bucket-pairs", "2"],
    ];
    for (f, family) in families.iter().enumerate() {
        let reference = dir.join(format!("ref-{f}"));
        run_ok(&glob, &reference, family);
        let want = manifest_bytes(&reference);
        let out = dir.join(format!("remade-{f}"));
        let mut args: Vec<&str> = family.to_vec();
        args.extend(remade);
        args.extend(["--tasks", "3", "--keep-work"]);
        run_ok(&glob, &out, &args);
        assert!(manifest_bytes(&out) == want, "{family:?}");
        // Keys of the checked documents only, none of the others.
        let listed: u64 = (0..3)
            .map(|p| {
                let marker = out.join(format!("_work/done/keys-t{p:05}.json"));
                let marker: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(marker).unwrap()).unwrap();
                marker["stats"]["documents"].as_u64().unwrap()
            })
            .sum();
        assert!(
            listed > 0 && listed < docs.len() as u64 / 2,
            "{family:?}: {listed}"
        );
        // Under the keeper rule the manifest stage released them (a similarity that needs keys
        // makes them from the shards again); `components` keeps them for its similarities.
        let kept = out.join("_work/keys/p00000.index").exists();
        assert_eq!(kept, family.contains(&"components"), "{family:?}");
        // MinHash: 40-byte store records without signatures; the signatures of some documents
        // in the pair signature files. SimHash keeps its fingerprints in the store.
        let minhash = !family.contains(&"simhash");
        let (records, signed) = stored_records_and_pair_signatures(&out.join("_work"));
        // The band rows went once the candidates were found.
        let bands = std::fs::read_dir(out.join("_work/bands")).unwrap();
        let left: Vec<_> = bands
            .flat_map(|b| std::fs::read_dir(b.unwrap().path()).unwrap())
            .collect();
        assert!(left.is_empty(), "{family:?}: {left:?}");
        let record = if minhash { 40 } else { 52 };
        assert_eq!(records, docs.len() as u64 * record, "{family:?}");
        assert_eq!(
            signed > 0 && signed < docs.len() as u64,
            minhash,
            "{family:?}: {signed}"
        );
        let by_hand_out = dir.join(format!("hand-{f}"));
        let mut hand: Vec<&str> = family.to_vec();
        hand.extend(remade);
        let stages = by_hand(&glob, &dir.join(format!("work-{f}")), &by_hand_out, &hand);
        assert!(stages.iter().any(|s| s == "keys"), "{stages:?}");
        let pair_signatures = stages.iter().any(|s| s == "pair-signatures");
        assert_eq!(pair_signatures, minhash, "{stages:?}");
        assert!(manifest_bytes(&by_hand_out) == want, "{family:?} by hand");
    }
    let want = manifest_bytes(&dir.join("ref-0"));
    for at in ["pair-signatures:1", "keys:1", "exact:2"] {
        let out = dir.join(format!("crash-{}", at.replace(':', "-")));
        let args = ["--tasks", "3", "--work-keys", "remade"];
        run_cmd(&glob, &out, &args).killed_at(at);
        run_ok(&glob, &out, &args);
        assert!(manifest_bytes(&out) == want, "{at}");
    }
}

/// The bytes of a work directory's store records (after each file's 24-byte header), and the
/// documents its pair signature files hold.
fn stored_records_and_pair_signatures(work: &Path) -> (u64, u64) {
    let sum = |dir: &str, each: &dyn Fn(Vec<u8>) -> u64| -> u64 {
        let files = std::fs::read_dir(work.join(dir)).map(|d| d.flatten().collect::<Vec<_>>());
        (files.unwrap_or_default().into_iter())
            .filter(|e| {
                e.path()
                    .extension()
                    .is_some_and(|x| x == "sig" || x == "bin")
            })
            .map(|e| each(std::fs::read(e.path()).unwrap()))
            .sum()
    };
    let records = sum("store", &|b| b.len() as u64 - 24);
    let signed = sum("pair-sigs", &|b| {
        u64::from_le_bytes(b[16..24].try_into().unwrap())
    });
    (records, signed)
}

#[test]
fn simhash_runs_as_tasks_by_hand_and_resumes() {
    let dir = temp_dir("tasks-simhash");
    let (glob, _) = three_shards(&dir);
    // A document-frequency cut that drops something on this small corpus, so the sample and
    // frequencies stages matter.
    let method = ["--method", "simhash", "--simhash-max-df", "0.2"];
    let reference = dir.join("ref");
    run_ok(&glob, &reference, &method);
    let want = manifest_bytes(&reference);
    let stages = by_hand(&glob, &dir.join("work"), &dir.join("out"), &method);
    assert_eq!(&stages[..2], ["sample", "frequencies"]);
    assert_eq!(&stages[2..], STAGES);
    assert!(manifest_bytes(&dir.join("out")) == want);
    // Any thread and task count, and kill -9 then a rerun, give the same manifest.
    for (threads, tasks) in [("1", "1"), ("2", "3")] {
        let out = dir.join(format!("t{threads}-n{tasks}"));
        let mut args = vec!["--threads", threads, "--tasks", tasks];
        args.extend(method);
        run_ok(&glob, &out, &args);
        assert!(
            manifest_bytes(&out) == want,
            "--threads {threads} --tasks {tasks}"
        );
    }
    for at in [
        "sample:1",
        "frequencies:0",
        "signatures:2",
        "verify:0",
        "manifest:1",
    ] {
        let out = dir.join(format!("crash-{}", at.replace(':', "-")));
        run_cmd(&glob, &out, &method)
            .args(["--tasks", "3"])
            .killed_at(at);
        run_cmd(&glob, &out, &method).args(["--tasks", "3"]).ok();
        assert!(
            manifest_bytes(&out) == want,
            "{at}: manifest differs after resume"
        );
    }
    // Without the document-frequency cut the two SimHash-only stages do not run.
    let p = cd(["plan", "--quiet", "--input", &glob, "--output"])
        .arg(dir.join("o2"))
        .arg("--work")
        .arg(dir.join("w2"))
        .args(["--method", "simhash", "--simhash-max-df", "1"])
        .ok();
    let counts: serde_json::Value = serde_json::from_slice(&p.stdout).unwrap();
    assert_eq!(counts["stages"][0], "signatures");
    assert_eq!(counts["tasks"]["candidates"], 4); // 4 block tables x 1 bucket range
}

#[test]
fn kill_9_in_any_stage_then_rerun_gives_the_same_manifest() {
    let dir = temp_dir("tasks-crash");
    let (glob, _) = three_shards(&dir);
    let reference = dir.join("ref");
    run_ok(&glob, &reference, &["--tasks", "3"]);
    let want = manifest_bytes(&reference);
    for (stage, task) in [
        ("signatures", 1),
        ("candidates", 5),
        ("verify", 2),
        ("cluster", 0),
        ("manifest", 0),
        ("merge", 0),
    ] {
        let out = dir.join(format!("crash-{stage}"));
        let o = out.to_str().unwrap();
        let args = ["run", "--input", &glob, "--output", o, "--tasks", "3"];
        cd(args).killed_at(&format!("{stage}:{task}"));
        // The killed task wrote its outputs but no marker.
        let marker = out
            .join("_work/done")
            .join(format!("{stage}-t{task:05}.json"));
        assert!(!marker.exists(), "{stage}");
        let err = cd(args).stderr();
        assert!(err.contains("resuming signatures"), "{stage}: {err}");
        assert!(
            manifest_bytes(&out) == want,
            "{stage}: manifest differs after resume"
        );
    }

    // Work files of `run` are not synced to disk: after a machine restart (another boot id in
    // the work directory) the rerun starts over instead of trusting them.
    let out = dir.join("rebooted");
    let o = out.to_str().unwrap();
    let args = ["run", "--input", &glob, "--output", o, "--tasks", "3"];
    cd(args).killed_at("verify:0");
    let boot = out.join("_work/boot_id");
    assert!(boot.exists());
    std::fs::write(&boot, "a-boot-before-the-restart").unwrap();
    // What a machine crash may leave of an unsynced file: a store truncated to nothing.
    std::fs::write(out.join("_work/store/p00000.sig"), b"").unwrap();
    let err = cd(args).stderr();
    assert!(err.contains("before the machine restarted"), "{err}");
    assert!(!err.contains("resuming"), "{err}");
    assert!(
        manifest_bytes(&out) == want,
        "manifest differs after a restart"
    );

    // A rerun with other settings does not reuse the work of the crashed run.
    let out = dir.join("changed");
    let o = out.to_str().unwrap();
    let args = ["run", "--input", &glob, "--output", o, "--tasks", "3"];
    cd(args).killed_at("verify:0");
    let err = cd(args).args(["--threshold", "0.9"]).stderr();
    assert!(err.contains("different run"), "{err}");
    let fresh = dir.join("fresh-0.9");
    run_ok(&glob, &fresh, &["--threshold", "0.9"]);
    assert!(manifest_bytes(&out) == manifest_bytes(&fresh));
}

#[test]
fn a_damaged_work_file_is_reported_not_used() {
    let dir = temp_dir("tasks-damaged");
    let (glob, _) = three_shards(&dir);
    let out = dir.join("out");
    let o = out.to_str().unwrap();
    let args = ["run", "--input", &glob, "--output", o, "--tasks", "2"];
    cd(args).killed_at("candidates:0");
    // Flip one bit of the first document's id in a document store (every document's id is read
    // again by the manifest stage, checked against the id hash the signatures task recorded).
    let store = out.join("_work/store/p00001.ids");
    let mut b = std::fs::read(&store).unwrap();
    b[0] ^= 0x01;
    std::fs::write(&store, b).unwrap();
    let err = cd(args).fails();
    assert!(
        err.contains("p00001.ids") && err.contains("checksum"),
        "{err}"
    );
}

/// A shard rewritten or removed between the plan and a task that reads it is named, with what to
/// do; `run` then plans again over the shards as they are.
#[test]
fn a_shard_changed_after_the_plan_is_named() {
    let dir = temp_dir("tasks-shard-changed");
    let (glob, _) = three_shards(&dir);
    let (work, out) = (dir.join("work"), dir.join("out"));
    cd(["plan", "--quiet", "--input", &glob, "--output"])
        .arg(&out)
        .arg("--work")
        .arg(&work)
        .args(["--tasks", "3"])
        .ok();
    let task = |t: &str| {
        cd(["task", "signatures", "--task", t, "--tasks", "3"])
            .arg("--work")
            .arg(&work)
    };
    // The mixed shard loses a row; the Chinese one disappears.
    let mixed = dir.join("b-mixed.parquet");
    let df = read_df(&mixed);
    write_df(&mixed, df.slice(1, df.height() - 1));
    let err = task("1").fails();
    assert!(
        err.contains("b-mixed.parquet' changed after the run was planned")
            && err.contains("Rerun the same command"),
        "{err}"
    );
    std::fs::rename(dir.join("c-zh.parquet"), dir.join("c-zh.moved")).unwrap();
    let err = task("2").fails();
    assert!(
        err.contains("c-zh.parquet' changed after the run was planned")
            && err.contains("cannot be read now"),
        "{err}"
    );
}
