//! `--paragraphs`: paragraphs of kept documents that an earlier kept document already retains,
//! as `drop_spans`; `apply` cuts them; the same on the task path and through the index.

use crate::common::*;
use std::collections::BTreeSet;
use std::path::Path;

/// A paragraph of 100+ bytes made from `seed`.
fn para(seed: usize) -> String {
    (0..20)
        .map(|w| format!("w{}x{}", seed * 31 + w * 7, w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Texts sharing boilerplate paragraphs (whole, with other spacing, inside other text), with
/// short headings, a paragraph repeated inside one document, `\r\n`, a NUL, whitespace-only
/// paragraphs, a text of single lines only, and last a text of boilerplate only.
fn texts() -> Vec<String> {
    let licence = para(1000);
    let nav = para(1001);
    let emptied = format!("\n{licence}\n\n{nav}\n\n \n");
    (0..40)
        .map(|i| {
            let own = para(i);
            let other = para(i + 100);
            match i % 5 {
                0 => format!("Title {i}\n\n{own}\n\n{licence}\n\n{other}"),
                1 => format!(
                    "{nav}\r\n\r\n{own}\r\n\r\n  \t\r\n\r\n{}",
                    licence.replace(' ', "  ")
                ),
                2 => format!("Head\n\n{own}\n\n{own}\n\nEnd\u{0}\n\n{nav}\n\n{other}"),
                3 => format!("{own}\n{licence}\n{other}\n"),
                _ => format!("{other}\n\n{own}"),
            }
        })
        .chain([emptied])
        .collect()
}

#[test]
fn repeated_paragraphs_are_removed_and_apply_keeps_one_copy_of_each() {
    let dir = temp_dir("paragraphs-e2e");
    let texts = texts();
    let glob = text_shard(&dir, &texts);
    let out = dir.join("out");
    run_ok(&glob, &out, &["--paragraphs"]);
    let rows = manifest(&out);
    let spans = drop_spans(&out);
    let s = summary(&out);
    let p = &s["paragraphs"];
    assert_eq!(p["min_bytes"], 100);
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/summary.json"))
            .unwrap(),
    )
    .unwrap();
    check_fields(p, &schema["paragraphs_fields"]);
    for r in p["most_repeated"].as_array().unwrap() {
        check_fields(r, &schema["paragraphs_repeated_fields"]);
    }
    // explain names each removed paragraph and the document retaining it.
    let e = cd(["explain"])
        .arg(&out)
        .args(["--id", "d5", "--json"])
        .ok();
    let e: serde_json::Value = serde_json::from_slice(&e.stdout).unwrap();
    assert_eq!(e["removed_paragraphs"][0]["retained_by"], "d0");
    // Every document is kept (no near-duplicates), and each boilerplate text is retained by
    // its first document: licence in d0, nav in d1, and d2's own paragraph once.
    assert!(rows.iter().all(|r| r.keep));
    let removed: usize = spans.iter().flatten().map(Vec::len).sum();
    assert_eq!(p["removed"], removed as u64);
    // licence: in 0,1,3 mod 5 and d40 (25 documents, 24 removed); nav: in 1,2 mod 5 and d40
    // (17, 16 removed); d2's own paragraph twice in each of 8 documents (8 removed within the
    // document). d40 is left with whitespace only, the only one so.
    assert_eq!(removed, 24 + 16 + 8);
    assert_eq!(p["removed_within_document"], 8);
    assert_eq!(p["documents_emptied"], 1);
    for (i, sp) in spans.iter().enumerate() {
        for (start, end, by, batch) in sp.as_ref().unwrap() {
            let cut = texts[i][*start as usize..*end as usize].trim();
            assert!(cut.len() >= 100, "{cut:?}");
            // The retaining document holds the text (spacing aside).
            let by: usize = by.as_ref().unwrap()[1..].parse().unwrap();
            let norm = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(norm(&texts[by]).contains(&norm(cut)));
            assert!(by <= i && batch.is_none());
        }
    }
    // apply: each kept text without its spans; every paragraph text of the input stays.
    let applied = dir.join("applied");
    cd(["apply", "--quiet", "--manifest"])
        .arg(out.join("manifest.parquet"))
        .arg("--output")
        .arg(&applied)
        .arg("--dropped")
        .arg(dir.join("audit"))
        .ok();
    let df = read_df(&applied.join("s.parquet"));
    let written = str_column(&df, "text");
    assert_eq!(written.len(), texts.len());
    let words =
        |t: &str| -> BTreeSet<String> { t.split_whitespace().map(str::to_string).collect() };
    let before: BTreeSet<String> = texts.iter().flat_map(|t| words(t)).collect();
    let after: BTreeSet<String> = written.iter().flat_map(|t| words(t)).collect();
    assert_eq!(before, after, "a word was lost");
    let cut: u64 = texts.iter().map(|t| t.len() as u64).sum::<u64>()
        - written.iter().map(|t| t.len() as u64).sum::<u64>();
    assert_eq!(p["bytes_removed"], cut);
    assert_eq!(written[0], texts[0]);
    assert_eq!(written[40], "\n");
    assert!(written[5].starts_with("Title 5\n\n") && !written[5].contains(&para(1000)));
    // The audit holds the kept rows that lost paragraphs, whole, with their spans.
    let audit = read_df(&dir.join("audit").join("s.parquet"));
    let with_spans = spans
        .iter()
        .filter(|s| s.as_ref().is_some_and(|s| !s.is_empty()));
    assert_eq!(audit.height(), with_spans.count());
    assert!(audit.column("drop_spans").is_ok());
}

#[test]
fn paragraphs_are_the_same_as_tasks_by_hand_and_with_any_thread_count() {
    let dir = temp_dir("paragraphs-tasks");
    let (glob, _) = three_shards(&dir);
    let out = dir.join("run");
    run_ok(
        &glob,
        &out,
        &[
            "--paragraphs",
            "--paragraph-min-bytes",
            "40",
            "--tasks",
            "3",
            "--bucket-ranges",
            "2",
        ],
    );
    assert!(summary(&out)["paragraphs"]["removed"].as_u64().unwrap() > 0);
    let hand = dir.join("hand");
    let stages = crate::tasks::by_hand(
        &glob,
        &dir.join("work"),
        &hand,
        &["--paragraphs", "--paragraph-min-bytes", "40"],
    );
    assert!(stages.contains(&"paragraphs".to_string()));
    assert!(manifest_bytes(&hand) == manifest_bytes(&out));
    let one = dir.join("one");
    run_ok(
        &glob,
        &one,
        &[
            "--paragraphs",
            "--paragraph-min-bytes",
            "40",
            "--tasks",
            "1",
            "--threads",
            "1",
        ],
    );
    assert!(manifest_bytes(&one) == manifest_bytes(&out));
    // Without --paragraphs the manifest has no drop_spans, and the other columns are the same.
    let plain = dir.join("plain");
    run_ok(&glob, &plain, &["--tasks", "3"]);
    assert!(read_df(&plain.join("manifest.parquet"))
        .column("drop_spans")
        .is_err());
    let key = |d: &Path| -> Vec<(String, bool, Option<String>)> {
        manifest(d)
            .into_iter()
            .map(|r| (r.id, r.keep, r.duplicate_of))
            .collect()
    };
    assert_eq!(key(&plain), key(&out));
}

#[test]
fn an_indexed_night_retains_its_paragraphs_for_the_next() {
    let dir = temp_dir("paragraphs-index");
    let texts = texts();
    let (first, second) = texts.split_at(20);
    let night = |name: &str, texts: &[String]| {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        let id: Vec<String> = (0..texts.len()).map(|i| format!("{name}-{i}")).collect();
        let id: Vec<&str> = id.iter().map(String::as_str).collect();
        let text: Vec<&str> = texts.iter().map(String::as_str).collect();
        write_shard(&d.join("s.parquet"), &id, &text, Vec::new())
    };
    let index = dir.join("index");
    let (g1, g2) = (night("n1", first), night("n2", second));
    let args = |batch: &'static str| {
        vec![
            "--paragraphs",
            "--index",
            index.to_str().unwrap(),
            "--batch",
            batch,
        ]
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>()
    };
    let a1 = args("night-1");
    run_ok(
        &g1,
        &dir.join("o1"),
        &a1.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let a2 = args("night-2");
    let a2: Vec<&str> = a2.iter().map(String::as_str).collect();
    run_ok(&g2, &dir.join("o2"), &a2);
    let p = &summary(&dir.join("o2"))["paragraphs"];
    // The licence and nav texts were retained on night 1: night 2 removes every copy.
    assert!(p["removed_against_index"].as_u64().unwrap() >= 2 * 4);
    let spans = drop_spans(&dir.join("o2"));
    let by_index: Vec<&Span> = spans
        .iter()
        .flatten()
        .flatten()
        .filter(|s| s.3.is_some())
        .collect();
    assert!(!by_index.is_empty());
    for s in &by_index {
        assert_eq!(s.3.as_deref(), Some("night-1"));
        assert!(s.2.as_deref().unwrap().starts_with("n1-"));
    }
    // A rerun of the newest night gives the same manifest; the index verifies clean.
    let again = dir.join("o2-again");
    run_ok(&g2, &again, &a2);
    assert!(manifest_bytes(&again) == manifest_bytes(&dir.join("o2")));
    cd(["index", "verify", "--index"]).arg(&index).ok();
}
