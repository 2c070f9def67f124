//! The retained index of earlier batches (`run --index INDEX --batch NAME --window N`): what a
//! nightly run compares tonight's documents with, and how tonight's batch is added and the oldest
//! batches expired.
//!
//! Layout of INDEX (a local directory or an s3:// prefix):
//! ```text
//! index.json                 the head: settings, the window's batches, lingering batches, what the
//!                            newest batch was compared with, generation
//! LOCK                       who is using the index (pid, host, start time)
//! frequencies.bin            SimHash: the over-frequent feature filter of the first batch, reused
//! batches/NAME-HASH/         one batch ([`batch`]): band keys, exact-text hashes, records, ids,
//!                            the documents of earlier batches it renewed ([`renew`]), where
//!                            its documents came from ([`origins`]), copies across nights
//!                            ([`copies`])
//! ```
//!
//! Invariants:
//! - The head is the only mutable file and is replaced in one step (a rename, or one PUT), so a
//!   reader sees the old index or the new one. Batch files are written before the head names
//!   them and deleted only after a head no longer names them.
//! - Across batches the earlier document wins: nothing in the index is ever dropped by a later run.
//! - Rerunning the newest batch compares with exactly what its first run compared with: the head
//!   keeps that list (`compared`) and its batches' files until the next new batch is added, so
//!   the rerun gives the same manifest and leaves the same head.
//! - `--cluster keeper`: a batch that leaves the window lingers while a batch in the window
//!   renewed any of its documents ([`renew`]); only those documents are compared with.
//! - A batch name already in the index other than the newest, or one that sorts before the
//!   newest, is refused: batches are added in order (ISO dates sort correctly).
//! - The head records every setting that changes signatures or matches; another value fails at
//!   once, naming the setting and both values.
//! - One writer at a time: [`Lock`] (a `flock`ed file locally, released by the kernel when its
//!   process dies; a conditionally created object on S3).

pub(crate) mod batch;
pub(crate) mod blocks;
pub(crate) mod compact;
pub(crate) mod copies;
pub(crate) mod export;
pub(crate) mod filter;
pub(crate) mod inspect;
pub(crate) mod labels;
pub(crate) mod live;
pub(crate) mod origins;
pub(crate) mod paragraphs;
pub(crate) mod renew;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::{Config, Method};
use crate::error::{Error, Result};
use crate::io::output::OutputDir;

/// Format of index.json and the batch files. 2: keeper batches (kept documents only), renewals
/// and lingering batches; 3: copies across nights ([`copies`]).
pub(crate) const FORMAT: u32 = 3;

/// The head file.
pub(crate) const HEAD: &str = "index.json";

/// The lock file (or object).
pub(crate) const LOCK: &str = "LOCK";

/// The SimHash feature filter every batch of an index shares.
pub(crate) const FREQUENCIES: &str = "frequencies.bin";

/// One batch of the index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct BatchEntry {
    pub name: String,
    /// Its directory under the index (`batches/NAME-HASH`).
    pub dir: String,
    /// Its run's documents.
    pub documents: u64,
    /// The documents it holds: its run's kept ones (`--cluster keeper`); absent when it holds
    /// every document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<u64>,
    /// Bytes of its files on disk.
    pub bytes: u64,
    /// Bytes a lookup holds in memory for it (filters and block tables).
    pub filter_bytes: u64,
    /// Its documents its own run dropped (none in heads written before this was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<u64>,
    /// Out of the window, kept for the documents a batch in the window renewed ([`renew`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lingering: bool,
    /// The documents of earlier batches its run renewed, by their batch directory.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub renews: BTreeMap<String, u64>,
    /// Lingering and rewritten to the documents still compared with ([`compact`]): where its
    /// files are now (`dir` stays its name for renewals) and how many documents they hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compacted: Option<live::Compacted>,
}

impl BatchEntry {
    /// The documents the batch holds.
    pub(crate) fn held(&self) -> u64 {
        self.held.unwrap_or(self.documents)
    }

