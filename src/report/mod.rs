//! `OUT/report.html`: what a person looks at in the morning. One self-contained file (inline CSS
//! and SVG, no script, nothing from the network) built from `summary.json`, the manifest and a
//! few dozen texts read back from the shards (row by row, so its cost does not grow with the
//! corpus beyond one pass over the manifest).
//!
//! [`build`] gathers the figures ([`Report`]); [`html`] renders them. `run` writes the report
//! after the summary; `corpus-dedup report OUT` rebuilds it from an existing output.

mod appendix;
mod charts;
pub(crate) mod html;
pub(crate) mod numbers;
mod shown;
mod spans;
mod svg;
mod sweep;
mod view;

use std::collections::{BTreeMap, HashMap};

use crate::config::Method;
use crate::error::{Error, Result};
use crate::reference::ItemRow;
use crate::results::{in_output, read_location, read_texts, Manifest, RowGroups};
use crate::tally::{Breakdown, Tally};
use crate::text::diff::Piece;

use shown::{pairs_shown, paragraph_at, pick_contaminated, pick_members, pick_pairs, Budget};

/// Largest clusters shown.
const LARGEST: usize = 10;
/// Members shown per large cluster, and looked at to find them.
const MEMBERS_SHOWN: usize = 3;
const MEMBER_CANDIDATES: usize = 256;
/// Members per large cluster worth decoding another row group for (the rest only when free).
const MEMBERS_SPENT: usize = 2;
/// Near-threshold documents looked at to find the pairs shown.
const PAIR_CANDIDATES: usize = 4096;
/// Share of the input's row groups the report may decode for its texts (at least one): the run
/// decodes each once, so this bounds the report's reading to a quarter of that.
const ROW_GROUP_SHARE: usize = 4;
/// Pairs just above the threshold shown.
const PAIRS: usize = 8;
/// Width of the "just above the threshold" band of similarities.
const NEAR: f64 = 0.03;
/// Characters of a text shown before folding.
const SNIPPET: usize = 280;
/// `--report-group` values kept in the summary: the largest ones, plus every outlier.
pub(crate) const GROUPS_KEPT: usize = 1000;

/// A slice of the input whose drop rate stands out (see [`outlier`]).
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub name: String,
    pub tally: Tally,
    pub outlier: bool,
}

/// True when a slice of `t.documents` (at least 20) documents loses far more than the whole
/// input's share `overall`: over 4 standard errors above it, and over twice the share or at least
/// 90% of its documents (one false giant cluster can wipe out a source). A night of re-crawls that
/// loses 95% everywhere flags nothing.
pub(crate) fn outlier(t: &Tally, overall: f64) -> bool {
    if t.documents < 20 {
        return false;
    }
    let rate = t.drop_rate();
    let se = (overall * (1.0 - overall) / t.documents as f64).sqrt();
    (rate >= 0.9 || rate > 2.0 * overall) && rate > overall + 4.0 * se
}

/// The `--report-group` tallies the summary keeps: the [`GROUPS_KEPT`] largest and every outlier.
pub(crate) fn keep_groups(
    groups: BTreeMap<String, Tally>,
    overall: f64,
) -> BTreeMap<String, Tally> {
    if groups.len() <= GROUPS_KEPT {
        return groups;
    }
    let mut by_size: Vec<(&String, &Tally)> = groups.iter().collect();
    by_size.sort_by(|a, b| b.1.documents.cmp(&a.1.documents).then(a.0.cmp(b.0)));
    let mut keep: std::collections::BTreeSet<String> = by_size
        .iter()
        .take(GROUPS_KEPT)
        .map(|(k, _)| (*k).clone())
        .collect();
    keep.extend(
        groups
            .iter()
            .filter(|(_, t)| outlier(t, overall))
            .map(|(k, _)| k.clone()),
    );
    groups
        .into_iter()
        .filter(|(k, _)| keep.contains(k))
        .collect()
}

/// A document shown in the report.
#[derive(Debug, Clone)]
pub(crate) struct Doc {
    pub id: String,
    pub file: String,
    pub row: u64,
    /// None: not read (outside the report's row-group budget); Some(None): a null text.
    pub text: Option<Option<String>>,
}

/// One of the largest clusters.
#[derive(Debug, Clone)]
pub(crate) struct Cluster {
    pub cluster_id: u64,
    pub size: u64,
    /// The kept member (None when the keeper is in an earlier batch of the index).
    pub keeper: Option<Doc>,
    /// Its id when it is not in this run.
    pub keeper_elsewhere: Option<String>,
    pub members: Vec<(Doc, Option<f32>)>,
}

