//! Helpers for every end-to-end test, written once: the command builder [`Cmd`], temporary
//! directories, writing shards, reading the manifest, exact ground truth by brute force, free
//! ports, and finding the servers the CI installs.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use polars::prelude::*;

use corpus_dedup::config::Tokenizer;
use corpus_dedup::kernels::jaccard;
use corpus_dedup::kernels::shingle::{shingle_set, Scratch};
use corpus_dedup::kernels::UnionFind;
use corpus_dedup::synth::Doc;
use corpus_dedup::testing::{write_parquet_atomic, ParquetUse};

/// A fresh, empty directory for one test.
pub(crate) fn temp_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("corpus-dedup-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes a DataFrame as a Parquet file.
pub(crate) fn write_df(path: &Path, mut df: DataFrame) {
    write_parquet_atomic(path, &mut df, vec![], ParquetUse::Output).unwrap();
}

/// Writes a shard with `id` and `text` columns and the `extra` ones (creating its directory);
/// returns the glob of the shards in that directory.
pub(crate) fn write_shard(path: &Path, id: &[&str], text: &[&str], extra: Vec<Column>) -> String {
    let dir = path.parent().unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let mut columns = vec![
        Column::new("id".into(), id),
        Column::new("text".into(), text),
    ];
    columns.extend(extra);
    write_df(path, DataFrame::new(id.len(), columns).unwrap());
    format!("{}/*.parquet", dir.display())
}

/// Writes generated documents as a shard with id and text columns.
pub(crate) fn write_docs(path: &Path, docs: &[Doc]) {
    let id: Vec<&str> = docs.iter().map(|d| d.id.as_str()).collect();
    let text: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
    write_shard(path, &id, &text, Vec::new());
}

/// The task stages of a MinHash run, in order.
pub(crate) const STAGES: [&str; 7] = [
    "signatures",
    "candidates",
    "verify",
    "exact",
    "cluster",
    "manifest",
    "merge",
];

/// A `corpus-dedup` command under construction; [`cd`] starts one.
pub(crate) struct Cmd {
    cmd: Command,
    shown: String,
}

/// `corpus-dedup ARGS...` (the binary of this build, with the test hooks).
pub(crate) fn cd<S: AsRef<std::ffi::OsStr>>(args: impl IntoIterator<Item = S>) -> Cmd {
    Cmd {
        cmd: Command::new(env!("CARGO_BIN_EXE_corpus-dedup")),
        shown: "corpus-dedup".into(),
    }
    .args(args)
}

/// Rebuilds the report of `out` reading its manifest 3 rows at a time (the report's passes
/// across many slices) and checks it is the page the run wrote.
pub(crate) fn report_rebuilds_in_slices(out: &Path) {
    let page = std::fs::read(out.join("report.html")).unwrap();
    cd(["report"])
        .arg(out)
        .env("CORPUS_DEDUP_MANIFEST_SLICE_ROWS", "3")
        .ok();
    let again = std::fs::read(out.join("report.html")).unwrap();
    assert!(page == again, "the report read in slices differs");
}

/// `corpus-dedup run --quiet --input GLOB --output OUT EXTRA...`.
pub(crate) fn run_cmd(input: &str, out: &Path, extra: &[&str]) -> Cmd {
    cd(["run", "--quiet", "--input", input, "--output"])
        .arg(out)
        .args(extra)
}

impl Cmd {
    /// Adds an argument.
    pub(crate) fn arg(mut self, a: impl AsRef<std::ffi::OsStr>) -> Self {
        self.shown
            .push_str(&format!(" {}", a.as_ref().to_string_lossy()));
        self.cmd.arg(a);
        self
    }

    /// Adds arguments.
    pub(crate) fn args<S: AsRef<std::ffi::OsStr>>(
        mut self,
        args: impl IntoIterator<Item = S>,
    ) -> Self {
        for a in args {
            self = self.arg(a);
        }
        self
    }

    /// Sets an environment variable.
    pub(crate) fn env(mut self, k: &str, v: impl AsRef<std::ffi::OsStr>) -> Self {
        self.cmd.env(k, v);
        self
    }

    /// Removes an environment variable.
    pub(crate) fn env_remove(mut self, k: &str) -> Self {
        self.cmd.env_remove(k);
        self
    }

    /// Starts it with stdout and stderr piped, and returns the running process.
    pub(crate) fn spawn(mut self) -> std::process::Child {
        self.cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Runs it and returns what happened.
    pub(crate) fn output(mut self) -> Output {
        self.cmd.output().unwrap()
    }

    /// Runs it and asserts success; returns the output.
    pub(crate) fn ok(self) -> Output {
        let shown = self.shown.clone();
        let o = self.output();
        assert!(
            o.status.success(),
            "{shown} failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        o
    }

    /// Runs it and asserts failure with a message, not a panic, and no summary line on stdout;
    /// returns stderr.
    pub(crate) fn fails(self) -> String {
        let shown = self.shown.clone();
        let o = self.output();
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(!o.status.success(), "expected failure of {shown}");
        assert!(
            !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
            "panic in {shown}: {err}"
        );
        assert!(!String::from_utf8_lossy(&o.stdout).contains("documents_in"));
        err
    }

    /// Runs it with the crash hook set to kill the process in task `at` ("stage:task" or
    /// "stage:task:oncefile"), and asserts that it died there by SIGKILL.
    pub(crate) fn killed_at(self, at: &str) {
        let shown = self.shown.clone();
        let o = self.env("CORPUS_DEDUP_CRASH", at).output();
        assert_eq!(
            o.status.signal(),
            Some(9),
            "{shown} was not killed at {at}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    /// Runs it, asserts success and returns stderr (progress, resume and discard messages).
    pub(crate) fn stderr(self) -> String {
        String::from_utf8_lossy(&self.ok().stderr).to_string()
    }
}

/// Runs `corpus-dedup run --quiet --input GLOB --output OUT EXTRA...` and asserts success.
pub(crate) fn run_ok(input: &str, out: &Path, extra: &[&str]) -> Output {
    run_cmd(input, out, extra).ok()
}

/// Waits until `path` exists (a running process got as far as writing it); fails the test
/// after `secs` seconds, saying that `what` did not happen.
pub(crate) fn wait_for(path: &Path, secs: u64, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !path.exists() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The bytes of `OUT/manifest.parquet`.
pub(crate) fn manifest_bytes(out: &Path) -> Vec<u8> {
    std::fs::read(out.join("manifest.parquet")).unwrap()
}

/// A free TCP port on loopback.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A tool a test needs that `.ci/run` installs: `path` when it exists, else None (the test is
/// skipped with a note) outside CI; in CI (`CI` set) a missing tool fails the test.
pub(crate) fn installed(path: PathBuf, what: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must provide {what} at {} (see .ci/run)",
        path.display()
    );
    eprintln!("skipped: {what} not found at {}", path.display());
    None
}

/// The development corpus (`../shared/corpus/dev-small`, with its ground truth), as `installed`.
pub(crate) fn dev_small() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/dev-small");
    installed(
        dir.join("gt_components.parquet"),
        "the development corpus (../shared beside the checkout)",
    )
    .map(|_| dir)
}

/// Checks that `df` has the columns `schemas/NAME.json` lists, in order, of its types, and no
/// null where the schema says none; returns the schema.
pub(crate) fn check_columns(df: &DataFrame, name: &str) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("schemas/{name}.json"));
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cols = schema["columns"].as_array().unwrap();
    assert_eq!(df.width(), cols.len(), "{name}");
    for (c, want) in df.columns().iter().zip(cols) {
        assert_eq!(c.name().as_str(), want["name"].as_str().unwrap());
        let dtype = format!("{:?}", c.dtype());
        assert_eq!(dtype, want["type"].as_str().unwrap(), "column {}", c.name());
        if !want["nullable"].as_bool().unwrap() {
            assert_eq!(c.null_count(), 0, "column {} must have no nulls", c.name());
        }
    }
    schema
}

/// Reads a Parquet file into a DataFrame.
pub(crate) fn read_df(path: &Path) -> DataFrame {
    LazyFrame::scan_parquet(
        PlRefPath::new(path.to_str().unwrap()),
        ScanArgsParquet::default(),
    )
    .unwrap()
    .collect()
    .unwrap()
}

/// A string column's values (nulls as "").
pub(crate) fn str_column<'a>(df: &'a DataFrame, name: &str) -> Vec<&'a str> {
    df.column(name)
        .unwrap()
        .str()
        .unwrap()
        .iter()
        .map(|s| s.unwrap_or_default())
        .collect()
}

