//! Stage `signatures`: a part's rows -> what every later stage needs to know about its documents.
//!
//! Per document: a MinHash signature (`--method minhash`) or a 64-bit SimHash fingerprint
//! (`--method simhash`) and its id, written to the document store ([`crate::io::store`]); with
//! `--work-keys stored` its shingle keys ([`crate::io::keys`]; with `remade` the keys stage makes
//! the few that are needed later); plus one band row per band (MinHash: a hash of the band's signature
//! values; SimHash: one row per block table, keyed by the table's bits of the fingerprint)
//! into the file of that band and bucket range ([`crate::io::band_rows`]), its exact-text hash
//! (`exact/pP.bin`: 16 bytes per document, [`crate::text::shingle::exact_hash`]), plus the keep data
//! (text length, `--keep` column) and id hashes the cluster task reads (`docs/pP.parquet`).
//! With `--paragraphs`, each paragraph's (hash, document, span) by hash range
//! ([`crate::io::paragraph_rows`]), streamed a chunk at a time.
//!
//! Invariants:
//! - Rows are read and computed one chunk ([`crate::plan::DOCS_PER_CHUNK`]) at a time, with the
//!   next chunk read and the previous one appended to the store meanwhile, so the task holds
//!   three chunks of text plus ~700 bytes per document of its part, never the part's text.
//! - Null and empty texts (no shingle, or for SimHash no weighted feature) get no band rows: they
//!   can be no one's near-duplicate and stay singletons. Nor does a later exact copy of a text
//!   of the same part (the exact pre-pass settles it).
//! - MinHash: a raw copy (a text byte for byte an earlier one's in the part, with the same
//!   `--partition-by` and `--across` values: 128-bit hash of the bytes and the values) is not
//!   normalised, shingled or signed again: it takes its original's exact-text hash,
//!   and its store record (and key entry) names the original instead of repeating them. Every file
//!   is the same function of the documents as when copies were computed, except the store's
//!   records. That holds because a MinHash document has band rows exactly when it has an
//!   exact-text hash, which its copy then repeats; a SimHash document can have weighted features
//!   without a shingle, so SimHash computes every text.
//! - Everything is a function of the documents and the settings: how a part is chunked never
//!   changes what a file holds (only where the paragraph row file's blocks begin).
//!
//! The MinHash column kernel is [`column::signature_column`]: rayon splits the column into batches of
//! [`column::KEY_BATCH`] documents, each thread reuses its normalisation and shingle buffers and writes K
//! values per document into one flat row-major buffer, and (`--work-keys stored`) each document's
//! shingle keys come out beside the signatures, so exact verification later reads them instead
//! of shingling the text again. SimHash stores its fingerprint and feature count as a three-value "signature"
//! ([`simhash::to_record`]), and shingle keys for the short-document check.
//!
//! Files: this one the task (a chunk at a time: read, compute, absorb, write); [`kernel`] what
//! is computed per document by method; [`mod@column`] the column kernels; [`read`] the read pass;
//! [`mod@keys`] the key files of `--work-keys stored`; [`rows`] the hash rows streamed by range (written by a thread of their own, so the task
//! never waits on the disk); [`contamination`] the `--reference` columns.

mod column;
mod contamination;
mod kernel;
mod keys;
mod read;
mod rows;

pub use column::signatures_only;
pub(crate) use column::{signature_column, ShingleKeys};

use polars::prelude::Column;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::config::WorkKeys;
use crate::corpus::Corpus;
use crate::corpus::Slice;
use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::io::paragraph_rows;
use crate::io::work::{self, part_file, write_frame};
use crate::io::{band_rows, store};
use crate::minhash::Signatures;
use crate::partition;
use crate::plan::{At, Chunker, FileCount, Plan, DOCS_PER_CHUNK, DOCS_PER_CHUNK_SUBSTRINGS};
use crate::reference::{Hit, Reference};
use crate::simhash;
use crate::text::paragraphs::Paragraph;
use std::collections::BTreeMap;

