//! The MinHash pipeline as tasks (see [`crate::plan`] for the stages and their files).
//!
//! Invariants every task keeps:
//! - It reads only files of earlier stages whose tasks are complete, and never a temporary file:
//!   every file is written whole under a temporary name (or as one object) and renamed.
//! - Its completion marker `done/STAGE-tNNNNN.json` is written last, after all its outputs; a
//!   task is complete exactly when its marker exists. A rerun skips complete tasks and rewrites
//!   the outputs of incomplete ones (outputs are a function of the plan, so rewriting is safe).
//! - Its memory follows its own slice: a part's rows (signatures, verify, manifest), one band's
//!   bucket range (candidates); clustering holds 16 bytes per document and streams the edges.

use std::time::Instant;

use polars::prelude::*;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::corpus::Corpus;
use crate::error::{Error, Result};
use crate::io::output::{OutputDir, ParquetUse};
use crate::io::{band_rows, pairs, store};
use crate::lsh::band_key;
use crate::minhash::estimate_jaccard;
use crate::plan::{Plan, Stage, DOCS_PER_CHUNK};
use crate::stages::candidates::{self, CandidateStats};
use crate::stages::cluster::{Clusters, SparseUnionFind, UnionFind};
use crate::stages::signature::{self, ShingleKeys, Signatures};
use crate::stages::verify::{self, ShingleSets, SigSource};

/// What a task reports in its completion marker.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TaskReport {
    pub stage: String,
    pub task: usize,
    pub seconds: f64,
    /// Peak RSS of the process that ran the task, MiB (in `run`, of the whole process).
    pub peak_rss_mib: f64,
    /// Stage-specific counters.
    pub stats: serde_json::Value,
}

/// Counters of a signatures task.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SignatureStats {
    pub documents: u64,
    pub text_bytes: u64,
    pub null_texts: u64,
    pub empty_texts: u64,
}

/// Counters of a verify task.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct VerifyStats {
    /// Distinct candidate pairs whose first document is in the part.
    pub candidate_pairs: u64,
    pub verified_pairs: u64,
    pub documents_exact_sets: u64,
    /// Pairs that needed the exact check but were skipped: their documents were already joined
    /// by this task's edges.
    pub exact_checks_skipped: u64,
}

/// Counters of the cluster task.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ClusterStats {
    pub documents_kept: u64,
    pub clusters: u64,
    pub cluster_size_histogram: std::collections::BTreeMap<String, u64>,
}

/// Name of a task's completion marker.
pub fn marker_name(stage: Stage, task: usize) -> String {
    format!("done/{}-t{task:05}.json", stage.name())
}

/// Reads a task's marker, if the task is complete.
pub fn read_marker(work: &OutputDir, stage: Stage, task: usize) -> Result<Option<TaskReport>> {
    let name = marker_name(stage, task);
    match work.read(&name)? {
        None => Ok(None),
        Some(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|e| Error::WorkFile {
                path: work.location(&name),
                msg: e.to_string(),
            }),
    }
}

/// Reads the plan of a work directory.
pub fn read_plan(work: &OutputDir) -> Result<Option<Plan>> {
    match work.read("plan.json")? {
        None => Ok(None),
        Some(b) => Plan::from_json(&b, &work.location("plan.json")).map(Some),
    }
}

fn pe(stage: &'static str) -> impl Fn(PolarsError) -> Error {
    move |source| Error::Polars { stage, source }
}

fn frame(stage: &'static str, columns: Vec<Column>) -> Result<DataFrame> {
    let h = columns.first().map_or(0, |c| c.len());
    DataFrame::new(h, columns).map_err(pe(stage))
}

/// Writes `columns` as the work file `name` (Parquet).
fn write_frame(
    work: &OutputDir,
    name: &str,
    stage: &'static str,
    columns: Vec<Column>,
) -> Result<()> {
    work.write_parquet(
        name,
        &mut frame(stage, columns)?,
        Vec::new(),
        ParquetUse::Work,
    )
}

