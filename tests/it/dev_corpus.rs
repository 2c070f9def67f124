//! Quality on the development corpus (../shared/corpus/dev-small: 20k real documents, English and
//! Chinese, exact ground truth). Scored like the corpus' scorer: document-level recall and
//! precision, recall per language. In CI (CI set) the corpus must be present.

use std::collections::HashMap;

use crate::common::*;

#[test]
fn dev_small_recall_and_precision_per_language() {
    scores_on_dev_small("default", &[]);
}

/// The classic sketch (K hash functions) is held to the same targets.
#[test]
fn dev_small_recall_and_precision_with_the_classic_sketch() {
    scores_on_dev_small("classic", &["--sketch", "classic"]);
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