use contamination::{contamination_columns, count_items};
use kernel::{Chunk, Kernel};
use keys::{append_keys, with_key_files};
use read::{chunk_label_keys, count_file, raw_copies, read_pass, without_copies, ReadPass};
pub(crate) use rows::bucket_range;
use rows::{flush_rows, with_rows};

/// Counters of a signatures task.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct SignatureStats {
    pub documents: u64,
    /// The documents and blank lines of the files the plan left to this task to count
    /// ([`Plan::settle`] numbers the documents from them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counted: Vec<FileCount>,
    pub text_bytes: u64,
    pub null_texts: u64,
    /// Non-null texts with no shingle (SimHash: no weighted feature).
    pub empty_texts: u64,
    /// `--reference`: documents holding a reference item, by item (position in the reference),
    /// ascending.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contaminated: Vec<crate::reference::ItemHits>,
    /// `--reference`: what each reference file holds (the same in every task).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference: Vec<crate::reference::ItemCounts>,
}

/// Fails when a shard of part `p` is not the one the plan counted (its size or Parquet footer
/// differs, or it is gone): the plan's row ranges would not fit it.
pub(crate) fn check_inputs(plan: &Plan, p: usize) -> Result<()> {
    for f in plan.files_of_part(p) {
        if f.fingerprint.is_empty() {
            continue;
        }
        crate::io::input::check_unchanged(&f.file, f.bytes, &f.fingerprint, |what| {
            Error::InputChanged {
                file: f.file.clone(),
                what,
            }
        })?;
    }
    Ok(())
}

/// What the signatures task gathers per document of its part, chunk by chunk, for the files it
/// writes at the end (band rows, exact-text hashes, `docs/pP.parquet`).
struct PartDocs {
    /// Band rows per (band, range) file: bucket keys, documents' positions in the part, and for
    /// SimHash the fingerprints.
    band_rows: Vec<(Vec<u64>, Vec<u32>, Vec<u64>)>,
    text_len: Vec<u32>,
    /// For the report: each document's script class, and its `--report-group` value.
    script: Vec<u32>,
    group: Vec<Option<String>>,
    id_hash: Vec<u64>,
    id_len: Vec<u32>,
    priority: Vec<Option<f64>>,
    /// Exact-text hashes of the part, and those seen so far: a later copy of a text gets no band
    /// rows (the cluster task joins it to the first copy, and any near-duplicate of it is one of
    /// the first copy too), so exact copies cost no candidate pair and no verification. Raw: of
    /// the text alone (what a raw copy takes from its original); `exact`: within the document's
    /// `--partition-by` value ([`partition::exact_key`]).
    raw_exact: Vec<u128>,
    exact: Vec<u8>,
    seen: ahash::AHashSet<u128>,
    partition_keys: Vec<u64>,
    across_keys: Vec<u64>,
    /// Whether each document has a shingle (SimHash: a weighted feature).
    indexed: Vec<bool>,
    /// `--reference`: the item each document holds, if any.
    hits: Vec<Option<Hit>>,
    /// `--paragraphs`: the current chunk's paragraphs, by hash range (written after each chunk),
    /// and each document's bytes of text in paragraphs too small to list.
    paragraphs: Vec<paragraph_rows::Rows>,
    paragraph_small: Vec<u32>,
    /// `--substrings`: the current chunk's windows, blocks of rows by hash range (written after
    /// each chunk).
    substrings: Vec<Vec<paragraph_rows::Rows>>,
}

/// A chunk as [`PartDocs::absorb`] takes it: its documents, their script classes, the kernel's
/// results, each raw copy's original (part position), the label keys.
struct ChunkDocs<'a> {
    corpus: &'a Corpus,
    scripts: Vec<u32>,
    chunk: &'a Chunk,
    copy_of: &'a [Option<u32>],
    pkeys: Vec<u64>,
    akeys: Vec<u64>,
    /// `--paragraphs`: each document's paragraphs, and its text in smaller ones.
    paragraphs: Vec<(Vec<Paragraph>, u32)>,
    /// `--substrings`: the windows, blocks of rows by hash range ([`read::substring_windows`]).
    windows: Vec<Vec<paragraph_rows::Rows>>,
}

