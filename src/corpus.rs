//! The corpus: all input shards in order, with a dense global document index.
//!
//! Document `d` is row `d - start[s]` of shard `s`, where `start` holds the prefix sums of the
//! shards' row counts. The hot stages work on these u32 indices, never on id strings.

use rayon::prelude::*;
use std::ops::Range;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::io::input::{read_shard, Shard};
use crate::io::jsonl::{read_uncounted, GroupStart};
use crate::io::object;

/// Rows of one input file to read: all of them, or a range; for a plain JSON Lines file, where
/// the plan recorded that the range's row group starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Slice {
    pub file: String,
    pub rows: Option<Range<u64>>,
    pub start: Option<GroupStart>,
    /// A JSON Lines file the plan did not count ([`crate::io::jsonl::counted_by_tasks`]): it may
    /// end before `rows.end`.
    pub open: bool,
}

impl Slice {
    /// All rows of `file`.
    pub(crate) fn whole(file: &str) -> Slice {
        Slice {
            file: file.to_string(),
            rows: None,
            start: None,
            open: false,
        }
    }
}

/// All shards of one run.
pub struct Corpus {
    /// Shards in sorted file order.
    pub shards: Vec<Shard>,
    /// `starts[s]` is the global index of shard `s`'s first row; the last entry is the total.
    starts: Vec<usize>,
    /// Per shard read from an open slice to its file's end: the file's blank lines in all.
    pub(crate) ends: Vec<Option<u64>>,
}

impl Corpus {
    /// Reads every shard; `on_shard` is called after each (for progress).
    pub fn load(files: &[String], cfg: &Config, on_shard: impl FnMut(&Shard)) -> Result<Corpus> {
        let slices: Vec<Slice> = files.iter().map(|f| Slice::whole(f)).collect();
        Self::load_slices(&slices, cfg, on_shard)
    }

    /// Reads the given slices of shards, in order; document 0 is the first row of the first
    /// slice.
    pub(crate) fn load_slices(
        slices: &[Slice],
        cfg: &Config,
        mut on_shard: impl FnMut(&Shard),
    ) -> Result<Corpus> {
        let mut shards = Vec::with_capacity(slices.len());
        let mut starts = vec![0usize];
        let mut ends = Vec::with_capacity(slices.len());
        // Object-store shards are fetched whole, a window at a time with requests in parallel.
        for window in slices.chunks(16) {
            let remote: Vec<String> = window
                .iter()
                .filter(|s| object::is_url(&s.file))
                .map(|s| s.file.clone())
                .collect();
            let mut fetched = object::get_all(&remote)?.into_iter();
            let inputs: Vec<_> = window
                .iter()
                .map(|s| (s, object::is_url(&s.file).then(|| fetched.next()).flatten()))
                .collect();
            // Slices (row groups of a chunk) are decoded in parallel, kept in order.
            let read: Vec<(Shard, Option<u64>)> = inputs
                .into_par_iter()
                .map(|(s, bytes)| match s.open {
                    true => read_uncounted(&s.file, bytes, s.rows.clone(), cfg),
                    false => read_shard(&s.file, bytes, s.rows.clone(), s.start.as_ref(), cfg)
                        .map(|shard| (shard, None)),
                })
                .collect::<Result<_>>()?;
            for (shard, end) in read {
                on_shard(&shard);
                starts.push(starts[starts.len() - 1] + shard.len());
                shards.push(shard);
                ends.push(end);
            }
        }
        let total = starts[starts.len() - 1];
        if total >= u32::MAX as usize {
            return Err(Error::TooManyDocuments {
                what: "one task".into(),
                documents: total as u64,
                advice: "pass a larger --tasks".into(),
            });
        }
        Ok(Corpus {
            shards,
            starts,
            ends,
        })
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.starts[self.starts.len() - 1]
    }

    /// True when no shard has a row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Global index of shard `s`'s first document.
    pub fn start(&self, s: usize) -> usize {
        self.starts[s]
    }

    /// (shard, row) of document `doc`.
    pub fn locate(&self, doc: u32) -> (usize, usize) {
        let d = doc as usize;
        let s = self.starts.partition_point(|&st| st <= d) - 1;
        (s, d - self.starts[s])
    }

    /// The text of a document (None for a null text).
    pub fn text(&self, doc: u32) -> Option<&str> {
        let (s, r) = self.locate(doc);
        self.shards[s].text.get(r)
    }

    /// The id of a document: its id-column value, or `file:row` when the shard has no id column
    /// (or the value is null); `file:line` for a JSON Lines shard.
    pub fn id(&self, doc: u32) -> String {
        let (s, r) = self.locate(doc);
        let shard = &self.shards[s];
        match shard.id.as_ref().and_then(|c| c.get(r)) {
            Some(id) => id.to_string(),
            None => match &shard.line {
                Some(lines) => format!("{}:{}", shard.file, lines[r]),
                None => format!("{}:{}", shard.file, shard.first_row + r as u64),
            },
        }
    }
}
