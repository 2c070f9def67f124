//! [`Settings::resolve`]: the merged settings validated into a [`Config`], each default filled
//! in and each bad value refused with what to pass instead.

use super::*;
use crate::error::{Error, Result};
use crate::lsh;

impl Settings {
    /// Fills defaults and validates.
    pub fn resolve(self) -> Result<Config> {
        let reference = self.reference()?;
        let paragraphs = self.paragraphs()?;
        let substrings = self.substrings()?;
        let output = self.required()?;
        let threshold = self.threshold.unwrap_or(0.8);
        if !(threshold > 0.0 && threshold <= 1.0) {
            return bad(format!(
                "--threshold {threshold} is outside (0, 1]; use e.g. 0.8"
            ));
        }
        let (num_perm, bands, rows) = self.lsh(threshold)?;
        let sweep = self.sweep(threshold)?;
        let ngram = self.ngram.unwrap_or(5);
        if !(1..=64).contains(&ngram) {
            return bad(format!("--ngram {ngram} is outside 1..=64"));
        }
        let threads = self.threads()?;
        let max_bucket_pairs = self.max_bucket_pairs.unwrap_or(64);
        if max_bucket_pairs < 2 {
            return bad(format!(
                "--max-bucket-pairs {max_bucket_pairs} must be at least 2"
            ));
        }
        let (hamming, simhash_blocks, simhash_max_df) = self.simhash()?;
        let window = self.index_window()?;
        let (text_column, id_column, id_column_explicit) = self.columns()?;
        let cluster = self.cluster.unwrap_or(ClusterRule::Keeper);
        self.labels(&text_column, cluster)?;
        if reference.is_some() && cluster == ClusterRule::Components {
            return bad("--reference needs --cluster keeper (the default): a contaminated document is never kept, and a connected component would need another keeper that is no verified near-duplicate of its members".into());
        }
        Ok(Config {
            input: self.input,
            output,
            method: self.method.unwrap_or(Method::Minhash),
            text_column,
            id_column,
            id_column_explicit,
            threshold,
            sweep,
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
            work_keys: self.work_keys.unwrap_or_default(),
            threads,
            keep: self.keep.unwrap_or(Keep::First),
            cluster,
            allow_duplicate_ids: self.allow_duplicate_ids,
            report_group: self
                .report_group
                .or_else(|| self.partition_by.clone())
                .or_else(|| self.across.clone()),
            partition_by: self.partition_by,
            across: self.across,
            reference,
            paragraphs,
            substrings,
            quiet: self.quiet,
        })
    }

    /// `--sweep`: the listed thresholds, ascending and unique, the run's among them.
    fn sweep(&self, threshold: f64) -> Result<Vec<f64>> {
        if self.sweep.is_empty() {
            return Ok(Vec::new());
        }
        let mut sweep = self.sweep.clone();
        if let Some(t) = sweep.iter().find(|t| !(**t > 0.0 && **t <= 1.0)) {
            return bad(format!(
                "--sweep {t} is outside (0, 1]; list thresholds such as 0.7,0.75,0.8,0.85,0.9"
            ));
        }
        sweep.sort_by(f64::total_cmp);
        sweep.dedup();
        let given = match self.threshold {
            Some(_) => "--threshold",
            None => "the default --threshold",
        };
        if !sweep.contains(&threshold) {
            return bad(format!("--sweep does not list the run's threshold {threshold} ({given}): the manifest is that threshold's, and the sweep counts the others beside it; add {threshold} to the list, or pass --threshold as one of its values"));
        }
        if sweep.len() > MAX_SWEEP {
            return bad(format!(
                "--sweep lists {} thresholds; at most {MAX_SWEEP}",
                sweep.len()
            ));
        }
        if self.method == Some(Method::Simhash) {
            return bad("--sweep is for MinHash (the default --method): SimHash's threshold is a Hamming distance (--hamming), and a sweep over it is not supported".into());
        }
        if self.index.is_some() {
            return bad("--sweep with --index is not supported: a sweep is for choosing the threshold on a trial run; run it without --index (and --batch), then run the nightly job at the chosen --threshold".into());
        }
        Ok(sweep)
    }

