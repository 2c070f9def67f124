//! `apply` on a Parquet shard: its kept (and dropped) rows written one row group at a time, as
//! Parquet with the input's codec and Arrow schema (tagged in the file's metadata), or as JSON
//! Lines with `--format`.

use polars::prelude::*;

use crate::error::{Error, Result};
use crate::io::input::{self, Footer};
use crate::io::output::OutputDir;
use crate::results::Manifest;

use super::options::OutputFormat;
use super::{jsonl, Outputs, Shard, ARROW_SCHEMA_KEY, AUDIT_COLUMNS, TAG_KEY};

/// The tag of an existing output file, `None` when there is none (or it has no tag).
pub(super) fn existing_tag(dir: &OutputDir, name: &str) -> Result<Option<String>> {
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

impl Shard<'_> {
    /// [`Self::write`] of a Parquet shard.
    pub(super) fn write_rows(&self, m: &Manifest, out: &Outputs, footer: &Footer) -> Result<()> {
        let Outputs {
            kept,
            dropped,
            name,
            tag,
            pb,
        } = *out;
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
        std::thread::scope(|scope| -> Result<()> {
            let (tx, rx) = std::sync::mpsc::sync_channel::<DataFrame>(1);
            let audit_writer = match (dropped, &dropped_schema) {
                (Some(dir), Some(ds)) => Some(scope.spawn(move || {
                    dir.write_with(name, |w| {
                        let mut bw = self.batches(w, (codec, largest, tag, None), ds, dir, name)?;
                        for df in rx {
                            bw.write(&df)?;
                        }
                        bw.finish()
                    })
                })),
                _ => {
                    drop(rx);
                    None
                }
            };
            let mut tx = audit_writer.is_some().then_some(tx);
            let kept_result = kept.write_with(name, |w| {
                let parquet = (codec, largest, tag, arrow_schema);
                let mut bw = self.batches(w, parquet, &kept_schema, kept, name)?;
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
                        bw.write(&kept_rows)?;
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
                bw.finish()
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

    /// A writer of row batches into `w`, the output `name` of `dir`: Parquet (with the writer
    /// settings `parquet`: codec, row group size, tag, Arrow schema) or JSON Lines, as
    /// `--format` says.
    fn batches<'w>(
        &self,
        w: &'w mut (dyn std::io::Write + Send),
        parquet: (ParquetCompression, usize, &str, Option<&str>),
        schema: &Schema,
        dir: &OutputDir,
        name: &str,
    ) -> Result<Batches<'w>> {
        let path = dir.location(name);
        if self.format != OutputFormat::Parquet {
            let sink = jsonl::Sink::new(w, jsonl::compression_of(self.format), path)?;
            return Ok(Batches::Jsonl(Box::new(jsonl::RowLines::new(sink))));
        }
        let (codec, row_group, tag, arrow_schema) = parquet;
        match super::shard_writer(w, codec, row_group, tag, arrow_schema).batched(schema) {
            Ok(bw) => Ok(Batches::Parquet(Box::new(bw), path)),
            Err(e) => Err(Error::Output {
                path,
                source: e.into(),
            }),
        }
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

/// An output's writer of row batches: Parquet row groups (and the output's location, for
/// errors), or JSON Lines.
enum Batches<'w> {
    Parquet(
        Box<polars::io::parquet::write::BatchedWriter<&'w mut (dyn std::io::Write + Send)>>,
        String,
    ),
    Jsonl(Box<jsonl::RowLines<'w>>),
}

impl Batches<'_> {
    fn write(&mut self, df: &DataFrame) -> Result<()> {
        match self {
            Batches::Parquet(bw, path) => bw.write_batch(df).map_err(|e| Error::Output {
                path: path.clone(),
                source: e.into(),
            }),
            Batches::Jsonl(lines) => lines.write(df),
        }
    }

    fn finish(self) -> Result<()> {
        match self {
            Batches::Parquet(bw, path) => bw.finish().map(|_| ()).map_err(|e| Error::Output {
                path,
                source: e.into(),
            }),
            Batches::Jsonl(lines) => lines.finish(),
        }
    }
}

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
