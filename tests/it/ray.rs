//! The Ray driver (`python -m corpus_dedup.ray`, a module of the Python package) on a real local
//! Ray cluster: a head and a second node on loopback, the sample job submitted with `ray job
//! submit`, one task killed with SIGKILL on its first attempt (Ray retries it), and the manifest
//! compared byte for byte with `corpus-dedup run`; then a Ray Data job on the same cluster runs
//! the package's signature UDF (`map_batches(corpus_dedup.minhash_batch)`).
//!
//! Ray comes from PyPI: `.ci/run` installs it into a venv and sets CORPUS_DEDUP_RAY to its bin
//! directory; `make test` installs the package into that venv (python/build.sh). Locally the
//! test is skipped when Ray is missing (never in CI).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;

/// The venv bin directory with `ray` (CORPUS_DEDUP_RAY, set by .ci/run).
fn ray_bin() -> Option<PathBuf> {
    let dir = std::env::var_os("CORPUS_DEDUP_RAY")
        .map_or_else(|| PathBuf::from("/tmp/ray-venv/bin"), PathBuf::from);
    installed(dir.join("ray"), "Ray (a venv with ray[default])").map(|_| dir)
}

/// A Ray command with the venv first on PATH (the job's `python` is the venv's too).
fn ray(bin: &Path, args: &[&str]) -> Output {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new(bin.join("ray"))
        .args(args)
        .env("PATH", path)
        .env_remove("RAY_ADDRESS")
        .env("RAY_USAGE_STATS_ENABLED", "0")
        .output()
        .unwrap()
}

/// Stops the cluster when the test ends, whatever happened.
struct Cluster(PathBuf);

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = ray(&self.0, &["stop", "--force"]);
    }
}

fn ok(o: &Output, what: &str) {
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{what} failed:\n{out}\n{err}");
}

#[test]
fn ray_driver_runs_the_sample_job_and_retries_a_killed_task() {
    let Some(bin) = ray_bin() else { return };
    let dir = temp_dir("ray");
    let samples = format!(
        "{}/data-samples/synthetic/*.parquet",
        env!("CARGO_MANIFEST_DIR")
    );
    let reference = dir.join("local");
    run_ok(&samples, &reference, &["--paragraphs"]);

    let (port, dash) = (free_port(), free_port());
    // Unix socket paths must stay short: a temp dir directly under /tmp.
    let tmp = format!("/tmp/cd-ray-{}", std::process::id());
    let _cluster = Cluster(bin.clone());
    let head = ray(
        &bin,
        &[
            "start",
            "--head",
            "--node-ip-address=127.0.0.1",
            &format!("--port={port}"),
            "--dashboard-host=127.0.0.1",
            &format!("--dashboard-port={dash}"),
            "--include-dashboard=true",
            "--num-cpus=1",
            &format!("--temp-dir={tmp}"),
            "--disable-usage-stats",
        ],
    );
    ok(&head, "ray start --head");
    let worker = ray(
        &bin,
        &[
            "start",
            &format!("--address=127.0.0.1:{port}"),
            "--node-ip-address=127.0.0.1",
            "--num-cpus=1",
            "--disable-usage-stats",
        ],
    );
    ok(&worker, "ray start (second node)");

    let work = dir.join("work");
    let out = dir.join("out");
    let once = dir.join("killed-once");
    let env = serde_json::json!({
        "env_vars": {"CORPUS_DEDUP_CRASH": format!("verify:1:{}", once.display())}
    });
    let address = format!("http://127.0.0.1:{dash}");
    let submit = |args: &[&str]| {
        let mut all = vec!["job", "submit", "--address", &address];
        all.extend_from_slice(args);
        ray(&bin, &all)
    };
    let job = submit(&[
        "--runtime-env-json",
        &env.to_string(),
        "--",
        "python",
        "-m",
        "corpus_dedup.ray",
        "--binary",
        env!("CARGO_BIN_EXE_corpus-dedup"),
        "--work",
        work.to_str().unwrap(),
        "--",
        "--input",
        &samples,
        "--output",
        out.to_str().unwrap(),
        "--tasks",
        "3",
        "--paragraphs",
    ]);
    ok(&job, "ray job submit");
    let log = String::from_utf8_lossy(&job.stdout);
    // The verify task was killed once (the marker file says so) and retried by Ray.
    assert!(once.exists(), "the fault was not injected:\n{log}");
    assert!(log.contains("killed by signal 9"), "{log}");
    assert!(log.contains("\"done\": true"), "{log}");
    assert!(
        manifest_bytes(&out) == manifest_bytes(&reference),
        "the Ray manifest differs from the local one"
    );
    assert_eq!(summary(&out)["documents_in"], 600);

    // The package's signature UDF in a Ray Data pipeline on the same cluster: the column it
    // adds equals minhash() of the same texts.
    let job = submit(&["--", "python", "-c", RAY_DATA_CHECK]);
    ok(&job, "ray job submit (Ray Data)");
    let log = String::from_utf8_lossy(&job.stdout);
    assert!(log.contains("ray data: 12 rows match"), "{log}");
}

/// A Ray Data job: `map_batches(corpus_dedup.minhash_batch)` over a small table with nulls and
/// Thai, compared row by row with `corpus_dedup.minhash`.
const RAY_DATA_CHECK: &str = r#"
import pyarrow as pa, ray, corpus_dedup as cd
ray.init()
texts = ["the quick brown fox jumps over the lazy dog again", None, "ภาษาไทยเป็นภาษาราชการ"] * 4
ds = ray.data.from_arrow(pa.table({"id": list(range(len(texts))), "text": texts}))
rows = sorted(ds.map_batches(cd.minhash_batch, batch_format="pyarrow").take_all(), key=lambda r: r["id"])
got = [None if r["minhash"] is None else [int(v) for v in r["minhash"]] for r in rows]
want = [None if w is None else list(w) for w in cd.minhash(texts).to_list()]
assert got == want, (got[:2], want[:2])
print(f"ray data: {len(rows)} rows match")
"#;
