//! The retained index as the server searches it: the head's settings as a run's configuration,
//! and its batches (lingering ones, then the window) opened for lookups, as a nightly run would
//! compare with them. Reopened when a nightly run commits a new head.

use std::sync::Arc;
use std::time::SystemTime;

use super::features::Features;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::index::batch::BatchReader;
use crate::index::{read_head, BatchEntry, HEAD};
use crate::io::output::OutputDir;
use crate::plan::Plan;
use crate::stages::lookup::{self, Live, Probes};

/// One head of the index, opened.
pub(crate) struct View {
    /// The head's generation and when its file was written (a new one is a nightly commit).
    pub generation: u64,
    stamp: Option<SystemTime>,
    /// A run's plan with the index's settings (no input): what the lookup code reads them from.
    pub plan: Plan,
    pub compare: Vec<BatchEntry>,
    /// The highest number of the server's fold files its batches hold.
    pub folded_through: u64,
    /// SimHash: the index's feature filter (index-relative file).
    pub frequencies: Option<String>,
    readers: Vec<Arc<BatchReader>>,
    live: Live,
}

/// When the head file of `index` was last written (None: no head).
fn head_stamp(index: &OutputDir) -> Option<SystemTime> {
    let dir = index.local_dir()?;
    std::fs::metadata(dir.join(HEAD)).ok()?.modified().ok()
}

impl View {
    /// Opens the head of `index` (a local directory), refusing an index the server cannot answer
    /// for as a nightly run would.
    pub(crate) fn open(index: &OutputDir) -> Result<View> {
        let location = index.location("");
        let refuse = |msg: String| Error::Index {
            index: location.clone(),
            msg,
        };
        let stamp = head_stamp(index);
        let head = read_head(index)?.ok_or_else(|| {
            refuse("it has no head (index.json): run a nightly `run --index` into it first, which sets its settings".into())
        })?;
        let config = config_of(&head.settings).map_err(|e| refuse(e.to_string()))?;
        if config.across.is_some() {
            return Err(refuse(
                "it was built with --across, whose values a request does not carry; `serve` answers for indexes without it".into(),
            ));
        }
        let plan = Plan {
            format: crate::plan::FORMAT,
            version: env!("CARGO_PKG_VERSION").to_string(),
            config,
            files: Vec::new(),
            documents: 0,
            parts: Vec::new(),
            bucket_ranges: 1,
            index: None,
            reference: Vec::new(),
            part_files: Vec::new(),
        };
        let compare: Vec<BatchEntry> = head
            .lingering
            .iter()
            .chain(&head.batches)
            .cloned()
            .collect();
        let readers = lookup::open_batches(index, &compare, plan.bands())?;
        let live = Live::read(index, &compare, false, Vec::new())?;
        Ok(View {
            generation: head.generation,
            stamp,
            plan,
            compare,
            folded_through: head.folded_through,
            frequencies: head.frequencies.clone(),
            readers,
            live,
        })
    }

    /// Whether the head of `index` was written since this view was opened.
    pub(crate) fn stale(&self, index: &OutputDir) -> bool {
        head_stamp(index) != self.stamp
    }

    /// Each query's earliest verified match in the index: (batch name, the indexed document's
    /// id, similarity).
    pub(crate) fn search(&self, f: &Features) -> Result<Vec<Option<(String, String, f32)>>> {
        let n = f.exact.len();
        let probes = Probes::of(&self.plan, n, f, f.exact.clone(), &f.partitions);
        let (best, _, _) = lookup::search(&self.plan, &self.readers, &probes, &self.live, f)?;
        let mut out = vec![None; n];
        for (bi, r) in self.readers.iter().enumerate() {
            let (xs, matched) = lookup::matched_in(&best, bi);
            if xs.is_empty() {
                continue;
            }
            let ids = r.ids(&xs)?;
            for (q, m) in matched {
                let id = ids.get(&m.1).cloned().unwrap_or_default();
                out[q] = Some((self.compare[bi].name.clone(), id, m.2));
            }
        }
        Ok(out)
    }

    /// The files lookups read at random, in the order to preload them: each kind of file (most
    /// often read first) of every batch, newest batch first.
    pub(crate) fn random_reads(&self) -> Vec<std::path::PathBuf> {
        let per_batch: Vec<_> = self
            .readers
            .iter()
            .rev()
            .map(|r| r.random_reads())
            .collect();
        (0..5)
            .flat_map(|kind| per_batch.iter().flat_map(move |files| files[kind].clone()))
            .collect()
    }

    /// Documents the index holds (its batches' live documents).
    pub(crate) fn documents(&self) -> u64 {
        self.compare.iter().map(BatchEntry::in_files).sum()
    }
}

/// The configuration of a run with an index's recorded settings (the others at their defaults,
/// which change no match).
pub(crate) fn config_of(
    settings: &std::collections::BTreeMap<String, serde_json::Value>,
) -> Result<Config> {
    let base = crate::Settings {
        input: vec!["serve".into()],
        output: Some("serve".into()),
        ..Default::default()
    }
    .resolve()?;
    let mut json = base.to_json();
    if let Some(obj) = json.as_object_mut() {
        for (k, v) in settings {
            if let Some(slot) = obj.get_mut(k) {
                *slot = v.clone();
            }
        }
    }
    serde_json::from_value(json).map_err(|e| {
        Error::Config(format!(
            "the index's settings do not make a configuration: {e}"
        ))
    })
}

impl View {
    /// Removes the indexed documents with one of `ids` from every later match; returns how many
    /// it found.
    pub(crate) fn remove_ids(&mut self, ids: &ahash::AHashSet<String>) -> Result<u64> {
        self.live.remove_ids(&self.readers, ids)
    }
}
