//! Stage `signatures`: a part's rows -> what every later stage needs to know about its documents.
//!
//! Per document: a MinHash signature (`--method minhash`) or a 64-bit SimHash fingerprint
//! (`--method simhash`), its shingle keys, its id; written to the document store
//! ([`crate::io::store`]), plus one band row per band (MinHash: a hash of the band's signature
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
//!   and its store record names the original instead of repeating signature and keys. Every file
//!   is the same function of the documents as when copies were computed, except the store's
//!   records. That holds because a MinHash document has band rows exactly when it has an
//!   exact-text hash, which its copy then repeats; a SimHash document can have weighted features
//!   without a shingle, so SimHash computes every text.
//! - Everything is a function of the documents and the settings: how a part is chunked never
//!   changes what a file holds (only where the paragraph row file's blocks begin).
//!
//! The MinHash column kernel is [`signature_column`]: rayon splits the column into batches of
//! [`column::KEY_BATCH`] documents, each thread reuses its normalisation and shingle buffers and writes K
//! values per document into one flat row-major buffer, and each document's shingle keys come out
//! beside the signatures, so exact verification later reads them instead of shingling the text
//! again. SimHash stores its fingerprint and feature count as a three-value "signature"
//! ([`simhash::to_record`]), and shingle keys for the short-document check.

mod column;

pub use column::signatures_only;
pub(crate) use column::{exact_column, signature_column, ShingleKeys};

use polars::prelude::{BooleanChunked, Column, NewChunkedArray, PlSmallStr, StringChunked};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::config::{Config, Method};
use crate::corpus::Corpus;
use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::io::paragraph_rows;
use crate::io::work::{self, part_file, write_frame};
use crate::io::{band_rows, store};
use crate::minhash::{Permutations, Signatures};
use crate::partition;
use crate::plan::{Plan, DOCS_PER_CHUNK};
use crate::reference::{Hit, Reference, Table};
use crate::simhash::{self, BlockIndex, DocFrequency, FeatureParams, Features};
use crate::stages::{frequencies, sample};
use crate::text::paragraphs::{self, Paragraph};
use crate::text::script::classify;
use crate::text::substrings;

/// Counters of a signatures task.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct SignatureStats {
    pub documents: u64,
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

/// What a task computes per document, by method.
enum Kernel {
    Minhash {
        perms: Permutations,
        rows: usize,
    },
    Simhash {
        index: BlockIndex,
        params: FeatureParams,
        df: Option<DocFrequency>,
        /// Features of the part's sampled documents (global index, features), ascending.
        sampled: Vec<(u64, Features)>,
        /// Whether short documents are re-checked on their shingle sets (keys are stored).
        keys: bool,
    },
}

/// One chunk's results: signatures (SimHash: fingerprints as two values, feature counts),
/// shingle keys, `bands` band keys per document, ids.
struct Chunk {
    sigs: Signatures,
    keys: ShingleKeys,
    band_keys: Vec<u64>,
    ids: Vec<String>,
}

impl Kernel {
    fn new(work: &OutputDir, plan: &Plan, p: usize) -> Result<Kernel> {
        let cfg = &plan.config;
        Ok(match cfg.method {
            Method::Minhash => Kernel::Minhash {
                perms: Permutations::of(cfg),
                rows: cfg.rows,
            },
            Method::Simhash => {
                let indexed = plan
                    .index
                    .as_ref()
                    .and_then(|ip| Some((ip.dir(), ip.frequencies.clone()?)));
                let (df, sampled) = if let Some((index, name)) = indexed {
                    (Some(frequencies::read_index(&index, &name)?), Vec::new())
                } else if plan.samples_features() {
                    (Some(frequencies::read(work)?), sample::read(work, p)?)
                } else {
                    (None, Vec::new())
                };
                Kernel::Simhash {
                    index: plan.block_index(),
                    params: sample::params(cfg),
                    df,
                    sampled,
                    keys: cfg.simhash_min_features > 0,
                }
            }
        })
    }

    /// Stored values per document.
    fn k(&self) -> usize {
        match self {
            Kernel::Minhash { perms, .. } => perms.len(),
            Kernel::Simhash { .. } => 3,
        }
    }

