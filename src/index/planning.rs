//! Tonight's use of the index ([`plan`]): the settings every batch must share, the batch name's
//! checks, and the batches to compare with.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::{Config, Method};
use crate::error::{Error, Result};
use crate::io::output::OutputDir;

use super::head::{read_head, BatchEntry};

/// What a run knows about the index from its plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct IndexPlan {
    pub location: String,
    pub batch: String,
    /// Tonight's batch directory (`batches/NAME-HASH`, HASH from the input and settings, so a
    /// rerun with other input never mixes files with the first run's), set by [`Self::named`].
    pub dir: String,
    pub window: usize,
    /// The batches tonight is compared with, oldest first: lingering ones, then the window.
    pub compare: Vec<BatchEntry>,
    /// The head generation the plan was made from (0: no head yet).
    pub generation: u64,
    /// SimHash: the index's feature filter, used instead of sampling tonight.
    pub frequencies: Option<String>,
    pub settings: BTreeMap<String, serde_json::Value>,
    /// The server's sealed journal files tonight's batch folds in, read before the input
    /// ([`super::fold`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fold: Vec<String>,
    /// The highest fold number the index had folded when planned.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub folded_through: u64,
    /// The ids `serve` removed when planned: tonight matches none of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl IndexPlan {
    /// The plan with its batch directory named after `fingerprint`, which identifies tonight's
    /// input and settings.
    pub(crate) fn named(self, fingerprint: u64) -> IndexPlan {
        IndexPlan {
            dir: format!("batches/{}-{fingerprint:016x}", self.batch),
            ..self
        }
    }

    /// The index directory.
    pub(crate) fn dir(&self) -> OutputDir {
        OutputDir::parse(&self.location)
    }

    /// Tonight's batch directory.
    pub(crate) fn batch_dir(&self) -> OutputDir {
        self.dir().child(&self.dir)
    }
}

/// The settings that change signatures or matches, by method (what the head records).
pub(crate) fn settings(cfg: &Config) -> BTreeMap<String, serde_json::Value> {
    let all = cfg.to_json();
    let mut keys = vec![
        "method",
        "ngram",
        "threshold",
        "cluster",
        "partition_by",
        "across",
    ];
    match cfg.method {
        Method::Minhash => keys.extend([
            "num_perm",
            "bands",
            "rows",
            "seed",
            "sketch",
            "verify",
            "min_shingles",
            "index_keys",
        ]),
        Method::Simhash => keys.extend([
            "hamming",
            "simhash_blocks",
            "simhash_ngram",
            "simhash_tf_cap",
            "simhash_max_df",
            "simhash_df_sample",
            "simhash_top_k",
            "simhash_min_features",
        ]),
    }
    let mut out: BTreeMap<String, serde_json::Value> = keys
        .into_iter()
        .map(|k| (k.to_string(), all.get(k).cloned().unwrap_or_default()))
        .collect();
    let tokenizer = serde_json::to_value(cfg.effective_tokenizer()).unwrap_or_default();
    out.insert("tokenizer".into(), tokenizer);
    out.insert("segmentation".into(), SEGMENTATION.into());
    out
}

/// The version of the tokenisation rules (`text::tokenize`) an index records, raised whenever
/// they change the tokens of some text: 2 splits Thai, Lao, Khmer and Myanmar into clusters, by
/// the Unicode script of each character, and bounds every token (1: no record, before that).
pub(crate) const SEGMENTATION: u32 = 2;

/// A flag spelling of a setting key.
fn flag(key: &str) -> String {
    format!("--{}", key.replace('_', "-"))
}

