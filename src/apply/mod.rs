//! `corpus-dedup apply`: the manifest's decisions applied to the input shards.
//!
//! One output shard per input shard, under the same file name, with the input's schema, column
//! order, row order, codec and row-group boundaries, and its kept rows only; with `--dropped`,
//! the dropped rows too (in a second directory, with the manifest's `duplicate_of` and
//! `similarity` columns appended) for audit. Rehydration: `--cluster-size-column NAME` appends
//! the manifest's cluster size to the rows written, and `--upsample` repeats each kept row by
//! its cluster size (the copies next to each other, in the row group of the original).
//!
//! With `--paragraphs` a kept row's text is written with its `drop_spans` cut out (checked
//! first: ordered, inside the text, on character boundaries, or an error naming the row); a row
//! left with no text stays a row, so the kept rows are the manifest's. `--dropped` then also
//! gets the kept rows that lost paragraphs, whole, with `keep` and `drop_spans`: everything
//! removed is in the audit.
//!
//! Invariants:
//! - Nothing is written unless every input shard is the one the run read (size and Parquet
//!   footer fingerprint recorded in the manifest): the manifest names rows by position.
//! - A shard is read one row group at a time (memory: one row group, plus the whole object for an
//!   `s3://` shard) and written under a temporary name / as one upload, so an output file is
//!   complete or absent.
//! - An output already holding this manifest's rows of this shard (tagged in its metadata) is
//!   skipped, so a rerun after a crash writes only the rest, and the bytes of every file depend
//!   only on the shard and the manifest.

use std::time::Instant;

use polars::prelude::*;

use crate::error::{Error, Result};
use crate::io::input::Footer;
use crate::io::output::OutputDir;
use crate::results::{Manifest, RecordedInput};

mod convert;
mod jsonl;
mod options;
mod parquet;
mod spans;

pub(crate) use options::dry_run_table;
pub use options::{ApplyOptions, OutputFormat};
pub(crate) use options::{ApplyReport, ShardReport};
pub use spans::DropSpans;

/// Metadata key of an output shard: which input and which rows of it the file holds.
const TAG_KEY: &str = "corpus_dedup.apply";

/// Columns appended to the dropped rows, from the manifest.
const AUDIT_COLUMNS: [&str; 3] = ["duplicate_of", "similarity", "duplicate_of_batch"];

