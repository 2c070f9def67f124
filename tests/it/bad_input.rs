//! Bad input: each case exits non-zero with a one-paragraph message that names the culprit and
//! the fix, and never panics.

use polars::prelude::*;

use crate::common::*;

fn good_shard(path: &std::path::Path) {
    let text = vec!["a b c d e f g", "h i j k l m n"];
    let id = vec!["x", "y"];
    write_df(
        path,
        DataFrame::new(
            2,
            vec![
                Column::new("id".into(), id),
                Column::new("text".into(), text),
            ],
        )
        .unwrap(),
    );
}

fn run_on(input: &str, out: &std::path::Path, extra: &[&str]) -> String {
    run_cmd(input, out, extra).fails()
}

#[test]
fn empty_glob_and_missing_file() {
    let dir = temp_dir("bad-glob");
    let err = run_on(
        &format!("{}/*.parquet", dir.display()),
        &dir.join("out"),
        &[],
    );
    assert!(
        err.contains("matches no file") && err.contains(&dir.display().to_string()),
        "{err}"
    );
    let err = run_on(
        &format!("{}/nope.parquet", dir.display()),
        &dir.join("out"),
        &[],
    );
    assert!(
        err.contains("nope.parquet") && err.contains("matches no file"),
        "{err}"
    );
    assert!(!dir.join("out").join("manifest.parquet").exists());
}

#[test]
fn not_parquet_and_truncated_parquet() {
    let dir = temp_dir("bad-parquet");
    let f = dir.join("notes.parquet");
    std::fs::write(&f, "this is not parquet at all\n").unwrap();
    let err = run_on(f.to_str().unwrap(), &dir.join("out"), &[]);
    assert!(
        err.contains("notes.parquet") && err.contains("cannot read Parquet"),
        "{err}"
    );

    let good = dir.join("good.parquet");
    good_shard(&good);
    let bytes = std::fs::read(&good).unwrap();
    let t = dir.join("truncated.parquet");
    std::fs::write(&t, &bytes[..bytes.len() / 2]).unwrap();
    let err = run_on(t.to_str().unwrap(), &dir.join("out"), &[]);
    assert!(
        err.contains("truncated.parquet") && err.contains("cannot read Parquet"),
        "{err}"
    );

    // Intact footer, garbage in the data pages.
    let mut bad = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data-samples/synthetic/en-00000.parquet"
    ))
    .unwrap();
    for b in &mut bad[2000..6000] {
        *b = b.wrapping_mul(7).wrapping_add(13);
    }
    let c = dir.join("corrupt.parquet");
    std::fs::write(&c, &bad).unwrap();
    let err = run_on(c.to_str().unwrap(), &dir.join("out"), &[]);
    assert!(
        err.contains("corrupt.parquet") && err.contains("cannot read Parquet"),
        "{err}"
    );
}

#[test]
fn missing_and_mistyped_columns() {
    let dir = temp_dir("bad-columns");
    let f = dir.join("s.parquet");
    let body = vec!["a b c", "d e f"];
    let n = vec![1i64, 2];
    write_df(
        &f,
        DataFrame::new(
            2,
            vec![Column::new("body".into(), body), Column::new("n".into(), n)],
        )
        .unwrap(),
    );
    let err = run_on(f.to_str().unwrap(), &dir.join("out"), &[]);
    assert!(
        err.contains("no column 'text'")
            && err.contains("body, n")
            && err.contains("--text-column"),
        "{err}"
    );
    let err = run_on(
        f.to_str().unwrap(),
        &dir.join("out"),
        &["--text-column", "n"],
    );
    assert!(
        err.contains("column 'n'") && err.contains("i64") && err.contains("string"),
        "{err}"
    );
    let err = run_on(
        f.to_str().unwrap(),
        &dir.join("out"),
        &["--text-column", "body", "--id-column", "uid"],
    );
    assert!(
        err.contains("no column 'uid'") && err.contains("--id-column"),
        "{err}"
    );
    let err = run_on(
        f.to_str().unwrap(),
        &dir.join("out"),
        &["--text-column", "body", "--keep", "score"],
    );
    assert!(err.contains("no column 'score'"), "{err}");
    let err = run_on(
        f.to_str().unwrap(),
        &dir.join("out"),
        &["--text-column", "body", "--keep", "body"],
    );
    assert!(
        err.contains("column 'body'") && err.contains("numeric"),
        "{err}"
    );
}

