//! The report's charts section: cluster sizes, similarities of drops to their kept documents,
//! the LSH S-curve (or SimHash's distances), and text lengths of kept and dropped documents.

use std::fmt::Write;

use super::numbers::pct;
use super::svg::{decades, linear_ticks, Axis, Chart, Mark};
use super::Report;
use crate::tally::LENGTH_BUCKETS;

const KEPT: &str = "#4c78a8";
const DROPPED: &str = "#e45756";
const LINE: &str = "#54a24b";

pub(super) fn charts(h: &mut String, r: &Report) {
    h.push_str("<h2>Clusters and similarities</h2><div class=\"charts\">");
    // Cluster sizes, log-log.
    let max_size = r.cluster_sizes.keys().next_back().copied().unwrap_or(2) as f64;
    let max_count = r.cluster_sizes.values().copied().max().unwrap_or(1) as f64;
    let pts: Vec<(f64, f64)> = r
        .cluster_sizes
        .iter()
        .map(|(&s, &n)| (s as f64, n as f64))
        .collect();
    let sizes = Chart {
        title: "Clusters per size (log-log)".into(),
        x: Axis {
            lo: 1.0,
            hi: (max_size * 1.5).max(10.0),
            log: true,
        },
        y: Axis {
            lo: 0.8,
            hi: (max_count * 1.5).max(10.0),
            log: true,
        },
        x_ticks: decades(1.0, (max_size * 1.5).max(10.0)),
        y_ticks: decades(1.0, (max_count * 1.5).max(10.0)),
        x_label: "cluster size (documents)".into(),
        y_label: "clusters".into(),
        marks: vec![Mark::Line(pts.clone(), "#9ecae9"), Mark::Dots(pts, KEPT)],
        legend: vec![],
    };
    h.push_str(&sizes.render());

    // Similarity of dropped documents to their keepers.
    let lo = ((r.threshold - 0.2).max(0.0) * 100.0).floor() / 100.0;
    let width = 0.01;
    let n_buckets = ((1.0 - lo) / width).round() as usize + 1;
    let mut counts = vec![0u64; n_buckets];
    for &v in &r.similarities {
        let b = (((f64::from(v) - lo) / width).floor().max(0.0) as usize).min(n_buckets - 1);
        counts[b] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    let sim = Chart {
        title: "Similarity of each dropped document to its kept one".into(),
        x: Axis {
            lo,
            hi: 1.0 + width,
            log: false,
        },
        y: Axis {
            lo: 0.0,
            hi: top * 1.1,
            log: false,
        },
        x_ticks: (0..=((1.0 - lo) / 0.05).round() as usize)
            .map(|i| lo + 0.05 * i as f64)
            .map(|x| (x + width / 2.0, format!("{x:.2}")))
            .collect(),
        y_ticks: linear_ticks(top),
        x_label: "similarity (1.00 = exact copy)".into(),
        y_label: "documents".into(),
        marks: vec![
            Mark::Bars(
                counts
                    .iter()
                    .enumerate()
                    .map(|(i, &c)| (lo + width * i as f64, lo + width * (i + 1) as f64, c as f64))
                    .collect(),
                DROPPED,
            ),
            Mark::Rule(r.threshold, format!("threshold {}", r.threshold)),
        ],
        legend: vec![],
    };
    // The chart and its note share one grid cell.
    h.push_str("<div>");
    h.push_str(&sim.render());
    let below = r
        .similarities
        .iter()
        .filter(|&&v| f64::from(v) < r.threshold - 1e-6)
        .count() as u64;
    if below > 0 {
        let _ = write!(
            h,
            "<p class=\"note\">{} dropped documents ({} of the drops) are less similar than the threshold to their kept document: they joined its cluster through other members (a chain of near duplicates).</p>",
            crate::progress::thousands(below),
            pct(below, r.similarities.len() as u64)
        );
    }
    h.push_str("</div>");

    // The S-curve of the LSH layout.
    if let (Some(b), Some(rows)) = (
        r.summary["lsh_bands"].as_u64(),
        r.summary["lsh_rows"].as_u64(),
    ) {
        let pts: Vec<(f64, f64)> = (0..=100)
            .map(|i| {
                let s = i as f64 / 100.0;
                (
                    s,
                    crate::lsh::candidate_probability(s, b as usize, rows as usize),
                )
            })
            .collect();
        let curve = Chart {
            title: format!("P(candidate) for {b} bands x {rows} rows"),
            x: Axis {
                lo: 0.0,
                hi: 1.0,
                log: false,
            },
            y: Axis {
                lo: 0.0,
                hi: 1.0,
                log: false,
            },
            x_ticks: (0..=5)
                .map(|i| (i as f64 / 5.0, format!("{:.1}", i as f64 / 5.0)))
                .collect(),
            y_ticks: (0..=4)
                .map(|i| (i as f64 / 4.0, format!("{:.2}", i as f64 / 4.0)))
                .collect(),
            x_label: "Jaccard similarity".into(),
            y_label: "P(found as candidate)".into(),
            marks: vec![
                Mark::Line(pts, LINE),
                Mark::Rule(r.threshold, format!("threshold {}", r.threshold)),
            ],
            legend: vec![],
        };
        h.push_str(&curve.render());
    }

    // Text length, kept vs dropped.
    let kept = &r.breakdown.length_kept;
    let dropped = &r.breakdown.length_dropped;
    let used: Vec<usize> = (0..LENGTH_BUCKETS)
        .filter(|&i| kept.get(i).copied().unwrap_or(0) + dropped.get(i).copied().unwrap_or(0) > 0)
        .collect();
    if let (Some(&first), Some(&last)) = (used.first(), used.last()) {
        let top = used
            .iter()
            .map(|&i| {
                kept.get(i)
                    .copied()
                    .unwrap_or(0)
                    .max(dropped.get(i).copied().unwrap_or(0))
            })
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        let bars = |v: &Vec<u64>, off: f64| {
            (first..=last)
                .map(|i| {
                    let x = i as f64 + off;
                    (x, x + 0.45, v.get(i).copied().unwrap_or(0) as f64)
                })
                .collect::<Vec<_>>()
        };
        let label = |i: usize| match i {
            0..=9 => format!("{} B", 1u64 << i),
            10..=19 => format!("{} KiB", 1u64 << (i - 10)),
            _ => format!("{} MiB", 1u64 << (i - 20)),
        };
        let length = Chart {
            title: "Text length, kept and dropped documents".into(),
            x: Axis {
                lo: first as f64,
                hi: last as f64 + 1.0,
                log: false,
            },
            y: Axis {
                lo: 0.0,
                hi: top * 1.1,
                log: false,
            },
            x_ticks: (first..=last)
                .step_by(((last - first) / 8).max(1))
                .map(|i| (i as f64 + 0.5, label(i)))
                .collect(),
            y_ticks: linear_ticks(top),
            x_label: "text bytes (from)".into(),
            y_label: "documents".into(),
            marks: vec![
                Mark::Bars(bars(kept, 0.05), KEPT),
                Mark::Bars(bars(dropped, 0.5), DROPPED),
            ],
            legend: vec![(KEPT, "kept".into()), (DROPPED, "dropped".into())],
        };
        h.push_str(&length.render());
    }
    h.push_str("</div>");
}