    /// Whether document `d` of a chunk has band rows: a shingle (MinHash) or a weighted feature
    /// (SimHash); the others are null or empty and stay singletons.
    fn indexed(&self, sigs: &Signatures, d: usize) -> bool {
        match self {
            Kernel::Minhash { .. } => sigs.shingles[d] > 0,
            Kernel::Simhash { .. } => simhash::record_features(sigs.get(d as u32)) > 0,
        }
    }

    /// The chunk's results for its text columns `texts` (one per shard of `corpus`: the shards'
    /// own, or with raw copies made null, [`without_copies`]); `first` is the global index of its
    /// first document.
    fn compute(
        &self,
        corpus: &Corpus,
        texts: &[StringChunked],
        first: u64,
        bands: usize,
        cfg: &Config,
        reference: Option<&Table>,
    ) -> Chunk {
        let tokenizer = cfg.effective_tokenizer();
        let n = corpus.len();
        let mut sigs = Signatures {
            k: self.k(),
            ..Signatures::default()
        };
        let mut keys = ShingleKeys::default();
        for (s, text) in texts.iter().enumerate() {
            let (sg, kk) = match self {
                Kernel::Minhash { perms, .. } => {
                    signature_column(text, Some(perms), tokenizer, cfg.ngram, reference)
                }
                Kernel::Simhash {
                    params,
                    df,
                    sampled,
                    keys: with_keys,
                    ..
                } => {
                    let at = first + corpus.start(s) as u64;
                    let of = |i: usize| {
                        let d = at + i as u64;
                        sampled
                            .binary_search_by_key(&d, |(x, _)| *x)
                            .ok()
                            .map(|j| sampled[j].1.as_slice())
                    };
                    let fps = simhash::fingerprint_column(text, of, *params, df.as_ref());
                    let (counts, keys) = if *with_keys {
                        let (counts, keys) =
                            signature_column(text, None, tokenizer, cfg.ngram, reference);
                        (counts.shingles, keys)
                    } else {
                        let keys = exact_column(text, tokenizer, cfg.ngram, reference);
                        (vec![0; text.len()], keys)
                    };
                    let values = fps.values.iter().zip(&fps.features);
                    let sg = Signatures {
                        k: 3,
                        values: values
                            .flat_map(|(&f, &n)| simhash::to_record(f, n))
                            .collect(),
                        shingles: counts,
                    };
                    (sg, keys)
                }
            };
            sigs.extend(sg);
            keys.extend(kk);
        }
        let mut band_keys = vec![0u64; n * bands];
        band_keys
            .par_chunks_mut(bands.max(1))
            .enumerate()
            .with_min_len(64)
            .for_each(|(d, out)| match self {
                Kernel::Minhash { rows, .. } => {
                    crate::lsh::band_keys(sigs.get(d as u32), *rows, out)
                }
                Kernel::Simhash { index, .. } => {
                    index.bucket_keys(simhash::record_fingerprint(sigs.get(d as u32)), out)
                }
            });
        let ids = (0..n as u32)
            .into_par_iter()
            .map(|d| corpus.id(d))
            .collect();
        Chunk {
            sigs,
            keys,
            band_keys,
            ids,
        }
    }
}

/// Raw copies: each document of `texts` whose text is byte for byte an earlier one's in the part
/// gets that first occurrence's position in the part (`first_seen`: 128-bit hash of the text ->
/// position, filled as documents go by; `at`: the part position of `texts`' first document).
/// Null texts are nobody's copy.
fn raw_copies(
    hashes: &[Option<u128>],
    at: u32,
    first_seen: &mut ahash::AHashMap<u128, u32>,
) -> Vec<Option<u32>> {
    let mut position = at;
    hashes
        .iter()
        .map(|h| {
            let copy = h.and_then(|h| match first_seen.entry(h) {
                std::collections::hash_map::Entry::Occupied(o) => Some(*o.get()),
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(position);
                    None
                }
            });
            position += 1;
            copy
        })
        .collect()
}

