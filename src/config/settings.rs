//! [`Settings`]: the raw, all-optional options of the command line (clap) and the TOML file
//! (serde), merged (flags over the file; validated into a [`Config`] in `resolve.rs`); and
//! [`help_with_defaults`], which shows the defaults in `--help`.

use std::path::Path;

use serde::Deserialize;

use super::*;
use crate::error::{Error, Result};

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
    /// Also count what each of these thresholds would drop (e.g. 0.7,0.75,0.8,0.85,0.9), in
    /// summary.json and the report; the manifest stays --threshold's, which must be listed.
    #[arg(long, value_name = "T,T,..", value_delimiter = ',')]
    #[serde(default)]
    pub sweep: Vec<f64>,
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
    /// A bucket with more members is giant: under keeper each member is compared with the
    /// bucket's first this-many kept documents; under components linked to its first member (no
    /// m^2 pairs either way).
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
    /// Batches the index keeps, tonight's included: older ones expire (with `--cluster keeper`,
    /// except documents a later batch in the window renewed).
    #[arg(long, value_name = "N")]
    pub window: Option<usize>,
    /// Shingle keys the index keeps per document (MinHash): all (exact near the threshold) or
    /// short (compact: short documents only).
    #[arg(long, value_enum)]
    pub index_keys: Option<IndexKeys>,
    /// Where exact verification gets shingle keys: stored (written for every document by the
    /// signatures stage: fastest while they fit in memory) or remade (made again from the shards
    /// for the documents that need them, and under MinHash without --index the signatures too,
    /// for the documents candidate pairs name: a fifth to a half of the work directory, for a
    /// second read of the input; faster once stored keys would not fit in memory); auto (the
    /// default) picks remade for an object-store work directory or keys beyond half the memory,
    /// stored otherwise. The same results always.
    #[arg(long, value_enum)]
    pub work_keys: Option<WorkKeys>,
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
    /// A column to break the report's drop rates down by (a domain or source column; default:
    /// the --partition-by or --across column).
    #[arg(long, value_name = "COLUMN")]
    pub report_group: Option<String>,
    /// Compare a document only with documents of the same value of this column (string,
    /// integer or boolean; null is a value of its own): the same result as one run per value.
    #[arg(long, value_name = "COLUMN")]
    pub partition_by: Option<String>,
    /// Drop a document only against a kept document with another value of this column (string,
    /// integer or boolean): near-duplicates within one value are all kept.
    #[arg(long, value_name = "COLUMN")]
    pub across: Option<String>,
    /// Benchmark reference (Parquet or JSON Lines glob, local or s3://; repeat for several): a document holding
    /// a reference item's text is dropped (contaminated_by, contamination in the manifest).
    #[arg(long = "reference", value_name = "GLOB")]
    #[serde(default)]
    pub reference: Vec<String>,
    /// Name of the reference's id column.
    #[arg(long, value_name = "NAME")]
    pub reference_id_column: Option<String>,
    /// Name of the reference's text column.
    #[arg(long, value_name = "NAME")]
    pub reference_text_column: Option<String>,
    /// Reference matching: n-grams of this many tokens.
    #[arg(long, value_name = "N")]
    pub reference_ngram: Option<usize>,
    /// Reference matching: a document is contaminated when it holds at least this share of an
    /// item's n-grams (those of 2 or more items, the benchmark's boilerplate, left out).
    #[arg(long, value_name = "SHARE")]
    pub reference_threshold: Option<f64>,
    /// Paragraph dedup: in keep order, a paragraph of a kept document that an earlier kept
    /// document (or the same one) already holds is listed in drop_spans for `apply` to remove.
    #[arg(long)]
    #[serde(default)]
    pub paragraphs: bool,
    /// Paragraph dedup: paragraphs shorter than this many bytes (headings, short lines) stay.
    #[arg(long, value_name = "BYTES")]
    pub paragraph_min_bytes: Option<usize>,
    /// Exact substring dedup: in keep order, a byte of a kept document inside a run of at
    /// least --substring-min-bytes bytes that an earlier kept document's retained text (or this
    /// one's, earlier) holds is listed in drop_spans for `apply` to remove.
    #[arg(long)]
    #[serde(default)]
    pub substrings: bool,
    /// Exact substring dedup: the shortest repeated run removed, in bytes (32 to 1048576).
    #[arg(long, value_name = "BYTES")]
    pub substring_min_bytes: Option<usize>,
    /// No progress bars.
    #[arg(long)]
    #[serde(default)]
    pub quiet: bool,
}

