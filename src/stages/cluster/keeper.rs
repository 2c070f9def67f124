//! `--cluster keeper` in the cluster task: keep order from `--keep`, documents matched in the
//! retained index dropped first (every indexed document is kept and earlier than tonight's),
//! then the rule of [`super::rule`] over the verified edges, with giant buckets resolved
//! against their kept documents as the rule goes ([`Giants`]).

use serde::{Deserialize, Serialize};

use super::order::keep_order;
use super::rule::{self as keeper, Documents, Lazy, NOT_TONIGHT};
use super::{each_edge32, IndexMatches, KeepData, Outcome};
use crate::error::Result;
use crate::index::renew::{self, Renewals};
use crate::io::output::OutputDir;
use crate::io::store;
use crate::io::work;
use crate::plan::Plan;
use crate::stages::candidates;
use crate::stages::keys::KeySource;
use crate::stages::verify;
use crate::text::sets::ShingleSets;

/// How the giant buckets (more members than the pair cap) were resolved.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct GiantStats {
    /// Giant buckets (over all bands).
    pub buckets: u64,
    /// Distinct texts in them.
    pub members: u64,
    /// Pairs compared: each member with the bucket's documents kept before it, up to the cap.
    pub comparisons: u64,
    /// Members of a bucket holding more kept documents than the cap that matched none of the
    /// first ones: they may resemble a later kept document of the bucket and stay kept (found
    /// only if another band pairs them).
    pub capped: u64,
}

/// The keeper rule's outcome for every document, and how its giant buckets went.
pub(super) fn outcome(
    work: &OutputDir,
    plan: &Plan,
    first_copy: &[u32],
    index: &IndexMatches,
    keep: KeepData,
    across: Vec<u64>,
    never_kept: &[bool],
) -> Result<(Outcome, GiantStats)> {
    let n = plan.documents as usize;
    let rank = keep_order(plan, &keep);
    drop(keep);
    // Per text (group): the earliest indexed document any copy matched, as in `components`.
    let mut anchor = vec![NOT_TONIGHT; if index.matches.is_empty() { 0 } else { n }];
    for (i, m) in index.matches.iter().enumerate() {
        let g = first_copy[m.doc as usize] as usize;
        let earlier = |a: u32| {
            let o = &index.matches[a as usize];
            (m.batch, m.xdoc) < (o.batch, o.xdoc)
        };
        if anchor[g] == NOT_TONIGHT || earlier(anchor[g]) {
            anchor[g] = i as u32;
        }
    }
    let mut giants = Giants::read(work, plan, |d| u64::from(first_copy[d as usize]), across)?;
    let docs = Documents {
        rank: &rank,
        group: first_copy,
        copies_kept: plan.config.across.is_some(),
        never_kept,
    };
    let external = |g: u32| anchor.get(g as usize).is_some_and(|&a| a != NOT_TONIGHT);
    let k = keeper::keepers(&docs, external, |f| each_edge32(work, plan, f), &mut giants)?;
    drop(rank);
    let (keeper, mut similarity) = (k.keeper, k.similarity);
    // Documents of a text matched in the index: its match's document is their keeper, at the
    // match's similarity (copies share their text, so their similarity to it).
    if !anchor.is_empty() {
        for d in 0..n {
            let a = anchor[first_copy[d] as usize];
            anchor[d] = a;
            // Dropped before the rule: against its text's index match.
            if keeper[d] == NOT_TONIGHT {
                similarity[d] = index.matches[a as usize].similarity;
            }
        }
    }
    // Cluster ids: the keeper's index; for an indexed keeper, the first of tonight's documents
    // dropped against it.
    let mut cluster = vec![NOT_TONIGHT; n];
    let mut first_of: ahash::AHashMap<(u32, u32), u32> = ahash::AHashMap::new();
    for d in 0..n {
        let c = match keeper[d] {
            NOT_TONIGHT => {
                let m = &index.matches[anchor[d] as usize];
                *first_of.entry((m.batch, m.xdoc)).or_insert(d as u32)
            }
            kd if kd != d as u32 => kd,
            _ => continue,
        };
        cluster[d] = c;
        if keeper[c as usize] == c {
            cluster[c as usize] = c;
        }
    }
    let out = Outcome {
        keeper,
        similarity,
        cluster,
        anchor,
    };
    Ok((out, giants.stats))
}

