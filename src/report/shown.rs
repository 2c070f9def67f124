//! Which documents the report shows, within a budget of texts read back from the shards: pairs
//! near the threshold, cluster members, contaminated documents, a paragraph's text.

use crate::explain::Similarity;
use crate::results::At;
use crate::text::diff::word_diff;

use super::*;

/// The pairs shown (rows `(drop, keeper)`), with their exact Jaccard and word diff.
pub(super) fn pairs_shown(
    rows: &[(usize, usize)],
    doc: &dyn Fn(usize) -> Doc,
    similarity: &dyn Fn(usize) -> Option<f32>,
    config: &crate::Config,
) -> Vec<Pair> {
    let sim = Similarity::new(config);
    rows.iter()
        .map(|&(i, k)| {
            let (d, kd) = (doc(i), doc(k));
            let (a, b) = (
                kd.text.clone().flatten().unwrap_or_default(),
                d.text.clone().flatten().unwrap_or_default(),
            );
            Pair {
                jaccard: sim.jaccard(&sim.sets(&a), &sim.sets(&b)),
                diff: word_diff(&a, &b),
                similarity: similarity(i).unwrap_or(0.0),
                doc: d,
                keeper: kd,
            }
        })
        .collect()
}

/// The near-threshold pairs shown: those whose two texts are in row groups already chosen first
/// (they cost nothing), then others while the budget allows; in sample order.
pub(super) fn pick_pairs(
    near: &[(usize, usize)],
    budget: &mut Budget,
    at: &At,
) -> Vec<(usize, usize)> {
    let mut rows: Vec<(usize, usize)> = (near.iter().copied())
        .filter(|&(i, k)| budget.free(at(i)) && budget.free(at(k)))
        .take(PAIRS)
        .collect();
    for &(i, k) in near {
        if rows.len() == PAIRS {
            break;
        }
        if !rows.contains(&(i, k)) && budget.take(&[at(i), at(k)]) {
            rows.push((i, k));
        }
    }
    let order: HashMap<(usize, usize), usize> =
        near.iter().enumerate().map(|(n, &p)| (p, n)).collect();
    rows.sort_by_key(|p| order.get(p).copied().unwrap_or(usize::MAX));
    rows
}

/// The members shown of each large cluster (`candidates`), one per cluster per round: one
/// readable at no cost if there is one, else (in the first MEMBERS_SPENT rounds) one whose row
/// group the budget still allows. Rounds across all clusters let a row group chosen for one
/// cluster serve the others.
pub(super) fn pick_members(
    candidates: &[Vec<usize>],
    budget: &mut Budget,
    at: &At,
) -> Vec<Vec<usize>> {
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); candidates.len()];
    for round in 0..MEMBERS_SHOWN {
        for (c, chosen) in candidates.iter().zip(members.iter_mut()) {
            if chosen.len() != round {
                continue;
            }
            let mut fresh = c.iter().copied().filter(|i| !chosen.contains(i));
            let free = fresh.clone().find(|&i| budget.free(at(i)));
            let pick = free.or_else(|| {
                (round < MEMBERS_SPENT)
                    .then(|| fresh.find(|&i| budget.take(&[at(i)])))
                    .flatten()
            });
            chosen.extend(pick);
        }
    }
    for chosen in &mut members {
        chosen.sort_unstable();
    }
    members
}

/// The contaminated documents shown: for each of the items hit most (`items`, the rows naming
/// each `item_rows`), its first document the budget allows, with the item's position in the
/// reference.
pub(super) fn pick_contaminated(
    items: &[(u64, String)],
    item_rows: &[Vec<usize>],
    budget: &mut Budget,
    at: &At,
) -> Vec<(usize, u64)> {
    let mut flagged = Vec::new();
    for (&(item, _), rows) in items.iter().zip(item_rows) {
        let pick = (rows.iter().copied()).find(|&i| budget.free(at(i)) || budget.take(&[at(i)]));
        flagged.extend(pick.map(|i| (i, item)));
    }
    flagged
}

/// The text of the paragraph of `text` that starts at byte `start`.
pub(super) fn paragraph_at(text: &str, start: u64, min_bytes: usize) -> Option<String> {
    let mut out = Vec::new();
    let mut scratch = crate::text::paragraphs::Scratch::default();
    crate::text::paragraphs::paragraphs(text, min_bytes, &mut scratch, &mut out);
    let p = out.iter().find(|p| p.start as u64 == start)?;
    Some(text[p.start..p.end].trim().to_string())
}

/// One-row reads at most.
pub(super) const MAX_ROW_READS: usize = 64;

/// What the report may read for its texts: a share of the small row groups (an `s3://` shard is
/// one: it is fetched whole), at most a [`ROW_GROUP_SHARE`]th of them, and up to
/// [`MAX_ROW_READS`] single rows of large groups.
pub(super) struct Budget {
    pub(super) groups: RowGroups,
    pub(super) chosen: std::collections::BTreeSet<(usize, usize)>,
    pub(super) row_reads: usize,
    pub(super) max_groups: usize,
}

impl Budget {
    pub(super) fn new(m: &Manifest) -> Result<Budget> {
        let groups = RowGroups::of(m, None)?;
        let max_groups = (groups.small / ROW_GROUP_SHARE).max(1);
        Ok(Budget {
            groups,
            chosen: Default::default(),
            row_reads: 0,
            max_groups,
        })
    }

    pub(super) fn group(
        &self,
        at: (&str, u64),
    ) -> Option<((usize, usize), std::ops::Range<u64>, bool)> {
        self.groups.group(at)
    }

    /// Whether a row can be read without spending more of the budget.
    pub(super) fn free(&self, at: (&str, u64)) -> bool {
        self.group(at)
            .is_some_and(|(g, _, small)| small && self.chosen.contains(&g))
    }

    /// Spends the budget on all of `rows` if it allows; false (nothing spent) otherwise.
    pub(super) fn take(&mut self, rows: &[(&str, u64)]) -> bool {
        let Some(groups) = rows
            .iter()
            .map(|&r| self.group(r))
            .collect::<Option<Vec<_>>>()
        else {
            return false;
        };
        let mut new: Vec<(usize, usize)> = groups
            .iter()
            .filter(|(g, _, small)| *small && !self.chosen.contains(g))
            .map(|x| x.0)
            .collect();
        new.sort_unstable();
        new.dedup();
        let reads = groups.iter().filter(|x| !x.2).count();
        if self.chosen.len() + new.len() > self.max_groups || self.row_reads + reads > MAX_ROW_READS
        {
            return false;
        }
        self.chosen.extend(new);
        self.row_reads += reads;
        true
    }

    /// Row groups (or single rows) decoded.
    pub(super) fn reads(&self) -> usize {
        self.chosen.len() + self.row_reads
    }
}
