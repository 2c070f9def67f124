//! Dedup as a signal: `cluster_size` on every row, `--partition-by` equal to one run per value
//! (locally, as tasks by hand and through the index), `--across` equal to its rule on exact
//! truth, and the bad input these options can meet.

use std::collections::HashMap;
use std::path::Path;

use polars::prelude::*;

use crate::common::*;
use crate::tasks::by_hand;
use corpus_dedup::synth::{generate, Doc, Lang};

/// A label per document, cycling through three values and null, so that planted near-duplicates
/// land both in one value and across values.
fn label(i: usize) -> Option<&'static str> {
    [Some("en"), Some("web"), None, Some("en"), Some("books")][i % 5]
}

/// Writes `docs` as one shard with id, text and a `src` label column (and an integer `n` and a
/// float `f` column for the type checks); returns its glob.
fn labelled_shard(dir: &Path, name: &str, docs: &[(&Doc, Option<&str>)]) -> String {
    let id: Vec<&str> = docs.iter().map(|(d, _)| d.id.as_str()).collect();
    let text: Vec<&str> = docs.iter().map(|(d, _)| d.text.as_str()).collect();
    let src: Vec<Option<&str>> = docs.iter().map(|(_, l)| *l).collect();
    let n: Vec<i64> = (0..docs.len() as i64).map(|i| i % 2).collect();
    let f: Vec<f64> = (0..docs.len()).map(|i| i as f64 / 2.0).collect();
    let extra = vec![
        Column::new("src".into(), src),
        Column::new("n".into(), n),
        Column::new("f".into(), f),
    ];
    write_shard(&dir.join(name), &id, &text, extra)
}

/// English, mixed and Chinese documents with planted near-duplicates.
fn corpus() -> Vec<Doc> {
    let en = generate(160, Lang::En, 31, "en");
    let mixed = generate(100, Lang::Mixed, 33, "mx");
    let zh = generate(120, Lang::Zh, 32, "zh");
    en.into_iter().chain(mixed).chain(zh).collect()
}

/// Each row's cluster size: a kept row counts itself and the rows dropped against it, a dropped
/// row carries its keeper's.
fn check_cluster_sizes(rows: &[Row]) {
    let mut drops: HashMap<&str, u32> = HashMap::new();
    for r in rows.iter().filter(|r| !r.keep) {
        *drops.entry(r.duplicate_of.as_deref().unwrap()).or_default() += 1;
    }
    let of: HashMap<&str, &Row> = rows.iter().map(|r| (r.id.as_str(), r)).collect();
    for r in rows {
        let keeper = r.duplicate_of.as_deref().unwrap_or(&r.id);
        let want = 1 + drops.get(keeper).copied().unwrap_or(0);
        assert_eq!(r.cluster_size, Some(want), "{r:?}");
        assert_eq!(of[keeper].cluster_size, Some(want));
    }
}

#[test]
fn cluster_size_counts_the_kept_document_and_its_drops() {
    let dir = temp_dir("signals-size");
    let (glob, _) = three_shards(&dir.join("in"));
    for rule in ["keeper", "components"] {
        let out = dir.join(rule);
        run_ok(&glob, &out, &["--cluster", rule]);
        let rows = manifest(&out);
        assert!(rows.iter().any(|r| r.cluster_size.unwrap() > 2));
        check_cluster_sizes(&rows);
    }
}

