//! Output: crash-safe writes. A local file is written under a temporary name in the same
//! directory and renamed into place; an object is written with one PUT of the complete body. Either
//! way a reader (or a rerun after a crash) sees the old complete file or the new complete file,
//! never a half-written one.
//!
//! Durability: files of an [`OutputDir::Local`] directory are synced to disk before the rename, so
//! they survive a machine crash. Those of an [`OutputDir::Scratch`] directory are not: one process
//! writes and reads them, a renamed file is complete in the page cache for as long as the machine
//! stays up, and a work file that is deleted before the kernel writes it back never reaches the
//! disk at all. Scratch files are therefore trusted only within the boot that wrote them
//! ([`boot_id`]; `run` starts its work over after a restart).

mod local;

pub(crate) use local::prepare_dir;
pub use local::write_parquet_atomic;
use local::{out_err, tmp_name, write_file, write_parquet_file, Writeback};

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use polars::prelude::*;

use crate::error::{Error, Result};
use crate::io::object;

/// A directory of outputs or work files: a local directory or an `s3://bucket/prefix`. Names may
/// contain `/` (subdirectories are created as needed).
#[derive(Debug, Clone)]
pub(crate) enum OutputDir {
    /// A local directory; files are synced to disk before they are renamed into place.
    Local(PathBuf),
    /// A local directory of one process's work files, not synced (see the module doc).
    Scratch(PathBuf),
    /// An object-store prefix (`s3://bucket/prefix`).
    Remote(String),
}

/// This boot of the machine (Linux: `/proc/sys/kernel/random/boot_id`); `None` where the system
/// does not tell.
pub(crate) fn boot_id() -> Option<String> {
    let id = fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_string()).filter(|s| !s.is_empty())
}

impl OutputDir {
    /// Parses `--output`.
    pub(crate) fn parse(s: &str) -> OutputDir {
        if object::is_url(s) {
            OutputDir::Remote(s.trim_end_matches('/').to_string())
        } else {
            OutputDir::Local(PathBuf::from(s))
        }
    }

    /// The same directory as [`OutputDir::Scratch`] when it is local and the boot can be told
    /// ([`boot_id`]); otherwise unchanged.
    pub(crate) fn scratch(self) -> OutputDir {
        match self {
            OutputDir::Local(dir) if boot_id().is_some() => OutputDir::Scratch(dir),
            other => other,
        }
    }

    /// The local directory, if the output is one.
    pub(crate) fn local_dir(&self) -> Option<&Path> {
        match self {
            OutputDir::Local(dir) | OutputDir::Scratch(dir) => Some(dir),
            OutputDir::Remote(_) => None,
        }
    }

    /// Whether local files are synced to disk before they are renamed.
    fn synced(&self) -> bool {
        !matches!(self, OutputDir::Scratch(_))
    }

    /// Creates the directory (local) and checks that it can be written.
    pub(crate) fn prepare(&self) -> Result<()> {
        match self {
            OutputDir::Local(dir) | OutputDir::Scratch(dir) => prepare_dir(dir),
            OutputDir::Remote(url) => object::check_writable(url),
        }
    }

    /// The subdirectory `sub` (of the same kind).
    pub(crate) fn child(&self, sub: &str) -> OutputDir {
        match self {
            OutputDir::Local(dir) => OutputDir::Local(dir.join(sub)),
            OutputDir::Scratch(dir) => OutputDir::Scratch(dir.join(sub)),
            OutputDir::Remote(url) => OutputDir::Remote(format!("{url}/{sub}")),
        }
    }

    /// The path or URL of `name`, for messages.
    pub(crate) fn location(&self, name: &str) -> String {
        match self {
            OutputDir::Local(dir) | OutputDir::Scratch(dir) => dir.join(name).display().to_string(),
            OutputDir::Remote(url) => format!("{url}/{name}"),
        }
    }