/// Runs `apply`.
pub(crate) fn apply(opts: &ApplyOptions) -> Result<ApplyReport> {
    let start = Instant::now();
    let m = Manifest::read(&opts.manifest)?;
    let by_input = m.rows_by_input()?;
    let keep: Vec<bool> = m
        .column("keep")?
        .bool()
        .map_err(|e| manifest_err(&m, e))?
        .iter()
        .map(|k| k.unwrap_or(true))
        .collect();
    let names = output_names(&m.inputs, opts.format)?;
    let spans = DropSpans::read(&m)?;
    // Each manifest row's copies in the kept file (1, or by its cluster size with --upsample).
    let copies: Vec<u32> = match &opts.upsample {
        None => Vec::new(),
        Some(up) => m
            .columns()?
            .cluster_size
            .ok_or_else(|| manifest_err(&m, "it has no cluster_size column (written by corpus-dedup before 2026-11-26), which --upsample reads; run the job again with this version"))?
            .iter()
            .map(|s| up.copies(s.unwrap_or(1)))
            .collect(),
    };
    let size_column = match &opts.cluster_size_column {
        None => None,
        Some(name) => Some(
            m.column("cluster_size")
                .map_err(|_| manifest_err(&m, "it has no cluster_size column (written by corpus-dedup before 2026-11-26); run the job again with this version"))?
                .clone()
                .with_name(name.as_str().into()),
        ),
    };
    // The settings that decide the manifest, less the input globs (a shard is known by its
    // fingerprint, wherever it was read from).
    let settings = {
        let mut v = m.config.result_json();
        if let Some(o) = v.as_object_mut() {
            o.remove("input");
            // What apply adds to the rows changes the files too.
            let (up, col) = (&opts.upsample, &opts.cluster_size_column);
            o.insert(
                "upsample".into(),
                up.as_ref().map(ToString::to_string).into(),
            );
            o.insert("cluster_size_column".into(), col.clone().into());
            let format = opts.format.map(|f| f.extension().trim_start_matches('.'));
            o.insert("format".into(), format.into());
        }
        v.to_string()
    };
    // Every shard is checked before anything is written.
    let footers: Vec<Option<Footer>> = {
        use rayon::prelude::*;
        m.inputs
            .par_iter()
            .map(RecordedInput::check_unchanged)
            .collect::<Result<_>>()?
    };
    let kept_dir = OutputDir::parse(&opts.output);
    let dropped_dir = opts.dropped.as_deref().map(OutputDir::parse);
    for dir in std::iter::once(&kept_dir).chain(&dropped_dir) {
        check_not_inputs(dir, &names, &m.inputs)?;
    }
    if !opts.dry_run {
        kept_dir.prepare()?;
        if let Some(d) = &dropped_dir {
            d.prepare()?;
        }
    }
    let total_rows: u64 = m.inputs.iter().map(|f| f.rows).sum();
    let pb = crate::progress::bar(opts.quiet || opts.dry_run, total_rows, "apply", "rows");
    let mut shards = Vec::with_capacity(m.inputs.len());
    for (i, src) in m.inputs.iter().enumerate() {
        let rows = &by_input[i];
        let mask: Vec<bool> = rows.iter().map(|&r| keep[r as usize]).collect();
        // The audit's rows: the dropped ones, and those kept that lost paragraphs.
        let audited: Vec<bool> = (rows.iter().zip(&mask))
            .map(|(&r, &k)| !k || spans.as_ref().is_some_and(|s| !s.of(r as usize).is_empty()))
            .collect();
        let kept = mask.iter().filter(|&&k| k).count() as u64;
        let repeat: Vec<u32> = match copies.is_empty() {
            true => Vec::new(),
            false => rows.iter().map(|&r| copies[r as usize]).collect(),
        };
        let written = match repeat.is_empty() {
            true => kept,
            false => (mask.iter().zip(&repeat))
                .filter(|(&k, _)| k)
                .map(|(_, &c)| u64::from(c))
                .sum(),
        };
        let mut report = ShardReport {
            input: src.file.clone(),
            name: names[i].clone(),
            rows_in: src.rows,
            rows_kept: kept,
            rows_dropped: src.rows - kept,
            rows_written: written,
            bytes_in: src.bytes,
            bytes_out: (src.bytes as f64 * written as f64 / src.rows.max(1) as f64).round() as u64,
            already_complete: false,
        };
        if !opts.dry_run {
            let format = opts.format.unwrap_or(match footers[i] {
                Some(_) => OutputFormat::Parquet,
                None => match crate::io::jsonl::compression(&src.file) {
                    crate::io::jsonl::Compression::None => OutputFormat::Jsonl,
                    crate::io::jsonl::Compression::Gzip => OutputFormat::JsonlGz,
                    crate::io::jsonl::Compression::Zstd => OutputFormat::JsonlZst,
                },
            });
            let shard = Shard {
                src,
                format,
                footer: footers[i].as_ref(),
                mask: &mask,
                rows,
                repeat: &repeat,
                size_column: size_column.as_ref(),
                spans: spans.as_ref(),
                audited: &audited,
                text_column: match crate::index::fold::is_fold_file(&src.file) {
                    true => "text",
                    false => &m.config.text_column,
                },
            };
            let tag = shard.tag(&settings);
            let existing = |dir: &OutputDir| match format {
                OutputFormat::Parquet => parquet::existing_tag(dir, &names[i]),
                _ => Ok(jsonl::existing_tag(dir, &names[i])),
            };
            let kept_done = existing(&kept_dir)? == Some(tag.clone());
            let dropped_done = match &dropped_dir {
                Some(d) => existing(d)? == Some(tag.clone()),
                None => true,
            };
            if kept_done && dropped_done {
                report.already_complete = true;
            } else {
                let dropped = dropped_dir.as_ref().filter(|_| !dropped_done);
                let out = Outputs {
                    kept: &kept_dir,
                    dropped,
                    name: &names[i],
                    tag: &tag,
                    pb: &pb,
                };
                shard.write(&m, &out)?;
            }
            report.bytes_out = output_size(&kept_dir, &names[i])?;
        }
        if report.already_complete {
            pb.inc(src.rows);
        }
        shards.push(report);
    }
    pb.finish_and_clear();
    let sum = |f: fn(&ShardReport) -> u64| shards.iter().map(f).sum::<u64>();
    Ok(ApplyReport {
        manifest: opts.manifest.clone(),
        output: opts.output.clone(),
        dropped: opts.dropped.clone(),
        dry_run: opts.dry_run,
        shards_written: shards
            .iter()
            .filter(|s| !s.already_complete && !opts.dry_run)
            .count(),
        shards_already_complete: shards.iter().filter(|s| s.already_complete).count(),
        rows_in: sum(|s| s.rows_in),
        rows_kept: sum(|s| s.rows_kept),
        rows_dropped: sum(|s| s.rows_dropped),
        rows_written: sum(|s| s.rows_written),
        bytes_in: sum(|s| s.bytes_in),
        bytes_out: sum(|s| s.bytes_out),
        shards,
        seconds: start.elapsed().as_secs_f64(),
    })
}

