//! Shingle key files: one part's documents' shingle keys, read back by document. With
//! `--work-keys stored` the signatures task writes every document's keys as it goes; with
//! `remade` the keys task of the part writes the *tokens* of those an exact check needs
//! ([`crate::stages::keys`], [`write_tokens`]), and their shingle keys are made again from them
//! when read (the rolling hash of each n tokens, as the signatures stage makes them): a token is
//! its rank in the part's dictionary (most frequent first) as a varint, about 1.8 bytes on web
//! text, where a shingle key takes 4.
//!
//! Files per part, little-endian:
//! ```text
//! keys/pP.keys    CDKEYS02: each listed document's shingle keys ([u32; keys], text order,
//!                 repeats kept); CDKEYS03: its tokens, varint ranks into the dictionary
//! keys/pP.tokens  CDKEYS03: "CDTOKEN1" | ngram: u32 | tokens: u64 | xxh3-64 of the hashes: u64
//!                 | token hashes: [u64; tokens], by rank                          (28 bytes + 8 each)
//! keys/pP.index   header  "CDKEYS02" or "CDKEYS03" | docs: u64 | xxh3-64 of the entries: u64
//!                 entries per document, ascending: doc: u32 | keys (03: tokens): u32
//!                         | offset: u64 | xxh3-64 of its bytes: u64           (24 bytes each)
//!                         | 03 only: bytes: u32                               (28 bytes each)
//! ```
//! `doc` is the document's position in its part ([`KeyIndex::read`] adds the part's first
//! document number). A raw copy's entry points at its original's keys (they are not written
//! twice). Every checksum
//! is verified on each read of what it covers. Each file is written under a temporary name (or as
//! one object) and renamed, the index last: an index names a complete keys file.

use std::io::Write;
use std::ops::Range;

use rayon::prelude::*;
use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::io::work::{keys_file, keys_index_file, keys_tokens_file};
use crate::io::{u32_at, u32s_le, u64_at, varint};
use crate::text::shingle::{ngram_hashes, shingle_key};

const MAGIC: &[u8; 8] = b"CDKEYS02";
const MAGIC_TOKENS: &[u8; 8] = b"CDKEYS03";
const DICTIONARY: &[u8; 8] = b"CDTOKEN1";
const HEADER: u64 = 24;
const ENTRY: usize = 24;
const ENTRY_TOKENS: usize = 28;
const DICTIONARY_HEADER: usize = 28;

/// Writes part `p`'s key files: `write` appends documents to a [`KeyWriter`] in ascending order,
/// then the index is written.
pub(crate) fn write_part(
    work: &OutputDir,
    p: usize,
    write: impl FnOnce(&mut KeyWriter) -> Result<()>,
) -> Result<()> {
    let mut index = Vec::new();
    work.write_with(&keys_file(p), |body| {
        let mut w = KeyWriter {
            body,
            offset: 0,
            entries: Vec::new(),
            bytes: Vec::new(),
        };
        write(&mut w)?;
        index = w.index();
        Ok(())
    })?;
    work.write_bytes(&keys_index_file(p), index)
}