    /// Reads the whole file `name`; `None` when it does not exist.
    pub(crate) fn read(&self, name: &str) -> Result<Option<Vec<u8>>> {
        match self {
            OutputDir::Local(dir) | OutputDir::Scratch(dir) => match fs::read(dir.join(name)) {
                Ok(b) => Ok(Some(b)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(read_err(&self.location(name), e)),
            },
            OutputDir::Remote(url) => object::get_opt(&format!("{url}/{name}")),
        }
    }

    /// Reads byte ranges of the file `name`. Locally, ranges that lie close together in the
    /// given order are read with one positioned read per span (see [`spans`]): a task that
    /// fetches most records of a part makes a few large reads instead of one system call per
    /// record.
    pub(crate) fn read_ranges(
        &self,
        name: &str,
        ranges: &[std::ops::Range<u64>],
    ) -> Result<RangeBytes> {
        match self {
            OutputDir::Local(dir) | OutputDir::Scratch(dir) => {
                use std::os::unix::fs::FileExt;
                let f = fs::File::open(dir.join(name))
                    .map_err(|e| read_err(&self.location(name), e))?;
                // Positioned reads share the descriptor, so the spans are read on the worker
                // threads. Each range is then a slice of its span's buffer (no copy), unless
                // gaps are most of the span: then the ranges are copied out into a compact
                // buffer, so memory stays within twice the bytes asked for.
                use rayon::prelude::*;
                type Span = (Vec<u8>, Vec<(usize, usize)>);
                let per_span: Vec<Span> = spans(ranges)
                    .into_par_iter()
                    .map(|span| {
                        let (lo, hi) = (ranges[span.start].start, ranges[span.end - 1].end);
                        let mut buf = vec![0u8; (hi - lo) as usize];
                        f.read_exact_at(&mut buf, lo)
                            .map_err(|e| read_err(&self.location(name), e))?;
                        let at = ranges[span.clone()]
                            .iter()
                            .map(|r| ((r.start - lo) as usize, (r.end - lo) as usize));
                        let wanted: usize = at.clone().map(|(a, b)| b - a).sum();
                        if 2 * wanted >= buf.len() {
                            return Ok((buf, at.collect()));
                        }
                        let mut compact = Vec::with_capacity(wanted);
                        let mut cut = Vec::with_capacity(span.len());
                        for (a, b) in at {
                            cut.push((compact.len(), compact.len() + b - a));
                            compact.extend_from_slice(&buf[a..b]);
                        }
                        Ok((compact, cut))
                    })
                    .collect::<Result<_>>()?;
                let mut out = RangeBytes::default();
                for (b, (buf, at)) in per_span.into_iter().enumerate() {
                    out.at.extend(at.into_iter().map(|(lo, hi)| (b, lo, hi)));
                    out.bufs.push(buf);
                }
                Ok(out)
            }
            OutputDir::Remote(url) => Ok(RangeBytes::from_each(object::get_ranges(
                &format!("{url}/{name}"),
                ranges,
            )?)),
        }
    }

    /// Reads the Parquet file `name` (which must exist).
    pub(crate) fn read_parquet(&self, name: &str) -> Result<DataFrame> {
        self.read_parquet_columns(name, None)
    }

    /// Reads the Parquet file `name`, only `columns` of it when given (the others are not
    /// decoded).
    pub(crate) fn read_parquet_columns(
        &self,
        name: &str,
        columns: Option<&[&str]>,
    ) -> Result<DataFrame> {
        let loc = self.location(name);
        let bytes = self.read(name)?.ok_or_else(|| Error::WorkFile {
            path: loc.clone(),
            source: "missing".into(),
        })?;
        let columns = columns.map(|c| c.iter().map(|n| n.to_string()).collect());
        ParquetReader::new(std::io::Cursor::new(bytes))
            .with_columns(columns)
            .finish()
            .map_err(|e| Error::WorkFile {
                path: loc,
                source: e.into(),
            })
    }

    /// Deletes the directory and everything in it.
    pub(crate) fn remove_all(&self) -> Result<()> {
        match self {
            OutputDir::Local(dir) | OutputDir::Scratch(dir) => match fs::remove_dir_all(dir) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(out_err(dir, e)),
                _ => Ok(()),
            },
            OutputDir::Remote(url) => object::delete_prefix(url),
        }
    }