/// Plans tonight's use of the index: checks the settings and the batch name, and lists the
/// batches to compare with (the head is read once per run, here). The plan names the batch
/// directory after the input ([`IndexPlan::named`]).
pub(crate) fn plan(cfg: &Config) -> Result<Option<IndexPlan>> {
    let (Some(location), Some(batch)) = (&cfg.index, &cfg.batch) else {
        return Ok(None);
    };
    let index = OutputDir::parse(location);
    let ours = settings(cfg);
    let head = read_head(&index)?;
    let err = |msg: String| Error::Index {
        index: location.clone(),
        msg,
    };
    let (compare, generation, frequencies) = match &head {
        None => (Vec::new(), 0, None),
        Some(h) => {
            // The method first: with another method every other setting differs too.
            let mut keys: Vec<&String> = h.settings.keys().chain(ours.keys()).collect();
            keys.sort_by_key(|k| (*k != "method", *k));
            keys.dedup();
            for k in keys {
                let theirs = &h.settings.get(k).cloned().unwrap_or_default();
                let mine = ours.get(k).cloned().unwrap_or_default();
                if k == "segmentation" && &mine != theirs {
                    return Err(err(format!(
                        "it was built with an older tokenisation (segmentation {}; this corpus-dedup uses {SEGMENTATION}, which splits Thai, Lao, Khmer and Myanmar text into clusters by Unicode script), so its shingles do not match tonight's. Start a new index (another --index location); the old one is left as it is and the corpus-dedup that built it still reads it",
                        if theirs.is_null() { "1".to_string() } else { theirs.to_string() }
                    )));
                }
                if &mine != theirs {
                    let shown = |v: &serde_json::Value| match v {
                        serde_json::Value::Null => "(not set)".to_string(),
                        v => v.to_string(),
                    };
                    let (theirs, mine) = (shown(theirs), shown(&mine));
                    return Err(err(format!(
                        "it was built with {} {theirs}, this run has {} {mine}. Every batch of an index must use the same settings: run with {} {theirs}, or start a new index (another --index) for the new settings",
                        flag(k),
                        flag(k),
                        flag(k)
                    )));
                }
            }
            let newest = h.batches.last().map(|b| b.name.as_str());
            let compare = if newest == Some(batch.as_str()) {
                if !h.rerun {
                    return Err(err(format!(
                        "batch '{batch}' cannot be rerun: the batch after it was removed (index remove), so what it was first compared with is not known. Run the night under a new name that sorts after '{batch}'"
                    )));
                }
                // A rerun of the newest batch: what its first run compared with.
                h.compared.clone()
            } else {
                let named = h.batches.iter().chain(&h.lingering).chain(&h.compared);
                if named.into_iter().any(|b| &b.name == batch) {
                    return Err(err(format!(
                        "batch '{batch}' is already in the index and is not its newest batch ('{}'); only the newest batch can be rerun",
                        newest.unwrap_or("")
                    )));
                }
                if let Some(n) = newest.filter(|n| batch.as_str() <= *n) {
                    return Err(err(format!(
                        "batch '{batch}' sorts before the index's newest batch '{n}': batches are added in order, so name them to sort by time (e.g. 2026-11-23), or use a new index"
                    )));
                }
                h.lingering.iter().chain(&h.batches).cloned().collect()
            };
            (compare, h.generation, h.frequencies.clone())
        }
    };
    let through = head.as_ref().map_or(0, |h| h.folded_through);
    let fold = match (&head, index.local_dir()) {
        // A rerun folds what its first run folded; those files are kept until the next batch.
        (Some(h), _) if h.batches.last().is_some_and(|b| &b.name == batch) => {
            if let Some(gone) = h.folded.iter().find(|f| !std::path::Path::new(f).exists()) {
                return Err(err(format!(
                    "batch '{batch}' folded in the server's journal file {gone}, which is gone, so it cannot be rerun exactly. Run the night under a new name that sorts after '{batch}'"
                )));
            }
            h.folded.clone()
        }
        (_, Some(dir)) => super::fold::seal(dir, through)?,
        (_, None) => Vec::new(),
    };
    let removed = match index.local_dir() {
        Some(dir) => super::fold::removed_ids(dir)?,
        None => Vec::new(),
    };
    Ok(Some(IndexPlan {
        location: location.clone(),
        batch: batch.clone(),
        dir: format!("batches/{batch}"),
        window: cfg.window,
        compare,
        generation,
        frequencies,
        settings: ours,
        fold,
        folded_through: through,
        removed,
    }))
}
