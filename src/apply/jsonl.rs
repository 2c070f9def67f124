//! `apply` on a JSON Lines shard: its kept lines written back as they were.
//!
//! - A kept line is written byte for byte, its line end included, compressed as the input was
//!   (gzip or zstd at their default levels, or not). Blank lines are no documents and are left
//!   out; a byte-order mark before the first line too.
//! - A kept line that loses spans (`drop_spans`) gets a new text value, the cut text as a JSON
//!   string; every other byte of the line stays. `--cluster-size-column` adds a field at the end
//!   of each line written; `--upsample` repeats a line.
//! - `--dropped` writes the audited lines (the dropped ones, and kept ones that lost spans, whole)
//!   with the manifest's audit fields added at the end of each.
//! - An output is complete or absent (temporary name and rename, or one upload). Its tag (what
//!   the Parquet outputs hold in their metadata) is a small file beside it, `.NAME.tag`, written
//!   after it and removed before it is written again, so a rerun skips outputs already written.
//! - `--format parquet` writes the same lines as rows of a Parquet file instead ([`super::convert`]).

use std::io::Write;

use polars::prelude::*;

use crate::error::{Error, Result};
use crate::io::jsonl::{edit, Compression, Lines};
use crate::io::output::OutputDir;
use crate::results::Manifest;

use super::convert::{json_text, Columns, ToParquet};
use super::options::OutputFormat;
use super::{Outputs, Shard, AUDIT_COLUMNS};

/// The name of an output's tag file.
pub(super) fn tag_name(name: &str) -> String {
    format!(".{name}.tag")
}

/// The tag of the JSON Lines output `name` in `dir`, when both are there.
pub(super) fn existing_tag(dir: &OutputDir, name: &str) -> Option<String> {
    let tag = dir.read(&tag_name(name)).ok().flatten()?;
    super::output_size(dir, name).ok()?;
    String::from_utf8(tag).ok()
}

/// A compressed (or plain) stream into an output.
enum Encoder<'w> {
    Plain(&'w mut (dyn Write + Send)),
    Gzip(flate2::write::GzEncoder<&'w mut (dyn Write + Send)>),
    Zstd(zstd::stream::write::Encoder<'static, &'w mut (dyn Write + Send)>),
}

impl<'w> Encoder<'w> {
    fn new(w: &'w mut (dyn Write + Send), c: Compression) -> std::io::Result<Encoder<'w>> {
        Ok(match c {
            Compression::None => Encoder::Plain(w),
            Compression::Gzip => Encoder::Gzip(flate2::write::GzEncoder::new(
                w,
                flate2::Compression::default(),
            )),
            Compression::Zstd => Encoder::Zstd(zstd::stream::write::Encoder::new(w, 0)?),
        })
    }

    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Encoder::Plain(w) => w.write_all(b),
            Encoder::Gzip(w) => w.write_all(b),
            Encoder::Zstd(w) => w.write_all(b),
        }
    }

    fn finish(self) -> std::io::Result<()> {
        match self {
            Encoder::Plain(w) => w.flush(),
            Encoder::Gzip(w) => w.finish()?.flush(),
            Encoder::Zstd(w) => w.finish()?.flush(),
        }
    }
}

/// One output being written: its stream, its location (for errors), and whether the last line
/// written to it had no line end (the input's last line): one goes before the next.
pub(super) struct Sink<'w> {
    enc: Encoder<'w>,
    path: String,
    open_end: bool,
}