    /// Removes file `name` of the output, if it is there.
    pub(crate) fn remove(&self, name: &str) -> Result<()> {
        match self {
            OutputDir::Local(dir) | OutputDir::Scratch(dir) => {
                let path = dir.join(name);
                match fs::remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(out_err(&path, e)),
                    _ => Ok(()),
                }
            }
            OutputDir::Remote(url) => object::delete(&format!("{url}/{name}")),
        }
    }

    /// Writes `bytes` as `name` inside the output.
    pub(crate) fn write_bytes(&self, name: &str, bytes: Vec<u8>) -> Result<()> {
        match self {
            OutputDir::Local(dir) | OutputDir::Scratch(dir) => {
                write_file(&dir.join(name), &bytes, self.synced())
            }
            OutputDir::Remote(url) => object::put(&format!("{url}/{name}"), bytes),
        }
    }

    /// Writes `name` through `write` as one stream: a local file under a temporary name, synced
    /// (unless scratch) and renamed when `write` succeeds; an object as a multipart upload of
    /// 8 MiB parts, completed when `write` succeeds (see [`object::Upload`]): memory stays at one
    /// part whatever the size.
    pub(crate) fn write_with(
        &self,
        name: &str,
        write: impl FnOnce(&mut (dyn Write + Send)) -> Result<()>,
    ) -> Result<()> {
        match self {
            OutputDir::Local(dir) | OutputDir::Scratch(dir) => {
                let sync = self.synced();
                let path = dir.join(name);
                let tmp = tmp_name(&path);
                let result = (|| -> Result<()> {
                    if let Some(parent) = path.parent() {
                        fs::create_dir_all(parent).map_err(|e| out_err(&path, e))?;
                    }
                    let f = Writeback::new(
                        fs::File::create(&tmp).map_err(|e| out_err(&path, e))?,
                        sync,
                    );
                    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
                    write(&mut w)?;
                    let f = w
                        .into_inner()
                        .map_err(|e| out_err(&path, e.into_error()))?
                        .file;
                    if sync {
                        f.sync_all().map_err(|e| out_err(&path, e))?;
                    }
                    fs::rename(&tmp, &path).map_err(|e| out_err(&path, e))
                })();
                if result.is_err() {
                    let _ = fs::remove_file(&tmp);
                }
                result
            }
            OutputDir::Remote(url) => {
                let mut up = object::Upload::new(&format!("{url}/{name}"))?;
                write(&mut up)?;
                up.finish()
            }
        }
    }

    /// Writes a DataFrame as Parquet file `name` with key/value metadata.
    pub(crate) fn write_parquet(
        &self,
        name: &str,
        df: &mut DataFrame,
        metadata: Vec<(String, String)>,
        usage: ParquetUse,
    ) -> Result<()> {
        match self {
            OutputDir::Local(dir) | OutputDir::Scratch(dir) => {
                write_parquet_file(&dir.join(name), df, metadata, usage, self.synced())
            }
            OutputDir::Remote(url) => {
                let target = format!("{url}/{name}");
                let mut buf = Vec::new();
                parquet_writer(&mut buf, metadata, usage)
                    .finish(df)
                    .map_err(|e| Error::Output {
                        path: target.clone(),
                        source: e.into(),
                    })?;
                object::put(&target, buf)
            }
        }
    }
}

/// Byte ranges read from one file ([`OutputDir::read_ranges`]): the buffers read, and where each
/// range lies in them, so a range is a slice of a larger read rather than a copy.
#[derive(Debug, Default)]
pub(crate) struct RangeBytes {
    bufs: Vec<Vec<u8>>,
    /// Per range: its buffer, start and end in that buffer.
    at: Vec<(usize, usize, usize)>,
}

impl RangeBytes {
    /// One buffer per range.
    fn from_each(bufs: Vec<Vec<u8>>) -> Self {
        let at = bufs
            .iter()
            .enumerate()
            .map(|(i, b)| (i, 0, b.len()))
            .collect();
        RangeBytes { bufs, at }
    }

    /// Number of ranges.
    pub(crate) fn len(&self) -> usize {
        self.at.len()
    }

    /// The bytes of range `i`.
    pub(crate) fn get(&self, i: usize) -> &[u8] {
        let (b, lo, hi) = self.at[i];
        &self.bufs[b][lo..hi]
    }

    /// The bytes of the first range (empty when there is none).
    pub(crate) fn into_first(mut self) -> Vec<u8> {
        match self.at.first() {
            Some(&(b, 0, hi)) if hi == self.bufs[b].len() => std::mem::take(&mut self.bufs[b]),
            Some(_) => self.get(0).to_vec(),
            None => Vec::new(),
        }
    }
}

/// What a Parquet file is for, which decides how it is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParquetUse {
    /// A file users read (the manifest): zstd at level 1 (smaller and faster to write than
    /// polars' default level on manifests: ids and nested spans) and statistics.
    Output,
    /// A work file, read once by a later stage and then deleted: neither compressed nor given
    /// column statistics (band rows are random hashes, and manifest parts are compressed when
    /// they are merged into the manifest, so compressing them is time spent twice).
    Work,
}

/// The Parquet writer configuration of every file of one [`ParquetUse`] (the same for local and
/// object-store outputs, so their manifests are byte-identical).
///
/// Columns are encoded on the calling thread (`set_parallel(false)`): tasks write several files
/// at once from rayon's workers, and handing each file's columns to polars' own thread pool made
/// the writes queue behind one another.
pub(crate) fn parquet_writer<W: Write>(
    w: W,
    metadata: Vec<(String, String)>,
    usage: ParquetUse,
) -> ParquetWriter<W> {
    let writer = ParquetWriter::new(w)
        .set_parallel(false)
        .with_key_value_metadata(Some(KeyValueMetadata::from_static(metadata)));
    match usage {
        ParquetUse::Output => writer.with_compression(ParquetCompression::Zstd(
            polars_parquet::write::ZstdLevel::try_new(1).ok(),
        )),
        ParquetUse::Work => writer
            .with_compression(ParquetCompression::Uncompressed)
            .with_statistics(StatisticsOptions::empty()),
    }
}

