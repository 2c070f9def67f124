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
use crate::io::input::{self, Footer};
use crate::io::output::OutputDir;
use crate::results::{Manifest, RecordedInput};

mod jsonl;
mod options;
mod spans;

pub(crate) use options::dry_run_table;
pub use options::ApplyOptions;
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
    let names = output_names(&m.inputs)?;
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
            let shard = Shard {
                src,
                footer: footers[i].as_ref(),
                mask: &mask,
                rows,
                repeat: &repeat,
                size_column: size_column.as_ref(),
                spans: spans.as_ref(),
                audited: &audited,
                text_column: &m.config.text_column,
            };
            let tag = shard.tag(&settings);
            let existing = |dir: &OutputDir| match shard.footer {
                Some(_) => existing_tag(dir, &names[i]),
                None => Ok(jsonl::existing_tag(dir, &names[i])),
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

/// The output file name of each input: its own file name, which must be unique.
fn output_names(inputs: &[RecordedInput]) -> Result<Vec<String>> {
    let names: Vec<String> = inputs
        .iter()
        .map(|f| f.file.rsplit('/').next().unwrap_or(&f.file).to_string())
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
                source: e.into(),
            }),
        None => crate::io::object::size(&location),
    }
}

/// One input shard to apply the manifest to.
struct Shard<'a> {
    src: &'a RecordedInput,
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
    fn write(
        &self,
        m: &Manifest,
        kept: &OutputDir,
        dropped: Option<&OutputDir>,
        name: &str,
        tag: &str,
        pb: &indicatif::ProgressBar,
    ) -> Result<()> {
        let Some(footer) = self.footer else {
            return jsonl::write(self, m, kept, dropped, name, tag, pb);
        };
        let file = &self.src.file;
        let perr = |e: PolarsError| Error::Parquet {
            file: file.clone(),
            source: e.into(),
        };
        let meta = footer.metadata(file)?;
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
        let arrow_schema = meta
            .key_value_metadata()
            .iter()
            .flatten()
            .find(|kv| kv.key == ARROW_SCHEMA_KEY)
            .and_then(|kv| kv.value.as_deref());
        let bytes = if crate::io::object::is_url(file) {
            crate::io::object::get_all(std::slice::from_ref(file))?.pop()
        } else {
            None
        };
        let mut lf = input::scan(file, bytes)?;
        let schema = lf.collect_schema().map_err(perr)?;
        if let Some(c) = self.size_column.filter(|c| schema.contains(c.name())) {
            return Err(Error::ColumnExists {
                file: file.to_string(),
                column: c.name().to_string(),
                what: "--cluster-size-column cannot add one of that name: choose another name",
            });
        }
        // The kept file's schema: the input's, plus the cluster size column if asked for (then
        // the input's Arrow schema no longer describes it).
        let mut kept_schema = (*schema).clone();
        if let Some(c) = self.size_column {
            kept_schema.with_column(c.name().clone(), c.dtype().clone());
        }
        let arrow_schema = arrow_schema.filter(|_| self.size_column.is_none());
        let audit = match dropped {
            Some(_) => Some(self.audit_columns(m, &schema)?),
            None => None,
        };
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
            source: e.into(),
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
                    .batched(&kept_schema)
                    .map_err(|e| out_err(kept, e))?;
                let mut offset = 0u64;
                for &g in &groups {
                    let df = lf
                        .clone()
                        .slice(offset as i64, g as IdxSize)
                        .collect()
                        .map_err(perr)?;
                    let range = offset as usize..(offset + g) as usize;
                    let audited =
                        BooleanChunked::from_slice("audited".into(), &self.audited[range.clone()]);
                    let mut kept_rows = self.kept_rows(m, &df, range.clone())?;
                    if kept_rows.height() > 0 {
                        kept_rows.rechunk_mut();
                        bw.write_batch(&kept_rows).map_err(|e| out_err(kept, e))?;
                    }
                    if let (Some(t), Some(audit)) = (&tx, &audit) {
                        let mut gone = df.filter(&audited).map_err(perr)?;
                        if gone.height() > 0 {
                            let idx: Vec<IdxSize> = self.rows[range]
                                .iter()
                                .zip(&self.audited[offset as usize..])
                                .filter(|(_, &a)| a)
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
                    Err(Error::Panicked("the dropped-rows writer panicked".into()))
                }),
                None => Ok(()),
            };
            kept_result.and(audit_result)
        })
    }

    /// The rows of `df` (the shard's rows `range`) written to the kept file: the kept ones, each
    /// as often as `--upsample` says, with the `--cluster-size-column`.
    fn kept_rows(
        &self,
        m: &Manifest,
        df: &DataFrame,
        range: std::ops::Range<usize>,
    ) -> Result<DataFrame> {
        let perr = |e: PolarsError| Error::Parquet {
            file: self.src.file.clone(),
            source: e.into(),
        };
        let mut at: Vec<IdxSize> = Vec::new();
        for (j, i) in range.clone().enumerate() {
            if self.mask[i] {
                let n = self.repeat.get(i).copied().unwrap_or(1);
                at.extend(std::iter::repeat_n(j as IdxSize, n as usize));
            }
        }
        let mut out = df
            .take(&IdxCa::from_vec("at".into(), at.clone()))
            .map_err(perr)?;
        if let Some(c) = self.size_column {
            let rows: Vec<IdxSize> = at
                .iter()
                .map(|&j| self.rows[range.start + j as usize] as IdxSize)
                .collect();
            let c = c
                .take(&IdxCa::from_vec("rows".into(), rows))
                .map_err(perr)?;
            out.with_column(c).map_err(perr)?;
        }
        if let Some(spans) = self.spans {
            let texts = out.column(self.text_column).map_err(perr)?;
            let texts = texts.str().map_err(perr)?;
            let cut: Vec<Option<String>> = (texts.iter().zip(&at))
                .map(|(t, &j)| {
                    let row = self.rows[range.start + j as usize] as usize;
                    t.map(|t| spans.cut(m, row, t)).transpose()
                })
                .collect::<Result<_>>()?;
            let cut = Column::new(self.text_column.into(), cut)
                .cast(texts.dtype())
                .map_err(perr)?;
            out.with_column(cut).map_err(perr)?;
        }
        Ok(out)
    }

    /// The manifest's audit columns (all rows), after checking the shard has none of them.
    fn audit_columns(&self, m: &Manifest, schema: &Schema) -> Result<Vec<Column>> {
        let mut out = Vec::new();
        for name in AUDIT_COLUMNS {
            let Ok(c) = m.frame.column(name) else {
                continue;
            };
            if schema.contains(name) {
                return Err(Error::ColumnExists {
                    file: self.src.file.clone(),
                    column: name.to_string(),
                    what: "the dropped rows cannot get the manifest's column of that name beside it: rename that column in the input, or apply without --dropped",
                });
            }
            out.push(c.clone());
        }
        out.extend(self.size_column.cloned());
        if self.spans.is_some() {
            for name in ["keep", "drop_spans"] {
                if schema.contains(name) {
                    return Err(Error::ColumnExists {
                        file: self.src.file.clone(),
                        column: name.to_string(),
                        what: "the audited rows cannot get the manifest's column of that name beside it: rename that column in the input, or apply without --dropped",
                    });
                }
                out.push(m.column(name)?.clone());
            }
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
