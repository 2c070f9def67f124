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
    let top = (rows.iter())
        .map(|x| share(x.dropped, docs).max(share(x.text_bytes, text)))
        .fold(1.0f64, f64::max);
    let (lo, hi) = (rows[0].threshold, rows[rows.len() - 1].threshold);
    let pad = ((hi - lo) * 0.05).max(0.01);
    let line =
        |f: &dyn Fn(&Row) -> f64| rows.iter().map(|x| (x.threshold, f(x))).collect::<Vec<_>>();
    let chart = Chart {
        title: "Share removed at each threshold".into(),
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
        y_label: "removed".into(),
        marks: vec![
            Mark::Line(line(&|x| share(x.dropped, docs)), DOCS),
            Mark::Dots(line(&|x| share(x.dropped, docs)), DOCS),
            Mark::Line(line(&|x| share(x.text_bytes, text)), TEXT),
            Mark::Dots(line(&|x| share(x.text_bytes, text)), TEXT),
            Mark::Rule(r.threshold, format!("this run {}", r.threshold)),
        ],
        legend: vec![(DOCS, "documents".into()), (TEXT, "text bytes".into())],
    };
    h.push_str(&chart.render());
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
    let shown: Vec<&String> = names.iter().take(PALETTE.len()).map(|&(g, _)| g).collect();
    let line = |g: &str| -> Vec<(f64, f64)> {
        rows.iter()
            .map(|x| (x.threshold, percent(share(g, x))))
            .collect()
    };
    let top = (shown.iter())
        .flat_map(|g| line(g))
        .map(|(_, y)| y)
        .fold(1.0f64, f64::max);
    let (lo, hi) = (rows[0].threshold, rows[rows.len() - 1].threshold);
    let pad = ((hi - lo) * 0.05).max(0.01);
    let mut marks = Vec::new();
    let mut legend = Vec::new();
    for (g, &colour) in shown.iter().zip(PALETTE.iter()) {
        marks.push(Mark::Line(line(g), colour));
        marks.push(Mark::Dots(line(g), colour));
        // A long value (a URL, a path) is cut to what the legend has room for.
        let name: String = short_name(g).chars().take(16).collect();
        legend.push((colour, name));
    }
    marks.push(Mark::Rule(r.threshold, format!("this run {}", r.threshold)));
    let chart = Chart {
        title: "Share of each group's documents dropped (the groups with most drops)".into(),
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
        y_label: "dropped".into(),
        marks,
        legend,
    };
    h.push_str(&chart.render());
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