/// A column of a work file as one contiguous series.
fn series(df: &DataFrame, name: &str, stage: &'static str) -> Result<Series> {
    Ok(df
        .column(name)
        .map_err(pe(stage))?
        .as_materialized_series()
        .rechunk())
}

/// A column as a contiguous u32 vector.
fn u32s(df: &DataFrame, name: &str, stage: &'static str) -> Result<Vec<u32>> {
    let s = series(df, name, stage)?;
    Ok(s.u32().map_err(pe(stage))?.into_no_null_iter().collect())
}

/// Which bucket range of `ranges` a bucket hash falls in (its high bits, scaled).
fn bucket_range(bucket: u64, ranges: usize) -> usize {
    (((bucket >> 32) * ranges as u64) >> 32) as usize
}

/// The fault-injection hook of the crash tests: `CORPUS_DEDUP_CRASH=STAGE:TASK[:ONCE_FILE]`
/// kills this process with SIGKILL when that task has written its outputs but not yet its
/// marker (once only, when ONCE_FILE is given: the file records that it happened).
fn crash_point(stage: Stage, task: usize) {
    let Ok(spec) = std::env::var("CORPUS_DEDUP_CRASH") else {
        return;
    };
    let mut it = spec.splitn(3, ':');
    let (Some(s), Some(t)) = (it.next(), it.next()) else {
        return;
    };
    if s != stage.name() || t.parse::<usize>().ok() != Some(task) {
        return;
    }
    if let Some(once) = it.next() {
        if std::path::Path::new(once).exists() {
            return;
        }
        let _ = std::fs::write(once, b"");
    }
    eprintln!(
        "corpus-dedup: fault injection: killing process {} in {} task {task}",
        std::process::id(),
        stage.name()
    );
    // SAFETY: kill(2) on our own pid with a constant signal has no memory-safety preconditions.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
}

/// Runs one task and writes its marker (last).
/// `walls` (stage wall times of a one-process run) only matters to the merge task's summary.
pub fn run_task(
    work: &OutputDir,
    plan: &Plan,
    stage: Stage,
    task: usize,
    walls: crate::executor::merge::StageWalls,
) -> Result<TaskReport> {
    let n = plan.tasks(stage);
    if task >= n {
        return Err(Error::Task(format!(
            "stage {} has {n} tasks (0..{n}); task {task} does not exist",
            stage.name()
        )));
    }
    let start = Instant::now();
    let stats = match stage {
        Stage::Signatures => to_json(signatures_task(work, plan, task)?),
        Stage::Candidates => to_json(candidates_task(work, plan, task)?),
        Stage::Verify => to_json(verify_task(work, plan, task)?),
        Stage::Cluster => to_json(cluster_task(work, plan)?),
        Stage::Manifest => {
            manifest_task(work, plan, task)?;
            serde_json::Value::Null
        }
        Stage::Merge => crate::executor::merge::merge(work, plan, walls)?,
    };
    let report = TaskReport {
        stage: stage.name().to_string(),
        task,
        seconds: start.elapsed().as_secs_f64(),
        peak_rss_mib: crate::executor::peak_rss_mib(),
        stats,
    };
    crash_point(stage, task);
    let bytes = serde_json::to_vec_pretty(&report).unwrap_or_default();
    work.write_bytes(&marker_name(stage, task), bytes)?;
    Ok(report)
}