impl PartDocs {
    fn new(count: u64, band_files: usize, plan: &Plan) -> PartDocs {
        let n = count as usize;
        PartDocs {
            band_rows: vec![Default::default(); band_files],
            text_len: Vec::with_capacity(n),
            script: Vec::with_capacity(n),
            group: Vec::new(),
            id_hash: Vec::with_capacity(n),
            id_len: Vec::with_capacity(n),
            priority: Vec::with_capacity(n),
            raw_exact: Vec::with_capacity(n),
            exact: Vec::with_capacity(16 * n),
            seen: ahash::AHashSet::new(),
            partition_keys: Vec::new(),
            across_keys: Vec::new(),
            indexed: Vec::with_capacity(n),
            hits: Vec::new(),
            paragraphs: (0..plan.paragraph_ranges())
                .map(|_| Default::default())
                .collect(),
            paragraph_small: Vec::new(),
            substrings: Vec::new(),
        }
    }

    /// Adds a chunk's documents: `at` is its first's position in the part (which the work files
    /// number documents by).
    fn absorb(
        &mut self,
        c: ChunkDocs,
        at: usize,
        kernel: &Kernel,
        plan: &Plan,
        with_hits: bool,
        stats: &mut SignatureStats,
    ) {
        let cfg = &plan.config;
        let (bands, ranges) = (plan.bands() + plan.sweep_bands(), plan.bucket_ranges);
        let (corpus, chunk, copy_of) = (c.corpus, c.chunk, c.copy_of);
        for d in 0..corpus.len() as u32 {
            let t = corpus.text(d);
            self.text_len.push(t.map_or(0, |t| t.len() as u32));
            let has = match copy_of[d as usize] {
                Some(o) => self.indexed[o as usize],
                None => kernel.indexed(&chunk.sigs, d as usize),
            };
            self.indexed.push(has);
            if with_hits {
                let hit = match copy_of[d as usize] {
                    Some(o) => self.hits[o as usize],
                    None => chunk.keys.hit(d as usize),
                };
                self.hits.push(hit);
            }
            match t {
                None => stats.null_texts += 1,
                Some(t) => {
                    stats.text_bytes += t.len() as u64;
                    stats.empty_texts += u64::from(!has);
                }
            }
        }
        self.script.extend(c.scripts);
        for shard in &corpus.shards {
            match &shard.priority {
                Some(pr) => self.priority.extend(pr.iter()),
                None => self.priority.extend(std::iter::repeat_n(None, shard.len())),
            }
            if let Some(g) = &shard.group {
                self.group.extend(g.iter().map(|v| v.map(str::to_string)));
            }
        }
        let simhash = matches!(kernel, Kernel::Simhash { .. });
        for (d, ks) in chunk.band_keys.chunks(bands.max(1)).enumerate() {
            let raw = match copy_of[d] {
                // The original's, computed earlier (it precedes its copies in the part).
                Some(o) => self.raw_exact[o as usize],
                None => chunk.keys.exact(d),
            };
            self.raw_exact.push(raw);
            let (pk, ak) = (c.pkeys[d], c.akeys[d]);
            let h = partition::exact_key(raw, pk);
            self.exact.extend_from_slice(&h.to_le_bytes());
            let repeat = h != 0 && !self.seen.insert(partition::copy_group(h, ak));
            // A raw copy is also a repeat of its original's exact hash, or has none.
            if copy_of[d].is_some() || repeat || !self.indexed[at + d] {
                continue;
            }
            let fp = simhash.then(|| simhash::record_fingerprint(chunk.sigs.get(d as u32)));
            for (b, &key) in ks.iter().enumerate() {
                let (bucket, doc, value) =
                    &mut self.band_rows[b * ranges + bucket_range(key, ranges)];
                bucket.push(partition::band_key(key, pk));
                doc.push((at + d) as u32);
                value.extend(fp);
            }
        }
        if cfg.partition_by.is_some() {
            self.partition_keys.extend(c.pkeys);
        }
        if cfg.across.is_some() {
            self.across_keys.extend(c.akeys);
        }
        let ids = chunk.ids.iter();
        self.id_hash.extend(
            ids.clone()
                .map(|i| xxhash_rust::xxh3::xxh3_64(i.as_bytes())),
        );
        self.id_len.extend(ids.map(|i| i.len() as u32));
        let ranges = self.paragraphs.len();
        for (d, (paras, small)) in c.paragraphs.iter().enumerate() {
            self.paragraph_small.push(*small);
            for p in paras {
                // Parquet stores a text's bytes with a 32-bit length: its offsets fit.
                self.paragraphs[bucket_range(p.hash, ranges)].push(paragraph_rows::Row {
                    hash: p.hash,
                    doc: (at + d) as u32,
                    start: p.start as u32,
                    len: (p.end - p.start) as u32,
                });
            }
        }
        self.substrings = c.windows;
        for rows in self.substrings.iter_mut().flatten() {
            rows.iter_mut().for_each(|r| r.doc += at as u32);
        }
    }