/// Writes part `p`'s key files in the token form: each of `docs` (positions in the part,
/// ascending) with its token hashes (`tokens`, text order); `ngram` is the shingle size their
/// keys are made with when read.
pub(crate) fn write_tokens(
    work: &OutputDir,
    p: usize,
    ngram: usize,
    docs: &[u32],
    tokens: &[Vec<u64>],
) -> Result<()> {
    // Ranks by frequency, ties by hash: the same files from the same tokens. Counted and encoded
    // on every thread (a token hash is already mixed: it is its own hash in the maps).
    let counts = (tokens.par_chunks(256))
        .fold(TokenMap::<u64>::default, |mut counts, docs| {
            for &t in docs.iter().flatten() {
                *counts.entry(t).or_default() += 1;
            }
            counts
        })
        .reduce(TokenMap::default, |mut a, b| {
            for (t, n) in b {
                *a.entry(t).or_default() += n;
            }
            a
        });
    let mut by_rank: Vec<(u64, u64)> = counts.into_iter().collect();
    by_rank.par_sort_unstable_by_key(|&(hash, count)| (std::cmp::Reverse(count), hash));
    let rank: TokenMap<u32> = (by_rank.iter().enumerate())
        .map(|(r, &(hash, _))| (hash, r as u32))
        .collect();
    let encoded: Vec<Vec<u8>> = (tokens.par_iter())
        .map(|ts| {
            let mut bytes = Vec::with_capacity(2 * ts.len());
            for t in ts {
                varint::put(&mut bytes, rank.get(t).copied().unwrap_or_default());
            }
            bytes
        })
        .collect();
    let mut entries = Vec::with_capacity(docs.len() * ENTRY_TOKENS);
    let name = keys_file(p);
    work.write_with(&name, |body| {
        let mut offset = 0u64;
        for ((&doc, ts), bytes) in docs.iter().zip(tokens).zip(&encoded) {
            body.write_all(bytes).map_err(|e| Error::Output {
                path: work.location(&name),
                source: e.into(),
            })?;
            let n = u32::try_from(ts.len()).unwrap_or(u32::MAX);
            entries.extend_from_slice(&doc.to_le_bytes());
            entries.extend_from_slice(&n.to_le_bytes());
            entries.extend_from_slice(&offset.to_le_bytes());
            entries.extend_from_slice(&xxh3_64(bytes).to_le_bytes());
            entries.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            offset += bytes.len() as u64;
        }
        Ok(())
    })?;
    let hashes: Vec<u8> = by_rank.iter().flat_map(|h| h.0.to_le_bytes()).collect();
    let mut dictionary = Vec::with_capacity(DICTIONARY_HEADER + hashes.len());
    dictionary.extend_from_slice(DICTIONARY);
    dictionary.extend_from_slice(&(ngram as u32).to_le_bytes());
    dictionary.extend_from_slice(&(by_rank.len() as u64).to_le_bytes());
    dictionary.extend_from_slice(&xxh3_64(&hashes).to_le_bytes());
    dictionary.extend_from_slice(&hashes);
    work.write_bytes(&keys_tokens_file(p), dictionary)?;
    work.write_bytes(
        &keys_index_file(p),
        index_file(MAGIC_TOKENS, docs.len(), &entries),
    )
}

/// A map keyed by token hashes, which are hashed already.
type TokenMap<V> = std::collections::HashMap<u64, V, std::hash::BuildHasherDefault<TokenHasher>>;

/// The hasher of [`TokenMap`]: a token hash is its own hash.
#[derive(Default)]
struct TokenHasher(u64);

impl std::hash::Hasher for TokenHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// Removes part `p`'s key files, the index first (a removed index names no file), once no later
/// stage reads them; removing removed files is nothing, so a rerun can do it again.
pub(crate) fn release(work: &OutputDir, p: usize) -> Result<()> {
    for name in [keys_index_file(p), keys_tokens_file(p), keys_file(p)] {
        work.remove(&name)?;
    }
    Ok(())
}

/// An index file: its header, then `entries` (`n` of them).
fn index_file(magic: &[u8; 8], n: usize, entries: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER as usize + entries.len());
    out.extend_from_slice(magic);
    out.extend_from_slice(&(n as u64).to_le_bytes());
    out.extend_from_slice(&xxh3_64(entries).to_le_bytes());
    out.extend_from_slice(entries);
    out
}

/// A part's token dictionary: the token hashes by rank, and the shingle size.
#[derive(Debug)]
struct Dictionary {
    ngram: usize,
    hashes: Vec<u64>,
}

impl Dictionary {
    fn read(work: &OutputDir, p: usize) -> Result<Dictionary> {
        let name = keys_tokens_file(p);
        let bad = damaged(work, &name);
        let bytes = work.read(&name)?.ok_or_else(|| bad("missing"))?;
        if bytes.len() < DICTIONARY_HEADER || &bytes[..8] != DICTIONARY {
            return Err(bad("not a token dictionary (bad header)"));
        }
        let (ngram, n) = (u32_at(&bytes, 8) as usize, u64_at(&bytes, 12) as usize);
        let hashes = &bytes[DICTIONARY_HEADER..];
        if hashes.len() != n.saturating_mul(8) || xxh3_64(hashes) != u64_at(&bytes, 20) {
            return Err(bad("checksum mismatch (damaged file)"));
        }
        Ok(Dictionary {
            ngram,
            hashes: hashes.chunks_exact(8).map(|h| u64_at(h, 0)).collect(),
        })
    }

