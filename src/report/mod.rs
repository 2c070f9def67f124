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
fn contaminated(
    c: &crate::results::Columns,
    flagged: &[(usize, u64)],
    read: Vec<Option<ItemRow>>,
    doc: &dyn Fn(usize) -> Doc,
) -> Vec<Contaminated> {
    let Some(by) = c.contaminated_by else {
        return Vec::new();
    };
    flagged
        .iter()
        .zip(read)
        .map(|(&(i, _), read)| {
            let d = doc(i);
            let item = by.get(i).unwrap_or("").to_string();
            let text = read
                .as_ref()
                .filter(|x| x.id == item)
                .map(|x| x.text.as_str());
            let matched = match (text, d.text.clone().flatten()) {
                (Some(t), Some(dt)) => crate::text::diff::item_in_doc(t, &dt),
                _ => Vec::new(),
            };
            Contaminated {
                share: c.contamination.and_then(|s| s.get(i)).unwrap_or(0.0),
                item,
                matched,
                doc: d,
            }
        })
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

/// Cluster sizes, and the [`LARGEST`] clusters: each one's kept member (manifest row), up to
/// [`MEMBER_CANDIDATES`] dropped members, and the keeper's id when it is not in this run.
struct Largest {
    cluster_sizes: BTreeMap<u64, u64>,
    /// (cluster id, size), largest first.
    largest: Vec<(u64, u64)>,
    keepers: Vec<Option<usize>>,
    candidates: Vec<Vec<usize>>,
    elsewhere: Vec<Option<String>>,
}

impl Largest {
    fn of(c: &crate::results::Columns) -> Largest {
        let (keep, cluster, dup_of) = (c.keep, c.cluster, c.duplicate_of);
        let mut size: HashMap<u64, u64> = HashMap::new();
        for c in cluster.iter().flatten() {
            *size.entry(c).or_default() += 1;
        }
        let mut cluster_sizes: BTreeMap<u64, u64> = BTreeMap::new();
        for &s in size.values() {
            *cluster_sizes.entry(s).or_default() += 1;
        }
        let mut largest: Vec<(u64, u64)> = size.iter().map(|(&c, &n)| (c, n)).collect();
        largest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        largest.truncate(LARGEST);
        let wanted: HashMap<u64, usize> = largest
            .iter()
            .enumerate()
            .map(|(i, &(c, _))| (c, i))
            .collect();
        let mut keepers: Vec<Option<usize>> = vec![None; largest.len()];
        let mut candidates: Vec<Vec<usize>> = vec![Vec::new(); largest.len()];
        let mut elsewhere: Vec<Option<String>> = vec![None; largest.len()];
        for (i, c) in cluster.iter().enumerate() {
            let Some(&slot) = c.and_then(|c| wanted.get(&c)) else {
                continue;
            };
            if keep.get(i) == Some(true) {
                keepers[slot] = Some(i);
            } else {
                if candidates[slot].len() < MEMBER_CANDIDATES {
                    candidates[slot].push(i);
                }
                if elsewhere[slot].is_none() {
                    elsewhere[slot] = dup_of.get(i).map(str::to_string);
                }
            }
        }
        Largest {
            cluster_sizes,
            largest,
            keepers,
            candidates,
            elsewhere,
        }
    }
}

/// The lowest similarity of a drop (MinHash: the threshold; SimHash: its Hamming bound's), and
/// the dropped documents within [`NEAR`] above it with their keepers (manifest rows), a
/// deterministic sample of [`PAIR_CANDIDATES`] by id hash.
fn near_threshold(m: &Manifest, c: &crate::results::Columns) -> (f64, Vec<(usize, usize)>) {
    let (keep, sims, ids, dup_of) = (c.keep, c.similarity, c.id, c.duplicate_of);
    let lo = match m.config.method {
        Method::Minhash => m.config.threshold,
        Method::Simhash => crate::simhash::similarity(m.config.hamming as u32),
    };
    let mut near: Vec<(u64, usize)> = (0..m.frame.height())
        .filter(|&i| keep.get(i) == Some(false))
        .filter(|&i| {
            sims.get(i)
                .is_some_and(|s| f64::from(s) >= lo - 1e-6 && f64::from(s) < lo + NEAR)
        })
        .map(|i| {
            let h = xxhash_rust::xxh3::xxh3_64(ids.get(i).unwrap_or("").as_bytes());
            (h, i)
        })
        .collect();
    near.sort_unstable();
    near.truncate(PAIR_CANDIDATES);
    let want: std::collections::HashSet<&str> =
        near.iter().filter_map(|&(_, i)| dup_of.get(i)).collect();
    let id_row: HashMap<&str, usize> = ids
        .iter()
        .enumerate()
        .filter_map(|(i, id)| id.filter(|x| want.contains(x)).map(|x| (x, i)))
        .filter(|&(_, i)| keep.get(i) == Some(true))
        .collect();
    let pairs = near
        .iter()
        .filter_map(|&(_, i)| dup_of.get(i).and_then(|d| id_row.get(d)).map(|&k| (i, k)))
        .collect();
    (lo, pairs)
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

/// Gathers the report of the output `out` with its summary given.
pub(crate) fn build_with(out: &str, summary: serde_json::Value) -> Result<Report> {
    let m = Manifest::read(&in_output(out, "manifest.parquet"))?;
    let breakdown: Breakdown =
        serde_json::from_value(summary["breakdown"].clone()).unwrap_or_default();
    let Slices {
        files,
        groups,
        scripts,
        groups_total,
    } = Slices::of(&summary, &breakdown);

    let c = m.columns()?;
    let (keep, sims, ids) = (c.keep, c.similarity, c.id);
    let (files_col, rows_col) = (c.file, c.row);
    let similarities: Vec<f32> = keep
        .iter()
        .zip(sims.iter())
        .filter(|(k, _)| *k == Some(false))
        .filter_map(|(_, s)| s)
        .collect();

    let Largest {
        cluster_sizes,
        largest,
        keepers,
        candidates,
        elsewhere,
    } = Largest::of(&c);

    // Pairs just above the threshold, a deterministic sample (by id hash).
    let (lo, near_pairs) = near_threshold(&m, &c);

    // Which texts are read, within the row-group budget: keepers of the largest clusters first,
    // then pairs, then members in row groups already chosen.
    let mut budget = Budget::new(&m)?;
    let at = |i: usize| (files_col.get(i).unwrap_or(""), rows_col.get(i).unwrap_or(0));
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
    let flagged = pick_contaminated(&summary, c.contaminated_by, &mut budget, &at);
    read.extend(flagged.iter().map(|&(i, _)| i));
    // `--paragraphs`: the retaining documents of the texts removed most, as the budget allows.
    let repeated: Vec<(u64, Option<usize>, u64, String)> = (summary["paragraphs"]["most_repeated"]
        .as_array()
        .into_iter())
    .flatten()
    .map(|r| {
        let doc = r["doc"].as_u64().map(|d| d as usize);
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
    let mut longest_spans = match m.config.substrings {
        Some(_) => spans::longest(&m)?,
        None => Vec::new(),
    };
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
    let (texts, items) = rayon::join(
        || read_texts(&m, &budget.groups, &rows),
        || flagged_items(&m, &flagged),
    );
    let texts = texts?;
    let doc = |i: usize| Doc {
        id: ids.get(i).unwrap_or("").to_string(),
        file: files_col.get(i).unwrap_or("").to_string(),
        row: rows_col.get(i).unwrap_or(0),
        text: texts.get(&i).cloned(),
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
                .map(|&i| (doc(i), sims.get(i)))
                .collect(),
        })
        .collect();
    let texts_read = budget.reads();
    let row_groups = budget.groups.total;
    let pairs = pairs_shown(&pair_rows, &doc, &|i| sims.get(i), &m.config);
    let contaminated = contaminated(&c, &flagged, items, &doc);
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
