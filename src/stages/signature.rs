//! Stage 1, signatures: text column -> MinHash signature column.
//!
//! A vectorised UDF over a whole text column: rayon splits the column across threads, each thread
//! reuses its normalisation and shingle buffers, and writes K u32 values per document straight into
//! one flat, row-major buffer (document `i` owns `values[i*K .. (i+1)*K]`). Null and empty texts get
//! zero shingles and an all-`u32::MAX` signature; later stages treat them as singletons.
//! Each document's shingle keys ([`shingle_key`], text order, repeats kept) come out beside the
//! signatures, so exact verification later reads them instead of shingling the text again.

use polars::prelude::StringChunked;
use rayon::prelude::*;

use crate::config::{Config, Tokenizer};
use crate::minhash::Permutations;
use crate::text::shingle::{shingle_hashes, shingle_key, Scratch};

/// Signatures of a run of documents, row-major, plus each document's shingle count.
#[derive(Debug, Clone, Default)]
pub struct Signatures {
    /// Signature length K.
    pub k: usize,
    /// `len() * k` values.
    pub values: Vec<u32>,
    /// Shingles (n-grams, repeats counted) per document; 0 for a null or empty text.
    pub shingles: Vec<u32>,
}

impl Signatures {
    /// Number of documents.
    pub fn len(&self) -> usize {
        self.shingles.len()
    }

    /// True when there are no documents.
    pub fn is_empty(&self) -> bool {
        self.shingles.is_empty()
    }

    /// Signature of document `doc`.
    pub fn get(&self, doc: u32) -> &[u32] {
        let i = doc as usize * self.k;
        &self.values[i..i + self.k]
    }

    /// Appends another run of documents.
    pub fn extend(&mut self, other: Signatures) {
        self.k = other.k;
        self.values.extend_from_slice(&other.values);
        self.shingles.extend_from_slice(&other.shingles);
    }
}

/// The shingle keys of a run of documents (text order, repeats kept), stored flat in batches of
/// up to [`KEY_BATCH`] documents: one allocation per batch instead of one per document.
#[derive(Debug, Clone, Default)]
pub struct ShingleKeys {
    /// Global position (within the run) of each batch's first document, ascending.
    starts: Vec<usize>,
    batches: Vec<KeyBatch>,
    len: usize,
}

/// Documents per batch of [`ShingleKeys`]: the unit of work of the signature UDF.
pub const KEY_BATCH: usize = 64;

#[derive(Debug, Clone, Default)]
struct KeyBatch {
    keys: Vec<u32>,
    /// `ends[j]`: end of document j's keys in `keys` (its start is `ends[j - 1]`, or 0).
    ends: Vec<usize>,
}

impl ShingleKeys {
    /// Number of documents.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are no documents.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The keys of document `doc` (position within the run).
    pub fn get(&self, doc: usize) -> &[u32] {
        let b = self.starts.partition_point(|&s| s <= doc) - 1;
        let (batch, j) = (&self.batches[b], doc - self.starts[b]);
        let start = if j == 0 { 0 } else { batch.ends[j - 1] };
        &batch.keys[start..batch.ends[j]]
    }

    /// Appends another run of documents.
    pub fn extend(&mut self, other: ShingleKeys) {
        for (s, b) in other.starts.into_iter().zip(other.batches) {
            self.starts.push(self.len + s);
            self.batches.push(b);
        }
        self.len += other.len;
    }
}

