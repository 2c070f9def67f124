//! JSON Lines input: the decisions of the same rows in Parquet, on the task path too; `apply`
//! writing the kept lines back byte for byte; bad lines named by file and line.

use std::io::Write;
use std::path::Path;

use polars::prelude::*;

use crate::common::*;
use corpus_dedup::synth::Doc;

/// One document as a line: fields in an order of its own, a nested label, a number written as
/// Parquet would not keep it (`2.50e0`), and a field the run never reads.
fn line(d: &Doc, i: usize) -> String {
    format!(
        r#"{{"meta": {{"lang": "{}", "skip": [1, {{"x": null}}]}}, "text": {}, "score": {}e0, "id": "{}"}}"#,
        ["en", "de", "fr"][i % 3],
        serde_json::to_string(&d.text).unwrap(),
        i % 7,
        d.id
    )
}

/// Writes `bytes` to `path`, gzip- or zstd-compressed as its name says.
fn write_file(path: &Path, bytes: &[u8]) {
    let name = path.to_string_lossy();
    let data = if name.ends_with(".gz") {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    } else if name.ends_with(".zst") {
        zstd::encode_all(bytes, 0).unwrap()
    } else {
        bytes.to_vec()
    };
    std::fs::write(path, data).unwrap();
}

/// The same three shards as Parquet (with `meta.lang` and `score` columns) and as JSON Lines
/// (plain, gzip, zstd); returns both globs.
fn both_formats(dir: &Path) -> (String, String) {
    let pq = dir.join("pq");
    let jl = dir.join("jl");
    std::fs::create_dir_all(&pq).unwrap();
    std::fs::create_dir_all(&jl).unwrap();
    let (_, docs) = three_shards(&dir.join("gen"));
    let sizes = [160, 120, 140];
    let names = [
        ("a-en", ".jsonl"),
        ("b-mixed", ".jsonl.gz"),
        ("c-zh", ".jsonl.zst"),
    ];
    let mut at = 0;
    for ((name, ext), n) in names.iter().zip(sizes) {
        let part = &docs[at..at + n];
        let lines: String = (part.iter().enumerate())
            .map(|(i, d)| line(d, at + i) + "\n")
            .collect();
        write_file(&jl.join(format!("{name}{ext}")), lines.as_bytes());
        let id: Vec<&str> = part.iter().map(|d| d.id.as_str()).collect();
        let text: Vec<&str> = part.iter().map(|d| d.text.as_str()).collect();
        let lang: Vec<&str> = (at..at + n).map(|i| ["en", "de", "fr"][i % 3]).collect();
        let score: Vec<f64> = (at..at + n).map(|i| (i % 7) as f64).collect();
        write_shard(
            &pq.join(format!("{name}.parquet")),
            &id,
            &text,
            vec![
                Column::new("meta.lang".into(), lang),
                Column::new("score".into(), score),
            ],
        );
        at += n;
    }
    (
        format!("{}/*.parquet", pq.display()),
        format!("{}/*", jl.display()),
    )
}

/// The manifest without its `file` column (the names differ by extension).
fn decisions(out: &Path) -> DataFrame {
    read_df(&out.join("manifest.parquet")).drop("file").unwrap()
}

