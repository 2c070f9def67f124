//! Stage `index` (`--index`): tonight's batch files for the retained index ([`crate::index::batch`])
//! in `INDEX/batches/NAME-HASH/`, written before the merge task names them in the index head.
//!
//! Tasks: one per band (or SimHash block table), which gathers the band's rows from every part
//! and writes its sorted key file and filter; and one more (the last) for the per-document files:
//! records (b-bit signatures or fingerprints), ids, exact-text hashes and the shingle keys of short
//! documents. Which documents keep their keys (sorted, deduplicated): MinHash with
//! `--index-keys all`, every one; with `short`, those with fewer than min-shingles / threshold
//! shingles (a short document's match must be at least that small, since Jaccard is at most the
//! ratio of the set sizes); SimHash, those with fewer than --simhash-min-features features.

use crate::config::{IndexKeys, Method};
use crate::error::{Error, Result};
use crate::index::batch::{self, DocRecord, DocsWriter, Written};
use crate::io::output::OutputDir;
use crate::io::{band_rows, store, work};
use crate::minhash::SigSource;
use crate::plan::Plan;
use crate::simhash;
use crate::stages::lookup::read_exact;
use crate::text::shingle::ShingleSets;

/// Counters of an index task: bytes written and bytes a reader holds in memory.
pub type IndexStats = Written;

/// Documents whose shingle keys are read from the store at a time.
const KEY_WINDOW: usize = 8_192;

/// The index task `t` (see the module documentation).
pub fn run(work: &OutputDir, plan: &Plan, t: usize) -> Result<IndexStats> {
    let ip = plan
        .index
        .as_ref()
        .ok_or_else(|| Error::Task("index stage without --index".into()))?;
    let dir = ip.batch_dir();
    if t < plan.bands() {
        let mut rows = Vec::new();
        for r in 0..plan.bucket_ranges {
            for p in 0..plan.parts.len() {
                band_rows::read(work, &work::band_rows_file(t, r, p), |key, doc, _| {
                    rows.push((key, doc));
                })?;
            }
        }
        return batch::write_band(&dir, t, rows);
    }
    let cfg = &plan.config;
    let simhash = cfg.method == Method::Simhash;
    let keeps_keys = |shingles: u32, rec: &[u32]| -> bool {
        if simhash {
            cfg.simhash_min_features > 0
                && (simhash::record_features(rec) as usize) < cfg.simhash_min_features
        } else {
            cfg.index_keys == IndexKeys::All
                || f64::from(shingles) < cfg.min_shingles as f64 / cfg.threshold
        }
    };
    let mut w = DocsWriter::default();
    for p in 0..plan.parts.len() {
        let r = plan.part_range(p);
        let docs: Vec<u32> = (r.start as u32..r.end as u32).collect();
        let ids = store::Wanted {
            ids: true,
            keys: false,
        };
        let sigs = store::fetch(work, &plan.parts, plan.store_k(), docs.clone(), ids)?;
        let exact = read_exact(work, p, docs.len())?;
        let short: Vec<u32> = docs
            .iter()
            .copied()
            .filter(|&d| sigs.shingles(d) > 0 && keeps_keys(sigs.shingles(d), sigs.sig(d)))
            .collect();
        let keys = store::Wanted {
            ids: false,
            keys: true,
        };
        // Keys a window of documents at a time (all of a part's keys would be ~3 KB per document).
        let mut sets = ShingleSets::default();
        let mut next_short = 0;
        for (i, &d) in docs.iter().enumerate() {
            if i.is_multiple_of(KEY_WINDOW) {
                let end = short.partition_point(|&x| x < d + KEY_WINDOW as u32);
                let want = short[next_short..end].to_vec();
                next_short = end;
                sets = store::fetch(work, &plan.parts, plan.store_k(), want, keys)?.into_sets();
                sets.sort_dedup();
            }
            let rec = sigs.sig(d);
            let record = if simhash {
                let fp = simhash::record_fingerprint(rec);
                batch::simhash_record(fp, simhash::record_features(rec), sigs.shingles(d))
            } else {
                batch::minhash_record(rec, sigs.shingles(d))
            };
            w.push(DocRecord {
                record,
                id: sigs.id(d),
                exact: exact[i],
                keys: sets.get(d),
            });
        }
    }
    w.finish(&dir)
}
