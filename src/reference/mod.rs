//! Benchmark decontamination (`--reference`): a read-only set of benchmark items that tonight's
//! documents are matched against; a document holding enough of an item is dropped, whatever its
//! duplicates (`contaminated_by`, `contamination` in the manifest).
//!
//! The plan lists the reference files with their sizes and footer fingerprints ([`list()`]); each
//! signatures task loads the reference ([`Reference::load`]: the files read again and checked
//! unchanged, the [`Table`] built) and matches each document's tokens as the signature kernel
//! makes them. Tasks of one process share one loaded reference, so a local run reads it once.
//! No item ever enters `--index`: the reference is read again each night. What is derived from
//! it is cached in the index directory (`reference-cache.bin`, [`CACHE`]), keyed by the files'
//! fingerprints and the matching settings, so a night with the reference of the night before
//! reads the table instead of building it; a cache of another key, or damaged, is rebuilt.

mod chunks;
mod files;
mod table;

pub(crate) use chunks::{ChunkBuilder, ItemChunk, Usable, BOILERPLATE_ITEMS, CHUNK};
pub(crate) use files::{items_at, items_of, list, ItemRow};
pub(crate) use table::{Hit, Probes, Table};

use files::{check_unchanged, read_items};

use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::config::{ReferenceConfig, Tokenizer};
use crate::error::Result;
use crate::io::output::OutputDir;
use crate::text::shingle::{token_hashes_of, Scratch};

/// A reference file as the plan recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ReferenceFile {
    pub file: String,
    pub rows: u64,
    pub bytes: u64,
    pub fingerprint: String,
}

/// What the reference holds, per file (for the summary).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ItemCounts {
    pub file: String,
    /// Rows of the file.
    pub items: u64,
    /// Items that can be matched.
    pub matched: u64,
    /// Null or empty texts.
    pub empty: u64,
    /// Fewer tokens than `--reference-ngram`: too short to tell from ordinary prose.
    pub too_short: u64,
    /// The same text (as tokens) as an earlier item, which stands for both.
    pub repeated_text: u64,
    /// Every n-gram is in [`BOILERPLATE_ITEMS`] or more items.
    pub boilerplate_only: u64,
    /// Rows whose id an earlier row already has (both are matched; `contaminated_by` names the
    /// id, `explain` shows every item of that id).
    pub repeated_id: u64,
    /// Documents of the run holding one of the file's items (set by the merge).
    #[serde(default)]
    pub documents_flagged: u64,
    /// The file's items found in a document of the run (set by the merge).
    #[serde(default)]
    pub items_hit: u64,
}

/// Documents of a run holding one reference item.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ItemHits {
    /// Position in the reference (file, then row order).
    pub item: u32,
    pub id: String,
    pub file: String,
    pub documents: u64,
}

/// What `--reference` found in a run (the summary's `contamination`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ContaminationSummary {
    /// Documents holding a reference item (all dropped).
    pub documents: u64,
    /// Of those, documents also dropped as a near-duplicate (`duplicate_of` set).
    pub also_duplicates: u64,
    /// Per reference file: its items and what they flagged.
    pub files: Vec<ItemCounts>,
    /// The items found in the most documents (ties to reference order).
    pub most_hit: Vec<ItemHits>,
}

/// Items listed in [`ContaminationSummary::most_hit`].
pub(crate) const MOST_HIT: usize = 20;

impl ContaminationSummary {
    /// The summary from every signatures task's counts (`hits` per task, `files` from any task)
    /// and the documents also dropped as near-duplicates.
    pub(crate) fn gather(
        files: Vec<ItemCounts>,
        hits: impl IntoIterator<Item = ItemHits>,
        also_duplicates: u64,
    ) -> ContaminationSummary {
        let mut by: std::collections::BTreeMap<u32, ItemHits> = Default::default();
        for h in hits {
            by.entry(h.item)
                .and_modify(|e| e.documents += h.documents)
                .or_insert(h);
        }
        let mut files = files;
        for h in by.values() {
            if let Some(f) = files.iter_mut().find(|f| f.file == h.file) {
                f.documents_flagged += h.documents;
                f.items_hit += 1;
            }
        }
        let mut most: Vec<ItemHits> = by.into_values().collect();
        most.sort_by_key(|h| (std::cmp::Reverse(h.documents), h.item));
        ContaminationSummary {
            documents: files.iter().map(|f| f.documents_flagged).sum(),
            also_duplicates,
            files,
            most_hit: most.into_iter().take(MOST_HIT).collect(),
        }
    }
}

