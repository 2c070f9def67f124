//! Benchmark decontamination (`--reference`): planted items found whole, inside a page, edited
//! and in part; hosts of the benchmark's boilerplate alone never flagged; the keeper rule with
//! contaminated documents; the task path and the index; bad reference input.

use std::path::Path;

use polars::prelude::*;

use crate::common::*;
use crate::tasks::by_hand;
use corpus_dedup::synth::{generate, Doc, Kind, Lang};

/// Benchmark boilerplate shared by items (in and out of the reference).
const BOILERPLATE: [&str; 6] = [
    "Example 1:",
    "Input: nums = [2,7,11,15], target = 9",
    "Output: [0,1]",
    "Constraints:",
    "1 <= nums.length <= 10^4",
    "Answer the question below. Choose the best option.",
];

/// Base documents only (no planted near-duplicates), of `lang`.
fn bases(n: usize, lang: Lang, seed: u64, prefix: &str) -> Vec<Doc> {
    generate(n * 3, lang, seed, prefix)
        .into_iter()
        .filter(|d| d.kind == Kind::Base)
        .take(n)
        .collect()
}

/// An item: the boilerplate around a body.
fn item(body: &str) -> String {
    format!(
        "{}\n{body}\n{}",
        BOILERPLATE[..4].join("\n"),
        BOILERPLATE[4..].join("\n")
    )
}