impl Settings {
    /// Reads a TOML settings file.
    pub fn from_toml_file(path: &Path) -> Result<Settings> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::ConfigFile {
            path: path.to_path_buf(),
            source: e.into(),
        })?;
        toml::from_str(&text).map_err(|e| Error::ConfigFile {
            path: path.to_path_buf(),
            source: e.into(),
        })
    }

    /// Settings by name (kebab-case, as the config file and the flags spell them) with their
    /// values as JSON: the Python package's keyword arguments. A name the job does not have is
    /// [`Error::UnknownSetting`]; a value that does not fit, [`Error::BadSetting`] naming it.
    pub fn from_values(values: serde_json::Map<String, serde_json::Value>) -> Result<Settings> {
        let known = Settings::names();
        if let Some(name) = values.keys().find(|k| !known.contains(k)) {
            return Err(Error::UnknownSetting {
                name: name.clone(),
                known,
            });
        }
        // One at a time, so that an error names the setting whose value does not fit.
        let mut out = Settings::default();
        for (name, value) in values {
            let one = serde_json::Map::from_iter([(name.clone(), value)]);
            let one: Settings = serde_json::from_value(one.into())
                .map_err(|source| Error::BadSetting { name, source })?;
            out = one.over(out);
        }
        Ok(out)
    }

    /// The names of the settings (the flags of `run` that a config file can also give).
    pub fn names() -> Vec<String> {
        let cmd = <Settings as clap::Args>::augment_args(clap::Command::new("settings"));
        cmd.get_arguments()
            .filter_map(|a| a.get_long().map(str::to_string))
            .collect()
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
            sweep: if self.sweep.is_empty() {
                base.sweep
            } else {
                self.sweep
            },
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
            work_keys: self.work_keys.or(base.work_keys),
            threads: self.threads.or(base.threads),
            keep: self.keep.or(base.keep),
            cluster: self.cluster.or(base.cluster),
            allow_duplicate_ids: self.allow_duplicate_ids || base.allow_duplicate_ids,
            report_group: self.report_group.or(base.report_group),
            partition_by: self.partition_by.or(base.partition_by),
            across: self.across.or(base.across),
            reference: if self.reference.is_empty() {
                base.reference
            } else {
                self.reference
            },
            reference_id_column: self.reference_id_column.or(base.reference_id_column),
            reference_text_column: self.reference_text_column.or(base.reference_text_column),
            reference_ngram: self.reference_ngram.or(base.reference_ngram),
            reference_threshold: self.reference_threshold.or(base.reference_threshold),
            paragraphs: self.paragraphs || base.paragraphs,
            paragraph_min_bytes: self.paragraph_min_bytes.or(base.paragraph_min_bytes),
            substrings: self.substrings || base.substrings,
            substring_min_bytes: self.substring_min_bytes.or(base.substring_min_bytes),
            quiet: self.quiet || base.quiet,
        }
    }
}

/// Settings without a fixed default: the required ones, and those that follow from other
/// settings or the machine (their help says how).
const NO_FIXED_DEFAULT: [&str; 7] = [
    "input",
    "output",
    "bands",
    "rows",
    "simhash_blocks",
    "threads",
    "work_keys",
];