#[test]
fn jsonl_gives_the_parquet_manifest_for_every_option_family() {
    let dir = temp_dir("jsonl-same");
    let (pq, jl) = both_formats(&dir);
    let families: [&[&str]; 7] = [
        &[],
        &["--paragraphs", "--substrings"],
        &["--method", "simhash"],
        &["--keep", "score"],
        &["--keep", "meta.lang=fr,de"],
        &["--partition-by", "meta.lang", "--report-group", "meta.lang"],
        &["--tasks", "3", "--threads", "1"],
    ];
    for (i, args) in families.iter().enumerate() {
        let (a, b) = (dir.join(format!("p{i}")), dir.join(format!("j{i}")));
        run_ok(&pq, &a, args);
        run_ok(&jl, &b, args);
        let (da, db) = (decisions(&a), decisions(&b));
        assert!(da.equals_missing(&db), "{args:?}:\n{da}\n{db}");
        assert!(!da.column("keep").unwrap().bool().unwrap().all());
    }
    // Row groups of 16 documents (a task seeks to the group its part starts in) and chunks of
    // 7: the same manifest.
    let out = dir.join("groups");
    run_cmd(&jl, &out, &["--tasks", "3", "--threads", "2"])
        .env("CORPUS_DEDUP_JSONL_GROUP_ROWS", "16")
        .env("CORPUS_DEDUP_CHUNK_ROWS", "7")
        .ok();
    assert!(decisions(&out).equals_missing(&decisions(&dir.join("p0"))));
    // The task path, as Ray and Slurm drive it, gives the run's manifest.
    let work = dir.join("work");
    let out = dir.join("tasks");
    crate::tasks::by_hand(&jl, &work, &out, &[]);
    assert!(decisions(&out).equals_missing(&decisions(&dir.join("j0"))));
}

#[test]
fn apply_writes_kept_lines_back_as_they_were() {
    let dir = temp_dir("jsonl-apply");
    let (_, jl) = both_formats(&dir);
    // One more file with what real files hold: a byte-order mark, \r\n line ends, blank lines,
    // no id field, and a last line without its line end.
    let texts = [
        "a page about rivers and the boats that sail on them, long enough to shingle",
        "a page about rivers and the boats that sail on them, long enough to shingle!",
        "something else entirely, about mountains and the people who climb them",
    ];
    let extra = format!(
        "\u{feff}{{\"text\": {}, \"n\": 1.0}}\r\n\r\n  \n{{\"n\": 2, \"text\": {}}}\r\n{{\"text\": {}}}",
        serde_json::to_string(texts[0]).unwrap(),
        serde_json::to_string(texts[1]).unwrap(),
        serde_json::to_string(texts[2]).unwrap()
    );
    let jl_dir = Path::new(&jl).parent().unwrap().to_path_buf();
    write_file(&jl_dir.join("d-raw.jsonl"), extra.as_bytes());
    let out = dir.join("out");
    let o = run_ok(&jl, &out, &["--paragraphs"]);
    assert!(o.status.success());
    assert_eq!(summary(&out)["blank_lines"], 2);
    let rows = manifest(&out);
    let raw: Vec<&Row> = rows
        .iter()
        .filter(|r| r.file.ends_with("d-raw.jsonl"))
        .collect();
    let ids: Vec<String> = raw
        .iter()
        .map(|r| r.id.rsplit('/').next().unwrap().to_string())
        .collect();
    // Rows count documents; ids without an id field name the line.
    assert_eq!(ids, ["d-raw.jsonl:1", "d-raw.jsonl:4", "d-raw.jsonl:5"]);
    assert_eq!(raw.iter().map(|r| r.row).collect::<Vec<_>>(), [0, 1, 2]);
    assert_eq!(
        raw.iter().map(|r| r.keep).collect::<Vec<_>>(),
        [true, false, true]
    );

    let kept = dir.join("kept");
    let apply = || {
        cd(["apply", "--quiet", "--manifest"])
            .arg(out.join("manifest.parquet"))
            .arg("--output")
            .arg(&kept)
            .arg("--dropped")
            .arg(dir.join("audit"))
            .ok()
    };
    apply();
    // Kept lines of the raw file: byte for byte, the mark and blank lines gone, the last line
    // still without its line end.
    let got = std::fs::read(kept.join("d-raw.jsonl")).unwrap();
    let want = format!(
        "{{\"text\": {}, \"n\": 1.0}}\r\n{{\"text\": {}}}",
        serde_json::to_string(texts[0]).unwrap(),
        serde_json::to_string(texts[2]).unwrap()
    );
    assert_eq!(String::from_utf8(got).unwrap(), want);
    // The dropped line, with the manifest's fields added.
    let audit = std::fs::read_to_string(dir.join("audit/d-raw.jsonl")).unwrap();
    let dropped: serde_json::Value = serde_json::from_str(audit.lines().next().unwrap()).unwrap();
    assert_eq!(dropped["n"], 2);
    let keeper = format!("{}/d-raw.jsonl:1", jl_dir.display());
    assert_eq!(dropped["duplicate_of"], keeper.as_str());
    // Compressed files come back compressed alike; a kept line is the input's line, but for a
    // text that lost paragraphs, whose text field alone changed.
    let spans = drop_spans(&out);
    let mut cut_lines = 0;
    for (name, ext) in [("b-mixed", ".jsonl.gz"), ("c-zh", ".jsonl.zst")] {
        let read = |p: &Path| -> Vec<u8> {
            let b = std::fs::read(p).unwrap();
            match ext {
                ".jsonl.gz" => {
                    let mut s = Vec::new();
                    std::io::Read::read_to_end(
                        &mut flate2::read::MultiGzDecoder::new(&b[..]),
                        &mut s,
                    )
                    .unwrap();
                    s
                }
                _ => zstd::decode_all(&b[..]).unwrap(),
            }
        };
        let file = format!("{name}{ext}");
        let input = read(&jl_dir.join(&file));
        let output = read(&kept.join(&file));
        let mut outs = output.split_inclusive(|&c| c == b'\n');
        for (line_in, (r, s)) in input.split_inclusive(|&c| c == b'\n').zip(
            rows.iter()
                .zip(&spans)
                .filter(|(r, _)| r.file.ends_with(&file)),
        ) {
            if !r.keep {
                continue;
            }
            let line_out = outs.next().unwrap();
            if s.as_ref().is_none_or(|s| s.is_empty()) {
                assert_eq!(line_in, line_out);
                continue;
            }
            cut_lines += 1;
            let (a, b): (serde_json::Value, serde_json::Value) = (
                serde_json::from_slice(line_in).unwrap(),
                serde_json::from_slice(line_out).unwrap(),
            );
            let keys =
                |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
            assert_eq!(keys(&a), keys(&b));
            assert_eq!(a["meta"], b["meta"]);
            assert!(b["text"].as_str().unwrap().len() < a["text"].as_str().unwrap().len());
            assert!(String::from_utf8_lossy(line_out).contains("e0, \"id\""));
        }
        assert!(outs.next().is_none());
    }
    assert!(cut_lines > 0);
    // A rerun finds every output complete.
    let o = apply();
    let line = String::from_utf8_lossy(&o.stdout);
    assert!(line.contains("\"shards_written\":0"), "{line}");
}

