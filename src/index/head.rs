//! The head of the index (`index.json`): its format, the batches it names, and reading it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::io::output::OutputDir;

use super::live;

/// Format of index.json and the batch files. 2: keeper batches (kept documents only), renewals
/// and lingering batches; 3: copies across nights ([`super::copies`]).
pub(crate) const FORMAT: u32 = 3;

/// The head file.
pub(crate) const HEAD: &str = "index.json";

/// The SimHash feature filter every batch of an index shares.
pub(crate) const FREQUENCIES: &str = "frequencies.bin";

/// One batch of the index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct BatchEntry {
    pub name: String,
    /// Its directory under the index (`batches/NAME-HASH`).
    pub dir: String,
    /// Its run's documents.
    pub documents: u64,
    /// The documents it holds: its run's kept ones (`--cluster keeper`); absent when it holds
    /// every document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<u64>,
    /// Bytes of its files on disk.
    pub bytes: u64,
    /// Bytes a lookup holds in memory for it (filters and block tables).
    pub filter_bytes: u64,
    /// Its documents its own run dropped (none in heads written before this was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<u64>,
    /// Out of the window, kept for the documents a batch in the window renewed ([`super::renew`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lingering: bool,
    /// The documents of earlier batches its run renewed, by their batch directory.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub renews: BTreeMap<String, u64>,
    /// Lingering and rewritten to the documents still compared with ([`super::compact`]): where its
    /// files are now (`dir` stays its name for renewals) and how many documents they hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compacted: Option<live::Compacted>,
}

impl BatchEntry {
    /// The documents the batch holds.
    pub(crate) fn held(&self) -> u64 {
        self.held.unwrap_or(self.documents)
    }

    /// The directory of its files: `dir`, or where compaction rewrote them.
    pub(crate) fn files(&self) -> &str {
        self.compacted.as_ref().map_or(&self.dir, |c| &c.files)
    }

    /// The documents its files hold: all it holds, or those compaction kept.
    pub(crate) fn in_files(&self) -> u64 {
        self.compacted.as_ref().map_or(self.held(), |c| c.documents)
    }
}

/// index.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Head {
    pub format: u32,
    /// Raised by every commit.
    pub generation: u64,
    /// The settings every batch was made with ([`super::planning::settings`]).
    pub settings: BTreeMap<String, serde_json::Value>,
    /// The batches in the window, oldest first.
    pub batches: Vec<BatchEntry>,
    /// Older batches still holding documents a batch in the window renewed, oldest first.
    pub lingering: Vec<BatchEntry>,
    /// What the newest batch was compared with (lingering batches flagged), oldest first: kept
    /// on disk until the next new batch, so that a rerun of the newest one is exact.
    pub compared: Vec<BatchEntry>,
    /// SimHash: the shared feature filter (index-relative name), once the first batch wrote it.
    pub frequencies: Option<String>,
    /// False after `index remove` took the newest batch away: what the batch now newest was
    /// compared with is not known any more, so it cannot be rerun exactly (a new batch can run).
    #[serde(default = "yes", skip_serializing_if = "Clone::clone")]
    pub rerun: bool,
    /// The server's sealed journal files the newest batch folded in ([`super::fold`]), kept for
    /// its rerun.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub folded: Vec<String>,
    /// The highest fold number any batch folded in (0: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub folded_through: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn yes() -> bool {
    true
}

impl Head {
    /// The batches whose files the index keeps: the window, the lingering ones and those the
    /// newest batch was compared with (one entry per directory).
    pub(super) fn on_disk(&self) -> Vec<&BatchEntry> {
        let mut all: Vec<&BatchEntry> = Vec::new();
        for b in self
            .batches
            .iter()
            .chain(&self.lingering)
            .chain(&self.compared)
        {
            if all.iter().all(|a| a.files() != b.files()) {
                all.push(b);
            }
        }
        all
    }

    /// The batches a next run compares with, in that order: the lingering ones, then the
    /// window, oldest first.
    pub(crate) fn next_compare(&self) -> Vec<BatchEntry> {
        self.lingering
            .iter()
            .chain(&self.batches)
            .cloned()
            .collect()
    }

    /// Whether the window or a lingering batch is the batch in `dir`.
    pub(super) fn holds(&self, dir: &str) -> bool {
        self.batches
            .iter()
            .chain(&self.lingering)
            .any(|b| b.dir == dir)
    }
}

/// Reads the head (None when the index is new).
pub(crate) fn read_head(index: &OutputDir) -> Result<Option<Head>> {
    let Some(bytes) = index.read(HEAD)? else {
        return Ok(None);
    };
    let head = parse_head(&bytes, &index.location(""), &index.location(HEAD))?;
    Ok(Some(head))
}

/// Reads the head's format first, so that an older head is named as such, not as damaged.
fn parse_head(bytes: &[u8], location: &str, path: &str) -> Result<Head> {
    #[derive(Deserialize)]
    struct Format {
        format: u32,
    }
    let bad = |source: serde_json::Error| Error::IndexFile {
        path: path.to_string(),
        source: crate::error::FileError::Parse {
            what: "an index head",
            source,
        },
    };
    let format = serde_json::from_slice::<Format>(bytes).map_err(bad)?.format;
    if format != FORMAT {
        return Err(Error::Index {
            index: location.trim_end_matches('/').to_string(),
            msg: format!(
                "index format {format}, this corpus-dedup reads format {FORMAT} (format 3 counts each document's copies across nights, format 2 holds kept documents only and renews what re-crawls bring back). Start a new index for the next batch (another --index location); the old one is left as it is and an older corpus-dedup still reads it"
            ),
        });
    }
    serde_json::from_slice(bytes).map_err(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_head_is_named_with_what_to_do() {
        let old = br#"{"format": 1, "generation": 3, "settings": {}, "batches": [], "retired": [], "frequencies": null}"#;
        let err = parse_head(old, "INDEX", "INDEX/index.json")
            .unwrap_err()
            .to_string();
        assert!(err.contains("index format 1"), "{err}");
        assert!(err.contains("another --index"), "{err}");
        assert!(err.starts_with("index 'INDEX': "), "{err}");
        let damaged = parse_head(b"{}", "INDEX", "INDEX/index.json").unwrap_err();
        assert!(damaged
            .to_string()
            .contains("'INDEX/index.json' is damaged"));
    }
}
