//! `--substrings`: runs of kept documents' text that an earlier kept document (or the same one,
//! earlier) retains, as `drop_spans`; `apply` cuts them and no text loses its last copy; the same
//! on the task path and with any thread count; bad options refused.

use std::path::Path;

use crate::common::*;

/// Words made from `seed`: `n` of them, about 8 bytes each.
fn words(seed: usize, n: usize) -> String {
    (0..n)
        .map(|w| format!("w{}x{}", seed * 131 + w * 7, w % 13))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Texts sharing long runs inside other text (a disclaimer, a code sample), a run repeated
/// inside one document, Thai and emoji text, NUL bytes, a whitespace-only text, a text that
/// repeats itself, and documents made only of earlier runs. None is a near-duplicate of another.
fn texts() -> Vec<String> {
    let disclaimer = format!("DISCLAIMER {} end.", words(900, 40));
    let code = format!(
        "fn main() {{\n    {}\n}}\n",
        words(901, 35).replace(' ', ";\n    ")
    );
    let thai = "ภาษาไทยไม่มีช่องว่างระหว่างคำ🙂".repeat(8);
    (0..30)
        .map(|i| {
            let own = words(i, 60);
            let other = words(i + 100, 60);
            match i % 6 {
                0 => format!("{own}\n{disclaimer}\n{other}"),
                1 => format!("{other} {code} {own}"),
                2 => format!("{own} {thai} {other}\u{0}\u{0} {disclaimer}"),
                3 => format!("{own} {code} middle {other} {code} end"),
                4 => format!("{other}\n{own}"),
                _ => format!("{}{}", own, format!(" {}", words(i + 500, 30)).repeat(4)),
            }
        })
        .chain([
            " \n\t ".repeat(200),
            format!("{disclaimer}{code}"),
            "abc".repeat(500),
        ])
        .collect()
}

/// The guarantee checked by brute force on the output of `apply`: every removed byte of a text
/// lies in a `min`-byte window of its original text whose bytes the applied text of the
/// retaining document holds (this document's for a repeat inside it).
fn check_guarantee(texts: &[String], applied: &[String], spans: &[Option<Vec<Span>>], min: usize) {
    let row = |id: &str| -> usize { id[1..].parse().unwrap() };
    for (i, sp) in spans.iter().enumerate() {
        let t = texts[i].as_bytes();
        let mut prev = 0;
        for (s, e, by, _) in sp.iter().flatten() {
            let (s, e) = (*s as usize, *e as usize);
            assert!(prev <= s && s < e && e <= t.len(), "d{i}: {sp:?}");
            assert!(texts[i].is_char_boundary(s) && texts[i].is_char_boundary(e));
            prev = e;
            let by = row(by.as_deref().unwrap());
            assert!(by <= i, "d{i} is cut against the later d{by}");
            let holder = applied[by].as_bytes();
            for b in s..e {
                let held = (b.saturating_sub(min - 1)..=b)
                    .filter(|&w| w + min <= t.len())
                    .any(|w| holder.windows(min).any(|x| x == &t[w..w + min]));
                assert!(
                    held,
                    "byte {b} of d{i} is removed with no retained copy in d{by}"
                );
            }
        }
    }
}

/// The texts `apply` writes for a run's output `out` (one shard `s.parquet`).
fn applied(out: &Path, dir: &Path) -> Vec<String> {
    let to = dir.join("applied");
    cd(["apply", "--quiet", "--manifest"])
        .arg(out.join("manifest.parquet"))
        .arg("--output")
        .arg(&to)
        .ok();
    let df = read_df(&to.join("s.parquet"));
    str_column(&df, "text")
        .into_iter()
        .map(str::to_string)
        .collect()
}

/// Bytes of `texts` less those of `written`.
fn cut_bytes(texts: &[String], written: &[String]) -> u64 {
    let len = |t: &[String]| t.iter().map(|x| x.len() as u64).sum::<u64>();
    len(texts) - len(written)
}

#[test]
fn repeated_runs_are_removed_and_apply_keeps_a_copy_of_each() {
    let dir = temp_dir("substrings-e2e");
    let texts = texts();
    let glob = text_shard(&dir, &texts);
    let out = dir.join("out");
    run_ok(
        &glob,
        &out,
        &["--substrings", "--substring-min-bytes", "64"],
    );
    let rows = manifest(&out);
    assert!(rows.iter().all(|r| r.keep), "no near-duplicates here");
    let spans = drop_spans(&out);
    let s = summary(&out);
    let p = &s["substrings"];
    assert_eq!(p["min_bytes"], 64);
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/summary.json"))
            .unwrap(),
    )
    .unwrap();
    check_fields(p, &schema["substrings_fields"]);
    assert!(p["windows_removable_within_document"].as_u64().unwrap() > 0);
    // The first copies stay whole: d0 (disclaimer) and d1 (code) lose nothing.
    assert_eq!(spans[0], Some(vec![]));
    assert_eq!(spans[1], Some(vec![]));
    let written = applied(&out, &dir);
    assert_eq!(written.len(), texts.len());
    check_guarantee(&texts, &written, &spans, 64);
    assert_eq!(p["bytes_removed"], cut_bytes(&texts, &written));
    // d3 holds d1's code sample twice: both copies go but for a few bytes at their edges (the
    // windows end where the content cuts it).
    let code = &texts[1][texts[1].find("fn main()").unwrap()..];
    let code = &code[..code.find('}').unwrap()];
    assert!(texts[3].matches(code).count() == 2 && written[1].contains(code));
    assert!(!written[3].contains(&code[40..code.len() - 40]));
    // The text made of earlier runs only loses nearly all; the self-repeating one keeps a copy;
    // one 1,500-byte word is never cut inside.
    assert!(written[31].len() < 160, "{:?}", written[31]);
    assert!(
        written[30].len() >= 64 && written[30].len() < 256,
        "{}",
        written[30].len()
    );
    assert_eq!(written[32], texts[32]);
    // explain names the spans and who retains them; the report has its section and card.
    let e = cd(["explain"]).arg(&out).args(["--id", "d6"]).ok();
    let e = String::from_utf8(e.stdout).unwrap();
    assert!(e.contains("span(s)") && e.contains("retained by d0"), "{e}");
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains("<h2>Repeated runs</h2>") && report.contains("Longest spans removed"));
    assert!(report.contains("<h3>Repeated runs</h3>"));
    report_rebuilds_in_slices(&out);
}