impl<'w> Sink<'w> {
    pub(super) fn new(
        w: &'w mut (dyn Write + Send),
        c: Compression,
        path: String,
    ) -> Result<Sink<'w>> {
        let enc = Encoder::new(w, c).map_err(|e| Error::Output {
            path: path.clone(),
            source: e.into(),
        })?;
        Ok(Sink {
            enc,
            path,
            open_end: false,
        })
    }

    fn err(&self, e: std::io::Error) -> Error {
        Error::Output {
            path: self.path.clone(),
            source: e.into(),
        }
    }

    /// Writes `line` and its line end `copies` times.
    pub(super) fn line(&mut self, line: &[u8], ending: &[u8], copies: u32) -> Result<()> {
        for _ in 0..copies {
            if self.open_end {
                self.enc.write_all(b"\n").map_err(|e| self.err(e))?;
            }
            self.enc.write_all(line).map_err(|e| self.err(e))?;
            self.enc.write_all(ending).map_err(|e| self.err(e))?;
            self.open_end = ending.is_empty();
        }
        Ok(())
    }

    pub(super) fn finish(self) -> Result<()> {
        let path = self.path;
        self.enc.finish().map_err(|e| Error::Output {
            path,
            source: e.into(),
        })
    }
}

/// Where copied lines go: a JSON Lines stream, the columns of a Parquet file being inferred, or
/// its rows.
trait Out {
    fn line(&mut self, line: &[u8], ending: &[u8], copies: u32) -> Result<()>;
}

impl Out for Sink<'_> {
    fn line(&mut self, line: &[u8], ending: &[u8], copies: u32) -> Result<()> {
        Sink::line(self, line, ending, copies)
    }
}

/// The columns of the lines an output gets (`file`'s, for errors).
struct Infer<'a> {
    columns: Columns,
    file: &'a str,
}

impl Out for Infer<'_> {
    fn line(&mut self, line: &[u8], _: &[u8], _: u32) -> Result<()> {
        self.columns.add(line, self.file)
    }
}

impl<W: Write> Out for ToParquet<W> {
    fn line(&mut self, line: &[u8], _: &[u8], copies: u32) -> Result<()> {
        ToParquet::line(self, line, copies)
    }
}

/// Compression of a JSON Lines output in `format`.
pub(super) fn compression_of(format: OutputFormat) -> Compression {
    match format {
        OutputFormat::JsonlGz => Compression::Gzip,
        OutputFormat::JsonlZst => Compression::Zstd,
        OutputFormat::Jsonl | OutputFormat::Parquet => Compression::None,
    }
}

/// Writes the kept lines of `shard` to `kept` (and the audited ones to `dropped`) in one pass
/// over the input, each output tagged once written; as Parquet, in two (the columns first).
pub(super) fn write(shard: &Shard, m: &Manifest, out: &Outputs) -> Result<()> {
    if shard.format == OutputFormat::Parquet {
        return write_parquet(shard, m, out);
    }
    let Outputs {
        kept,
        dropped,
        name,
        pb,
        ..
    } = *out;
    let c = compression_of(shard.format);
    write_tagged(out, || {
        kept.write_with(name, |w| {
            let mut to_kept = Sink::new(w, c, kept.location(name))?;
            match dropped {
                Some(d) => d.write_with(name, |w| {
                    let mut to_audit = Sink::new(w, c, d.location(name))?;
                    copy_lines(shard, m, &mut to_kept, Some(&mut to_audit), None, pb)?;
                    to_audit.finish()
                })?,
                None => copy_lines(shard, m, &mut to_kept, None, None, pb)?,
            }
            to_kept.finish()
        })
    })
}

/// Runs `write`, which writes the JSON Lines outputs `out`, with their tag files removed before
/// and written after.
pub(super) fn write_tagged(out: &Outputs, write: impl FnOnce() -> Result<()>) -> Result<()> {
    let Outputs {
        kept,
        dropped,
        name,
        tag,
        ..
    } = *out;
    let dirs = || std::iter::once(kept).chain(dropped);
    // The old tags go first: an output being replaced is never taken for complete.
    for dir in dirs() {
        dir.remove(&tag_name(name))?;
    }
    write()?;
    for dir in dirs() {
        dir.write_bytes(&tag_name(name), tag.as_bytes().to_vec())?;
    }
    Ok(())
}

