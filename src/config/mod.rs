//! Configuration: one validated struct, built from defaults < TOML file < command-line flags.
//!
//! [`Settings`] is the raw, all-optional form shared by the command line (clap) and the TOML file
//! (serde, keys spelled like the flags: `num-perm = 128`). [`Settings::resolve`] merges and
//! validates it into a [`Config`], which is what the pipeline reads and what the manifest's
//! metadata and `summary.json` record.

//!
//! Files: this one holds the option types and [`Config`]; `settings.rs` the raw [`Settings`]
//! (flags and TOML), their merge and validation, and the defaults `--help` shows.

mod resolve;
mod settings;

use serde::{Deserialize, Serialize};

pub use settings::{help_with_defaults, Settings};

/// Near-duplicate method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// MinHash signatures + LSH banding, verified by Jaccard similarity of word n-gram shingles.
    Minhash,
    /// 64-bit SimHash fingerprints of TF-IDF weighted jieba tokens, Hamming distance <= k found
    /// through a block index.
    Simhash,
}

/// How text is split into tokens before n-gram shingling (see `text::tokenize`). Every
/// tokenizer splits at spaces (U+200B ZERO WIDTH SPACE included) and cuts a run longer than 96
/// bytes into pieces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Tokenizer {
    /// The measured default: currently the same as `chars` (see README, "Languages").
    Auto,
    /// Whitespace-separated words only: a run of Chinese or Thai is one token (cut at 96 bytes).
    Words,
    /// A word per token in space-delimited scripts; every Han, kana or hangul character, and
    /// every character (with its marks) of Thai, Lao, Khmer, Myanmar and the Tai scripts, is a
    /// token. Scripts are told apart by the Unicode Script property.
    Chars,
    /// As `chars`, but runs of Han characters are segmented into words with jieba.
    Jieba,
}

/// How candidate pairs are verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Verify {
    /// The estimate decides pairs far from the threshold (more than 3 standard errors away); pairs
    /// near it, and pairs with a short document, get the exact check.
    Auto,
    /// Exact Jaccard of the two documents' shingle sets (recomputed for candidate documents only).
    Exact,
    /// Jaccard estimated from signature agreement; documents with fewer than `min-shingles`
    /// shingles still use the exact check, since the estimate is meaningless for them.
    Estimate,
}

/// How the K MinHash signature values are drawn (see `minhash`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Sketch {
    /// K independent hash functions, each shingle hashed K times.
    Classic,
    /// One-permutation hashing: each shingle hashed once into one of K bins, empty bins filled
    /// by optimal densification; several times faster to compute, the same recall and precision
    /// over 15 seeds on three corpora (docs/PERFORMANCE.md). The default.
    #[default]
    Oph,
}

impl Sketch {
    /// The sketch of plans, manifests and index heads written before the setting existed.
    fn before_setting() -> Sketch {
        Sketch::Classic
    }
}

/// Which shingle keys a batch of the retained index keeps (they make near-threshold
/// comparisons with indexed documents exact).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum IndexKeys {
    /// Every document's (deduplicated) keys: pairs near the threshold are checked exactly, as in
    /// a single run; ~4 bytes per distinct shingle on disk.
    #[default]
    All,
    /// Only short documents' keys: pairs with an indexed document are decided on the 8-bit
    /// signature estimate; ~300 bytes per document, lower precision near the threshold.
    Short,
}

/// Where the exact checks get shingle keys (four bytes per token): the same results either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum WorkKeys {
    /// `stored` while the stored keys fit in this machine's memory and the work directory is
    /// local, `remade` beyond (settled when the run is planned).
    #[default]
    Auto,
    /// Written by the signatures stage for every document as its signature is made: the
    /// fastest run while they stay in memory, and most of the work directory.
    Stored,
    /// Made again from the shards, after the estimates, for the documents an exact check needs:
    /// a third of the work directory or less, for a second read of the input.
    Remade,
}

/// How verified pairs become kept and dropped documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ClusterRule {
    /// Documents in keep order; one is dropped only against a verified near-duplicate kept
    /// before it (the most similar), so every drop resembles something kept. The default.
    Keeper,
    /// Connected components of the verified pairs, one document kept per component; chains of
    /// near-duplicates merge, so a drop may be far from its kept document.
    Components,
}

impl ClusterRule {
    /// The rule of plans, manifests and index heads written before the rule was a setting.
    fn before_setting() -> ClusterRule {
        ClusterRule::Components
    }
}

