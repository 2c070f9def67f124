//! Stage `paragraphs` (`--paragraphs`; one task per hash range of paragraphs): which paragraphs
//! of kept documents another kept document already retains.
//!
//! The rule: kept documents are taken in keep order, and a paragraph (at least
//! `--paragraph-min-bytes`, [`crate::text::paragraphs`]) is removed when its normalised text
//! was already retained: by an earlier kept document, earlier in the same document, or (with
//! `--index`) by a document of a batch still in the index. So among tonight's copies of a text
//! the first in (keep order, offset) is retained and every other one removed against it: the
//! paragraph form of the keeper guarantee, since what is removed always stays in a kept text.
//!
//! That is a minimum per hash, so the work splits by hash: the signatures tasks wrote each
//! paragraph (hash, document, span) by hash range into their part's row file; a task reads its
//! range from every part, sorts the kept documents' paragraphs by (hash, keep position, offset), and writes the
//! removed ones per part (`paragraphs/drops-rR-pP.parquet`: document, offset, the id of the
//! document that retains the text and, for an indexed one, its batch), which the manifest task
//! of that part turns into `drop_spans`. With `--index` it also writes the (hash, document) of
//! each paragraph tonight retains, for tonight's batch.
//!
//! Memory: 8 bytes per document (keep positions and their inverse) and 16 per paragraph of a
//! kept document in the range.

use polars::prelude::Column;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::io::output::OutputDir;
use crate::io::paragraph_rows;
use crate::io::{store, work};
use crate::plan::Plan;

/// Counters of a paragraphs task.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ParagraphStats {
    /// Paragraphs of kept documents (at least the minimum size).
    pub paragraphs: u64,
    /// Distinct normalised texts among them.
    pub distinct: u64,
    pub removed: u64,
    /// Removed against an earlier paragraph of the same document.
    pub removed_within_document: u64,
    /// Removed against a paragraph of an indexed document.
    pub removed_against_index: u64,
    /// The texts removed most often, most first.
    pub most_repeated: Vec<Repeated>,
}

/// A paragraph text removed from several kept documents, and where it is retained.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct Repeated {
    pub removed: u64,
    /// The id of the document that retains it (None: a compacted batch no longer holds it).
    pub retained_by: Option<String>,
    /// The batch of that document when it is an indexed one.
    #[serde(default)]
    pub batch: Option<String>,
    /// Tonight's document that retains it (its global number; none for an indexed one) and
    /// the paragraph's offset in its text, from which the report reads the text.
    #[serde(default)]
    pub doc: Option<u32>,
    pub start: u32,
}

/// `--paragraphs` in the summary: the tasks' counters summed, and the bytes removed from the
/// manifest tasks' tallies.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ParagraphSummary {
    pub min_bytes: usize,
    /// Paragraphs of kept documents (at least `min_bytes`), and their distinct texts.
    pub paragraphs: u64,
    pub distinct: u64,
    pub removed: u64,
    pub removed_within_document: u64,
    pub removed_against_index: u64,
    pub bytes_removed: u64,
    /// Kept documents left with no text but whitespace (every paragraph removed).
    pub documents_emptied: u64,
    /// Text bytes of the kept documents, and the share of them removed.
    pub kept_bytes: u64,
    pub share_removed: f64,
    pub most_repeated: Vec<Repeated>,
}

impl ParagraphSummary {
    pub(crate) fn gather(
        min_bytes: usize,
        tasks: impl Iterator<Item = ParagraphStats>,
        by_file: &std::collections::BTreeMap<String, crate::tally::Tally>,
    ) -> ParagraphSummary {
        let mut s = ParagraphSummary {
            min_bytes,
            ..Default::default()
        };
        for t in tasks {
            s.paragraphs += t.paragraphs;
            s.distinct += t.distinct;
            s.removed += t.removed;
            s.removed_within_document += t.removed_within_document;
            s.removed_against_index += t.removed_against_index;
            s.most_repeated.extend(t.most_repeated);
        }
        // Tasks are in range order: a stable sort keeps ties as the tasks listed them.
        s.most_repeated
            .sort_by_key(|r| std::cmp::Reverse(r.removed));
        s.most_repeated.truncate(MOST_REPEATED);
        for t in by_file.values() {
            s.bytes_removed += t.paragraph_bytes_removed;
            s.documents_emptied += t.documents_emptied;
            s.kept_bytes += t.bytes - t.bytes_dropped;
        }
        s.share_removed = s.bytes_removed as f64 / s.kept_bytes.max(1) as f64;
        s
    }
}