/// Row batches written as JSON Lines: each row an object line.
pub(super) struct RowLines<'w> {
    sink: Sink<'w>,
    buf: Vec<u8>,
}

impl<'w> RowLines<'w> {
    pub(super) fn new(sink: Sink<'w>) -> RowLines<'w> {
        RowLines {
            sink,
            buf: Vec::new(),
        }
    }

    pub(super) fn write(&mut self, df: &DataFrame) -> Result<()> {
        for i in 0..df.height() {
            self.buf.clear();
            super::convert::row_as_json(df, i, &mut self.buf)?;
            self.sink.line(&self.buf, b"\n", 1)?;
        }
        Ok(())
    }

    pub(super) fn finish(self) -> Result<()> {
        self.sink.finish()
    }
}

/// [`write()`] as Parquet: a first pass finds the columns (those of every line, and what each
/// output adds), a second writes the rows.
fn write_parquet(shard: &Shard, m: &Manifest, out: &Outputs) -> Result<()> {
    let Outputs {
        kept,
        dropped,
        name,
        tag,
        pb,
    } = *out;
    let file = shard.src.file.as_str();
    let infer = || Infer {
        columns: Columns::default(),
        file,
    };
    let (mut every, mut to_kept, mut to_audit) = (Columns::default(), infer(), infer());
    let audit = dropped.is_some().then_some(&mut to_audit as &mut dyn Out);
    let hidden = indicatif::ProgressBar::hidden();
    copy_lines(shard, m, &mut to_kept, audit, Some(&mut every), &hidden)?;
    let columns = |added: &Columns| {
        let mut c = every.clone();
        c.join(added);
        c
    };
    let (kept_columns, audit_columns) = (columns(&to_kept.columns), columns(&to_audit.columns));
    kept.write_with(name, |w| {
        let mut to_kept = ToParquet::new(w, kept_columns, tag, file, kept.location(name))?;
        match dropped {
            Some(d) => d.write_with(name, |w| {
                let mut to_audit = ToParquet::new(w, audit_columns, tag, file, d.location(name))?;
                copy_lines(shard, m, &mut to_kept, Some(&mut to_audit), None, pb)?;
                to_audit.finish()
            })?,
            None => copy_lines(shard, m, &mut to_kept, None, None, pb)?,
        }
        to_kept.finish()
    })
}

/// Streams the shard's lines into the outputs: the kept ones (edited as the module says) into
/// `kept`, the audited ones with the manifest's fields into `audit`; every document line's
/// fields into `every`, when given.
fn copy_lines(
    shard: &Shard,
    m: &Manifest,
    kept: &mut dyn Out,
    mut audit: Option<&mut dyn Out>,
    mut every: Option<&mut Columns>,
    pb: &indicatif::ProgressBar,
) -> Result<()> {
    let file = &shard.src.file;
    let fields: Vec<(&str, &Column)> = match audit {
        Some(_) => audit_fields(shard, m)?,
        None => Vec::new(),
    };
    let mut lines = Lines::open(file, None)?;
    let mut i = 0usize;
    while let Some(l) = lines.next_line()? {
        if !l.document {
            continue;
        }
        let Some(&row) = shard.rows.get(i) else {
            return Err(changed(shard, i + 1));
        };
        let row = row as usize;
        let copies = shard.repeat.get(i).copied().unwrap_or(1);
        let (take, audited) = (shard.mask[i], shard.audited[i]);
        i += 1;
        pb.inc(1);
        let content = lines.content(&l);
        let ending = &lines.bytes(&l)[content.len()..];
        if let Some(cols) = every.as_mut() {
            cols.add(content, file)?;
        }
        if take && copies > 0 {
            let edited = kept_line(shard, m, row, content, l.line)?;
            kept.line(edited.as_deref().unwrap_or(content), ending, copies)?;
        }
        if let Some(to) = audit.as_mut().filter(|_| audited) {
            to.line(&audited_line(shard, m, &fields, row, content)?, ending, 1)?;
        }
    }
    if i != shard.rows.len() {
        return Err(changed(shard, i));
    }
    Ok(())
}

/// A dropped (or cut) line as the audit gets it: with the manifest's `fields` added, none of
/// which the line may hold already.
fn audited_line(
    shard: &Shard,
    m: &Manifest,
    fields: &[(&str, &Column)],
    row: usize,
    content: &[u8],
) -> Result<Vec<u8>> {
    let values = (fields.iter())
        .map(|(n, c)| {
            let v = c.get(row).map_err(|e| super::manifest_err(m, e))?;
            Ok((*n, json_text(v)))
        })
        .collect::<Result<Vec<_>>>()?;
    if let Some((n, _)) = values
        .iter()
        .find(|(n, _)| edit::value_span(content, n).is_some())
    {
        return Err(Error::ColumnExists {
            file: shard.src.file.clone(),
            column: n.to_string(),
            what: "the dropped lines cannot get the manifest's field of that name: rename that field in the input, or apply without --dropped",
        });
    }
    Ok(edit::with_fields(content, &values))
}

/// A kept line as written: `None` when it is written as it was.
fn kept_line(
    shard: &Shard,
    m: &Manifest,
    row: usize,
    content: &[u8],
    line: u64,
) -> Result<Option<Vec<u8>>> {
    let spans = shard.spans.map(|s| s.of(row)).unwrap_or_default();
    if spans.is_empty() && shard.size_column.is_none() {
        return Ok(None);
    }
    let mut out = content.to_vec();
    if !spans.is_empty() {
        let text_at = edit::value_span(content, shard.text_column);
        let text: Option<String> = text_at
            .clone()
            .and_then(|s| serde_json::from_slice(&content[s]).ok());
        let (Some(at), Some(text)) = (text_at, text) else {
            return Err(super::manifest_err(
                m,
                format!(
                    "manifest row {row} has drop_spans, but line {line} of '{}' has no text in field '{}': the manifest does not belong to this input; run the job again",
                    shard.src.file, shard.text_column
                ),
            ));
        };
        let cut = shard.spans.map(|s| s.cut(m, row, &text)).transpose()?;
        let literal = serde_json::to_vec(&cut.unwrap_or(text))
            .map_err(|e| super::manifest_err(m, e.to_string()))?;
        out.splice(at, literal);
    }
    if let Some(c) = shard.size_column {
        let v = json_text(c.get(row).map_err(|e| super::manifest_err(m, e))?);
        if edit::value_span(content, c.name()).is_some() {
            return Err(Error::ColumnExists {
                file: shard.src.file.clone(),
                column: c.name().to_string(),
                what: "--cluster-size-column cannot add a field of that name: choose another name",
            });
        }
        out = edit::with_fields(&out, &[(c.name().as_str(), v)]);
    }
    Ok(Some(out))
}

/// The manifest's fields a dropped line gets: the audit columns it has, the cluster size when
/// asked for, and with spans `keep` and `drop_spans`.
fn audit_fields<'m>(shard: &Shard<'m>, m: &'m Manifest) -> Result<Vec<(&'m str, &'m Column)>> {
    let mut out: Vec<(&str, &Column)> = Vec::new();
    for name in AUDIT_COLUMNS {
        if let Ok(c) = m.frame.column(name) {
            out.push((name, c));
        }
    }
    if let Some(c) = shard.size_column {
        out.push((c.name().as_str(), c));
    }
    if shard.spans.is_some() {
        for name in ["keep", "drop_spans"] {
            out.push((name, m.column(name)?));
        }
    }
    Ok(out)
}

/// The input changed since the run: it holds another number of documents.
fn changed(shard: &Shard, documents: usize) -> Error {
    Error::ShardChanged {
        file: shard.src.file.clone(),
        what: format!(
            "the manifest has {} rows of it, the file now at least {documents} documents",
            shard.rows.len()
        ),
    }
}
