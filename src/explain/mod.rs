//! `corpus-dedup explain OUT --id ID`: the cluster of one document, for a person deciding whether
//! a drop was right.
//!
//! From the manifest: the document's cluster, its kept document and every member with the
//! similarity the run recorded. From the input shards the manifest names (which must be the ones
//! the run read): the texts, each member's similarity to the keeper recomputed two ways (the
//! MinHash estimate from signatures made with the run's settings, and the exact Jaccard of the
//! shingle sets) and a word diff against the keeper.

use serde::Serialize;

use crate::config::{ClusterRule, Config, Method};
use crate::error::{Error, Result};
use crate::results::{in_output, read_texts, Manifest, RowGroups};
use crate::text::diff::{word_diff, Piece};
use crate::text::sets::jaccard;
use crate::text::shingle::{shingle_hashes, shingle_key, shingle_set, Scratch};
use crate::visible::visible;

mod contamination;
mod spans;

pub(crate) use contamination::Contamination;
use contamination::{contamination, contamination_text};
pub(crate) use spans::RemovedParagraph;
use spans::{paragraphs_text, removed_paragraphs};

/// One member of the cluster.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Member {
    pub id: String,
    pub file: String,
    pub row: u64,
    pub keep: bool,
    /// The similarity to the keeper the run recorded (null for the keeper; SimHash: 1 -
    /// Hamming distance / 64).
    pub similarity: Option<f32>,
    /// MinHash: the signature estimate of the Jaccard similarity to the keeper, recomputed
    /// (SimHash: null, the run's Hamming similarity is `similarity`).
    pub estimate: Option<f64>,
    /// The exact Jaccard similarity of the shingle sets to the keeper's.
    pub jaccard: Option<f64>,
    /// Bytes of text.
    pub text_bytes: usize,
    /// Word diff from the keeper's text to this one (empty for the keeper).
    pub diff: Vec<Piece>,
}

/// The kept document of the cluster.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Keeper {
    pub id: String,
    /// `--index` runs: the batch the keeper is in (this run's name when it is in this run).
    pub batch: Option<String>,
    /// Whether the keeper is a document of this run (else it is in an earlier batch, whose
    /// index records its shard and row: its text is read from there).
    pub in_this_run: bool,
    /// An earlier batch's keeper: where its text was read from (shard, row).
    pub origin: Option<(String, u64)>,
    /// An earlier batch's keeper whose text could not be read: why (the shard is gone or
    /// changed, the batch expired...).
    pub unavailable: Option<String>,
}

/// The answer to `explain`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Explanation {
    pub id: String,
    pub keep: bool,
    pub cluster_id: Option<u64>,
    pub cluster_size: usize,
    pub keeper: Keeper,
    pub method: Method,
    /// How the run made clusters: `keeper` (a kept document and the documents dropped against
    /// it) or `components`.
    pub cluster_rule: ClusterRule,
    /// MinHash: the Jaccard threshold.
    pub threshold: f64,
    /// SimHash: the largest Hamming distance of a duplicate.
    pub hamming: usize,
    /// Members shown (the keeper first, then the asked document, then the others in manifest
    /// order, up to the limit).
    pub members: Vec<Member>,
    /// Members left out by the limit.
    pub members_not_shown: usize,
    /// `--reference`: the benchmark item the document holds, if any.
    pub contamination: Option<Contamination>,
    /// `--paragraphs`: the paragraphs removed from the document, and where each is retained.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removed_paragraphs: Vec<RemovedParagraph>,
}