/// A dropped document just above the threshold, with its keeper.
#[derive(Debug, Clone)]
pub(crate) struct Pair {
    pub doc: Doc,
    pub keeper: Doc,
    pub similarity: f32,
    /// Exact Jaccard of the shingle sets, recomputed.
    pub jaccard: Option<f64>,
    pub diff: Vec<Piece>,
}

/// A document holding benchmark text (`--reference`), with where.
#[derive(Debug, Clone)]
pub(crate) struct Contaminated {
    pub doc: Doc,
    pub item: String,
    pub share: f32,
    /// From the item to the document's stretch that holds it (empty when a text is not read).
    pub matched: Vec<Piece>,
}

/// Contaminated documents shown, at most.
const CONTAMINATED_SHOWN: usize = 5;

/// Everything the report shows.
pub(crate) struct Report {
    pub summary: serde_json::Value,
    pub method: Method,
    pub threshold: f64,
    pub breakdown: Breakdown,
    pub files: Vec<Row>,
    pub groups: Vec<Row>,
    /// Groups in the input (the summary keeps the largest and the outliers).
    pub groups_total: u64,
    pub scripts: Vec<Row>,
    /// Similarities of the dropped documents to their keepers.
    pub similarities: Vec<f32>,
    pub clusters: Vec<Cluster>,
    pub pairs: Vec<Pair>,
    /// `--reference`: a few documents holding benchmark text, one per item hit most.
    pub contaminated: Vec<Contaminated>,
    /// `--paragraphs`: the texts removed most often (times removed, the text where read, the
    /// id of the document retaining it).
    pub repeated_paragraphs: Vec<(u64, Option<String>, String)>,
    /// `--substrings`: the longest spans removed, with their texts as the budget allows.
    pub longest_spans: Vec<spans::RemovedSpan>,
    /// Documents per cluster size (sizes >= 2).
    pub cluster_sizes: BTreeMap<u64, u64>,
    /// Reads of the input for the texts shown (a row group's span or a single row), and the
    /// input's row groups.
    pub texts_read: usize,
    pub row_groups: usize,
}

/// The reference items of the contaminated documents shown (manifest rows `flagged`, with their
/// item's position in the reference), read from the reference the run recorded
/// ([`crate::reference::items_at`]: around the items' rows alone; none when it cannot be read).
fn flagged_items(m: &Manifest, flagged: &[(usize, u64)]) -> Vec<Option<ItemRow>> {
    let Some(cfg) = m.config.reference.as_ref() else {
        return vec![None; flagged.len()];
    };
    let positions: Vec<u64> = flagged.iter().map(|f| f.1).collect();
    crate::reference::items_at(&m.reference, cfg, &positions)
        .unwrap_or_else(|_| vec![None; flagged.len()])
}

/// The contaminated documents shown (manifest rows `flagged`, their items `read` by
/// [`flagged_items`]), each with where its item sits in it: a text only if it is the item the
/// manifest names.
fn contaminated<'a>(
    flagged: &[(usize, u64)],
    read: Vec<Option<ItemRow>>,
    doc: &dyn Fn(usize) -> Doc,
    row_at: &dyn Fn(usize) -> &'a view::RowAt,
) -> Vec<Contaminated> {
    flagged
        .iter()
        .zip(read)
        .map(|(&(i, _), read)| {
            let d = doc(i);
            let item = row_at(i).contaminated_by.clone().unwrap_or_default();
            let text = read
                .as_ref()
                .filter(|x| x.id == item)
                .map(|x| x.text.as_str());
            let matched = match (text, d.text.clone().flatten()) {
                (Some(t), Some(dt)) => crate::text::diff::item_in_doc(t, &dt),
                _ => Vec::new(),
            };
            Contaminated {
                share: row_at(i).contamination.unwrap_or(0.0),
                item,
                matched,
                doc: d,
            }
        })
        .collect()
}

/// The items hit most that the report shows a contaminated document of: (position in the
/// reference, id), from the summary (none without `--reference`).
fn shown_items(summary: &serde_json::Value, reference: bool) -> Vec<(u64, String)> {
    if !reference {
        return Vec::new();
    }
    (summary["contamination"]["most_hit"].as_array().into_iter())
        .flatten()
        .filter_map(|h| Some((h["item"].as_u64()?, h["id"].as_str()?.to_string())))
        .take(CONTAMINATED_SHOWN)
        .collect()
}

/// The slices of the input the report breaks drop rates down by: files, `--report-group` values
/// (outliers first, then by size), scripts.
struct Slices {
    files: Vec<Row>,
    groups: Vec<Row>,
    scripts: Vec<Row>,
    groups_total: u64,
}