/// Paragraph texts listed in `most_repeated`.
pub(crate) const MOST_REPEATED: usize = 10;

/// Where a removed paragraph's text is retained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Holder {
    /// Tonight's kept document (global number) at this offset.
    Tonight { doc: u32, start: u32 },
    /// An indexed document: position of its batch in the plan's compare list, its number there.
    Indexed { batch: u32, doc: u32 },
}

/// The decisions of one hash range: each removed paragraph (document, offset) with its holder,
/// and the paragraphs tonight retains (hash, document).
#[derive(Debug, Default)]
pub(crate) struct Decided {
    pub removed: Vec<(u32, u32, Holder)>,
    pub retained: Vec<(u64, u32)>,
    pub stats: ParagraphStats,
    /// (times removed, hash, holder) of the texts removed most often.
    pub top: Vec<(u64, u64, Holder)>,
}

/// The rule over one range's paragraphs of kept documents, each `(hash, keep position << 32 |
/// offset)`, with `indexed(hash)` the indexed document holding a text (the earliest batch's).
/// `doc_at(position)` gives the document at a keep position.
pub(crate) fn decide(
    mut paras: Vec<(u64, u64)>,
    doc_at: impl Fn(u32) -> u32,
    indexed: impl Fn(u64) -> Option<(u32, u32)>,
) -> Decided {
    paras.par_sort_unstable();
    let mut out = Decided::default();
    out.stats.paragraphs = paras.len() as u64;
    for run in paras.chunk_by(|a, b| a.0 == b.0) {
        out.stats.distinct += 1;
        let hash = run[0].0;
        let split = |key: u64| (doc_at((key >> 32) as u32), key as u32);
        let (holder, removed) = match indexed(hash) {
            Some((batch, doc)) => (Holder::Indexed { batch, doc }, run),
            None => {
                let (doc, start) = split(run[0].1);
                out.retained.push((hash, doc));
                (Holder::Tonight { doc, start }, &run[1..])
            }
        };
        for &(_, key) in removed {
            let (doc, start) = split(key);
            out.removed.push((doc, start, holder));
            match holder {
                Holder::Indexed { .. } => out.stats.removed_against_index += 1,
                Holder::Tonight { doc: d, .. } if d == doc => {
                    out.stats.removed_within_document += 1
                }
                Holder::Tonight { .. } => {}
            }
        }
        if !removed.is_empty() {
            out.top.push((removed.len() as u64, hash, holder));
        }
    }
    out.stats.removed = out.removed.len() as u64;
    // Most removed first, ties to the smaller hash: the same list in every run.
    out.top
        .sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    out.top.truncate(MOST_REPEATED);
    out.removed.par_sort_unstable();
    out.retained.sort_unstable();
    out
}

/// The paragraphs task of hash range `r`.
pub(crate) fn run(work: &OutputDir, plan: &Plan, r: usize) -> Result<ParagraphStats> {
    let rank = crate::io::doc_columns::keep_positions(work, plan.parts.len(), plan.documents)?;
    let doc_at = super::documents_by_position(&rank);
    let mut paras: Vec<(u64, u64)> = Vec::new();
    for q in 0..plan.parts.len() {
        let rows = paragraph_rows::read_range(
            work,
            &work::paragraph_rows_files(q),
            (r, plan.paragraph_ranges()),
            plan.parts[q].0,
        )?;
        paras.reserve_exact(rows.len());
        rows.for_each(|row| {
            let k = rank.get(row.doc as usize).copied().unwrap_or(u32::MAX);
            if k != u32::MAX {
                paras.push((row.hash, u64::from(k) << 32 | u64::from(row.start)));
            }
        });
    }
    drop(rank);
    let held = crate::index::paragraphs::Held::read(
        plan.index.as_ref(),
        plan.paragraph_ranges(),
        plan.bands(),
        r,
    )?;
    let decided = decide(paras, |k| doc_at[k as usize], |h| held.find(h));
    drop(doc_at);
    let names = Names::resolve(work, plan, &decided, &held)?;
    write_drops(work, plan, r, &decided, &names)?;
    if plan.config.substrings.is_some() {
        write_holders(work, plan, r, &decided)?;
    }
    if plan.index.is_some() {
        work.write_bytes(
            &work::paragraph_retained_file(r),
            crate::index::paragraphs::encode_retained(&decided.retained),
        )?;
    }
    let mut stats = decided.stats;
    stats.most_repeated = (decided.top.iter())
        .map(|&(removed, _, holder)| {
            let (retained_by, batch) = names.of(holder);
            let (doc, start) = match holder {
                Holder::Tonight { doc, start } => (Some(doc), start),
                Holder::Indexed { .. } => (None, 0),
            };
            Repeated {
                removed,
                retained_by: retained_by.map(str::to_string),
                batch: batch.map(str::to_string),
                doc,
                start,
            }
        })
        .collect();
    Ok(stats)
}

