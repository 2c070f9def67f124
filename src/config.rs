//! Configuration: one validated struct, built from defaults < TOML file < command-line flags.
//!
//! [`Settings`] is the raw, all-optional form shared by the command line (clap) and the TOML file
//! (serde, keys spelled like the flags: `num-perm = 128`). [`Settings::resolve`] merges and
//! validates it into a [`Config`], which is what the pipeline reads and what the manifest's
//! metadata and `summary.json` record.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::lsh;

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

/// How text is split into tokens before n-gram shingling (see `text::tokenize`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Tokenizer {
    /// The measured default: currently the same as `chars` (see README, "Tokenizer choice").
    Auto,
    /// Whitespace-separated words only; a run of Chinese characters is one token.
    Words,
    /// Words for space-delimited scripts; every CJK ideograph, kana or hangul character is a token.
    Chars,
    /// Words for space-delimited scripts; runs of Han characters are segmented with jieba.
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
/// "longest" or the column name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keep {
    /// The first document in input order (smallest global index).
    First,
    /// The document with the longest text (bytes); ties go to input order.
    Longest,
    /// The document with the largest value in this numeric column; nulls lose, ties go to input order.
    Column(String),
}

impl std::str::FromStr for Keep {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "first" => Ok(Keep::First),
            "longest" => Ok(Keep::Longest),
            "" => Err("--keep needs first, longest or a column name".into()),
            col => Ok(Keep::Column(col.to_string())),
        }
    }
}

impl Serialize for Keep {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(match self {
            Keep::First => "first",
            Keep::Longest => "longest",
            Keep::Column(c) => c,
        })
    }
}