/// Runs over one JSON Lines file holding `content`; the error text, after checking that nothing
/// was written.
fn fails(name: &str, file: &str, content: &[u8]) -> String {
    let dir = temp_dir(&format!("jsonl-bad-{name}"));
    let path = dir.join(file);
    std::fs::write(&path, content).unwrap();
    let out = dir.join("out");
    let o = run_cmd(&path.display().to_string(), &out, &[]).output();
    assert!(!o.status.success(), "{name}: expected failure");
    assert!(!out.join("manifest.parquet").exists(), "{name}");
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains(file), "{name}: {err}");
    err
}

#[test]
fn bad_lines_are_named_by_file_and_line() {
    let ok = r#"{"text": "fine"}"#;
    let gz = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(format!("{ok}\n").repeat(2000).as_bytes())
            .unwrap();
        e.finish().unwrap()
    };
    let zst = zstd::encode_all(format!("{ok}\n").repeat(2000).as_bytes(), 0).unwrap();
    let cases: Vec<(&str, &str, Vec<u8>, &[&str])> = vec![
        (
            "malformed",
            "a.jsonl",
            format!("{ok}\n{{\"text\": \"x\"\n").into_bytes(),
            &["line 2", "not valid JSON"],
        ),
        (
            "array",
            "a.jsonl",
            format!("{ok}\n{ok}\n[1, 2]\n").into_bytes(),
            &["line 3", "an array, not a JSON object"],
        ),
        (
            "number-text",
            "a.jsonl",
            b"{\"text\": 12}\n".to_vec(),
            &["field 'text' at line 1", "is an integer, expected a string"],
        ),
        (
            "object-text",
            "a.jsonl",
            b"{\"text\": {\"a\": 1}}\n".to_vec(),
            &["is an object, expected a string"],
        ),
        (
            "missing-text",
            "a.jsonl",
            b"{\"body\": \"x\", \"url\": \"u\"}\n".to_vec(),
            &[
                "line 1",
                "no field 'text'",
                "its fields: body, url",
                "--text-column",
            ],
        ),
        (
            "utf8",
            "a.jsonl",
            b"{\"text\": \"caf\xe9\"}\n".to_vec(),
            &["line 1", "not valid JSON"],
        ),
        (
            "truncated-gz",
            "a.jsonl.gz",
            gz[..gz.len() / 2].to_vec(),
            &["gzip file complete"],
        ),
        (
            "truncated-zst",
            "a.jsonl.zst",
            zst[..zst.len() / 2].to_vec(),
            &["zstd file complete"],
        ),
        (
            "float-id",
            "a.jsonl",
            b"{\"text\": \"x\", \"id\": 1.5}\n".to_vec(),
            &["field 'id'", "a string or an integer"],
        ),
    ];
    for (name, file, content, says) in cases {
        let err = fails(name, file, &content);
        for s in says {
            assert!(err.contains(s), "{name}: {s:?} not in: {err}");
        }
    }
}