/// Which document of a duplicate cluster is kept. Written as the flag's spelling: "first",
/// "longest", the column name, or `COLUMN=v1,v2`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keep {
    /// The first document in input order (smallest global index).
    First,
    /// The document with the longest text (bytes); ties go to input order.
    Longest,
    /// The document with the largest value in this numeric column; nulls lose, ties go to input order.
    Column(String),
    /// The document whose value of this column (string, integer or boolean) comes first in
    /// `values`: values not listed come after every listed one, nulls last; ties go to input
    /// order. Written `COLUMN=v1,v2,...` (a ranking of sources for `--across`, say).
    Ranked { column: String, values: Vec<String> },
}

impl Keep {
    /// The column the rule reads, if any.
    pub fn column(&self) -> Option<&str> {
        match self {
            Keep::Column(c) | Keep::Ranked { column: c, .. } => Some(c),
            Keep::First | Keep::Longest => None,
        }
    }

    /// Whether the rule ranks documents by a per-document priority (a column).
    pub fn by_priority(&self) -> bool {
        self.column().is_some()
    }
}

impl std::str::FromStr for Keep {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "first" => Ok(Keep::First),
            "longest" => Ok(Keep::Longest),
            "" => Err("--keep needs first, longest or a column name".into()),
            ranked if ranked.contains('=') => {
                let (column, list) = ranked.split_once('=').unwrap_or_default();
                let values: Vec<String> = list.split(',').map(|v| v.trim().to_string()).collect();
                let mut seen = std::collections::BTreeSet::new();
                if column.is_empty() || values.iter().any(String::is_empty) {
                    return Err(format!("--keep '{s}': write COLUMN=VALUE,VALUE,... (the values in the order they win, e.g. source=wiki,books,web)"));
                }
                if let Some(v) = values.iter().find(|v| !seen.insert(v.as_str())) {
                    return Err(format!("--keep '{s}': '{v}' is listed twice"));
                }
                Ok(Keep::Ranked {
                    column: column.to_string(),
                    values,
                })
            }
            col => Ok(Keep::Column(col.to_string())),
        }
    }
}

impl Serialize for Keep {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&match self {
            Keep::First => "first".to_string(),
            Keep::Longest => "longest".to_string(),
            Keep::Column(c) => c.clone(),
            Keep::Ranked { column, values } => format!("{column}={}", values.join(",")),
        })
    }
}

impl<'de> Deserialize<'de> for Keep {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The validated configuration of one run. Serialised into the manifest metadata, the summary and
/// the run plan (from which every task reads it back).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Config {
    pub input: Vec<String>,
    pub output: String,
    pub method: Method,
    pub text_column: String,
    pub id_column: String,
    /// True when the id column was named explicitly (then it must exist).
    pub id_column_explicit: bool,
    pub threshold: f64,
    /// `--sweep`: the thresholds whose drops are counted besides the run's (ascending, the
    /// run's threshold among them); empty without it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweep: Vec<f64>,
    pub num_perm: usize,
    pub bands: usize,
    pub rows: usize,
    pub ngram: usize,
    pub tokenizer: Tokenizer,
    pub verify: Verify,
    /// Absent in plans and manifests written before it existed: classic, the sketch they were
    /// made with (not today's default).
    #[serde(default = "Sketch::before_setting")]
    pub sketch: Sketch,
    pub min_shingles: usize,
    pub max_bucket_pairs: usize,
    pub seed: u64,
    pub hamming: usize,
    pub simhash_blocks: usize,
    pub simhash_max_bucket: usize,
    pub simhash_ngram: usize,
    pub simhash_tf_cap: u32,
    pub simhash_max_df: f64,
    pub simhash_df_sample: usize,
    pub simhash_top_k: usize,
    pub simhash_min_features: usize,
    /// The retained index (`--index`), if any.
    #[serde(default)]
    pub index: Option<String>,
    /// Tonight's batch name in the index.
    #[serde(default)]
    pub batch: Option<String>,
    /// Batches the index keeps (tonight's included).
    #[serde(default = "default_window")]
    pub window: usize,
    /// Shingle keys the index keeps.
    #[serde(default)]
    pub index_keys: IndexKeys,
    /// Where the exact checks get shingle keys (no result depends on it).
    #[serde(default)]
    pub work_keys: WorkKeys,
    pub threads: usize,
    pub keep: Keep,
    /// Absent in plans, manifests and index heads written before it existed: components.
    #[serde(default = "ClusterRule::before_setting")]
    pub cluster: ClusterRule,
    pub allow_duplicate_ids: bool,
    /// The column the report breaks drop rates down by (`--report-group`; by default the
    /// `--partition-by` or else the `--across` column).
    #[serde(default)]
    pub report_group: Option<String>,
    /// `--partition-by`: documents are compared only with documents of the same value.
    #[serde(default)]
    pub partition_by: Option<String>,
    /// `--across`: a document is dropped only against a kept document of another value.
    #[serde(default)]
    pub across: Option<String>,
    /// `--reference`: the benchmark reference documents are checked against. Absent when not
    /// given, so the settings of runs without it read as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<ReferenceConfig>,
    /// `--paragraphs`: paragraph dedup after document dedup. Absent when not given, so the
    /// settings of runs without it read as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paragraphs: Option<ParagraphConfig>,
    /// `--substrings`: exact substring dedup after document dedup. Absent when not given, so
    /// the settings of runs without it read as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub substrings: Option<SubstringConfig>,
    #[serde(skip)]
    pub quiet: bool,
}