/// What is computed per document as a chunk is read, while its text is in cache: the 128-bit
/// hash (xxh3) of its raw text for [`raw_copies`] (when `hash`; None for a null text), its
/// script class code for the report, with `--paragraphs` its paragraphs (raw copies too:
/// with `--across` a copy may be kept) and its text in smaller ones, and with `--substrings` its
/// windows.
struct ReadPass {
    hashes: Vec<Option<u128>>,
    scripts: Vec<u32>,
    paragraphs: Vec<(Vec<Paragraph>, u32)>,
    windows: Vec<Vec<paragraph_rows::Rows>>,
}

fn read_pass(corpus: &Corpus, hash: bool, cfg: &Config, substring_ranges: usize) -> ReadPass {
    let paragraphs = cfg.paragraphs.as_ref();
    let (hashes, (scripts, mut paras)): (_, (_, Vec<_>)) = (0..corpus.len() as u32)
        .into_par_iter()
        .with_min_len(64)
        .map_init(paragraphs::Scratch::default, |scratch, d| {
            let t = corpus.text(d);
            let script = t.map_or(0, classify);
            let h = t
                .filter(|_| hash)
                .map(|t| xxhash_rust::xxh3::xxh3_128(t.as_bytes()));
            let mut out = Vec::new();
            let small = match (t, paragraphs) {
                // Within a text's 32-bit length.
                (Some(t), Some(pc)) => {
                    paragraphs::paragraphs(t, pc.min_bytes, scratch, &mut out) as u32
                }
                _ => 0,
            };
            (h, (script, (out, small)))
        })
        .unzip();
    if paragraphs.is_none() {
        paras = Vec::new();
    }
    let windows = match &cfg.substrings {
        Some(sc) => substring_windows(corpus, sc.min_bytes, substring_ranges),
        None => Vec::new(),
    };
    ReadPass {
        hashes,
        scripts,
        paragraphs: paras,
        windows,
    }
}

/// `--substrings`: the chunk's windows ([`substrings::windows`]) as blocks of rows by hash
/// range, made in parallel: each block holds the windows of consecutive documents, in document
/// order, each row's document its position in the chunk (absorb adds the chunk's base). Offsets
/// fit: Parquet stores a text's bytes with a 32-bit length.
fn substring_windows(
    corpus: &Corpus,
    min_bytes: usize,
    ranges: usize,
) -> Vec<Vec<paragraph_rows::Rows>> {
    let by_range =
        || -> Vec<paragraph_rows::Rows> { (0..ranges).map(|_| Default::default()).collect() };
    (0..corpus.len() as u32)
        .into_par_iter()
        .with_min_len(64)
        .fold(
            || (substrings::Scratch::default(), Vec::new(), by_range()),
            |(mut scratch, mut found, mut rows), d| {
                if let Some(t) = corpus.text(d) {
                    found.clear();
                    substrings::windows(t.as_bytes(), min_bytes, &mut scratch, &mut found);
                    for x in &found {
                        rows[bucket_range(x.hash, ranges)].push(paragraph_rows::Row {
                            hash: x.hash,
                            doc: d,
                            start: x.start as u32,
                            len: (x.end - x.start) as u32,
                        });
                    }
                }
                (scratch, found, rows)
            },
        )
        .map(|(_, _, rows)| rows)
        .collect()
}

/// The text columns of a chunk's shards with the texts of raw copies (`copy_of[d]` set) made
/// null, so the kernels skip them: the copies get their originals' results instead. Only the
/// validity changes; no text is copied.
fn without_copies(corpus: &Corpus, copy_of: &[Option<u32>]) -> Vec<StringChunked> {
    corpus
        .shards
        .iter()
        .enumerate()
        .map(|(s, shard)| {
            let at = corpus.start(s);
            let copies = &copy_of[at..at + shard.len()];
            if copies.iter().all(Option::is_none) {
                return shard.text.clone();
            }
            let present = shard.text.is_not_null();
            let keep: Vec<bool> = copies
                .iter()
                .zip(present.iter())
                .map(|(c, p)| c.is_none() && p == Some(true))
                .collect();
            let keep = BooleanChunked::from_slice(PlSmallStr::EMPTY, &keep);
            let validity = keep.downcast_iter().next().map(|a| a.values().clone());
            shard.text.clone().with_validity(validity)
        })
        .collect()
}