/// Writes the indexed documents tonight's drops renewed ([`crate::index::renew`]: each dropped
/// document's indexed keeper) for the index stage, and those that are any document's best index
/// match (what a rerun of tonight needs of a batch, [`crate::index::compact`]); returns the
/// renewed count by batch name.
pub(super) fn write_renewals(
    work: &OutputDir,
    plan: &Plan,
    out: &Outcome,
    index: &IndexMatches,
) -> Result<std::collections::BTreeMap<String, u64>> {
    let Some(ip) = &plan.index else {
        return Ok(Default::default());
    };
    let mut renewed = Renewals::new();
    for (_, a) in out.anchored() {
        let m = &index.matches[a as usize];
        if let Some(b) = ip.compare.get(m.batch as usize) {
            renewed.entry(b.dir.clone()).or_default().push(m.xdoc);
        }
    }
    let mut matched = Renewals::new();
    for m in &index.matches {
        if let Some(b) = ip.compare.get(m.batch as usize) {
            matched.entry(b.dir.clone()).or_default().push(m.xdoc);
        }
    }
    for docs in renewed.values_mut().chain(matched.values_mut()) {
        docs.sort_unstable();
        docs.dedup();
    }
    work.write_bytes(work::RENEWED, renew::encode(&renewed))?;
    work.write_bytes(work::MATCHED, renew::encode(&matched))?;
    Ok(ip
        .compare
        .iter()
        .filter_map(|b| Some((b.name.clone(), renewed.get(&b.dir)?.len() as u64)))
        .collect())
}

/// The giant buckets of the run, compared lazily: a member only with the bucket's documents
/// kept before it (the first `cap` of them), when the rule reaches it. Nodes are texts (first
/// copies). Signatures of every member are held; shingle sets only for the kept documents
/// still compared with, and the current member's.
pub(super) struct Giants<'a> {
    plan: &'a Plan,
    keys: KeySource<'a>,
    /// Each member's buckets.
    buckets_of: ahash::AHashMap<u64, Vec<u32>>,
    /// Each bucket's kept members so far, in keep order, by `--across` key (one list under key
    /// 0 without `--across`): the cap applies per value.
    kept: Vec<Vec<(u64, Vec<u64>)>>,
    sigs: store::Fetched,
    sets: ahash::AHashMap<u64, Vec<u32>>,
    /// The current member's set, kept if the member is.
    pending: Option<Vec<u32>>,
    cap: usize,
    /// `--across`: each document's key; a member is compared only with other values' documents.
    across: Vec<u64>,
    stats: GiantStats,
}

impl<'a> Giants<'a> {
    /// The giant buckets of the run; `group`: each document's group (first copy).
    pub(super) fn read(
        work: &'a OutputDir,
        plan: &'a Plan,
        group: impl Fn(u64) -> u64,
        across: Vec<u64>,
    ) -> Result<Giants<'a>> {
        let mut buckets_of: ahash::AHashMap<u64, Vec<u32>> = ahash::AHashMap::new();
        let mut buckets = 0u32;
        candidates::each_giant_file(work, plan, "cluster", |bucket, doc| {
            let base = buckets;
            for (b, d) in bucket.into_iter().zip(doc) {
                let list = buckets_of.entry(group(d)).or_default();
                if list.last() != Some(&(base + b)) {
                    list.push(base + b);
                }
                buckets = buckets.max(base + b + 1);
            }
        })?;
        let mut members: Vec<u64> = buckets_of.keys().copied().collect();
        members.sort_unstable();
        let cap = match plan.config.method {
            crate::config::Method::Minhash => plan.config.max_bucket_pairs,
            crate::config::Method::Simhash => plan.config.simhash_max_bucket,
        };
        let stats = GiantStats {
            buckets: u64::from(buckets),
            members: members.len() as u64,
            ..GiantStats::default()
        };
        let wanted = store::Wanted::SIGNATURES;
        let sigs = store::fetch(work, &plan.parts, plan.store_layout(), members, wanted)?;
        Ok(Giants {
            plan,
            keys: KeySource::new(work, plan, true),
            buckets_of,
            kept: vec![Vec::new(); buckets as usize],
            sigs,
            sets: ahash::AHashMap::new(),
            pending: None,
            cap,
            across,
            stats,
        })
    }
}