#[test]
fn partition_by_equals_one_run_per_value() {
    let dir = temp_dir("signals-partition");
    let docs = corpus();
    let labelled: Vec<(&Doc, Option<&str>)> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| (d, label(i)))
        .collect();
    // Two shards, so that a value's documents span files and parts.
    let half = labelled.len() / 2;
    let input = dir.join("in");
    labelled_shard(&input, "a.parquet", &labelled[..half]);
    let glob = labelled_shard(&input, "b.parquet", &labelled[half..]);
    let out = dir.join("partitioned");
    run_ok(&glob, &out, &["--partition-by", "src", "--tasks", "2"]);
    let together = manifest(&out);
    check_cluster_sizes(&together);
    let by_id: HashMap<&str, &Row> = together.iter().map(|r| (r.id.as_str(), r)).collect();
    // Without the partition some documents are dropped against another value's.
    let plain = dir.join("plain");
    run_ok(&glob, &plain, &[]);
    assert!(
        manifest(&plain).iter().filter(|r| !r.keep).count()
            > by_id.values().filter(|r| !r.keep).count()
    );

    let mut compared = 0;
    for value in [Some("en"), Some("web"), None, Some("books")] {
        let name = value.unwrap_or("null");
        let part: Vec<(&Doc, Option<&str>)> = labelled
            .iter()
            .copied()
            .filter(|(_, l)| *l == value)
            .collect();
        let glob = labelled_shard(&dir.join(format!("in-{name}")), "s.parquet", &part);
        let alone = dir.join(format!("alone-{name}"));
        run_ok(&glob, &alone, &[]);
        for r in manifest(&alone) {
            let t = by_id[r.id.as_str()];
            assert_eq!(
                (t.keep, &t.duplicate_of),
                (r.keep, &r.duplicate_of),
                "{name}: {r:?} {t:?}"
            );
            assert_eq!(t.cluster_size, r.cluster_size, "{name}: {r:?}");
            compared += 1;
        }
    }
    assert_eq!(compared, docs.len());
    // The report breaks drop rates down by the partition column.
    let s = summary(&out);
    assert_eq!(s["config"]["partition_by"], "src");
    assert!(std::fs::read_to_string(out.join("report.html"))
        .unwrap()
        .contains("books"));

    // The same as tasks by hand (what Ray and Slurm run), and with an integer column.
    let (work, by_tasks) = (dir.join("work"), dir.join("by-tasks"));
    by_hand(&glob, &work, &by_tasks, &["--partition-by", "src"]);
    let again = dir.join("again");
    run_ok(
        &glob,
        &again,
        &[
            "--partition-by",
            "src",
            "--tasks",
            "3",
            "--bucket-ranges",
            "2",
            "--threads",
            "1",
        ],
    );
    assert!(manifest_bytes(&by_tasks) == manifest_bytes(&again));
    let ints = dir.join("ints");
    run_ok(&glob, &ints, &["--partition-by", "n"]);
    check_cluster_sizes(&manifest(&ints));
}

/// The rule of `--across` on exact truth: documents in input order, each dropped iff a kept
/// earlier document of another value is a near-duplicate of it (exact Jaccard >= 0.8).
fn across_ideal(texts: &[&str], labels: &[Option<&str>]) -> Vec<bool> {
    let sets = shingle_sets(texts);
    let mut kept: Vec<usize> = Vec::new();
    let mut keep = vec![false; texts.len()];
    for d in 0..texts.len() {
        let dropped = kept
            .iter()
            .any(|&k| labels[k] != labels[d] && near(&sets[k], &sets[d], 0.8));
        if !dropped {
            kept.push(d);
            keep[d] = true;
        }
    }
    keep
}