impl<'de> Deserialize<'de> for Keep {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Raw settings: every field optional, from the command line or a TOML file.
#[derive(Debug, Clone, Default, Deserialize, clap::Args)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Settings {
    /// Input shards: a local glob or an s3:// URL glob; repeat for several.
    #[arg(long = "input", value_name = "GLOB")]
    #[serde(default)]
    pub input: Vec<String>,
    /// Output directory for manifest.parquet and summary.json.
    #[arg(long, value_name = "DIR")]
    pub output: Option<String>,
    /// Near-duplicate method.
    #[arg(long, value_enum)]
    pub method: Option<Method>,
    /// Name of the text column.
    #[arg(long, value_name = "NAME")]
    pub text_column: Option<String>,
    /// Name of the id column; when it is absent (and not given explicitly) ids are `file:row`.
    #[arg(long, value_name = "NAME")]
    pub id_column: Option<String>,
    /// Jaccard similarity at or above which two documents are duplicates, in (0, 1].
    #[arg(long)]
    pub threshold: Option<f64>,
    /// Number of MinHash permutations K.
    #[arg(long)]
    pub num_perm: Option<usize>,
    /// LSH bands b (give with --rows); default: chosen from the threshold.
    #[arg(long)]
    pub bands: Option<usize>,
    /// LSH rows per band r (give with --bands); b x r <= K.
    #[arg(long)]
    pub rows: Option<usize>,
    /// Shingle size in tokens.
    #[arg(long)]
    pub ngram: Option<usize>,
    /// Tokenizer.
    #[arg(long, value_enum)]
    pub tokenizer: Option<Tokenizer>,
    /// Candidate verification.
    #[arg(long, value_enum)]
    pub verify: Option<Verify>,
    /// MinHash sketch: classic (K hash functions) or oph (one-permutation hashing, faster).
    #[arg(long, value_enum)]
    pub sketch: Option<Sketch>,
    /// Documents with fewer shingles than this are always verified exactly.
    #[arg(long)]
    pub min_shingles: Option<usize>,
    /// Buckets with more members than this link each member to the bucket's first document
    /// instead of listing all pairs (avoids m^2 pairs in giant buckets).
    #[arg(long)]
    pub max_bucket_pairs: Option<usize>,
    /// Seed for the MinHash permutations.
    #[arg(long)]
    pub seed: Option<u64>,
    /// SimHash: maximum Hamming distance k of near-duplicates (0..=8).
    #[arg(long)]
    pub hamming: Option<usize>,
    /// SimHash: blocks B > k the fingerprint is cut into; C(B, B-k) tables (default k + 1).
    #[arg(long)]
    pub simhash_blocks: Option<usize>,
    /// SimHash: block buckets up to this size are searched for all near pairs; larger ones fall
    /// back to a star (counted as star_buckets; raise --simhash-blocks then).
    #[arg(long)]
    pub simhash_max_bucket: Option<usize>,
    /// SimHash: features are runs of this many tokens.
    #[arg(long)]
    pub simhash_ngram: Option<usize>,
    /// SimHash: a feature's term frequency counts up to this cap.
    #[arg(long)]
    pub simhash_tf_cap: Option<u32>,
    /// SimHash: drop features found in more than this fraction of sampled documents (1 = keep all).
    #[arg(long)]
    pub simhash_max_df: Option<f64>,
    /// SimHash: documents sampled for document frequencies.
    #[arg(long)]
    pub simhash_df_sample: Option<usize>,
    /// SimHash: keep only the heaviest K features (0 = all).
    #[arg(long)]
    pub simhash_top_k: Option<usize>,
    /// SimHash: pairs where a document has fewer features than this must also pass the exact
    /// Jaccard check of their shingles (0 = never).
    #[arg(long)]
    pub simhash_min_features: Option<usize>,
    /// Retained index of earlier batches (local directory or s3:// prefix): tonight's documents
    /// that duplicate an indexed one are dropped, then tonight's batch is added. Needs --batch.
    #[arg(long, value_name = "DIR|URL")]
    pub index: Option<String>,
    /// Name of tonight's batch in the index (e.g. the crawl date; names must sort in time order).
    #[arg(long, value_name = "NAME")]
    pub batch: Option<String>,
    /// Batches the index keeps, tonight's included: older ones expire (default 7).
    #[arg(long, value_name = "N")]
    pub window: Option<usize>,
    /// Shingle keys the index keeps per document (MinHash): all (exact near the threshold) or
    /// short (compact: short documents only).
    #[arg(long, value_enum)]
    pub index_keys: Option<IndexKeys>,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Keep rule: first, longest, or the name of a numeric priority column (largest wins).
    #[arg(long, value_name = "first|longest|COLUMN")]
    pub keep: Option<Keep>,
    /// Clustering: keeper (every drop is a verified near-duplicate of a kept document) or
    /// components (connected components of the verified pairs).
    #[arg(long, value_enum)]
    pub cluster: Option<ClusterRule>,
    /// Accept duplicate ids instead of failing.
    #[arg(long)]
    #[serde(default)]
    pub allow_duplicate_ids: bool,
    /// A column to break the report's drop rates down by (a domain or source column).
    #[arg(long, value_name = "COLUMN")]
    pub report_group: Option<String>,
    /// No progress bars.
    #[arg(long)]
    #[serde(default)]
    pub quiet: bool,
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
    pub num_perm: usize,
    pub bands: usize,
    pub rows: usize,
    pub ngram: usize,
    pub tokenizer: Tokenizer,
    pub verify: Verify,
    /// Absent in plans and manifests written before it existed: classic.
    #[serde(default)]
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
    pub threads: usize,
    pub keep: Keep,
    /// Absent in plans, manifests and index heads written before it existed: components.
    #[serde(default = "ClusterRule::before_setting")]
    pub cluster: ClusterRule,
    pub allow_duplicate_ids: bool,
    /// The column the report breaks drop rates down by (`--report-group`).
    #[serde(default)]
    pub report_group: Option<String>,
    #[serde(skip)]
    pub quiet: bool,
}

fn default_window() -> usize {
    7
}

/// LSH must find a pair at exactly the threshold with at least this probability (issue #2).
pub const LSH_TARGET_RECALL: f64 = 0.95;

