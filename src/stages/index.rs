//! Stage `index` (`--index`): tonight's batch files for the retained index ([`crate::index::batch`])
//! in `INDEX/batches/NAME-HASH/`, written before the merge task names them in the index head.
//!
//! Tasks: one per band (or SimHash block table), which gathers the band's rows from every part
//! and writes its sorted key file and filter; and one more (the last, started first by a local
//! run) for the per-document files:
//! records (b-bit signatures or fingerprints), ids, exact-text hashes and the shingle keys of short
//! documents. Which documents keep their keys (sorted, deduplicated): MinHash with
//! `--index-keys all`, every one; with `short`, those with fewer than min-shingles / threshold
//! shingles (a short document's match must be at least that small, since Jaccard is at most the
//! ratio of the set sizes); SimHash, those with fewer than --simhash-min-features features.
//!
//! With `--cluster keeper` the batch holds tonight's kept documents only, numbered in input
//! order from 0 ([`Numbering`]): a later night is dropped only against kept content, and a
//! re-crawl dropped against the index adds nothing to it but renews what it was dropped against
//! (`renewed.bin`, [`crate::index::renew`]). With `components` it holds every document, numbered
//! as in the run. Either way it records where each held document came from (`origins.bin`,
//! [`crate::index::origins`]), for `explain` on a later night.

use crate::config::{ClusterRule, Method};
use crate::error::{Error, Result};
use crate::index::batch::{self, Written};
use crate::index::{copies, labels, origins, paragraphs, renew};
use crate::io::output::OutputDir;
use crate::io::{band_rows, store, work};
use crate::minhash::SigSource;
use crate::plan::Plan;
use crate::results::recorded_inputs;
use crate::simhash;
use crate::stages::keys::{keeps_keys, KeySource};
use crate::stages::lookup::read_exact;

/// Counters of an index task: bytes written and bytes a reader holds in memory.
pub(crate) type IndexStats = Written;

/// Documents read from the store at a time by the per-document task.
const WINDOW: usize = 8_192;

/// Which of tonight's documents the batch holds, and their numbers in it.
pub(crate) struct Numbering {
    /// The kept documents (`--cluster keeper`), ascending; None: every document, as numbered.
    kept: Option<Vec<u32>>,
}

impl Numbering {
    /// Reads the cluster task's keepers when the batch holds kept documents only.
    pub(crate) fn read(work: &OutputDir, plan: &Plan) -> Result<Numbering> {
        if plan.config.cluster != ClusterRule::Keeper {
            return Ok(Numbering { kept: None });
        }
        let mut kept = Vec::new();
        for p in 0..plan.parts.len() {
            let df = work.read_parquet(&work::part_file("cluster", p))?;
            let first = plan.part_range(p).start;
            let keeper = work::u64s(&df, "keeper", "index")?;
            // A document holding benchmark text (`--reference`) is its own keeper but not kept.
            let contaminated =
                crate::io::doc_columns::contaminated(work, p, plan.config.reference.is_some())?;
            let never = |j: usize| contaminated.get(j).copied().unwrap_or(false);
            kept.extend(
                (first..)
                    .zip(keeper)
                    .enumerate()
                    .filter(|&(j, (d, k))| d == k && !never(j))
                    .map(|(_, (d, _))| crate::plan::doc32(d)),
            );
        }
        Ok(Numbering { kept: Some(kept) })
    }

    /// The number of document `d` in the batch, if the batch holds it.
    pub(crate) fn number(&self, d: u32) -> Option<u32> {
        match &self.kept {
            None => Some(d),
            Some(kept) => kept.binary_search(&d).ok().map(|i| i as u32),
        }
    }

    /// The documents of `range` the batch holds, ascending.
    fn held(&self, range: std::ops::Range<u64>) -> Vec<u32> {
        let (lo, hi) = (range.start as u32, range.end as u32);
        match &self.kept {
            None => (lo..hi).collect(),
            Some(kept) => {
                let from = kept.partition_point(|&d| d < lo);
                let to = kept.partition_point(|&d| d < hi);
                kept[from..to].to_vec()
            }
        }
    }
}

