//! `corpus-dedup apply`: the manifest's decisions applied to the input shards.
//!
//! One output shard per input shard, under the same file name, with the input's schema, column
//! order, row order, codec and row-group boundaries, and its kept rows only; with `--dropped`,
//! the dropped rows too (in a second directory, with the manifest's `duplicate_of` and
//! `similarity` columns appended) for audit.
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
use serde::Serialize;

use crate::error::{Error, Result};
use crate::io::input::{self, Footer};
use crate::io::output::OutputDir;
use crate::results::{Manifest, RecordedInput};

/// What `apply` is asked to do (its command-line flags).
#[derive(Debug, Clone, clap::Args)]
pub struct ApplyOptions {
    /// The manifest a run wrote (OUT/manifest.parquet, local or s3://).
    #[arg(long, value_name = "FILE|URL")]
    pub manifest: String,
    /// Directory (or s3:// prefix) for the kept rows.
    #[arg(long, value_name = "DIR|URL")]
    pub output: String,
    /// Also write the dropped rows here, with duplicate_of and similarity, for audit.
    #[arg(long, value_name = "DIR|URL")]
    pub dropped: Option<String>,
    /// Print rows and bytes per shard; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// One input shard's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct ShardReport {
    pub input: String,
    /// The output file name (the input's).
    pub name: String,
    pub rows_in: u64,
    pub rows_kept: u64,
    pub rows_dropped: u64,
    pub bytes_in: u64,
    /// Bytes of the kept rows' file (for a dry run: the input's bytes times the kept share).
    pub bytes_out: u64,
    /// The output already held this manifest's rows (a rerun), so it was not written again.
    pub already_complete: bool,
}

/// What `apply` did (printed as JSON at the end).
#[derive(Debug, Clone, Serialize)]
pub struct ApplyReport {
    pub manifest: String,
    pub output: String,
    pub dropped: Option<String>,
    pub dry_run: bool,
    pub shards: Vec<ShardReport>,
    pub shards_written: usize,
    pub shards_already_complete: usize,
    pub rows_in: u64,
    pub rows_kept: u64,
    pub rows_dropped: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub seconds: f64,
}

/// The per-shard table of a dry run, for a person.
pub fn dry_run_table(report: &ApplyReport) -> String {
    use crate::progress::thousands as t;
    let width = report
        .shards
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let mut out = format!(
        "{:<width$} {:>12} {:>12} {:>12} {:>14} {:>14}\n",
        "shard", "rows", "kept", "dropped", "bytes", "kept bytes ~"
    );
    let line = |name: &str, r: [u64; 5]| {
        format!(
            "{name:<width$} {:>12} {:>12} {:>12} {:>14} {:>14}\n",
            t(r[0]),
            t(r[1]),
            t(r[2]),
            t(r[3]),
            t(r[4])
        )
    };
    for s in &report.shards {
        out += &line(
            &s.name,
            [
                s.rows_in,
                s.rows_kept,
                s.rows_dropped,
                s.bytes_in,
                s.bytes_out,
            ],
        );
    }
    out += &line(
        "total",
        [
            report.rows_in,
            report.rows_kept,
            report.rows_dropped,
            report.bytes_in,
            report.bytes_out,
        ],
    );
    out
}

/// Metadata key of an output shard: which input and which rows of it the file holds.
const TAG_KEY: &str = "corpus_dedup.apply";

/// Columns appended to the dropped rows, from the manifest.
const AUDIT_COLUMNS: [&str; 3] = ["duplicate_of", "similarity", "duplicate_of_batch"];

/// Runs `apply`.
pub fn apply(opts: &ApplyOptions) -> Result<ApplyReport> {
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
    let names = output_names(&m.inputs)?;
    // The settings that decide the manifest, less the input globs (a shard is known by its
    // fingerprint, wherever it was read from).
    let settings = {
        let mut v = m.config.result_json();
        if let Some(o) = v.as_object_mut() {
            o.remove("input");
        }
        v.to_string()
    };
    // Every shard is checked before anything is written.
    let footers: Vec<Footer> = {
        use rayon::prelude::*;
        m.inputs
            .par_iter()
            .map(RecordedInput::check_unchanged)
            .collect::<Result<_>>()?
    };
    let kept_dir = OutputDir::parse(&opts.output);
    let dropped_dir = opts.dropped.as_deref().map(OutputDir::parse);
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
        let kept = mask.iter().filter(|&&k| k).count() as u64;
        let mut report = ShardReport {
            input: src.file.clone(),
            name: names[i].clone(),
            rows_in: src.rows,
            rows_kept: kept,
            rows_dropped: src.rows - kept,
            bytes_in: src.bytes,
            bytes_out: (src.bytes as f64 * kept as f64 / src.rows.max(1) as f64).round() as u64,
            already_complete: false,
        };
        if !opts.dry_run {
            let shard = Shard {
                src,
                footer: &footers[i],
                mask: &mask,
                rows,
            };
            let tag = shard.tag(&settings);
            let kept_done = existing_tag(&kept_dir, &names[i])? == Some(tag.clone());
            let dropped_done = match &dropped_dir {
                Some(d) => existing_tag(d, &names[i])? == Some(tag.clone()),
                None => true,
            };
            if kept_done && dropped_done {
                report.already_complete = true;
            } else {
                let dropped = dropped_dir.as_ref().filter(|_| !dropped_done);
                shard.write(&m, &kept_dir, dropped, &names[i], &tag, &pb)?;
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
        bytes_in: sum(|s| s.bytes_in),
        bytes_out: sum(|s| s.bytes_out),
        shards,
        seconds: start.elapsed().as_secs_f64(),
    })
}