/// The ids (and batches) of the documents that retain removed paragraphs.
struct Names<'a> {
    tonight: ahash::AHashMap<u32, String>,
    indexed: ahash::AHashMap<(u32, u32), String>,
    held: &'a crate::index::paragraphs::Held,
}

impl<'a> Names<'a> {
    fn resolve(
        work: &OutputDir,
        plan: &Plan,
        decided: &Decided,
        held: &'a crate::index::paragraphs::Held,
    ) -> Result<Names<'a>> {
        let mut tonight: Vec<u32> = Vec::new();
        let mut indexed: Vec<(u32, u32)> = Vec::new();
        for &(_, _, h) in &decided.removed {
            match h {
                Holder::Tonight { doc, .. } => tonight.push(doc),
                Holder::Indexed { batch, doc } => indexed.push((batch, doc)),
            }
        }
        tonight.sort_unstable();
        tonight.dedup();
        indexed.sort_unstable();
        indexed.dedup();
        let wanted = store::Wanted::IDS;
        let f = store::fetch(
            work,
            &plan.parts,
            plan.store_layout(),
            crate::plan::docs64(&tonight),
            wanted,
        )?;
        let tonight = tonight
            .into_iter()
            .map(|d| (d, f.id(d.into()).to_string()))
            .collect();
        Ok(Names {
            tonight,
            indexed: held.ids(&indexed)?,
            held,
        })
    }

    /// The id and batch (None: tonight's) of a holder.
    fn of(&self, h: Holder) -> (Option<&str>, Option<&str>) {
        match h {
            Holder::Tonight { doc, .. } => (self.tonight.get(&doc).map(String::as_str), None),
            Holder::Indexed { batch, doc } => (
                self.indexed.get(&(batch, doc)).map(String::as_str),
                self.held.batch_name(batch),
            ),
        }
    }
}

/// Writes the range's removed paragraphs per part: document, offset, and the id and batch of
/// the document that retains the text.
fn write_drops(
    work: &OutputDir,
    plan: &Plan,
    r: usize,
    decided: &Decided,
    names: &Names,
) -> Result<()> {
    for (q, part) in plan
        .by_part(&decided.removed, |x| x.0.into())
        .into_iter()
        .enumerate()
    {
        let (doc, start): (Vec<u32>, Vec<u32>) = part.iter().map(|x| (x.0, x.1)).unzip();
        let (by, batch): (Vec<Option<&str>>, Vec<Option<&str>>) =
            part.iter().map(|x| names.of(x.2)).unzip();
        let columns = vec![
            Column::new("doc".into(), doc),
            Column::new("start".into(), start),
            Column::new("retained_by".into(), by),
            Column::new("retained_batch".into(), batch),
        ];
        work::write_frame(
            work,
            &work::paragraph_drops_file(r, q),
            "paragraphs",
            columns,
        )?;
    }
    Ok(())
}

