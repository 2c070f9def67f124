//! The keeper rule end to end (`--cluster keeper`, the default): a chain of edits keeps its
//! ends, a giant bucket of near copies is resolved against its kept documents as all pairs
//! would be, at any thread and task count, and the index refuses to mix rules. The scale
//! generator's scorer (`make bench-scale`) is checked here too.

use crate::common::*;
use corpus_dedup::synth::Rng;

/// `n` distinct words from the generator.
fn words(rng: &mut Rng, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("w{}x{i}", rng.below(1000)))
        .collect()
}

/// The guarantees against exact truth: every drop's keeper is kept and its exact Jaccard with
/// the drop reaches the threshold; no two kept documents do.
fn check_guarantees(texts: &[String], rows: &[Row]) {
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let sets = shingle_sets(&refs);
    let at = positions(rows);
    for (d, r) in rows.iter().enumerate() {
        if let Some(k) = r.duplicate_of.as_deref() {
            let k = at[k];
            assert!(rows[k].keep, "{r:?}: keeper not kept");
            assert!(near(&sets[d], &sets[k], 0.8), "{r:?}: below the threshold");
        }
    }
    let kept: Vec<usize> = (0..rows.len()).filter(|&d| rows[d].keep).collect();
    for (i, &a) in kept.iter().enumerate() {
        for &b in &kept[i + 1..] {
            assert!(
                !near(&sets[a], &sets[b], 0.8),
                "kept d{a} and d{b} are near-duplicates"
            );
        }
    }
}

#[test]
fn a_chain_of_edits_keeps_its_ends() {
    // Each document is the previous one shifted by 15 words of 200: neighbours share ~86% of
    // their shingles, documents two apart ~73%. Components join all eight and keep one;
    // the rule keeps every second one, each drop next to a kept neighbour.
    let dir = temp_dir("keeper-chain");
    let all = words(&mut Rng::new(3), 320);
    let texts: Vec<String> = (0..8)
        .map(|i| all[i * 15..i * 15 + 200].join(" "))
        .collect();
    let glob = text_shard(&dir, &texts);
    let out = dir.join("keeper");
    run_ok(&glob, &out, &[]);
    let rows = manifest(&out);
    let keep: Vec<bool> = rows.iter().map(|r| r.keep).collect();
    assert_eq!(keep, [true, false, true, false, true, false, true, false]);
    assert_eq!(rows[3].duplicate_of.as_deref(), Some("d2"));
    // A cluster is a keeper and the documents dropped against it.
    assert_eq!(rows[2].cluster_id, Some(2));
    assert_eq!(rows[3].cluster_id, Some(2));
    check_guarantees(&texts, &rows);
    let out = dir.join("components");
    run_ok(&glob, &out, &["--cluster", "components"]);
    let rows = manifest(&out);
    assert_eq!(rows.iter().filter(|r| r.keep).count(), 1);
    assert!(rows[7].similarity.is_some_and(|s| s < 0.8), "{:?}", rows[7]);
}

/// 400 near copies of one 300-word page, each with 1-5 of its words replaced: copies with
/// few edits are near-duplicates of each other, those with many are not, so a bucket holds
/// several kept documents.
pub(crate) fn near_copies() -> Vec<String> {
    let mut rng = Rng::new(11);
    let base = words(&mut rng, 300);
    (0..400)
        .map(|i| {
            let mut w = base.clone();
            for e in 0..1 + rng.below(5) {
                let at = rng.below(w.len());
                w[at] = format!("edit{i}x{e}");
            }
            w.join(" ")
        })
        .collect()
}

#[test]
fn a_giant_bucket_is_resolved_against_its_keepers_as_all_pairs_would_be() {
    let dir = temp_dir("keeper-giant");
    let texts = near_copies();
    let glob = text_shard(&dir, &texts);
    let giant = dir.join("giant");
    run_ok(&glob, &giant, &["--threads", "1"]);
    let s = summary(&giant);
    let g = &s["giant_buckets"];
    assert!(g["buckets"].as_u64().unwrap() > 0, "{g}");
    assert!(g["comparisons"].as_u64().unwrap() > 0, "{g}");
    assert_eq!(g["capped"], 0, "{g}");
    assert_eq!(s["candidates"]["star_buckets"], 0);
    let rows = manifest(&giant);
    assert!(rows.iter().filter(|r| r.keep).count() > 1);
    check_guarantees(&texts, &rows);
    // Every pair listed instead (no bucket is giant): the same manifest.
    let all = dir.join("all-pairs");
    run_ok(&glob, &all, &["--max-bucket-pairs", "100000"]);
    assert_eq!(summary(&all)["giant_buckets"]["buckets"], 0);
    let strip = |rows: Vec<Row>| -> Vec<_> {
        rows.into_iter()
            .map(|r| (r.keep, r.duplicate_of, r.similarity.map(f32::to_bits)))
            .collect()
    };
    assert_eq!(strip(manifest(&all)), strip(rows));
    // Any thread and task count: byte-identical.
    let out = dir.join("tasks");
    run_ok(
        &glob,
        &out,
        &["--threads", "2", "--tasks", "3", "--bucket-ranges", "2"],
    );
    assert!(manifest_bytes(&out) == manifest_bytes(&giant));
    // A cap of 2 kept documents per bucket: counted where it may have changed a decision.
    let capped = dir.join("capped");
    run_ok(&glob, &capped, &["--max-bucket-pairs", "2"]);
    let g = &summary(&capped)["giant_buckets"];
    assert!(g["capped"].as_u64().unwrap() > 0, "{g}");
}