/// A loaded reference: items in file then row order.
pub(crate) struct Reference {
    pub files: Vec<ReferenceFile>,
    /// Each item's id, and the file it is in (position in `files`).
    pub ids: Vec<String>,
    pub file_of: Vec<u32>,
    pub table: Table,
    pub counts: Vec<ItemCounts>,
}

/// The cache file of the built reference in an index directory (one; another reference
/// replaces it).
pub(crate) const CACHE: &str = "reference-cache.bin";
const CACHE_MAGIC: &[u8; 8] = b"CDREF\x01\x00\x00";

/// The loaded reference of the process, by what it was loaded from: the signatures tasks of a
/// local run share one.
/// The key, the reference, and whether the index's cache holds it (read from it or written).
type Loaded = Option<(String, Arc<Reference>, bool)>;
static LOADED: Mutex<Loaded> = Mutex::new(None);

impl Reference {
    /// Loads the reference of `files` (as the plan recorded them; each is checked unchanged)
    /// matched with `tokenizer`: from `cache` (an index directory) when it holds this one, else
    /// built, and written there when `writes_cache` (one task of a run writes it: hundreds of
    /// tasks building it at once on the first night would each upload it). The process keeps
    /// the last one loaded for its next task.
    pub(crate) fn load(
        files: &[ReferenceFile],
        cfg: &ReferenceConfig,
        tokenizer: Tokenizer,
        cache: Option<&OutputDir>,
        writes_cache: bool,
    ) -> Result<Arc<Reference>> {
        // The globs do not matter, only the files they gave.
        let matching = (&cfg.id_column, &cfg.text_column, cfg.ngram, cfg.threshold);
        let key = serde_json::json!([files, matching, tokenizer, BOILERPLATE_ITEMS]).to_string();
        // The lock is never held while a reference is read or built: that work runs on rayon,
        // whose threads may meanwhile take up another task that asks for the reference, and a
        // thread blocked on a lock it holds itself would never wake. Two tasks of one process
        // starting together may each build it; the last one built is kept.
        let lock = || LOADED.lock().unwrap_or_else(|p| p.into_inner());
        let hit = match lock().as_ref() {
            Some((k, r, on_disk)) if *k == key => Some((r.clone(), *on_disk)),
            _ => None,
        };
        let (r, mut on_disk) = match hit {
            Some(hit) => hit,
            None => match cache
                .map(|dir| Reference::read_cache(dir, &key, files))
                .transpose()?
            {
                Some(Some(r)) => (Arc::new(r), true),
                _ => (Arc::new(Reference::read(files, cfg, tokenizer)?), false),
            },
        };
        // Built here (by this task or another of the process): the writing task writes it. One
        // that cannot be written is rebuilt next time; the night goes on.
        if let Some(dir) = cache.filter(|_| writes_cache && !on_disk) {
            on_disk = dir.write_bytes(CACHE, r.encode(&key)).is_ok();
        }
        *lock() = Some((key, r.clone(), on_disk));
        Ok(r)
    }

    /// The cached reference in `dir` if it is the one of `key` and intact (the files still
    /// checked unchanged).
    fn read_cache(
        dir: &OutputDir,
        key: &str,
        files: &[ReferenceFile],
    ) -> Result<Option<Reference>> {
        let Ok(Some(bytes)) = dir.read(CACHE) else {
            return Ok(None);
        };
        let Some(r) = Reference::decode(&bytes, key, files) else {
            return Ok(None);
        };
        for f in files {
            check_unchanged(f)?;
        }
        Ok(Some(r))
    }