    /// The shingle keys of a document of `tokens` tokens whose ranks are `bytes` (None: a rank
    /// outside the dictionary, a varint cut short, or another number of tokens).
    fn shingle_keys(&self, bytes: &[u8], tokens: usize) -> Option<Vec<u32>> {
        let mut hashes = Vec::with_capacity(tokens);
        let mut i = 0;
        while i < bytes.len() {
            // A varint (LEB128), inline: this loop is the exact stage's cost per token.
            let (mut rank, mut shift) = (0u64, 0);
            loop {
                let b = *bytes.get(i)?;
                i += 1;
                rank |= u64::from(b & 0x7f) << shift;
                if b < 0x80 {
                    break;
                }
                shift += 7;
                if shift > 35 {
                    return None;
                }
            }
            hashes.push(*self.hashes.get(usize::try_from(rank).ok()?)?);
        }
        (hashes.len() == tokens)
            .then(|| ngram_hashes(&hashes, self.ngram).map(shingle_key).collect())
    }
}

/// Appends documents' keys to a part's keys file and keeps their index entries.
pub(crate) struct KeyWriter<'w> {
    body: &'w mut (dyn Write + Send),
    offset: u64,
    /// (doc, keys, offset, checksum), ascending by doc.
    entries: Vec<(u32, u32, u64, u64)>,
    /// The current document's key bytes (reused).
    bytes: Vec<u8>,
}

impl KeyWriter<'_> {
    /// Appends the keys of the part's document `doc` (its position in the part; documents in
    /// ascending order).
    pub(crate) fn push(&mut self, doc: u32, keys: &[u32]) -> std::io::Result<()> {
        let bytes = &mut self.bytes;
        bytes.clear();
        for k in keys {
            bytes.extend_from_slice(&k.to_le_bytes());
        }
        self.body.write_all(bytes)?;
        let n = u32::try_from(keys.len()).map_err(std::io::Error::other)?;
        self.entries.push((doc, n, self.offset, xxh3_64(bytes)));
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// Lists document `doc` with the keys of `original`, an earlier document already pushed.
    pub(crate) fn push_copy(&mut self, doc: u32, original: u32) -> std::io::Result<()> {
        let at = self.entries.binary_search_by_key(&original, |e| e.0);
        let Ok(at) = at else {
            return Err(std::io::Error::other(format!(
                "document {doc} is named a copy of {original}, which has no keys"
            )));
        };
        let (_, n, offset, check) = self.entries[at];
        self.entries.push((doc, n, offset, check));
        Ok(())
    }

    fn index(&self) -> Vec<u8> {
        let mut entries = Vec::with_capacity(self.entries.len() * ENTRY);
        for &(doc, n, offset, check) in &self.entries {
            entries.extend_from_slice(&doc.to_le_bytes());
            entries.extend_from_slice(&n.to_le_bytes());
            entries.extend_from_slice(&offset.to_le_bytes());
            entries.extend_from_slice(&check.to_le_bytes());
        }
        index_file(MAGIC, self.entries.len(), &entries)
    }
}

/// The index of one part's key files: which documents they hold and where their keys are.
#[derive(Debug, Default)]
pub(crate) struct KeyIndex {
    p: usize,
    docs: Vec<u64>,
    ranges: Vec<Range<u64>>,
    checks: Vec<u64>,
    /// The token form: each document's tokens, and the dictionary.
    tokens: Vec<u32>,
    dictionary: Option<Dictionary>,
}

impl KeyIndex {
    /// Reads and checks part `p`'s key index; `first` is the part's first document number.
    pub(crate) fn read(work: &OutputDir, p: usize, first: u64) -> Result<KeyIndex> {
        let name = keys_index_file(p);
        Self::read_if_present(work, p, first)?.ok_or_else(|| damaged(work, &name)("missing"))
    }

