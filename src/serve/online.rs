//! The server's decisions: a text is a near-duplicate of the earliest retained document it is
//! verified against, the index's (its earliest batch, as a nightly run's lookup finds it) before
//! those added since the server started; `add` retains a text that is none, after its journal
//! line is durable. Adds are decided one after another under one lock (the index search before
//! it runs in parallel), so concurrent identical texts leave exactly one retained.

use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Instant;

use ahash::{AHashMap, AHashSet};

use super::features::{Features, Signer};
use super::journal::{Copy, Journal, UNSEALED};
use super::preload::Preload;
use super::view::View;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::io::output::OutputDir;

/// One text of a request.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Request {
    #[serde(default)]
    pub id: Option<String>,
    pub text: String,
    /// Its `--partition-by` value (null: none); None when the field is left out.
    #[serde(default, deserialize_with = "present")]
    pub partition: Option<serde_json::Value>,
}

/// A field that is there, null included.
fn present<'de, D>(d: D) -> std::result::Result<Option<serde_json::Value>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    serde::Deserialize::deserialize(d).map(Some)
}

impl Request {
    /// The text's `--partition-by` value for an index partitioned by `column` (None: not
    /// partitioned), read as a run reads a JSON Lines field; else what a 400 says.
    pub(crate) fn label(
        &self,
        column: Option<&str>,
    ) -> std::result::Result<Option<String>, String> {
        match (column, &self.partition) {
            (None, None | Some(serde_json::Value::Null)) => Ok(None),
            (None, Some(_)) => Err("the index is not partitioned (built without --partition-by): leave \"partition\" out".into()),
            (Some(c), None) => Err(format!("the index is partitioned by `{c}` (--partition-by): send \"partition\", the text's value (null for none)")),
            (Some(_), Some(v)) => crate::partition::json_label(v).ok_or_else(|| "\"partition\" must be a string, an integer, a boolean or null".into()),
        }
    }
}

/// The `--partition-by` keys of `labels` (empty for an index without partitions).
fn partition_keys(cfg: &Config, labels: &[Option<String>]) -> Vec<u64> {
    match cfg.partition_by {
        Some(_) => labels
            .iter()
            .map(|l| crate::partition::key(l.as_deref()))
            .collect(),
        None => Vec::new(),
    }
}

/// The answer for one text.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Answer {
    pub id: Option<String>,
    pub duplicate: bool,
    /// The retained document it duplicates, and its batch (`online` for one added since the
    /// server started).
    pub duplicate_of: Option<String>,
    pub batch: Option<String>,
    pub similarity: Option<f32>,
    /// `/add`: whether the text was retained.
    pub added: bool,
}

/// The documents retained since the server started: signatures, sets, band tables.
#[derive(Default)]
struct Store {
    ids: Vec<String>,
    /// Values per signature (MinHash: K; SimHash: a fingerprint record's 3).
    k: usize,
    sigs: Vec<u32>,
    shingles: Vec<u32>,
    sets: Vec<Vec<u32>>,
    removed: Vec<bool>,
    /// The fold file each document's add is in ([`UNSEALED`]: the adds file).
    fold: Vec<u64>,
    /// Each document's `--partition-by` key (0: none).
    partitions: Vec<u64>,
    /// Per band: band key -> documents, in order.
    tables: Vec<AHashMap<u64, Vec<u32>>>,
    exact: AHashMap<u128, u32>,
    by_id: AHashMap<String, u32>,
    /// The answer given to the first text of each normalised text dropped here: a later exact
    /// copy gets it too, as a run decides exact copies as one group at the first one's place.
    dropped: AHashMap<u128, (String, String, f32)>,
}

impl Store {
    fn sig(&self, d: u32) -> &[u32] {
        &self.sigs[d as usize * self.k..(d as usize + 1) * self.k]
    }

