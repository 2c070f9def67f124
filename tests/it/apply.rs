//! `corpus-dedup apply`: the deduplicated shards.

use std::path::Path;

use polars::prelude::*;

use crate::common::*;

/// Three shards in `dir/in` and a run over them in `dir/out`.
fn run_three(dir: &Path) -> std::path::PathBuf {
    let input = dir.join("in");
    let (glob, _) = three_shards(&input);
    let out = dir.join("out");
    run_ok(&glob, &out, &[]);
    out
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn json_line(o: &std::process::Output) -> serde_json::Value {
    let out = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

#[test]
fn apply_writes_each_shards_kept_rows_with_its_schema_and_resumes() {
    let dir = temp_dir("apply-kept");
    let out = run_three(&dir);
    let m = manifest(&out);
    let manifest_path = out.join("manifest.parquet");
    let kept = dir.join("kept");
    let dropped = dir.join("dropped");
    let apply = |extra: &[&str]| {
        cd(["apply", "--quiet", "--manifest"])
            .arg(&manifest_path)
            .arg("--output")
            .arg(&kept)
            .arg("--dropped")
            .arg(&dropped)
            .args(extra)
            .ok()
    };
    let line = json_line(&apply(&[]));
    assert_eq!(line["shards_written"], 3);
    let n_kept = m.iter().filter(|r| r.keep).count();
    assert_eq!(line["rows_kept"], n_kept);
    assert!(n_kept < m.len() && n_kept > 0);
    let files = ["a-en.parquet", "b-mixed.parquet", "c-zh.parquet"];
    assert_eq!(names(&kept), files);
    assert_eq!(names(&dropped), files);
    let mut total = 0;
    for f in files {
        let src = read_df(&dir.join("in").join(f));
        let rows: Vec<&Row> = m.iter().filter(|r| r.file.ends_with(f)).collect();
        let mask: Vec<bool> = {
            let mut v = vec![false; src.height()];
            for r in &rows {
                v[r.row as usize] = r.keep;
            }
            v
        };
        let keep = BooleanChunked::from_slice("k".into(), &mask);
        // Same schema and column order, the kept rows in input order.
        let out_df = read_df(&kept.join(f));
        assert_eq!(out_df.schema(), src.schema());
        assert!(out_df.equals_missing(&src.filter(&keep).unwrap()));
        total += out_df.height();
        // The dropped rows, with their keeper and similarity from the manifest.
        let gone = read_df(&dropped.join(f));
        assert_eq!(gone.height(), mask.iter().filter(|&&k| !k).count());
        let ids = str_column(&gone, "id");
        let dup = str_column(&gone, "duplicate_of");
        for (id, d) in ids.iter().zip(&dup) {
            let r = rows.iter().find(|r| r.id == *id).unwrap();
            assert_eq!(r.duplicate_of.as_deref(), Some(*d));
        }
        assert!(gone.column("similarity").unwrap().null_count() == 0);
    }
    assert_eq!(total, n_kept);

    // A rerun skips the complete shards; a shard deleted is written again, byte for byte.
    let before: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(kept.join(f)).unwrap())
        .collect();
    std::fs::remove_file(kept.join(files[1])).unwrap();
    let line = json_line(&apply(&["--threads", "1"]));
    assert_eq!(line["shards_written"], 1);
    assert_eq!(line["shards_already_complete"], 2);
    for (f, b) in files.iter().zip(&before) {
        assert_eq!(&std::fs::read(kept.join(f)).unwrap(), b, "{f}");
    }
    // No temporary files are left.
    assert!(names(&kept).iter().all(|n| !n.contains(".tmp")));
}

#[test]
fn apply_dry_run_writes_nothing_and_a_changed_shard_is_refused() {
    let dir = temp_dir("apply-dry");
    let out = run_three(&dir);
    let manifest_path = out.join("manifest.parquet");
    let target = dir.join("deduplicated");
    let o = cd(["apply", "--dry-run", "--manifest"])
        .arg(&manifest_path)
        .arg("--output")
        .arg(&target)
        .ok();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("a-en.parquet") && text.contains("total"),
        "{text}"
    );
    assert_eq!(json_line(&o)["dry_run"], true);
    assert!(!target.exists(), "a dry run made the output directory");

    // One shard rewritten with other rows: refused before anything is written.
    let shard = dir.join("in/b-mixed.parquet");
    let df = read_df(&shard);
    write_df(&shard, df.slice(1, df.height() - 1));
    let err = cd(["apply", "--manifest"])
        .arg(&manifest_path)
        .arg("--output")
        .arg(&target)
        .fails();
    assert!(
        err.contains("b-mixed.parquet' changed since the manifest was made"),
        "{err}"
    );
    assert!(!target.exists());

    // A manifest that is not one.
    let err = cd(["apply", "--manifest"])
        .arg(dir.join("in/a-en.parquet"))
        .arg("--output")
        .arg(&target)
        .fails();
    assert!(err.contains("not written by"), "{err}");
}

#[test]
fn apply_rehydrates_kept_rows_by_cluster_size() {
    let dir = temp_dir("apply-upsample");
    let out = run_three(&dir);
    let m = manifest(&out);
    let kept = dir.join("kept");
    let apply = |upsample: &str| {
        cd(["apply", "--quiet", "--manifest"])
            .arg(out.join("manifest.parquet"))
            .arg("--output")
            .arg(&kept)
            .args(["--cluster-size-column", "n", "--upsample", upsample])
    };
    let line = json_line(&apply("1=1,2=3,3-=2").ok());
    let copies = |size: u32| match size {
        1 => 1,
        2 => 3,
        _ => 2,
    };
    let want: u64 = m
        .iter()
        .filter(|r| r.keep)
        .map(|r| copies(r.cluster_size.unwrap()))
        .sum();
    assert_eq!(line["rows_written"], want);
    assert!(want > line["rows_kept"].as_u64().unwrap());
    // Each kept row, its copies next to it, in input order, with its cluster size.
    let f = "a-en.parquet";
    let got = read_df(&kept.join(f));
    let ids = str_column(&got, "id");
    let sizes = u32_column(&got, "n");
    let mut expected: Vec<(&str, u32)> = Vec::new();
    for r in m.iter().filter(|r| r.keep && r.file.ends_with(f)) {
        let s = r.cluster_size.unwrap();
        expected.extend(std::iter::repeat_n((r.id.as_str(), s), copies(s) as usize));
    }
    let found: Vec<(&str, u32)> = ids.into_iter().zip(sizes).collect();
    assert_eq!(found, expected);
    // A rerun with other weights rewrites; the preset and bad tables.
    let line = json_line(&apply("fineweb2").ok());
    assert_eq!(line["shards_written"], 3);
    for bad in ["2=0", "1-3=2,3-4=1", "x=1", "5-2=1"] {
        let err = apply(bad).fails();
        assert!(
            err.contains("--upsample") && err.contains("fineweb2"),
            "{bad}: {err}"
        );
    }
    let err = cd(["apply", "--quiet", "--manifest"])
        .arg(out.join("manifest.parquet"))
        .arg("--output")
        .arg(dir.join("other"))
        .args(["--cluster-size-column", "text"])
        .fails();
    assert!(err.contains("'text' already"), "{err}");
}