    /// Writes the part's band rows, exact-text hashes and `docs/pP.parquet`.
    fn write(
        self,
        work: &OutputDir,
        plan: &Plan,
        p: usize,
        reference: Option<&Reference>,
        stats: &mut SignatureStats,
    ) -> Result<()> {
        let cfg = &plan.config;
        let ranges = plan.bucket_ranges;
        self.band_rows
            .into_par_iter()
            .enumerate()
            .try_for_each(|(t, (bucket, doc, value))| {
                let name = work::band_rows_file(t / ranges, t % ranges, p);
                work.write_bytes(&name, band_rows::encode(&bucket, &doc, &value))
            })?;
        work.write_bytes(&work::exact_file(p), self.exact)?;
        // Keep data for the cluster task, the id hashes for the duplicate-id check, the id
        // lengths with which the manifest task reads the part's ids in one piece (checked on the
        // hashes, [`store::part_ids`]), and what it tallies for the report.
        let mut columns = vec![
            Column::new("text_len".into(), self.text_len),
            Column::new("id_hash".into(), self.id_hash),
            Column::new("id_len".into(), self.id_len),
            Column::new("priority".into(), self.priority),
            Column::new("script".into(), self.script),
        ];
        if cfg.report_group.is_some() {
            columns.push(Column::new("group".into(), self.group));
        }
        if cfg.paragraphs.is_some() {
            columns.push(Column::new("paragraph_small".into(), self.paragraph_small));
        }
        if cfg.partition_by.is_some() {
            columns.push(Column::new("partition".into(), self.partition_keys));
        }
        if cfg.across.is_some() {
            columns.push(Column::new("across".into(), self.across_keys));
        }
        if let Some(r) = reference {
            columns.extend(contamination_columns(r, &self.hits));
            stats.contaminated = count_items(r, &self.hits);
            stats.reference = r.counts.clone();
        }
        write_frame(work, &part_file("docs", p), "signatures", columns)
    }
}