    /// [`Self::read`], or None when the index is gone ([`release`]d).
    pub(crate) fn read_if_present(
        work: &OutputDir,
        p: usize,
        first: u64,
    ) -> Result<Option<KeyIndex>> {
        let name = keys_index_file(p);
        let bad = damaged(work, &name);
        let Some(bytes) = work.read(&name)? else {
            return Ok(None);
        };
        let magic = bytes.get(..8).unwrap_or_default();
        let entry = match magic {
            m if m == MAGIC => ENTRY,
            m if m == MAGIC_TOKENS => ENTRY_TOKENS,
            _ => return Err(bad("not a shingle key index (bad header)")),
        };
        let n = u64_at(&bytes, 8) as usize;
        let entries = bytes.get(HEADER as usize..).unwrap_or_default();
        if entries.len() != n.saturating_mul(entry) || xxh3_64(entries) != u64_at(&bytes, 16) {
            return Err(bad("checksum mismatch (damaged file)"));
        }
        let tokens = entry == ENTRY_TOKENS;
        let mut out = KeyIndex {
            p,
            docs: Vec::with_capacity(n),
            ranges: Vec::with_capacity(n),
            checks: Vec::with_capacity(n),
            tokens: Vec::new(),
            dictionary: tokens.then(|| Dictionary::read(work, p)).transpose()?,
        };
        for e in entries.chunks_exact(entry) {
            let (count, offset) = (u32_at(e, 4), u64_at(e, 8));
            let bytes = match tokens {
                true => u64::from(u32_at(e, 24)),
                false => 4 * u64::from(count),
            };
            out.docs.push(first + u64::from(u32_at(e, 0)));
            out.ranges.push(offset..offset + bytes);
            out.checks.push(u64_at(e, 16));
            if tokens {
                out.tokens.push(count);
            }
        }
        if out.docs.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad("documents out of order (damaged file)"));
        }
        Ok(Some(out))
    }

    /// Whether the files hold document `doc`'s keys.
    pub(crate) fn holds(&self, doc: u64) -> bool {
        self.docs.binary_search(&doc).is_ok()
    }

    /// The keys of `docs` (ascending, each held), read and checked.
    pub(crate) fn keys(&self, work: &OutputDir, docs: &[u64]) -> Result<Vec<Vec<u32>>> {
        let name = keys_file(self.p);
        let bad = damaged(work, &name);
        let at: Vec<usize> = docs
            .iter()
            .map(|d| self.docs.binary_search(d))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| Error::Internal(format!("{name}: a document is not held")))?;
        let ranges: Vec<Range<u64>> = at.iter().map(|&i| self.ranges[i].clone()).collect();
        let read = work.read_ranges(&name, &ranges)?;
        let one = |j: usize| {
            let b = read.get(j);
            if b.len() as u64 != ranges[j].end - ranges[j].start {
                return Err(bad("shorter than its index (damaged file)"));
            }
            if xxh3_64(b) != self.checks[at[j]] {
                return Err(bad("checksum mismatch (damaged file)"));
            }
            match &self.dictionary {
                None => Ok(u32s_le(b)),
                Some(d) => d
                    .shingle_keys(b, self.tokens[at[j]] as usize)
                    .ok_or_else(|| bad("a token outside its dictionary (damaged file)")),
            }
        };
        // Keys are copied; tokens are decoded and rolled, worth the threads.
        match self.dictionary {
            None => (0..at.len()).map(one).collect(),
            Some(_) => (0..at.len())
                .into_par_iter()
                .with_min_len(64)
                .map(one)
                .collect(),
        }
    }
}