fn manifest_err(m: &Manifest, e: impl std::fmt::Display) -> Error {
    Error::Manifest {
        path: m.location.clone(),
        msg: e.to_string(),
    }
}

/// The output file name of each input: its own file name, which must be unique.
fn output_names(inputs: &[RecordedInput]) -> Result<Vec<String>> {
    let names: Vec<String> = inputs
        .iter()
        .map(|f| f.file.rsplit('/').next().unwrap_or(&f.file).to_string())
        .collect();
    let mut seen = std::collections::HashMap::new();
    for (name, f) in names.iter().zip(inputs) {
        if let Some(other) = seen.insert(name.as_str(), f.file.as_str()) {
            return Err(Error::Request(format!(
                "inputs '{other}' and '{}' have the same file name '{name}', so their outputs would overwrite each other: apply writes one file per input under its own name; rename one of the shards (and run again), or apply the manifest of each directory's run separately",
                f.file
            )));
        }
    }
    Ok(names)
}

/// The tag of an existing output file, `None` when there is none (or it has no tag).
fn existing_tag(dir: &OutputDir, name: &str) -> Result<Option<String>> {
    let location = dir.location(name);
    // A missing or unreadable file counts as absent: it is written (again).
    let Ok(footer) = Footer::read(&location) else {
        return Ok(None);
    };
    let Ok(meta) = footer.metadata(&location) else {
        return Ok(None);
    };
    Ok(meta
        .key_value_metadata()
        .iter()
        .flatten()
        .find(|kv| kv.key == TAG_KEY)
        .and_then(|kv| kv.value.clone()))
}

fn output_size(dir: &OutputDir, name: &str) -> Result<u64> {
    let location = dir.location(name);
    match dir.local_dir() {
        Some(d) => std::fs::metadata(d.join(name))
            .map(|m| m.len())
            .map_err(|e| Error::Output {
                path: location,
                msg: e.to_string(),
            }),
        None => crate::io::object::size(&location),
    }
}

