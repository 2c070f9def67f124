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

/// Computes the signature of every text of a column (the UDF), and each document's shingle keys
/// (text order, repeats kept; empty for a null or empty text). `on_docs` is called with the
/// number of documents finished, from worker threads (for progress).
pub fn signature_column(
    texts: &StringChunked,
    perms: &Permutations,
    tokenizer: Tokenizer,
    ngram: usize,
    on_docs: &(dyn Fn(u64) + Sync),
) -> (Signatures, Vec<Vec<u32>>) {
    let k = perms.len();
    let n = texts.len();
    let mut values = vec![u32::MAX; n * k];
    let mut shingles = vec![0u32; n];
    let mut keys = vec![Vec::new(); n];
    values
        .par_chunks_mut(k)
        .zip(shingles.par_iter_mut())
        .zip(keys.par_iter_mut())
        .enumerate()
        .with_min_len(16)
        .for_each_init(
            || (Scratch::default(), Vec::new()),
            |(scratch, hashes), (i, ((sig, count), keys))| {
                if let Some(text) = texts.get(i) {
                    shingle_hashes(text, tokenizer, ngram, scratch, hashes);
                    *keys = hashes.iter().map(|&h| shingle_key(h)).collect();
                    perms.signature(keys, sig);
                    *count = u32::try_from(keys.len()).unwrap_or(u32::MAX);
                }
                on_docs(1);
            },
        );
    let sigs = Signatures {
        k,
        values,
        shingles,
    };
    (sigs, keys)
}

/// The permutations a configuration asks for.
pub fn permutations(cfg: &Config) -> Permutations {
    Permutations::new(cfg.num_perm, cfg.seed)
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
        let lens: Vec<usize> = keys.iter().map(Vec::len).collect();
        assert_eq!(lens, vec![2, 0, 0, 0, 2]);
        assert_eq!(keys[0], keys[4]);
        assert_ne!(keys[0][0], keys[0][1]);
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
}