/// Computes the signature of every text of a column (the UDF), and each document's shingle keys
/// (text order, repeats kept; empty for a null or empty text). `on_docs` is called with the
/// number of documents finished, from worker threads (for progress).
pub fn signature_column(
    texts: &StringChunked,
    perms: &Permutations,
    tokenizer: Tokenizer,
    ngram: usize,
    on_docs: &(dyn Fn(u64) + Sync),
) -> (Signatures, ShingleKeys) {
    let k = perms.len();
    let n = texts.len();
    let mut values = vec![u32::MAX; n * k];
    let mut shingles = vec![0u32; n];
    let batches: Vec<KeyBatch> = values
        .par_chunks_mut(k * KEY_BATCH)
        .zip(shingles.par_chunks_mut(KEY_BATCH))
        .enumerate()
        .map_init(
            || (Scratch::default(), Vec::new()),
            |(scratch, hashes), (b, (sigs, counts))| {
                let docs = counts.len();
                let mut batch = KeyBatch {
                    keys: Vec::new(),
                    ends: Vec::with_capacity(docs),
                };
                for (j, (sig, count)) in sigs.chunks_mut(k).zip(counts).enumerate() {
                    if let Some(text) = texts.get(b * KEY_BATCH + j) {
                        shingle_hashes(text, tokenizer, ngram, scratch, hashes);
                        let start = batch.keys.len();
                        batch.keys.extend(hashes.iter().map(|&h| shingle_key(h)));
                        let keys = &batch.keys[start..];
                        perms.signature(keys, sig);
                        *count = u32::try_from(keys.len()).unwrap_or(u32::MAX);
                    }
                    batch.ends.push(batch.keys.len());
                }
                on_docs(docs as u64);
                batch
            },
        )
        .collect();
    let keys = ShingleKeys {
        starts: (0..batches.len()).map(|b| b * KEY_BATCH).collect(),
        batches,
        len: n,
    };
    let sigs = Signatures {
        k,
        values,
        shingles,
    };
    (sigs, keys)
}

/// The permutations a configuration asks for.
pub fn permutations(cfg: &Config) -> Permutations {
    Permutations::with_sketch(cfg.num_perm, cfg.seed, cfg.sketch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::*;

    #[test]
    fn column_udf_handles_nulls_and_empties() {
        let texts = StringChunked::new(
            "text".into(),
            &[
                Some("a b c d e f"),
                None,
                Some(""),
                Some(" ,. "),
                Some("a b c d e f"),
            ],
        );
        let perms = Permutations::new(16, 1);
        let (s, keys) = signature_column(&texts, &perms, Tokenizer::Chars, 5, &|_| {});
        assert_eq!(s.len(), 5);
        assert_eq!(s.shingles, vec![2, 0, 0, 0, 2]);
        let lens: Vec<usize> = (0..keys.len()).map(|i| keys.get(i).len()).collect();
        assert_eq!(lens, vec![2, 0, 0, 0, 2]);
        assert_eq!(keys.get(0), keys.get(4));
        assert_ne!(keys.get(0)[0], keys.get(0)[1]);
        let (r, _) = signature_column(
            &StringChunked::new("t".into(), &["x y x y x y"]),
            &perms,
            Tokenizer::Chars,
            2,
            &|_| {},
        );
        assert_eq!(r.shingles, vec![5]); // repeats counted
        assert_eq!(s.get(0), s.get(4));
        assert!(s.get(1).iter().all(|&v| v == u32::MAX));
    }

    #[test]
    fn keys_of_runs_appended_match_one_run() {
        // 150 documents: three batches, the last partial; split into runs of 70 and 80.
        let texts: Vec<Option<String>> = (0..150)
            .map(|i| (i % 7 != 3).then(|| format!("w{i} x{} y{} z{i} q", i % 5, i % 3)))
            .collect();
        let col = StringChunked::new("t".into(), &texts);
        let perms = Permutations::new(16, 1);
        let sig = |c: &StringChunked| signature_column(c, &perms, Tokenizer::Chars, 2, &|_| {});
        let (whole_sigs, whole) = sig(&col);
        let (mut sigs, mut keys) = sig(&col.slice(0, 70));
        let (s2, k2) = sig(&col.slice(70, 80));
        sigs.extend(s2);
        keys.extend(k2);
        assert_eq!(keys.len(), 150);
        assert_eq!(sigs.values, whole_sigs.values);
        for d in 0..150 {
            assert_eq!(keys.get(d), whole.get(d), "document {d}");
            assert_eq!(keys.get(d).len(), if d % 7 == 3 { 0 } else { 4 });
        }
    }
}