    /// The directory of its files: `dir`, or where compaction rewrote them.
    pub(crate) fn files(&self) -> &str {
        self.compacted.as_ref().map_or(&self.dir, |c| &c.files)
    }

    /// The documents its files hold: all it holds, or those compaction kept.
    pub(crate) fn in_files(&self) -> u64 {
        self.compacted.as_ref().map_or(self.held(), |c| c.documents)
    }
}

/// index.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Head {
    pub format: u32,
    /// Raised by every commit.
    pub generation: u64,
    /// The settings every batch was made with ([`settings`]).
    pub settings: BTreeMap<String, serde_json::Value>,
    /// The batches in the window, oldest first.
    pub batches: Vec<BatchEntry>,
    /// Older batches still holding documents a batch in the window renewed, oldest first.
    pub lingering: Vec<BatchEntry>,
    /// What the newest batch was compared with (lingering batches flagged), oldest first: kept
    /// on disk until the next new batch, so that a rerun of the newest one is exact.
    pub compared: Vec<BatchEntry>,
    /// SimHash: the shared feature filter (index-relative name), once the first batch wrote it.
    pub frequencies: Option<String>,
    /// False after `index remove` took the newest batch away: what the batch now newest was
    /// compared with is not known any more, so it cannot be rerun exactly (a new batch can run).
    #[serde(default = "yes", skip_serializing_if = "Clone::clone")]
    pub rerun: bool,
}

fn yes() -> bool {
    true
}

impl Head {
    /// The batches whose files the index keeps: the window, the lingering ones and those the
    /// newest batch was compared with (one entry per directory).
    fn on_disk(&self) -> Vec<&BatchEntry> {
        let mut all: Vec<&BatchEntry> = Vec::new();
        for b in self
            .batches
            .iter()
            .chain(&self.lingering)
            .chain(&self.compared)
        {
            if all.iter().all(|a| a.files() != b.files()) {
                all.push(b);
            }
        }
        all
    }

    /// The batches a next run compares with, in that order: the lingering ones, then the
    /// window, oldest first.
    pub(crate) fn next_compare(&self) -> Vec<BatchEntry> {
        self.lingering
            .iter()
            .chain(&self.batches)
            .cloned()
            .collect()
    }

    /// Whether the window or a lingering batch is the batch in `dir`.
    fn holds(&self, dir: &str) -> bool {
        self.batches
            .iter()
            .chain(&self.lingering)
            .any(|b| b.dir == dir)
    }
}

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

/// Reads the head (None when the index is new).
pub(crate) fn read_head(index: &OutputDir) -> Result<Option<Head>> {
    let Some(bytes) = index.read(HEAD)? else {
        return Ok(None);
    };
    let head = parse_head(&bytes, &index.location(""), &index.location(HEAD))?;
    Ok(Some(head))
}

/// Reads the head's format first, so that an older head is named as such, not as damaged.
fn parse_head(bytes: &[u8], location: &str, path: &str) -> Result<Head> {
    #[derive(Deserialize)]
    struct Format {
        format: u32,
    }
    let bad = |source: serde_json::Error| Error::IndexFile {
        path: path.to_string(),
        source: crate::error::FileError::Parse {
            what: "an index head",
            source,
        },
    };
    let format = serde_json::from_slice::<Format>(bytes).map_err(bad)?.format;
    if format != FORMAT {
        return Err(Error::Index {
            index: location.trim_end_matches('/').to_string(),
            msg: format!(
                "index format {format}, this corpus-dedup reads format {FORMAT} (format 3 counts each document's copies across nights, format 2 holds kept documents only and renews what re-crawls bring back). Start a new index for the next batch (another --index location); the old one is left as it is and an older corpus-dedup still reads it"
            ),
        });
    }
    serde_json::from_slice(bytes).map_err(bad)
}

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
    Ok(Some(IndexPlan {
        location: location.clone(),
        batch: batch.clone(),
        dir: format!("batches/{batch}"),
        window: cfg.window,
        compare,
        generation,
        frequencies,
        settings: ours,
    }))
}