/// A UInt32 column's values (nulls as 0).
pub(crate) fn u32_column(df: &DataFrame, name: &str) -> Vec<u32> {
    let c = df.column(name).unwrap().u32().unwrap();
    c.iter().map(|v| v.unwrap_or_default()).collect()
}

/// Each manifest row's position, by id.
pub(crate) fn positions(rows: &[Row]) -> std::collections::HashMap<&str, usize> {
    rows.iter()
        .enumerate()
        .map(|(i, r)| (r.id.as_str(), i))
        .collect()
}

/// The manifest as plain rows.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub id: String,
    pub file: String,
    pub row: u64,
    pub keep: bool,
    pub cluster_id: Option<u64>,
    pub duplicate_of: Option<String>,
    pub similarity: Option<f32>,
    pub cluster_size: Option<u32>,
}

/// Reads `DIR/manifest.parquet` into rows.
pub(crate) fn manifest(dir: &Path) -> Vec<Row> {
    let df = read_df(&dir.join("manifest.parquet"));
    let id = df.column("id").unwrap().str().unwrap().clone();
    let file = df.column("file").unwrap().str().unwrap().clone();
    let row = df.column("row").unwrap().u64().unwrap().clone();
    let keep = df.column("keep").unwrap().bool().unwrap().clone();
    let cl = df.column("cluster_id").unwrap().u64().unwrap().clone();
    let dup = df.column("duplicate_of").unwrap().str().unwrap().clone();
    let sim = df.column("similarity").unwrap().f32().unwrap().clone();
    let size = df.column("cluster_size").unwrap().u32().unwrap().clone();
    (0..df.height())
        .map(|i| Row {
            id: id.get(i).unwrap().to_string(),
            file: file.get(i).unwrap().to_string(),
            row: row.get(i).unwrap(),
            keep: keep.get(i).unwrap(),
            cluster_id: cl.get(i),
            duplicate_of: dup.get(i).map(str::to_string),
            similarity: sim.get(i),
            cluster_size: size.get(i),
        })
        .collect()
}