#[test]
fn across_drops_only_against_another_value() {
    let dir = temp_dir("signals-across");
    let mut docs = corpus();
    // Exact copies: of one value (both kept) and of another (dropped).
    let copy = |d: &Doc, id: &str| Doc {
        id: id.into(),
        ..d.clone()
    };
    docs.push(copy(&docs[0], "copy-same"));
    docs.push(copy(&docs[1], "copy-other"));
    let mut labels: Vec<Option<&str>> = (0..docs.len()).map(label).collect();
    let n = labels.len();
    (labels[n - 2], labels[n - 1]) = (label(0), Some("elsewhere"));
    let labelled: Vec<(&Doc, Option<&str>)> = docs.iter().zip(labels.iter().copied()).collect();
    let glob = labelled_shard(&dir.join("in"), "s.parquet", &labelled);
    let out = dir.join("across");
    run_ok(&glob, &out, &["--across", "src", "--verify", "exact"]);
    let rows = manifest(&out);
    check_cluster_sizes(&rows);
    let of = positions(&rows);
    for (i, r) in rows.iter().enumerate() {
        if let Some(k) = &r.duplicate_of {
            assert_ne!(
                labels[of[k.as_str()]],
                labels[i],
                "{r:?} dropped against its own value"
            );
        }
    }
    assert!(rows[n - 2].keep, "a copy of the same value is kept");
    assert_eq!(
        rows[n - 1].duplicate_of.as_deref(),
        Some(docs[1].id.as_str())
    );
    let texts: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
    let ideal = across_ideal(&texts, &labels);
    let keep: Vec<bool> = rows.iter().map(|r| r.keep).collect();
    assert_eq!(keep, ideal);
    assert!(keep.iter().filter(|k| !**k).count() > 10);

    // A ranking of the values decides which copy survives: a drop's keeper ranks ahead of it
    // (values not listed, then null, come last).
    let ranked = dir.join("ranked");
    run_ok(
        &glob,
        &ranked,
        &["--across", "src", "--keep", "src=books,web,en"],
    );
    let rank = |l: Option<&str>| match l {
        Some("books") => 0,
        Some("web") => 1,
        Some("en") => 2,
        Some(_) => 3,
        None => 4,
    };
    let rows = manifest(&ranked);
    assert!(rows.iter().filter(|r| !r.keep).count() > 10);
    for (i, r) in rows.iter().enumerate() {
        if let Some(k) = &r.duplicate_of {
            assert!(rank(labels[of[k.as_str()]]) < rank(labels[i]), "{r:?}");
        }
    }
    let err = run_cmd(&glob, &dir.join("bad"), &["--keep", "src=a,,b"]).fails();
    assert!(err.contains("COLUMN=VALUE,VALUE"), "{err}");
    let err = run_cmd(&glob, &dir.join("bad"), &["--keep", "f=a,b"]).fails();
    assert!(
        err.contains("column 'f'") && err.contains("--keep COLUMN=v1,v2"),
        "{err}"
    );

    // With --partition-by too: only across values within each partition; and as tasks.
    let both = dir.join("both");
    run_ok(&glob, &both, &["--across", "src", "--partition-by", "n"]);
    let rows = manifest(&both);
    for (i, r) in rows.iter().enumerate() {
        if let Some(k) = &r.duplicate_of {
            let k = of[k.as_str()];
            assert!(labels[k] != labels[i] && k % 2 == i % 2, "{r:?}");
        }
    }
    let (work, by_tasks) = (dir.join("work"), dir.join("by-tasks"));
    by_hand(
        &glob,
        &work,
        &by_tasks,
        &["--across", "src", "--partition-by", "n"],
    );
    assert!(manifest_bytes(&by_tasks) == manifest_bytes(&both));
}

#[test]
fn partition_by_through_the_index_compares_one_value_with_itself() {
    let dir = temp_dir("signals-index");
    let docs = generate(80, Lang::En, 41, "n1");
    let index = dir.join("index");
    let night1: Vec<(&Doc, Option<&str>)> = docs.iter().map(|d| (d, Some("en"))).collect();
    let glob1 = labelled_shard(&dir.join("night1"), "s.parquet", &night1);
    let flags = |batch: &'static str| -> Vec<String> {
        [
            "--partition-by",
            "src",
            "--index",
            index.to_str().unwrap(),
            "--batch",
            batch,
        ]
        .map(String::from)
        .to_vec()
    };
    let f1 = flags("2026-11-01");
    let f1: Vec<&str> = f1.iter().map(String::as_str).collect();
    run_ok(&glob1, &dir.join("out1"), &f1);
    // Night 2: copies of night 1's first kept documents under the same value and another one.
    let (kept, sizes): (Vec<&Doc>, Vec<u32>) = docs
        .iter()
        .zip(manifest(&dir.join("out1")))
        .filter(|(_, r)| r.keep)
        .map(|(d, r)| (d, r.cluster_size.unwrap()))
        .take(10)
        .unzip();
    let copies: Vec<Doc> = kept
        .iter()
        .enumerate()
        .map(|(i, d)| Doc {
            id: format!("copy{i}"),
            ..(*d).clone()
        })
        .collect();
    let night2: Vec<(&Doc, Option<&str>)> = copies
        .iter()
        .enumerate()
        .map(|(i, d)| (d, Some(if i % 2 == 0 { "en" } else { "zh" })))
        .collect();
    let glob2 = labelled_shard(&dir.join("night2"), "s.parquet", &night2);
    let f2 = flags("2026-11-02");
    let f2: Vec<&str> = f2.iter().map(String::as_str).collect();
    run_ok(&glob2, &dir.join("out2"), &f2);
    let rows = manifest(&dir.join("out2"));
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.keep, i % 2 == 1, "{r:?}");
        if !r.keep {
            assert_eq!(r.duplicate_of.as_deref(), Some(kept[i].id.as_str()));
            // Its copies so far: night 1's cluster, and this one.
            assert_eq!(r.cluster_size, Some(sizes[i] + 1));
        }
    }
    // An index built with another partition column (or none) is refused, naming the flag.
    let err = run_cmd(
        &glob2,
        &dir.join("out3"),
        &["--index", index.to_str().unwrap(), "--batch", "2026-11-03"],
    )
    .fails();
    assert!(err.contains("--partition-by"), "{err}");
    assert!(!dir.join("out3").exists());
}