/// One input shard to apply the manifest to.
struct Shard<'a> {
    src: &'a RecordedInput,
    footer: &'a Footer,
    /// Kept flag of each row.
    mask: &'a [bool],
    /// The manifest row of each row.
    rows: &'a [u32],
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
    fn write(
        &self,
        m: &Manifest,
        kept: &OutputDir,
        dropped: Option<&OutputDir>,
        name: &str,
        tag: &str,
        pb: &indicatif::ProgressBar,
    ) -> Result<()> {
        let file = &self.src.file;
        let perr = |e: PolarsError| Error::Parquet {
            file: file.clone(),
            msg: e.to_string(),
        };
        let meta = self.footer.metadata(file)?;
        let groups: Vec<u64> = meta
            .row_groups
            .iter()
            .map(|g| g.num_rows() as u64)
            .collect();
        let codec = meta
            .row_groups
            .iter()
            .flat_map(|g| g.parquet_columns().first())
            .map(|c| codec(c.compression()))
            .next()
            .unwrap_or(ParquetCompression::Uncompressed);
        let bytes = if crate::io::object::is_url(file) {
            crate::io::object::get_all(std::slice::from_ref(file))?.pop()
        } else {
            None
        };
        let mut lf = input::scan(file, bytes)?;
        let schema = lf.collect_schema().map_err(perr)?;
        let audit = match dropped {
            Some(_) => Some(self.audit_columns(m, &schema)?),
            None => None,
        };
        let arrow_schema = meta
            .key_value_metadata()
            .iter()
            .flatten()
            .find(|kv| kv.key == ARROW_SCHEMA_KEY)
            .and_then(|kv| kv.value.as_deref());
        let largest = groups.iter().copied().max().unwrap_or(1).max(1) as usize;
        // Both files are written in one pass over the row groups: the kept file's writer runs
        // on this thread, the dropped one's (if any) is fed the same groups through a channel.
        let dropped_schema = audit.as_ref().map(|a| {
            let mut s = (*schema).clone();
            for c in a {
                s.with_column(c.name().clone(), c.dtype().clone());
            }
            s
        });
        let out_err = |dir: &OutputDir, e: PolarsError| Error::Output {
            path: dir.location(name),
            msg: e.to_string(),
        };
        std::thread::scope(|scope| -> Result<()> {
            let (tx, rx) = std::sync::mpsc::sync_channel::<DataFrame>(1);
            let audit_writer = match (dropped, &dropped_schema) {
                (Some(dir), Some(ds)) => Some(scope.spawn(move || {
                    dir.write_with(name, |w| {
                        let mut bw = shard_writer(w, codec, largest, tag, None)
                            .batched(ds)
                            .map_err(|e| out_err(dir, e))?;
                        for df in rx {
                            bw.write_batch(&df).map_err(|e| out_err(dir, e))?;
                        }
                        bw.finish().map(|_| ()).map_err(|e| out_err(dir, e))
                    })
                })),
                _ => {
                    drop(rx);
                    None
                }
            };
            let mut tx = audit_writer.is_some().then_some(tx);
            let kept_result = kept.write_with(name, |w| {
                let mut bw = shard_writer(w, codec, largest, tag, arrow_schema)
                    .batched(&schema)
                    .map_err(|e| out_err(kept, e))?;
                let mut offset = 0u64;
                for &g in &groups {
                    let df = lf
                        .clone()
                        .slice(offset as i64, g as IdxSize)
                        .collect()
                        .map_err(perr)?;
                    let range = offset as usize..(offset + g) as usize;
                    let keep = BooleanChunked::from_slice("keep".into(), &self.mask[range.clone()]);
                    let mut kept_rows = df.filter(&keep).map_err(perr)?;
                    if kept_rows.height() > 0 {
                        kept_rows.rechunk_mut();
                        bw.write_batch(&kept_rows).map_err(|e| out_err(kept, e))?;
                    }
                    if let (Some(t), Some(audit)) = (&tx, &audit) {
                        let mut gone = df.filter(&!&keep).map_err(perr)?;
                        if gone.height() > 0 {
                            let idx: Vec<IdxSize> = self.rows[range]
                                .iter()
                                .zip(&self.mask[offset as usize..])
                                .filter(|(_, &k)| !k)
                                .map(|(&r, _)| r as IdxSize)
                                .collect();
                            let idx = IdxCa::from_vec("idx".into(), idx);
                            for c in audit {
                                let taken = c.take(&idx).map_err(perr)?;
                                gone.with_column(taken).map_err(perr)?;
                            }
                            gone.rechunk_mut();
                            // A closed channel means the other writer failed: its error is
                            // reported below.
                            if t.send(gone).is_err() {
                                break;
                            }
                        }
                    }
                    offset += g;
                    pb.inc(g);
                }
                bw.finish().map(|_| ()).map_err(|e| out_err(kept, e))
            });
            tx.take();
            let audit_result = match audit_writer {
                Some(h) => h.join().unwrap_or_else(|_| {
                    Err(Error::Task("the dropped-rows writer panicked".into()))
                }),
                None => Ok(()),
            };
            kept_result.and(audit_result)
        })
    }

    /// The manifest's audit columns (all rows), after checking the shard has none of them.
    fn audit_columns(&self, m: &Manifest, schema: &Schema) -> Result<Vec<Column>> {
        let mut out = Vec::new();
        for name in AUDIT_COLUMNS {
            let Ok(c) = m.frame.column(name) else {
                continue;
            };
            if schema.contains(name) {
                return Err(Error::Request(format!(
                    "input '{}' has a column '{name}' already, so the dropped rows cannot get the manifest's '{name}' beside it: rename that column in the input, or apply without --dropped",
                    self.src.file
                )));
            }
            out.push(c.clone());
        }
        Ok(out)
    }
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

/// The writer codec for an input's codec (Parquet does not record the level: defaults are used).
fn codec(c: polars_parquet::parquet::compression::Compression) -> ParquetCompression {
    use polars_parquet::parquet::compression::Compression as C;
    match c {
        C::Uncompressed => ParquetCompression::Uncompressed,
        C::Snappy => ParquetCompression::Snappy,
        C::Gzip => ParquetCompression::Gzip(None),
        C::Brotli => ParquetCompression::Brotli(None),
        C::Lz4 | C::Lz4Raw => ParquetCompression::Lz4Raw,
        // LZO cannot be read by polars either, so a shard using it never gets here.
        C::Zstd | C::Lzo => ParquetCompression::Zstd(None),
    }
}
