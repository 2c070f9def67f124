//! The task model: determinism across thread and task counts, `plan` + `task` by hand (what a
//! cluster driver does), and kill -9 in every stage followed by a rerun.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;

use common::*;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_corpus-dedup"))
}

/// Runs `corpus-dedup args` with the test hook that SIGKILLs the process in task `at`
/// ("stage:task"), and checks that it died there.
fn run_killed_at(args: &[&str], at: &str) {
    let crashed = bin()
        .args(args)
        .env("CORPUS_DEDUP_CRASH", at)
        .output()
        .unwrap();
    assert_eq!(
        crashed.status.signal(),
        Some(9),
        "{at}: {}",
        String::from_utf8_lossy(&crashed.stderr)
    );
}

fn bytes(out: &Path) -> Vec<u8> {
    std::fs::read(out.join("manifest.parquet")).unwrap()
}

#[test]
fn manifest_is_identical_for_any_threads_and_tasks() {
    let dir = temp_dir("tasks-determinism");
    let (glob, docs) = three_shards(&dir);
    let reference = dir.join("ref");
    run_ok(&glob, &reference, &["--threads", "1", "--tasks", "1"]);
    let want = bytes(&reference);
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
                bytes(&out) == want,
                "--threads {threads} --tasks {tasks} differs"
            );
            // The work directory is removed after success.
            assert!(!out.join("_work").exists());
        }
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
        let o = bin()
            .args(["run", "--quiet", "--input", &glob, "--output"])
            .arg(&out)
            .args(["--tasks", "2", "--threads", threads])
            .env("CORPUS_DEDUP_CHUNK_ROWS", "7")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(bytes(&out) == bytes(&reference), "--threads {threads}");
    }
}

