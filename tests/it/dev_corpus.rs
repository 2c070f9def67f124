//! Quality on the development corpus (../shared/corpus/dev-small: 20k real documents, English and
//! Chinese, exact ground truth). `--cluster components` is scored like the corpus' scorer:
//! document-level recall and precision, recall per language. The keeper rule (the default) like
//! its keeper scorer: no drop without a kept ground-truth partner, and as many drops as the same
//! rule on the exact graph. In CI (CI set) the corpus must be present.

use std::collections::{HashMap, HashSet};

use crate::common::*;

#[test]
fn dev_small_recall_and_precision_per_language() {
    scores_on_dev_small("components", &["--cluster", "components"]);
}

/// The classic sketch (K hash functions) is held to the same targets.
#[test]
fn dev_small_recall_and_precision_with_the_classic_sketch() {
    let args = ["--sketch", "classic", "--cluster", "components"];
    scores_on_dev_small("classic", &args);
}

/// The default rule: every drop is a ground-truth near-duplicate of a kept document, and the
/// drops are those of the rule on the exact graph (input order) within 1%.
#[test]
fn dev_small_keeper_rule_against_exact_truth() {
    let Some(corpus) = dev_small() else {
        return;
    };
    let out = temp_dir("dev-small-keeper").join("out");
    run_ok(&format!("{}/shard-*.parquet", corpus.display()), &out, &[]);
    let rows = manifest(&out);
    let gt = read_df(&corpus.join("gt_pairs.parquet"));
    let mut adj: HashMap<&str, Vec<&str>> = HashMap::new();
    let (a, b) = (str_column(&gt, "id_a"), str_column(&gt, "id_b"));
    for (&x, &y) in a.iter().zip(&b) {
        adj.entry(x).or_default().push(y);
        adj.entry(y).or_default().push(x);
    }
    let partners = |id: &str| adj.get(id).map_or(&[][..], Vec::as_slice).to_vec();
    let kept: HashSet<&str> = rows
        .iter()
        .filter(|r| r.keep)
        .map(|r| r.id.as_str())
        .collect();
    let mut ideal_kept: HashSet<&str> = HashSet::new();
    let (mut drops, mut ideal, mut orphans) = (0, 0, 0);
    for r in &rows {
        let p = partners(&r.id);
        if p.iter().any(|x| ideal_kept.contains(x)) {
            ideal += 1;
        } else {
            ideal_kept.insert(&r.id);
        }
        if r.keep {
            continue;
        }
        drops += 1;
        orphans += usize::from(!p.iter().any(|x| kept.contains(x)));
        // The manifest's own guarantee: the keeper is kept, at the threshold or above.
        let keeper = r.duplicate_of.as_deref().unwrap_or_default();
        assert!(kept.contains(keeper), "{r:?}: its keeper is not kept");
        assert!(r.similarity.is_some_and(|s| s >= 0.8), "{r:?}");
    }
    let deviation = (drops as f64 - ideal as f64).abs() / ideal as f64;
    eprintln!("keeper: drops {drops}, ideal {ideal}, deviation {deviation:.4}, orphans {orphans}");
    assert_eq!(orphans, 0, "drops without a kept ground-truth partner");
    assert!(deviation <= 0.01, "drops {drops}, ideal {ideal}");
}

fn scores_on_dev_small(name: &str, args: &[&str]) {
    let Some(corpus) = dev_small() else {
        return;
    };
    let out = temp_dir(&format!("dev-small-{name}")).join("out");
    run_ok(&format!("{}/shard-*.parquet", corpus.display()), &out, args);
    let rows = manifest(&out);

    let comp = read_df(&corpus.join("gt_components.parquet"));
    let ids = str_column(&comp, "id");
    let cid = comp
        .column("component")
        .unwrap()
        .cast(&polars::prelude::DataType::UInt32)
        .unwrap();
    let cid: Vec<u32> = cid.u32().unwrap().into_no_null_iter().collect();
    assert_eq!(
        rows.len(),
        ids.len(),
        "one manifest row per corpus document"
    );
    assert!(
        rows.iter().zip(&ids).all(|(r, id)| r.id == *id),
        "manifest order = corpus order"
    );

    let meta = read_df(&corpus.join("docs_meta.parquet"));
    let mid = str_column(&meta, "id");
    let mlang = str_column(&meta, "lang");
    let lang_of: HashMap<&str, &str> = mid.into_iter().zip(mlang).collect();
    // A component's language is that of its representative (the document its id points at).
    let comp_lang: Vec<&str> = cid.iter().map(|&c| lang_of[ids[c as usize]]).collect();

    let dropped: Vec<bool> = rows.iter().map(|r| !r.keep).collect();
    let (recall, precision) = doc_scores(&cid, &dropped);
    let mut report = vec![format!(
        "{name}: recall {recall:.4} precision {precision:.4}"
    )];
    for lang in ["en", "zh"] {
        let keep_d: Vec<bool> = (0..rows.len()).map(|d| comp_lang[d] == lang).collect();
        let sub_truth: Vec<u32> = (0..rows.len())
            .filter(|&d| keep_d[d])
            .map(|d| cid[d])
            .collect();
        let sub_dropped: Vec<bool> = (0..rows.len())
            .filter(|&d| keep_d[d])
            .map(|d| dropped[d])
            .collect();
        let (r, p) = doc_scores(&sub_truth, &sub_dropped);
        report.push(format!("{lang}: recall {r:.4} precision {p:.4}"));
        assert!(r >= 0.97 && p >= 0.99, "{lang} below target: {report:?}");
    }
    eprintln!("{}", report.join("; "));
    assert!(recall >= 0.97 && precision >= 0.99, "{report:?}");
}
