//! The report's `--sweep` section: what each listed threshold would drop, as a chart (documents
//! and text removed) and a table, and per `--report-group` value.

use std::fmt::Write;

use super::numbers::{bytes, num, pct, short_name};
use super::svg::{esc, linear_ticks, Axis, Chart, Mark};
use super::Report;

const DOCS: &str = "#e45756";
const TEXT: &str = "#4c78a8";
/// Groups in the per-group table (those with most drops at the lowest threshold).
const GROUPS: usize = 20;
/// The per-group chart's colours: a line for each of the groups with most drops.
const PALETTE: [&str; 6] = [
    "#e45756", "#4c78a8", "#54a24b", "#f58518", "#b279a2", "#72b7b2",
];

/// One row of summary.json's `sweep`.
struct Row<'a> {
    threshold: f64,
    dropped: u64,
    text_bytes: u64,
    lsh_recall: f64,
    groups: Option<&'a serde_json::Map<String, serde_json::Value>>,
}

fn rows(s: &serde_json::Value) -> Vec<Row<'_>> {
    (s["sweep"].as_array().into_iter().flatten())
        .map(|r| Row {
            threshold: r["threshold"].as_f64().unwrap_or(0.0),
            dropped: num(r, "dropped"),
            text_bytes: num(r, "text_bytes"),
            lsh_recall: r["lsh_recall"].as_f64().unwrap_or(0.0),
            groups: r["groups"].as_object(),
        })
        .collect()
}

/// The section, when the run had `--sweep`.
pub(super) fn sweep(h: &mut String, r: &Report) {
    let s = &r.summary;
    let rows = rows(s);
    if rows.is_empty() {
        return;
    }
    let (docs, text) = (num(s, "documents_in"), num(s, "text_bytes"));
    let share = |part: u64, whole: u64| 100.0 * part as f64 / whole.max(1) as f64;
    let _ = write!(
        h,
        "<h2>What each threshold would drop</h2><p class=\"note\">One run counted the documents the keeper rule drops at each threshold of <code>--sweep</code> (pairs decided as a run at that threshold decides them; candidates from the layouts of the lowest threshold and of the run's). The manifest is the run's threshold, {}. To check a threshold's drops by eye, label a sample with <code>corpus-dedup audit</code>.</p><div class=\"charts\">",
        r.threshold
    );
    let line = |f: &dyn Fn(&Row) -> f64| rows.iter().map(|x| (x.threshold, f(x))).collect();
    let lines = vec![
        (DOCS, "documents".into(), line(&|x| share(x.dropped, docs))),
        (
            TEXT,
            "text bytes".into(),
            line(&|x| share(x.text_bytes, text)),
        ),
    ];
    h.push_str(&percent_chart(
        r,
        rows.as_slice(),
        "Share removed at each threshold",
        "removed",
        lines,
    ));
    let th = crate::progress::thousands;
    h.push_str("<div><table><tr><th class=\"n\">threshold</th><th class=\"n\">documents dropped</th><th class=\"n\">share</th><th class=\"n\">text removed</th><th class=\"n\">share</th><th class=\"n\">LSH recall at it</th></tr>");
    for x in &rows {
        // The run's own threshold in bold.
        let (b, e) = match x.threshold == r.threshold {
            true => ("<strong>", "</strong>"),
            false => ("", ""),
        };
        let _ = write!(
            h,
            "<tr><td class=\"n\">{b}{}{e}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.4}</td></tr>",
            x.threshold,
            th(x.dropped),
            pct(x.dropped, docs),
            bytes(x.text_bytes),
            pct(x.text_bytes, text),
            x.lsh_recall
        );
    }
    h.push_str("</table></div></div>");
    by_group(h, r, &rows);
}

