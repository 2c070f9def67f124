//! Object storage end to end, against a real S3-compatible server on loopback: `s3s-fs`
//! (crates.io), which checks request signatures and keeps objects as plain files under its root.
//! `.ci/run` installs it; locally the tests are skipped when it is missing (never in CI).

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use polars::prelude::Column;

const KEY: &str = "corpus-dedup-test";
const SECRET: &str = "s3cret-for-tests-only";

struct Server {
    child: Child,
    port: u16,
    root: PathBuf,
    bin: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts s3s-fs (CORPUS_DEDUP_S3S, set by .ci/run, or ~/.cargo/bin/s3s-fs) on a free loopback
/// port with a fresh root; None (skip) when it is not installed outside CI.
fn start(name: &str) -> Option<Server> {
    let bin = std::env::var_os("CORPUS_DEDUP_S3S").map_or_else(
        || {
            let home = std::env::var_os("HOME").unwrap_or_default();
            PathBuf::from(home).join(".cargo/bin/s3s-fs")
        },
        PathBuf::from,
    );
    let bin = installed(
        bin,
        "s3s-fs (cargo install s3s-fs@0.14.1 --locked --features binary)",
    )?;
    let root = temp_dir(name).join("s3root");
    std::fs::create_dir_all(&root).unwrap();
    Some(serve(&bin, root, free_port()))
}

/// Runs s3s-fs over `root` on `port` (a restart keeps both).
fn serve(bin: &Path, root: PathBuf, port: u16) -> Server {
    let child = Command::new(bin)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--access-key", KEY, "--secret-key", SECRET])
        .arg(&root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "s3s-fs did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    Server {
        child,
        port,
        root,
        bin: bin.to_path_buf(),
    }
}

/// Puts the sample shards into `bucket/prefix/` (s3s-fs stores an object as a file).
fn upload_samples(server: &Server, bucket: &str, prefix: &str) -> Vec<PathBuf> {
    let dir = server.root.join(bucket).join(prefix);
    std::fs::create_dir_all(&dir).unwrap();
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/synthetic"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
            .collect();
    files.sort();
    for f in &files {
        std::fs::copy(f, dir.join(f.file_name().unwrap())).unwrap();
    }
    files
}

fn run_s3(server: &Server, secret: &str, args: &[&str]) -> Output {
    s3_cmd(server, secret, ["run", "--quiet"])
        .args(args)
        .output()
}

/// `corpus-dedup ARGS...` with the credentials and endpoint of `server`.
fn s3_cmd<'a>(server: &Server, secret: &str, args: impl IntoIterator<Item = &'a str>) -> Cmd {
    cd(args)
        .env("AWS_ACCESS_KEY_ID", KEY)
        .env("AWS_SECRET_ACCESS_KEY", secret)
        .env(
            "AWS_ENDPOINT_URL",
            format!("http://127.0.0.1:{}", server.port),
        )
        .env("AWS_ALLOW_HTTP", "true")
        .env_remove("AWS_REGION")
        .env_remove("AWS_SESSION_TOKEN")
}

