//! The retained index (`--index INDEX --batch NAME --window N`): nightly batches compared with
//! earlier ones, window expiry, reruns, refused names and settings, the lock, damaged files,
//! SimHash, and kill -9 around the index commit.

use std::path::{Path, PathBuf};

use crate::common::*;
use corpus_dedup::synth::{generate, Doc, Lang, Rng};

/// 4 nights of 2 shards each, cut from one generated corpus shuffled so that near-duplicates
/// land in different nights. Returns each night's glob and the documents in night order.
fn nights(dir: &Path) -> (Vec<String>, Vec<Doc>) {
    let mut docs = generate(240, Lang::En, 31, "en");
    docs.extend(generate(200, Lang::Mixed, 32, "mx"));
    let mut rng = Rng::new(7);
    for i in (1..docs.len()).rev() {
        docs.swap(i, rng.below(i + 1));
    }
    let per = docs.len().div_ceil(8);
    let mut globs = Vec::new();
    for n in 0..4 {
        let night = dir.join(format!("n{}", n + 1));
        std::fs::create_dir_all(&night).unwrap();
        for s in 0..2 {
            let lo = ((2 * n + s) * per).min(docs.len());
            let hi = (lo + per).min(docs.len());
            write_docs(&night.join(format!("s{s}.parquet")), &docs[lo..hi]);
        }
        globs.push(format!("{}/*.parquet", night.display()));
    }
    (globs, docs)
}

/// `run` of night `n` (1-based) against `index`.
fn night(globs: &[String], n: usize, out: &Path, index: &Path, extra: &[&str]) -> Cmd {
    run_cmd(&globs[n - 1], out, extra)
        .arg("--index")
        .arg(index)
        .args(["--batch", &format!("night-{n}")])
}

/// The duplicate_of_batch column of a manifest (None for kept rows).
fn batches_of(out: &Path) -> Vec<Option<String>> {
    let df = read_df(&out.join("manifest.parquet"));
    let c = df
        .column("duplicate_of_batch")
        .unwrap()
        .str()
        .unwrap()
        .clone();
    c.iter().map(|s| s.map(str::to_string)).collect()
}

/// The batch names of the directories under `index/batches`, sorted.
fn batch_dirs(index: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(index.join("batches"))
        .unwrap()
        .map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().to_string();
            name.split('-').take(2).collect::<Vec<_>>().join("-")
        })
        .collect();
    v.sort();
    v
}