/// A chart's line: its colour, its name in the legend, its points.
type Line = (&'static str, String, Vec<(f64, f64)>);

/// A line per (colour, name, points) of percentages at each threshold of `rows`, the run's
/// threshold marked.
fn percent_chart(r: &Report, rows: &[Row], title: &str, y_label: &str, lines: Vec<Line>) -> String {
    let top = (lines.iter())
        .flat_map(|(_, _, points)| points.iter().map(|p| p.1))
        .fold(1.0f64, f64::max);
    let (lo, hi) = (rows[0].threshold, rows[rows.len() - 1].threshold);
    let pad = ((hi - lo) * 0.05).max(0.01);
    let mut marks = Vec::new();
    let mut legend = Vec::new();
    for (colour, name, points) in lines {
        marks.push(Mark::Line(points.clone(), colour));
        marks.push(Mark::Dots(points, colour));
        legend.push((colour, name));
    }
    marks.push(Mark::Rule(r.threshold, format!("this run {}", r.threshold)));
    Chart {
        title: title.into(),
        x: Axis {
            lo: lo - pad,
            hi: hi + pad,
            log: false,
        },
        y: Axis {
            lo: 0.0,
            hi: top * 1.1,
            log: false,
        },
        x_ticks: rows
            .iter()
            .map(|x| (x.threshold, format!("{}", x.threshold)))
            .collect(),
        y_ticks: linear_ticks(top)
            .into_iter()
            .map(|(v, l)| (v, format!("{l}%")))
            .collect(),
        x_label: "threshold (Jaccard)".into(),
        y_label: y_label.into(),
        marks,
        legend,
    }
    .render()
}

/// The groups with most drops at the lowest threshold, a line each: the share of the group's
/// documents each threshold drops.
fn group_chart(
    h: &mut String,
    r: &Report,
    rows: &[Row],
    names: &[(&String, u64)],
    share: &dyn Fn(&str, &Row) -> (u64, u64),
) {
    let percent = |(d, all): (u64, u64)| 100.0 * d as f64 / all.max(1) as f64;
    let lines = (names.iter().zip(PALETTE))
        .map(|(&(g, _), colour)| {
            let points = rows
                .iter()
                .map(|x| (x.threshold, percent(share(g, x))))
                .collect();
            // A long value (a URL, a path) is cut to what the legend has room for.
            (colour, short_name(g).chars().take(16).collect(), points)
        })
        .collect();
    let title = "Share of each group's documents dropped (the groups with most drops)";
    h.push_str(&percent_chart(r, rows, title, "dropped", lines));
}

/// Per `--report-group` value: its share of documents dropped at each threshold.
fn by_group(h: &mut String, r: &Report, rows: &[Row]) {
    let Some(lowest) = rows[0].groups else {
        return;
    };
    let mut names: Vec<(&String, u64)> =
        lowest.iter().map(|(g, v)| (g, num(v, "dropped"))).collect();
    names.sort_by_key(|&(g, d)| (std::cmp::Reverse(d), g));
    // A group's share of its own documents dropped at threshold `x`.
    let share = |g: &str, x: &Row| {
        let all = r.breakdown.by_group.get(g).map_or(0, |t| t.documents);
        let d = x
            .groups
            .and_then(|m| m.get(g))
            .map_or(0, |v| num(v, "dropped"));
        (d, all)
    };
    // The chart and the table side by side, as the section's first pair.
    h.push_str("<h3>Documents dropped per group</h3><div class=\"charts\">");
    group_chart(h, r, rows, &names, &share);
    h.push_str("<div><table><tr><th>group</th><th class=\"n\">documents</th>");
    for x in rows {
        let _ = write!(h, "<th class=\"n\">{}</th>", x.threshold);
    }
    h.push_str("</tr>");
    for &(g, _) in names.iter().take(GROUPS) {
        let all = share(g, &rows[0]).1;
        let _ = write!(
            h,
            "<tr><td class=\"id\">{}</td><td class=\"n\">{}</td>",
            esc(short_name(g)),
            crate::progress::thousands(all)
        );
        for x in rows {
            let (d, all) = share(g, x);
            let _ = write!(h, "<td class=\"n\">{}</td>", pct(d, all));
        }
        h.push_str("</tr>");
    }
    h.push_str("</table></div></div>");
}