/// The first `words` words of a text (CJK: characters).
fn head(text: &str, words: usize, cjk: bool) -> String {
    if cjk {
        text.chars()
            .filter(|c| !c.is_whitespace())
            .take(words)
            .collect()
    } else {
        text.split_whitespace()
            .take(words)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Every 40th word replaced, and line breaks where spaces were.
fn edited(text: &str) -> String {
    text.split_whitespace()
        .enumerate()
        .map(|(i, w)| {
            if i % 40 == 20 {
                "CHANGED".to_string()
            } else {
                w.to_string()
            }
        })
        .enumerate()
        .map(|(i, w)| {
            if i % 7 == 6 {
                format!("{w}\n")
            } else {
                format!("{w}  ")
            }
        })
        .collect()
}

struct Planted {
    dir: std::path::PathBuf,
    input: String,
    reference: String,
    /// Document id -> the item id it must be flagged with (None: must not be flagged).
    want: Vec<(String, Option<String>)>,
}

/// Reference items (English and Chinese), documents holding them in each planted way, hosts of
/// the boilerplate of items not in the reference, clean hosts.
fn planted(name: &str) -> Planted {
    let dir = temp_dir(name);
    let en = bases(12, Lang::En, 71, "ie");
    let zh = bases(4, Lang::Zh, 72, "iz");
    let hosts = bases(40, Lang::En, 73, "h");
    let bodies: Vec<(String, String)> = en
        .iter()
        .map(|d| head(&d.text, 60, false))
        .chain(zh.iter().map(|d| head(&d.text, 80, true)))
        .enumerate()
        .map(|(i, b)| (format!("bench-{i}"), b))
        .collect();
    // Items 0..12 are in the reference; 12..16 (two English, two Chinese) are not.
    let (inside, outside) = bodies.split_at(10);
    let in_ref: Vec<&(String, String)> = inside.iter().chain(&outside[2..4]).collect();
    let ids: Vec<&str> = in_ref.iter().map(|(i, _)| i.as_str()).collect();
    let texts: Vec<String> = in_ref.iter().map(|(_, b)| item(b)).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let reference = dir.join("bench").join("items.parquet");
    write_shard(&reference, &ids, &texts, Vec::new());

    let mut docs: Vec<(String, String, Option<String>)> = Vec::new();
    let host = |i: usize| hosts[i].text.as_str();
    let (id, body) = (&inside[0].0, &inside[0].1);
    docs.push(("whole".into(), item(body), Some(id.clone())));
    let (id, body) = (&inside[1].0, &inside[1].1);
    docs.push((
        "inside".into(),
        format!("{}\n\n{}\n\n{}", host(0), item(body), host(1)),
        Some(id.clone()),
    ));
    let (id, body) = (&inside[2].0, &inside[2].1);
    docs.push((
        "edited".into(),
        format!("{}\n\n{}", host(2), edited(&item(body))),
        Some(id.clone()),
    ));
    let (id, body) = (&inside[3].0, &inside[3].1);
    let words: Vec<&str> = body.split_whitespace().collect();
    let part = words[words.len() / 5..words.len() / 5 + words.len() * 6 / 10].join(" ");
    docs.push((
        "sixty".into(),
        format!("{}\n\n{part}\n\n{}", host(3), host(4)),
        Some(id.clone()),
    ));
    // A Chinese item inside a Chinese page.
    let (id, body) = (&outside[2].0, &outside[2].1);
    let zh_host = bases(2, Lang::Zh, 74, "zh");
    docs.push((
        "inside-zh".into(),
        format!("{}\n\n{}", zh_host[0].text, item(body)),
        Some(id.clone()),
    ));
    // Held out: an item not in the reference, with the same boilerplate.
    for (k, (_, body)) in outside[..2].iter().enumerate() {
        docs.push((
            format!("held-out-{k}"),
            format!("{}\n\n{}", host(5 + k), item(body)),
            None,
        ));
    }
    // Only the boilerplate.
    docs.push((
        "boilerplate".into(),
        format!("{}\n\n{}", host(8), BOILERPLATE.join("\n")),
        None,
    ));
    // A kept page, and the same page with an item appended: a near-duplicate of a kept
    // document that is also contaminated.
    let long: String = (9..13).map(host).collect::<Vec<_>>().join("\n\n");
    let (id, body) = (&inside[4].0, &inside[4].1);
    docs.push(("page".into(), long.clone(), None));
    docs.push((
        "page-with-item".into(),
        format!("{long}\n\n{}", head(body, 45, false)),
        Some(id.clone()),
    ));
    // Two exact copies of one contaminated document: neither kept.
    let (id, body) = (&inside[5].0, &inside[5].1);
    for k in 0..2 {
        docs.push((
            format!("copy-{k}"),
            format!("{}\n\n{}", host(13), item(body)),
            Some(id.clone()),
        ));
    }
    for i in 14..40 {
        docs.push((format!("clean-{i}"), host(i).to_string(), None));
    }
    let ids: Vec<&str> = docs.iter().map(|(i, _, _)| i.as_str()).collect();
    let texts: Vec<&str> = docs.iter().map(|(_, t, _)| t.as_str()).collect();
    let input = write_shard(&dir.join("in").join("s.parquet"), &ids, &texts, Vec::new());
    Planted {
        want: docs.into_iter().map(|(i, _, w)| (i, w)).collect(),
        dir,
        input,
        reference: reference.display().to_string(),
    }
}

/// The manifest's `contaminated_by` per id.
fn flags(out: &Path) -> Vec<(String, Option<String>, Option<f32>)> {
    let df = read_df(&out.join("manifest.parquet"));
    let id = df.column("id").unwrap().str().unwrap().clone();
    let by = df.column("contaminated_by").unwrap().str().unwrap().clone();
    let share = df.column("contamination").unwrap().f32().unwrap().clone();
    (0..df.height())
        .map(|i| {
            let by = by.get(i).map(str::to_string);
            (id.get(i).unwrap().to_string(), by, share.get(i))
        })
        .collect()
}

#[test]
fn reference_items_are_found_whole_inside_edited_and_in_part_and_never_kept() {
    let p = planted("decontam-planted");
    let out = p.dir.join("out");
    run_ok(&p.input, &out, &["--reference", &p.reference]);
    let got = flags(&out);
    for ((id, want), (gid, by, share)) in p.want.iter().zip(&got) {
        assert_eq!(id, gid);
        assert_eq!(by, want, "{id}");
        assert_eq!(share.is_some(), want.is_some(), "{id}");
    }
    let share = |id: &str| got.iter().find(|g| g.0 == id).unwrap().2.unwrap();
    assert_eq!(share("whole"), 1.0);
    assert_eq!(share("inside"), 1.0);
    assert!(share("sixty") >= 0.3 && share("sixty") < 0.9);
    assert!(share("edited") < 1.0);

    let rows = manifest(&out);
    let row = |id: &str| rows.iter().find(|r| r.id == id).unwrap();
    for (id, want) in &p.want {
        if want.is_some() {
            assert!(!row(id).keep, "{id} holds benchmark text");
        }
    }
    // Both: a near-duplicate of a kept page, and contaminated.
    assert!(row("page").keep);
    assert_eq!(row("page-with-item").duplicate_of.as_deref(), Some("page"));
    // Copies of a contaminated text: none kept, neither dropped against the other.
    assert_eq!(row("copy-0").duplicate_of, None);
    assert_eq!(row("copy-1").duplicate_of, None);
    assert!(row("clean-20").keep);

    let s = summary(&out);
    // The defaults `run --help` shows are the ones used.
    let used = &s["config"]["reference"];
    assert_eq!(
        (used["ngram"].as_u64(), used["threshold"].as_f64()),
        (Some(8), Some(0.3))
    );
    assert_eq!(
        (used["id_column"].as_str(), used["text_column"].as_str()),
        (Some("id"), Some("text"))
    );
    let c = &s["contamination"];
    // Both as the schemas say.
    let schema = |name: &str| -> serde_json::Value {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("schemas")
            .join(name);
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    let (m, sm) = (schema("manifest.json"), schema("summary.json"));
    check_fields(c, &sm["contamination_fields"]);
    check_fields(&c["files"][0], &sm["contamination_file_fields"]);
    check_fields(&c["most_hit"][0], &sm["contamination_item_fields"]);
    let df = read_df(&out.join("manifest.parquet"));
    let base = m["columns"].as_array().unwrap().len();
    for (i, want) in m["reference_columns"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let col = &df.columns()[base + i];
        assert_eq!(col.name().as_str(), want["name"].as_str().unwrap());
        assert_eq!(format!("{:?}", col.dtype()), want["type"].as_str().unwrap());
    }
    assert_eq!(c["documents"], 8);
    assert_eq!(c["also_duplicates"], 1);
    assert_eq!(c["files"][0]["items"], 12);
    assert_eq!(c["files"][0]["matched"], 12);
    assert_eq!(c["files"][0]["documents_flagged"], 8);
    assert_eq!(c["files"][0]["items_hit"], 7);
    assert_eq!(c["most_hit"][0]["id"], "bench-5");
    assert_eq!(c["most_hit"][0]["documents"], 2);
    assert_eq!(
        s["documents_kept"].as_u64().unwrap(),
        rows.iter().filter(|r| r.keep).count() as u64
    );
    report_rebuilds_in_slices(&out);
}

#[test]
fn reference_runs_as_tasks_and_with_the_index_as_it_runs_locally() {
    let p = planted("decontam-tasks");
    let out = p.dir.join("out");
    let args = ["--reference", p.reference.as_str()];
    run_ok(&p.input, &out, &args);
    let (work, by_tasks) = (p.dir.join("work"), p.dir.join("by-tasks"));
    by_hand(&p.input, &work, &by_tasks, &args);
    assert_eq!(manifest_bytes(&out), manifest_bytes(&by_tasks));

    // With --index: the same decisions, and only kept documents enter the index; the next night
    // meets the reference again (its items are in no batch).
    let index = p.dir.join("index");
    let night = |name: &str, extra: &[&str]| {
        let o = p.dir.join(name);
        let mut a = vec!["--index", index.to_str().unwrap(), "--batch", name];
        a.extend_from_slice(extra);
        run_ok(&p.input, &o, &a);
        o
    };
    // Three parts: whichever task builds the table, the first part's task writes the cache.
    let mut three = args.to_vec();
    three.extend(["--tasks", "3"]);
    let n1 = night("n1", &three);
    assert!(index.join("reference-cache.bin").exists());
    assert_eq!(flags(&n1), flags(&out));
    let s1 = summary(&n1);
    assert_eq!(s1["index"]["documents_indexed"], s1["documents_kept"]);
    // The table built from the reference is cached in the index; a damaged cache is rebuilt.
    let cache = index.join("reference-cache.bin");
    let mut bytes = std::fs::read(&cache).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&cache, &bytes).unwrap();
    let n2 = night("n2", &args);
    assert_ne!(std::fs::read(&cache).unwrap(), bytes, "rebuilt");
    let rows = manifest(&n2);
    // Tonight repeats last night: every kept document of it is dropped against the index, and
    // contaminated documents are flagged again, not found in the index.
    assert!(rows.iter().all(|r| !r.keep));
    for (id, by, _) in flags(&n2) {
        let want = p.want.iter().find(|w| w.0 == id).unwrap();
        assert_eq!(by, want.1, "{id}");
    }
    let row = |id: &str| {
        rows.iter()
            .find(|r| r.id == id)
            .unwrap()
            .duplicate_of
            .clone()
    };
    assert_eq!(row("copy-0"), None);
    assert_eq!(row("clean-20").as_deref(), Some("clean-20"));
}

#[test]
fn reference_items_too_short_empty_repeated_and_boilerplate_only_are_counted() {
    let dir = temp_dir("decontam-counts");
    let bodies = bases(4, Lang::En, 75, "c");
    let body = |i: usize| head(&bodies[i].text, 40, false);
    let boiler = BOILERPLATE.join("\n");
    let rows: Vec<(&str, Option<String>)> = vec![
        ("a", Some(item(&body(0)))),
        ("b", Some("What is 2 + 2?".into())),
        ("c", None),
        ("d", Some(String::new())),
        ("e", Some(item(&body(0)))),
        ("a", Some(item(&body(1)))),
        ("f", Some(boiler.clone())),
        ("g", Some(format!("{boiler}\n{}", body(2)))),
        ("h", Some(format!("{boiler}\n{}", body(3)))),
    ];
    let id: Vec<&str> = rows.iter().map(|r| r.0).collect();
    let text: Vec<Option<&str>> = rows.iter().map(|r| r.1.as_deref()).collect();
    // Integer ids would do as well; strings here. The text column has another name.
    let df = DataFrame::new(
        rows.len(),
        vec![
            Column::new("qid".into(), id),
            Column::new("prompt".into(), text),
        ],
    )
    .unwrap();
    let reference = dir.join("ref.parquet");
    write_df(&reference, df);
    let input = text_shard(&dir, &[format!("intro\n\n{}", item(&body(1))), body(3)]);
    let out = dir.join("out");
    run_ok(
        &input,
        &out,
        &[
            "--reference",
            reference.to_str().unwrap(),
            "--reference-id-column",
            "qid",
            "--reference-text-column",
            "prompt",
        ],
    );
    let c = &summary(&out)["contamination"]["files"][0];
    assert_eq!(c["items"], 9);
    assert_eq!(c["empty"], 2);
    assert_eq!(c["too_short"], 1);
    assert_eq!(c["repeated_text"], 1);
    assert_eq!(c["repeated_id"], 1);
    assert_eq!(c["boilerplate_only"], 1);
    assert_eq!(c["matched"], 4);
    // The second item of id "a" is found; a body whose boilerplate is shared is still found.
    let got = flags(&out);
    assert_eq!(got[0].1.as_deref(), Some("a"));
    assert_eq!(got[1].1.as_deref(), Some("h"));
}

#[test]
fn bad_reference_input_is_named_and_nothing_is_written() {
    let dir = temp_dir("decontam-bad");
    let input = text_shard(&dir, &["some text of a document here".to_string()]);
    let out = dir.join("out");
    let refdir = dir.join("ref");
    std::fs::create_dir_all(&refdir).unwrap();
    let ints = refdir.join("ints.parquet");
    let df = DataFrame::new(
        1,
        vec![
            Column::new("id".into(), &[1i64]),
            Column::new("text".into(), &[7i64]),
        ],
    )
    .unwrap();
    write_df(&ints, df);
    let garbage = refdir.join("garbage.parquet");
    std::fs::write(&garbage, b"not parquet at all").unwrap();
    let good = refdir.join("good.parquet");
    write_shard(
        &good,
        &["x"],
        &["a benchmark question about something"],
        Vec::new(),
    );
    let missing = format!("{}/nothing-*.parquet", refdir.display());
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["--reference".into(), missing.clone()],
            "matches no file",
        ),
        (
            vec!["--reference".into(), ints.display().to_string()],
            "expected a string",
        ),
        (
            vec!["--reference".into(), garbage.display().to_string()],
            "cannot be read as Parquet",
        ),
        (
            vec![
                "--reference".into(),
                good.display().to_string(),
                "--reference-text-column".into(),
                "question".into(),
            ],
            "has no column 'question'",
        ),
        (
            vec!["--reference-ngram".into(), "13".into()],
            "give --reference",
        ),
        (
            vec![
                "--reference".into(),
                good.display().to_string(),
                "--cluster".into(),
                "components".into(),
            ],
            "--reference needs --cluster keeper",
        ),
    ];
    for (args, says) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = run_cmd(&input, &out, &args).fails();
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(err.contains("--reference"), "{args:?}: {err}");
        assert!(!out.join("manifest.parquet").exists());
    }
}

