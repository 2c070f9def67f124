//! report.html: written by `run`, rebuilt by `corpus-dedup report`, self-contained, and rendered
//! by a real browser.

use std::path::{Path, PathBuf};

use polars::prelude::*;

use crate::common::*;

/// Two shards with a `source` column: `news` and `blog` documents from the generator, and a
/// `spam` source whose 30 documents are copies of one text (a source a run wipes out).
fn sources(dir: &Path) -> String {
    let en = corpus_dedup::synth::generate(160, corpus_dedup::synth::Lang::En, 31, "en");
    let zh = corpus_dedup::synth::generate(120, corpus_dedup::synth::Lang::Zh, 32, "zh");
    let spam_text = en[0].text.clone();
    for (name, docs, source) in [("a.parquet", &en, "news"), ("b.parquet", &zh, "blog")] {
        let mut id: Vec<String> = docs.iter().map(|d| d.id.clone()).collect();
        let mut text: Vec<String> = docs.iter().map(|d| d.text.clone()).collect();
        let mut src: Vec<&str> = vec![source; docs.len()];
        if name == "b.parquet" {
            for k in 0..30 {
                id.push(format!("spam-{k}"));
                text.push(format!("{spam_text} {k}"));
                src.push("spam");
            }
        }
        let n = id.len();
        let df = DataFrame::new(
            n,
            vec![
                Column::new("id".into(), id),
                Column::new("text".into(), text),
                Column::new("source".into(), src),
            ],
        )
        .unwrap();
        write_df(&dir.join(name), df);
    }
    format!("{}/*.parquet", dir.display())
}

fn run_with_report(name: &str) -> PathBuf {
    let dir = temp_dir(name);
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    let glob = sources(&input);
    let out = dir.join("out");
    run_ok(&glob, &out, &["--report-group", "source"]);
    out
}

#[test]
fn the_report_is_self_contained_flags_a_wiped_out_source_and_is_rebuilt() {
    let out = run_with_report("report-offline");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for section in [
        "Deduplication report",
        "Drop rate per input file",
        "Drop rate per source",
        "Per script",
        "Clusters per size",
        "Similarity of each dropped document",
        "P(candidate)",
        "Text length",
        "Largest clusters",
        "Just above the threshold",
        "Settings and stages",
    ] {
        assert!(html.contains(section), "no '{section}' in the report");
    }
    // The spam source is flagged, the others are not.
    assert!(html.contains("<b>spam</b>"), "spam not in the alert");
    let flagged = html.matches("<span class=\"badge\">high</span>").count();
    assert_eq!(flagged, 1, "only the spam source is an outlier");
    // Nothing is loaded from anywhere: no script, no link, no image, no URL.
    let lower = html.to_lowercase();
    for bad in [
        "http://", "https://", "<script", "<link", "<img", "<iframe", "url(", "@import", "src=",
        "//cdn",
    ] {
        assert!(!lower.contains(bad), "the report references '{bad}'");
    }
    assert!(!lower.contains("href="), "the report has a link");
    // The summary has the breakdown; `report` rebuilds the same bytes.
    let s = summary(&out);
    assert_eq!(s["breakdown"]["by_group"]["spam"]["documents"], 30);
    assert!(
        s["breakdown"]["by_group"]["spam"]["dropped"]
            .as_u64()
            .unwrap()
            >= 27
    );
    assert!(s["report_seconds"].as_f64().unwrap() > 0.0);
    std::fs::remove_file(out.join("report.html")).unwrap();
    cd(["report"]).arg(&out).ok();
    assert_eq!(
        std::fs::read_to_string(out.join("report.html")).unwrap(),
        html
    );
    report_rebuilds_in_slices(&out);
}

#[test]
fn a_missing_report_group_column_is_named() {
    let dir = temp_dir("report-group-missing");
    let (glob, _) = three_shards(&dir);
    let err = run_cmd(&glob, &dir.join("out"), &["--report-group", "domain"]).fails();
    assert!(
        err.contains("no column 'domain'") && err.contains("--report-group"),
        "{err}"
    );
}

/// Debian's chromium, which `.ci/run` installs.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("CORPUS_DEDUP_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    installed(path, "chromium (apt-get install chromium)")
}

#[test]
fn a_headless_browser_renders_the_report_offline() {
    let Some(browser) = chromium() else {
        return;
    };
    let out = run_with_report("report-browser");
    let page = format!("file://{}", out.join("report.html").display());
    let shot = out.join("shot.png");
    let profile = out.join("profile");
    let chrome = |extra: &[&str]| {
        std::process::Command::new(&browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
            ])
            // Every host name fails to resolve: the page must need none.
            .arg("--host-resolver-rules=MAP * ~NOTFOUND")
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(extra)
            .arg(&page)
            .output()
            .unwrap()
    };
    let o = chrome(&["--dump-dom"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dom = String::from_utf8_lossy(&o.stdout);
    assert!(dom.contains("Deduplication report"), "{dom}");
    assert!(
        dom.matches("<svg").count() >= 4,
        "charts missing from the rendered page"
    );
    let o = chrome(&[
        "--window-size=1280,2000",
        "--hide-scrollbars",
        &format!("--screenshot={}", shot.display()),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "{} bytes",
        png.len()
    );
}
