//! The signatures stage's column kernels: a text column -> each document's MinHash signature and
//! shingle keys ([`signature_column`], in batches of [`KEY_BATCH`] documents per rayon task), and
//! its 128-bit exact-text hash ([`exact_column`]).

use polars::prelude::StringChunked;
use rayon::prelude::*;

use crate::config::Tokenizer;
use crate::minhash::{Permutations, Signatures};
use crate::reference::{Hit, Probes, Table};
pub(super) use crate::text::shingle::exact_hash;
use crate::text::shingle::{ngram_hashes, shingle_count, shingle_key, token_hashes_of, Scratch};

/// The shingle keys of a run of documents (text order, repeats kept), stored flat in batches of
/// up to [`KEY_BATCH`] documents: one allocation per batch instead of one per document.
#[derive(Debug, Clone, Default)]
pub(crate) struct ShingleKeys {
    /// Global position (within the run) of each batch's first document, ascending.
    starts: Vec<usize>,
    batches: Vec<KeyBatch>,
    len: usize,
}

/// Documents per batch of [`ShingleKeys`]: the unit of work of the signature UDF.
pub(super) const KEY_BATCH: usize = 64;

#[derive(Debug, Clone, Default)]
struct KeyBatch {
    keys: Vec<u32>,
    /// `ends[j]`: end of document j's keys in `keys` (its start is `ends[j - 1]`, or 0).
    ends: Vec<usize>,
    /// Document j's exact-text hash.
    exact: Vec<u128>,
    /// `--reference`: (j, the item document j holds), for the documents that hold one.
    hits: Vec<(u32, Hit)>,
}

/// The exact-text hashes of a column, and with a reference its documents' hits, without
/// shingle keys (for SimHash runs that compute none).
pub(crate) fn exact_column(
    texts: &StringChunked,
    tokenizer: Tokenizer,
    ngram: usize,
    reference: Option<&Table>,
) -> ShingleKeys {
    let per_doc: Vec<(u128, Option<Hit>)> = (0..texts.len())
        .into_par_iter()
        .with_min_len(KEY_BATCH)
        .map_init(
            || (Scratch::default(), Vec::new(), Probes::default()),
            |(scratch, buf, probes), i| match texts.get(i) {
                Some(t) => {
                    let tokens = token_hashes_of(t, tokenizer, scratch);
                    let exact = exact_hash(tokens, shingle_count(tokens.len(), ngram), buf);
                    let hit = reference.and_then(|r| r.find(tokens, probes));
                    (exact, hit)
                }
                None => (0, None),
            },
        )
        .collect();
    let (exact, hits): (Vec<u128>, Vec<Option<Hit>>) = per_doc.into_iter().unzip();
    let hits = (hits.into_iter().enumerate())
        .filter_map(|(j, h)| Some((j as u32, h?)))
        .collect();
    ShingleKeys::without_keys(exact, hits)
}

impl ShingleKeys {
    #[cfg(test)]
    /// Number of documents.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The exact-text hash of document `doc` ([`exact_hash`]; 0 for a text without shingles).
    pub(crate) fn exact(&self, doc: usize) -> u128 {
        let b = self.starts.partition_point(|&s| s <= doc) - 1;
        self.batches[b]
            .exact
            .get(doc - self.starts[b])
            .copied()
            .unwrap_or(0)
    }

    /// The reference item document `doc` holds (`--reference`), if any.
    pub(crate) fn hit(&self, doc: usize) -> Option<Hit> {
        let b = self.starts.partition_point(|&s| s <= doc) - 1;
        let hits = &self.batches[b].hits;
        let j = (doc - self.starts[b]) as u32;
        hits.binary_search_by_key(&j, |&(x, _)| x)
            .ok()
            .map(|i| hits[i].1)
    }

    /// The keys of document `doc` (position within the run).
    pub(crate) fn get(&self, doc: usize) -> &[u32] {
        let b = self.starts.partition_point(|&s| s <= doc) - 1;
        let (batch, j) = (&self.batches[b], doc - self.starts[b]);
        let start = if j == 0 { 0 } else { batch.ends[j - 1] };
        &batch.keys[start..batch.ends[j]]
    }

    /// Documents without keys (SimHash without the short-document check), with their
    /// exact-text hashes and (position, item) of those holding a reference item.
    fn without_keys(exact: Vec<u128>, hits: Vec<(u32, Hit)>) -> Self {
        let n = exact.len();
        ShingleKeys {
            starts: vec![0],
            batches: vec![KeyBatch {
                keys: Vec::new(),
                ends: vec![0; n],
                exact,
                hits,
            }],
            len: n,
        }
    }