#[test]
fn with_paragraphs_both_rules_apply_and_a_byte_counts_once() {
    let dir = temp_dir("substrings-paragraphs");
    let texts = texts();
    let glob = text_shard(&dir, &texts);
    let out = dir.join("out");
    let args = [
        "--substrings",
        "--substring-min-bytes",
        "64",
        "--paragraphs",
    ];
    run_ok(&glob, &out, &args);
    let s = summary(&out);
    let (p, w) = (&s["paragraphs"], &s["substrings"]);
    let cut = cut_bytes(&texts, &applied(&out, &dir));
    let (pb, wb) = (
        p["bytes_removed"].as_u64().unwrap(),
        w["bytes_removed"].as_u64().unwrap(),
    );
    assert!(pb > 0 && wb > 0);
    assert_eq!(pb + wb, cut);
    // The disclaimer is a paragraph of its own in d0 and d24: removed there as a paragraph.
    let spans = drop_spans(&out);
    for (i, sp) in spans.iter().enumerate() {
        let mut prev = 0;
        for (s, e, _, _) in sp.iter().flatten() {
            assert!(prev <= *s && s < e, "d{i}: {sp:?}");
            prev = *e;
        }
    }
}

#[test]
fn substrings_are_the_same_as_tasks_by_hand_and_with_any_thread_count() {
    let dir = temp_dir("substrings-tasks");
    let (glob, _) = three_shards(&dir);
    let out = dir.join("run");
    let args = [
        "--substrings",
        "--substring-min-bytes",
        "48",
        "--paragraphs",
    ];
    let mut many = args.to_vec();
    many.extend(["--tasks", "3", "--bucket-ranges", "2"]);
    run_ok(&glob, &out, &many);
    assert!(
        summary(&out)["substrings"]["windows_removable"]
            .as_u64()
            .unwrap()
            > 0
    );
    let hand = dir.join("hand");
    let stages = crate::tasks::by_hand(&glob, &dir.join("work"), &hand, &args);
    assert!(stages.contains(&"substrings".to_string()));
    assert!(manifest_bytes(&hand) == manifest_bytes(&out));
    let one = dir.join("one");
    let mut single = args.to_vec();
    single.extend(["--tasks", "1", "--threads", "1"]);
    run_ok(&glob, &one, &single);
    assert!(manifest_bytes(&one) == manifest_bytes(&out));
}

#[test]
fn bad_substring_options_are_refused_with_what_to_do() {
    let dir = temp_dir("substrings-bad");
    let glob = text_shard(&dir, &texts());
    for (args, says) in [
        (
            vec!["--substrings", "--substring-min-bytes", "31"],
            "outside 32..=1048576",
        ),
        (
            vec!["--substrings", "--substring-min-bytes", "1048577"],
            "outside 32..=1048576",
        ),
        (vec!["--substring-min-bytes", "64"], "give --substrings too"),
        (
            vec!["--substrings", "--index", "ix", "--batch", "n1"],
            "--substrings with --index is not supported yet",
        ),
    ] {
        let o = run_cmd(&glob, &dir.join("o"), &args).output();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