/// `cmd` (a command that takes the [`Settings`] flags) with each option's default at the end of
/// its help (`[default: 0.8]`), read from the [`Config`] that settings without values resolve to:
/// the defaults shown are the ones a run uses. A `--config` file still overrides them, and flags
/// override the file.
pub fn help_with_defaults(cmd: clap::Command) -> clap::Command {
    let empty = Settings {
        input: vec!["-".into()],
        output: Some("-".into()),
        reference: vec!["-".into()],
        paragraphs: true,
        substrings: true,
        ..Settings::default()
    };
    let Ok(defaults) = empty.resolve() else {
        return cmd;
    };
    let json = defaults.to_json();
    let shown: Vec<(String, String)> = cmd
        .get_arguments()
        .filter_map(|a| {
            let id = a.get_id().as_str();
            if NO_FIXED_DEFAULT.contains(&id) {
                return None;
            }
            // The reference's options are under "reference" (`reference_ngram`: its "ngram").
            // And the paragraphs' under "paragraphs" (`paragraph_min_bytes`: its "min_bytes").
            // And the substrings' under "substrings".
            let value = match (
                id.strip_prefix("reference_"),
                id.strip_prefix("paragraph_"),
                id.strip_prefix("substring_"),
            ) {
                (Some(key), _, _) => json.get("reference")?.get(key)?,
                (_, Some(key), _) => json.get("paragraphs")?.get(key)?,
                (_, _, Some(key)) => json.get("substrings")?.get(key)?,
                _ => json.get(id)?,
            };
            let value = match value {
                serde_json::Value::String(s) => s.clone(),
                v @ serde_json::Value::Number(_) => v.to_string(),
                _ => return None,
            };
            Some((id.to_string(), value))
        })
        .collect();
    shown.into_iter().fold(cmd, |cmd, (id, value)| {
        cmd.mut_arg(id, |a| {
            let help = a.get_help().map(ToString::to_string).unwrap_or_default();
            a.help(format!("{help} [default: {value}]"))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_by_name_name_what_is_wrong() {
        let values = |json: &str| match serde_json::from_str(json).unwrap() {
            serde_json::Value::Object(m) => Settings::from_values(m),
            _ => unreachable!(),
        };
        let s = values(r#"{"threshold": 0.9, "input": ["a/*.parquet"], "quiet": true}"#).unwrap();
        assert_eq!(
            (s.threshold, s.input, s.quiet),
            (Some(0.9), vec!["a/*.parquet".into()], true)
        );
        match values(r#"{"thresold": 0.9}"#).unwrap_err() {
            Error::UnknownSetting { name, known } => {
                assert_eq!(name, "thresold");
                assert!(known.iter().any(|k| k == "threshold"));
            }
            e => panic!("{e}"),
        }
        let e = values(r#"{"num-perm": "many"}"#).unwrap_err();
        assert!(
            matches!(&e, Error::BadSetting { name, .. } if name == "num-perm"),
            "{e}"
        );
        assert_eq!(e.kind(), crate::error::ErrorKind::Config);
        // Every flag's name is a setting a file (and so a name) can give.
        for name in Settings::names() {
            let err = values(&format!(r#"{{"{name}": null}}"#)).err();
            assert!(!matches!(err, Some(Error::UnknownSetting { .. })), "{name}");
        }
    }

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
        assert!(crate::lsh::candidate_probability(0.8, c.bands, c.rows) >= LSH_TARGET_RECALL);
        assert_eq!(c.keep, Keep::First);
    }

    #[test]
    fn settings_absent_from_older_records_read_as_they_were_then() {
        // A configuration recorded before `sketch` and `cluster` were settings: classic and
        // components, whatever today's defaults are.
        let mut v = base().resolve().unwrap().to_json();
        let o = v.as_object_mut().unwrap();
        o.remove("sketch");
        o.remove("cluster");
        let c: Config = serde_json::from_value(v).unwrap();
        assert_eq!(
            (c.sketch, c.cluster),
            (Sketch::Classic, ClusterRule::Components)
        );
        assert_eq!(base().resolve().unwrap().sketch, Sketch::Oph);
    }

    #[test]
    fn a_sweep_is_sorted_and_unique_and_holds_the_threshold() {
        let sweep = |list: &[f64], threshold: Option<f64>| {
            Settings {
                sweep: list.to_vec(),
                threshold,
                ..base()
            }
            .resolve()
            .map(|c| c.sweep)
        };
        assert_eq!(sweep(&[0.9, 0.7, 0.8, 0.7], None).unwrap(), [0.7, 0.8, 0.9]);
        assert_eq!(sweep(&[0.9, 0.75], Some(0.75)).unwrap(), [0.75, 0.9]);
        assert!(sweep(&[], None).unwrap().is_empty());
        assert!(sweep(&[0.7, 0.9], None).is_err());
        assert!(sweep(&[0.8, f64::NAN], None).is_err());
        let many: Vec<f64> = (1..=20).map(|i| f64::from(i) / 20.0).collect();
        assert!(sweep(&many, None).is_err());
        // The sweep changes no result: the manifest's configuration leaves it out.
        let c = Settings {
            sweep: vec![0.7, 0.8],
            ..base()
        }
        .resolve()
        .unwrap();
        assert!(c.to_json().get("sweep").is_some());
        assert_eq!(c.result_json(), base().resolve().unwrap().result_json());
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
    fn keep_ranks_a_column_of_labels() {
        let k: Keep = "source=wiki, books,web".parse().unwrap();
        let want = Keep::Ranked {
            column: "source".into(),
            values: vec!["wiki".into(), "books".into(), "web".into()],
        };
        assert_eq!(k, want);
        assert_eq!(serde_json::to_value(&k).unwrap(), "source=wiki,books,web");
        assert_eq!(k.column(), Some("source"));
        for bad in ["=a,b", "s=", "s=a,,b", "s=a,b,a"] {
            assert!(bad.parse::<Keep>().is_err(), "{bad}");
        }
        assert_eq!("n".parse::<Keep>().unwrap(), Keep::Column("n".into()));
    }

    #[test]
    fn unknown_toml_key_is_an_error() {
        assert!(toml::from_str::<Settings>("treshold = 0.9").is_err());
    }
}