impl Slices {
    fn of(summary: &serde_json::Value, breakdown: &Breakdown) -> Slices {
        let overall = summary["documents_dropped"].as_f64().unwrap_or(0.0)
            / summary["documents_in"].as_f64().unwrap_or(1.0).max(1.0);
        let rows = |map: &BTreeMap<String, Tally>| -> Vec<Row> {
            map.iter()
                .map(|(k, t)| Row {
                    name: k.clone(),
                    tally: *t,
                    outlier: outlier(t, overall),
                })
                .collect()
        };
        let mut groups = rows(&breakdown.by_group);
        groups.sort_by(|a, b| {
            b.outlier
                .cmp(&a.outlier)
                .then(b.tally.documents.cmp(&a.tally.documents))
                .then(a.name.cmp(&b.name))
        });
        let groups_total = summary["breakdown"]["groups_total"]
            .as_u64()
            .unwrap_or(groups.len() as u64);
        Slices {
            files: rows(&breakdown.by_file),
            groups,
            scripts: rows(&breakdown.by_script),
            groups_total,
        }
    }
}

/// Gathers the report of the output `out` (local directory or `s3://` prefix) from its
/// summary.json and manifest.
pub(crate) fn build(out: &str) -> Result<Report> {
    let summary_at = in_output(out, "summary.json");
    let summary: serde_json::Value = read_location(&summary_at)?
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or_else(|| Error::NotAnOutput {
            summary: summary_at.clone(),
            out: out.to_string(),
        })?;
    build_with(out, summary)
}

/// The lowest similarity of a drop (MinHash: the threshold; SimHash: its Hamming bound's).
fn lowest(config: &crate::Config) -> f64 {
    match config.method {
        Method::Minhash => config.threshold,
        Method::Simhash => crate::simhash::similarity(config.hamming as u32),
    }
}

