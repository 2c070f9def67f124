//! Stage `keys` (one task per part): the tokens of the part's documents that an exact check
//! needs, made again from the shards (`keys/pP.{keys,tokens,index}`, [`crate::io::keys`]); their
//! shingle keys are rolled from the tokens when read.
//!
//! Keys are four bytes per token: storing every document's, as the signatures stage does with
//! `--work-keys stored`, is three quarters of the work directory, for the few documents that
//! verification checks exactly. Here only those are written, as ranks into the part's token
//! dictionary ([`keys::write_tokens`]): under half the bytes of their keys. Which ones is known
//! once the estimates are: a part's task takes the documents the
//! verify tasks listed for it (both documents of every pair near the threshold or with a short
//! document), the members of giant buckets (the keeper rule compares them as it goes), and with
//! `--index` the documents whose keys the index batch keeps ([`keeps_keys`]). It reads
//! its part's shards again, skipping the chunks that hold none of them, and makes their tokens as
//! the signatures stage made them (the same function of the text and settings).
//!
//! [`KeySource`] is how every later stage gets keys: from the key files, and for a document no
//! file holds (the lookup stage runs before this one; a giant bucket's first copy can be
//! another part's document) from the shards, the same way.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::config::{ClusterRule, Config, IndexKeys, Method, WorkKeys};
use crate::error::Result;
use crate::io::keys::{self, KeyIndex};
use crate::io::output::OutputDir;
use crate::io::work;
use crate::io::{doc_lists, store};
use crate::minhash::SigSource;
use crate::plan::{Plan, Stage};
use crate::simhash;
use crate::stages::candidates;
use crate::stages::remade;
use crate::stages::signatures::signature_column;
use crate::text::sets::ShingleSets;
use crate::text::shingle;

/// Counters of a keys task.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct KeyStats {
    /// Documents whose keys the task made (each once, whatever needed it).
    pub documents: u64,
    pub keys: u64,
    /// Of them: listed by the verify tasks, members of giant buckets, kept by the index batch.
    pub for_verify: u64,
    pub for_giants: u64,
    pub for_index: u64,
}

/// The keys task of part `q`.
pub(crate) fn run(work: &OutputDir, plan: &Plan, q: usize) -> Result<KeyStats> {
    release_pairs(work, plan, q)?;
    let range = plan.part_range(q);
    let mut stats = KeyStats::default();
    let needs = (0..plan.tasks(Stage::Verify)).map(work::needs_file);
    let mut docs = doc_lists::read_part_of_all(work, needs, &plan.parts, q)?;
    stats.for_verify = docs.len() as u64;
    let giants = giant_members(work, plan, range.clone())?;
    stats.for_giants = giants.len() as u64;
    let kept = index_keys(work, plan, q)?;
    stats.for_index = kept.len() as u64;
    docs.extend(giants);
    docs.extend(kept);
    docs.sort_unstable();
    docs.dedup();
    let tokens = remake_tokens(plan, q, &docs)?;
    let n = plan.config.ngram;
    stats.documents = docs.len() as u64;
    stats.keys = (tokens.iter())
        .map(|t| shingle::shingle_count(t.len(), n) as u64)
        .sum();
    let first = plan.parts[q].0;
    // A part numbers its documents in 32 bits (the plan holds parts to that).
    let local: Vec<u32> = docs.iter().map(|&d| (d - first) as u32).collect();
    keys::write_tokens(work, q, n, &local, &tokens)?;
    Ok(stats)
}

/// The token hashes of `docs` (ascending, all of part `p`), made from the part's shards again
/// as the signatures stage makes them: their shingle keys are the rolling hashes of each
/// `--ngram` of them.
fn remake_tokens(plan: &Plan, p: usize, docs: &[u64]) -> Result<Vec<Vec<u64>>> {
    let tokenizer = plan.config.effective_tokenizer();
    remade::of_docs(plan, p, docs, |texts| {
        let texts: Vec<Option<&str>> = texts.iter().collect();
        texts
            .par_iter()
            .map_init(shingle::Scratch::default, |scratch, text| match text {
                Some(t) => shingle::token_hashes_of(t, tokenizer, scratch).to_vec(),
                None => Vec::new(),
            })
            .collect()
    })
}

/// Whether the manifest stage releases the key files of the keys stage (`--work-keys remade`):
/// under the keeper rule its similarities rarely need keys (a drop's edge to its keeper was
/// verified), and without an index no later stage reads them; `components` computes many and
/// keeps them. (Stored keys are written first and stay: the work directory is largest before
/// the manifest stage either way.)
pub(crate) fn releases_keys(plan: &Plan) -> bool {
    plan.config.work_keys == WorkKeys::Remade
        && plan.config.cluster == ClusterRule::Keeper
        && plan.index.is_none()
}

/// Removes the candidate pair files from the first keys task (every verify task is complete):
/// only verify and the sweep read them, and the sweep runs after this stage, so they stay for
/// it. A rerun finds verify complete and never asks for them.
fn release_pairs(work: &OutputDir, plan: &Plan, q: usize) -> Result<()> {
    if q > 0 || plan.tasks(Stage::Sweep) > 0 {
        return Ok(());
    }
    for t in 0..plan.run_candidates() {
        work.remove(&work::pairs_file(t))?;
    }
    Ok(())
}