    /// The live document query `q` duplicates, as the keeper rule picks it: the most similar of
    /// those it is verified near ([`Signer::verified`]; ties to the earliest); an exact copy of
    /// the text is similarity 1.
    fn find(&self, cfg: &Config, signer: &Signer, f: &Features, q: usize) -> Option<(u32, f32)> {
        let live = |d: u32| !self.removed[d as usize];
        let copy = (f.exact[q] != 0)
            .then(|| self.exact.get(&f.exact[q]).copied())
            .flatten()
            .filter(|&d| live(d));
        let mut cands: Vec<u32> = copy.into_iter().collect();
        if let Some(keys) = signer.keys(cfg, f.doc(q), f.partition(q)) {
            let found = (keys.iter().zip(&self.tables)).filter_map(|(key, table)| table.get(key));
            cands.extend(found.flatten().copied().filter(|&d| live(d)));
        }
        cands.sort_unstable();
        cands.dedup();
        let verified = cands.into_iter().filter_map(|d| {
            if Some(d) == copy {
                return Some((d, 1.0));
            }
            let mine = (
                self.sig(d),
                self.shingles[d as usize],
                &self.sets[d as usize][..],
            );
            signer.verified(cfg, f.doc(q), mine).map(|sim| (d, sim))
        });
        // The most similar, the earliest among equals.
        let best = verified.fold(None, |best: Option<(u32, f64)>, (d, sim)| match best {
            Some((_, b)) if b >= sim => best,
            _ => Some((d, sim)),
        });
        best.map(|(d, sim)| (d, sim as f32))
    }

    fn insert(
        &mut self,
        signer: &Signer,
        cfg: &Config,
        id: String,
        f: &Features,
        q: usize,
        fold: u64,
    ) {
        let (sig, shingles, set) = f.doc(q);
        let one = (sig, shingles, set.to_vec(), f.exact[q], f.partition(q));
        self.push(signer, cfg, id, one, fold);
    }

    /// Retains a document: its signature, shingle count, set, exact-text hash (within its
    /// partition) and `--partition-by` key.
    fn push(
        &mut self,
        signer: &Signer,
        cfg: &Config,
        id: String,
        doc: (&[u32], u32, Vec<u32>, u128, u64),
        fold: u64,
    ) {
        let (sig, shingles, set, exact, partition) = doc;
        let d = self.ids.len() as u32;
        if self.tables.is_empty() {
            self.tables = vec![AHashMap::new(); signer.tables(cfg)];
            self.k = sig.len();
        }
        if let Some(keys) = signer.keys(cfg, (sig, shingles, &set), partition) {
            for (key, table) in keys.into_iter().zip(&mut self.tables) {
                table.entry(key).or_default().push(d);
            }
        }
        if exact != 0 {
            self.exact.entry(exact).or_insert(d);
        }
        self.sigs.extend_from_slice(sig);
        self.shingles.push(shingles);
        self.sets.push(set);
        self.removed.push(false);
        self.fold.push(fold);
        self.partitions.push(partition);
        self.by_id.insert(id.clone(), d);
        self.ids.push(id);
    }

    /// The adds file's documents are in fold file `n` now (a nightly run sealed it).
    fn sealed(&mut self, n: u64) {
        for f in self.fold.iter_mut().filter(|f| **f == UNSEALED) {
            *f = n;
        }
    }

    /// Without the documents a batch folded in (fold numbers up to `through`: the index answers
    /// for them now) and the removed ones; answers naming a document it lets go are forgotten.
    fn without_folded(&mut self, signer: &Signer, cfg: &Config, through: u64) {
        if self.fold.iter().all(|&f| f > through) {
            return;
        }
        let old = std::mem::take(self);
        let hashes: AHashMap<u32, u128> = old.exact.iter().map(|(&h, &d)| (d, h)).collect();
        for (d, id) in old.ids.iter().enumerate() {
            if old.fold[d] <= through || old.removed[d] {
                continue;
            }
            let exact = hashes.get(&(d as u32)).copied().unwrap_or(0);
            let sig = old.sig(d as u32);
            let doc = (
                sig,
                old.shingles[d],
                old.sets[d].clone(),
                exact,
                old.partitions[d],
            );
            self.push(signer, cfg, id.clone(), doc, old.fold[d]);
        }
        self.dropped = old.dropped;
        let by_id = &self.by_id;
        self.dropped
            .retain(|_, (_, keeper, _)| by_id.contains_key(keeper));
    }