#[test]
fn duplicate_ids_fail_unless_allowed() {
    let dir = temp_dir("bad-ids");
    good_shard(&dir.join("a.parquet"));
    good_shard(&dir.join("b.parquet"));
    let glob = format!("{}/*.parquet", dir.display());
    let err = run_on(&glob, &dir.join("out"), &[]);
    assert!(
        err.contains("duplicate id 'x'")
            && err.contains("a.parquet row 0")
            && err.contains("b.parquet row 0"),
        "{err}"
    );
    assert!(err.contains("--allow-duplicate-ids"), "{err}");
    let out = dir.join("ok");
    run_ok(&glob, &out, &["--allow-duplicate-ids"]);
    assert_eq!(manifest(&out).len(), 4);
}

#[test]
fn unwritable_output() {
    let dir = temp_dir("bad-output");
    good_shard(&dir.join("a.parquet"));
    let blocker = dir.join("file");
    std::fs::write(&blocker, "x").unwrap();
    let err = run_on(
        dir.join("a.parquet").to_str().unwrap(),
        &blocker.join("out"),
        &[],
    );
    assert!(
        err.contains("cannot write output") && err.contains("file/out"),
        "{err}"
    );
}

#[test]
fn bad_flags() {
    let dir = temp_dir("bad-flags");
    good_shard(&dir.join("a.parquet"));
    let input = dir.join("a.parquet");
    let input = input.to_str().unwrap();
    let out = dir.join("out");
    let err = run_on(input, &out, &["--threshhold", "0.8"]);
    assert!(err.contains("--threshhold"), "{err}");
    for t in ["0", "1.2", "-0.5"] {
        let err = run_on(input, &out, &[&format!("--threshold={t}")]);
        assert!(
            err.contains("--threshold") && err.contains("(0, 1]"),
            "{err}"
        );
    }
    let err = run_on(input, &out, &["--bands", "20", "--rows", "7"]);
    assert!(err.contains("exceeds --num-perm 128"), "{err}");
    let err = run_on(input, &out, &["--bands", "20"]);
    assert!(err.contains("--bands and --rows go together"), "{err}");
    let err = run_on(input, &out, &["--tokenizer", "klingon"]);
    assert!(err.contains("klingon"), "{err}");
    let err = cd(["run", "--quiet", "--output"]).arg(&out).fails();
    assert!(err.contains("no input"), "{err}");
    let cfg = dir.join("bad.toml");
    std::fs::write(&cfg, "treshold = 0.8\n").unwrap();
    let err = run_on(input, &out, &["--config", cfg.to_str().unwrap()]);
    assert!(
        err.contains("bad.toml") && err.contains("treshold"),
        "{err}"
    );
}

#[test]
fn text_that_is_not_utf8_names_the_file() {
    let dir = temp_dir("bad-utf8");
    let long = "x".repeat(300);
    let bytes: Vec<Vec<u8>> = vec![
        long.clone().into_bytes(),
        [b"\xff\xfe not utf-8 ".as_slice(), long.as_bytes()].concat(),
    ];
    let bin = BinaryChunked::from_iter_values("text".into(), bytes.iter().map(Vec::as_slice));
    // Parquet requires UTF-8 in a string column; some writers do not check, and this test
    // writes such a shard on purpose.
    // SAFETY: the column is only written to a file here, never read as strings by this process.
    let text = unsafe { bin.to_string_unchecked() };
    let path = dir.join("bad.parquet");
    let df = DataFrame::new(
        2,
        vec![
            Column::new("id".into(), ["a", "b"]),
            text.into_series().into_column(),
        ],
    )
    .unwrap();
    write_df(&path, df);
    for extra in [&[][..], &["--substrings"][..]] {
        let err = run_on(path.to_str().unwrap(), &dir.join("out"), extra);
        assert!(
            err.contains("bad.parquet") && err.contains("not UTF-8") && err.contains("re-encode"),
            "{err}"
        );
    }
}