#[test]
fn a_long_line_blank_lines_and_crlf_are_read() {
    let dir = temp_dir("jsonl-long");
    let long = "word ".repeat(10 << 20);
    let content = format!(
        "\n{{\"text\": \"{long}\"}}\r\n\n{{\"text\": \"{long}\"}}\n{{\"text\": \"short\"}}\n   \n"
    );
    let path = dir.join("long.ndjson");
    std::fs::write(&path, content).unwrap();
    let out = dir.join("out");
    run_ok(&path.display().to_string(), &out, &[]);
    let s = summary(&out);
    assert_eq!(
        (s["documents_in"].as_u64(), s["blank_lines"].as_u64()),
        (Some(3), Some(3))
    );
    let rows = manifest(&out);
    assert_eq!(
        rows.iter().map(|r| r.keep).collect::<Vec<_>>(),
        [true, false, true]
    );
    assert!(rows[0].id.ends_with("long.ndjson:2") && rows[1].id.ends_with(":4"));
}

#[test]
fn an_index_takes_parquet_and_jsonl_nights_alike() {
    let dir = temp_dir("jsonl-index");
    let (pq, jl) = both_formats(&dir);
    let jl_dir = Path::new(&jl).parent().unwrap().to_path_buf();
    let pq_dir = Path::new(&pq).parent().unwrap().to_path_buf();
    // Night 1 is the English shard, night 2 the other two: Parquet then JSON Lines, JSON Lines
    // then Parquet, and Parquet twice, against an index each.
    let nights = |first: &str, second: &str, name: &str| {
        let index = dir.join(format!("index-{name}"));
        for (n, glob) in [(1, first), (2, second)] {
            run_cmd(glob, &dir.join(format!("{name}-{n}")), &["--paragraphs"])
                .arg("--index")
                .arg(&index)
                .args(["--batch", &format!("night-{n}")])
                .ok();
        }
        decisions(&dir.join(format!("{name}-2")))
    };
    // Night 2 holds night 1's pages again too, under another file name: dropped against night 1.
    std::fs::copy(pq_dir.join("a-en.parquet"), pq_dir.join("z-en.parquet")).unwrap();
    std::fs::copy(jl_dir.join("a-en.jsonl"), jl_dir.join("z-en.jsonl")).unwrap();
    let pq_first = format!("{}/a-en.parquet", pq_dir.display());
    let jl_first = format!("{}/a-en.jsonl", jl_dir.display());
    let pq_second = format!("{}/[bcz]-*.parquet", pq_dir.display());
    let jl_second = format!("{}/[bcz]-*", jl_dir.display());
    let a = nights(&pq_first, &jl_second, "pj");
    let b = nights(&jl_first, &pq_second, "jp");
    let c = nights(&pq_first, &pq_second, "pp");
    assert!(
        a.equals_missing(&c) && b.equals_missing(&c),
        "{a}\n{b}\n{c}"
    );
    let batches = a
        .column("duplicate_of_batch")
        .unwrap()
        .str()
        .unwrap()
        .clone();
    assert!(batches.iter().any(|b| b == Some("night-1")));
    // explain recomputes the similarity of a document dropped against night 1 from the texts of
    // both nights' shards, night 1's a JSON Lines file.
    let m = read_df(&dir.join("jp-2").join("manifest.parquet"));
    let against: Vec<&str> = (m.column("id").unwrap().str().unwrap().iter())
        .zip(
            m.column("duplicate_of_batch")
                .unwrap()
                .str()
                .unwrap()
                .iter(),
        )
        .filter(|(_, b)| *b == Some("night-1"))
        .map(|(id, _)| id.unwrap())
        .collect();
    let o = cd(["explain", "--json"])
        .arg(dir.join("jp-2"))
        .args(["--id", against[0]])
        .ok();
    let e: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(e["members"][0]["keep"], true, "{e}");
    assert!(e["members"][1]["jaccard"].as_f64().unwrap() >= 0.8, "{e}");
}