/// What a commit did, for the summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Committed {
    /// The batches in the window after the commit, oldest first.
    pub window: Vec<BatchEntry>,
    /// The lingering batches after the commit, oldest first.
    pub lingering: Vec<BatchEntry>,
    pub batches_added: Vec<String>,
    pub batches_expired: Vec<String>,
    /// Bytes of the index on disk (the window's, the lingering and those kept for a rerun).
    pub bytes_on_disk: u64,
    /// Bytes of filters and block tables a lookup of the next batch holds in memory.
    pub filter_bytes: u64,
    /// Lingering batches rewritten to the documents still compared with ([`compact`]).
    pub compacted: Vec<compact::CompactedBatch>,
    /// Seconds spent deciding and compacting.
    pub compaction_seconds: f64,
}

/// Adds tonight's batch `added` (its files already written) to the index: a new head in one
/// write, then the files of batches no head names any more are deleted. Idempotent: when the head
/// already ends with this batch (a rerun after a crash past this point) it changes nothing.
/// `frequencies`: SimHash's feature filter, stored in the index when it has none yet.
pub(crate) fn commit(
    ip: &IndexPlan,
    added: BatchEntry,
    frequencies: Option<Vec<u8>>,
    bands: usize,
) -> Result<Committed> {
    let index = ip.dir();
    let _lock = Lock::acquire(&ip.location)?;
    let head = read_head(&index)?;
    // The head this batch already committed (a rerun after a crash past the commit).
    let done = head.as_ref().filter(|h| {
        h.batches
            .last()
            .is_some_and(|b| b.name == added.name && b.dir == added.dir)
    });
    let generation = head.as_ref().map_or(0, |h| h.generation);
    if done.is_none() && generation != ip.generation {
        return Err(Error::Index {
            index: ip.location.clone(),
            msg: format!(
                "it changed while this run was working (generation {} when planned, {generation} now): another run added a batch. Rerun the same command to compare with the new index",
                ip.generation
            ),
        });
    }
    let new_head = if let Some(h) = done {
        h.clone()
    } else {
        let mut frequencies_name = head.as_ref().and_then(|h| h.frequencies.clone());
        if let (None, Some(bytes)) = (&frequencies_name, frequencies) {
            index.write_bytes(FREQUENCIES, bytes)?;
            frequencies_name = Some(FREQUENCIES.to_string());
        }
        let (batches, lingering) = next_window(&ip.compare, added.clone(), ip.window);
        let new_head = Head {
            format: FORMAT,
            generation: generation + 1,
            settings: ip.settings.clone(),
            batches,
            lingering,
            compared: ip.compare.clone(),
            frequencies: frequencies_name,
            rerun: true,
        };
        let text = serde_json::to_vec_pretty(&new_head).unwrap_or_default();
        crate::hooks::crash_at("index-commit");
        index.write_bytes(HEAD, text)?;
        new_head
    };
    let kept = new_head.on_disk();
    // Files no head names any more: the batches the previous head kept for its rerun (and an
    // earlier run's directory for this name, when its input differed).
    if let Some(old) = &head {
        for b in old.on_disk() {
            if kept.iter().all(|k| k.files() != b.files()) {
                index.child(b.files()).remove_all()?;
            }
        }
    }
    // Then the lingering batches that shrank (also on a rerun after a crash: it finishes them).
    let start = std::time::Instant::now();
    let (new_head, compacted) = compact_lingering(&index, &new_head, bands)?;
    let kept = new_head.on_disk();
    Ok(Committed {
        compacted,
        compaction_seconds: (start.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        window: new_head.batches.clone(),
        lingering: new_head.lingering.clone(),
        batches_added: vec![added.name.clone()],
        batches_expired: new_head
            .compared
            .iter()
            .filter(|b| !new_head.holds(&b.dir))
            .map(|b| b.name.clone())
            .collect(),
        bytes_on_disk: kept.iter().map(|b| b.bytes).sum(),
        filter_bytes: new_head
            .batches
            .iter()
            .chain(&new_head.lingering)
            .map(|b| b.filter_bytes)
            .sum(),
    })
}

/// Rewrites the lingering batches of `head` whose files hold at least [`compact::SHRINK`] times
/// the documents compared with (by the next batch or by a rerun of the newest, which compares
/// with what the newest was), then writes the head naming their new files and deletes the old
/// ones. Returns the head now on disk and what was compacted.
fn compact_lingering(
    index: &OutputDir,
    head: &Head,
    bands: usize,
) -> Result<(Head, Vec<compact::CompactedBatch>)> {
    // Only lingering batches are compacted: without any, no renewals need reading.
    if head.lingering.is_empty() || crate::hooks::compaction_off() {
        return Ok((head.clone(), Vec::new()));
    }
    let next = head.next_compare();
    let alive_next = renew::alive(index, &next)?;
    let alive_rerun = renew::alive(index, &head.compared)?;
    // What a rerun of the newest batch finds in a batch that was in its window: its best matches
    // there (it compares with all that batch held, and keeps the best match of each document).
    let newest_matched = match head.batches.last() {
        Some(n) => index
            .child(n.files())
            .read(renew::MATCHED)?
            .map(|bytes| renew::decode(&bytes, &index.child(n.files()).location(renew::MATCHED))),
        None => None,
    }
    .transpose()?;
    let mut done: Vec<(BatchEntry, compact::CompactedBatch)> = Vec::new();
    for (b, now) in next.iter().zip(&alive_next) {
        let Some(now) = now else {
            continue;
        };
        // What a rerun of the newest batch compares with in it: the live documents when it was
        // lingering then, the documents that were best matches when it was in the window.
        let was = head
            .compared
            .iter()
            .zip(&alive_rerun)
            .find(|(c, _)| c.dir == b.dir);
        let none = Vec::new();
        let rerun = match was {
            Some((c, a)) if c.lingering => a.as_ref(),
            Some(_) => newest_matched
                .as_ref()
                .map(|m| m.get(&b.dir).unwrap_or(&none)),
            None => None,
        };
        let Some(rerun) = rerun else {
            continue;
        };
        let mut keep: Vec<u32> = now.iter().chain(rerun).copied().collect();
        keep.sort_unstable();
        keep.dedup();
        if keep.len() as u64 * compact::SHRINK > b.in_files() {
            continue;
        }
        let files = format!("{}.c{}", b.dir, head.generation);
        let new = compact::rewrite(index, b, &keep, &files, bands)?;
        done.push((
            new.clone(),
            compact::CompactedBatch {
                batch: b.name.clone(),
                documents_before: b.in_files(),
                documents_after: keep.len() as u64,
                bytes_before: b.bytes,
                bytes_after: new.bytes,
            },
        ));
    }
    if done.is_empty() {
        return Ok((head.clone(), Vec::new()));
    }
    let swap = |list: &[BatchEntry]| -> Vec<BatchEntry> {
        (list.iter())
            .map(|e| match done.iter().find(|(n, _)| n.dir == e.dir) {
                Some((n, _)) => BatchEntry {
                    lingering: e.lingering,
                    ..n.clone()
                },
                None => e.clone(),
            })
            .collect()
    };
    let new_head = Head {
        generation: head.generation + 1,
        batches: swap(&head.batches),
        lingering: swap(&head.lingering),
        compared: swap(&head.compared),
        ..head.clone()
    };
    crate::hooks::crash_at("index-compact");
    index.write_bytes(
        HEAD,
        serde_json::to_vec_pretty(&new_head).unwrap_or_default(),
    )?;
    let kept = new_head.on_disk();
    for b in head.on_disk() {
        if kept.iter().all(|k| k.files() != b.files()) {
            index.child(b.files()).remove_all()?;
        }
    }
    Ok((new_head, done.into_iter().map(|(_, c)| c).collect()))
}

/// The head of the index at `location`, read under its lock (taken through `lock`, which can
/// wait), for the `index` commands; fails when there is no index there.
pub(crate) fn locked_head(
    location: &str,
    lock: impl Fn() -> Result<Lock>,
) -> Result<(OutputDir, Head, Lock)> {
    let index = OutputDir::parse(location);
    let held = lock()?;
    let head = read_head(&index)?.ok_or_else(|| Error::Index {
        index: location.to_string(),
        msg: "there is no index here (no index.json): check the --index location".into(),
    })?;
    Ok((index, head, held))
}

/// What `index remove` did.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Removed {
    pub index: String,
    pub batch: String,
    /// The documents its files held (after compaction, those kept): no later night is compared
    /// with them any more.
    pub documents_forgotten: u64,
    /// Lingering batches that lived only on the removed batch's renewals, expired with it.
    pub batches_expired: Vec<String>,
    pub bytes_freed: u64,
}