/// Reads `DIR/summary.json`.
pub(crate) fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// Asserts that each field of `obj` named in `fields` (a schema's `{"name": "type|type"}`) has
/// one of the listed JSON types ("number" also accepts an integer).
pub(crate) fn check_fields(obj: &serde_json::Value, fields: &serde_json::Value) {
    let kind = |v: &serde_json::Value| match v {
        serde_json::Value::String(_) => "string",
        serde_json::Value::Number(n) if n.is_u64() || n.is_i64() => "integer",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::Object(_) => "object",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Null => "null",
    };
    for (k, t) in fields.as_object().unwrap() {
        let got = kind(&obj[k.as_str()]);
        let ok = t
            .as_str()
            .unwrap()
            .split('|')
            .any(|w| w == got || (w == "number" && got == "integer"));
        assert!(ok, "field {k}: {got}, want {t}");
    }
}

/// Each text's set of word 5-gram shingles (CJK characters as tokens), as the ground truth uses.
pub(crate) fn shingle_sets(texts: &[&str]) -> Vec<Vec<u64>> {
    let mut scratch = Scratch::default();
    texts
        .iter()
        .map(|x| {
            let mut s = Vec::new();
            shingle_set(x, Tokenizer::Chars, 5, &mut scratch, &mut s);
            s
        })
        .collect()
}

/// Whether two shingle sets are near-duplicates at threshold `t` (exact Jaccard).
pub(crate) fn near(a: &[u64], b: &[u64], t: f64) -> bool {
    !a.is_empty() && !b.is_empty() && jaccard(a, b) >= t
}

/// Exact ground truth by brute force: the components of the graph of pairs with Jaccard >= t
/// over word 5-gram shingles (CJK characters as tokens), as a component id per document.
pub(crate) fn truth_components(texts: &[&str], t: f64) -> Vec<u32> {
    let sets = shingle_sets(texts);
    let mut uf = UnionFind::new(texts.len());
    for i in 0..sets.len() {
        for j in i + 1..sets.len() {
            if near(&sets[i], &sets[j], t) {
                uf.union(i as u32, j as u32);
            }
        }
    }
    (0..texts.len() as u32).map(|d| uf.find(d)).collect()
}