/// The index task `t` (see the module documentation).
pub(crate) fn run(work: &OutputDir, plan: &Plan, t: usize) -> Result<IndexStats> {
    let ip = plan
        .index
        .as_ref()
        .ok_or_else(|| Error::Internal("index stage without --index".into()))?;
    let dir = ip.batch_dir();
    let numbering = Numbering::read(work, plan)?;
    let number = |d: u32| numbering.number(d);
    if t < plan.bands() {
        let mut rows = Vec::new();
        for r in 0..plan.bucket_ranges {
            for p in 0..plan.parts.len() {
                let first = plan.parts[p].0 as u32;
                band_rows::read(work, &work::band_rows_file(t, r, p), |key, local, fp| {
                    if let Some(x) = number(first + local) {
                        rows.push((key, x, fp));
                    }
                })?;
            }
        }
        let simhash = plan.config.method == Method::Simhash;
        return batch::write_band(&dir, t, rows, simhash);
    }
    let cfg = &plan.config;
    let simhash = cfg.method == Method::Simhash;
    // The records and the ids are streamed together in one pass over the store, a window of
    // documents at a time, so the task holds one window, never the batch.
    let windows: Vec<Vec<u32>> = (0..plan.parts.len())
        .flat_map(|p| {
            let docs = numbering.held(plan.part_range(p));
            docs.chunks(WINDOW).map(<[u32]>::to_vec).collect::<Vec<_>>()
        })
        .collect();
    let fetch = |docs: &[u32]| {
        let wanted = store::Wanted::ALL;
        store::fetch(
            work,
            &plan.parts,
            plan.store_layout(),
            crate::plan::docs64(docs),
            wanted,
        )
    };
    // The documents whose keys the batch keeps, found while their records are written.
    let mut short: Vec<u32> = Vec::new();
    let mut ids_written = Written::default();
    let mut w = batch::put(&dir, batch::DOCS, None, |out| {
        ids_written = batch::put(&dir, batch::IDS, None, |ids_out| {
            for docs in &windows {
                let f = fetch(docs)?;
                for &d in docs {
                    let rec = f.sig(d.into());
                    if keeps_keys(cfg, f.shingles(d.into()), rec) {
                        short.push(d);
                    }
                    let record = if simhash {
                        let fp = simhash::record_fingerprint(rec);
                        batch::simhash_record(
                            fp,
                            simhash::record_features(rec),
                            f.shingles(d.into()),
                        )
                    } else {
                        batch::minhash_record(rec, f.shingles(d.into()))
                    };
                    let x = u64::from(number(d).unwrap_or(d));
                    batch::push(out, &dir, batch::DOCS, x, &record)?;
                    let id = batch::id_record(f.id(d.into()));
                    batch::push(ids_out, &dir, batch::IDS, x, &id)?;
                }
            }
            Ok(())
        })?;
        Ok(())
    })?;
    w += ids_written;
    let mut keys = KeySource::new(work, plan, true);
    w += batch::put(&dir, batch::KEYS, None, |out| {
        for docs in short.chunks(WINDOW) {
            let mut sets = keys.sets(crate::plan::docs64(docs))?;
            sets.sort_dedup();
            for &d in docs {
                let keys = sets.get(d.into()).unwrap_or(&[]);
                let x = number(d).unwrap_or(d);
                let rec = batch::keys_record(x, keys);
                batch::push(out, &dir, batch::KEYS, x.into(), &rec)?;
            }
        }
        Ok(())
    })?;
    let mut exact = Vec::with_capacity(plan.documents as usize);
    for p in 0..plan.parts.len() {
        let r = plan.part_range(p);
        let hashes = read_exact(work, p, (r.end - r.start) as usize)?;
        let held = hashes.into_iter().zip(r.start as u32..r.end as u32);
        exact.extend(held.filter_map(|(h, d)| Some((h, number(d)?))));
    }
    w += batch::write_exact(&dir, exact)?;
    // Where each held document came from, for `explain` on a later night.
    let held = numbering.held(0..plan.documents);
    let origins = origins::encode(&recorded_inputs(plan), &held);
    w.bytes += origins.len() as u64;
    dir.write_bytes(origins::ORIGINS, origins)?;
    // `--across`: each held document's value, for the lookups of later nights.
    if plan.config.across.is_some() {
        let mut keys = Vec::with_capacity(held.len());
        for p in 0..plan.parts.len() {
            let r = plan.part_range(p);
            let part = crate::io::doc_columns::label_keys(work, p, "across", true)?;
            keys.extend(
                numbering
                    .held(r.clone())
                    .iter()
                    .map(|&d| part[(d as u64 - r.start) as usize]),
            );
        }
        let bytes = labels::encode(&keys);
        w.bytes += bytes.len() as u64;
        dir.write_bytes(labels::ACROSS, bytes)?;
    }
    // `--paragraphs`: the texts tonight's kept documents retain. Ranges are hash ranges in
    // order, so their files one after another are in hash order.
    if plan.config.paragraphs.is_some() {
        let mut held = Vec::new();
        for r in 0..plan.paragraph_ranges() {
            let retained = paragraphs::decode_retained(work, &work::paragraph_retained_file(r))?;
            held.extend(
                retained
                    .into_iter()
                    .filter_map(|(h, d)| Some((h, number(d)?))),
            );
        }
        w += paragraphs::write(&dir, &held)?;
    }
    // The cluster task's copies ([`crate::index::copies`]) and, under keeper, its renewals
    // ([`crate::index::renew`]), as they are.
    let mut files = vec![(work::COPIES, copies::COPIES)];
    if plan.config.cluster == ClusterRule::Keeper {
        files.push((work::RENEWED, renew::RENEWED));
        files.push((work::MATCHED, renew::MATCHED));
    }
    for (from, to) in files {
        let bytes = work.read(from)?.ok_or_else(|| Error::WorkFile {
            path: work.location(from),
            source: "missing".into(),
        })?;
        w.bytes += bytes.len() as u64;
        dir.write_bytes(to, bytes)?;
    }
    Ok(w)
}
