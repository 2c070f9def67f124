//! Stage `pair-signatures` (`--work-keys remade` under MinHash without an index; one task per
//! part): the signatures of the part's documents that a candidate pair or a giant bucket names,
//! made from the part's shards again, into `pair-sigs/pP.bin` ([`crate::io::pair_sigs`]).
//!
//! The store's records then hold no signature: 512 of their 552 bytes per document at 128
//! permutations, for every document, where verification, the keeper rule and the manifest only
//! ever read those of the documents candidates name (about a third of them on the growth
//! corpora). The candidates tasks list those documents by part (`pair-docs/tT.bin`); this task
//! reads its part's lists (and adds the later exact copies of those documents in the part, which
//! have no band rows), reads again the shard chunks that hold them, and makes their signatures as
//! the signatures stage made them (the same function of the text and settings).

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::io::output::OutputDir;
use crate::io::{doc_lists, pair_sigs, work};
use crate::minhash::Permutations;
use crate::plan::{Plan, Stage};
use crate::stages::candidates;
use crate::stages::lookup::read_exact;
use crate::stages::remade;
use crate::stages::signatures::signatures_only;

/// Counters of a pair-signatures task.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct PairSignatureStats {
    /// Documents whose signatures the task made.
    pub documents: u64,
    /// Of them: exact copies of a listed document that no pair names.
    pub exact_repeats: u64,
}

/// The pair-signatures task of part `q`.
pub(crate) fn run(work: &OutputDir, plan: &Plan, q: usize) -> Result<PairSignatureStats> {
    candidates::release_band_rows(work, plan, q)?;
    let lists = (0..plan.tasks(Stage::Candidates)).map(work::pair_docs_file);
    let docs = doc_lists::read_part_of_all(work, lists, &plan.parts, q)?;
    let (first, count) = plan.parts[q];
    let listed = docs.len() as u64;
    let docs = with_exact_repeats(work, q, (first, count), docs)?;
    let cfg = &plan.config;
    let perms = Permutations::of(cfg);
    let tokenizer = cfg.effective_tokenizer();
    let values = remade::of_docs(plan, q, &docs, |texts| {
        signatures_only(texts, &perms, tokenizer, cfg.ngram).values
    })?;
    let local: Vec<u32> = docs.iter().map(|&d| (d - first) as u32).collect();
    let bytes = pair_sigs::encode(perms.len(), count, &local, &values);
    work.write_bytes(&work::pair_sigs_file(q), bytes)?;
    Ok(PairSignatureStats {
        documents: docs.len() as u64,
        exact_repeats: docs.len() as u64 - listed,
    })
}

/// `docs` (ascending, of part `q`, whose first document and count are `part`) and every other
/// document of the part with the exact-text hash of one of them. A later exact copy of a text in
/// its part has no band rows (the cluster's exact pre-pass joins it), so no pair names it, yet
/// the manifest computes its similarity to a keeper that is not its original (`--cluster
/// components`); its signature is its original's.
fn with_exact_repeats(
    work: &OutputDir,
    q: usize,
    (first, count): (u64, u64),
    mut docs: Vec<u64>,
) -> Result<Vec<u64>> {
    let exact = read_exact(work, q, count as usize)?;
    let hashes: ahash::AHashSet<u128> = (docs.iter())
        .map(|&d| exact[(d - first) as usize])
        .filter(|&h| h != 0)
        .collect();
    let repeats = (exact.iter().enumerate())
        .filter(|(_, h)| hashes.contains(h))
        .map(|(i, _)| first + i as u64);
    docs.extend(repeats);
    docs.sort_unstable();
    docs.dedup();
    Ok(docs)
}