    /// Appends another run of documents.
    pub(crate) fn extend(&mut self, other: ShingleKeys) {
        for (s, b) in other.starts.into_iter().zip(other.batches) {
            self.starts.push(self.len + s);
            self.batches.push(b);
        }
        self.len += other.len;
    }
}

/// Computes the signature of every text of a column with `perms` (none: shingle keys only, and
/// signatures of length 0), each document's shingle keys (text order, repeats kept; empty for a
/// null or empty text), and with a `reference` the item each document holds, from the same
/// tokens.
pub(crate) fn signature_column(
    texts: &StringChunked,
    perms: Option<&Permutations>,
    tokenizer: Tokenizer,
    ngram: usize,
    reference: Option<&Table>,
) -> (Signatures, ShingleKeys) {
    signature_column_keeping(texts, perms, tokenizer, ngram, reference, true)
}

/// [`signature_column`], keeping the shingle keys only when `keys` (else each document's live
/// only until its signature and shingle count are made: `--work-keys remade`, where the keys
/// stage makes them again for the documents that need them).
pub(crate) fn signature_column_keeping(
    texts: &StringChunked,
    perms: Option<&Permutations>,
    tokenizer: Tokenizer,
    ngram: usize,
    reference: Option<&Table>,
    keys: bool,
) -> (Signatures, ShingleKeys) {
    let kept = Kept { keys, exact: true };
    column(texts, perms, tokenizer, ngram, kept, reference)
}

/// What [`column()`] keeps of each document besides its signature and shingle count.
#[derive(Clone, Copy)]
struct Kept {
    keys: bool,
    exact: bool,
}

/// The signatures of [`signature_column`] alone: each document's keys are dropped once its
/// signature is made, and no exact-text hash is computed (the signature UDF of the Python
/// package, which returns only the signatures).
pub fn signatures_only(
    texts: &StringChunked,
    perms: &Permutations,
    tokenizer: Tokenizer,
    ngram: usize,
) -> Signatures {
    let kept = Kept {
        keys: false,
        exact: false,
    };
    column(texts, Some(perms), tokenizer, ngram, kept, None).0
}