#[test]
fn a_label_column_that_is_missing_or_not_a_label_is_refused() {
    let dir = temp_dir("signals-bad");
    let docs = generate(20, Lang::En, 5, "b");
    let labelled: Vec<(&Doc, Option<&str>)> = docs.iter().map(|d| (d, Some("x"))).collect();
    let glob = labelled_shard(&dir.join("in"), "s.parquet", &labelled);
    for flag in ["--partition-by", "--across"] {
        let out = dir.join("out");
        let err = run_cmd(&glob, &out, &[flag, "lang"]).fails();
        assert!(
            err.contains("no column 'lang'") && err.contains("s.parquet"),
            "{err}"
        );
        assert!(
            err.contains("id, text, src, n, f") && err.contains(flag),
            "{err}"
        );
        let err = run_cmd(&glob, &out, &[flag, "f"]).fails();
        assert!(
            err.contains("column 'f'") && err.contains("string, integer or boolean"),
            "{err}"
        );
        assert!(!out.exists(), "nothing is written");
    }
    for (flags, says) in [
        (["--across", "src", "--partition-by", "src"], "both 'src'"),
        (
            ["--across", "src", "--cluster", "components"],
            "--across needs --cluster keeper",
        ),
    ] {
        let err = run_cmd(&glob, &dir.join("out"), &flags).fails();
        assert!(err.contains(says), "{err}");
    }
}