fn to_json<T: Serialize>(v: T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

/// Checks that every task of `stage` is complete (the inputs of the next stage exist).
pub fn require_stage(work: &OutputDir, plan: &Plan, stage: Stage) -> Result<Vec<TaskReport>> {
    (0..plan.tasks(stage))
        .map(|t| {
            read_marker(work, stage, t)?.ok_or_else(|| {
                Error::Task(format!(
                    "{} task {t} of {} is not complete (no {}): run that stage first",
                    stage.name(),
                    plan.tasks(stage),
                    work.location(&marker_name(stage, t))
                ))
            })
        })
        .collect()
}

/// Signatures task: the part's rows -> signatures, band rows per (band, bucket range), the
/// document store (signatures, ids, shingle keys), and per-document keep data. Rows are read and
/// processed one chunk ([`DOCS_PER_CHUNK`]) at a time and their shingle keys streamed into the
/// store, so the task holds three chunks (one being read, one computed, one written) plus ~700
/// bytes per document of the part (signature, band keys, keep data).
fn signatures_task(work: &OutputDir, plan: &Plan, p: usize) -> Result<SignatureStats> {
    let cfg = &plan.config;
    let (first, count) = plan.parts[p];
    let perms = signature::permutations(cfg);
    let tokenizer = cfg.effective_tokenizer();
    let (bands, rows, ranges) = (cfg.bands, cfg.rows, plan.bucket_ranges);
    let mut stats = SignatureStats {
        documents: count,
        ..Default::default()
    };
    // Band rows per (band, range) task file: bucket hashes and global document indices.
    let mut band_rows: Vec<(Vec<u64>, Vec<u32>)> = vec![Default::default(); bands * ranges];
    let mut text_len: Vec<u32> = Vec::with_capacity(count as usize);
    let mut id_hash: Vec<u64> = Vec::with_capacity(count as usize);
    let mut priority: Vec<Option<f64>> = Vec::with_capacity(count as usize);
    let mut read = 0u64;
    let changed = |read: u64| {
        Error::Task(format!(
            "part {p}: the plan counted {count} rows but the shards' row ranges now give {read}: the input changed since the plan was made; plan again"
        ))
    };
    let store_err = |name: String| {
        move |e: std::io::Error| Error::Output {
            path: work.location(&name),
            msg: e.to_string(),
        }
    };
    // CORPUS_DEDUP_CHUNK_ROWS overrides the chunk size (tests use tiny chunks to cross many
    // chunk and shard boundaries); it never changes a result.
    let chunk_rows = std::env::var("CORPUS_DEDUP_CHUNK_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DOCS_PER_CHUNK);
    let chunks = plan.chunks(p, chunk_rows);
    let load = |i: usize| chunks.get(i).map(|c| Corpus::load_slices(c, cfg, |_| {}));
    store::write_part(work, p, |files| {
        let k = perms.len();
        let store =
            store::Writer::new(files, k, first, count).map_err(store_err(store::sig_name(p)))?;
        // Three chunks in flight: the next one is read while this one is computed, and the
        // previous one is appended to the store by its own thread.
        std::thread::scope(|scope| {
            type Chunk = (Signatures, ShingleKeys, Vec<String>);
            let (tx, rx) = std::sync::mpsc::sync_channel::<Chunk>(0);
            let writer = scope.spawn(move || {
                let mut store = store;
                for (sigs, keys, ids) in rx {
                    store.append(&sigs, |i| keys.get(i), |i| &ids[i])?;
                }
                store.finish()
            });
            let mut next = load(0);
            let mut i = 0;
            while let Some(corpus) = next.take() {
                let corpus = corpus?;
                let n = corpus.len() as u32;
                let base = first + read;
                read += n as u64;
                if read > count {
                    return Err(changed(read));
                }
                // Everything per document runs on the workers while the next chunk is
                // read: signatures, band keys (bands per document, flat; none for a
                // document without shingles) and ids.
                let ((sigs, shingle_keys, band_keys, ids), following) = rayon::join(
                    || {
                        let mut sigs = Signatures {
                            k,
                            ..Signatures::default()
                        };
                        let mut keys = ShingleKeys::default();
                        for shard in &corpus.shards {
                            let (s, kk) = signature::signature_column(
                                &shard.text,
                                &perms,
                                tokenizer,
                                cfg.ngram,
                                &|_| {},
                            );
                            sigs.extend(s);
                            keys.extend(kk);
                        }
                        let mut band_keys = vec![0u64; n as usize * bands];
                        band_keys
                            .par_chunks_mut(bands.max(1))
                            .enumerate()
                            .with_min_len(64)
                            .for_each(|(d, out)| {
                                let sig = sigs.get(d as u32);
                                for (b, key) in out.iter_mut().enumerate() {
                                    *key = band_key(b, &sig[b * rows..(b + 1) * rows]);
                                }
                            });
                        let ids: Vec<String> =
                            (0..n).into_par_iter().map(|d| corpus.id(d)).collect();
                        (sigs, keys, band_keys, ids)
                    },
                    || load(i + 1),
                );
                next = following;
                i += 1;
                for d in 0..n {
                    let t = corpus.text(d);
                    text_len.push(t.map_or(0, |t| t.len() as u32));
                    match t {
                        None => stats.null_texts += 1,
                        Some(t) => {
                            stats.text_bytes += t.len() as u64;
                            stats.empty_texts += u64::from(sigs.shingles[d as usize] == 0);
                        }
                    }
                }
                for shard in &corpus.shards {
                    match &shard.priority {
                        Some(pr) => priority.extend(pr.iter()),
                        None => priority.extend(std::iter::repeat_n(None, shard.len())),
                    }
                }
                // Band rows of every document with shingles, by band and bucket range.
                for (d, ks) in band_keys.chunks(bands.max(1)).enumerate() {
                    if sigs.shingles[d] == 0 {
                        continue;
                    }
                    for (b, &key) in ks.iter().enumerate() {
                        let (bucket, doc) = &mut band_rows[b * ranges + bucket_range(key, ranges)];
                        bucket.push(key);
                        doc.push((base + d as u64) as u32);
                    }
                }
                id_hash.extend(ids.iter().map(|i| xxhash_rust::xxh3::xxh3_64(i.as_bytes())));
                drop(corpus);
                if tx.send((sigs, shingle_keys, ids)).is_err() {
                    break; // the writer stopped on an error, reported below
                }
            }
            if read != count {
                return Err(changed(read));
            }
            drop(tx);
            let written = writer
                .join()
                .map_err(|_| Error::Task(format!("part {p}: the store writer panicked")))?;
            written.map_err(store_err(store::sig_name(p)))
        })
    })?;

    band_rows
        .into_par_iter()
        .enumerate()
        .try_for_each(|(t, (bucket, doc))| {
            let name = band_rows::band_rows_name(t / ranges, t % ranges, p);
            work.write_bytes(&name, band_rows::encode(&bucket, &doc))
        })?;

    // Keep data for the cluster task, and the id hashes for the duplicate-id check.
    write_frame(
        work,
        &format!("docs/p{p:05}.parquet"),
        "signatures",
        vec![
            Column::new("text_len".into(), text_len),
            Column::new("id_hash".into(), id_hash),
            Column::new("priority".into(), priority),
        ],
    )?;
    Ok(stats)
}

/// Candidates task: one band's bucket range from every part -> candidate pairs (a < b, sorted).
fn candidates_task(work: &OutputDir, plan: &Plan, t: usize) -> Result<CandidateStats> {
    let (b, r) = (t / plan.bucket_ranges, t % plan.bucket_ranges);
    let mut rows = Vec::new();
    for p in 0..plan.parts.len() {
        let name = band_rows::band_rows_name(b, r, p);
        band_rows::read(work, &name, |bucket, doc| {
            rows.push((b as u32, bucket, doc))
        })?;
    }
    let (pairs, stats) = candidates::pairs_of_rows(rows, plan.config.max_bucket_pairs, None);
    let starts: Vec<u64> = plan.parts.iter().map(|&(first, _)| first).collect();
    work.write_bytes(&pairs::pairs_name(t), pairs::encode(&pairs, &starts))?;
    Ok(stats)
}

/// Documents per window of the verify and manifest tasks: the pairs of one window share one
/// fetch of signatures and exact sets from the stores.
const WINDOW: u64 = 16_384;

/// Window of document `d` for batching: [`WINDOW`] consecutive documents.
fn window(d: u32) -> u64 {
    d as u64 / WINDOW
}

/// Whether pair (a, b) gets the exact Jaccard check under the plan's settings.
fn exact_check(plan: &Plan, a: u32, b: u32, sigs: &store::Fetched) -> bool {
    let cfg = &plan.config;
    let estimate = || estimate_jaccard(sigs.sig(a), sigs.sig(b));
    let (mode, threshold, min_shingles) = (cfg.verify, cfg.threshold, cfg.min_shingles);
    verify::needs_exact(a, b, sigs, mode, threshold, min_shingles, estimate)
}

/// Signatures (and ids, when `ids`) of the documents of `pairs` and of `also`.
fn fetch_sigs(
    work: &OutputDir,
    plan: &Plan,
    pairs: &[(u32, u32)],
    also: Vec<u32>,
    ids: bool,
) -> Result<store::Fetched> {
    let mut docs = verify::docs_of_pairs(pairs, |_, _| true);
    docs.extend(also);
    docs.par_sort_unstable();
    docs.dedup();
    let wanted = store::Wanted { ids, keys: false };
    store::fetch(work, &plan.parts, plan.config.num_perm, docs, wanted)
}

/// The shingle sets of `need` (sorted, unique): those found in `held` are moved out of it
/// instead of being read again; the second value counts the sets read from the stores.
fn fetch_sets(
    work: &OutputDir,
    plan: &Plan,
    need: Vec<u32>,
    held: &mut ShingleSets,
) -> Result<(ShingleSets, u64)> {
    let (reused, missing) = held.take(&need);
    let read = missing.len() as u64;
    let wanted = store::Wanted {
        ids: false,
        keys: true,
    };
    let sets = store::fetch(work, &plan.parts, plan.config.num_perm, missing, wanted)?.into_sets();
    Ok((reused.merge(sets), read))
}

/// What comparing `pairs` needs from the stores: signatures and ids of their documents and of
/// `also` ([`fetch_sigs`]), and the shingle sets of the documents of pairs that need exact
/// Jaccard (per [`verify::docs_needing_sets`], through [`fetch_sets`]).
fn fetch_for_pairs(
    work: &OutputDir,
    plan: &Plan,
    pairs: &[(u32, u32)],
    also: Vec<u32>,
) -> Result<(store::Fetched, ShingleSets)> {
    let cfg = &plan.config;
    let sigs = fetch_sigs(work, plan, pairs, also, true)?;
    let need = verify::docs_needing_sets(pairs, &sigs, cfg.verify, cfg.threshold, cfg.min_shingles);
    let (sets, _) = fetch_sets(work, plan, need, &mut ShingleSets::default())?;
    Ok((sigs, sets))
}

/// Shingle keys a verify task keeps between windows: the sets of documents in later windows,
/// lowest first (their pairs come next), up to this many keys (64 MiB). Measured at 100k
/// documents: 51,905 set reads instead of 80,269 (each document that needs a set read once),
/// verify 1.53-1.73 -> 1.40-1.73 s, same peak RSS.
const CARRY_KEYS: usize = 16 << 20;

/// Verify task: the distinct candidate pairs whose first document is in the part -> edges.
fn verify_task(work: &OutputDir, plan: &Plan, p: usize) -> Result<VerifyStats> {
    let cfg = &plan.config;
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    for t in 0..plan.tasks(Stage::Candidates) {
        pairs.extend(pairs::read_part(
            work,
            &pairs::pairs_name(t),
            plan.parts.len(),
            p,
        )?);
    }
    pairs.par_sort_unstable();
    pairs.dedup();
    // Two passes over windows of first documents: signatures and sets are held for one window
    // at a time (plus the carried sets), the part's pairs, exact checks and edges (8-12 bytes
    // each) for the whole task.
    // 1: one fetch of signatures per window; the estimate decides most pairs, and their edges
    //    link documents in `joined`.
    // 2: one or two fetches of sets per window for the pairs that need the exact check, skipping
    //    the pairs whose documents are already linked (see verify::exact_batch).
    let mut edges = Vec::new();
    let mut checks = Vec::new();
    for batch in pairs.chunk_by(|x, y| window(x.0) == window(y.0)) {
        let sigs = fetch_sigs(work, plan, batch, Vec::new(), false)?;
        let (found, exact) =
            verify::estimate_batch(batch, &sigs, cfg.verify, cfg.threshold, cfg.min_shingles);
        edges.extend(found);
        checks.extend(exact);
    }
    let mut joined = SparseUnionFind::default();
    for e in &edges {
        joined.union(e.a, e.b);
    }
    let (mut exact_sets, mut skipped) = (0u64, 0u64);
    let mut carry = ShingleSets::default();
    for batch in checks.chunk_by(|x, y| window(x.a) == window(y.a)) {
        let (found, sets, skip) = verify::exact_batch(batch, cfg.threshold, &mut joined, |need| {
            let (sets, read) = fetch_sets(work, plan, need, &mut carry)?;
            exact_sets += read;
            Ok(sets)
        })?;
        edges.extend(found);
        skipped += skip;
        // Checks are sorted by first document: what later windows can use lies beyond this one.
        let next = ((window(batch[0].a) + 1) * WINDOW).min(u32::MAX as u64) as u32;
        carry = std::mem::take(&mut carry).merge(sets);
        carry.keep_from(next, CARRY_KEYS);
    }
    edges.sort_unstable_by_key(|e| (e.a, e.b));
    let a: Vec<u32> = edges.iter().map(|e| e.a).collect();
    let b: Vec<u32> = edges.iter().map(|e| e.b).collect();
    let similarity: Vec<f32> = edges.iter().map(|e| e.similarity).collect();
    write_frame(
        work,
        &format!("edges/p{p:05}.parquet"),
        "verify",
        vec![
            Column::new("a".into(), a),
            Column::new("b".into(), b),
            Column::new("similarity".into(), similarity),
        ],
    )?;
    Ok(VerifyStats {
        candidate_pairs: pairs.len() as u64,
        verified_pairs: edges.len() as u64,
        documents_exact_sets: exact_sets,
        exact_checks_skipped: skipped,
    })
}

/// Fails on the first id that occurs twice (unless allowed), naming both places. Ids are
/// compared by 64-bit hash (12 bytes per document while checking); equal hashes are confirmed on
/// the ids themselves.
fn check_unique_ids(work: &OutputDir, plan: &Plan) -> Result<()> {
    let mut hashes: Vec<(u64, u32)> = Vec::with_capacity(plan.documents as usize);
    for p in 0..plan.parts.len() {
        let df = work.read_parquet(&format!("docs/p{p:05}.parquet"))?;
        let s = series(&df, "id_hash", "cluster")?;
        let first = plan.parts[p].0 as u32;
        hashes.extend(
            s.u64()
                .map_err(pe("cluster"))?
                .into_no_null_iter()
                .enumerate()
                .map(|(i, h)| (h, first + i as u32)),
        );
    }
    hashes.par_sort_unstable();
    let ids = store::Wanted {
        ids: true,
        keys: false,
    };
    // Report the id that repeats first in input order (as a sequential scan would).
    let mut first_repeat: Option<(u32, u32)> = None;
    for w in hashes.windows(2) {
        let ((h0, x), (h1, y)) = (w[0], w[1]);
        if h0 != h1 || first_repeat.is_some_and(|(_, best)| best <= y) {
            continue;
        }
        let f = store::fetch(work, &plan.parts, plan.config.num_perm, vec![x, y], ids)?;
        if f.id(x) == f.id(y) {
            first_repeat = Some((x, y));
        }
    }
    if let Some((x, y)) = first_repeat {
        let f = store::fetch(work, &plan.parts, plan.config.num_perm, vec![x, y], ids)?;
        let place = |d: u32| {
            let (file, row) = plan.locate(d as u64);
            format!("{file} row {row}")
        };
        return Err(Error::DuplicateId {
            id: f.id(x).to_string(),
            first: place(x),
            second: place(y),
        });
    }
    Ok(())
}

/// Cluster task: union-find over all documents with the edges streamed part by part, then the
/// keeper of each cluster, written per part.
fn cluster_task(work: &OutputDir, plan: &Plan) -> Result<ClusterStats> {
    let cfg = &plan.config;
    if !cfg.allow_duplicate_ids {
        check_unique_ids(work, plan)?;
    }
    let n = plan.documents as usize;
    let mut uf = UnionFind::new(n);
    for p in 0..plan.parts.len() {
        let df = work.read_parquet(&format!("edges/p{p:05}.parquet"))?;
        let (a, b) = (u32s(&df, "a", "cluster")?, u32s(&df, "b", "cluster")?);
        for (x, y) in a.into_iter().zip(b) {
            uf.union(x, y);
        }
    }
    // Keep data, read only when the rule needs it.
    let keep_column = |name: &str| -> Result<Vec<Option<f64>>> {
        let mut out = Vec::with_capacity(n);
        for p in 0..plan.parts.len() {
            let df = work.read_parquet(&format!("docs/p{p:05}.parquet"))?;
            let c = df
                .column(name)
                .map_err(pe("cluster"))?
                .cast(&DataType::Float64)
                .map_err(pe("cluster"))?;
            out.extend(c.f64().map_err(pe("cluster"))?.iter());
        }
        Ok(out)
    };
    let (text_len, priority) = match &cfg.keep {
        crate::config::Keep::First => (Vec::new(), Vec::new()),
        crate::config::Keep::Longest => (keep_column("text_len")?, Vec::new()),
        crate::config::Keep::Column(_) => (Vec::new(), keep_column("priority")?),
    };
    let clusters = Clusters::build(
        uf,
        &cfg.keep,
        |d| text_len[d as usize].unwrap_or(0.0) as usize,
        |d| priority[d as usize],
    );
    drop((text_len, priority));
    // Similarity to the keeper where a verified edge joins them (a second pass over the edges,
    // 4 bytes per document); the manifest computes the rest.
    let mut to_keeper = vec![f32::NAN; n];
    for p in 0..plan.parts.len() {
        let df = work.read_parquet(&format!("edges/p{p:05}.parquet"))?;
        let (a, b) = (u32s(&df, "a", "cluster")?, u32s(&df, "b", "cluster")?);
        let sim = series(&df, "similarity", "cluster")?;
        let sim = sim.f32().map_err(pe("cluster"))?;
        for ((x, y), s) in a.into_iter().zip(b).zip(sim.into_no_null_iter()) {
            if clusters.keeper_of(y) == x {
                to_keeper[y as usize] = s;
            } else if clusters.keeper_of(x) == y {
                to_keeper[x as usize] = s;
            }
        }
    }
    for p in 0..plan.parts.len() {
        let r = plan.part_range(p);
        let docs = r.start as u32..r.end as u32;
        let keeper: Vec<u32> = docs.clone().map(|d| clusters.keeper_of(d)).collect();
        let similarity: Vec<Option<f32>> = docs
            .clone()
            .map(|d| Some(to_keeper[d as usize]).filter(|s| !s.is_nan()))
            .collect();
        let cluster_id: Vec<Option<u64>> = docs
            .map(|d| clusters.cluster_id(d).map(u64::from))
            .collect();
        write_frame(
            work,
            &format!("cluster/p{p:05}.parquet"),
            "cluster",
            vec![
                Column::new("keeper".into(), keeper),
                Column::new("cluster_id".into(), cluster_id),
                Column::new("similarity".into(), similarity),
            ],
        )?;
    }
    let hist = clusters.size_histogram();
    Ok(ClusterStats {
        documents_kept: (0..n as u32)
            .filter(|&d| clusters.keeper_of(d) == d)
            .count() as u64,
        clusters: hist.iter().map(|&(_, c)| c).sum(),
        cluster_size_histogram: hist.iter().map(|&(s, c)| (s.to_string(), c)).collect(),
    })
}

/// A window of a part's documents for the manifest: its first document number, and each
/// document's keeper and similarity known from a verified edge.
type ManifestWindow<'a> = (u32, &'a [u32], &'a [Option<f32>]);

/// One manifest row: id, (file, row), keep, duplicate_of, similarity.
type ManifestRow = (String, (String, u64), bool, Option<String>, Option<f32>);

/// The manifest rows of the window of documents `first ..` whose keepers are `keepers` (and
/// similarities to them, where a verified edge gives it, `known`).
fn manifest_window(
    work: &OutputDir,
    plan: &Plan,
    first: u32,
    keepers: &[u32],
    known: &[Option<f32>],
) -> Result<Vec<ManifestRow>> {
    let own = first..first + keepers.len() as u32;
    let mut also: Vec<u32> = own.clone().chain(keepers.iter().copied()).collect();
    also.par_sort_unstable();
    also.dedup();
    // Dropped documents with no verified edge to their keeper: similarity computed the way
    // verification would compute it for that pair.
    let unknown: Vec<(u32, u32)> = own
        .zip(keepers.iter().copied())
        .zip(known)
        .filter(|&((d, kd), s)| d != kd && s.is_none())
        .map(|(pair, _)| pair)
        .collect();
    let (fetched, sets) = fetch_for_pairs(work, plan, &unknown, also)?;
    // Each document's row on the workers, in order.
    Ok((0..keepers.len())
        .into_par_iter()
        .with_min_len(256)
        .map(|j| {
            let (d, kd) = (first + j as u32, keepers[j]);
            let (f, r) = plan.locate(d as u64);
            let similarity = (d != kd).then(|| {
                known[j].unwrap_or_else(|| {
                    let exact = exact_check(plan, d, kd, &fetched);
                    verify::similarity(d, kd, exact, &sets, &fetched) as f32
                })
            });
            let duplicate_of = (d != kd).then(|| fetched.id(kd).to_string());
            (
                fetched.id(d).to_string(),
                (f.to_string(), r),
                d == kd,
                duplicate_of,
                similarity,
            )
        })
        .collect())
}

/// Manifest task: the part's rows of the manifest (see [`crate::stages::manifest`]).
fn manifest_task(work: &OutputDir, plan: &Plan, p: usize) -> Result<()> {
    let range = plan.part_range(p);
    let cl = work.read_parquet(&format!("cluster/p{p:05}.parquet"))?;
    let keeper = u32s(&cl, "keeper", "manifest")?;
    let cluster_id = cl.column("cluster_id").map_err(pe("manifest"))?.clone();
    let known: Vec<Option<f32>> = series(&cl, "similarity", "manifest")?
        .f32()
        .map_err(pe("manifest"))?
        .iter()
        .collect();
    // One window of own documents at a time per thread: their ids, and the dropped ones' keepers
    // (ids, signatures, and exact sets where a similarity not known from a verified edge is
    // computed exactly). Windows run in groups of one per thread, each window's reads and rows
    // on its own (a window alone left the second thread waiting on the first's reads), so a
    // group holds as many windows' fetches as there are threads; rows stay in document order.
    let start = range.start as u32;
    let windows: Vec<ManifestWindow> = keeper
        .chunks(WINDOW as usize)
        .zip(known.chunks(WINDOW as usize))
        .enumerate()
        .map(|(w, (k, s))| (start + (w as u64 * WINDOW) as u32, k, s))
        .collect();
    let mut rows = crate::stages::manifest::ManifestRows::default();
    for group in windows.chunks(rayon::current_num_threads().max(1)) {
        let built: Vec<Vec<ManifestRow>> = group
            .par_iter()
            .with_max_len(1)
            .map(|&(first, keepers, known)| manifest_window(work, plan, first, keepers, known))
            .collect::<Result<_>>()?;
        for (id, file, keep, duplicate_of, similarity) in built.into_iter().flatten() {
            rows.ids.push(id);
            rows.files.push(file);
            rows.keep.push(keep);
            rows.duplicate_of.push(duplicate_of);
            rows.similarity.push(similarity);
        }
    }
    let mut df = crate::stages::manifest::manifest_frame(rows, cluster_id)?;
    work.write_parquet(
        &format!("manifest/p{p:05}.parquet"),
        &mut df,
        Vec::new(),
        ParquetUse::Work,
    )
}
