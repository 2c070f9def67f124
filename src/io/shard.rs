//! The columns every stage reads of a shard, whatever its format: the text, the id, the
//! `--keep` priority and the label columns, each as one contiguous chunk.

use polars::prelude::*;

use crate::config::{Config, Keep};

/// The columns of one shard that the pipeline uses, each as one contiguous chunk.
pub struct Shard {
    /// The file, as given.
    pub file: String,
    /// Text column (nulls allowed).
    pub text: StringChunked,
    /// Id column cast to strings, if the shard has one.
    pub id: Option<StringChunked>,
    /// Priority column for `--keep COLUMN`, cast to f64.
    pub priority: Option<Float64Chunked>,
    /// The `--report-group` column, cast to strings.
    pub group: Option<StringChunked>,
    /// The `--partition-by` column, cast to strings.
    pub partition: Option<StringChunked>,
    /// The `--across` column, cast to strings.
    pub across: Option<StringChunked>,
    /// Row of the file that row 0 here is (non-zero when a row range was read).
    pub first_row: u64,
    /// JSON Lines: each row's line number (from 1), which ids without an id field name.
    pub line: Option<Vec<u64>>,
}

impl Shard {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.text.len()
    }

    /// True for a shard without rows.
    pub fn is_empty(&self) -> bool {
        self.text.len() == 0
    }
}

/// `--keep COLUMN=v1,v2,...` as priorities (the largest is kept): the first value listed
/// highest, values not listed 0, nulls null (they lose).
pub(crate) fn ranked_priority(rank: &StringChunked, values: &[String]) -> Float64Chunked {
    let n = values.len();
    rank.iter()
        .map(|v| {
            v.map(|v| {
                values
                    .iter()
                    .position(|x| x == v)
                    .map_or(0.0, |i| (n - i) as f64)
            })
        })
        .collect()
}

/// A column of labels a run reads beside the text: string, integer or boolean values, read as
/// strings (an integer 7 and a string "7" are one value; null stays null).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Label {
    PartitionBy,
    Across,
    ReportGroup,
    /// `--keep COLUMN=v1,v2,...`.
    KeepRank,
}

impl Label {
    /// In the order they are checked: the report group defaults to one of the others, whose
    /// flag an error should name.
    pub(crate) const ALL: [Label; 4] = [
        Label::PartitionBy,
        Label::Across,
        Label::ReportGroup,
        Label::KeepRank,
    ];

    pub(crate) fn column(self, cfg: &Config) -> Option<&str> {
        match self {
            Label::ReportGroup => cfg.report_group.as_deref(),
            Label::PartitionBy => cfg.partition_by.as_deref(),
            Label::Across => cfg.across.as_deref(),
            Label::KeepRank => match &cfg.keep {
                Keep::Ranked { column, .. } => Some(column),
                _ => None,
            },
        }
    }

    /// The flag that names the column.
    pub(crate) fn flag(self) -> &'static str {
        match self {
            Label::ReportGroup => "report-group",
            Label::PartitionBy => "partition-by",
            Label::Across => "across",
            Label::KeepRank => "keep",
        }
    }

    /// Name under which the column is read (it may be the id column, or another label's, too).
    pub(crate) fn alias(self) -> &'static str {
        match self {
            Label::ReportGroup => "__corpus_dedup_group",
            Label::PartitionBy => "__corpus_dedup_partition",
            Label::Across => "__corpus_dedup_across",
            Label::KeepRank => "__corpus_dedup_rank",
        }
    }

    /// What the flag takes, for a message about a column of another type.
    pub(crate) fn hint(self) -> &'static str {
        match self {
            Label::ReportGroup => "--report-group takes a column of labels such as a domain or source name",
            Label::PartitionBy => "--partition-by takes a column of labels such as a language or crawl snapshot (a float or nested column is no label: derive a string column from it first)",
            Label::Across => "--across takes a column of labels such as a source or dataset name (a float or nested column is no label: derive a string column from it first)",
            Label::KeepRank => "--keep COLUMN=v1,v2,... ranks the values of a column of labels; a numeric column is --keep COLUMN (largest wins)",
        }
    }
}
