//! The hash rows a signatures task streams by hash range (`--paragraphs`' paragraphs,
//! `--substrings`' windows: [`crate::io::paragraph_rows`]), a block per chunk.

use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::io::paragraph_rows;

/// Writes a chunk's rows as a block of `files`' data file (nothing without a writer).
pub(super) fn flush_rows(
    work: &OutputDir,
    writer: Option<&mut paragraph_rows::Writer>,
    rows: &mut [paragraph_rows::Rows],
    files: &[String; 2],
) -> Result<()> {
    match writer {
        Some(w) => w.block(rows).map_err(|e| Error::Output {
            path: work.location(&files[0]),
            source: e.into(),
        }),
        None => Ok(()),
    }
}

/// Runs `write` with a writer that streams a part's hash rows (paragraphs or substring windows)
/// into `files`' data file, a block per chunk, then writes the meta file; `None` when the plan
/// has no ranges for them.
pub(super) fn with_rows(
    work: &OutputDir,
    files: &[String; 2],
    ranges: usize,
    write: impl FnOnce(Option<&mut paragraph_rows::Writer>) -> Result<()>,
) -> Result<()> {
    if ranges == 0 {
        return write(None);
    }
    let [data, meta] = files;
    let mut written = Vec::new();
    work.write_with(data, |sink| {
        let mut rows = paragraph_rows::Writer::new(sink, ranges);
        write(Some(&mut rows))?;
        written = rows.finish();
        Ok(())
    })?;
    work.write_bytes(meta, written)
}

/// Which of `ranges` bucket ranges a bucket key falls in (its high bits, scaled).
pub(crate) fn bucket_range(bucket: u64, ranges: usize) -> usize {
    (((bucket >> 32) * ranges as u64) >> 32) as usize
}