    /// The reference as the cache holds it: magic, header length, a JSON header (key, ids,
    /// files, counts), the table, and an xxh3-64 of all before it.
    fn encode(&self, key: &str) -> Vec<u8> {
        let header = serde_json::json!({
            "key": key, "ids": self.ids, "file_of": self.file_of, "counts": self.counts,
        })
        .to_string();
        let mut out = Vec::with_capacity(self.table.bytes() + header.len() + 64);
        out.extend_from_slice(CACHE_MAGIC);
        out.extend_from_slice(&(header.len() as u64).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        self.table.encode(&mut out);
        let sum = xxhash_rust::xxh3::xxh3_64(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// [`Reference::encode`]'s bytes back, when they are intact and of `key`.
    fn decode(bytes: &[u8], key: &str, files: &[ReferenceFile]) -> Option<Reference> {
        let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(8)?)?;
        if xxhash_rust::xxh3::xxh3_64(body).to_le_bytes() != *sum || !body.starts_with(CACHE_MAGIC)
        {
            return None;
        }
        let len = u64::from_le_bytes(body.get(8..16)?.try_into().ok()?) as usize;
        let header: serde_json::Value = serde_json::from_slice(body.get(16..16 + len)?).ok()?;
        if header["key"].as_str() != Some(key) {
            return None;
        }
        let table = Table::decode(body.get(16 + len..)?)?;
        let ids: Vec<String> = serde_json::from_value(header["ids"].clone()).ok()?;
        let file_of: Vec<u32> = serde_json::from_value(header["file_of"].clone()).ok()?;
        let counts: Vec<ItemCounts> = serde_json::from_value(header["counts"].clone()).ok()?;
        (ids.len() == table.len() && file_of.len() == ids.len()).then(|| Reference {
            files: files.to_vec(),
            ids,
            file_of,
            table,
            counts,
        })
    }

    /// Reads and tokenises every item and builds the table.
    fn read(
        files: &[ReferenceFile],
        cfg: &ReferenceConfig,
        tokenizer: Tokenizer,
    ) -> Result<Reference> {
        // Items are tokenised in runs of CHUNK, each run's n-grams made as its texts are
        // tokenised and grouped in one buffer: no token list or per-item list is held.
        let n = cfg.ngram;
        let read: Vec<(Vec<String>, Vec<ItemChunk>)> = files
            .par_iter()
            .map(|f| {
                let (ids, texts) = read_items(f, cfg)?;
                let chunks = (0..texts.len().div_ceil(CHUNK))
                    .into_par_iter()
                    .map_init(
                        || (Scratch::default(), ChunkBuilder::default()),
                        |(scratch, chunk), c| {
                            for i in c * CHUNK..((c + 1) * CHUNK).min(texts.len()) {
                                let text = texts.get(i);
                                chunk.push(text.map(|t| token_hashes_of(t, tokenizer, scratch)), n);
                            }
                            chunk.finish()
                        },
                    )
                    .collect();
                Ok((ids, chunks))
            })
            .collect::<Result<_>>()?;
        let mut ids = Vec::new();
        let mut file_of = Vec::new();
        let mut chunks = Vec::new();
        for (i, (fi, fc)) in read.into_iter().enumerate() {
            file_of.extend(std::iter::repeat_n(i as u32, fi.len()));
            ids.extend(fi);
            chunks.extend(fc);
        }
        let table = Table::from_chunks(chunks, n, cfg.threshold);
        let mut counts: Vec<ItemCounts> = files
            .iter()
            .map(|f| ItemCounts {
                file: f.file.clone(),
                items: f.rows,
                ..ItemCounts::default()
            })
            .collect();
        let mut seen_ids: ahash::AHashSet<&str> = ahash::AHashSet::new();
        for (i, id) in ids.iter().enumerate() {
            let c = &mut counts[file_of[i] as usize];
            match table.usable(i) {
                Usable::Yes => c.matched += 1,
                Usable::Empty => c.empty += 1,
                Usable::TooShort => c.too_short += 1,
                Usable::RepeatedText => c.repeated_text += 1,
                Usable::BoilerplateOnly => c.boilerplate_only += 1,
            }
            if !seen_ids.insert(id) {
                c.repeated_id += 1;
            }
        }
        Ok(Reference {
            files: files.to_vec(),
            ids,
            file_of,
            table,
            counts,
        })
    }
}