/// `n` documents of 120 random words each.
fn random_texts(seed: u64, n: usize) -> Vec<String> {
    let mut rng = corpus_dedup::synth::Rng::new(seed);
    (0..n)
        .map(|_| {
            (0..120)
                .map(|_| format!("w{}", rng.below(50_000)))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// Writes `(id, text, src)` rows as one shard in `dir`; returns its glob.
fn sourced_shard(dir: &Path, rows: &[(String, String, &str)]) -> String {
    let id: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    let text: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    let src: Vec<&str> = rows.iter().map(|r| r.2).collect();
    let extra = vec![Column::new("src".into(), src)];
    write_shard(&dir.join("s.parquet"), &id, &text, extra)
}

#[test]
fn copies_across_nights_survive_the_window_and_are_exported() {
    let dir = temp_dir("signals-copies");
    let index = dir.join("index");
    let first = random_texts(7, 30);
    // Night 1: 30 new documents. Nights 2-4: 10 new ones each, and copies of night 1's first
    // five (one copy on night 2, two on night 3, one on night 4). With --window 2, night 1
    // leaves the window after night 2 and lingers for the five it keeps renewing.
    let copies_per_night = [0, 1, 2, 1];
    let mut size_after = 1;
    for (night, &copies) in copies_per_night.iter().enumerate() {
        let mut rows: Vec<(String, String)> = match night {
            0 => first
                .iter()
                .enumerate()
                .map(|(i, t)| (format!("n1-{i}"), t.clone()))
                .collect(),
            _ => random_texts(100 + night as u64, 10)
                .into_iter()
                .enumerate()
                .map(|(i, t)| (format!("n{}-{i}", night + 1), t))
                .collect(),
        };
        for c in 0..copies {
            for (i, t) in first.iter().take(5).enumerate() {
                rows.push((format!("n{}-copy{c}-of-{i}", night + 1), t.clone()));
            }
        }
        let rows: Vec<(String, String, &str)> =
            rows.into_iter().map(|(i, t)| (i, t, "x")).collect();
        let glob = sourced_shard(&dir.join(format!("in{night}")), &rows);
        let out = dir.join(format!("out{night}"));
        let batch = format!("2026-11-0{}", night + 1);
        run_ok(
            &glob,
            &out,
            &[
                "--index",
                index.to_str().unwrap(),
                "--batch",
                &batch,
                "--window",
                "2",
            ],
        );
        size_after += copies;
        for r in manifest(&out).iter().filter(|r| r.id.contains("copy")) {
            assert!(!r.keep);
            assert_eq!(
                r.cluster_size,
                Some(size_after as u32),
                "night {}: {r:?}",
                night + 1
            );
            assert_eq!(r.duplicate_of.as_deref().unwrap()[..3].to_string(), "n1-");
        }
    }
    // The summary and the report name the documents seen most often.
    let last = dir.join("out3");
    let top = &summary(&last)["index"]["most_copied"];
    assert_eq!(top.as_array().unwrap().len(), 5);
    assert_eq!(
        (top[0]["batch"].as_str(), top[0]["copies"].as_u64()),
        (Some("2026-11-01"), Some(5))
    );
    let html = std::fs::read_to_string(last.join("report.html")).unwrap();
    assert!(html.contains("Seen most often across nights") && html.contains("n1-0"));
    let export = dir.join("exported/copies.parquet");
    let line = cd([
        "index",
        "export",
        "--index",
        index.to_str().unwrap(),
        "--output",
    ])
    .arg(&export)
    .ok();
    let line: serde_json::Value = serde_json::from_slice(&line.stdout).unwrap();
    let df = read_df(&export);
    assert_eq!(line["documents"], df.height());
    // Live: night 1's five renewed documents (lingering), and nights 3 and 4 (the window).
    assert_eq!(df.height(), 5 + 10 + 10);
    let ids = str_column(&df, "id");
    let batch = str_column(&df, "batch");
    let latest = str_column(&df, "latest_batch");
    let copies = u32_column(&df, "copies");
    for i in 0..df.height() {
        match ids[i].strip_prefix("n1-") {
            Some(_) => {
                assert_eq!(
                    (batch[i], copies[i], latest[i]),
                    ("2026-11-01", 5, "2026-11-04"),
                    "{}",
                    ids[i]
                );
            }
            None => {
                assert_eq!(copies[i], 1);
                assert_eq!(batch[i], latest[i]);
            }
        }
    }
    // No index there: named.
    let err = cd(["index", "export", "--index"])
        .arg(dir.join("nothing"))
        .arg("--output")
        .arg(dir.join("x.parquet"))
        .fails();
    assert!(err.contains("no index here"), "{err}");
}

#[test]
fn across_through_the_index_drops_only_against_another_value() {
    let dir = temp_dir("signals-across-index");
    let index = dir.join("index");
    let texts = random_texts(21, 20);
    let night = |n: usize, rows: &[(String, String, &str)]| {
        let glob = sourced_shard(&dir.join(format!("in{n}")), rows);
        let out = dir.join(format!("out{n}"));
        let batch = format!("2026-12-0{n}");
        run_ok(
            &glob,
            &out,
            &[
                "--across",
                "src",
                "--index",
                index.to_str().unwrap(),
                "--batch",
                &batch,
            ],
        );
        manifest(&out)
    };
    let first: Vec<(String, String, &str)> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("a{i}"), t.clone(), "a"))
        .collect();
    assert!(night(1, &first).iter().all(|r| r.keep));
    // Night 2: copies of night 1 from the same source (kept), from another (dropped), and a
    // near copy from another (one word changed: found through the bands, not the exact table).
    let mut edited = texts[5].clone();
    edited.replace_range(0..edited.find(' ').unwrap(), "changed");
    let second = vec![
        ("same0".to_string(), texts[0].clone(), "a"),
        ("same1".to_string(), texts[1].clone(), "a"),
        ("other2".to_string(), texts[2].clone(), "b"),
        ("other3".to_string(), texts[3].clone(), "b"),
        ("near5".to_string(), edited, "b"),
    ];
    let rows = night(2, &second);
    let got: Vec<(bool, Option<&str>)> = rows
        .iter()
        .map(|r| (r.keep, r.duplicate_of.as_deref()))
        .collect();
    assert_eq!(
        got,
        [
            (true, None),
            (true, None),
            (false, Some("a2")),
            (false, Some("a3")),
            (false, Some("a5"))
        ]
    );
    // Night 3: source a's copy of a0 is kept again (night 2 kept one of a too); c's is dropped
    // against the earliest, night 1's.
    let third = vec![
        ("again0".to_string(), texts[0].clone(), "a"),
        ("c0".to_string(), texts[0].clone(), "c"),
    ];
    let rows = night(3, &third);
    assert!(rows[0].keep);
    assert_eq!(rows[1].duplicate_of.as_deref(), Some("a0"));
    // The index records the column.
    let err = run_cmd(
        &sourced_shard(&dir.join("in4"), &third),
        &dir.join("out4"),
        &["--index", index.to_str().unwrap(), "--batch", "2026-12-04"],
    )
    .fails();
    assert!(err.contains("--across"), "{err}");
}