/// Fails when a shard of part `p` is not the one the plan counted (its size or Parquet footer
/// differs, or it is gone): the plan's row ranges would not fit it.
fn check_inputs(plan: &Plan, p: usize) -> Result<()> {
    let names: std::collections::BTreeSet<String> =
        plan.slices(p).into_iter().map(|(f, _)| f).collect();
    for f in plan.files.iter().filter(|f| names.contains(&f.file)) {
        if f.fingerprint.is_empty() {
            continue;
        }
        crate::io::input::Footer::read_unchanged(&f.file, f.bytes, &f.fingerprint, |what| {
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
    /// Band rows per (band, range) file: bucket keys, global document indices, and for SimHash
    /// the fingerprints.
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
    /// `--substrings`: the windows, blocks of rows by hash range ([`substring_windows`]).
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

    /// Adds a chunk's documents: `base` is the global index of its first, `at` its part
    /// position.
    fn absorb(
        &mut self,
        c: ChunkDocs,
        (base, at): (u64, usize),
        kernel: &Kernel,
        plan: &Plan,
        with_hits: bool,
        stats: &mut SignatureStats,
    ) {
        let cfg = &plan.config;
        let (bands, ranges) = (plan.bands(), plan.bucket_ranges);
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
                doc.push((base + d as u64) as u32);
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
                    doc: (base + d as u64) as u32,
                    start: p.start as u32,
                    len: (p.end - p.start) as u32,
                });
            }
        }
        self.substrings = c.windows;
        for rows in self.substrings.iter_mut().flatten() {
            rows.doc.iter_mut().for_each(|d| *d += base as u32);
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
    let chunks = plan.chunks(p, crate::hooks::chunk_rows(DOCS_PER_CHUNK));
    // A chunk is read with its raw texts' hashes for MinHash and its script classes (on the
    // reading thread, beside the previous chunk's signatures); SimHash finds no raw copies (see
    // the module documentation).
    let load = |i: usize| {
        chunks.get(i).map(|c| {
            Corpus::load_slices(c, cfg, |_| {}).map(|corpus| {
                let pass = read_pass(&corpus, !simhash, cfg, plan.substring_ranges());
                (corpus, pass)
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
    // build leaves idle, and the first chunk's computing then has both.
    let (reference, (first_chunk, mut second_chunk)) = rayon::join(load_reference, || {
        let first = load(0);
        let second = cfg.reference.as_ref().map(|_| load(1));
        (first, second)
    });
    let reference = reference?;
    let mut first_chunk = Some(first_chunk);
    let table = reference.as_deref().map(|r| &r.table);
    let bands = plan.bands();
    let mut stats = SignatureStats {
        documents: count,
        ..Default::default()
    };
    let mut docs = PartDocs::new(count, bands * plan.bucket_ranges, plan);
    let mut read = 0u64;
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
            store::write_part(work, p, |files| {
                let store =
                    store::Writer::new(files, kernel.k(), first, count).map_err(store_err)?;
                // Three chunks in flight: the next one is read while this one is computed, and the
                // previous one is appended to the store by its own thread.
                std::thread::scope(|scope| {
                    type Stored = (Signatures, ShingleKeys, Vec<String>, Vec<Option<u32>>);
                    let (tx, rx) = std::sync::mpsc::sync_channel::<Stored>(0);
                    let writer = scope.spawn(move || {
                        let mut store = store;
                        for (sigs, keys, ids, copies) in rx {
                            store.append(&sigs, |i| keys.get(i), |i| &ids[i], |i| copies[i])?;
                        }
                        store.finish()
                    });
                    // The hash rows too, so the main thread does not wait on the disk.
                    type Rows = (Vec<paragraph_rows::Rows>, Vec<Vec<paragraph_rows::Rows>>);
                    let (rows_tx, rows_rx) = std::sync::mpsc::sync_channel::<Rows>(1);
                    let (paragraph_files, substring_files) = (&paragraph_files, &substring_files);
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
                    let mut next = first_chunk.take().unwrap_or_else(|| load(0));
                    let mut i = 0;
                    while let Some(loaded) = next.take() {
                        let (
                            corpus,
                            ReadPass {
                                hashes,
                                scripts,
                                paragraphs,
                                windows,
                            },
                        ) = loaded?;
                        let n = corpus.len();
                        let (base, at) = (first + read, read as usize);
                        let pkeys = label_keys(&corpus, |s| s.partition.as_ref());
                        let akeys = label_keys(&corpus, |s| s.across.as_ref());
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
                        if read > count {
                            return Err(changed(read));
                        }
                        let texts = without_copies(&corpus, &copy_of);
                        let compute = || kernel.compute(&corpus, &texts, base, bands, cfg, table);
                        let (chunk, following) = match second_chunk.take() {
                            Some(second) => (compute(), second),
                            None => rayon::join(compute, || load(i + 1)),
                        };
                        next = following;
                        i += 1;
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
                        docs.absorb(c, (base, at), &kernel, plan, table.is_some(), &mut stats);
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
                            .send((chunk.sigs, chunk.keys, chunk.ids, copy_of))
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
                    if read != count {
                        return Err(changed(read));
                    }
                    Ok(())
                })
            })
        })
    })?;
    docs.write(work, plan, p, reference.as_deref(), &mut stats)?;
    Ok(stats)
}

/// Writes a chunk's rows as a block of `files`' data file (nothing without a writer).
fn flush_rows(
    work: &OutputDir,
    writer: Option<&mut paragraph_rows::Writer>,
    rows: &mut [paragraph_rows::Rows],
    files: &[String; 2],
) -> Result<()> {
    match writer {
        Some(w) => w.block(rows).map_err(|e| Error::Output {
            path: work.location(&files[0]),
            source: e.into(),
        }),
        None => Ok(()),
    }
}

/// Runs `write` with a writer that streams a part's hash rows (paragraphs or substring windows)
/// into `files`' data file, a block per chunk, then writes the meta file; `None` when the plan
/// has no ranges for them.
fn with_rows(
    work: &OutputDir,
    files: &[String; 2],
    ranges: usize,
    write: impl FnOnce(Option<&mut paragraph_rows::Writer>) -> Result<()>,
) -> Result<()> {
    if ranges == 0 {
        return write(None);
    }
    let [data, meta] = files;
    let mut written = Vec::new();
    work.write_with(data, |sink| {
        let mut rows = paragraph_rows::Writer::new(sink, ranges);
        write(Some(&mut rows))?;
        written = rows.finish();
        Ok(())
    })?;
    work.write_bytes(meta, written)
}

/// The docs-file columns of `--reference`: the id of the item each document holds
/// (`contaminated_by`) and its share found (`contamination`), null for the others.
fn contamination_columns(r: &Reference, hits: &[Option<Hit>]) -> [Column; 2] {
    let by: Vec<Option<&str>> = hits
        .iter()
        .map(|h| h.map(|h| r.ids[h.item as usize].as_str()))
        .collect();
    let share: Vec<Option<f32>> = hits.iter().map(|h| h.map(|h| h.share)).collect();
    [
        Column::new("contaminated_by".into(), by),
        Column::new("contamination".into(), share),
    ]
}

/// Documents per item hit, ascending by item.
fn count_items(r: &Reference, hits: &[Option<Hit>]) -> Vec<crate::reference::ItemHits> {
    let mut by: std::collections::BTreeMap<u32, u64> = Default::default();
    for h in hits.iter().flatten() {
        *by.entry(h.item).or_default() += 1;
    }
    by.into_iter()
        .map(|(item, documents)| crate::reference::ItemHits {
            item,
            id: r.ids[item as usize].clone(),
            file: r.files[r.file_of[item as usize] as usize].file.clone(),
            documents,
        })
        .collect()
}

/// The label keys ([`partition::key`]) of a chunk's documents from one label column of its
/// shards (all 0 when the run reads no such column).
fn label_keys(
    corpus: &Corpus,
    column: impl Fn(&crate::io::input::Shard) -> Option<&StringChunked>,
) -> Vec<u64> {
    let mut out = Vec::with_capacity(corpus.len());
    for shard in &corpus.shards {
        match column(shard) {
            Some(c) => out.extend(partition::keys(c)),
            None => out.extend(std::iter::repeat_n(0, shard.len())),
        }
    }
    out
}

/// Which of `ranges` bucket ranges a bucket key falls in (its high bits, scaled).
pub(crate) fn bucket_range(bucket: u64, ranges: usize) -> usize {
    (((bucket >> 32) * ranges as u64) >> 32) as usize
}