/// Runs the shards uploaded under `crawl/night/` into `out` and asserts success.
fn run_night_ok(server: &Server, out: &str) {
    let o = run_s3(
        server,
        SECRET,
        &["--input", "s3://crawl/night/*.parquet", "--output", out],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn failure(o: &Output) -> String {
    assert!(!o.status.success(), "expected failure");
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!err.contains("panicked"), "{err}");
    assert!(!err.contains(SECRET), "the secret leaked: {err}");
    err
}

/// One manifest row as compared: id, file name, row, keep, cluster id, duplicate of,
/// similarity bits.
type Comparable = (
    String,
    String,
    u64,
    bool,
    Option<u64>,
    Option<String>,
    Option<u32>,
);

/// Manifest rows without the `file` column's directory part (local path vs s3 URL).
fn comparable(rows: &[Row]) -> Vec<Comparable> {
    rows.iter()
        .map(|r| {
            let base = r.file.rsplit('/').next().unwrap().to_string();
            (
                r.id.clone(),
                base,
                r.row,
                r.keep,
                r.cluster_id,
                r.duplicate_of.clone(),
                r.similarity.map(f32::to_bits),
            )
        })
        .collect()
}

#[test]
fn s3_input_and_output_give_the_local_manifest() {
    let Some(server) = start("s3-e2e") else {
        return;
    };
    let files = upload_samples(&server, "crawl", "2026-11-22");
    // The samples from S3 with spans removed, to `out` (more flags: `extra`).
    let run_spans = |out: &str, extra: &[&str]| {
        let mut args = vec![
            "--input",
            "s3://crawl/2026-11-22/*.parquet",
            "--output",
            out,
        ];
        args.extend(["--paragraphs", "--substrings"]);
        args.extend(extra);
        let o = run_s3(&server, SECRET, &args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    run_spans("s3://crawl/runs/r1", &[]);
    let remote = server.root.join("crawl/runs/r1");
    assert!(remote.join("summary.json").exists());
    let local = temp_dir("s3-e2e-local");
    run_ok(
        &format!(
            "{}/data-samples/synthetic/*.parquet",
            env!("CARGO_MANIFEST_DIR")
        ),
        &local,
        &["--paragraphs", "--substrings"],
    );
    let (r, l) = (manifest(&remote), manifest(&local));
    assert_eq!(r.len(), l.len());
    assert_eq!(comparable(&r), comparable(&l));
    // Shingle keys made again from the shards on S3, key files on S3: the same manifest.
    run_spans("s3://crawl/runs/r2", &["--work-keys", "remade"]);
    assert_eq!(
        comparable(&manifest(&server.root.join("crawl/runs/r2"))),
        comparable(&r)
    );
    // The paragraph and window rows streamed to S3 and read back by range give the local spans.
    let spans = |dir: &std::path::Path| {
        read_df(&dir.join("manifest.parquet"))
            .column("drop_spans")
            .unwrap()
            .clone()
    };
    let (rs, ls) = (spans(&remote), spans(&local));
    assert!(rs
        .as_materialized_series()
        .equals_missing(ls.as_materialized_series()));
    for rule in ["paragraphs", "substrings"] {
        assert_eq!(summary(&remote)[rule], summary(&local)[rule]);
    }
    assert!(summary(&local)["substrings"]["windows"].as_u64().unwrap() > 0);
    assert!(
        r[0].file.starts_with("s3://crawl/2026-11-22/"),
        "{}",
        r[0].file
    );
    // No temporary, probe or work objects are left behind (s3s-fs keeps emptied directories on
    // its disk; S3 has none, so only files count).
    fn files_under(dir: &std::path::Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                files_under(&p, out);
            } else {
                out.push(p.display().to_string());
            }
        }
    }
    let mut names = Vec::new();
    files_under(&remote, &mut names);
    assert_eq!(names.len(), 3, "{names:?}");

    // Mixed local and s3 inputs: each file once, in sorted order (local paths sort before s3://).
    let out = temp_dir("s3-mixed");
    let first = files[0].to_str().unwrap();
    let o = run_s3(
        &server,
        SECRET,
        &[
            "--input",
            first,
            "--input",
            "s3://crawl/2026-11-22/[mz]*.parquet",
            "--output",
            out.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(manifest(&out).len(), l.len());
}

#[test]
fn apply_reads_and_writes_s3_and_gives_the_local_shards() {
    let Some(server) = start("s3-apply") else {
        return;
    };
    upload_samples(&server, "crawl", "night");
    run_night_ok(&server, "s3://crawl/runs/r1");
    let apply = || {
        s3_cmd(&server, SECRET, ["apply", "--quiet"])
            .args(["--manifest", "s3://crawl/runs/r1/manifest.parquet"])
            .args([
                "--output",
                "s3://crawl/dedup",
                "--dropped",
                "s3://crawl/audit",
            ])
            .ok()
    };
    apply();
    // The same shards as a local apply of a local run.
    let local = temp_dir("s3-apply-local");
    run_ok(
        &format!(
            "{}/data-samples/synthetic/*.parquet",
            env!("CARGO_MANIFEST_DIR")
        ),
        &local.join("out"),
        &[],
    );
    cd(["apply", "--quiet", "--manifest"])
        .arg(local.join("out/manifest.parquet"))
        .arg("--output")
        .arg(local.join("kept"))
        .ok();
    let mut names: Vec<_> = std::fs::read_dir(local.join("kept"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert!(!names.is_empty());
    for n in &names {
        let remote = std::fs::read(server.root.join("crawl/dedup").join(n)).unwrap();
        assert_eq!(remote, std::fs::read(local.join("kept").join(n)).unwrap());
        assert!(server.root.join("crawl/audit").join(n).exists());
    }
    // A rerun finds every shard complete.
    let o = apply();
    let line = String::from_utf8_lossy(&o.stdout);
    assert!(line.contains("\"shards_written\":0"), "{line}");
    // The audit of the run on S3 samples the pairs a local audit of the local run does.
    s3_cmd(
        &server,
        SECRET,
        ["audit", "s3://crawl/runs/r1", "--pairs", "20"],
    )
    .ok();
    cd(["audit"])
        .arg(local.join("out"))
        .args(["--pairs", "20"])
        .ok();
    let pairs = |path: PathBuf| {
        let df = read_df(&path);
        let cols = ["band", "dropped_id", "kept_id", "dropped_text", "kept_text"];
        let cols: Vec<Vec<String>> = (cols.iter())
            .map(|c| str_column(&df, c).iter().map(|s| s.to_string()).collect())
            .collect();
        cols
    };
    let remote = pairs(server.root.join("crawl/runs/r1/audit-pairs.parquet"));
    assert!(!remote[0].is_empty());
    assert_eq!(remote, pairs(local.join("out/audit-pairs.parquet")));
    assert!(server.root.join("crawl/runs/r1/audit.html").exists());
    let first = read_df(&server.root.join("crawl/runs/r1/audit-pairs.parquet"));
    let labels = serde_json::json!({ str_column(&first, "pair")[0]: "y" });
    let file = local.join("labels.json");
    std::fs::write(&file, labels.to_string()).unwrap();
    let o = s3_cmd(&server, SECRET, ["audit", "s3://crawl/runs/r1", "--score"])
        .arg(&file)
        .ok();
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["overall"]["labelled"].as_u64(), Some(1), "{s}");
}

/// The S3 endpoint goes away in the middle of a run (after the first signatures task wrote its
/// work files): the run retries, then fails with a clear message; with the server back, the same
/// command resumes from the work directory on S3 and gives the manifest of an undisturbed run.
#[test]
fn an_s3_outage_fails_clearly_and_the_rerun_resumes() {
    let Some(server) = start("s3-outage") else {
        return;
    };
    upload_samples(&server, "crawl", "night");
    let args = [
        "--input",
        "s3://crawl/night/*.parquet",
        "--output",
        "s3://crawl/out",
        "--work",
        "s3://crawl/work",
        "--tasks",
        "3",
    ];
    run_night_ok(&server, "s3://crawl/ref");
    let running = s3_cmd(&server, SECRET, ["run", "--quiet"])
        .args(args)
        .env("CORPUS_DEDUP_PAUSE", "signatures:0:2")
        .spawn();
    // The first task's store is on the server: stop the server while the task pauses.
    let store = server.root.join("crawl/work/store/p00000.sig");
    wait_for(&store, 30, "the run did not reach signatures");
    let (bin, root, port) = (server.bin.clone(), server.root.clone(), server.port);
    drop(server);
    let o = running.wait_with_output().unwrap();
    let err = failure(&o);
    assert!(
        err.contains("s3://crawl/") && err.contains("Hint:"),
        "{err}"
    );
    // The server is back: the same command finishes from the work directory on S3.
    let server = serve(&bin, root, port);
    let o = run_s3(&server, SECRET, &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (a, b) = (
        manifest(&server.root.join("crawl/ref")),
        manifest(&server.root.join("crawl/out")),
    );
    assert_eq!(comparable(&a), comparable(&b));
}

#[test]
fn s3_errors_are_clear() {
    let Some(server) = start("s3-errors") else {
        return;
    };
    upload_samples(&server, "crawl", "day");
    let out = temp_dir("s3-errors-out");
    let out = out.to_str().unwrap();

    let err = failure(&run_s3(
        &server,
        "not-the-secret",
        &["--input", "s3://crawl/day/*.parquet", "--output", out],
    ));
    assert!(
        err.contains("s3://crawl/day/*.parquet") && err.contains("access denied"),
        "{err}"
    );

    let err = failure(&run_s3(
        &server,
        SECRET,
        &[
            "--input",
            "s3://no-such-bucket/day/*.parquet",
            "--output",
            out,
        ],
    ));
    assert!(
        err.contains("no-such-bucket") && err.contains("bucket does not exist"),
        "{err}"
    );

    let err = failure(&run_s3(
        &server,
        SECRET,
        &["--input", "s3://crawl/empty/*.parquet", "--output", out],
    ));
    assert!(err.contains("matches no file"), "{err}");

    let err = failure(&run_s3(
        &server,
        "not-the-secret",
        &[
            "--input",
            "s3://crawl/day/*.parquet",
            "--output",
            "s3://crawl/runs/x",
        ],
    ));
    assert!(err.contains("access denied"), "{err}");

    // The server goes away: the listing is retried with backoff, then fails with a clear message.
    let port = server.port;
    drop(server);
    let fake = Server {
        child: Command::new("true").spawn().unwrap(),
        port,
        root: PathBuf::new(),
        bin: PathBuf::new(),
    };
    let err = failure(&run_s3(
        &fake,
        SECRET,
        &["--input", "s3://crawl/day/*.parquet", "--output", out],
    ));
    assert!(
        err.contains("unreachable") && err.contains("retries"),
        "{err}"
    );
}

/// The plan reads an object's footer from its last 64 KiB when it fits (a small object whole) and
/// with a second request when it does not (thousands of columns); an empty object is no Parquet.
#[test]
fn s3_footers_of_any_size_are_read() {
    let Some(server) = start("s3-footers") else {
        return;
    };
    let (id, text) = (["a", "b", "c"], ["one text", "another text", "a third"]);
    let wide: Vec<Column> = (0..3_000)
        .map(|c| Column::new(format!("c{c}").into(), [c as i64, 1, 2]))
        .collect();
    let put = |prefix: &str, extra: Vec<Column>| {
        let path = server.root.join("crawl").join(prefix).join("s.parquet");
        write_shard(&path, &id, &text, extra);
        std::fs::metadata(&path).unwrap().len()
    };
    let footer_len = |path: PathBuf| {
        let bytes = std::fs::read(path).unwrap();
        let n = bytes.len();
        u32::from_le_bytes(bytes[n - 8..n - 4].try_into().unwrap())
    };
    assert!(put("small", Vec::new()) < 64 << 10);
    put("wide", wide);
    assert!(footer_len(server.root.join("crawl/wide/s.parquet")) > 64 << 10);
    let out = temp_dir("s3-footers-out");
    for prefix in ["small", "wide"] {
        let input = format!("s3://crawl/{prefix}/*.parquet");
        let o = s3_cmd(&server, SECRET, ["plan", "--quiet", "--input", &input])
            .arg("--output")
            .arg(out.join(prefix))
            .arg("--work")
            .arg(out.join(format!("{prefix}-work")))
            .output();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let counts: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(counts["documents"], 3, "{prefix}");
    }
    let empty = server.root.join("crawl/empty/s.parquet");
    std::fs::create_dir_all(empty.parent().unwrap()).unwrap();
    std::fs::write(&empty, b"").unwrap();
    let err = failure(&run_s3(
        &server,
        SECRET,
        &[
            "--input",
            "s3://crawl/empty/*.parquet",
            "--output",
            out.join("e").to_str().unwrap(),
        ],
    ));
    assert!(err.contains("not a Parquet file"), "{err}");
}

/// A work directory on S3 whose files exceed one upload part (8 MiB): the document store's key
/// file goes up as a multipart upload, is read back by ranged requests, and the manifest matches
/// a local run's.
#[test]
fn s3_work_files_larger_than_a_part_are_streamed() {
    let Some(server) = start("s3-big") else {
        return;
    };
    let docs = corpus_dedup::synth::generate(6000, corpus_dedup::synth::Lang::Mixed, 31, "big");
    let text_bytes: usize = docs.iter().map(|d| d.text.len() + d.id.len()).sum();
    assert!(
        text_bytes > corpus_dedup::testing::PART_SIZE,
        "{text_bytes}"
    );
    let dir = server.root.join("crawl/big");
    std::fs::create_dir_all(&dir).unwrap();
    write_docs(&dir.join("big-00000.parquet"), &docs);
    let local_in = temp_dir("s3-big-local-in");
    write_docs(&local_in.join("big-00000.parquet"), &docs);
    let o = run_s3(
        &server,
        SECRET,
        &[
            "--input",
            "s3://crawl/big/*.parquet",
            "--output",
            "s3://crawl/runs/big",
            "--keep-work",
            // Every document's keys, in one large file (auto makes them again on S3).
            "--work-keys",
            "stored",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The key file (4-byte shingle keys) went up in several parts.
    let store = server.root.join("crawl/runs/big/_work/keys/p00000.keys");
    let keys = std::fs::metadata(&store).unwrap().len() as usize;
    assert!(keys > corpus_dedup::testing::PART_SIZE, "{keys}");
    let local = temp_dir("s3-big-local");
    run_ok(&format!("{}/*.parquet", local_in.display()), &local, &[]);
    let remote = server.root.join("crawl/runs/big");
    assert_eq!(
        comparable(&manifest(&remote)),
        comparable(&manifest(&local))
    );
}

#[test]
fn an_index_on_s3_gives_the_local_index_manifests_and_is_locked() {
    let Some(server) = start("s3-index") else {
        return;
    };
    // Night 1: the first sample shard; night 2: the other two and the first one again.
    let files = upload_samples(&server, "crawl", "all");
    let local = temp_dir("s3-index-local");
    let night2: Vec<(&PathBuf, String)> = files[1..]
        .iter()
        .map(|f| (f, f.file_name().unwrap().to_string_lossy().to_string()))
        .chain([(&files[0], "z-again.parquet".to_string())])
        .collect();
    let night1 = vec![(
        &files[0],
        files[0].file_name().unwrap().to_string_lossy().to_string(),
    )];
    for (n, fs) in [(1, night1), (2, night2)] {
        let dir = server.root.join(format!("crawl/n{n}"));
        let ldir = local.join(format!("n{n}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(&ldir).unwrap();
        for (f, name) in fs {
            std::fs::copy(f, dir.join(&name)).unwrap();
            std::fs::copy(f, ldir.join(&name)).unwrap();
        }
    }
    for n in 1..=2 {
        let batch = format!("night-{n}");
        let out = format!("s3://crawl/runs/n{n}");
        let args = [
            "--input",
            &format!("s3://crawl/n{n}/*.parquet"),
            "--output",
            &out,
            "--index",
            "s3://crawl/index",
            "--batch",
            &batch,
        ];
        let o = run_s3(&server, SECRET, &args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let lout = local.join(format!("o{n}"));
        run_ok(
            &format!("{}/n{n}/*.parquet", local.display()),
            &lout,
            &[
                "--batch",
                &batch,
                "--index",
                local.join("index").to_str().unwrap(),
            ],
        );
        let remote = server.root.join(format!("crawl/runs/n{n}"));
        assert_eq!(comparable(&manifest(&remote)), comparable(&manifest(&lout)));
        assert_eq!(
            summary(&remote)["index"]["dropped_against"],
            summary(&lout)["index"]["dropped_against"]
        );
    }
    // Night 1's shard again: every row of the copy is dropped against night 1, as an exact copy.
    let s2 = summary(&server.root.join("crawl/runs/n2"));
    assert!(
        s2["index"]["dropped_against"]["night-1"].as_u64().unwrap() >= 200,
        "{s2}"
    );
    assert!(s2["exact_duplicates"].as_u64().unwrap() >= 200, "{s2}");
    // Night 2's audit on S3: pairs against night 1 carry night 1's texts, read from its s3://
    // shard, as a local audit of the local nights does.
    s3_cmd(&server, SECRET, ["audit", "s3://crawl/runs/n2"]).ok();
    cd(["audit"]).arg(local.join("o2")).ok();
    let texts = |path: PathBuf| {
        let df = read_df(&path);
        let ids = str_column(&df, "dropped_id")
            .into_iter()
            .map(str::to_string);
        let kept = str_column(&df, "kept_text").into_iter().map(str::to_string);
        ids.zip(kept).collect::<Vec<_>>()
    };
    let remote = texts(server.root.join("crawl/runs/n2/audit-pairs.parquet"));
    assert!(remote.iter().filter(|(_, k)| !k.is_empty()).count() >= 100);
    assert_eq!(remote, texts(local.join("o2/audit-pairs.parquet")));
    // Copies across nights exported from s3 to s3 are the local index's.
    let export = ["index", "export", "--index", "s3://crawl/index", "--output"];
    s3_cmd(&server, SECRET, export)
        .arg("s3://crawl/exports/copies.parquet")
        .ok();
    let lexport = local.join("copies.parquet");
    cd(["index", "export", "--index"])
        .arg(local.join("index"))
        .arg("--output")
        .arg(&lexport)
        .ok();
    let remote = read_df(&server.root.join("crawl/exports/copies.parquet"));
    assert!(remote.height() > 0 && remote.equals(&read_df(&lexport)));
    // Status and verify read an s3:// index as a local one.
    for what in ["status", "verify"] {
        let o = s3_cmd(
            &server,
            SECRET,
            ["index", what, "--json", "--index", "s3://crawl/index"],
        )
        .ok();
        let local_o = cd(["index", what, "--json", "--index"])
            .arg(local.join("index"))
            .ok();
        let (r, l): (serde_json::Value, serde_json::Value) = (
            serde_json::from_slice(&o.stdout).unwrap(),
            serde_json::from_slice(&local_o.stdout).unwrap(),
        );
        let key = if what == "status" {
            "live_documents"
        } else {
            "files"
        };
        assert_eq!(r[key], l[key], "{what}");
    }
    // The lock object is gone after a run; one held by a live process elsewhere stops a run.
    let lock = server.root.join("crawl/index/LOCK");
    assert!(!lock.exists());
    std::fs::write(&lock, "pid 1 on another-host since 2026-11-23T01:00:00Z").unwrap();
    let args = [
        "--input",
        "s3://crawl/n2/*.parquet",
        "--output",
        "s3://crawl/runs/x",
        "--index",
        "s3://crawl/index",
        "--batch",
        "night-3",
    ];
    let e = failure(&run_s3(&server, SECRET, &args));
    assert!(e.contains("index 's3://crawl/index' is in use by pid 1 on another-host since 2026-11-23T01:00:00Z"), "{e}");
    // One left by a process of this host that no longer runs is taken over.
    let host = corpus_dedup::testing::hostname();
    std::fs::write(
        &lock,
        format!("pid 2147483000 on {host} since 2026-11-23T01:00:00Z"),
    )
    .unwrap();
    let o = run_s3(&server, SECRET, &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!lock.exists());
}

#[test]
fn a_reference_on_s3_flags_what_a_local_one_does_and_is_cached_in_an_s3_index() {
    let Some(server) = start("s3-reference") else {
        return;
    };
    let files = upload_samples(&server, "crawl", "night");
    // Two long sample texts as benchmark items, on the server and locally.
    let texts = read_df(&files[0]);
    let texts: Vec<&str> = str_column(&texts, "text")
        .into_iter()
        .filter(|t| t.len() > 400)
        .take(2)
        .collect();
    let local = temp_dir("s3-reference-local");
    let bench = local.join("bench.parquet");
    write_shard(&bench, &["q1", "q2"], &texts, Vec::new());
    let remote_bench = server.root.join("crawl/bench/items.parquet");
    std::fs::create_dir_all(remote_bench.parent().unwrap()).unwrap();
    std::fs::copy(&bench, &remote_bench).unwrap();
    let args = [
        "--input",
        "s3://crawl/night/*.parquet",
        "--output",
        "s3://crawl/runs/ref",
        "--reference",
        "s3://crawl/bench/*.parquet",
        "--index",
        "s3://crawl/index",
        "--batch",
        "n1",
    ];
    let o = run_s3(&server, SECRET, &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lout = local.join("out");
    let glob = format!("{}/*.parquet", files[0].parent().unwrap().display());
    run_ok(&glob, &lout, &["--reference", bench.to_str().unwrap()]);
    let flags = |dir: &Path| {
        let df = read_df(&dir.join("manifest.parquet"));
        let by = df.column("contaminated_by").unwrap().str().unwrap().clone();
        by.iter().map(|x| x.map(str::to_string)).collect::<Vec<_>>()
    };
    let remote = flags(&server.root.join("crawl/runs/ref"));
    assert!(remote.iter().flatten().count() >= 2);
    assert_eq!(remote, flags(&lout));
    assert!(server.root.join("crawl/index/reference-cache.bin").exists());
    // The same items as JSON Lines on the server flag the same documents.
    let lines: String = (["q1", "q2"].iter().zip(&texts))
        .map(|(id, t)| serde_json::json!({"id": id, "text": t}).to_string() + "\n")
        .collect();
    std::fs::write(server.root.join("crawl/bench/items.jsonl"), lines).unwrap();
    let mut jl = args;
    jl[3] = "s3://crawl/runs/ref-jsonl";
    jl[5] = "s3://crawl/bench/*.jsonl";
    let o = run_s3(&server, SECRET, &jl[..6]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(flags(&server.root.join("crawl/runs/ref-jsonl")), remote);
    // A reference glob that matches nothing on the server names --reference.
    let mut bad = args;
    bad[5] = "s3://crawl/nothing/*.parquet";
    bad[3] = "s3://crawl/runs/bad";
    let err = failure(&run_s3(&server, SECRET, &bad));
    assert!(
        err.contains("--reference") && err.contains("matches no file"),
        "{err}"
    );
}

#[test]
fn compaction_on_an_s3_index_does_what_it_does_locally() {
    let Some(server) = start("s3-compact") else {
        return;
    };
    let local = temp_dir("s3-compact-local");
    let globs = crate::index::recrawl_stream(&local, 4);
    let mut compacted = 0;
    for (n, glob) in globs.iter().enumerate() {
        let n = n + 1;
        let shard = Path::new(glob.trim_end_matches("/*.parquet")).join("s.parquet");
        let dir = server.root.join(format!("crawl/in{n}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&shard, dir.join("s.parquet")).unwrap();
        let batch = format!("night-{n}");
        let (input, out) = (
            format!("s3://crawl/in{n}/*.parquet"),
            format!("s3://crawl/c{n}"),
        );
        let args = [
            "--input",
            &input,
            "--output",
            &out,
            "--index",
            "s3://crawl/cix",
        ];
        let o = run_s3(
            &server,
            SECRET,
            &[&args[..], &["--batch", &batch, "--window", "1"]].concat(),
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let lout = local.join(format!("o{n}"));
        let lindex = local.join("index");
        let flags = [
            "--batch",
            &batch,
            "--window",
            "1",
            "--index",
            lindex.to_str().unwrap(),
        ];
        run_ok(glob, &lout, &flags);
        let remote = server.root.join(format!("crawl/c{n}"));
        assert_eq!(comparable(&manifest(&remote)), comparable(&manifest(&lout)));
        // The same batches to the same documents (bytes differ: origins name the inputs).
        let c = |o: &Path| -> Vec<(String, u64, u64)> {
            (summary(o)["index"]["compacted"].as_array().unwrap().iter())
                .map(|c| {
                    let n = |k: &str| c[k].as_u64().unwrap();
                    let batch = c["batch"].as_str().unwrap().to_string();
                    (batch, n("documents_before"), n("documents_after"))
                })
                .collect()
        };
        assert_eq!(c(&remote), c(&lout), "night {n}");
        compacted += c(&lout).len();
    }
    assert!(compacted >= 2, "{compacted}");
    let o = s3_cmd(
        &server,
        SECRET,
        ["index", "verify", "--json", "--index", "s3://crawl/cix"],
    )
    .ok();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["damaged"], serde_json::json!([]), "{v}");
}

#[test]
fn jsonl_on_s3_gives_the_local_manifest_and_shards() {
    let Some(server) = start("s3-jsonl") else {
        return;
    };
    // The same documents as JSON Lines: one plain file, one gzip, one zstd.
    let (_, docs) = three_shards(&temp_dir("s3-jsonl-gen"));
    let local = temp_dir("s3-jsonl-local");
    let bucket = server.root.join("crawl/jl");
    std::fs::create_dir_all(&bucket).unwrap();
    let names = ["a.jsonl", "b.jsonl.gz", "c.jsonl.zst"];
    for (k, (name, part)) in names
        .iter()
        .zip(docs.chunks(docs.len() / 3 + 1))
        .enumerate()
    {
        let lines: String = (part.iter())
            .map(|d| {
                format!(
                    "{{\"id\": \"{}\", \"text\": {}, \"k\": {k}}}\n",
                    d.id,
                    serde_json::to_string(&d.text).unwrap()
                )
            })
            .collect();
        let bytes = match k {
            0 => lines.into_bytes(),
            1 => {
                let mut e =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                std::io::Write::write_all(&mut e, lines.as_bytes()).unwrap();
                e.finish().unwrap()
            }
            _ => zstd::encode_all(lines.as_bytes(), 0).unwrap(),
        };
        std::fs::write(local.join(name), &bytes).unwrap();
        std::fs::write(bucket.join(name), &bytes).unwrap();
    }
    let o = run_s3(
        &server,
        SECRET,
        &[
            "--input",
            "s3://crawl/jl/*",
            "--output",
            "s3://crawl/runs/jl",
            "--paragraphs",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = local.join("out");
    run_ok(
        &format!("{}/*.json*", local.display()),
        &out,
        &["--paragraphs"],
    );
    let remote = server.root.join("crawl/runs/jl");
    assert_eq!(comparable(&manifest(&remote)), comparable(&manifest(&out)));
    assert!(manifest(&out).iter().any(|r| !r.keep));
    // Applied on S3 and locally: the same bytes, compressed alike.
    s3_cmd(&server, SECRET, ["apply", "--quiet"])
        .args(["--manifest", "s3://crawl/runs/jl/manifest.parquet"])
        .args(["--output", "s3://crawl/kept-jl"])
        .ok();
    cd(["apply", "--quiet", "--manifest"])
        .arg(out.join("manifest.parquet"))
        .arg("--output")
        .arg(local.join("kept"))
        .ok();
    for name in names {
        let remote = std::fs::read(server.root.join("crawl/kept-jl").join(name)).unwrap();
        assert_eq!(
            remote,
            std::fs::read(local.join("kept").join(name)).unwrap(),
            "{name}"
        );
    }
    // As Parquet (--format), on S3 and locally: the same rows.
    s3_cmd(&server, SECRET, ["apply", "--quiet", "--format", "parquet"])
        .args(["--manifest", "s3://crawl/runs/jl/manifest.parquet"])
        .args(["--output", "s3://crawl/kept-pq"])
        .ok();
    cd(["apply", "--quiet", "--format", "parquet", "--manifest"])
        .arg(out.join("manifest.parquet"))
        .arg("--output")
        .arg(local.join("kept-pq"))
        .ok();
    for name in ["a.parquet", "b.parquet", "c.parquet"] {
        let remote = read_df(&server.root.join("crawl/kept-pq").join(name));
        assert!(remote.height() > 0);
        assert!(
            remote.equals_missing(&read_df(&local.join("kept-pq").join(name))),
            "{name}"
        );
    }
}

#[test]
fn a_sweep_on_s3_counts_what_a_local_sweep_does() {
    let Some(server) = start("s3-sweep") else {
        return;
    };
    upload_samples(&server, "crawl", "night");
    let sweep = ["--sweep", "0.7,0.8,0.9"];
    let o = run_s3(
        &server,
        SECRET,
        &[
            &[
                "--input",
                "s3://crawl/night/*.parquet",
                "--output",
                "s3://crawl/runs/sw",
            ][..],
            &sweep,
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let local = temp_dir("s3-sweep-local");
    let samples = format!(
        "{}/data-samples/synthetic/*.parquet",
        env!("CARGO_MANIFEST_DIR")
    );
    run_ok(&samples, &local, &sweep);
    // The work directory on S3 makes keys again from the shards (`--work-keys auto`): the same
    // counts, and the same documents a lower threshold would add, for `audit`.
    let remote = server.root.join("crawl/runs/sw");
    assert_eq!(summary(&remote)["sweep"], summary(&local)["sweep"]);
    assert!(
        summary(&remote)["sweep"][0]["dropped"].as_u64()
            > summary(&remote)["documents_dropped"].as_u64()
    );
    let drops = |dir: &std::path::Path| read_df(&dir.join("sweep-drops.parquet"));
    assert!(drops(&remote).equals(&drops(&local)));
    assert_eq!(
        comparable(&manifest(&remote)),
        comparable(&manifest(&local))
    );
}