/// [`signature_column`], keeping the shingle keys and exact hashes as `kept` says (a document's
/// keys not kept live only until its signature is made).
fn column(
    texts: &StringChunked,
    perms: Option<&Permutations>,
    tokenizer: Tokenizer,
    ngram: usize,
    kept: Kept,
    reference: Option<&Table>,
) -> (Signatures, ShingleKeys) {
    let k = perms.map_or(0, Permutations::len);
    let n = texts.len();
    let mut values = vec![u32::MAX; n * k];
    let mut shingles = vec![0u32; n];
    let sig_batches: Vec<&mut [u32]> = if k == 0 {
        (0..n.div_ceil(KEY_BATCH)).map(|_| &mut [][..]).collect()
    } else {
        values.chunks_mut(k * KEY_BATCH).collect()
    };
    let batches: Vec<KeyBatch> = sig_batches
        .into_par_iter()
        .zip(shingles.par_chunks_mut(KEY_BATCH))
        .enumerate()
        .map_init(
            || (Scratch::default(), Vec::new(), Probes::default()),
            |(scratch, buf, probes), (b, (sigs, counts))| {
                // About one key per 4 bytes of text or fewer (words average more, a CJK char is
                // 3 bytes): reserving that saves the growth copies of the batch's keys.
                let first = b * KEY_BATCH;
                let bytes: usize = (first..first + counts.len())
                    .filter_map(|i| texts.get(i))
                    .map(str::len)
                    .sum();
                let mut batch = KeyBatch {
                    keys: Vec::with_capacity(if kept.keys { bytes / 4 } else { 0 }),
                    ends: Vec::with_capacity(counts.len()),
                    exact: vec![0; counts.len()],
                    hits: Vec::new(),
                };
                for (j, count) in counts.iter_mut().enumerate() {
                    if let Some(text) = texts.get(first + j) {
                        let tokens = token_hashes_of(text, tokenizer, scratch);
                        if let Some(hit) = reference.and_then(|r| r.find(tokens, probes)) {
                            batch.hits.push((j as u32, hit));
                        }
                        let start = batch.keys.len();
                        let keys = ngram_hashes(tokens, ngram).map(shingle_key);
                        let sig = &mut sigs[j * k..(j + 1) * k];
                        match perms {
                            // One pass: each key is binned as it is made.
                            Some(p) if p.is_oph() => {
                                let mut sketch = p.oph_sketch(sig);
                                batch.keys.extend(sketch.binned(keys));
                                sketch.finish();
                            }
                            _ => {
                                batch.keys.extend(keys);
                                if let Some(p) = perms {
                                    p.signature(&batch.keys[start..], sig);
                                }
                            }
                        }
                        let shingles = batch.keys.len() - start;
                        if kept.exact {
                            batch.exact[j] = exact_hash(tokens, shingles, buf);
                        }
                        *count = u32::try_from(shingles).unwrap_or(u32::MAX);
                    }
                    if !kept.keys {
                        batch.keys.clear();
                    }
                    batch.ends.push(batch.keys.len());
                }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::shingle::shingle_hashes;
    use polars::prelude::*;

    #[test]
    fn exact_hash_is_xxh3_128_of_the_little_endian_token_hashes() {
        // Retained indexes hold these hashes: the value must not change with how it is computed.
        let tokens = [1u64, u64::MAX, 0x0123_4567_89ab_cdef, 42];
        let bytes: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
        let mut buf = Vec::new();
        assert_eq!(
            exact_hash(&tokens, 1, &mut buf),
            xxhash_rust::xxh3::xxh3_128(&bytes).max(1)
        );
        assert_eq!(exact_hash(&tokens, 0, &mut buf), 0);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 200,
            rng_seed: proptest::test_runner::RngSeed::Fixed(60),
            failure_persistence: None,
            ..Default::default()
        })]
        /// The column kernel, which bins each key as the n-gram loop makes it, gives each text
        /// the keys and signature of the steps taken one after another, for both sketches.
        #[test]
        fn one_pass_equals_the_steps(
            texts in proptest::collection::vec(proptest::option::of("\\PC{0,60}|[a-zA-Z .]{0,90}"), 0..70),
            n in 1usize..6,
        ) {
            let col: StringChunked = texts.iter().map(|t| t.as_deref()).collect();
            for sketch in [crate::config::Sketch::Oph, crate::config::Sketch::Classic] {
                let perms = Permutations::with_sketch(32, 9, sketch);
                let (sigs, keys) = signature_column(&col, Some(&perms), Tokenizer::Chars, n, None);
                let mut scratch = Scratch::default();
                for (d, t) in texts.iter().enumerate() {
                    let mut hashes = Vec::new();
                    if let Some(t) = t {
                        shingle_hashes(t, Tokenizer::Chars, n, &mut scratch, &mut hashes);
                    }
                    let expected: Vec<u32> = hashes.iter().map(|&h| shingle_key(h)).collect();
                    let mut sig = vec![u32::MAX; 32];
                    if t.is_some() {
                        perms.signature(&expected, &mut sig);
                    }
                    proptest::prop_assert_eq!(keys.get(d), &expected[..]);
                    proptest::prop_assert_eq!(sigs.get(d as u32), &sig[..]);
                    proptest::prop_assert_eq!(sigs.shingles[d] as usize, expected.len());
                }
            }
        }
    }

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
        let (s, keys) = signature_column(&texts, Some(&perms), Tokenizer::Chars, 5, None);
        assert_eq!(s.len(), 5);
        assert_eq!(s.shingles, vec![2, 0, 0, 0, 2]);
        let lens: Vec<usize> = (0..keys.len()).map(|i| keys.get(i).len()).collect();
        assert_eq!(lens, vec![2, 0, 0, 0, 2]);
        assert_eq!(keys.get(0), keys.get(4));
        assert_ne!(keys.get(0)[0], keys.get(0)[1]);
        let (r, _) = signature_column(
            &StringChunked::new("t".into(), &["x y x y x y"]),
            Some(&perms),
            Tokenizer::Chars,
            2,
            None,
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
        let sig = |c: &StringChunked| signature_column(c, Some(&perms), Tokenizer::Chars, 2, None);
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
        // Keys alone are the same keys.
        let (none, keys_only) = signature_column(&col, None, Tokenizer::Chars, 2, None);
        assert_eq!((none.k, none.values.len()), (0, 0));
        assert_eq!(none.shingles, whole_sigs.shingles);
        assert!((0..150).all(|d| keys_only.get(d) == whole.get(d)));
        let empty = ShingleKeys::without_keys(vec![0; 3], Vec::new());
        assert!((0..3).all(|d| empty.get(d).is_empty()));
        // Exact hashes: equal texts equal, others and empty texts differ (0 for no shingle).
        let (_, k) = signature_column(
            &StringChunked::new(
                "t".into(),
                &[Some("A b, c"), Some("a  b c"), Some("a b d"), Some(" ")],
            ),
            None,
            Tokenizer::Chars,
            2,
            None,
        );
        assert_eq!(k.exact(0), k.exact(1));
        assert_ne!(k.exact(0), k.exact(2));
        assert_eq!(k.exact(3), 0);
        let col = StringChunked::new("t".into(), &[Some("A b, c"), None]);
        let e = exact_column(&col, Tokenizer::Chars, 2, None);
        assert_eq!((e.exact(0), e.exact(1)), (k.exact(0), 0));
    }
}