/// Gathers the report of the output `out` with its summary given.
pub(crate) fn build_with(out: &str, summary: serde_json::Value) -> Result<Report> {
    let (m, manifest_rows) = Manifest::open(&in_output(out, "manifest.parquet"))?;
    let breakdown: Breakdown =
        serde_json::from_value(summary["breakdown"].clone()).unwrap_or_default();
    let Slices {
        files,
        groups,
        scripts,
        groups_total,
    } = Slices::of(&summary, &breakdown);

    let lo = lowest(&m.config);
    let items = shown_items(&summary, m.config.reference.is_some());
    let item_ids: Vec<&str> = items.iter().map(|(_, id)| id.as_str()).collect();
    let view::First {
        similarities,
        cluster_sizes,
        largest,
        near,
        item_rows,
        spans: mut longest_spans,
    } = view::first_pass(&manifest_rows, lo, &item_ids, m.config.substrings.is_some())?;
    // `--paragraphs`: the documents retaining the texts removed most.
    let repeated_rows: Vec<Option<usize>> = (summary["paragraphs"]["most_repeated"]
        .as_array()
        .into_iter())
    .flatten()
    .map(|r| r["doc"].as_u64().map(|d| d as usize))
    .collect();
    let wanted: std::collections::HashSet<&str> =
        near.iter().filter_map(|x| x.2.as_deref()).collect();
    let mut known: std::collections::HashSet<usize> = near.iter().map(|x| x.1).collect();
    known.extend(item_rows.iter().flatten());
    known.extend(repeated_rows.iter().flatten());
    known.extend(longest_spans.iter().map(|s| s.row));
    let view::Second {
        keepers,
        candidates,
        elsewhere,
        id_row,
        at: info,
    } = view::second_pass(&manifest_rows, &largest, &wanted, &known)?;
    drop(manifest_rows);
    // Pairs just above the threshold, a deterministic sample (by id hash): (drop, keeper) rows.
    let near_pairs: Vec<(usize, usize)> = near
        .iter()
        .filter_map(|(_, i, d)| d.as_deref().and_then(|d| id_row.get(d)).map(|&k| (*i, k)))
        .collect();
    let none = view::RowAt::default();
    let row_at = |i: usize| info.get(&i).unwrap_or(&none);

    // Which texts are read, within the row-group budget: keepers of the largest clusters first,
    // then pairs, then members in row groups already chosen.
    let mut budget = Budget::new(&m)?;
    let at = |i: usize| {
        let r = row_at(i);
        (r.file.as_str(), r.row)
    };
    let mut read: std::collections::BTreeSet<usize> = std::collections::BTreeSet::new();
    for k in keepers.iter().flatten() {
        if budget.take(&[at(*k)]) {
            read.insert(*k);
        }
    }
    let pair_rows = pick_pairs(&near_pairs, &mut budget, &at);
    read.extend(pair_rows.iter().flat_map(|&(i, k)| [i, k]));
    let members = pick_members(&candidates, &mut budget, &at);
    read.extend(members.iter().flatten());
    let flagged = pick_contaminated(&items, &item_rows, &mut budget, &at);
    read.extend(flagged.iter().map(|&(i, _)| i));
    let repeated: Vec<(u64, Option<usize>, u64, String)> = (summary["paragraphs"]["most_repeated"]
        .as_array()
        .into_iter())
    .flatten()
    .zip(repeated_rows)
    .map(|(r, doc)| {
        let doc = doc.filter(|&d| budget.free(at(d)) || budget.take(&[at(d)]));
        let by = r["retained_by"].as_str().unwrap_or("").to_string();
        (
            r["removed"].as_u64().unwrap_or(0),
            doc,
            r["start"].as_u64().unwrap_or(0),
            by,
        )
    })
    .collect();
    read.extend(repeated.iter().filter_map(|r| r.1));
    // `--substrings`: the longest spans removed whose documents the budget lets it read (the
    // longest overall when it reads none of them).
    for s in &mut longest_spans {
        s.id = row_at(s.row).id.clone();
    }
    let mut readable = Vec::new();
    for (i, s) in longest_spans.iter().enumerate() {
        if readable.len() == spans::SHOWN_SPANS {
            break;
        }
        if budget.free(at(s.row)) || budget.take(&[at(s.row)]) {
            readable.push(i);
        }
    }
    if readable.is_empty() {
        longest_spans.truncate(spans::SHOWN_SPANS);
    } else {
        longest_spans = readable.iter().map(|&i| longest_spans[i].clone()).collect();
        read.extend(longest_spans.iter().map(|s| s.row));
    }
    // The input's texts and the reference's items are read side by side.
    let rows: Vec<usize> = read.into_iter().collect();
    let (texts, items_read) = rayon::join(
        || read_texts(&m, &budget.groups, &rows, &at),
        || flagged_items(&m, &flagged),
    );
    let texts = texts?;
    let doc = |i: usize| {
        let r = row_at(i);
        Doc {
            id: r.id.clone(),
            file: r.file.clone(),
            row: r.row,
            text: texts.get(&i).cloned(),
        }
    };
    let clusters = largest
        .iter()
        .enumerate()
        .map(|(slot, &(c, n))| Cluster {
            cluster_id: c,
            size: n,
            keeper: keepers[slot].map(doc),
            keeper_elsewhere: keepers[slot]
                .is_none()
                .then(|| elsewhere[slot].clone())
                .flatten(),
            members: members[slot]
                .iter()
                .map(|&i| (doc(i), row_at(i).similarity))
                .collect(),
        })
        .collect();
    let texts_read = budget.reads();
    let row_groups = budget.groups.total;
    let pairs = pairs_shown(&pair_rows, &doc, &|i| row_at(i).similarity, &m.config);
    let contaminated = contaminated(&flagged, items_read, &doc, &row_at);
    let min_bytes = m.config.paragraphs.as_ref().map_or(1, |p| p.min_bytes);
    let repeated_paragraphs = repeated
        .into_iter()
        .map(|(n, d, start, by)| {
            let text = d.and_then(|d| texts.get(&d).cloned().flatten());
            (n, text.and_then(|t| paragraph_at(&t, start, min_bytes)), by)
        })
        .collect();
    for s in &mut longest_spans {
        let text = texts.get(&s.row).cloned().flatten();
        s.text = text.and_then(|t| t.get(s.start as usize..s.end as usize).map(str::to_string));
    }
    Ok(Report {
        contaminated,
        repeated_paragraphs,
        longest_spans,
        method: m.config.method,
        threshold: lo,
        summary,
        breakdown,
        files,
        groups,
        groups_total,
        scripts,
        similarities,
        clusters,
        pairs,
        cluster_sizes,
        texts_read,
        row_groups,
    })
}

/// Rebuilds `out/report.html` from the output's summary and manifest; returns its size in bytes.
pub(crate) fn write(out: &str) -> Result<usize> {
    let page = html::render(&build(out)?);
    let n = page.len();
    crate::io::output::OutputDir::parse(out).write_bytes(REPORT, page.into_bytes())?;
    Ok(n)
}

/// The report's file name in the output.
pub(crate) const REPORT: &str = "report.html";

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(documents: u64, dropped: u64) -> Tally {
        Tally {
            documents,
            dropped,
            ..Tally::default()
        }
    }

    #[test]
    fn a_slice_is_an_outlier_only_well_above_the_overall_share() {
        // A source wiped out on an ordinary night, and one at twice the share.
        assert!(outlier(&tally(500, 480), 0.12));
        assert!(outlier(&tally(2500, 700), 0.12));
        // A re-crawl night: every shard loses ~95%, none stands out.
        assert!(!outlier(&tally(2500, 2393), 0.952));
        assert!(!outlier(&tally(2500, 310), 0.12));
        assert!(!outlier(&tally(19, 19), 0.12));
    }
}