/// A key file's error: `msg` about the file `name` of the work directory.
fn damaged<'a>(work: &'a OutputDir, name: &'a str) -> impl Fn(&str) -> Error + 'a {
    move |msg: &str| Error::WorkFile {
        path: work.location(name),
        source: msg.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 100,
            rng_seed: proptest::test_runner::RngSeed::Fixed(67),
            failure_persistence: None,
            ..Default::default()
        })]
        /// The token form reads back, for every document, the shingle keys its tokens make:
        /// any token counts (none, fewer than n, many), repeats, hashes across the whole range
        /// and any shingle size.
        #[test]
        fn the_token_form_reads_back_the_shingle_keys_of_its_tokens(
            tokens in proptest::collection::vec(
                proptest::collection::vec(proptest::prop_oneof![0u64..40, proptest::num::u64::ANY], 0..300),
                1..20,
            ),
            ngram in 1usize..8,
            first in proptest::prop_oneof![0u64..10, (1u64 << 33)..(1 << 34)],
        ) {
            let dir = std::env::temp_dir().join(format!("cd-tokens-{}-{ngram}", std::process::id()));
            let work = OutputDir::Local(dir.clone());
            let docs: Vec<u32> = (0..tokens.len() as u32).map(|d| 3 * d + 1).collect();
            write_tokens(&work, 0, ngram, &docs, &tokens).unwrap();
            let index = KeyIndex::read(&work, 0, first).unwrap();
            let asked: Vec<u64> = docs.iter().map(|&d| first + u64::from(d)).collect();
            let got = index.keys(&work, &asked).unwrap();
            for (g, t) in got.iter().zip(&tokens) {
                let want: Vec<u32> = ngram_hashes(t, ngram).map(shingle_key).collect();
                proptest::prop_assert_eq!(g, &want);
            }
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    #[test]
    fn the_token_form_ranks_frequent_tokens_first_and_catches_damage() {
        let dir = std::env::temp_dir().join(format!("cd-tokens-{}", std::process::id()));
        let work = OutputDir::Local(dir.clone());
        let tokens = vec![vec![900u64, 7, 7, 5, 7], vec![5, 7, 1 << 40]];
        write_tokens(&work, 1, 2, &[0, 2], &tokens).unwrap();
        // 7 (three times) is rank 0, 5 (twice) rank 1, then 900 < 2^40 by hash: one byte each.
        let body = std::fs::read(dir.join(keys_file(1))).unwrap();
        assert_eq!(body, [2, 0, 0, 1, 0, 1, 0, 3]);
        let index = KeyIndex::read(&work, 1, 0).unwrap();
        assert!(index.holds(2) && !index.holds(1));
        let want: Vec<u32> = ngram_hashes(&tokens[1], 2).map(shingle_key).collect();
        assert_eq!(index.keys(&work, &[2]).unwrap(), [want]);
        // A rank outside the dictionary with a matching checksum, and a damaged dictionary.
        let mut dict = std::fs::read(dir.join(keys_tokens_file(1))).unwrap();
        let short = &dict[..DICTIONARY_HEADER + 8 * 3];
        let mut cut = short.to_vec();
        cut[12..20].copy_from_slice(&3u64.to_le_bytes());
        let sum = xxh3_64(&cut[DICTIONARY_HEADER..]);
        cut[20..28].copy_from_slice(&sum.to_le_bytes());
        work.write_bytes(&keys_tokens_file(1), cut).unwrap();
        let e = KeyIndex::read(&work, 1, 0)
            .unwrap()
            .keys(&work, &[2])
            .unwrap_err();
        assert!(e.to_string().contains("outside its dictionary"), "{e}");
        let last = dict.len() - 1;
        dict[last] ^= 1;
        work.write_bytes(&keys_tokens_file(1), dict).unwrap();
        let e = KeyIndex::read(&work, 1, 0).unwrap_err().to_string();
        assert!(e.contains("p00001.tokens") && e.contains("checksum"), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn round_trip_copies_and_damage() {
        let dir = std::env::temp_dir().join(format!("cd-keys-{}", std::process::id()));
        let work = OutputDir::Local(dir.clone());
        let keys = [vec![5, 1, 5], vec![], vec![u32::MAX]];
        write_part(&work, 0, |w| {
            let io = |e: std::io::Error| Error::Internal(e.to_string());
            w.push(3, &keys[0]).map_err(io)?;
            w.push(7, &keys[1]).map_err(io)?;
            w.push_copy(8, 3).map_err(io)?;
            w.push(9, &keys[2]).map_err(io)?;
            assert!(w.push_copy(10, 4).is_err());
            Ok(())
        })
        .unwrap();
        let index = KeyIndex::read(&work, 0, 0).unwrap();
        assert!(index.holds(8) && !index.holds(4));
        let got = index.keys(&work, &[3, 8, 9]).unwrap();
        assert_eq!(got, vec![keys[0].clone(), keys[0].clone(), keys[2].clone()]);
        assert_eq!(index.keys(&work, &[7]).unwrap(), vec![Vec::<u32>::new()]);
        // Read as part of a run whose part starts at document 100: the same keys, numbered so.
        let shifted = KeyIndex::read(&work, 0, 100).unwrap();
        assert!(shifted.holds(108) && !shifted.holds(8));
        assert_eq!(shifted.keys(&work, &[109]).unwrap(), vec![keys[2].clone()]);
        // A part beyond 2^32 documents.
        let far = KeyIndex::read(&work, 0, 1 << 33).unwrap();
        assert!(far.holds((1 << 33) + 9) && !far.holds(9));
        assert!(index.keys(&work, &[4]).is_err());
        // A flipped key byte is caught when that document is read; a flipped index byte at once.
        let body = std::fs::read(dir.join(keys_file(0))).unwrap();
        let mut b = body.clone();
        let last = b.len() - 1;
        b[last] ^= 1;
        work.write_bytes(&keys_file(0), b).unwrap();
        assert!(index.keys(&work, &[3]).is_ok());
        let e = index.keys(&work, &[9]).unwrap_err().to_string();
        assert!(e.contains("p00000.keys") && e.contains("checksum"), "{e}");
        let mut b = std::fs::read(dir.join(keys_index_file(0))).unwrap();
        b[HEADER as usize + 1] ^= 1;
        work.write_bytes(&keys_index_file(0), b).unwrap();
        assert!(KeyIndex::read(&work, 0, 0).is_err());
        let e = KeyIndex::read(&work, 1, 0).unwrap_err().to_string();
        assert!(e.contains("p00001.index") && e.contains("missing"), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