/// Explains the document `id` of the run in `out`, showing at most `limit` members.
pub(crate) fn explain(out: &str, id: &str, limit: usize) -> Result<Explanation> {
    let m = Manifest::read(&in_output(out, "manifest.parquet"))?;
    let c = m.columns()?;
    let ids = c.id;
    let Some(at) = ids.iter().position(|x| x == Some(id)) else {
        return Err(Error::UnknownId {
            id: id.to_string(),
            manifest: m.location.clone(),
        });
    };
    let (cluster, keep, files, rows) = (c.cluster, c.keep, c.file, c.row);
    let (sims, dup_of, batch) = (c.similarity, c.duplicate_of, c.batch);
    let cluster_id = cluster.get(at);
    let mut members: Vec<usize> = match cluster_id {
        Some(c) => (0..m.frame.height())
            .filter(|&i| cluster.get(i) == Some(c))
            .collect(),
        None => vec![at],
    };
    let size = members.len();
    let kept_member = members.iter().copied().find(|&i| keep.get(i) == Some(true));
    let mut keeper = match kept_member {
        Some(k) => Keeper {
            id: ids.get(k).unwrap_or_default().to_string(),
            batch: m.config.batch.clone(),
            in_this_run: true,
            ..Keeper::default()
        },
        // No member kept: the keeper is in an earlier batch of the index (or the document is
        // a singleton and is its own keeper).
        None => match dup_of.get(at) {
            Some(d) => Keeper {
                id: d.to_string(),
                batch: batch.and_then(|b| b.get(at)).map(str::to_string),
                in_this_run: false,
                ..Keeper::default()
            },
            None => Keeper {
                id: id.to_string(),
                batch: m.config.batch.clone(),
                in_this_run: true,
                ..Keeper::default()
            },
        },
    };
    // Keeper first, then the asked document, then the rest.
    members.sort_by_key(|&i| (Some(i) != kept_member, i != at, i));
    let shown: Vec<usize> = members.iter().copied().take(limit.max(2)).collect();
    let shown_files: Vec<&str> = shown.iter().filter_map(|&i| files.get(i)).collect();
    let place = |i: usize| (files.get(i).unwrap_or(""), rows.get(i).unwrap_or(0));
    let text = read_texts(&m, &RowGroups::of(&m, Some(&shown_files))?, &shown, &place)?;
    // A keeper in an earlier batch: its text from the shard the index recorded for it.
    let earlier = (!keeper.in_this_run).then(|| earlier_keeper(out, &m.config, &keeper));
    let mut keeper_text = kept_member.and_then(|k| text.get(&k).cloned().flatten());
    match earlier {
        Some(Ok((input, row, t))) => {
            keeper.origin = Some((input, row));
            keeper_text = Some(t);
        }
        Some(Err(why)) => keeper.unavailable = Some(why),
        None => {}
    }
    let sim = Similarity::new(&m.config);
    let keeper_sets = keeper_text.as_deref().map(|t| sim.sets(t));
    let earlier_member = keeper.origin.as_ref().map(|(file, row)| Member {
        id: keeper.id.clone(),
        file: file.clone(),
        row: *row,
        keep: true,
        similarity: None,
        estimate: None,
        jaccard: None,
        text_bytes: keeper_text.as_ref().map_or(0, String::len),
        diff: Vec::new(),
    });
    let members_out = earlier_member
        .into_iter()
        .chain(shown.iter().map(|&i| {
            let t = text.get(&i).cloned().flatten().unwrap_or_default();
            let is_keeper = Some(i) == kept_member;
            let (estimate, jacc, diff) = match (&keeper_sets, &keeper_text) {
                (Some(ks), Some(kt)) if !is_keeper => {
                    let mine = sim.sets(&t);
                    (
                        sim.estimate(ks, &mine),
                        sim.jaccard(ks, &mine),
                        word_diff(kt, &t),
                    )
                }
                _ => (None, None, Vec::new()),
            };
            Member {
                id: ids.get(i).unwrap_or_default().to_string(),
                file: files.get(i).unwrap_or_default().to_string(),
                row: rows.get(i).unwrap_or_default(),
                keep: keep.get(i).unwrap_or(true),
                similarity: sims.get(i),
                estimate,
                jaccard: jacc,
                text_bytes: t.len(),
                diff,
            }
        }))
        .collect();
    Ok(Explanation {
        id: id.to_string(),
        keep: keep.get(at).unwrap_or(true),
        cluster_id,
        // The run's count (with an indexed keeper: its copies, not only tonight's members).
        cluster_size: c
            .cluster_size
            .and_then(|s| s.get(at))
            .map_or(size, |s| s as usize),
        keeper,
        method: m.config.method,
        cluster_rule: m.config.cluster,
        threshold: m.config.threshold,
        hamming: m.config.hamming,
        members: members_out,
        members_not_shown: size - shown.len(),
        contamination: contamination(&m, &c, at, text.get(&at).cloned().flatten()),
        removed_paragraphs: removed_paragraphs(&m, at, text.get(&at).and_then(|t| t.as_deref()))?,
    })
}

