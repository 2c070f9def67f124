//! Copies across nights (`--index`): how many earlier copies each kept document has, the most
//! copied documents for the summary, and the copies file the index batch records.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::ClusterRule;
use crate::error::Result;
use crate::index::copies;
use crate::io::output::OutputDir;
use crate::io::work;
use crate::plan::Plan;

use super::{IndexMatches, Outcome};

/// An indexed document and its copies across nights, tonight's included.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct Copied {
    pub id: String,
    pub batch: String,
    pub copies: u32,
}

/// Indexed documents listed in the summary's `most_copied`.
const MOST_COPIED: usize = 10;

/// The [`MOST_COPIED`] indexed documents tonight's documents were dropped against with the most
/// copies (ties to the earlier batch, then the smaller number).
pub(super) fn most_copied(
    out: &Outcome,
    index: &IndexMatches,
    size: &[u32],
    names: &[&str],
) -> Vec<Copied> {
    // (batch, number) -> (copies, id)
    let mut seen: BTreeMap<(u32, u32), (u32, &str)> = BTreeMap::new();
    for (d, a) in out.anchored() {
        let m = &index.matches[a as usize];
        seen.insert((m.batch, m.xdoc), (size[d], m.xid.as_str()));
    }
    let mut top: Vec<_> = seen.into_iter().collect();
    top.sort_by_key(|&(at, (copies, _))| (std::cmp::Reverse(copies), at));
    top.into_iter()
        .take(MOST_COPIED)
        .map(|((b, _), (copies, id))| Copied {
            id: id.to_string(),
            batch: names[b as usize].to_string(),
            copies,
        })
        .collect()
}

/// The copies so far ([`crate::index::copies`]) of the indexed documents tonight's documents
/// matched, by (batch position in the compare list, number).
pub(super) fn prior_copies(plan: &Plan, index: &IndexMatches) -> Result<BTreeMap<(u32, u32), u32>> {
    let Some(ip) = plan.index.as_ref().filter(|_| !index.matches.is_empty()) else {
        return Ok(BTreeMap::new());
    };
    let wanted: ahash::AHashSet<(usize, u32)> = index
        .matches
        .iter()
        .map(|m| (m.batch as usize, m.xdoc))
        .collect();
    let counts = copies::counts(&ip.dir(), &ip.compare, |b, x| wanted.contains(&(b, x)))?;
    Ok(counts
        .into_iter()
        .map(|((b, x), c)| ((b as u32, x), c.copies))
        .collect())
}

/// Writes tonight's copies file for the index stage: the copies of the documents the batch
/// holds (kept ones under `keeper`, all under `components`), in batch order, and the new totals
/// of the indexed documents tonight's documents were dropped against.
pub(super) fn write_copies(
    work: &OutputDir,
    plan: &Plan,
    out: &Outcome,
    index: &IndexMatches,
    size: &[u32],
    kept: &dyn Fn(usize) -> bool,
) -> Result<()> {
    let Some(ip) = &plan.index else {
        return Ok(());
    };
    let holds_all = plan.config.cluster == ClusterRule::Components;
    let own = (0..out.keeper.len())
        .filter(|&d| holds_all || kept(d))
        .map(|d| size[d])
        .collect();
    let mut renewed: BTreeMap<String, Vec<(u32, u32)>> = BTreeMap::new();
    for (d, a) in out.anchored() {
        let m = &index.matches[a as usize];
        if let Some(b) = ip.compare.get(m.batch as usize) {
            renewed
                .entry(b.dir.clone())
                .or_default()
                .push((m.xdoc, size[d]));
        }
    }
    for docs in renewed.values_mut() {
        docs.sort_unstable();
        docs.dedup();
    }
    work.write_bytes(work::COPIES, copies::Copies { own, renewed }.encode())
}