    fn paragraphs(&self) -> Result<Option<ParagraphConfig>> {
        let min_bytes = self.paragraph_min_bytes.unwrap_or(PARAGRAPH_MIN_BYTES);
        match (self.paragraphs, self.paragraph_min_bytes) {
            (false, Some(_)) => bad("--paragraph-min-bytes sets which paragraphs --paragraphs may remove: give --paragraphs too".into()),
            (true, _) if min_bytes == 0 => bad("--paragraph-min-bytes 0 would remove blank-free one-character lines; use at least 1 (100 is the default)".into()),
            (true, _) => Ok(Some(ParagraphConfig { min_bytes })),
            (false, None) => Ok(None),
        }
    }

    fn substrings(&self) -> Result<Option<SubstringConfig>> {
        let min_bytes = self.substring_min_bytes.unwrap_or(SUBSTRING_MIN_BYTES);
        let range = SUBSTRING_MIN_BYTES_RANGE;
        match (self.substrings, self.substring_min_bytes) {
            (false, Some(_)) => bad("--substring-min-bytes sets which runs --substrings may remove: give --substrings too".into()),
            (true, _) if !range.contains(&min_bytes) => bad(format!(
                "--substring-min-bytes {min_bytes} is outside {}..={} (bytes; {SUBSTRING_MIN_BYTES} is the default)",
                range.start(),
                range.end()
            )),
            (true, _) if self.index.is_some() => bad("--substrings with --index is not supported yet: earlier nights' retained text is not kept in the index for it. Run --substrings without --index (each night's kept text is then deduplicated within the night), or --paragraphs, which works with --index".into()),
            (true, _) => Ok(Some(SubstringConfig { min_bytes })),
            (false, None) => Ok(None),
        }
    }

    /// The input globs are given and the output named; returns the output.
    fn required(&self) -> Result<String> {
        if self.input.is_empty() {
            return bad(
                "no input: pass --input 'GLOB' (or `input = [..]` in the config file)".into(),
            );
        }
        match &self.output {
            Some(o) if !o.trim().is_empty() => Ok(o.clone()),
            _ => bad("no output directory: pass --output DIR".into()),
        }
    }

    /// `--num-perm` and the LSH layout (`--bands` x `--rows`, or chosen from the threshold).
    fn lsh(&self, threshold: f64) -> Result<(usize, usize, usize)> {
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
        Ok((num_perm, bands, rows))
    }

    /// `--threads`, 0 or absent meaning every core.
    fn threads(&self) -> Result<usize> {
        let threads = match self.threads.unwrap_or(0) {
            0 => std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            t => t,
        };
        if threads > 1024 {
            return bad(format!("--threads {threads} is more than 1024"));
        }
        Ok(threads)
    }

    /// SimHash's `--hamming`, `--simhash-blocks` and `--simhash-max-df`.
    fn simhash(&self) -> Result<(usize, usize, f64)> {
        let hamming = self.hamming.unwrap_or(3);
        if hamming > 8 {
            return bad(format!("--hamming {hamming} is outside 0..=8"));
        }
        let blocks = self.simhash_blocks.unwrap_or(hamming + 1);
        if blocks <= hamming || blocks > 16 {
            return bad(format!(
                "--simhash-blocks {blocks} must be more than --hamming {hamming} and at most 16"
            ));
        }
        let max_df = self.simhash_max_df.unwrap_or(0.002);
        if !(max_df > 0.0 && max_df <= 1.0) {
            return bad(format!("--simhash-max-df {max_df} is outside (0, 1]"));
        }
        Ok((hamming, blocks, max_df))
    }

