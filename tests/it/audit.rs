//! `corpus-dedup audit`: pairs sampled per similarity band from the run's drops, the page that
//! labels them, and the labels scored.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::common::*;

/// A run over the generated shards plus a near-duplicate pair of hostile texts; its output.
fn audited_run(name: &str) -> PathBuf {
    let dir = temp_dir(name);
    let (glob, docs) = three_shards(&dir.join("in"));
    let base = &docs[0].text;
    let hostile = [
        format!("{base} </script><script>alert(1)</script> \u{202e}evil\u{1b}[2J"),
        format!("{base} </script><script>alert(2)</script> \u{202e}evil\u{1b}[2J"),
    ];
    write_shard(
        &dir.join("in").join("d-hostile.parquet"),
        &["h1", "h2"],
        &[&hostile[0], &hostile[1]],
        Vec::new(),
    );
    let out = dir.join("out");
    run_ok(&glob, &out, &[]);
    out
}

/// `corpus-dedup audit OUT` with `extra`: what it prints.
pub(crate) fn audit(out: &Path, extra: &[&str]) -> serde_json::Value {
    let o = cd(["audit"]).arg(out).args(extra).ok();
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `corpus-dedup audit OUT --score` of `labels`: its JSON, or its error.
pub(crate) fn score(out: &Path, labels: &serde_json::Value) -> Result<serde_json::Value, String> {
    let file = out.join("labels.json");
    std::fs::write(&file, labels.to_string()).unwrap();
    let o = cd(["audit"]).arg(out).arg("--score").arg(&file).output();
    match o.status.success() {
        true => Ok(serde_json::from_slice(&o.stdout).unwrap()),
        false => Err(String::from_utf8_lossy(&o.stderr).into_owned()),
    }
}

#[test]
fn an_audit_samples_every_band_from_the_runs_drops_and_scores_the_labels() {
    let out = audited_run("audit-bands");
    audit(&out, &["--pairs", "8"]);
    let few = read_df(&out.join("audit-pairs.parquet"));
    let written = audit(&out, &["--pairs", "40"]);
    let pairs = read_df(&out.join("audit-pairs.parquet"));
    let n = pairs.height();
    assert_eq!(written["pairs"].as_u64(), Some(n as u64));
    assert!(n > 0 && n <= 40, "{n} pairs");
    // The bands' drops are the run's near-duplicate drops; the sample shares them out.
    let rows = manifest(&out);
    let drops: Vec<&Row> = rows
        .iter()
        .filter(|r| !r.keep && r.duplicate_of.is_some())
        .collect();
    let bands = written["bands"].as_array().unwrap();
    let band_drops: u64 = bands.iter().map(|b| b["drops"].as_u64().unwrap()).sum();
    let sampled: u64 = bands.iter().map(|b| b["sampled"].as_u64().unwrap()).sum();
    assert_eq!(band_drops as usize, drops.len());
    assert_eq!(sampled as usize, n);
    check_columns(&pairs, "audit-pairs");
    // Each pair is a drop and its keeper as the manifest says, in its band, with both texts.
    let by_id: HashMap<&str, &Row> = rows.iter().map(|r| (r.id.as_str(), r)).collect();
    let (ids, kept) = (
        str_column(&pairs, "dropped_id"),
        str_column(&pairs, "kept_id"),
    );
    let band = str_column(&pairs, "band");
    let sims = pairs.column("similarity").unwrap().f32().unwrap();
    let (dropped_text, kept_text) = (
        str_column(&pairs, "dropped_text"),
        str_column(&pairs, "kept_text"),
    );
    for i in 0..n {
        let r = by_id[ids[i]];
        assert!(
            !r.keep && r.duplicate_of.as_deref() == Some(kept[i]),
            "{}",
            ids[i]
        );
        let b = bands.iter().find(|b| b["name"] == band[i]).unwrap();
        let s = sims.get(i).unwrap() as f64;
        assert!(b["lo"].as_f64().unwrap() - 1e-6 <= s && s <= b["hi"].as_f64().unwrap());
        assert!(!dropped_text[i].is_empty() && !kept_text[i].is_empty());
    }
    // A pair keeps its name in a larger audit: labels made on the smaller one still apply.
    let named: HashMap<&str, &str> = (str_column(&pairs, "pair").into_iter())
        .zip(str_column(&pairs, "dropped_id"))
        .collect();
    let few_pairs = str_column(&few, "pair");
    assert!(!few_pairs.is_empty());
    for (p, d) in few_pairs.iter().zip(str_column(&few, "dropped_id")) {
        assert_eq!(named.get(p), Some(&d), "{p}");
    }
    // The same pairs and page again: the sample is a function of the manifest.
    let (parquet, page) = (
        std::fs::read(out.join("audit-pairs.parquet")).unwrap(),
        std::fs::read(out.join("audit.html")).unwrap(),
    );
    audit(&out, &["--pairs", "40"]);
    assert!(parquet == std::fs::read(out.join("audit-pairs.parquet")).unwrap());
    assert!(page == std::fs::read(out.join("audit.html")).unwrap());
    // All "y" but one "n" in the first band; a skip counts for nothing.
    let pair = str_column(&pairs, "pair");
    let mut labels = serde_json::Map::new();
    for (i, p) in pair.iter().enumerate() {
        labels.insert(p.to_string(), (if i == 0 { "n" } else { "y" }).into());
    }
    labels.insert(pair[n - 1].to_string(), "s".into());
    let s = score(&out, &labels.into()).unwrap();
    assert_eq!(s["overall"]["labelled"].as_u64(), Some(n as u64 - 1));
    let first = &s["bands"][1]; // [0] is below the threshold: empty under the keeper rule
    let (p, lo, hi) = (
        s["overall"]["precision"].as_f64().unwrap(),
        s["overall"]["low"].as_f64().unwrap(),
        s["overall"]["high"].as_f64().unwrap(),
    );
    assert!(p < 1.0 && lo < p && p <= hi, "{s}");
    assert_eq!(first["no"].as_u64(), Some(1), "{s}");
    assert_eq!(s["drops"].as_u64(), Some(drops.len() as u64));
}

#[test]
fn the_page_is_self_contained_and_shows_hostile_text_as_data() {
    let out = audited_run("audit-page");
    audit(&out, &[]);
    let page = std::fs::read_to_string(out.join("audit.html")).unwrap();
    assert!(page.contains("corpus-dedup audit"));
    // One script element of data, one of code: the texts' markup never closes either.
    assert_eq!(
        page.matches("</script>").count(),
        2,
        "text ended a script element"
    );
    assert!(!page.contains("alert(1)</"), "raw markup from the text");
    assert!(!page.contains('\u{202e}') && !page.contains('\u{1b}'));
    assert!(!page.contains("http://") && !page.contains("https://"));
    // The hostile pair is sampled and its text kept whole in the pairs file.
    let pairs = read_df(&out.join("audit-pairs.parquet"));
    let texts = str_column(&pairs, "dropped_text");
    assert!(texts
        .iter()
        .any(|t| t.contains("</script><script>alert(2)")));
}

#[test]
fn labels_from_another_run_a_missing_file_or_no_audit_are_refused() {
    let out = audited_run("audit-refused");
    // Before any audit: scoring says to sample first.
    let err = score(&out, &serde_json::json!({})).unwrap_err();
    assert!(
        err.contains("audit-pairs.parquet") && err.contains("corpus-dedup audit OUT"),
        "{err}"
    );
    audit(&out, &["--pairs", "10"]);
    let err = score(&out, &serde_json::json!({"00000000-0000": "y"})).unwrap_err();
    assert!(err.contains("from run '00000000'"), "{err}");
    let err = score(&out, &serde_json::json!(["y"])).unwrap_err();
    assert!(err.contains("not a JSON object"), "{err}");
    let err = cd(["audit"])
        .arg(&out)
        .args(["--score", "/nonexistent/labels.json"])
        .fails();
    assert!(
        err.contains("'/nonexistent/labels.json': no such file"),
        "{err}"
    );
    // No labels at all: said, not a crash.
    let s = score(&out, &serde_json::json!({})).unwrap();
    assert!(s["overall"].is_null() && !s["unlabelled_bands"].as_array().unwrap().is_empty());
    let err = cd(["audit", "/nonexistent/out"]).fails();
    assert!(
        err.contains("manifest.parquet") && err.contains("no such file"),
        "{err}"
    );
}

#[test]
fn hundreds_of_pairs_from_large_row_groups_are_read() {
    // One shard of 25,000 documents in one row group (over the 20,000 rows read as one span):
    // each sampled text is a read of its own, 800 of them.
    let dir = temp_dir("audit-large-groups");
    std::fs::create_dir_all(dir.join("in")).unwrap();
    let docs = corpus_dedup::synth::generate(25_000, corpus_dedup::synth::Lang::En, 41, "g");
    write_docs(&dir.join("in/one.parquet"), &docs);
    let out = dir.join("out");
    run_ok(&format!("{}/in/*.parquet", dir.display()), &out, &[]);
    let written = audit(&out, &["--pairs", "400"]);
    assert_eq!(written["pairs"].as_u64(), Some(400), "{written}");
    let pairs = read_df(&out.join("audit-pairs.parquet"));
    let texts = str_column(&pairs, "kept_text");
    assert!(texts.iter().all(|t| !t.is_empty()));
}

#[test]
fn drops_against_an_earlier_night_are_sampled_with_that_nights_text() {
    let dir = temp_dir("audit-index");
    let (_, docs) = three_shards(&dir.join("in"));
    // Night 2 holds night 1's English shard again under another name: those drop against n1.
    std::fs::create_dir_all(dir.join("n2")).unwrap();
    std::fs::copy(dir.join("in/a-en.parquet"), dir.join("n2/a-again.parquet")).unwrap();
    std::fs::copy(
        dir.join("in/b-mixed.parquet"),
        dir.join("n2/b-mixed.parquet"),
    )
    .unwrap();
    let index = dir.join("index");
    let night = |input: String, out: &Path, batch: &str| {
        let args = ["--index", index.to_str().unwrap(), "--batch", batch];
        run_ok(&input, out, &args);
    };
    night(
        format!("{}/in/a-en.parquet", dir.display()),
        &dir.join("o1"),
        "n1",
    );
    night(
        format!("{}/n2/*.parquet", dir.display()),
        &dir.join("o2"),
        "n2",
    );
    audit(&dir.join("o2"), &["--pairs", "400"]);
    let pairs = read_df(&dir.join("o2/audit-pairs.parquet"));
    let (kept_file, kept_text) = (
        str_column(&pairs, "kept_file"),
        str_column(&pairs, "kept_text"),
    );
    let kept_id = str_column(&pairs, "kept_id");
    let text_of: HashMap<&str, &str> = docs
        .iter()
        .map(|d| (d.id.as_str(), d.text.as_str()))
        .collect();
    let earlier: Vec<usize> = (0..pairs.height())
        .filter(|&i| kept_file[i].ends_with("in/a-en.parquet"))
        .collect();
    assert!(!earlier.is_empty(), "no pair against night 1");
    for i in earlier {
        assert_eq!(kept_text[i], text_of[kept_id[i]], "{}", kept_id[i]);
    }
    // Every drop counts, those against n1 and those within the night.
    let written = audit(&dir.join("o2"), &["--pairs", "400"]);
    let total: u64 = (written["bands"].as_array().unwrap().iter())
        .map(|b| b["sampled"].as_u64().unwrap())
        .sum();
    // Night 1's shard rewritten since: those keepers' texts are not shown, nothing fails.
    std::fs::copy(dir.join("in/c-zh.parquet"), dir.join("in/a-en.parquet")).unwrap();
    audit(&dir.join("o2"), &["--pairs", "400"]);
    let again = read_df(&dir.join("o2/audit-pairs.parquet"));
    assert_eq!(again.height() as u64, total);
    let (files, texts) = (
        str_column(&again, "kept_file"),
        str_column(&again, "kept_text"),
    );
    let unread: Vec<usize> = (0..again.height())
        .filter(|&i| files[i].ends_with("in/a-en.parquet"))
        .collect();
    assert!(!unread.is_empty() && unread.iter().all(|&i| texts[i].is_empty()));
    let drops: u64 = (written["bands"].as_array().unwrap().iter())
        .map(|b| b["drops"].as_u64().unwrap())
        .sum();
    let rows = manifest(&dir.join("o2"));
    assert_eq!(
        drops as usize,
        rows.iter().filter(|r| r.duplicate_of.is_some()).count()
    );
}

#[test]
fn a_components_run_counts_every_drop_even_below_the_threshold() {
    let dir = temp_dir("audit-components");
    let (glob, _) = three_shards(&dir.join("in"));
    let out = dir.join("out");
    run_ok(&glob, &out, &["--cluster", "components"]);
    let written = audit(&out, &[]);
    let bands = written["bands"].as_array().unwrap();
    assert_eq!(bands[0]["name"], "<0.80");
    let drops: u64 = bands.iter().map(|b| b["drops"].as_u64().unwrap()).sum();
    let rows = manifest(&out);
    let below = (rows.iter())
        .filter(|r| r.duplicate_of.is_some() && r.similarity.is_some_and(|s| s < 0.8 - 1e-6))
        .count();
    assert_eq!(
        drops as usize,
        rows.iter().filter(|r| r.duplicate_of.is_some()).count()
    );
    assert_eq!(bands[0]["drops"].as_u64(), Some(below as u64));
}

#[test]
fn by_group_strata_are_each_groups_bands_and_each_group_is_scored() {
    // A source column: `en` and `zh` documents, and thirty copies of one text as `spam`.
    let dir = temp_dir("audit-groups");
    std::fs::create_dir_all(dir.join("in")).unwrap();
    let en = corpus_dedup::synth::generate(160, corpus_dedup::synth::Lang::En, 31, "en");
    let zh = corpus_dedup::synth::generate(120, corpus_dedup::synth::Lang::Zh, 32, "zh");
    let mut id: Vec<String> = (en.iter().chain(&zh)).map(|d| d.id.clone()).collect();
    let mut text: Vec<String> = (en.iter().chain(&zh)).map(|d| d.text.clone()).collect();
    let mut source: Vec<&str> = [vec!["en"; en.len()], vec!["zh"; zh.len()]].concat();
    for k in 0..30 {
        id.push(format!("spam-{k}"));
        text.push(format!("{} {k}", en[0].text));
        source.push("spam");
    }
    let (id, text): (Vec<&str>, Vec<&str>) = (
        id.iter().map(String::as_str).collect(),
        text.iter().map(String::as_str).collect(),
    );
    let column = polars::prelude::Column::new("source".into(), source);
    write_shard(&dir.join("in/s.parquet"), &id, &text, vec![column]);
    let out = dir.join("out");
    let glob = format!("{}/in/*.parquet", dir.display());
    run_ok(&glob, &out, &["--report-group", "source"]);
    let written = audit(&out, &["--by-group", "--pairs", "60"]);
    let strata = written["bands"].as_array().unwrap();
    let groups: std::collections::BTreeSet<&str> = strata
        .iter()
        .map(|b| b["group"].as_str().unwrap())
        .collect();
    assert!(groups.contains("spam") && groups.len() >= 2, "{groups:?}");
    // Every pair's group is its dropped document's source.
    let pairs = read_df(&out.join("audit-pairs.parquet"));
    let of_id: HashMap<&str, &str> = id
        .iter()
        .copied()
        .zip((0..id.len()).map(|i| {
            if i < 160 {
                "en"
            } else if i < 280 {
                "zh"
            } else {
                "spam"
            }
        }))
        .collect();
    let (dropped, group) = (
        str_column(&pairs, "dropped_id"),
        str_column(&pairs, "group"),
    );
    for (d, g) in dropped.iter().zip(&group) {
        assert_eq!(of_id[d], *g, "{d}");
    }
    // Scored per group: spam's drops labelled wrong, the others right.
    let pair = str_column(&pairs, "pair");
    let labels: serde_json::Map<String, serde_json::Value> = (0..pairs.height())
        .map(|i| {
            (
                pair[i].to_string(),
                (if group[i] == "spam" { "n" } else { "y" }).into(),
            )
        })
        .collect();
    let s = score(&out, &labels.into()).unwrap();
    for g in s["groups"].as_array().unwrap() {
        let want = if g["group"] == "spam" { 0.0 } else { 1.0 };
        assert_eq!(g["precision"]["precision"].as_f64(), Some(want), "{g}");
    }
    // A run without --report-group has no groups to audit by.
    let plain = dir.join("plain");
    run_ok(&glob, &plain, &[]);
    let err = cd(["audit"]).arg(&plain).arg("--by-group").fails();
    assert!(err.contains("--report-group"), "{err}");
}
