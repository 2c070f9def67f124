//! The report's tallies: documents and text bytes, all and dropped, per slice of the input (a
//! file, a script, a `--report-group` value) and per text length. The manifest tasks count them
//! ([`crate::stages::manifest`]), the merge sums them into the summary, the report draws them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Documents and text bytes, all and dropped, of one slice of the input (a file, a script
/// class, a `--report-group` value).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Tally {
    pub documents: u64,
    pub dropped: u64,
    pub bytes: u64,
    pub bytes_dropped: u64,
    /// `--paragraphs`: paragraphs and bytes removed from kept documents.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub paragraphs_removed: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub paragraph_bytes_removed: u64,
    /// `--substrings`: bytes removed from kept documents by the substring rule (not counting
    /// those a removed paragraph takes).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub substring_bytes_removed: u64,
    /// `--paragraphs`: kept documents left with no text but whitespace.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub documents_emptied: u64,
}

/// `--paragraphs`, `--substrings`: what is removed from one kept document.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Cut {
    /// Paragraphs removed, and the bytes they take.
    pub paragraphs: u64,
    pub bytes: u64,
    /// Bytes the substring rule removes besides.
    pub substring_bytes: u64,
    /// Every paragraph removed, and no other text: whitespace is all that is left.
    pub emptied: bool,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

impl Tally {
    /// Counts a document of `bytes`, dropped or not, with what `--paragraphs` removed from it.
    pub(crate) fn add(&mut self, bytes: u64, dropped: bool, removed: Cut) {
        self.documents += 1;
        self.bytes += bytes;
        if dropped {
            self.dropped += 1;
            self.bytes_dropped += bytes;
        }
        self.paragraphs_removed += removed.paragraphs;
        self.paragraph_bytes_removed += removed.bytes;
        self.substring_bytes_removed += removed.substring_bytes;
        self.documents_emptied += u64::from(removed.emptied);
    }

    /// Share of the documents dropped.
    pub(crate) fn drop_rate(&self) -> f64 {
        self.dropped as f64 / self.documents.max(1) as f64
    }
}

impl std::ops::AddAssign for Tally {
    fn add_assign(&mut self, o: Tally) {
        self.documents += o.documents;
        self.dropped += o.dropped;
        self.bytes += o.bytes;
        self.bytes_dropped += o.bytes_dropped;
        self.paragraphs_removed += o.paragraphs_removed;
        self.paragraph_bytes_removed += o.paragraph_bytes_removed;
        self.substring_bytes_removed += o.substring_bytes_removed;
        self.documents_emptied += o.documents_emptied;
    }
}

/// Length buckets of the report: bucket `i` holds texts of `2^i .. 2^(i+1)` bytes (bucket 0 also
/// holds empty ones), the last one everything longer.
pub(crate) const LENGTH_BUCKETS: usize = 24;

/// What a manifest task tallies for the report, from the documents' keep flags and the text
/// lengths, scripts and groups the signatures task recorded.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Breakdown {
    pub by_file: BTreeMap<String, Tally>,
    /// Keyed by the name of a document's Unicode script ([`crate::text::script::name`]).
    pub by_script: BTreeMap<String, Tally>,
    /// `--report-group` values (empty without it; a null value is `(null)`).
    pub by_group: BTreeMap<String, Tally>,
    /// Kept and dropped documents per length bucket ([`LENGTH_BUCKETS`]).
    pub length_kept: Vec<u64>,
    pub length_dropped: Vec<u64>,
}

impl Breakdown {
    /// Adds another part's tallies.
    pub(crate) fn merge(&mut self, other: Breakdown) {
        for (mine, theirs) in [
            (&mut self.by_file, other.by_file),
            (&mut self.by_script, other.by_script),
            (&mut self.by_group, other.by_group),
        ] {
            for (k, t) in theirs {
                *mine.entry(k).or_default() += t;
            }
        }
        for (mine, theirs) in [
            (&mut self.length_kept, other.length_kept),
            (&mut self.length_dropped, other.length_dropped),
        ] {
            mine.resize(LENGTH_BUCKETS, 0);
            for (a, b) in mine.iter_mut().zip(theirs) {
                *a += b;
            }
        }
    }
}

/// The length bucket of a text of `bytes` bytes.
pub(crate) fn length_bucket(bytes: u64) -> usize {
    (63 - bytes.max(1).leading_zeros() as usize).min(LENGTH_BUCKETS - 1)
}

/// Counts a document of `bytes` under `key` (the key is copied only the first time).
pub(crate) fn count(
    map: &mut BTreeMap<String, Tally>,
    key: &str,
    bytes: u64,
    dropped: bool,
    removed: Cut,
) {
    match map.get_mut(key) {
        Some(t) => t.add(bytes, dropped, removed),
        None => map
            .entry(key.to_string())
            .or_default()
            .add(bytes, dropped, removed),
    }
}