    /// `--index` with `--batch` (a name of letters, digits, '.', '_', '-'), and `--window`.
    fn index_window(&self) -> Result<usize> {
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
        Ok(window)
    }

    /// The text and id columns, and whether the id column was named.
    fn columns(&self) -> Result<(String, String, bool)> {
        let text_column = self.text_column.clone().unwrap_or_else(|| "text".into());
        let id_column = self.id_column.clone().unwrap_or_else(|| "id".into());
        if text_column == id_column {
            return bad(format!(
                "--text-column and --id-column are both '{text_column}'"
            ));
        }
        Ok((text_column, id_column, self.id_column.is_some()))
    }

    /// `--partition-by` and `--across`: label columns other than the text and each other;
    /// `--across` needs the keeper rule.
    fn labels(&self, text_column: &str, cluster: ClusterRule) -> Result<()> {
        for (flag, c) in [
            ("partition-by", &self.partition_by),
            ("across", &self.across),
        ] {
            match c.as_deref() {
                Some("") => return bad(format!("--{flag} needs a column name")),
                Some(c) if c == text_column => {
                    return bad(format!("--{flag} '{c}' is the text column; name a column of labels such as a language or source"))
                }
                _ => {}
            }
        }
        if let Some(a) = &self.across {
            if self.partition_by.as_ref() == Some(a) {
                return bad(format!("--partition-by and --across are both '{a}': within one value nothing could be dropped; name two different columns"));
            }
            if cluster == ClusterRule::Components {
                return bad("--across needs --cluster keeper (the default): a connected component would join copies of one value through another".into());
            }
        }
        Ok(())
    }

    /// The `--reference` settings, validated (None without `--reference`; its other options are
    /// then refused, since they would do nothing).
    fn reference(&self) -> Result<Option<ReferenceConfig>> {
        if self.reference.is_empty() {
            let given = [
                ("reference-id-column", self.reference_id_column.is_some()),
                (
                    "reference-text-column",
                    self.reference_text_column.is_some(),
                ),
                ("reference-ngram", self.reference_ngram.is_some()),
                ("reference-threshold", self.reference_threshold.is_some()),
            ];
            return match given.iter().find(|(_, g)| *g) {
                Some((flag, _)) => bad(format!(
                    "--{flag} sets how a benchmark reference is read or matched: give --reference 'GLOB' too"
                )),
                None => Ok(None),
            };
        }
        if let Some(g) = self.reference.iter().find(|g| g.trim().is_empty()) {
            return bad(format!(
                "--reference '{g}' is empty: give a Parquet or JSON Lines glob such as 'bench/*.parquet'"
            ));
        }
        let ngram = self.reference_ngram.unwrap_or(REFERENCE_NGRAM);
        if !(1..=64).contains(&ngram) {
            return bad(format!(
                "--reference-ngram {ngram} is outside 1..=64; 8 is the default, GPT-3 used 13"
            ));
        }
        let threshold = self.reference_threshold.unwrap_or(REFERENCE_THRESHOLD);
        if !(threshold > 0.0 && threshold <= 1.0) {
            return bad(format!(
                "--reference-threshold {threshold} is outside (0, 1]; use e.g. 0.3"
            ));
        }
        let id_column = self
            .reference_id_column
            .clone()
            .unwrap_or_else(|| "id".into());
        let text_column = (self.reference_text_column.clone()).unwrap_or_else(|| "text".into());
        if id_column == text_column {
            return bad(format!(
                "--reference-id-column and --reference-text-column are both '{id_column}'"
            ));
        }
        Ok(Some(ReferenceConfig {
            globs: self.reference.clone(),
            id_column,
            id_column_explicit: self.reference_id_column.is_some(),
            text_column,
            ngram,
            threshold,
        }))
    }
}

/// A configuration error with its message.
fn bad<T>(m: String) -> Result<T> {
    Err(Error::Config(m))
}