    /// Removes the live document `id` (added here or indexed: answers naming it are forgotten);
    /// false when it holds none.
    fn remove(&mut self, id: &str) -> bool {
        // Copies dropped against it are decided again.
        self.dropped.retain(|_, (_, keeper, _)| keeper != id);
        let Some(&d) = self.by_id.get(id) else {
            return false;
        };
        let was = !self.removed[d as usize];
        self.removed[d as usize] = true;
        let exact = self.exact.iter().find(|(_, &x)| x == d).map(|(&h, _)| h);
        if let Some(h) = exact {
            self.exact.remove(&h);
        }
        was
    }

    fn live(&self) -> u64 {
        self.removed.iter().filter(|&&r| !r).count() as u64
    }
}

/// Latencies of the last [`KEPT_LATENCIES`] requests of each kind, and counters.
#[derive(Default)]
struct Stats {
    adds: u64,
    added: u64,
    checks: u64,
    latencies: AHashMap<&'static str, Vec<f64>>,
}

const KEPT_LATENCIES: usize = 10_000;

/// The batch name of documents added since the server started.
const ONLINE: &str = "online";

/// The server's state.
pub(crate) struct Online {
    index: OutputDir,
    view: RwLock<View>,
    signer: Signer,
    /// The documents retained since the start and the journal, under one lock: an add is decided,
    /// retained and made durable before the next one is decided.
    store: RwLock<(Store, Journal)>,
    /// Every removed id (index documents are found again in a new head).
    removed: Mutex<AHashSet<String>>,
    stats: Mutex<Stats>,
    started: Instant,
    /// The page-cache warming of the index's files (`serve`; not in-process use).
    preload: Option<Arc<Preload>>,
}

/// The journal of the index directory `dir` opened and replayed: the documents retained online
/// and not folded into a batch (fold numbers above `through`), the copies' answers, and the
/// removed ids (applied to the store).
fn replay(
    dir: &std::path::Path,
    through: u64,
    cfg: &Config,
    signer: &Signer,
) -> Result<(Store, Journal, AHashSet<String>)> {
    let (journal, replayed) = Journal::open(dir, through)?;
    let mut store = Store::default();
    let column = cfg.partition_by.as_deref();
    for chunk in replayed.adds.chunks(4096) {
        let texts: Vec<&str> = chunk.iter().map(|a| a.1.text.as_str()).collect();
        let labels: Vec<Option<String>> = match column {
            Some(c) => chunk.iter().map(|a| a.1.label(c)).collect(),
            None => Vec::new(),
        };
        let f = Features::of(&texts, partition_keys(cfg, &labels), cfg, signer);
        for (q, (fold, a)) in chunk.iter().enumerate() {
            store.insert(signer, cfg, a.id.clone(), &f, q, *fold);
        }
    }
    for c in replayed.copies {
        if let Ok(hash) = u128::from_str_radix(&c.hash, 16) {
            store.dropped.insert(hash, (c.batch, c.of, c.similarity));
        }
    }
    let removed: AHashSet<String> = replayed.removed.into_iter().collect();
    for id in &removed {
        store.remove(id);
    }
    Ok((store, journal, removed))
}

fn poisoned<T>(e: PoisonError<T>) -> Error {
    Error::Internal(format!(
        "a request panicked holding the server's state: {e}"
    ))
}

impl Online {
    /// Opens the index at `index` (a local directory) and replays its journal; with `preload`,
    /// the files lookups read at random are read into the page cache from [`Self::start_preload`]
    /// on, and each new batch's as it appears.
    pub(crate) fn open(index: OutputDir, preload: bool) -> Result<Online> {
        let dir = index
            .local_dir()
            .map(std::path::Path::to_path_buf)
            .ok_or_else(|| Error::Index {
                index: index.location(""),
                msg: "`serve` needs a local index directory (the journal is synced to its disk)"
                    .into(),
            })?;
        let mut view = View::open(&index)?;
        let cfg = view.plan.config.clone();
        let signer = Signer::of(&index, &view.plan, view.frequencies.as_deref())?;
        let (store, journal, removed) = replay(&dir, view.folded_through, &cfg, &signer)?;
        view.remove_ids(&removed)?;
        let preload = preload.then(|| Arc::new(Preload::default()));
        Ok(Online {
            index,
            view: RwLock::new(view),
            signer,
            store: RwLock::new((store, journal)),
            removed: Mutex::new(removed),
            stats: Mutex::new(Stats::default()),
            started: Instant::now(),
            preload,
        })
    }

