//! Stages `sources`, `recheck` and `settle` (`--substrings`; one task per part each): which first
//! copies of the part's windows may be cut by their own document's removals, so that no window is
//! removed against them.
//!
//! A first copy stays whole when no removal of its own document overlaps it; but a window of that
//! document is removed only when its own first copy stays whole, and so on back in keep order.
//! Three rounds settle it from the certain end:
//! - `sources`: the first copies that a *possible* removal of their document overlaps (a removed
//!   paragraph, or a window removable against any copy). The others stay whole whatever else is
//!   decided. For each of them that only windows overlap, the first copies those rely on;
//! - `recheck`: the first copies that a *certain* removal overlaps (a removed paragraph, or a
//!   window removable against a first copy `sources` did not list): they are cut;
//! - `settle`: the first copies `sources` listed, less those whose overlapping windows all rely
//!   on copies `recheck` lists (none of those windows is removed, so they stay whole).
//!
//! The manifest tasks remove the windows whose first copy `settle` does not list. A first copy
//! that stays unlisted is never overlapped by a removal: every window overlapping it relies on a
//! `recheck` copy, and a `recheck` copy is listed by `settle` (it relies on an unlisted `sources`
//! copy, which `recheck` cannot hold, or a paragraph overlaps it). So every removal relies on a
//! copy that stays whole, contiguous, in the retained text. These are the first steps of an
//! alternating fixed point whose limit is the serial rule's (documents in keep order); more
//! rounds would find a few more (docs/ARCHITECTURE.md). Each round is a set defined over all
//! parts, so the result is a function of the documents and the settings only.
//!
//! Reads the part's drop files of every substrings (and paragraphs) task, and the previous
//! round's lists of the parts the part's first copies rely on. Writes `substrings/{round}-pP.parquet`
//! (document, start, length of each listed copy: two first copies may start at the same byte, a
//! line's window and an edge's, and a removable window's length is its first copy's), and
//! `substrings/relies-pP.parquet` (per listed copy that only windows overlap, the copies they
//! rely on).

use polars::prelude::Column;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::io::output::OutputDir;
use crate::io::work::{self, u32s};
use crate::plan::{Plan, Stage};
use crate::stages::drop_spans::{PartInputs, FIRST_COPY};

/// A first copy: document, start, length.
pub(crate) type Copy = (u32, u32, u32);

/// Counters of a round's task: the part's first copies that windows are removable against
/// (counted by the `sources` round, which reads them; 0 in the others), and those the round
/// lists.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct SourceStats {
    pub sources: u64,
    pub listed: u64,
}

/// What the `sources` round finds in a part.
#[derive(Debug, Default)]
pub(crate) struct Sources {
    /// The first copies a possible removal overlaps, in order.
    pub listed: Vec<Copy>,
    /// Of those, the ones only windows overlap: (copy, a first copy one of them relies on), in
    /// copy order.
    pub relies: Vec<(Copy, Copy)>,
}

impl Sources {
    pub(crate) fn of(inputs: &PartInputs) -> Sources {
        let mut out = Sources::default();
        let mut i = 0;
        let mut paragraphs: Vec<(u32, u32)> = Vec::new();
        let mut removable: Vec<&(u32, u32, u32, u32, u32)> = Vec::new();
        for ws in inputs.windows.chunk_by(|a, b| a.0 == b.0) {
            let d = ws[0].0;
            paragraphs.clear();
            while i < inputs.paragraphs.len() && inputs.paragraphs[i].0 < d {
                i += 1;
            }
            while i < inputs.paragraphs.len() && inputs.paragraphs[i].0 == d {
                paragraphs.push((inputs.paragraphs[i].1, inputs.paragraphs[i].2));
                i += 1;
            }
            // In start order, as the part's windows are.
            removable.clear();
            removable.extend(ws.iter().filter(|w| w.3 != FIRST_COPY));
            let longest = removable.iter().map(|w| w.2 - w.1).max().unwrap_or(0);
            for w in ws.iter().filter(|w| w.3 == FIRST_COPY) {
                let (s, e) = (w.1, w.2);
                let copy = (d, s, e - s);
                let k = paragraphs.partition_point(|r| r.1 <= s);
                let by_paragraph = paragraphs.get(k).is_some_and(|r| r.0 < e);
                // Windows overlapping [s, e) start in (s - longest, e).
                let lo = removable.partition_point(|r| r.1.saturating_add(longest) <= s);
                let hi = removable.partition_point(|r| r.1 < e);
                let mut over = removable[lo..hi].iter().filter(|r| r.2 > s).peekable();
                if by_paragraph || over.peek().is_some() {
                    out.listed.push(copy);
                }
                if !by_paragraph {
                    out.relies
                        .extend(over.map(|r| (copy, (r.3, r.4, r.2 - r.1))));
                }
            }
        }
        out
    }

    /// The `recheck` list: the listed copies a removed paragraph overlaps, and those with a
    /// window relying on a copy that stays whole (`whole`: one `sources` did not list).
    pub(crate) fn recheck(&self, whole: impl Fn(&Copy) -> bool) -> Vec<Copy> {
        let windows_only: ahash::AHashSet<Copy> = self.relies.iter().map(|r| r.0).collect();
        let mut out: Vec<Copy> = (self.listed.iter())
            .filter(|c| !windows_only.contains(c))
            .copied()
            .collect();
        let by_copy = self.relies.chunk_by(|a, b| a.0 == b.0);
        out.extend(
            by_copy
                .filter(|r| r.iter().any(|x| whole(&x.1)))
                .map(|r| r[0].0),
        );
        out.sort_unstable();
        out
    }