/// The signatures task of part `p` (see the module documentation).
pub(crate) fn run(work: &OutputDir, plan: &Plan, p: usize) -> Result<SignatureStats> {
    let cfg = &plan.config;
    let (first, count) = plan.parts[p];
    check_inputs(plan, p)?;
    let kernel = Kernel::new(work, plan, p)?;
    let simhash = matches!(kernel, Kernel::Simhash { .. });
    let per_chunk = match cfg.substrings {
        Some(_) => DOCS_PER_CHUNK_SUBSTRINGS,
        None => DOCS_PER_CHUNK,
    };
    let chunker = Chunker::new(plan, p, crate::hooks::chunk_rows(per_chunk));
    // A chunk is read with its raw texts' hashes for MinHash and its script classes (on the
    // reading thread, beside the previous chunk's signatures); SimHash finds no raw copies (see
    // the module documentation).
    let load = |chunk: Option<(At, Vec<Slice>)>| {
        chunk.map(|(at, c)| {
            Corpus::load_slices(&c, cfg, |_| {}).map(|corpus| {
                let pass = read_pass(&corpus, !simhash, cfg, plan.substring_ranges());
                (at, corpus, pass)
            })
        })
    };
    // `--reference`: the table is built (with --index, read from the index directory's cache)
    // while the first chunk is read.
    let load_reference = || match &cfg.reference {
        Some(rc) => {
            let cache = plan.index.as_ref().map(|ip| ip.dir());
            let tokenizer = cfg.effective_tokenizer();
            // The first part's task writes the cache.
            Reference::load(&plan.reference, rc, tokenizer, cache.as_ref(), p == 0).map(Some)
        }
        None => Ok(None),
    };
    // The second chunk too, when there is a table to build: reading it fills a thread the
    // build leaves idle, and the first chunk's computing then has both (where the plan knows the
    // second chunk before the first is read).
    let (reference, (first_chunk, mut second_chunk)) = rayon::join(load_reference, || {
        let first = load(chunker.first());
        let second = (cfg.reference.is_some() && plan.counted())
            .then(|| load(chunker.after(At::Planned(0), 0)));
        (first, second)
    });
    let reference = reference?;
    let mut first_chunk = Some(first_chunk);
    let table = reference.as_deref().map(|r| &r.table);
    // The run's bands, then the sweep's (`--sweep`).
    let bands = plan.bands() + plan.sweep_bands();
    let mut stats = SignatureStats {
        documents: count,
        ..Default::default()
    };
    let mut docs = PartDocs::new(count, bands * plan.bucket_ranges, plan);
    let mut read = 0u64;
    // A plan with files its tasks count: what this task counts of them.
    let counted = plan.counted();
    let mut files_counted: BTreeMap<usize, FileCount> = BTreeMap::new();
    let changed = |read: u64| Error::RowsChanged {
        part: p,
        planned: count,
        read,
    };
    let sig_file = work::store_files(p)[0].clone();
    let store_err = |e: std::io::Error| Error::Output {
        path: work.location(&sig_file),
        source: e.into(),
    };
    // Raw copies (a text byte for byte an earlier one's in the part) are not computed again:
    // they take their original's results, and the store records them as copies.
    let mut first_seen: ahash::AHashMap<u128, u32> = ahash::AHashMap::new();
    let paragraph_files = work::paragraph_rows_files(p);
    let substring_files = work::substring_rows_files(p);
    let (paragraph_ranges, substring_ranges) = (plan.paragraph_ranges(), plan.substring_ranges());
    with_rows(work, &paragraph_files, paragraph_ranges, |paragraph_rows| {
        with_rows(work, &substring_files, substring_ranges, |substring_rows| {
            with_key_files(work, p, cfg.work_keys != WorkKeys::Remade, |key_writer| {
                store::write_part(work, p, |files| {
                    let layout = store::Layout {
                        k: kernel.k(),
                        ..plan.store_layout()
                    };
                    let store = store::Writer::new(files, layout, counted.then_some(count))
                        .map_err(store_err)?;
                    // Three chunks in flight: the next one is read while this one is computed, and the
                    // previous one is appended to the store by its own thread.
                    std::thread::scope(|scope| {
                        type Stored = (u64, Signatures, ShingleKeys, Vec<String>, Vec<Option<u32>>);
                        let (tx, rx) = std::sync::mpsc::sync_channel::<Stored>(0);
                        let writer = scope.spawn(move || {
                            let (mut store, mut key_writer) = (store, key_writer);
                            for (base, sigs, keys, ids, copies) in rx {
                                store.append(&sigs, |i| &ids[i], |i| copies[i])?;
                                if let Some(w) = key_writer.as_deref_mut() {
                                    append_keys(w, base, &keys, &copies)?;
                                }
                            }
                            store.finish()
                        });
                        // The hash rows too, so the main thread does not wait on the disk.
                        type Rows = (Vec<paragraph_rows::Rows>, Vec<Vec<paragraph_rows::Rows>>);
                        let (rows_tx, rows_rx) = std::sync::mpsc::sync_channel::<Rows>(1);
                        let (paragraph_files, substring_files) =
                            (&paragraph_files, &substring_files);
                        let rows_writer = scope.spawn(move || {
                            let (mut paragraph_rows, mut substring_rows) =
                                (paragraph_rows, substring_rows);
                            for (mut paragraphs, windows) in rows_rx {
                                flush_rows(
                                    work,
                                    paragraph_rows.as_deref_mut(),
                                    &mut paragraphs,
                                    paragraph_files,
                                )?;
                                for mut block in windows {
                                    flush_rows(
                                        work,
                                        substring_rows.as_deref_mut(),
                                        &mut block,
                                        substring_files,
                                    )?;
                                }
                            }
                            Ok::<_, Error>(())
                        });
                        let mut next = first_chunk.take().unwrap_or_else(|| load(chunker.first()));
                        while let Some(loaded) = next.take() {
                            let (
                                at_chunk,
                                corpus,
                                ReadPass {
                                    hashes,
                                    scripts,
                                    paragraphs,
                                    windows,
                                },
                            ) = loaded?;
                            let n = corpus.len();
                            // Work files number the part's documents from 0 (a task need not
                            // know how many the parts before its own hold); SimHash's sample is
                            // numbered in the whole input.
                            let at = read as usize;
                            let pkeys = chunk_label_keys(&corpus, |s| s.partition.as_ref());
                            let akeys = chunk_label_keys(&corpus, |s| s.across.as_ref());
                            // A raw copy is one of a text and its labels: a copy with other labels meets
                            // other documents, so it gets band rows of its own.
                            let hashes: Vec<Option<u128>> = (hashes.into_iter().enumerate())
                                .map(|(d, h)| {
                                    h.map(|h| {
                                        partition::copy_group(
                                            partition::exact_key(h, pkeys[d]),
                                            akeys[d],
                                        )
                                    })
                                })
                                .collect();
                            let copy_of = raw_copies(&hashes, at as u32, &mut first_seen);
                            read += n as u64;
                            if read > count && counted {
                                return Err(changed(read));
                            }
                            count_file(&mut files_counted, plan, (at_chunk, n as u64), &corpus);
                            let texts = without_copies(&corpus, &copy_of);
                            let compute = || {
                                kernel.compute(
                                    &corpus,
                                    &texts,
                                    first + at as u64,
                                    bands,
                                    cfg,
                                    table,
                                )
                            };
                            let after = chunker.after(at_chunk, n as u64);
                            let (chunk, following) = match second_chunk.take() {
                                Some(second) => (compute(), second),
                                None => rayon::join(compute, || load(after)),
                            };
                            next = following;
                            let c = ChunkDocs {
                                corpus: &corpus,
                                scripts,
                                chunk: &chunk,
                                copy_of: &copy_of,
                                pkeys,
                                akeys,
                                paragraphs,
                                windows,
                            };
                            docs.absorb(c, at, &kernel, plan, table.is_some(), &mut stats);
                            let fresh = (0..docs.paragraphs.len()).map(|_| Default::default());
                            let rows = (
                                std::mem::replace(&mut docs.paragraphs, fresh.collect()),
                                std::mem::take(&mut docs.substrings),
                            );
                            if rows_tx.send(rows).is_err() {
                                break; // the rows writer stopped on an error, reported below
                            }
                            drop(corpus);
                            crate::progress::advance(n as u64);
                            if tx
                                .send((at as u64, chunk.sigs, chunk.keys, chunk.ids, copy_of))
                                .is_err()
                            {
                                break; // the writer stopped on an error, reported below
                            }
                        }
                        // The writer's error (a full disk, say) comes first: a short read after it is its
                        // consequence, not a changed input.
                        drop((tx, rows_tx));
                        let written = writer.join().map_err(|_| {
                            Error::Panicked(format!("part {p}: the store writer panicked"))
                        })?;
                        written.map_err(store_err)?;
                        rows_writer.join().map_err(|_| {
                            Error::Panicked(format!("part {p}: the hash rows writer panicked"))
                        })??;
                        if read != count && counted {
                            return Err(changed(read));
                        }
                        Ok(())
                    })
                })
            })
        })
    })?;
    docs.write(work, plan, p, reference.as_deref(), &mut stats)?;
    stats.documents = read;
    stats.counted = files_counted.into_values().collect();
    if let Some(f) = stats.counted.iter().find(|c| c.blank_lines == u64::MAX) {
        return Err(Error::Internal(format!(
            "{}: read without reaching its end",
            plan.files[f.file].file
        )));
    }
    Ok(stats)
}