    /// Reopens the index's head when a nightly run committed a new one, and lets go of the
    /// documents its batch folded in.
    fn refresh(&self) -> Result<()> {
        if !self.view.read().map_err(poisoned)?.stale(&self.index) {
            return Ok(());
        }
        let mut view = View::open(&self.index)?;
        view.remove_ids(&self.removed.lock().map_err(poisoned)?.clone())?;
        let mut slot = self.view.write().map_err(poisoned)?;
        let mut guard = self.store.write().map_err(poisoned)?;
        if view.folded_through < slot.folded_through {
            // `index remove` took away the batch that folded the newest adds: they are the
            // journal's again, and searched here again.
            let dir = self.index.local_dir().unwrap_or(std::path::Path::new("."));
            let cfg = &view.plan.config;
            let (store, journal, _) = replay(dir, view.folded_through, cfg, &self.signer)?;
            *guard = (store, journal);
        }
        let (store, journal) = &mut *guard;
        if let Some(n) = journal.sealed_since()? {
            store.sealed(n);
        }
        store.without_folded(&self.signer, &view.plan.config, view.folded_through);
        if let Some(p) = &self.preload {
            p.start(view.random_reads(), true);
        }
        *slot = view;
        Ok(())
    }

    /// Decides `docs` in order; with `add`, retains those that duplicate nothing retained.
    pub(crate) fn decide(&self, docs: &[Request], add: bool) -> Result<Vec<Answer>> {
        let start = Instant::now();
        self.refresh()?;
        let mut view = self.view.read().map_err(poisoned)?;
        let texts: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
        let column = view.plan.config.partition_by.clone();
        let labels = (docs.iter())
            .map(|d| d.label(column.as_deref()))
            .collect::<std::result::Result<Vec<_>, String>>()
            .map_err(Error::Config)?;
        let partitions = partition_keys(&view.plan.config, &labels);
        let f = Features::of(&texts, partitions, &view.plan.config, &self.signer);
        let indexed = match view.search(&f) {
            Ok(m) => m,
            // A nightly run committed meanwhile and deleted files of a batch that left its
            // window: once more over its new head (the settings never change).
            Err(e) => {
                drop(view);
                if !self.view.read().map_err(poisoned)?.stale(&self.index) {
                    return Err(e);
                }
                self.refresh()?;
                view = self.view.read().map_err(poisoned)?;
                view.search(&f)?
            }
        };
        let cfg = &view.plan.config;
        let answer = |q: usize, found: Option<(String, String, f32)>| Answer {
            id: docs[q].id.clone(),
            duplicate: found.is_some(),
            similarity: found.as_ref().map(|m| m.2),
            duplicate_of: found.as_ref().map(|m| m.1.clone()),
            batch: found.map(|m| m.0),
            added: false,
        };
        let online = |store: &Store, q: usize| {
            store
                .find(cfg, &self.signer, &f, q)
                .map(|(d, sim)| (ONLINE.to_string(), store.ids[d as usize].clone(), sim))
        };
        let mut out = Vec::with_capacity(docs.len());
        if add {
            let mut guard = self.store.write().map_err(poisoned)?;
            let (store, journal) = &mut *guard;
            if let Some(n) = journal.lock()? {
                store.sealed(n);
            }
            // The journal lock is released whatever happens (a nightly seal waits on it).
            let written = || -> Result<()> {
                for (q, m) in indexed.into_iter().enumerate() {
                    let copy = || store.dropped.get(&f.exact[q]).cloned();
                    let found = m.or_else(|| copy().or_else(|| online(store, q)));
                    let hash = f.exact[q];
                    // Online answers only: a copy of an indexed text finds its match in the index.
                    if let Some(d) = found.as_ref().filter(|d| hash != 0 && d.0 == ONLINE) {
                        if !store.dropped.contains_key(&hash) {
                            store.dropped.insert(hash, d.clone());
                            journal.copy(&Copy {
                                hash: format!("{hash:032x}"),
                                batch: d.0.clone(),
                                of: d.1.clone(),
                                similarity: d.2,
                            })?;
                        }
                    }
                    let mut a = answer(q, found);
                    if !a.duplicate {
                        let id = docs[q].id.clone().unwrap_or_default();
                        let label = column.as_deref().map(|c| (c, labels[q].as_deref()));
                        journal.add(&id, &docs[q].text, label)?;
                        store.insert(&self.signer, cfg, id, &f, q, UNSEALED);
                        a.added = true;
                    }
                    out.push(a);
                }
                journal.sync()
            };
            let written = written();
            journal.unlock();
            written?;
        } else {
            let guard = self.store.read().map_err(poisoned)?;
            let store = &guard.0;
            for (q, m) in indexed.into_iter().enumerate() {
                let copy = || store.dropped.get(&f.exact[q]).cloned();
                out.push(answer(q, m.or_else(|| copy().or_else(|| online(store, q)))));
            }
        }
        let mut stats = self.stats.lock().map_err(poisoned)?;
        let kind = if add { "add" } else { "check" };
        match add {
            true => {
                stats.adds += docs.len() as u64;
                stats.added += out.iter().filter(|a| a.added).count() as u64;
            }
            false => stats.checks += docs.len() as u64,
        }
        let l = stats.latencies.entry(kind).or_default();
        if l.len() == KEPT_LATENCIES {
            l.remove(0);
        }
        l.push(start.elapsed().as_secs_f64() * 1e3);
        Ok(out)
    }