#[test]
fn an_index_of_components_batches_refuses_the_keeper_rule_and_an_older_format_is_named() {
    let dir = temp_dir("keeper-index");
    let texts = near_copies();
    let glob = text_shard(&dir, &texts[..100]);
    let index = dir.join("index");
    let night = |out: &str, extra: &[&str]| {
        run_cmd(&glob, &dir.join(out), extra)
            .arg("--index")
            .arg(&index)
            .args(["--batch", out])
    };
    night("n1", &["--cluster", "components"]).ok();
    let err = night("n2", &[]).fails();
    assert!(
        err.contains("--cluster \"components\"") && err.contains("--cluster \"keeper\""),
        "{err}"
    );
    assert!(err.contains("start a new index"), "{err}");
    night("n2", &["--cluster", "components"]).ok();
    // An index an earlier corpus-dedup wrote (format 1): named with what to do, and untouched.
    let head = index.join("index.json");
    let mut h: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&head).unwrap()).unwrap();
    h["format"] = serde_json::json!(1);
    std::fs::write(&head, serde_json::to_string(&h).unwrap()).unwrap();
    let before = std::fs::read(&head).unwrap();
    let err = night("n3", &["--cluster", "components"]).fails();
    assert!(err.contains("index format 1"), "{err}");
    assert!(err.contains("Start a new index"), "{err}");
    assert_eq!(std::fs::read(&head).unwrap(), before);
}

/// `gen-scale` (what `make bench-scale` runs): a run over its corpus scores against the planted
/// truth, and a run at a lower threshold has its extra drops named as wrong.
#[test]
fn the_scale_generator_scores_a_run_against_its_truth() {
    let dir = temp_dir("keeper-gen-scale");
    let corpus = dir.join("corpus");
    let gen = |args: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_gen-scale"))
            .args(args)
            .output()
            .expect("gen-scale runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        o.stdout
    };
    gen(&[
        "generate",
        "--out",
        corpus.to_str().unwrap(),
        "--docs",
        "3000",
        "--shard-docs",
        "1000",
    ]);
    let input = format!("{}/short-*.parquet", corpus.display());
    let score = |out: &std::path::Path| -> serde_json::Value {
        let manifest = out.join("manifest.parquet");
        let args = [
            "score",
            "--corpus",
            corpus.to_str().unwrap(),
            "--manifest",
            manifest.to_str().unwrap(),
        ];
        serde_json::from_slice(&gen(&args)).expect("one JSON line")
    };
    let out = dir.join("out");
    run_ok(&input, &out, &[]);
    let s = score(&out);
    assert_eq!(s["documents"], 3000);
    let planted = s["planted"].as_u64().unwrap();
    assert!(planted > 300, "{s}");
    assert!(s["recall"].as_f64().unwrap() > 0.99, "{s}");
    assert_eq!(s["precision"], 1.0, "{s}");
    assert_eq!(s["wrong_drops"], serde_json::json!([]));
    // Exact copies are all found; far variants are kept.
    assert_eq!(
        s["kinds"]["exact"]["dropped"],
        s["kinds"]["exact"]["documents"]
    );
    // At 0.5 the far and mid variants below 0.8 go too: the scorer names them.
    let low = dir.join("low");
    run_ok(&input, &low, &["--threshold", "0.5"]);
    let s = score(&low);
    assert!(s["precision"].as_f64().unwrap() < 1.0, "{s}");
    let wrong = s["wrong_drops"].as_array().unwrap();
    assert!(
        !wrong.is_empty() && wrong.iter().all(|w| w[2].as_f64().unwrap() < 0.8),
        "{s}"
    );
}