impl Settings {
    /// Reads a TOML settings file.
    pub fn from_toml_file(path: &Path) -> Result<Settings> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::ConfigFile {
            path: path.to_path_buf(),
            msg: e.to_string(),
        })?;
        toml::from_str(&text).map_err(|e| Error::ConfigFile {
            path: path.to_path_buf(),
            msg: e.to_string(),
        })
    }

    /// `self` (flags) overrides `base` (file) field by field.
    pub fn over(self, base: Settings) -> Settings {
        Settings {
            input: if self.input.is_empty() {
                base.input
            } else {
                self.input
            },
            output: self.output.or(base.output),
            method: self.method.or(base.method),
            text_column: self.text_column.or(base.text_column),
            id_column: self.id_column.or(base.id_column),
            threshold: self.threshold.or(base.threshold),
            num_perm: self.num_perm.or(base.num_perm),
            bands: self.bands.or(base.bands),
            rows: self.rows.or(base.rows),
            ngram: self.ngram.or(base.ngram),
            tokenizer: self.tokenizer.or(base.tokenizer),
            verify: self.verify.or(base.verify),
            sketch: self.sketch.or(base.sketch),
            min_shingles: self.min_shingles.or(base.min_shingles),
            max_bucket_pairs: self.max_bucket_pairs.or(base.max_bucket_pairs),
            seed: self.seed.or(base.seed),
            hamming: self.hamming.or(base.hamming),
            simhash_blocks: self.simhash_blocks.or(base.simhash_blocks),
            simhash_max_bucket: self.simhash_max_bucket.or(base.simhash_max_bucket),
            simhash_ngram: self.simhash_ngram.or(base.simhash_ngram),
            simhash_tf_cap: self.simhash_tf_cap.or(base.simhash_tf_cap),
            simhash_max_df: self.simhash_max_df.or(base.simhash_max_df),
            simhash_df_sample: self.simhash_df_sample.or(base.simhash_df_sample),
            simhash_top_k: self.simhash_top_k.or(base.simhash_top_k),
            simhash_min_features: self.simhash_min_features.or(base.simhash_min_features),
            index: self.index.or(base.index),
            batch: self.batch.or(base.batch),
            window: self.window.or(base.window),
            index_keys: self.index_keys.or(base.index_keys),
            threads: self.threads.or(base.threads),
            keep: self.keep.or(base.keep),
            cluster: self.cluster.or(base.cluster),
            allow_duplicate_ids: self.allow_duplicate_ids || base.allow_duplicate_ids,
            report_group: self.report_group.or(base.report_group),
            quiet: self.quiet || base.quiet,
        }
    }

    /// Fills defaults and validates.
    pub fn resolve(self) -> Result<Config> {
        let bad = |m: String| Err(Error::Config(m));
        if self.input.is_empty() {
            return bad(
                "no input: pass --input 'GLOB' (or `input = [..]` in the config file)".into(),
            );
        }
        let output = match self.output {
            Some(o) if !o.trim().is_empty() => o,
            _ => return bad("no output directory: pass --output DIR".into()),
        };
        let threshold = self.threshold.unwrap_or(0.8);
        if !(threshold > 0.0 && threshold <= 1.0) {
            return bad(format!(
                "--threshold {threshold} is outside (0, 1]; use e.g. 0.8"
            ));
        }
        let num_perm = self.num_perm.unwrap_or(128);
        if !(1..=1024).contains(&num_perm) {
            return bad(format!(
                "--num-perm {num_perm} is outside 1..=1024; 128 is the usual choice"
            ));
        }
        let (bands, rows) = match (self.bands, self.rows) {
            (Some(b), Some(r)) => {
                if b == 0 || r == 0 {
                    return bad(format!("--bands {b} --rows {r}: both must be at least 1"));
                }
                if b * r > num_perm {
                    return bad(format!(
                        "--bands {b} x --rows {r} = {} exceeds --num-perm {num_perm}; lower them or raise --num-perm",
                        b * r
                    ));
                }
                (b, r)
            }
            (None, None) => lsh::choose_bands(threshold, num_perm, LSH_TARGET_RECALL),
            _ => return bad("--bands and --rows go together: give both or neither".into()),
        };
        let ngram = self.ngram.unwrap_or(5);
        if !(1..=64).contains(&ngram) {
            return bad(format!("--ngram {ngram} is outside 1..=64"));
        }
        let threads = self.threads.unwrap_or(0);
        let threads = if threads == 0 {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        } else {
            threads
        };
        if threads > 1024 {
            return bad(format!("--threads {threads} is more than 1024"));
        }
        let max_bucket_pairs = self.max_bucket_pairs.unwrap_or(64);
        if max_bucket_pairs < 2 {
            return bad(format!(
                "--max-bucket-pairs {max_bucket_pairs} must be at least 2"
            ));
        }
        let hamming = self.hamming.unwrap_or(3);
        if hamming > 8 {
            return bad(format!("--hamming {hamming} is outside 0..=8"));
        }
        let simhash_blocks = self.simhash_blocks.unwrap_or(hamming + 1);
        if simhash_blocks <= hamming || simhash_blocks > 16 {
            return bad(format!(
                "--simhash-blocks {simhash_blocks} must be more than --hamming {hamming} and at most 16"
            ));
        }
        let simhash_max_df = self.simhash_max_df.unwrap_or(0.002);
        if !(simhash_max_df > 0.0 && simhash_max_df <= 1.0) {
            return bad(format!(
                "--simhash-max-df {simhash_max_df} is outside (0, 1]"
            ));
        }
        match (&self.index, &self.batch) {
            (Some(_), None) => {
                return bad("--index needs --batch NAME (e.g. --batch 2026-11-23): the name of tonight's batch in the index".into())
            }
            (None, Some(_)) => {
                return bad("--batch is the name of tonight's batch in an index: give --index too".into())
            }
            _ => {}
        }
        if let Some(b) = &self.batch {
            let ok = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
            if b.is_empty() || b.len() > 100 || !b.chars().all(ok) {
                return bad(format!("--batch '{b}': use 1 to 100 letters, digits, '.', '_' or '-' (e.g. 2026-11-23)"));
            }
        }
        let window = self.window.unwrap_or(7);
        if window == 0 {
            return bad(
                "--window 0: the window counts tonight's batch, so it is at least 1".into(),
            );
        }
        let text_column = self.text_column.unwrap_or_else(|| "text".into());
        let id_column_explicit = self.id_column.is_some();
        let id_column = self.id_column.unwrap_or_else(|| "id".into());
        if text_column == id_column {
            return bad(format!(
                "--text-column and --id-column are both '{text_column}'"
            ));
        }
        Ok(Config {
            input: self.input,
            output,
            method: self.method.unwrap_or(Method::Minhash),
            text_column,
            id_column,
            id_column_explicit,
            threshold,
            num_perm,
            bands,
            rows,
            ngram,
            tokenizer: self.tokenizer.unwrap_or(Tokenizer::Auto),
            verify: self.verify.unwrap_or(Verify::Auto),
            sketch: self.sketch.unwrap_or_default(),
            min_shingles: self.min_shingles.unwrap_or(10),
            max_bucket_pairs,
            seed: self.seed.unwrap_or(42),
            hamming,
            simhash_blocks,
            simhash_max_bucket: self.simhash_max_bucket.unwrap_or(4096).max(2),
            simhash_ngram: self.simhash_ngram.unwrap_or(1).clamp(1, 16),
            simhash_tf_cap: self.simhash_tf_cap.unwrap_or(4).max(1),
            simhash_max_df,
            simhash_df_sample: self.simhash_df_sample.unwrap_or(10_000).max(1),
            simhash_top_k: self.simhash_top_k.unwrap_or(0),
            simhash_min_features: self.simhash_min_features.unwrap_or(128),
            index: self.index,
            batch: self.batch,
            window,
            index_keys: self.index_keys.unwrap_or_default(),
            threads,
            keep: self.keep.unwrap_or(Keep::First),
            cluster: self.cluster.unwrap_or(ClusterRule::Keeper),
            allow_duplicate_ids: self.allow_duplicate_ids,
            report_group: self.report_group,
            quiet: self.quiet,
        })
    }
}

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
            o.remove("output");
            o.remove("index");
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

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Settings {
        Settings {
            input: vec!["x/*.parquet".into()],
            output: Some("out".into()),
            ..Default::default()
        }
    }

    #[test]
    fn defaults_resolve() {
        let c = base().resolve().unwrap();
        assert_eq!(c.num_perm, 128);
        assert!(c.bands * c.rows <= 128);
        assert!(lsh::candidate_probability(0.8, c.bands, c.rows) >= LSH_TARGET_RECALL);
        assert_eq!(c.keep, Keep::First);
    }

    #[test]
    fn rejects_bad_values() {
        for s in [
            Settings {
                threshold: Some(0.0),
                ..base()
            },
            Settings {
                threshold: Some(1.5),
                ..base()
            },
            Settings {
                threshold: Some(f64::NAN),
                ..base()
            },
            Settings {
                bands: Some(20),
                rows: Some(7),
                ..base()
            },
            Settings {
                bands: Some(20),
                ..base()
            },
            Settings {
                num_perm: Some(0),
                ..base()
            },
            Settings {
                output: None,
                ..base()
            },
            Settings {
                input: vec![],
                ..base()
            },
            Settings {
                hamming: Some(9),
                ..base()
            },
            Settings {
                hamming: Some(3),
                simhash_blocks: Some(3),
                ..base()
            },
        ] {
            assert!(matches!(s.resolve(), Err(Error::Config(_))));
        }
    }

    #[test]
    fn flags_override_file() {
        let file: Settings = toml::from_str(
            "threshold = 0.9\nnum-perm = 64\nkeep = \"longest\"\ntext-column = \"body\"",
        )
        .unwrap();
        let flags = Settings {
            threshold: Some(0.7),
            ..base()
        };
        let c = flags.over(file).resolve().unwrap();
        assert_eq!(c.threshold, 0.7);
        assert_eq!(c.num_perm, 64);
        assert_eq!(c.keep, Keep::Longest);
        assert_eq!(c.text_column, "body");
    }

    #[test]
    fn unknown_toml_key_is_an_error() {
        assert!(toml::from_str::<Settings>("treshold = 0.9").is_err());
    }
}