    /// Removes the retained document `id` (added online or indexed) from every later match;
    /// false when no retained document has it.
    pub(crate) fn remove(&self, id: &str) -> Result<bool> {
        self.refresh()?;
        // The view first, then the store: the order `decide` takes them in.
        let mut view = self.view.write().map_err(poisoned)?;
        let mut guard = self.store.write().map_err(poisoned)?;
        let online = guard.0.remove(id);
        let one: AHashSet<String> = [id.to_string()].into_iter().collect();
        let indexed = view.remove_ids(&one)? > 0;
        if online || indexed {
            guard.1.remove(id)?;
            self.removed
                .lock()
                .map_err(poisoned)?
                .insert(id.to_string());
        }
        Ok(online || indexed)
    }

    /// Starts warming the page cache with the files lookups read (with `preload`; new batches
    /// are warmed as they appear).
    pub(crate) fn start_preload(&self) {
        if let Some(p) = &self.preload {
            let view = self.view.read().unwrap_or_else(PoisonError::into_inner);
            p.start(view.random_reads(), true);
        }
    }

    /// The index's `--partition-by` column (its settings never change).
    pub(crate) fn partition_column(&self) -> Option<String> {
        let view = self.view.read().unwrap_or_else(PoisonError::into_inner);
        view.plan.config.partition_by.clone()
    }

    /// `/stats`: documents retained, requests since the start, latency percentiles (ms).
    pub(crate) fn stats(&self) -> Result<serde_json::Value> {
        self.refresh()?;
        let view = self.view.read().map_err(poisoned)?;
        let online = self.store.read().map_err(poisoned)?.0.live();
        let stats = self.stats.lock().map_err(poisoned)?;
        let percentiles = |kind: &str| {
            let mut l = stats.latencies.get(kind).cloned().unwrap_or_default();
            l.sort_by(f64::total_cmp);
            let at = |p: f64| {
                l.get(((l.len() as f64 - 1.0) * p).round() as usize)
                    .copied()
            };
            serde_json::json!({ "p50": at(0.5), "p90": at(0.9), "p99": at(0.99), "max": l.last() })
        };
        Ok(serde_json::json!({
            "indexed_documents": view.documents(),
            "index_generation": view.generation,
            "batches": view.compare.iter().map(|b| b.name.clone()).collect::<Vec<_>>(),
            "online_documents": online,
            "adds": stats.adds,
            "added": stats.added,
            "checks": stats.checks,
            "uptime_seconds": self.started.elapsed().as_secs_f64(),
            "latency_ms": { "add": percentiles("add"), "check": percentiles("check") },
            "preload": self.preload.as_ref().map(|p| p.stats()),
        }))
    }
}