#[test]
fn plan_and_tasks_by_hand_give_the_run_manifest() {
    let dir = temp_dir("tasks-by-hand");
    let (glob, _) = three_shards(&dir);
    let reference = dir.join("ref");
    run_ok(&glob, &reference, &[]);
    let work = dir.join("work");
    let out = dir.join("out");
    let (w, o) = (work.to_str().unwrap(), out.to_str().unwrap());

    // A task before the plan exists says what to do.
    let e = bin()
        .args([
            "task",
            "signatures",
            "--task",
            "0",
            "--tasks",
            "3",
            "--work",
            w,
        ])
        .output()
        .unwrap();
    assert!(!e.status.success());
    assert!(String::from_utf8_lossy(&e.stderr).contains("corpus-dedup plan"));

    let p = bin()
        .args([
            "plan", "--quiet", "--input", &glob, "--output", o, "--work", w,
        ])
        .args(["--tasks", "3", "--bucket-ranges", "2"])
        .output()
        .unwrap();
    assert!(p.status.success(), "{}", String::from_utf8_lossy(&p.stderr));
    let counts: serde_json::Value = serde_json::from_slice(&p.stdout).unwrap();
    let stages: Vec<String> = counts["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    assert_eq!(stages, STAGES);
    assert_eq!(counts["tasks"]["signatures"], 3);
    assert_eq!(counts["tasks"]["candidates"], 18 * 2);

    // A stage whose inputs are missing fails clearly.
    let e = bin()
        .args(["task", "verify", "--task", "0", "--tasks", "3", "--work", w])
        .output()
        .unwrap();
    assert!(!e.status.success());

    // The driver's task count must match the plan.
    let e = bin()
        .args([
            "task",
            "signatures",
            "--task",
            "0",
            "--tasks",
            "4",
            "--work",
            w,
        ])
        .output()
        .unwrap();
    assert!(!e.status.success());
    assert!(String::from_utf8_lossy(&e.stderr).contains("has 3 signatures tasks"));

    for stage in &stages {
        let n = counts["tasks"][stage].as_u64().unwrap();
        // Tasks of a stage are independent: run them in reverse order.
        for t in (0..n).rev() {
            let r = bin()
                .args(["task", stage, "--task", &t.to_string()])
                .args(["--tasks", &n.to_string(), "--work", w, "--threads", "1"])
                .output()
                .unwrap();
            assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        }
    }
    assert!(bytes(&out) == bytes(&reference));
    // A finished task is not run again.
    let again = bin()
        .args([
            "task",
            "signatures",
            "--task",
            "1",
            "--tasks",
            "3",
            "--work",
            w,
        ])
        .output()
        .unwrap();
    let line: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(line["already_complete"], true);
}

#[test]
fn kill_9_in_any_stage_then_rerun_gives_the_same_manifest() {
    let dir = temp_dir("tasks-crash");
    let (glob, _) = three_shards(&dir);
    let reference = dir.join("ref");
    run_ok(&glob, &reference, &["--tasks", "3"]);
    let want = bytes(&reference);
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
        run_killed_at(&args, &format!("{stage}:{task}"));
        // The killed task wrote its outputs but no marker.
        let marker = out
            .join("_work/done")
            .join(format!("{stage}-t{task:05}.json"));
        assert!(!marker.exists(), "{stage}");
        let rerun = bin().args(args).output().unwrap();
        assert!(
            rerun.status.success(),
            "{stage}: {}",
            String::from_utf8_lossy(&rerun.stderr)
        );
        let err = String::from_utf8_lossy(&rerun.stderr);
        assert!(err.contains("resuming signatures"), "{stage}: {err}");
        assert!(
            bytes(&out) == want,
            "{stage}: manifest differs after resume"
        );
    }

    // Work files of `run` are not synced to disk: after a machine restart (another boot id in
    // the work directory) the rerun starts over instead of trusting them.
    let out = dir.join("rebooted");
    let o = out.to_str().unwrap();
    let args = ["run", "--input", &glob, "--output", o, "--tasks", "3"];
    run_killed_at(&args, "verify:0");
    let boot = out.join("_work/boot_id");
    assert!(boot.exists());
    std::fs::write(&boot, "a-boot-before-the-restart").unwrap();
    // What a machine crash may leave of an unsynced file: a store truncated to nothing.
    std::fs::write(out.join("_work/store/p00000.sig"), b"").unwrap();
    let rerun = bin().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&rerun.stderr);
    assert!(rerun.status.success(), "{err}");
    assert!(err.contains("before the machine restarted"), "{err}");
    assert!(!err.contains("resuming"), "{err}");
    assert!(bytes(&out) == want, "manifest differs after a restart");

    // A rerun with other settings does not reuse the work of the crashed run.
    let out = dir.join("changed");
    let o = out.to_str().unwrap();
    let args = ["run", "--input", &glob, "--output", o, "--tasks", "3"];
    run_killed_at(&args, "verify:0");
    let rerun = bin()
        .args(args)
        .args(["--threshold", "0.9"])
        .output()
        .unwrap();
    assert!(rerun.status.success());
    assert!(String::from_utf8_lossy(&rerun.stderr).contains("different run"));
    let fresh = dir.join("fresh-0.9");
    run_ok(&glob, &fresh, &["--threshold", "0.9"]);
    assert!(bytes(&out) == bytes(&fresh));
}

#[test]
fn a_damaged_work_file_is_reported_not_used() {
    let dir = temp_dir("tasks-damaged");
    let (glob, _) = three_shards(&dir);
    let out = dir.join("out");
    let o = out.to_str().unwrap();
    let args = ["run", "--input", &glob, "--output", o, "--tasks", "2"];
    run_killed_at(&args, "candidates:0");
    // Flip one bit of the first document's signature in a document store (every document's
    // signature and id are read again by the manifest stage).
    let store = out.join("_work/store/p00001.sig");
    let mut b = std::fs::read(&store).unwrap();
    b[25] ^= 0x01;
    std::fs::write(&store, b).unwrap();
    let rerun = bin().args(args).output().unwrap();
    assert!(!rerun.status.success());
    let err = String::from_utf8_lossy(&rerun.stderr);
    assert!(
        err.contains("p00001.sig") && err.contains("checksum"),
        "{err}"
    );
}