    /// The `settle` list: the listed copies, less those whose windows all rely on a copy that is
    /// cut (`cut`: one `recheck` lists).
    pub(crate) fn settle(&self, cut: impl Fn(&Copy) -> bool) -> Vec<Copy> {
        let whole: ahash::AHashSet<Copy> = (self.relies.chunk_by(|a, b| a.0 == b.0))
            .filter(|r| r.iter().all(|x| cut(&x.1)))
            .map(|r| r[0].0)
            .collect();
        (self.listed.iter())
            .filter(|c| !whole.contains(c))
            .copied()
            .collect()
    }

    /// The documents of the first copies the part's copies rely on.
    fn relied_documents(&self) -> impl Iterator<Item = u32> + '_ {
        self.relies.iter().map(|r| r.1 .0)
    }

    /// The part's `sources` round as its task wrote it.
    fn read(work: &OutputDir, p: usize) -> Result<Sources> {
        let listed = read_copies(work, Stage::Sources.name(), p)?;
        let df = work.read_parquet(&work::substring_round_file("relies", p))?;
        let col = |name| u32s(&df, name, "sources");
        let (d, s, l) = (col("doc")?, col("start")?, col("len")?);
        let (rd, rs, rl) = (col("relied_doc")?, col("relied_start")?, col("relied_len")?);
        let relies = (0..d.len())
            .map(|i| ((d[i], s[i], l[i]), (rd[i], rs[i], rl[i])))
            .collect();
        Ok(Sources { listed, relies })
    }
}

/// The task of round `round` (`sources`, `recheck` or `settle`) for part `p`.
pub(crate) fn run(work: &OutputDir, plan: &Plan, round: Stage, p: usize) -> Result<SourceStats> {
    let (copies, listed) = match round {
        Stage::Sources => {
            let inputs = PartInputs::read(work, plan, p)?;
            let copies = inputs.windows.iter().filter(|w| w.3 == FIRST_COPY).count();
            let sources = Sources::of(&inputs);
            let (copy, relied): (Vec<Copy>, Vec<Copy>) = sources.relies.iter().copied().unzip();
            let mut columns = copy_columns(&copy, "");
            columns.extend(copy_columns(&relied, "relied_"));
            work::write_frame(
                work,
                &work::substring_round_file("relies", p),
                "sources",
                columns,
            )?;
            (copies as u64, sources.listed)
        }
        Stage::Recheck => {
            let sources = Sources::read(work, p)?;
            let maybe =
                listed_in_parts(work, plan, Stage::Sources, &mut sources.relied_documents())?;
            (0, sources.recheck(|c| !maybe.contains(c)))
        }
        _ => {
            let sources = Sources::read(work, p)?;
            let cut = listed_in_parts(work, plan, Stage::Recheck, &mut sources.relied_documents())?;
            (0, sources.settle(|c| cut.contains(c)))
        }
    };
    work::write_frame(
        work,
        &work::substring_round_file(round.name(), p),
        round.name(),
        copy_columns(&listed, ""),
    )?;
    Ok(SourceStats {
        sources: copies,
        listed: listed.len() as u64,
    })
}

/// Columns `{prefix}doc`, `{prefix}start`, `{prefix}len` of `copies`.
fn copy_columns(copies: &[Copy], prefix: &str) -> Vec<Column> {
    let col = |name: &str, f: fn(&Copy) -> u32| {
        Column::new(
            format!("{prefix}{name}").into(),
            copies.iter().map(f).collect::<Vec<u32>>(),
        )
    };
    vec![
        col("doc", |c| c.0),
        col("start", |c| c.1),
        col("len", |c| c.2),
    ]
}

/// The copies round `round` listed in part `p`.
fn read_copies(work: &OutputDir, round: &'static str, p: usize) -> Result<Vec<Copy>> {
    let df = work.read_parquet(&work::substring_round_file(round, p))?;
    let col = |name| u32s(&df, name, round);
    let (doc, start, len) = (col("doc")?, col("start")?, col("len")?);
    Ok((0..doc.len()).map(|i| (doc[i], start[i], len[i])).collect())
}

/// The copies round `round` listed in the parts of `docs`.
pub(crate) fn listed_in_parts(
    work: &OutputDir,
    plan: &Plan,
    round: Stage,
    docs: &mut dyn Iterator<Item = u32>,
) -> Result<ahash::AHashSet<Copy>> {
    let mut parts: Vec<usize> = docs.map(|d| plan.part_of(d.into())).collect();
    parts.sort_unstable();
    parts.dedup();
    let mut out = ahash::AHashSet::new();
    for q in parts {
        out.extend(read_copies(work, round.name(), q)?);
    }
    Ok(out)
}

/// The three rounds over copies that are all in one part: the `settle` list (tests).
#[cfg(test)]
pub(crate) fn settle_in_one_part(inputs: &PartInputs) -> ahash::AHashSet<Copy> {
    let sources = Sources::of(inputs);
    let maybe: ahash::AHashSet<Copy> = sources.listed.iter().copied().collect();
    let cut: ahash::AHashSet<Copy> = sources
        .recheck(|c| !maybe.contains(c))
        .into_iter()
        .collect();
    sources.settle(|c| cut.contains(c)).into_iter().collect()
}