/// Paragraph dedup (`--paragraphs` and its options).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParagraphConfig {
    /// Paragraphs shorter than this (bytes of text, without the whitespace around it) are
    /// never removed.
    pub min_bytes: usize,
}

/// `--paragraph-min-bytes`' default: on the development corpus, repeated paragraphs under 100
/// bytes are mostly headings, dates and sign-off lines that frame the text around them, and
/// they hold a fifth of the repeated bytes (docs/PERFORMANCE.md, "Paragraph dedup").
pub const PARAGRAPH_MIN_BYTES: usize = 100;

/// Exact substring dedup (`--substrings` and its options).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubstringConfig {
    /// A byte is removed only inside a run of at least this many bytes that retained text
    /// already holds earlier.
    pub min_bytes: usize,
}

/// `--substring-min-bytes`' default: Lee et al.'s 50 tokens are 200-250 bytes of English, and
/// on the development corpus shorter runs are mostly phrases and list lines that frame the text
/// around them (docs/PERFORMANCE.md, "Substring dedup").
pub const SUBSTRING_MIN_BYTES: usize = 200;
/// The range `--substring-min-bytes` takes: below 32 bytes a run is a phrase, not a copy; above
/// 1 MiB a document dedup question.
pub const SUBSTRING_MIN_BYTES_RANGE: std::ops::RangeInclusive<usize> = 32..=1 << 20;

/// The benchmark reference (`--reference` and its options).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceConfig {
    /// Parquet or JSON Lines globs, local or s3://.
    pub globs: Vec<String>,
    pub id_column: String,
    /// True when the id column was named explicitly (then it must exist; otherwise a file
    /// without it gives ids `file:row`).
    pub id_column_explicit: bool,
    pub text_column: String,
    /// Tokens per n-gram.
    pub ngram: usize,
    /// The share of an item's n-grams a document must hold to be contaminated by it.
    pub threshold: f64,
}

/// `--reference-ngram`'s default: n-grams of 8 tokens caught 98% of lightly edited items on the
/// planted set, 13 only 91% (docs/PERFORMANCE.md, "Benchmark decontamination").
pub const REFERENCE_NGRAM: usize = 8;

/// `--reference-threshold`'s default: the share at which no host of a held-out item was flagged.
pub const REFERENCE_THRESHOLD: f64 = 0.3;

fn default_window() -> usize {
    7
}

/// LSH must find a pair at exactly the threshold with at least this probability (issue #2).
pub const LSH_TARGET_RECALL: f64 = 0.95;

/// `--sweep`: at most this many thresholds (a bit each per verified pair).
pub const MAX_SWEEP: usize = 16;

impl Config {
    /// The configuration as JSON (for summary.json).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// The configuration that determines the result, as JSON, for the manifest's metadata: without
    /// the thread count and the output and index locations, which never change the result, so the manifest is
    /// byte-identical across thread counts and output directories.
    pub fn result_json(&self) -> serde_json::Value {
        let mut v = self.to_json();
        if let Some(o) = v.as_object_mut() {
            o.remove("threads");
            o.remove("work_keys");
            o.remove("output");
            o.remove("index");
            // The sweep only counts; the manifest is the run's threshold's.
            o.remove("sweep");
        }
        v
    }

    /// The effective tokenizer (`auto` resolved).
    pub fn effective_tokenizer(&self) -> Tokenizer {
        match self.tokenizer {
            Tokenizer::Auto => Tokenizer::Chars,
            t => t,
        }
    }
}