#[test]
fn apply_format_writes_the_other_format() {
    let dir = temp_dir("jsonl-format");
    let (pq, jl) = both_formats(&dir);
    let (outp, outj) = (dir.join("runp"), dir.join("runj"));
    run_ok(&pq, &outp, &["--paragraphs"]);
    run_ok(&jl, &outj, &["--paragraphs"]);
    let apply = |run: &Path, to: &str, extra: &[&str]| -> String {
        let o = cd(["apply", "--quiet", "--manifest"])
            .arg(run.join("manifest.parquet"))
            .arg("--output")
            .arg(dir.join(to))
            .args(extra)
            .ok();
        String::from_utf8(o.stdout).unwrap()
    };
    // Into the input's own directory: refused, nothing replaced.
    let o = cd(["apply", "--quiet", "--manifest"])
        .arg(outp.join("manifest.parquet"))
        .arg("--output")
        .arg(dir.join("pq"))
        .fails();
    assert!(o.contains("over input shard"), "{o}");
    apply(&outp, "kept-pq", &[]);
    let audit = dir.join("jl-as-pq-dropped");
    let audit = audit.to_str().unwrap();
    apply(
        &outj,
        "jl-as-pq",
        &["--format", "parquet", "--dropped", audit],
    );
    apply(&outp, "pq-as-jl", &["--format", "jsonl"]);
    apply(&outj, "jl-as-gz", &["--format", "jsonl.gz"]);
    for name in ["a-en", "b-mixed", "c-zh"] {
        let want = read_df(&dir.join("kept-pq").join(format!("{name}.parquet")));
        // JSON Lines as Parquet: the fields as columns in line order, numbers as floats, the
        // nested object as its JSON text; the same rows and texts (paragraphs cut).
        let got = read_df(&dir.join("jl-as-pq").join(format!("{name}.parquet")));
        let names: Vec<&str> = got.get_column_names().iter().map(|c| c.as_str()).collect();
        assert_eq!(names, ["meta", "text", "score", "id"]);
        assert_eq!(got.column("score").unwrap().dtype(), &DataType::Float64);
        for c in ["id", "text", "score"] {
            assert!(
                got.column(c).unwrap().equals(want.column(c).unwrap()),
                "{name} {c}"
            );
        }
        let meta = str_column(&got, "meta");
        assert!(meta[0].starts_with(r#"{"lang": ""#), "{}", meta[0]);
        // Parquet as JSON Lines: a row an object, its columns as fields in order.
        let lines =
            std::fs::read_to_string(dir.join("pq-as-jl").join(format!("{name}.jsonl"))).unwrap();
        let rows: Vec<serde_json::Value> = lines
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows.len(), want.height());
        assert!(lines.starts_with(r#"{"id":"#), "{lines}");
        let (ids, texts) = (str_column(&want, "id"), str_column(&want, "text"));
        for (i, r) in rows.iter().enumerate() {
            assert_eq!(r["id"], ids[i]);
            assert_eq!(r["text"], texts[i]);
            assert_eq!(r["meta.lang"].as_str().unwrap().len(), 2);
        }
        // Recompressed: the same lines as the input's format gives.
        let gz = std::fs::read(dir.join("jl-as-gz").join(format!("{name}.jsonl.gz"))).unwrap();
        let mut plain = String::new();
        std::io::Read::read_to_string(&mut flate2::read::MultiGzDecoder::new(&gz[..]), &mut plain)
            .unwrap();
        assert_eq!(plain.lines().count(), want.height());
    }
    // The audit as Parquet has the manifest's fields as columns.
    let dropped = read_df(&dir.join("jl-as-pq-dropped").join("a-en.parquet"));
    assert!(dropped.column("duplicate_of").is_ok());
    // A rerun finds every output complete, in either direction.
    let again = apply(
        &outj,
        "jl-as-pq",
        &["--format", "parquet", "--dropped", audit],
    );
    assert!(again.contains("\"shards_written\":0"), "{again}");
    let again = apply(&outp, "pq-as-jl", &["--format", "jsonl"]);
    assert!(again.contains("\"shards_written\":0"), "{again}");
}

#[test]
fn compressed_files_are_counted_by_their_tasks_not_by_the_plan() {
    let dir = temp_dir("jsonl-uncounted");
    // A .jsonl.zst of over a MiB compressed (hex text does not shrink much) whose last line is
    // broken: the plan reads its first MiB only, so it plans; the signatures task names the line.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut lines = String::new();
    for i in 0..6_000 {
        let text: String = (0..64)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                format!("{:08x}", state as u32)
            })
            .collect();
        lines.push_str(&format!("{{\"id\": \"d{i}\", \"text\": \"{text}\"}}\n"));
    }
    lines.push_str("{\"id\": \"broken\", \"text\": \n");
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    let big = input.join("big.jsonl.zst");
    write_file(&big, lines.as_bytes());
    assert!(std::fs::metadata(&big).unwrap().len() > 1 << 20);
    let glob = format!("{}/*.jsonl.zst", input.display());
    let (out, work) = (dir.join("out"), dir.join("work"));
    let plan = cd(["plan", "--quiet", "--input", &glob, "--output"])
        .arg(&out)
        .arg("--work")
        .arg(&work)
        .ok();
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    assert!(plan["documents"].is_null(), "{plan}");
    assert_eq!(plan["tasks"]["signatures"], 1);
    let err = run_cmd(&glob, &dir.join("out2"), &[]).fails();
    assert!(
        err.contains("big.jsonl.zst") && err.contains("line 6001"),
        "{err}"
    );

    // Killed in a signatures task, then run again: the manifest of a run never killed.
    let (_, jl) = both_formats(&dir);
    let clean = dir.join("clean");
    run_ok(&jl, &clean, &["--tasks", "3"]);
    let once = dir.join("once");
    let again = dir.join("again");
    run_cmd(&jl, &again, &["--tasks", "3"]).killed_at(&format!("signatures:1:{}", once.display()));
    run_ok(&jl, &again, &["--tasks", "3"]);
    assert!(decisions(&again).equals_missing(&decisions(&clean)));
    assert_eq!(summary(&again)["documents_in"], 420);
}

#[test]
fn plain_files_are_counted_in_byte_ranges_by_tasks_not_by_the_plan() {
    let dir = temp_dir("jsonl-ranges");
    let (pq, docs) = three_shards(&dir.join("gen"));
    // One plain file, no id field (ids are `file:LINE`), blank lines, `\r\n` and a long line
    // that spans many ranges.
    let long = "word ".repeat(4_000);
    let mut content = String::from("\u{feff}");
    let mut lines_of_docs = Vec::new();
    let mut line = 0;
    for (i, d) in docs.iter().enumerate() {
        if i % 9 == 0 {
            content.push_str("  \n");
            line += 1;
        }
        let text = match i {
            200 => format!("{} {long}", d.text),
            _ => d.text.clone(),
        };
        content.push_str(&format!(
            "{{\"text\": {}}}",
            serde_json::to_string(&text).unwrap()
        ));
        content.push_str(if i % 5 == 0 { "\r\n" } else { "\n" });
        line += 1;
        lines_of_docs.push(line);
    }
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    let file = input.join("all.jsonl");
    std::fs::write(&file, &content).unwrap();
    let glob = file.display().to_string();
    // Ranges of 500 bytes, groups of 7 documents, chunks of 5, three tasks.
    let small = |c: Cmd| {
        c.env("CORPUS_DEDUP_JSONL_RANGE_BYTES", "500")
            .env("CORPUS_DEDUP_JSONL_GROUP_ROWS", "7")
            .env("CORPUS_DEDUP_CHUNK_ROWS", "5")
    };
    let (whole, cut) = (dir.join("whole"), dir.join("cut"));
    run_ok(&glob, &whole, &[]);
    small(run_cmd(&glob, &cut, &["--tasks", "3", "--threads", "2"])).ok();
    assert_eq!(manifest_bytes(&whole), manifest_bytes(&cut));
    // Every id names its document's line; the decisions are the Parquet rows'.
    let rows = manifest(&whole);
    assert_eq!(rows.len(), docs.len());
    for (r, l) in rows.iter().zip(&lines_of_docs) {
        assert_eq!(r.id, format!("{glob}:{l}"));
    }
    let keep = |out: &Path| {
        read_df(&out.join("manifest.parquet"))
            .column("keep")
            .unwrap()
            .clone()
    };
    let parquet = dir.join("parquet");
    run_ok(&pq, &parquet, &[]);
    assert!(keep(&whole).equals_missing(&keep(&parquet)));
    assert_eq!(summary(&cut)["blank_lines"], docs.len().div_ceil(9) as u64);

    // The plan lists the file and reads no document (but of its first MiB, for an estimate): it
    // plans a file whose last line is broken; the lines stage runs first, three tasks.
    let broken = input.join("broken.jsonl");
    let body = content.trim_start_matches('\u{feff}');
    let copies = (1 << 20) / body.len() + 1;
    std::fs::write(&broken, format!("{}{{\"text\": \n", body.repeat(copies))).unwrap();
    // `plan --tasks 3` of `input` into `work`: its JSON.
    let plan = |input: &str, work: &Path, out: &Path| -> serde_json::Value {
        let args = [
            "plan", "--quiet", "--tasks", "3", "--input", input, "--output",
        ];
        let o = small(cd(args)).arg(out).arg("--work").arg(work).ok();
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let work = dir.join("work");
    let b = broken.display().to_string();
    let planned = plan(&b, &work, &dir.join("out"));
    assert!(planned["documents"].is_null(), "{planned}");
    assert_eq!(
        (
            planned["stages"][0].as_str(),
            planned["tasks"]["lines"].as_u64()
        ),
        (Some("lines"), Some(3))
    );
    let err = small(run_cmd(&b, &dir.join("out-broken"), &[])).fails();
    let at = format!("line {}", line * copies + 1);
    assert!(err.contains("broken.jsonl") && err.contains(&at), "{err}");

    // A file changed between the plan and its lines task is refused, naming it.
    std::fs::write(&broken, &content).unwrap();
    let task = |work: &Path, stage: &str, t: u64, n: u64| {
        small(crate::tasks::task_cmd(stage, t, n))
            .arg("--work")
            .arg(work)
    };
    let err = task(&work, "lines", 0, 3).fails();
    assert!(
        err.contains("broken.jsonl") && err.contains("changed"),
        "{err}"
    );

    // The task path, as Ray and Slurm drive it, and a lines task killed and run again: the
    // manifest of the run.
    let (work, out) = (dir.join("work2"), dir.join("tasks"));
    let counts = plan(&glob, &work, &out);
    task(&work, "lines", 1, 3).killed_at("lines:1");
    crate::tasks::every_task(&counts, |stage, t, n| {
        task(&work, stage, t, n).ok();
    });
    assert_eq!(manifest_bytes(&whole), manifest_bytes(&out));
}