/// Removes batch `name` from the index at `location` (under its lock, taken through `lock`): a
/// new head without it in one write (lingering batches only it renewed expire too), then its
/// files. A crash after the head is written leaves files no head names, which cost only space.
pub(crate) fn remove(
    location: &str,
    name: &str,
    lock: impl Fn() -> Result<Lock>,
) -> Result<Removed> {
    let (index, head, _lock) = locked_head(location, lock)?;
    let err = |msg: String| Error::Index {
        index: location.to_string(),
        msg,
    };
    let live: Vec<&BatchEntry> = head.batches.iter().chain(&head.lingering).collect();
    let Some(gone) = live.iter().find(|b| b.name == name).copied().cloned() else {
        let names: Vec<&str> = live.iter().map(|b| b.name.as_str()).collect();
        return Err(err(format!(
            "it holds no batch '{name}' (its batches: {}); a batch that expired is gone already",
            names.join(", ")
        )));
    };
    let newest = head.batches.last().is_some_and(|b| b.dir == gone.dir);
    let batches: Vec<BatchEntry> = head
        .batches
        .iter()
        .filter(|b| b.dir != gone.dir)
        .cloned()
        .collect();
    let renewed = |b: &BatchEntry| batches.iter().any(|w| w.renews.contains_key(&b.dir));
    let (lingering, expired): (Vec<BatchEntry>, Vec<BatchEntry>) = head
        .lingering
        .iter()
        .filter(|b| b.dir != gone.dir)
        .cloned()
        .partition(|b| renewed(b));
    let new_head = Head {
        generation: head.generation + 1,
        batches,
        lingering,
        compared: head
            .compared
            .iter()
            .filter(|b| b.dir != gone.dir)
            .cloned()
            .collect(),
        rerun: head.rerun && !newest,
        ..head.clone()
    };
    let text = serde_json::to_vec_pretty(&new_head).unwrap_or_default();
    index.write_bytes(HEAD, text)?;
    let kept = new_head.on_disk();
    let mut freed = 0;
    for b in head.on_disk() {
        if kept.iter().all(|k| k.files() != b.files()) {
            index.child(b.files()).remove_all()?;
            freed += b.bytes;
        }
    }
    Ok(Removed {
        index: location.to_string(),
        batch: name.to_string(),
        documents_forgotten: gone.in_files(),
        batches_expired: expired.iter().map(|b| b.name.clone()).collect(),
        bytes_freed: freed,
    })
}