/// The shard, row and text of a keeper in an earlier batch of the run's index (named in
/// `out`'s summary: the manifest leaves locations out), or why they cannot be had.
fn earlier_keeper(
    out: &str,
    cfg: &Config,
    keeper: &Keeper,
) -> std::result::Result<(String, u64, String), String> {
    let (Some(index), Some(batch)) = (crate::results::run_index(out), &keeper.batch) else {
        return Err(format!("{} names no index", in_output(out, "summary.json")));
    };
    let found = crate::index::origins::find(&index, batch, &keeper.id);
    let (input, row) = found.map_err(|e| e.to_string())?;
    input.check_unchanged().map_err(|e| match e {
        Error::ShardChanged { file, what } => format!(
            "batch '{batch}' read it from '{file}', which has changed since ({what}); restore that shard to see the text"
        ),
        e => e.to_string(),
    })?;
    let (text, id) =
        crate::results::read_row_at(cfg, &input.file, row).map_err(|e| e.to_string())?;
    // A shard rewritten with its rows moved can keep its footer (same sizes and statistics):
    // the row's id says whether it is still the kept document.
    if let Some(id) = id.filter(|id| *id != keeper.id) {
        return Err(format!(
            "batch '{batch}' read it from row {row} of '{}', which now holds '{id}': the shard has changed since; restore it to see the text",
            input.file
        ));
    }
    Ok((input.file, row, text.unwrap_or_default()))
}

/// Shingle sets and similarities with the run's settings.
pub(crate) struct Similarity {
    cfg: Config,
    perms: Option<crate::minhash::Permutations>,
}

/// A document's shingle keys: text order (for the signature) and as a sorted set.
pub(crate) struct Sets {
    keys: Vec<u32>,
    set: Vec<u64>,
}

impl Similarity {
    pub(crate) fn new(cfg: &Config) -> Self {
        let perms = (cfg.method == Method::Minhash).then(|| crate::minhash::Permutations::of(cfg));
        Similarity {
            cfg: cfg.clone(),
            perms,
        }
    }

    /// The shingles of `text` as the run made them.
    pub(crate) fn sets(&self, text: &str) -> Sets {
        let (tok, n) = (self.cfg.effective_tokenizer(), self.cfg.ngram);
        let mut scratch = Scratch::default();
        let mut hashes = Vec::new();
        shingle_hashes(text, tok, n, &mut scratch, &mut hashes);
        let keys = hashes.iter().map(|&h| shingle_key(h)).collect();
        let mut set = Vec::new();
        shingle_set(text, tok, n, &mut scratch, &mut set);
        Sets { keys, set }
    }

    /// MinHash: the signature estimate of the Jaccard similarity (None for SimHash or an empty
    /// document).
    pub(crate) fn estimate(&self, a: &Sets, b: &Sets) -> Option<f64> {
        let perms = self.perms.as_ref()?;
        if a.keys.is_empty() || b.keys.is_empty() {
            return None;
        }
        let mut sa = vec![0u32; perms.len()];
        let mut sb = vec![0u32; perms.len()];
        perms.signature(&a.keys, &mut sa);
        perms.signature(&b.keys, &mut sb);
        Some(crate::minhash::estimate_jaccard(&sa, &sb))
    }