pub(super) fn manifest_err(m: &Manifest, e: impl Into<crate::error::FileError>) -> Error {
    Error::Manifest {
        path: m.location.clone(),
        source: e.into(),
    }
}

/// The output file name of each input: its own file name (with `format`'s extension in place
/// of its own, when given), which must be unique.
fn output_names(inputs: &[RecordedInput], format: Option<OutputFormat>) -> Result<Vec<String>> {
    let names: Vec<String> = inputs
        .iter()
        .map(|f| {
            let name = f.file.rsplit('/').next().unwrap_or(&f.file);
            match format {
                Some(format) => format!("{}{}", stem(name), format.extension()),
                None => name.to_string(),
            }
        })
        .collect();
    let mut seen = std::collections::HashMap::new();
    for (name, f) in names.iter().zip(inputs) {
        if let Some(other) = seen.insert(name.as_str(), f.file.as_str()) {
            return Err(Error::SameOutputName {
                first: other.to_string(),
                second: f.file.clone(),
                name: name.clone(),
            });
        }
    }
    Ok(names)
}

/// Refuses outputs in `dir` that would replace an input shard (`--output` naming the input
/// directory, say): the manifest would no longer fit, and the input would be lost.
fn check_not_inputs(dir: &OutputDir, names: &[String], inputs: &[RecordedInput]) -> Result<()> {
    let same = |out: &str, input: &str| match dir.local_dir() {
        Some(_) => match (std::fs::canonicalize(out), std::fs::canonicalize(input)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        },
        None => out == input,
    };
    for (name, src) in names.iter().zip(inputs) {
        let out = dir.location(name);
        if same(&out, &src.file) {
            return Err(Error::OutputOverInput {
                output: out,
                input: src.file.clone(),
            });
        }
    }
    Ok(())
}

/// A file name without its format's extension (`a.jsonl.gz`, `a.parquet`: `a`), by the names
/// the input reader knows.
fn stem(name: &str) -> &str {
    let base = crate::io::jsonl::without_compression(name);
    let lower = base.to_ascii_lowercase();
    std::iter::once(".parquet")
        .chain(crate::io::jsonl::EXTENSIONS)
        .find(|e| lower.ends_with(e))
        .map_or(base, |e| &base[..base.len() - e.len()])
}

fn output_size(dir: &OutputDir, name: &str) -> Result<u64> {
    let location = dir.location(name);
    match dir.local_dir() {
        Some(d) => std::fs::metadata(d.join(name))
            .map(|m| m.len())
            .map_err(|e| Error::Output {
                path: location,
                source: e.into(),
            }),
        None => crate::io::object::size(&location),
    }
}