/// `--substrings` too: writes, per part, the paragraphs tonight that retain a removed one
/// (document, offset), which the substring rule keeps whole.
fn write_holders(work: &OutputDir, plan: &Plan, r: usize, decided: &Decided) -> Result<()> {
    let mut held: Vec<(u32, u32)> = (decided.removed.iter())
        .filter_map(|x| match x.2 {
            Holder::Tonight { doc, start } => Some((doc, start)),
            Holder::Indexed { .. } => None,
        })
        .collect();
    held.sort_unstable();
    held.dedup();
    for (q, part) in plan.by_part(&held, |x| x.0.into()).into_iter().enumerate() {
        let (doc, start): (Vec<u32>, Vec<u32>) = part.iter().copied().unzip();
        let columns = vec![
            Column::new("doc".into(), doc),
            Column::new("start".into(), start),
        ];
        let name = work::paragraph_holders_file(r, q);
        work::write_frame(work, &name, "paragraphs", columns)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::paragraphs::{paragraphs, Scratch};

    /// What the rule leaves of documents in keep order (`texts[i]` at position i, all kept):
    /// the texts with the removed spans cut out (what `apply` writes), and the paragraph texts
    /// (hashes) the input holds and those that stay, each with the output document keeping it.
    struct Outcome {
        out: Vec<String>,
        all: std::collections::BTreeSet<u64>,
        stays: Vec<(u64, usize, String)>,
    }

    fn dedup(texts: &[String], indexed: &[u64], ranges: usize) -> Outcome {
        let mut spans = Vec::new();
        let mut by_range: Vec<Vec<(u64, u64)>> = vec![Vec::new(); ranges];
        for (d, t) in texts.iter().enumerate() {
            let mut ps = Vec::new();
            paragraphs(t, 3, &mut Scratch::default(), &mut ps);
            for p in ps {
                spans.push((d, p));
                let r = crate::stages::signatures::bucket_range(p.hash, ranges);
                by_range[r].push((p.hash, (d as u64) << 32 | p.start as u64));
            }
        }
        let mut removed = std::collections::BTreeSet::new();
        for paras in by_range {
            let found = |h: u64| indexed.contains(&h).then_some((0, 0));
            removed.extend(
                decide(paras, |k| k, found)
                    .removed
                    .iter()
                    .map(|x| (x.0, x.1)),
            );
        }
        let mut out = Vec::new();
        let mut stays = Vec::new();
        for (d, t) in texts.iter().enumerate() {
            let (mut text, mut at) = (String::new(), 0);
            for (_, p) in spans.iter().filter(|x| x.0 == d) {
                if removed.contains(&(d as u32, p.start as u32)) {
                    text.push_str(&t[at..p.start]);
                    at = p.end;
                } else {
                    stays.push((p.hash, d, t[p.start..p.end].trim().to_string()));
                }
            }
            text.push_str(&t[at..]);
            out.push(text);
        }
        let all = spans.iter().map(|(_, p)| p.hash).collect();
        Outcome { out, all, stays }
    }

    #[test]
    fn a_repeat_is_removed_against_the_first_copy_in_keep_order() {
        let texts = [
            "intro one\n\nshared text\n\nshared text".to_string(),
            "other intro\n\nshared text\n\nlast bit".to_string(),
        ];
        let out = dedup(&texts, &[], 2).out;
        assert_eq!(
            out,
            ["intro one\n\nshared text\n\n", "other intro\n\nlast bit"]
        );
    }

    #[test]
    fn a_paragraph_an_indexed_document_holds_is_removed_everywhere() {
        let texts = ["a text\n\nold news".to_string()];
        let old = crate::text::paragraphs::text_hash("old news");
        assert_eq!(dedup(&texts, &[old], 1).out, ["a text\n\n"]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 500,
            rng_seed: proptest::test_runner::RngSeed::Fixed(49),
            failure_persistence: None,
            ..Default::default()
        })]
        /// Applying the spans never removes the only copy of a paragraph: every paragraph text
        /// of the input stays exactly once, in an output text that holds it. Any number of
        /// ranges gives the same output.
        #[test]
        fn no_paragraph_loses_its_last_copy(
            docs in proptest::collection::vec(
                proptest::collection::vec((0usize..6, proptest::bool::ANY), 0..6), 0..6),
            ranges in 1usize..4,
        ) {
            let words = ["alpha", "beta beta", "gamma  x", "delta\ty", "ab", "eps"];
            let texts: Vec<String> = docs.iter().map(|paras| {
                paras.iter().map(|&(w, lines)| {
                    let sep = if lines { "\n" } else { "\n\n" };
                    format!("{}{sep}", words[w])
                }).collect()
            }).collect();
            let o = dedup(&texts, &[], ranges);
            let mut stays: Vec<u64> = o.stays.iter().map(|s| s.0).collect();
            stays.sort_unstable();
            proptest::prop_assert_eq!(stays, o.all.iter().copied().collect::<Vec<_>>());
            for (_, d, body) in &o.stays {
                proptest::prop_assert!(o.out[*d].contains(body.as_str()));
            }
            proptest::prop_assert_eq!(&o.out, &dedup(&texts, &[], 1).out);
        }
    }
}