/// The planted reference written as JSON Lines (`.jsonl.gz`): its items under a nested field,
/// ids as integers or null (then `file:LINE`).
fn reference_as_jsonl(p: &Planted) -> std::path::PathBuf {
    let df = read_df(Path::new(&p.reference));
    let ids = df.column("id").unwrap().str().unwrap().clone();
    let texts = df.column("text").unwrap().str().unwrap().clone();
    let mut lines = String::new();
    for (i, (id, text)) in ids.iter().zip(texts.iter()).enumerate() {
        let text = serde_json::to_string(text.unwrap()).unwrap();
        match (i, id.unwrap().strip_prefix("bench-")) {
            // The first item's id is null.
            (0, _) => lines.push_str(&format!(r#"{{"q": {{"body": {text}}}, "qid": null}}"#)),
            (_, Some(n)) => lines.push_str(&format!(
                r#"{{"qid": {n}, "q": {{"body": {text}, "x": [1]}}}}"#
            )),
            (_, None) => unreachable!(),
        }
        lines.push('\n');
        if i == 3 {
            lines.push('\n');
        }
    }
    let path = p.dir.join("bench").join("items.jsonl.gz");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut e, lines.as_bytes()).unwrap();
    std::fs::write(&path, e.finish().unwrap()).unwrap();
    path
}

#[test]
fn a_json_lines_reference_flags_what_the_parquet_one_does() {
    let p = planted("decontam-jsonl");
    let jl = reference_as_jsonl(&p);
    let jl = jl.to_str().unwrap();
    let args = [
        "--reference",
        jl,
        "--reference-id-column",
        "qid",
        "--reference-text-column",
        "q.body",
    ];
    let (pq_out, jl_out) = (p.dir.join("pq"), p.dir.join("jl"));
    run_ok(&p.input, &pq_out, &["--reference", &p.reference]);
    run_ok(&p.input, &jl_out, &args);
    // The same documents flagged with the same shares; the item with a null id is `file:1`.
    let first = format!("{jl}:1");
    let renamed: Vec<_> = (flags(&pq_out).into_iter())
        .map(|(id, by, share)| {
            let by = by.map(|b| match b.as_str() {
                "bench-0" => first.clone(),
                b => b.strip_prefix("bench-").unwrap().to_string(),
            });
            (id, by, share)
        })
        .collect();
    assert_eq!(flags(&jl_out), renamed);
    assert_eq!(summary(&jl_out)["contamination"]["files"][0]["items"], 12);
    // The task path gives the run's manifest.
    let (work, by_tasks) = (p.dir.join("work"), p.dir.join("by-tasks"));
    by_hand(&p.input, &work, &by_tasks, &args);
    assert_eq!(manifest_bytes(&jl_out), manifest_bytes(&by_tasks));
    // `explain` reads the item out of the JSON Lines file.
    let o = cd(["explain", "--json", "--id", "whole"]).arg(&jl_out).ok();
    let e = String::from_utf8(o.stdout).unwrap();
    assert!(e.contains(&first.replace('\\', "\\\\")), "{e}");
    assert!(e.contains("Constraints:"), "{e}");
    // A wrong field is named with the option that names it, and nothing is written.
    let bad = p.dir.join("bad");
    for (flag, field, says) in [
        ("--reference-text-column", "q", "expected a string"),
        (
            "--reference-text-column",
            "body",
            "pass the right name with --reference-text-column",
        ),
        (
            "--reference-id-column",
            "qid2",
            "pass the right name with --reference-id-column",
        ),
        (
            "--reference-id-column",
            "q",
            "'q' is read as a value and field 'q.body' inside it",
        ),
    ] {
        let mut a = args.to_vec();
        let at = a.iter().position(|x| *x == flag).unwrap();
        a[at + 1] = field;
        let err = run_cmd(&p.input, &bad, &a).fails();
        assert!(err.contains(says) && err.contains(jl), "{field}: {err}");
        assert!(!bad.join("manifest.parquet").exists());
    }
}