/// One input shard to apply the manifest to.
struct Shard<'a> {
    src: &'a RecordedInput,
    /// The format written.
    format: OutputFormat,
    /// `None` for a JSON Lines shard.
    footer: Option<&'a Footer>,
    /// Kept flag of each row.
    mask: &'a [bool],
    /// The manifest row of each row.
    rows: &'a [u32],
    /// Copies of each kept row (`--upsample`; empty: one each).
    repeat: &'a [u32],
    /// The manifest's cluster sizes under the `--cluster-size-column` name (all manifest rows).
    size_column: Option<&'a Column>,
    /// `--paragraphs`: each manifest row's removed spans.
    spans: Option<&'a DropSpans>,
    /// Rows of the audit file (`--dropped`).
    audited: &'a [bool],
    text_column: &'a str,
}

impl Shard<'_> {
    /// What an output written from this shard holds: the shard's fingerprint, the rows kept, and
    /// the run's settings (the same input and settings give the same manifest, so also the same
    /// `duplicate_of` and `similarity` of the dropped rows).
    fn tag(&self, settings: &str) -> String {
        let bits: Vec<u8> = self.mask.iter().map(|&k| u8::from(k)).collect();
        format!(
            "{{\"input\":\"{}\",\"keep\":\"{:016x}\",\"settings\":\"{:016x}\"}}",
            self.src.fingerprint,
            xxhash_rust::xxh3::xxh3_64(&bits),
            xxhash_rust::xxh3::xxh3_64(settings.as_bytes())
        )
    }

    /// Writes the kept rows into `kept` (and the dropped ones into `dropped`), one row group at
    /// a time.
    fn write(&self, m: &Manifest, out: &Outputs) -> Result<()> {
        let Some(footer) = self.footer else {
            return jsonl::write(self, m, out);
        };
        match self.format {
            OutputFormat::Parquet => self.write_rows(m, out, footer),
            _ => jsonl::write_tagged(out, || self.write_rows(m, out, footer)),
        }
    }
}

/// Where one shard's outputs go: the kept file (and the audit's, with `--dropped`) named `name`
/// in their directories, the tag they get, and the progress bar.
#[derive(Clone, Copy)]
struct Outputs<'a> {
    kept: &'a OutputDir,
    dropped: Option<&'a OutputDir>,
    name: &'a str,
    tag: &'a str,
    pb: &'a indicatif::ProgressBar,
}

/// The Parquet writer of an output shard.
/// `arrow_schema`: the input's Arrow schema (its `ARROW:schema` metadata), kept for the kept
/// rows' file, so Arrow readers see the input's types (say `string`, where polars would record
/// `string_view`); the physical Parquet types are the same either way.
fn shard_writer<W: std::io::Write>(
    w: W,
    codec: ParquetCompression,
    row_group: usize,
    tag: &str,
    arrow_schema: Option<&str>,
) -> ParquetWriter<W> {
    let mut kv = vec![(TAG_KEY.to_string(), tag.to_string())];
    if let Some(s) = arrow_schema {
        kv.insert(0, (ARROW_SCHEMA_KEY.to_string(), s.to_string()));
    }
    ParquetWriter::new(w)
        .with_compression(codec)
        .with_row_group_size(Some(row_group))
        .with_key_value_metadata(Some(KeyValueMetadata::from_static(kv)))
}

/// The metadata key of a Parquet file's Arrow schema.
const ARROW_SCHEMA_KEY: &str = "ARROW:schema";

#[cfg(test)]
mod tests {
    #[test]
    fn stems_drop_the_format_and_compression_extensions() {
        for (name, stem) in [
            ("a.parquet", "a"),
            ("b.JSONL.gz", "b"),
            ("c.json.zst", "c"),
            ("d.ndjson", "d"),
            ("e.tar.gz", "e.tar"),
            ("f", "f"),
        ] {
            assert_eq!(super::stem(name), stem, "{name}");
        }
    }
}