    /// The exact Jaccard similarity of the shingle sets (None when one is empty).
    pub(crate) fn jaccard(&self, a: &Sets, b: &Sets) -> Option<f64> {
        (!a.set.is_empty() && !b.set.is_empty()).then(|| jaccard(&a.set, &b.set))
    }
}

/// The explanation for a person: `color` for a terminal. Ids, file names and texts come from
/// the corpus: their control characters are shown, never emitted ([`visible`]).
pub(crate) fn to_text(e: &Explanation, color: bool) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let status = if e.keep { "kept" } else { "dropped" };
    let _ = writeln!(s, "{} is {status}.", visible(&e.id));
    if let Some(c) = &e.contamination {
        contamination_text(&mut s, c, color);
    }
    if !e.removed_paragraphs.is_empty() {
        paragraphs_text(&mut s, e);
    }
    if e.cluster_id.is_none() && e.keeper.in_this_run {
        let _ = writeln!(s, "It has no near-duplicate in this run.");
        return s;
    }
    let batch = e
        .keeper
        .batch
        .as_deref()
        .map(|b| format!(" (batch {})", visible(b)))
        .unwrap_or_default();
    if !e.keeper.in_this_run {
        let kept = visible(&e.keeper.id);
        let _ = match &e.keeper.origin {
            Some((file, row)) => writeln!(
                s,
                "Its kept document is {kept}{batch}, in an earlier batch of the index, read from {}:{row}.",
                visible(file)
            ),
            None => writeln!(
                s,
                "Its kept document is {kept}{batch}, in an earlier batch of the index; its text cannot be shown: {}",
                visible(e.keeper.unavailable.as_deref().unwrap_or("its origin is not known"))
            ),
        };
        let _ = writeln!(
            s,
            "Copies so far: {} (the kept document and every document dropped against it, in any night).",
            e.cluster_size
        );
    } else {
        let cluster = e.cluster_id.map_or("-".into(), |c| c.to_string());
        let (n, k) = (e.cluster_size, visible(&e.keeper.id));
        let _ = writeln!(
            s,
            "{}. {}.",
            match e.cluster_rule {
                ClusterRule::Keeper => format!(
                    "Cluster {cluster}: {k}{batch}, kept, and the {} documents dropped against it",
                    n.saturating_sub(1)
                ),
                ClusterRule::Components => {
                    format!("Cluster {cluster} has {n} documents; the kept one is {k}{batch}")
                }
            },
            match e.method {
                Method::Minhash => format!("MinHash, threshold {}", e.threshold),
                Method::Simhash => format!(
                    "SimHash, Hamming distance at most {} (similarity {:.3} or more)",
                    e.hamming,
                    crate::simhash::similarity(e.hamming as u32)
                ),
            }
        );
    }
    let num = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<5} {:>10} {:>9} {:>8} {:>8}  id (file:row)",
        "", "similarity", "estimate", "jaccard", "bytes"
    );
    for mb in &e.members {
        let _ = writeln!(
            s,
            "{:<5} {:>10} {:>9} {:>8} {:>8}  {} ({}:{})",
            if mb.keep { "keep" } else { "drop" },
            num(mb.similarity.map(f64::from)),
            num(mb.estimate),
            num(mb.jaccard),
            mb.text_bytes,
            visible(&mb.id),
            visible(&mb.file),
            mb.row
        );
    }
    if e.members_not_shown > 0 {
        let _ = writeln!(s, "... and {} more (--limit)", e.members_not_shown);
    }
    for mb in e.members.iter().filter(|m| !m.diff.is_empty()) {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "--- {} (kept) -> {} ---",
            visible(&e.keeper.id),
            visible(&mb.id)
        );
        let body = if mb
            .diff
            .iter()
            .all(|p| matches!(p, Piece::Same(_) | Piece::Gap(_)))
        {
            "(the same words; they differ only in case, spacing or punctuation)".to_string()
        } else if color {
            crate::text::diff::to_ansi(&mb.diff)
        } else {
            crate::text::diff::to_plain(&mb.diff)
        };
        let _ = writeln!(s, "{}", body.trim());
    }
    s
}