impl Giants<'_> {
    /// How the giant buckets went.
    pub(super) fn stats(&self) -> GiantStats {
        self.stats.clone()
    }

    /// The `--across` key of a node (0 without `--across`).
    fn value(&self, node: u64) -> u64 {
        self.across.get(node as usize).copied().unwrap_or(0)
    }
}

impl Lazy for Giants<'_> {
    fn compare(&mut self, node: u64, offer: &mut dyn FnMut(u64, f32)) -> Result<()> {
        self.pending = None;
        let Some(buckets) = self.buckets_of.get(&node) else {
            return Ok(());
        };
        let mine = self.value(node);
        let mut others: Vec<u64> = Vec::new();
        let mut capped = false;
        for &b in buckets {
            // `--across`: only other values' documents can drop this one.
            let apart = self.kept[b as usize]
                .iter()
                .filter(|(v, _)| self.across.is_empty() || *v != mine);
            for (_, kept) in apart {
                capped |= kept.len() > self.cap;
                others.extend(&kept[..kept.len().min(self.cap)]);
            }
        }
        others.sort_unstable();
        others.dedup();
        if others.is_empty() {
            return Ok(());
        }
        // The member first: its exact checks share one load of its keys (verify::exact_edges).
        let pairs: Vec<(u64, u64)> = others.iter().map(|&u| (node, u)).collect();
        // The held sets this member's checks need are lent out of the cache and put back.
        let need = verify::sets_needed(self.plan, &pairs, &self.sigs);
        let mut held = Vec::with_capacity(need.len());
        let mut missing = Vec::new();
        for d in need {
            match self.sets.remove(&d) {
                Some(set) => held.push((d, set)),
                None => missing.push(d),
            }
        }
        let read = self.keys.sets(missing)?;
        let (docs, sets): (Vec<u64>, Vec<Vec<u32>>) = held.into_iter().unzip();
        let sets = ShingleSets::new(docs, sets).merge(read);
        let edges = verify::check_pairs(self.plan, &pairs, &self.sigs, &sets);
        // The kept documents' sets go back; the member's waits to see if it is kept.
        for (d, set) in sets.into_pairs() {
            match d == node {
                true => self.pending = Some(set),
                false => drop(self.sets.insert(d, set)),
            }
        }
        self.stats.comparisons += pairs.len() as u64;
        if capped && edges.is_empty() {
            self.stats.capped += 1;
        }
        for e in edges {
            offer(if e.a == node { e.b } else { e.a }, e.similarity);
        }
        Ok(())
    }

    fn kept(&mut self, node: u64) {
        let pending = std::mem::take(&mut self.pending);
        let Some(buckets) = self.buckets_of.get(&node) else {
            return;
        };
        let mut compared_with = false;
        let mine = self.value(node);
        for &b in buckets {
            let lists = &mut self.kept[b as usize];
            let at = match lists.iter().position(|(v, _)| *v == mine) {
                Some(at) => at,
                None => {
                    lists.push((mine, Vec::new()));
                    lists.len() - 1
                }
            };
            let kept = &mut lists[at].1;
            compared_with |= kept.len() < self.cap;
            kept.push(node);
        }
        // Only the first `cap` kept members of a bucket are compared with: keep their sets.
        if let Some(set) = pending.filter(|_| compared_with) {
            self.sets.insert(node, set);
        }
    }
}