/// The manifest's extra column and the summary's index fields as the schemas list them.
fn check_index_schemas(out: &Path, ix: &serde_json::Value) {
    let read = |name: &str| -> serde_json::Value {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("schemas")
            .join(name);
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let df = read_df(&out.join("manifest.parquet"));
    let extra = &read("manifest.json")["index_columns"][0];
    let last = df.columns().last().unwrap();
    assert_eq!(last.name().as_str(), extra["name"].as_str().unwrap());
    assert_eq!(
        format!("{:?}", last.dtype()),
        extra["type"].as_str().unwrap()
    );
    check_fields(ix, &read("summary.json")["index_fields"]);
}

/// Drops of the ideal incremental keeper run by brute force on exact Jaccard, night by night:
/// each of night n's documents, in input order, is dropped iff it is a near-duplicate of an
/// indexed document still alive (kept or renewed within the last `window` nights; the earliest
/// such one is renewed) or of one of tonight's kept before it; else kept, and indexed.
fn ideal_drops(sets: &[Vec<u64>], sizes: &[usize], window: usize) -> Vec<usize> {
    // (document, the night it was last seen), in index order.
    let mut kept: Vec<(usize, usize)> = Vec::new();
    let mut end = 0;
    let mut drops = Vec::new();
    for (n, &size) in sizes.iter().enumerate() {
        let indexed = kept.len();
        let mut dropped = 0;
        for d in end..end + size {
            let alive = |i: usize, seen: usize| i >= indexed || seen + window >= n;
            let hit = (0..kept.len())
                .find(|&i| alive(i, kept[i].1) && near(&sets[kept[i].0], &sets[d], 0.8));
            match hit {
                Some(i) => {
                    dropped += 1;
                    if i < indexed {
                        kept[i].1 = n;
                    }
                }
                None => kept.push((d, n)),
            }
        }
        end += size;
        drops.push(dropped);
    }
    drops
}

#[test]
fn nightly_batches_drop_what_an_incremental_run_can_know() {
    let dir = temp_dir("index-nights");
    let (globs, docs) = nights(&dir);
    let index = dir.join("index");
    let mut sizes = Vec::new();
    let mut dropped_all = Vec::new();
    let mut against_earlier = 0;
    for n in 1..=4 {
        let out = dir.join(format!("out{n}"));
        night(&globs, n, &out, &index, &["--window", "4"]).ok();
        let rows = manifest(&out);
        sizes.push(rows.len());
        let batches = batches_of(&out);
        for (r, b) in rows.iter().zip(&batches) {
            // Dropped rows name their keeper's batch; kept rows none.
            assert_eq!(r.keep, b.is_none(), "{r:?}");
            if let Some(b) = b {
                let k: usize = b.trim_start_matches("night-").parse().unwrap();
                assert!(k <= n, "{r:?} dropped against a later batch {b}");
                against_earlier += usize::from(k < n);
                assert!(r.similarity.unwrap() >= 0.8 - 0.11, "{r:?}");
            }
            dropped_all.push(!r.keep);
        }
        let s = summary(&out);
        let ix = &s["index"];
        check_index_schemas(&out, ix);
        assert_eq!(
            ix["batches_added"],
            serde_json::json!([format!("night-{n}")])
        );
        assert_eq!(ix["batches"].as_array().unwrap().len(), n);
        assert!(
            ix["filter_bytes_per_document"].as_f64().unwrap() < 64.0,
            "{ix}"
        );
        let against: u64 = ix["dropped_against"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(
            against + ix["dropped_within_batch"].as_u64().unwrap(),
            s["documents_dropped"].as_u64().unwrap()
        );
        // The window's history: every night's documents and its own run's drops, tonight last,
        // and the report's table of it.
        let history = ix["history"].as_array().unwrap();
        assert_eq!(history.len(), n);
        assert_eq!(history[n - 1]["dropped"], s["documents_dropped"]);
        assert_eq!(history[n - 1]["documents"], s["documents_in"]);
        let report = std::fs::read_to_string(out.join("report.html")).unwrap();
        assert!(report.contains("Against earlier batches"));
        for b in history {
            let name = b["batch"].as_str().unwrap();
            assert!(report.contains(&format!("<tr><td>{name}</td>")), "{name}");
        }
    }
    assert!(
        against_earlier > 20,
        "only {against_earlier} drops against earlier nights"
    );
    // The drops per night are those of an ideal incremental keeper run (exact ground truth),
    // give or take LSH's misses; and precision against the ground truth of all documents stays 1.
    let texts: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
    let ideal = ideal_drops(&shingle_sets(&texts), &sizes, 4);
    let got: Vec<usize> = (1..=4)
        .map(|n| {
            manifest(&dir.join(format!("out{n}")))
                .iter()
                .filter(|r| !r.keep)
                .count()
        })
        .collect();
    let (ideal_sum, got_sum): (usize, usize) = (ideal.iter().sum(), got.iter().sum());
    assert!(
        got_sum.abs_diff(ideal_sum) * 100 <= ideal_sum,
        "{got:?} vs ideal {ideal:?}"
    );
    let (_, precision) = doc_scores(&truth_components(&texts, 0.8), &dropped_all);
    assert!(precision >= 0.99, "precision {precision}");
}

#[test]
fn the_window_expires_old_batches_exactly_and_reruns_are_idempotent() {
    let dir = temp_dir("index-window");
    let (globs, _) = nights(&dir);
    let index = dir.join("index");
    // `components`: nothing renews a batch, so each leaves exactly with the window.
    let (w1, w2) = (
        ["--window", "1", "--cluster", "components"],
        ["--window", "2", "--cluster", "components"],
    );
    for n in 1..=3 {
        night(&globs, n, &dir.join(format!("out{n}")), &index, &w1).ok();
    }
    // Window 1: night 3 was compared with night 2 only.
    let b3 = batches_of(&dir.join("out3"));
    assert!(!b3.iter().flatten().any(|b| b == "night-1"));
    assert!(b3.iter().flatten().any(|b| b == "night-2"));
    let s = summary(&dir.join("out3"));
    assert_eq!(s["index"]["compared_with"], serde_json::json!(["night-2"]));
    assert_eq!(s["index"]["batches"], serde_json::json!(["night-3"]));
    assert_eq!(
        s["index"]["batches_expired"],
        serde_json::json!(["night-2"])
    );
    // night-1's files are gone; night-2's stay (for a rerun of night 3) until the next batch.
    assert_eq!(batch_dirs(&index), ["night-2", "night-3"]);
    // Rerunning the newest batch: the same manifest, the same index.
    let head = std::fs::read(index.join("index.json")).unwrap();
    let want = manifest_bytes(&dir.join("out3"));
    night(&globs, 3, &dir.join("again"), &index, &w1).ok();
    assert!(manifest_bytes(&dir.join("again")) == want);
    assert_eq!(std::fs::read(index.join("index.json")).unwrap(), head);
    // Window 2 with night 4: night-2's files go, night 3 and 4 remain.
    night(&globs, 4, &dir.join("out4"), &index, &w2).ok();
    assert_eq!(batch_dirs(&index), ["night-3", "night-4"]);
}

/// A re-crawl through a window of one night (`--cluster keeper`): pages A0..A39 on night 1;
/// edited copies of A0..A19 and new pages B on night 2; of all of A and new pages C on night 3;
/// of A0..A19 and of B on night 4. What comes back each night stays; what did not is forgotten.
#[test]
fn a_recrawl_renews_its_keepers_past_the_window_and_the_rest_expires() {
    let dir = temp_dir("index-renewal");
    let mut rng = Rng::new(11);
    let mut page = |_| -> Vec<String> {
        (0..120)
            .map(|_| format!("w{}", rng.below(50_000)))
            .collect()
    };
    let (a, b, c): (Vec<_>, Vec<_>, Vec<_>) = (
        (0..40).map(&mut page).collect(),
        (0..20).map(&mut page).collect(),
        (0..10).map(&mut page).collect(),
    );
    // One word replaced: exact Jaccard ~0.92 with the page, ~0.84 between two such copies.
    let mut rng = Rng::new(12);
    let mut edit = |p: &Vec<String>| -> String {
        let mut p = p.clone();
        let at = rng.below(p.len());
        p[at] = format!("edit{}", rng.below(1_000_000));
        p.join(" ")
    };
    let nights: Vec<Vec<String>> = vec![
        a.iter().map(|p| p.join(" ")).collect(),
        a[..20]
            .iter()
            .map(&mut edit)
            .chain(b.iter().map(|p| p.join(" ")))
            .collect(),
        a.iter()
            .map(&mut edit)
            .chain(c.iter().map(|p| p.join(" ")))
            .collect(),
        a[..20].iter().chain(&b).map(&mut edit).collect(),
    ];
    let index = dir.join("index");
    let mut globs = Vec::new();
    let mut all: Vec<&str> = Vec::new();
    let mut got = Vec::new();
    for (n, texts) in nights.iter().enumerate() {
        let n = n + 1;
        globs.push(night_shard(&dir, n, texts.clone()));
        let out = dir.join(format!("out{n}"));
        night(&globs, n, &out, &index, &["--window", "1"]).ok();
        got.push(manifest(&out).iter().filter(|r| !r.keep).count());
        all.extend(texts.iter().map(String::as_str));
    }
    let sizes: Vec<usize> = nights.iter().map(Vec::len).collect();
    let ideal = ideal_drops(&shingle_sets(&all), &sizes, 1);
    assert_eq!(ideal, [0, 20, 20, 20]);
    assert_eq!(got, ideal);
    // Night 3 dropped A0..A19 against night 1, which night 2 had renewed; A20..A39 came back
    // after a night away and were kept again.
    let b3 = batches_of(&dir.join("out3"));
    assert!(b3.iter().flatten().all(|b| b == "night-1"), "{b3:?}");
    let ix = |n: usize| summary(&dir.join(format!("out{n}")))["index"].clone();
    assert_eq!(ix(2)["renewed"], serde_json::json!({"night-1": 20}));
    assert_eq!(ix(2)["lingering"], serde_json::json!(["night-1"]));
    assert_eq!(ix(2)["documents_indexed"], 40); // B, and A0..A19 of night 1
                                                // After night 3: its 30 kept pages and night 1's 20 renewed ones; night 2 (B) expired.
    assert_eq!(ix(3)["batches_expired"], serde_json::json!(["night-2"]));
    assert_eq!(ix(3)["documents_indexed"], 50);
    let report = std::fs::read_to_string(dir.join("out3").join("report.html")).unwrap();
    assert!(report.contains("<tr><td>night-1 (lingering)</td>"));
    report_rebuilds_in_slices(&dir.join("out3"));
    // Night 4: B was forgotten (kept again); A0..A19 renewed once more.
    assert_eq!(ix(4)["lingering"], serde_json::json!(["night-1"]));
    assert_eq!(ix(4)["documents_indexed"], 40);
    assert_eq!(batch_dirs(&index), ["night-1", "night-3", "night-4"]);
    // A rerun of night 4: the same manifest and head.
    let head = std::fs::read(index.join("index.json")).unwrap();
    let want = manifest_bytes(&dir.join("out4"));
    night(&globs, 4, &dir.join("again"), &index, &["--window", "1"]).ok();
    assert!(manifest_bytes(&dir.join("again")) == want);
    assert_eq!(std::fs::read(index.join("index.json")).unwrap(), head);
}

#[test]
fn older_names_other_settings_and_a_busy_index_are_refused() {
    let dir = temp_dir("index-refused");
    let (globs, _) = nights(&dir);
    let index = dir.join("index");
    night(&globs, 1, &dir.join("o1"), &index, &[]).ok();
    night(&globs, 2, &dir.join("o2"), &index, &[]).ok();
    let e = night(&globs, 1, &dir.join("x"), &index, &[]).fails();
    assert!(
        e.contains("'night-1' is already in the index and is not its newest batch ('night-2')"),
        "{e}"
    );
    let e = run_cmd(&globs[2], &dir.join("x"), &["--batch", "night-0"])
        .arg("--index")
        .arg(&index)
        .fails();
    assert!(
        e.contains("sorts before the index's newest batch 'night-2'"),
        "{e}"
    );
    let e = night(
        &globs,
        3,
        &dir.join("x"),
        &index,
        &["--num-perm", "64", "--bands", "18", "--rows", "3"],
    )
    .fails();
    assert!(
        e.contains("built with --num-perm 128, this run has --num-perm 64"),
        "{e}"
    );
    let e = night(&globs, 3, &dir.join("x"), &index, &["--method", "simhash"]).fails();
    assert!(e.contains("--method \"minhash\""), "{e}");
    let e = run_cmd(&globs[2], &dir.join("x"), &[])
        .arg("--index")
        .arg(&index)
        .fails();
    assert!(e.contains("--index needs --batch"), "{e}");
    // Refused before anything was written to the output.
    assert!(!dir.join("x").exists());
    // A run holding the lock (here: this test process) makes another fail at once.
    let lock = corpus_dedup::testing::IndexLock::acquire(index.to_str().unwrap()).unwrap();
    let e = night(&globs, 3, &dir.join("x"), &index, &[]).fails();
    let me = format!("is in use by pid {} on ", std::process::id());
    assert!(e.contains(&me), "{e}");
    drop(lock);
    // A lock file left by a dead process (no lock held on it) is taken over.
    std::fs::write(
        index.join("LOCK"),
        "pid 2147483000 on elsewhere since 2026-01-01T00:00:00Z",
    )
    .unwrap();
    night(&globs, 3, &dir.join("o3"), &index, &[]).ok();
}

#[test]
fn a_damaged_index_file_is_named_and_nothing_is_written() {
    let dir = temp_dir("index-damaged");
    let (globs, _) = nights(&dir);
    let index = dir.join("index");
    night(&globs, 1, &dir.join("o1"), &index, &[]).ok();
    let batch: PathBuf = std::fs::read_dir(index.join("batches"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    for (file, cut) in [("bands/b003.bin.meta", false), ("docs.bin", true)] {
        let p = batch.join(file);
        let good = std::fs::read(&p).unwrap();
        let mut bad = good.clone();
        if cut {
            bad.truncate(bad.len() / 2);
        } else {
            bad[40] ^= 0x10;
        }
        std::fs::write(&p, &bad).unwrap();
        let out = dir.join("o2");
        let e = night(&globs, 2, &out, &index, &[]).fails();
        assert!(e.contains(file) && e.contains("is damaged"), "{e}");
        assert!(!out.join("manifest.parquet").exists());
        std::fs::write(&p, &good).unwrap();
    }
    night(&globs, 2, &dir.join("o2"), &index, &[]).ok();
}

#[test]
fn kill_9_around_the_index_commit_then_rerun_gives_the_same_manifest_and_index() {
    let dir = temp_dir("index-crash");
    let (globs, _) = nights(&dir);
    let reference = dir.join("ref-index");
    night(&globs, 1, &dir.join("r1"), &reference, &[]).ok();
    night(&globs, 2, &dir.join("r2"), &reference, &[]).ok();
    let want = manifest_bytes(&dir.join("r2"));
    let head = std::fs::read_to_string(reference.join("index.json")).unwrap();
    for at in ["lookup:0", "index:0", "index-commit:0", "merge:0"] {
        let index = dir.join(format!("ix-{}", at.replace(':', "-")));
        night(&globs, 1, &dir.join("a1"), &index, &[]).ok();
        let out = dir.join(format!("o-{}", at.replace(':', "-")));
        night(&globs, 2, &out, &index, &[]).killed_at(at);
        night(&globs, 2, &out, &index, &[]).ok();
        assert!(manifest_bytes(&out) == want, "after a kill in {at}");
        let got = std::fs::read_to_string(index.join("index.json")).unwrap();
        assert_eq!(got, head, "index head after a kill in {at}");
    }
}

#[test]
fn simhash_batches_share_the_first_batchs_feature_filter() {
    let dir = temp_dir("index-simhash");
    let (globs, _) = nights(&dir);
    let index = dir.join("index");
    let sim = ["--method", "simhash", "--simhash-df-sample", "100"];
    night(&globs, 1, &dir.join("o1"), &index, &sim).ok();
    assert!(index.join("frequencies.bin").exists());
    let o = night(&globs, 2, &dir.join("o2"), &index, &sim).ok();
    let _ = o;
    let s = summary(&dir.join("o2"));
    assert!(
        s["index"]["dropped_against"]["night-1"].as_u64().unwrap() > 5,
        "{s}"
    );
    // The second night sampled nothing: its stages start at the signatures.
    let names: Vec<&str> = s["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["stage"].as_str().unwrap())
        .collect();
    assert_eq!(names[0], "signatures", "{names:?}");
}

#[test]
fn exact_copies_are_counted_without_an_index() {
    let dir = temp_dir("index-exact");
    let (glob, docs) = three_shards(&dir);
    let out = dir.join("out");
    run_ok(&glob, &out, &[]);
    let exact = docs
        .iter()
        .filter(|d| d.kind == corpus_dedup::synth::Kind::Exact)
        .count() as u64;
    let s = summary(&out);
    assert!(s["exact_duplicates"].as_u64().unwrap() >= exact, "{s}");
    // No index: the manifest has no duplicate_of_batch column.
    let df = read_df(&out.join("manifest.parquet"));
    assert!(df.column("duplicate_of_batch").is_err());
}

#[test]
fn index_status_and_verify_say_what_the_index_holds_and_name_each_damaged_file() {
    let dir = temp_dir("index-inspect");
    let (globs, _) = nights(&dir);
    let index = dir.join("index");
    let mut kept = 0;
    for n in 1..=2 {
        let out = dir.join(format!("o{n}"));
        night(&globs, n, &out, &index, &[]).ok();
        kept += manifest(&out).iter().filter(|r| r.keep).count();
    }
    let inspect = |what: &str| cd(["index", what, "--json", "--index"]).arg(&index);
    let status: serde_json::Value = serde_json::from_slice(&inspect("status").ok().stdout).unwrap();
    assert_eq!(status["live_documents"], kept);
    assert_eq!(status["newest_batch"], "night-2");
    assert_eq!(status["batches"].as_array().unwrap().len(), 2);
    assert!(status["bytes_on_disk_per_live_document"].as_f64().unwrap() > 0.0);
    let text = cd(["index", "status", "--index"]).arg(&index).ok();
    assert!(String::from_utf8_lossy(&text.stdout).contains("night-1"));
    let verified: serde_json::Value =
        serde_json::from_slice(&inspect("verify").ok().stdout).unwrap();
    assert_eq!(verified["damaged"].as_array().unwrap().len(), 0);
    assert!(verified["files"].as_u64().unwrap() > 20);
    // A flipped byte in one batch and a file cut short in the other: both named, exit 1.
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(index.join("batches"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    let (docs, copies) = (dirs[0].join("docs.bin"), dirs[1].join("copies.bin"));
    let (good_docs, good_copies) = (
        std::fs::read(&docs).unwrap(),
        std::fs::read(&copies).unwrap(),
    );
    let mut bad = good_docs.clone();
    let at = bad.len() / 2;
    bad[at] ^= 0x40;
    std::fs::write(&docs, &bad).unwrap();
    std::fs::write(&copies, &good_copies[..good_copies.len() - 1]).unwrap();
    let o = cd(["index", "verify", "--index"]).arg(&index).output();
    assert_eq!(o.status.code(), Some(1));
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        said.contains("batch night-1")
            && said.contains("docs.bin")
            && said.contains("fails its checksum"),
        "{said}"
    );
    assert!(
        said.contains("batch night-2") && said.contains("copies.bin"),
        "{said}"
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("2 damaged file(s)"));
    std::fs::write(&docs, &good_docs).unwrap();
    std::fs::write(&copies, &good_copies).unwrap();
    cd(["index", "verify", "--index"]).arg(&index).ok();
    // No index there: named.
    let e = cd(["index", "status", "--index"])
        .arg(dir.join("none"))
        .fails();
    assert!(e.contains("no index here"), "{e}");
}

#[test]
fn index_remove_forgets_a_damaged_batch_and_the_next_night_runs() {
    let dir = temp_dir("index-remove");
    let (globs, _) = nights(&dir);
    let index = dir.join("index");
    for n in 1..=2 {
        night(&globs, n, &dir.join(format!("o{n}")), &index, &[]).ok();
    }
    let held2 = manifest(&dir.join("o2")).iter().filter(|r| r.keep).count();
    // A damaged file of night 2: the run names the batch and offers to remove it.
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(index.join("batches"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    let docs = dirs[1].join("docs.bin");
    let mut bad = std::fs::read(&docs).unwrap();
    bad.truncate(bad.len() / 2);
    std::fs::write(&docs, &bad).unwrap();
    let e = night(&globs, 3, &dir.join("o3"), &index, &[]).fails();
    assert!(
        e.contains("index remove --index") && e.contains("--batch night-2"),
        "{e}"
    );
    let remove = |batch: &str| cd(["index", "remove", "--batch", batch, "--index"]).arg(&index);
    let done: serde_json::Value = serde_json::from_slice(&remove("night-2").ok().stdout).unwrap();
    assert_eq!(done["documents_forgotten"], held2);
    assert!(!dirs[1].exists(), "its files are deleted");
    // The next night runs against night 1 only; rerunning night 1, now the newest, is refused.
    night(&globs, 3, &dir.join("o3"), &index, &[]).ok();
    let against: Vec<String> = manifest(&dir.join("o3"))
        .iter()
        .filter_map(|r| r.duplicate_of.clone())
        .collect();
    assert!(!against.is_empty());
    let s = summary(&dir.join("o3"));
    assert!(
        s["index"]["dropped_against"].get("night-2").is_none(),
        "{s}"
    );
    let status: serde_json::Value = serde_json::from_slice(
        &cd(["index", "status", "--json", "--index"])
            .arg(&index)
            .ok()
            .stdout,
    )
    .unwrap();
    let names: Vec<&str> = status["batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["batch"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["night-1", "night-3"]);
    remove("night-3").ok();
    let e = night(&globs, 1, &dir.join("o1b"), &index, &[]).fails();
    assert!(e.contains("cannot be rerun"), "{e}");
    let e = remove("night-9").fails();
    assert!(
        e.contains("no batch 'night-9'") && e.contains("night-1"),
        "{e}"
    );
    cd(["index", "verify", "--index"]).arg(&index).ok();
}

/// A re-crawl stream: each night 30 new pages and one-word edits of 12 pages drawn from all
/// earlier nights; its globs (one shard a night).
pub(crate) fn recrawl_stream(dir: &Path, nights: usize) -> Vec<String> {
    let mut rng = Rng::new(21);
    let mut pages: Vec<Vec<String>> = Vec::new();
    let mut globs = Vec::new();
    for n in 1..=nights {
        let mut texts: Vec<String> = Vec::new();
        for _ in 0..12.min(pages.len()) {
            let mut p = pages[rng.below(pages.len())].clone();
            let at = rng.below(p.len());
            p[at] = format!("edit{}", rng.below(1_000_000));
            texts.push(p.join(" "));
        }
        for _ in 0..30 {
            let p: Vec<String> = (0..120)
                .map(|_| format!("w{}", rng.below(50_000)))
                .collect();
            texts.push(p.join(" "));
            pages.push(p);
        }
        globs.push(night_shard(dir, n, texts));
    }
    globs
}

/// Night `n`'s shard of `texts` (ids `nN-I`) in `dir/inN/`; returns its glob.
fn night_shard(dir: &Path, n: usize, texts: Vec<String>) -> String {
    let docs: Vec<Doc> = (texts.into_iter().enumerate())
        .map(|(i, text)| Doc {
            id: format!("n{n}-{i}"),
            text,
            source: 0,
            kind: corpus_dedup::synth::Kind::Base,
        })
        .collect();
    let input = dir.join(format!("in{n}"));
    std::fs::create_dir_all(&input).unwrap();
    write_docs(&input.join("s.parquet"), &docs);
    format!("{}/*.parquet", input.display())
}

#[test]
fn lingering_batches_are_compacted_with_the_decisions_of_an_uncompacted_index() {
    let dir = temp_dir("index-compact");
    let globs = recrawl_stream(&dir, 7);
    let window = ["--window", "1"];
    let rows = |out: &Path| format!("{:?}", manifest(out));
    let (plain, packed) = (dir.join("plain"), dir.join("packed"));
    let mut heads = Vec::new();
    let mut compacted = 0;
    for n in 1..=globs.len() {
        let (a, b) = (dir.join(format!("a{n}")), dir.join(format!("b{n}")));
        night(&globs, n, &a, &plain, &window)
            .env("CORPUS_DEDUP_COMPACT", "never")
            .ok();
        night(&globs, n, &b, &packed, &window).ok();
        assert_eq!(rows(&a), rows(&b), "night {n}");
        heads.push(std::fs::read(packed.join("index.json")).unwrap());
        let c = summary(&b)["index"]["compacted"].as_array().unwrap().len();
        if c > 0 {
            let schema: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(
                    Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/summary.json"),
                )
                .unwrap(),
            )
            .unwrap();
            let first = &summary(&b)["index"]["compacted"][0];
            check_fields(first, &schema["compacted_fields"]);
            assert!(first["documents_after"].as_u64() < first["documents_before"].as_u64());
        }
        compacted += c;
        if c > 0 {
            // Verify reads the compacted files; status counts their live documents.
            let v = cd(["index", "verify", "--json", "--index"])
                .arg(&packed)
                .ok();
            let v: serde_json::Value = serde_json::from_slice(&v.stdout).unwrap();
            assert_eq!(v["damaged"], serde_json::json!([]), "{v}");
        }
    }
    assert!(compacted >= 3, "{compacted} compactions");
    // The same nights as tasks by hand (plan, then each stage's tasks): the same decisions and
    // compactions.
    let tasked = dir.join("tasked");
    for n in 1..=globs.len() {
        let (out, work) = (dir.join(format!("t{n}")), dir.join(format!("tw{n}")));
        let batch = format!("night-{n}");
        let index = tasked.to_str().unwrap();
        let flags = ["--index", index, "--batch", &batch, "--window", "1"];
        crate::tasks::by_hand(&globs[n - 1], &work, &out, &flags);
        assert_eq!(
            rows(&out),
            rows(&dir.join(format!("b{n}"))),
            "night {n} as tasks"
        );
        let compacted = |o: &Path| summary(o)["index"]["compacted"].clone();
        assert_eq!(compacted(&out), compacted(&dir.join(format!("b{n}"))));
    }
    let status = |ix: &Path| -> serde_json::Value {
        serde_json::from_slice(
            &cd(["index", "status", "--json", "--index"])
                .arg(ix)
                .ok()
                .stdout,
        )
        .unwrap()
    };
    let (p, q) = (status(&plain), status(&packed));
    assert_eq!(p["live_documents"], q["live_documents"]);
    let bytes = |s: &serde_json::Value| s["bytes_on_disk"].as_u64().unwrap();
    assert!(
        bytes(&q) * 4 < bytes(&p) * 3,
        "{} vs {}",
        bytes(&q),
        bytes(&p)
    );
    // Export reads the compacted batches' ids and copies as it read them whole.
    let export = |ix: &Path, to: &str| {
        let file = dir.join(to);
        cd(["index", "export", "--index"])
            .arg(ix)
            .arg("--output")
            .arg(&file)
            .ok();
        read_df(&file)
    };
    let (p, q) = (export(&plain, "p.parquet"), export(&packed, "q.parquet"));
    assert!(p.height() > 20 && p.equals(&q), "{p:?} {q:?}");
    // A rerun of the last night on the compacted index: the same manifest and head.
    let last = globs.len();
    night(&globs, last, &dir.join("again"), &packed, &window).ok();
    assert_eq!(
        rows(&dir.join("again")),
        rows(&dir.join(format!("b{last}")))
    );
    assert_eq!(
        std::fs::read(packed.join("index.json")).unwrap(),
        heads[last - 1]
    );
    // Killed after writing a compaction and before the head names it: the rerun finishes it.
    let first = (1..=last)
        .find(|n| {
            summary(&dir.join(format!("b{n}")))["index"]["compacted"] != serde_json::json!([])
        })
        .unwrap();
    let crashed = dir.join("crashed");
    for n in 1..first {
        night(&globs, n, &dir.join(format!("c{n}")), &crashed, &window).ok();
    }
    let out = dir.join(format!("c{first}"));
    night(&globs, first, &out, &crashed, &window).killed_at("index-compact:0");
    night(&globs, first, &out, &crashed, &window).ok();
    assert_eq!(rows(&out), rows(&dir.join(format!("b{first}"))));
    assert_eq!(
        std::fs::read(crashed.join("index.json")).unwrap(),
        heads[first - 1]
    );
}
