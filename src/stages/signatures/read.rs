//! The read pass of a signatures task: what is computed per document as a chunk is read, while
//! its text is in cache (raw-copy hashes, script classes, paragraphs, substring windows), and the
//! chunk's label keys, and the documents counted of a file the plan left to the task.

use polars::prelude::{BooleanChunked, NewChunkedArray, PlSmallStr, StringChunked};
use rayon::prelude::*;

use crate::config::Config;
use crate::corpus::Corpus;
use crate::io::paragraph_rows;
use crate::partition;
use crate::text::paragraphs::{self, Paragraph};
use crate::text::script::classify;
use crate::text::substrings;

use super::rows::bucket_range;
use crate::plan::{At, FileCount, Plan};
use std::collections::BTreeMap;

/// Raw copies: each document of `texts` whose text is byte for byte an earlier one's in the part
/// gets that first occurrence's position in the part (`first_seen`: 128-bit hash of the text ->
/// position, filled as documents go by; `at`: the part position of `texts`' first document).
/// Null texts are nobody's copy.
pub(super) fn raw_copies(
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
pub(super) struct ReadPass {
    pub(super) hashes: Vec<Option<u128>>,
    pub(super) scripts: Vec<u32>,
    pub(super) paragraphs: Vec<(Vec<Paragraph>, u32)>,
    pub(super) windows: Vec<Vec<paragraph_rows::Rows>>,
}

pub(super) fn read_pass(
    corpus: &Corpus,
    hash: bool,
    cfg: &Config,
    substring_ranges: usize,
) -> ReadPass {
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
pub(super) fn substring_windows(
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
            || (substrings::Scratch::default(), by_range()),
            |(mut scratch, mut rows), d| {
                if let Some(t) = corpus.text(d) {
                    substrings::for_each_window(t.as_bytes(), min_bytes, &mut scratch, |x| {
                        rows[bucket_range(x.hash, ranges)].push(paragraph_rows::Row {
                            hash: x.hash,
                            doc: d,
                            start: x.start as u32,
                            len: (x.end - x.start) as u32,
                        });
                    });
                }
                (scratch, rows)
            },
        )
        .map(|(_, rows)| rows)
        .collect()
}

/// The text columns of a chunk's shards with the texts of raw copies (`copy_of[d]` set) made
/// null, so the kernels skip them: the copies get their originals' results instead. Only the
/// validity changes; no text is copied.
pub(super) fn without_copies(corpus: &Corpus, copy_of: &[Option<u32>]) -> Vec<StringChunked> {
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

/// The label keys ([`partition::key`]) of a chunk's documents from one label column of its
/// shards (all 0 when the run reads no such column).
pub(super) fn chunk_label_keys(
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

/// Counts a chunk's rows (`n`, read at `at`) towards its file when the plan did not count it;
/// a file's blank lines are known once a chunk reached its end (`u64::MAX` until then).
pub(super) fn count_file(
    counts: &mut BTreeMap<usize, FileCount>,
    plan: &Plan,
    (at, n): (At, u64),
    corpus: &Corpus,
) {
    // (file, its rows in this chunk, its shard's place in the chunk)
    let files: Vec<(usize, u64, usize)> = match at {
        At::Planned(_) => return,
        At::File { file, .. } => vec![(file, n, 0)],
        At::Files { first, end } => (first..end)
            .map(|f| (f, corpus.shards[f - first].len() as u64, f - first))
            .collect(),
    };
    for (file, rows, s) in files {
        if !plan.files[file].uncounted {
            continue;
        }
        let c = counts.entry(file).or_insert(FileCount {
            file,
            rows: 0,
            blank_lines: u64::MAX,
        });
        c.rows += rows;
        if let Some(&Some(blank)) = corpus.ends.get(s) {
            c.blank_lines = blank;
        }
    }
}