/// `--cluster keeper`: the documents of `range` in a giant bucket (none elsewhere).
fn giant_members(work: &OutputDir, plan: &Plan, range: std::ops::Range<u64>) -> Result<Vec<u64>> {
    if plan.config.cluster != ClusterRule::Keeper {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    candidates::each_giant_file(work, plan, "keys", |_, docs| {
        out.extend(docs.into_iter().filter(|d| range.contains(d)));
    })?;
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Store records read at a time while listing the documents whose keys an index batch keeps.
const RECORDS_PER_READ: usize = 16_384;

/// `--index`: the documents of part `q` whose keys the index batch would keep, were they kept.
fn index_keys(work: &OutputDir, plan: &Plan, q: usize) -> Result<Vec<u64>> {
    let Some(_) = &plan.index else {
        return Ok(Vec::new());
    };
    let cfg = &plan.config;
    if cfg.method == Method::Simhash && cfg.simhash_min_features == 0 {
        return Ok(Vec::new());
    }
    let range = plan.part_range(q);
    let all: Vec<u64> = range.collect();
    let mut out = Vec::new();
    for window in all.chunks(RECORDS_PER_READ) {
        let f = store::fetch(
            work,
            &plan.parts,
            plan.store_layout(),
            window.to_vec(),
            store::Wanted::SIGNATURES,
        )?;
        out.extend(
            window
                .iter()
                .copied()
                .filter(|&d| keeps_keys(cfg, f.shingles(d), f.sig(d))),
        );
    }
    Ok(out)
}

/// Whether the batch keeps the shingle keys of a document with `shingles` shingles and store
/// record `rec` (see [`crate::stages::index`]; a document without shingles has none to keep).
pub(crate) fn keeps_keys(cfg: &Config, shingles: u32, rec: &[u32]) -> bool {
    if shingles == 0 {
        return false;
    }
    match cfg.method {
        Method::Simhash => {
            cfg.simhash_min_features > 0
                && (simhash::record_features(rec) as usize) < cfg.simhash_min_features
        }
        Method::Minhash => {
            cfg.index_keys == IndexKeys::All
                || f64::from(shingles) < cfg.min_shingles as f64 / cfg.threshold
        }
    }
}

/// The shingle keys of `docs` (ascending, all of part `p`), made from the part's shards again
/// as the signatures stage made them.
fn remake(plan: &Plan, p: usize, docs: &[u64]) -> Result<Vec<Vec<u32>>> {
    let tokenizer = plan.config.effective_tokenizer();
    remade::of_docs(plan, p, docs, |texts| {
        let keys = signature_column(texts, None, tokenizer, plan.config.ngram, None).1;
        (0..texts.len()).map(|j| keys.get(j).to_vec()).collect()
    })
}

/// Where the stages after `keys` get shingle keys: the key files (each part's index read once),
/// and the shards for a document no file holds.
pub(crate) struct KeySource<'a> {
    work: &'a OutputDir,
    plan: &'a Plan,
    /// Whether key files exist: written by the signatures stage (`--work-keys stored`), or by
    /// the keys stage when this stage runs after it.
    stored: bool,
    /// Whether key files may be gone ([`keys::release`]d by the manifest stage): a document of
    /// such a part is made from the shards.
    released: bool,
    indices: Vec<Option<KeyIndex>>,
    /// Parts whose key files were found released: not looked for again.
    gone: Vec<bool>,
    /// Documents whose keys were read from key files, and made from the shards again.
    pub(crate) read: u64,
    pub(crate) remade: u64,
}

impl<'a> KeySource<'a> {
    /// A source for a stage after the keys stage (`after_keys`), or before it (lookup).
    pub(crate) fn new(work: &'a OutputDir, plan: &'a Plan, after_keys: bool) -> KeySource<'a> {
        KeySource {
            work,
            plan,
            stored: after_keys || plan.config.work_keys != WorkKeys::Remade,
            released: false,
            indices: (0..plan.parts.len()).map(|_| None).collect(),
            gone: vec![false; plan.parts.len()],
            read: 0,
            remade: 0,
        }
    }

    /// A source for the manifest stage, which releases each part's key files as it starts
    /// (under the keeper rule, without an index: [`releases_keys`]).
    pub(crate) fn after_release(work: &'a OutputDir, plan: &'a Plan) -> KeySource<'a> {
        KeySource {
            released: releases_keys(plan),
            ..KeySource::new(work, plan, true)
        }
    }

    /// The shingle keys of `docs` (sorted, unique), as the signatures stage makes them.
    pub(crate) fn sets(&mut self, docs: Vec<u64>) -> Result<ShingleSets> {
        let mut sets: Vec<Vec<u32>> = Vec::with_capacity(docs.len());
        for (p, of_part) in self.plan.by_part(&docs, |&d| d).into_iter().enumerate() {
            if of_part.is_empty() {
                continue;
            }
            if self.stored && self.indices[p].is_none() && !self.gone[p] {
                let first = self.plan.parts[p].0;
                self.indices[p] = match self.released {
                    true => KeyIndex::read_if_present(self.work, p, first)?,
                    false => Some(KeyIndex::read(self.work, p, first)?),
                };
                self.gone[p] = self.indices[p].is_none();
            }
            let (held, missing): (Vec<u64>, Vec<u64>) = match &self.indices[p] {
                Some(index) => of_part.iter().partition(|&&d| index.holds(d)),
                None => (Vec::new(), of_part.to_vec()),
            };
            let mut from_file = match &self.indices[p] {
                Some(index) if !held.is_empty() => index.keys(self.work, &held)?,
                _ => Vec::new(),
            }
            .into_iter();
            let mut remade = remake(self.plan, p, &missing)?.into_iter();
            self.read += held.len() as u64;
            self.remade += missing.len() as u64;
            // Back in document order.
            for d in of_part {
                let next = match held.binary_search(d) {
                    Ok(_) => from_file.next(),
                    Err(_) => remade.next(),
                };
                sets.push(next.unwrap_or_default());
            }
        }
        Ok(ShingleSets::new(docs, sets))
    }
}