/// The window and the lingering batches after `added` joins the batches of `compare`: the newest
/// `window` batches, and the older ones that a batch in the window renewed documents of.
fn next_window(
    compare: &[BatchEntry],
    added: BatchEntry,
    window: usize,
) -> (Vec<BatchEntry>, Vec<BatchEntry>) {
    let (mut older, mut batches): (Vec<BatchEntry>, Vec<BatchEntry>) =
        compare.iter().cloned().partition(|b| b.lingering);
    batches.push(added);
    let expired = batches.len().saturating_sub(window.max(1));
    older.extend(batches.drain(..expired));
    let renewed = |b: &BatchEntry| batches.iter().any(|w| w.renews.contains_key(&b.dir));
    let lingering = older
        .into_iter()
        .filter(|b| renewed(b))
        .map(|b| BatchEntry {
            lingering: true,
            ..b
        })
        .collect();
    (batches, lingering)
}

/// The lock on an index, held while a run uses it; released when dropped (see
/// [`crate::io::lock`]).
#[derive(Debug)]
pub struct Lock(#[expect(dead_code, reason = "held, never read")] crate::io::lock::Lock);

impl Lock {
    /// Takes the lock of the index at `location`, or fails naming its holder.
    pub fn acquire(location: &str) -> Result<Lock> {
        crate::io::lock::Lock::acquire(location, LOCK, |holder| Error::IndexInUse {
            index: location.to_string(),
            holder,
        })
        .map(Lock)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, renews: &[&str]) -> BatchEntry {
        BatchEntry {
            name: name.into(),
            dir: format!("batches/{name}"),
            documents: 1,
            held: Some(1),
            bytes: 1,
            filter_bytes: 1,
            dropped: Some(0),
            lingering: false,
            renews: renews.iter().map(|r| (format!("batches/{r}"), 1)).collect(),
            compacted: None,
        }
    }

    fn names(v: &[BatchEntry]) -> Vec<&str> {
        v.iter().map(|b| b.name.as_str()).collect()
    }

    #[test]
    fn a_batch_leaving_the_window_lingers_while_the_window_renews_it() {
        // Window 2: n1 leaves when n3 joins; n2 renewed it, so it lingers.
        let (w, l) = next_window(
            &[entry("n1", &[]), entry("n2", &["n1"])],
            entry("n3", &[]),
            2,
        );
        assert_eq!((names(&w), names(&l)), (vec!["n2", "n3"], vec!["n1"]));
        assert!(l[0].lingering && !w[0].lingering);
        // n4 renews n1 again: n1 lingers on; n2 leaves, renewed by nobody, and goes.
        let compare: Vec<BatchEntry> = l.into_iter().chain(w).collect();
        let (w, l) = next_window(&compare, entry("n4", &["n1"]), 2);
        assert_eq!((names(&w), names(&l)), (vec!["n3", "n4"], vec!["n1"]));
        // n4 still renews n1 in the window n4, n5; in n5, n6 nothing does: n1 is forgotten.
        let compare: Vec<BatchEntry> = l.into_iter().chain(w).collect();
        let (w, l) = next_window(&compare, entry("n5", &[]), 2);
        assert_eq!((names(&w), names(&l)), (vec!["n4", "n5"], vec!["n1"]));
        let compare: Vec<BatchEntry> = l.into_iter().chain(w).collect();
        let (w, l) = next_window(&compare, entry("n6", &[]), 2);
        assert_eq!((names(&w), names(&l)), (vec!["n5", "n6"], vec![]));
    }

    #[test]
    fn an_older_head_is_named_with_what_to_do() {
        let old = br#"{"format": 1, "generation": 3, "settings": {}, "batches": [], "retired": [], "frequencies": null}"#;
        let err = parse_head(old, "INDEX", "INDEX/index.json")
            .unwrap_err()
            .to_string();
        assert!(err.contains("index format 1"), "{err}");
        assert!(err.contains("another --index"), "{err}");
        assert!(err.starts_with("index 'INDEX': "), "{err}");
        let damaged = parse_head(b"{}", "INDEX", "INDEX/index.json").unwrap_err();
        assert!(damaged
            .to_string()
            .contains("'INDEX/index.json' is damaged"));
    }
}