/// Document-level recall and precision as the corpus scorer defines them: a component of size k
/// should lose k - 1 documents; credit per component is min(k - 1, dropped in it). Component ids
/// may be any u32 (not necessarily below `truth.len()`).
pub(crate) fn doc_scores(truth: &[u32], dropped: &[bool]) -> (f64, f64) {
    let n = truth.len();
    let ids = truth.iter().map(|&t| t as usize + 1).max().unwrap_or(0);
    let mut size = vec![0u64; ids];
    let mut dropped_in = vec![0u64; ids];
    for d in 0..n {
        size[truth[d] as usize] += 1;
        if dropped[d] {
            dropped_in[truth[d] as usize] += 1;
        }
    }
    let should: u64 = size.iter().map(|&k| k.saturating_sub(1)).sum();
    let credit: u64 = (0..ids)
        .map(|c| dropped_in[c].min(size[c].saturating_sub(1)))
        .sum();
    let total_dropped = dropped.iter().filter(|&&x| x).count() as u64;
    (
        credit as f64 / should.max(1) as f64,
        credit as f64 / total_dropped.max(1) as f64,
    )
}

/// Writes an English, a Chinese and a mixed shard into `dir` (made if missing); returns the glob
/// and all documents in manifest order (files sorted by name).
pub(crate) fn three_shards(dir: &std::path::Path) -> (String, Vec<corpus_dedup::synth::Doc>) {
    std::fs::create_dir_all(dir).unwrap();
    let en = corpus_dedup::synth::generate(160, corpus_dedup::synth::Lang::En, 21, "en");
    let mixed = corpus_dedup::synth::generate(120, corpus_dedup::synth::Lang::Mixed, 23, "mx");
    let zh = corpus_dedup::synth::generate(140, corpus_dedup::synth::Lang::Zh, 22, "zh");
    write_docs(&dir.join("a-en.parquet"), &en);
    write_docs(&dir.join("b-mixed.parquet"), &mixed);
    write_docs(&dir.join("c-zh.parquet"), &zh);
    let all = en.into_iter().chain(mixed).chain(zh).collect();
    (format!("{}/*.parquet", dir.display()), all)
}

/// Writes `texts` as one shard with ids d0, d1, ...; returns its path as a glob.
pub(crate) fn text_shard(dir: &Path, texts: &[String]) -> String {
    let id: Vec<String> = (0..texts.len()).map(|i| format!("d{i}")).collect();
    let id: Vec<&str> = id.iter().map(String::as_str).collect();
    let text: Vec<&str> = texts.iter().map(String::as_str).collect();
    let path = dir.join("s.parquet");
    write_shard(&path, &id, &text, Vec::new());
    path.display().to_string()
}

/// A `drop_spans` entry: start, end, retained_by, retained_batch.
pub(crate) type Span = (u64, u64, Option<String>, Option<String>);

/// The manifest's `drop_spans` per row (None: null).
pub(crate) fn drop_spans(out: &Path) -> Vec<Option<Vec<Span>>> {
    let df = read_df(&out.join("manifest.parquet"));
    let list = df.column("drop_spans").unwrap().list().unwrap().clone();
    list.amortized_iter()
        .map(|row| {
            row.map(|row| {
                let st = row.as_ref().struct_().unwrap().clone();
                let u = |n: &str| -> Vec<u64> {
                    let f = st.field_by_name(n).unwrap();
                    f.u64().unwrap().into_no_null_iter().collect()
                };
                let s = |n: &str| -> Vec<Option<String>> {
                    let f = st.field_by_name(n).unwrap();
                    f.str()
                        .unwrap()
                        .iter()
                        .map(|x| x.map(str::to_string))
                        .collect()
                };
                let (a, b, c, d) = (u("start"), u("end"), s("retained_by"), s("retained_batch"));
                (0..a.len())
                    .map(|i| (a[i], b[i], c[i].clone(), d[i].clone()))
                    .collect()
            })
        })
        .collect()
}
