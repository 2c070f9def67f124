//! The report page: one HTML string with inline CSS and SVG; no script, no external reference.

use std::fmt::Write;

use super::appendix::{index, settings};
use super::charts::charts;
use super::numbers::{bytes, num, pct, short_count, short_name};
use super::svg::esc;
use super::{Doc, Report, Row, SNIPPET};
use crate::config::Method;
use crate::tally::Tally;
use crate::text::diff::Piece;

/// Characters of a text shown when unfolded.
const FULL_TEXT: usize = 20_000;
/// Rows of a per-file or per-group table shown before folding the rest.
const TABLE_ROWS: usize = 30;

const CSS: &str = r#"
:root { --fg:#1d2430; --muted:#5b6575; --line:#d9dee6; --bg:#ffffff; --panel:#f5f7fa; --bad:#b42318; --badbg:#fef3f2; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Noto Sans CJK SC", sans-serif; color: var(--fg); background: var(--bg); margin: 0; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 36px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 0 0 6px; color: var(--muted); font-weight: 600; }
.sub { color: var(--muted); margin: 0 0 20px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(200px, 1fr)); gap: 12px; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
.card .big { font-size: 22px; font-weight: 650; }
.card .small { color: var(--muted); font-size: 12.5px; }
.alert { background: var(--badbg); border: 1px solid #fecdca; color: var(--bad); border-radius: 8px; padding: 10px 14px; margin: 16px 0 0; }
.ok { background: #ecfdf3; border: 1px solid #abefc6; color: #067647; border-radius: 8px; padding: 10px 14px; margin: 16px 0 0; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); font-size: 12.5px; }
td.n, th.n { text-align: right; }
tr.flag td { background: var(--badbg); }
.badge { display: inline-block; font-size: 11px; font-weight: 650; color: #fff; background: var(--bad); border-radius: 4px; padding: 0 5px; margin-left: 6px; }
.bar { display: inline-block; height: 9px; background: var(--line); width: 120px; vertical-align: middle; margin-right: 6px; border-radius: 2px; overflow: hidden; }
.bar i { display: block; height: 100%; background: #e45756; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(440px, 1fr)); gap: 18px; }
figure { margin: 0; } figcaption { font-weight: 600; font-size: 13px; margin: 0 0 6px; }
.chart { width: 100%; height: auto; background: var(--panel); border: 1px solid var(--line); border-radius: 8px; }
.chart .grid { stroke: #e6e9ef; } .chart .axis { stroke: #8b95a5; }
.chart .tick { font-size: 10px; fill: var(--muted); } .chart .label { font-size: 11px; fill: var(--fg); }
.chart .rule { stroke: #1d2430; stroke-dasharray: 4 3; } .chart .rule-label { font-size: 10px; fill: #1d2430; }
.note { color: var(--muted); font-size: 12.5px; margin: 6px 0 0; }
details { border: 1px solid var(--line); border-radius: 8px; margin: 8px 0; background: var(--bg); }
details > summary { cursor: pointer; padding: 8px 12px; list-style-position: inside; }
details[open] > summary { border-bottom: 1px solid var(--line); }
details .body { padding: 8px 12px; }
.text { white-space: pre-wrap; word-break: break-word; font: 12.5px/1.5 ui-monospace, SFMono-Regular, Menlo, Consolas, "Noto Sans Mono CJK SC", monospace; background: var(--panel); padding: 8px 10px; border-radius: 6px; margin: 4px 0; max-height: 420px; overflow: auto; }
.diff del { background: #fde2e1; color: #8a1c13; text-decoration: line-through; }
.diff ins { background: #d3f5dd; color: #0b5b26; text-decoration: none; }
.diff mark { background: #fde68a; color: inherit; }
.diff .gap { color: var(--muted); font-style: italic; }
.id { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
footer { margin-top: 40px; color: var(--muted); font-size: 12.5px; }
"#;

/// Renders the report.
pub(crate) fn render(r: &Report) -> String {
    let s = &r.summary;
    let mut h = String::with_capacity(64 << 10);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>corpus-dedup report</title><style>{CSS}</style></head><body><main>"
    );
    header(&mut h, r);
    headline(&mut h, r);
    alerts(&mut h, r);
    slices(&mut h, r);
    charts(&mut h, r);
    super::sweep::sweep(&mut h, r);
    clusters(&mut h, r);
    pairs(&mut h, r);
    contamination(&mut h, r);
    super::spans::paragraphs(&mut h, r);
    super::spans::substrings(&mut h, r);
    index(&mut h, s);
    settings(&mut h, s);
    let _ = writeln!(
        h,
        "<footer>Written by corpus-dedup {} from summary.json and manifest.parquet, with texts read from the input in {} reads (the input has {} row groups). Rebuild it with <code>corpus-dedup report OUT</code>.</footer></main></body></html>",
        esc(s["version"].as_str().unwrap_or("")),
        r.texts_read,
        r.row_groups
    );
    h
}

fn header(h: &mut String, r: &Report) {
    let s = &r.summary;
    let method = match r.method {
        Method::Minhash => "MinHash LSH",
        Method::Simhash => "SimHash",
    };
    let batch = s["index"]["batch"]
        .as_str()
        .map(|b| format!(" · batch <b>{}</b>", esc(b)))
        .unwrap_or_default();
    let rule = match r.method {
        Method::Minhash => format!("threshold {}", r.threshold),
        Method::Simhash => format!(
            "Hamming distance at most {} (similarity {:.3} or more)",
            s["config"]["hamming"], r.threshold
        ),
    };
    let _ = write!(
        h,
        "<h1>Deduplication report</h1><p class=\"sub\">{} input files · {method}, {rule}{batch}</p>",
        num(s, "input_files"),
    );
}

fn card(h: &mut String, title: &str, big: &str, small: &str) {
    let _ = write!(
        h,
        "<div class=\"card\"><h3>{}</h3><div class=\"big\">{}</div><div class=\"small\">{}</div></div>",
        esc(title),
        big,
        small
    );
}

fn headline(h: &mut String, r: &Report) {
    let s = &r.summary;
    let (docs, kept, dropped) = (
        num(s, "documents_in"),
        num(s, "documents_kept"),
        num(s, "documents_dropped"),
    );
    let total: Tally = r
        .breakdown
        .by_file
        .values()
        .fold(Tally::default(), |mut a, t| {
            a += *t;
            a
        });
    let exact = num(s, "exact_duplicates").min(dropped);
    let largest = r.cluster_sizes.keys().next_back().copied().unwrap_or(0);
    h.push_str("<div class=\"cards\">");
    use crate::progress::thousands as t;
    card(
        h,
        "Documents",
        &t(docs),
        &format!(
            "kept {} · dropped {} ({})",
            t(kept),
            t(dropped),
            pct(dropped, docs)
        ),
    );
    card(
        h,
        "Text",
        &bytes(total.bytes),
        &format!(
            "kept {} · dropped {} ({})",
            bytes(total.bytes - total.bytes_dropped),
            bytes(total.bytes_dropped),
            pct(total.bytes_dropped, total.bytes)
        ),
    );
    card(
        h,
        "Exact copies dropped",
        &t(exact),
        &format!("exact copies, and {} near duplicates", t(dropped - exact)),
    );
    card(
        h,
        "Clusters",
        &t(num(s, "clusters")),
        &format!("of 2 or more documents; the largest has {}", t(largest)),
    );
    span_cards(h, r, &total);
    card(
        h,
        "Time",
        &match s["total_seconds"].as_f64().unwrap_or(0.0) {
            t if t < 10.0 => format!("{t:.2} s"),
            t => format!("{t:.1} s"),
        },
        &format!(
            "peak memory {:.0} MiB · {} threads · {} docs/s",
            s["peak_rss_mib"].as_f64().unwrap_or(0.0),
            num(s, "threads"),
            short_count(s["docs_per_second"].as_f64().unwrap_or(0.0) as u64)
        ),
    );
    h.push_str("</div>");
}

/// Cards for what `--reference`, `--paragraphs` and `--substrings` took, when the run used them.
fn span_cards(h: &mut String, r: &Report, total: &Tally) {
    use crate::progress::thousands as t;
    let s = &r.summary;
    let kept = total.bytes - total.bytes_dropped;
    if !s["contamination"].is_null() {
        let docs = num(&s["contamination"], "documents");
        card(
            h,
            "Contaminated",
            &t(docs),
            "documents holding a benchmark item: never kept",
        );
    }
    if !s["paragraphs"].is_null() {
        card(
            h,
            "Repeated paragraphs",
            &bytes(total.paragraph_bytes_removed),
            &format!(
                "{} of the kept text, in {} paragraphs, cut by apply",
                pct(total.paragraph_bytes_removed, kept),
                t(total.paragraphs_removed)
            ),
        );
    }
    if !s["substrings"].is_null() {
        card(
            h,
            "Repeated runs",
            &bytes(total.substring_bytes_removed),
            &format!(
                "{} of the kept text, runs of {}+ bytes, cut by apply",
                pct(total.substring_bytes_removed, kept),
                num(&s["substrings"], "min_bytes")
            ),
        );
    }
}

fn alerts(h: &mut String, r: &Report) {
    let flagged: Vec<&Row> = r
        .files
        .iter()
        .chain(&r.groups)
        .filter(|x| x.outlier)
        .collect();
    let overall = pct(
        num(&r.summary, "documents_dropped"),
        num(&r.summary, "documents_in"),
    );
    if flagged.is_empty() {
        let _ = write!(
            h,
            "<div class=\"ok\">No input file{} loses far more than the {overall} dropped overall.</div>",
            if r.groups.is_empty() { "" } else { " or group" }
        );
        return;
    }
    let names: Vec<String> = flagged
        .iter()
        .take(8)
        .map(|x| {
            format!(
                "<b>{}</b> ({})",
                esc(short_name(&x.name)),
                pct(x.tally.dropped, x.tally.documents)
            )
        })
        .collect();
    let _ = write!(
        h,
        "<div class=\"alert\">Check {} slice{} of the input that lose{} far more than the {overall} dropped overall: {}{}. A false giant cluster can wipe out a source; <code>corpus-dedup explain OUT --id ID</code> shows why a document went.</div>",
        flagged.len(),
        if flagged.len() == 1 { "" } else { "s" },
        if flagged.len() == 1 { "s" } else { "" },
        names.join(", "),
        if flagged.len() > 8 { ", ..." } else { "" }
    );
}

fn table(h: &mut String, what: &str, rows: &[Row], full_names: bool) {
    let head = format!(
        "<table><tr><th>{what}</th><th class=\"n\">documents</th><th class=\"n\">dropped</th><th>drop rate</th><th class=\"n\">text dropped</th></tr>"
    );
    let line = |x: &Row| {
        let rate = x.tally.drop_rate();
        let name = if full_names {
            &x.name[..]
        } else {
            short_name(&x.name)
        };
        format!(
            "<tr{}><td title=\"{}\">{}{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td><span class=\"bar\"><i style=\"width:{:.1}%\"></i></span>{}</td><td class=\"n\">{}</td></tr>",
            if x.outlier { " class=\"flag\"" } else { "" },
            esc(&x.name),
            esc(name),
            if x.outlier { "<span class=\"badge\">high</span>" } else { "" },
            x.tally.documents,
            x.tally.dropped,
            rate * 100.0,
            pct(x.tally.dropped, x.tally.documents),
            bytes(x.tally.bytes_dropped),
        )
    };
    h.push_str(&head);
    for x in rows.iter().take(TABLE_ROWS) {
        h.push_str(&line(x));
    }
    h.push_str("</table>");
    if rows.len() > TABLE_ROWS {
        let _ = write!(
            h,
            "<details><summary>{} more</summary><div class=\"body\">{head}",
            rows.len() - TABLE_ROWS
        );
        for x in &rows[TABLE_ROWS..] {
            h.push_str(&line(x));
        }
        h.push_str("</table></div></details>");
    }
}

fn slices(h: &mut String, r: &Report) {
    h.push_str("<h2>Drop rate per input file</h2>");
    // Outliers first, then input order.
    let mut files = r.files.clone();
    files.sort_by_key(|x| !x.outlier);
    table(h, "file", &files, false);
    if let Some(col) = r.summary["config"]["report_group"].as_str() {
        let _ = write!(h, "<h2>Drop rate per {}</h2>", esc(col));
        table(h, col, &r.groups, true);
        if r.groups_total > r.groups.len() as u64 {
            let _ = write!(
                h,
                "<p class=\"note\">{} values in all; the summary keeps the {} largest and every outlier.</p>",
                r.groups_total,
                r.groups.len()
            );
        }
    }
    h.push_str("<h2>Per script</h2>");
    let mut scripts = r.scripts.clone();
    for x in &mut scripts {
        x.name = crate::text::script::label(&x.name);
    }
    table(h, "script (of the first 256 bytes)", &scripts, true);
}

/// A text, its first [`SNIPPET`] characters shown and the rest folded.
fn text_block(h: &mut String, d: &Doc) {
    let t = match &d.text {
        None => {
            let _ = write!(
                h,
                "<div class=\"note\">Text not read for the report (it reads a bounded part of the input): <code>corpus-dedup explain OUT --id {}</code> shows it.</div>",
                esc(&d.id)
            );
            return;
        }
        Some(None) => {
            h.push_str("<div class=\"note\">(null text)</div>");
            return;
        }
        Some(Some(t)) => t,
    };
    let cut = t.char_indices().nth(SNIPPET).map_or(t.len(), |(i, _)| i);
    let _ = write!(h, "<div class=\"text\">{}", esc(&t[..cut]));
    if cut < t.len() {
        let end = t.char_indices().nth(FULL_TEXT).map_or(t.len(), |(i, _)| i);
        let _ = write!(
            h,
            "…</div><details><summary>whole text ({})</summary><div class=\"body\"><div class=\"text\">{}{}</div></div></details>",
            bytes(t.len() as u64),
            esc(&t[..end]),
            if end < t.len() { "\n[… cut]" } else { "" }
        );
    } else {
        h.push_str("</div>");
    }
}

fn doc_ref(d: &Doc) -> String {
    format!(
        "<span class=\"id\">{}</span> <span class=\"note\">{}:{}</span>",
        esc(&d.id),
        esc(short_name(&d.file)),
        d.row
    )
}

fn clusters(h: &mut String, r: &Report) {
    h.push_str("<h2>Largest clusters</h2>");
    if r.clusters.is_empty() {
        h.push_str("<p class=\"note\">No clusters: every document is unique.</p>");
        return;
    }
    for (n, c) in r.clusters.iter().enumerate() {
        let keeper = match (&c.keeper, &c.keeper_elsewhere) {
            (Some(k), _) => doc_ref(k),
            (None, Some(id)) => format!(
                "<span class=\"id\">{}</span> (in an earlier batch)",
                esc(id)
            ),
            _ => "-".into(),
        };
        let _ = write!(
            h,
            "<details{}><summary><b>{} documents</b> · cluster {} · kept {}</summary><div class=\"body\">",
            if n == 0 { " open" } else { "" },
            c.size,
            c.cluster_id,
            keeper
        );
        if let Some(k) = &c.keeper {
            h.push_str("<h3>kept</h3>");
            text_block(h, k);
        }
        for (d, s) in &c.members {
            let _ = write!(
                h,
                "<h3>dropped {} · similarity {}</h3>",
                doc_ref(d),
                s.map_or("-".into(), |v| format!("{v:.3}"))
            );
            text_block(h, d);
        }
        if c.size as usize > c.members.len() + 1 {
            let _ = write!(
                h,
                "<p class=\"note\">{} more members: <code>corpus-dedup explain OUT --id {}</code> lists them all.</p>",
                c.size as usize - c.members.len() - 1,
                esc(&c.members.first().map(|m| m.0.id.clone()).unwrap_or_default())
            );
        }
        h.push_str("</div></details>");
    }
}

fn diff_html(pieces: &[Piece]) -> String {
    let parts: Vec<String> = pieces
        .iter()
        .map(|p| match p {
            Piece::Same(t) => esc(t),
            Piece::Removed(t) => format!("<del>{}</del>", esc(t)),
            Piece::Added(t) => format!("<ins>{}</ins>", esc(t)),
            Piece::Gap(n) => format!("<span class=\"gap\">[… {n} equal words …]</span>"),
            Piece::Elided(n) => format!("<span class=\"gap\">[… {n} words …]</span>"),
            Piece::More(n) => format!("<span class=\"gap\">[… {n} more changes …]</span>"),
        })
        .collect();
    crate::text::diff::join_rendered(pieces, &parts)
}

fn pairs(h: &mut String, r: &Report) {
    let _ = write!(
        h,
        "<h2>Just above the threshold</h2><p class=\"note\">A sample of dropped documents whose similarity to their kept document is within 0.03 above {:.3}: the drops most worth a look. Word diff against the kept document: <del>only in the kept one</del>, <ins>only in the dropped one</ins>.</p>",
        r.threshold
    );
    if r.pairs.is_empty() {
        h.push_str("<p class=\"note\">None in this run.</p>");
        return;
    }
    for (n, p) in r.pairs.iter().enumerate() {
        let _ = write!(
            h,
            "<details{}><summary>similarity <b>{:.3}</b>{} · dropped {} · kept {}</summary><div class=\"body\"><div class=\"text diff\">{}</div></div></details>",
            if n == 0 { " open" } else { "" },
            p.similarity,
            p.jaccard.map(|j| format!(" (exact Jaccard {j:.3})")).unwrap_or_default(),
            doc_ref(&p.doc),
            doc_ref(&p.keeper),
            diff_html(&p.diff)
        );
    }
}

/// `--reference`: what the benchmark reference found, per file and item, and a few documents
/// with the item's text marked where they hold it.
fn contamination(h: &mut String, r: &Report) {
    let c = &r.summary["contamination"];
    if c.is_null() {
        return;
    }
    let th = crate::progress::thousands;
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let _ = write!(
        h,
        "<h2>Benchmark contamination</h2><p class=\"note\">{} documents hold text of a reference item (a share of its n-grams of {} or more, the n-grams of {} or more items, the benchmark's boilerplate, left out): all are dropped, {} of them also as near-duplicates.</p>",
        th(n(&c["documents"])),
        r.summary["config"]["reference"]["threshold"],
        crate::reference::BOILERPLATE_ITEMS,
        th(n(&c["also_duplicates"]))
    );
    h.push_str("<table><tr><th>reference file</th><th class=\"n\">items</th><th class=\"n\">matched</th><th class=\"n\">too short</th><th class=\"n\">empty</th><th class=\"n\">repeated text</th><th class=\"n\">boilerplate only</th><th class=\"n\">items found</th><th class=\"n\">documents flagged</th></tr>");
    for f in c["files"].as_array().into_iter().flatten() {
        let _ = write!(
            h,
            "<tr><td class=\"id\">{}</td>",
            esc(f["file"].as_str().unwrap_or(""))
        );
        for k in [
            "items",
            "matched",
            "too_short",
            "empty",
            "repeated_text",
            "boilerplate_only",
            "items_hit",
            "documents_flagged",
        ] {
            let _ = write!(h, "<td class=\"n\">{}</td>", th(n(&f[k])));
        }
        h.push_str("</tr>");
    }
    h.push_str("</table><h3>Items found most</h3><table><tr><th>item</th><th>reference file</th><th class=\"n\">documents</th></tr>");
    for it in c["most_hit"].as_array().into_iter().flatten() {
        let _ = write!(
            h,
            "<tr><td class=\"id\">{}</td><td class=\"id\">{}</td><td class=\"n\">{}</td></tr>",
            esc(it["id"].as_str().unwrap_or("")),
            esc(short_name(it["file"].as_str().unwrap_or(""))),
            th(n(&it["documents"]))
        );
    }
    h.push_str("</table>");
    if r.contaminated.is_empty() {
        return;
    }
    h.push_str("<p class=\"note\">Documents holding an item: <mark>the item's words found in the document</mark>, <del>item words the document lacks there</del>, the document's own words plain.</p>");
    for (k, d) in r.contaminated.iter().enumerate() {
        let _ = write!(
            h,
            "<details{}><summary>item <span class=\"id\">{}</span> · {:.0}% of its n-grams · {}</summary><div class=\"body\">",
            if k == 0 { " open" } else { "" },
            esc(&d.item),
            100.0 * d.share,
            doc_ref(&d.doc)
        );
        if d.matched.is_empty() {
            text_block(h, &d.doc);
        } else {
            let _ = write!(
                h,
                "<div class=\"text diff\">{}</div>",
                match_html(&d.matched)
            );
        }
        h.push_str("</div></details>");
    }
}

/// A reference item's match in a document: matched words marked.
fn match_html(pieces: &[Piece]) -> String {
    let parts: Vec<String> = pieces
        .iter()
        .map(|p| match p {
            Piece::Same(t) => format!("<mark>{}</mark>", esc(t)),
            Piece::Removed(t) => format!("<del>{}</del>", esc(t)),
            Piece::Added(t) => esc(t),
            Piece::Gap(n) => format!("<mark class=\"gap\">[… {n} matched words …]</mark>"),
            Piece::Elided(n) => format!("<span class=\"gap\">[… {n} words …]</span>"),
            Piece::More(n) => format!("<span class=\"gap\">[… {n} more changes …]</span>"),
        })
        .collect();
    crate::text::diff::join_rendered(pieces, &parts)
}