/// Largest gap between two ranges read with one positioned read, and largest such read.
const SPAN_GAP: u64 = 4 << 10;
const SPAN_MAX: u64 = 8 << 20;

/// Splits `ranges` (in the given order) into runs of consecutive indices that are read as one
/// span: each range starts at or after the previous one's end, at most [`SPAN_GAP`] bytes
/// later, and the span stays within [`SPAN_MAX`] bytes (a longer single range is its own span).
/// At most `SPAN_GAP` unwanted bytes are read per range: less than one read call costs.
fn spans(ranges: &[std::ops::Range<u64>]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=ranges.len() {
        let joins = i < ranges.len() && {
            let (prev, r) = (&ranges[i - 1], &ranges[i]);
            r.start >= prev.end
                && r.start - prev.end <= SPAN_GAP
                && r.end - ranges[start].start <= SPAN_MAX
        };
        if !joins {
            out.push(start..i);
            start = i;
        }
    }
    out
}

fn read_err(path: &str, e: std::io::Error) -> Error {
    Error::WorkFile {
        path: path.to_string(),
        source: e.into(),
    }
}

/// A list column from its flattened `values` (one chunk), `offsets` (one more than the rows) and
/// the rows' validity: polars builds list columns row by row, this in one piece.
pub(crate) fn list_column(
    name: &str,
    values: &Series,
    offsets: Vec<i64>,
    valid: &[bool],
) -> PolarsResult<Column> {
    use polars_arrow::array::ListArray;
    use polars_arrow::bitmap::Bitmap;
    use polars_arrow::datatypes::ArrowDataType;
    use polars_arrow::offset::OffsetsBuffer;
    let values = values.rechunk().to_arrow(0, CompatLevel::newest());
    let field = ArrowField::new("item".into(), values.dtype().clone(), true);
    let offsets = OffsetsBuffer::try_from(offsets)?;
    let validity = Bitmap::from_iter(valid.iter().copied());
    let list = ListArray::<i64>::try_new(
        ArrowDataType::LargeList(Box::new(field)),
        offsets,
        values,
        Some(validity),
    )?;
    Ok(Series::try_from((PlSmallStr::from(name), Box::new(list) as ArrayRef))?.into_column())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_ranges_share_a_read() {
        let r = |a: u64, b: u64| a..b;
        // Adjacent, a small gap, a big gap, overlapping (out of order) and an empty range.
        let ranges = [
            r(0, 10),
            r(10, 20),
            r(30, 40),
            r(40 + SPAN_GAP + 1, 50 + SPAN_GAP),
            r(0, 5),
            r(5, 5),
        ];
        assert_eq!(spans(&ranges), vec![0..3, 3..4, 4..6]);
        assert!(spans(&[]).is_empty());
        // A span stops growing at SPAN_MAX.
        let big = [r(0, SPAN_MAX - 1), r(SPAN_MAX - 1, SPAN_MAX + 1)];
        assert_eq!(spans(&big), vec![0..1, 1..2]);

        let dir = std::env::temp_dir().join(format!("cd-ranges-{}", std::process::id()));
        let out = OutputDir::Local(dir.clone());
        let bytes: Vec<u8> = (0..=255u8).cycle().take(3 * SPAN_GAP as usize).collect();
        out.write_bytes("f", bytes.clone()).unwrap();
        let got = out.read_ranges("f", &ranges).unwrap();
        assert_eq!(got.len(), ranges.len());
        for (i, r) in ranges.iter().enumerate() {
            assert_eq!(got.get(i), &bytes[r.start as usize..r.end as usize]);
        }
        assert_eq!(got.into_first(), bytes[..ranges[0].end as usize]);
        // Ranges that are a small part of their span are copied out of it.
        let sparse = [r(0, 10), r(2000, 2010), r(4000, 4004)];
        assert_eq!(spans(&sparse), vec![0..3]);
        let got = out.read_ranges("f", &sparse).unwrap();
        assert_eq!(got.bufs[0].len(), 24);
        for (i, r) in sparse.iter().enumerate() {
            assert_eq!(got.get(i), &bytes[r.start as usize..r.end as usize]);
        }
        assert!(out.read_ranges("f", &[r(0, 4 * SPAN_GAP)]).is_err());
        let _ = fs::remove_dir_all(dir);
    }
}
