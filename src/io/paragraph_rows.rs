//! Hash row files: the paragraphs (`--paragraphs`) or substring windows (`--substrings`) one
//! signatures task found, by hash range, read range by range by the paragraphs or substrings
//! tasks and by the part's manifest task.
//!
//! A part's rows are written as they are found, a block per chunk of documents, so the task holds
//! one chunk's rows, never the part's. Two files per part, little-endian:
//! ```text
//! paragraphs/pPPPPP.bin    per block, per range: hash: [u64; n] | doc: [u32; n] | start: [u32; n] | len: [u32; n]
//! paragraphs/pPPPPP.meta   "CDPARAM1" | ranges: u64 | blocks: u64 |
//!                          per range: (offset: u64, rows: u32, xxh3-64 of the slice: u64) per block
//!                                     | xxh3-64 of the range's entries: u64
//! ```
//! `doc` is the document's position in its part ([`read_range`] adds the part's first
//! document number: a signatures task need not know it), `start` and `len` the paragraph's span in the text
//! (Parquet stores a text's bytes with a 32-bit length, so 32-bit offsets hold any of them). A
//! range's rows are in document order, and a document's in text order. A reader of one range
//! reads the meta's header and that range's entries (a range's slices of every block, a few
//! bytes each), then the slices; each is checked against its checksum. Both files are written
//! whole under a temporary name (or as one object) and renamed, the meta after the data.

use std::io::Write;

use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};
use crate::io::output::{OutputDir, RangeBytes};
#[cfg(test)]
use crate::io::work;
use crate::io::{u32_at, u32s_le, u64_at};

const MAGIC: &[u8; 8] = b"CDPARAM1";
const HEADER: usize = 24;
/// Bytes of one block's entry in the meta: offset, rows, checksum.
const ENTRY: usize = 8 + 4 + 8;
/// Bytes of one row in the data file.
const ROW: usize = 8 + 4 + 4 + 4;

/// One paragraph of a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Row {
    pub hash: u64,
    pub doc: u32,
    pub start: u32,
    pub len: u32,
}

/// The rows of one range of a block (as written, each a record: one push per row), or of a
/// part (as read). [`Writer::block`] lays them out column by column.
pub(crate) type Rows = Vec<Row>;

/// One block's slice of a range: where it is, its rows, its checksum.
#[derive(Debug, Clone, Copy)]
struct Entry {
    offset: u64,
    rows: u32,
    check: u64,
}

/// Streams a part's data file into `sink`, a block at a time; [`Writer::finish`] gives its meta.
pub(crate) struct Writer<'w> {
    sink: &'w mut (dyn Write + Send),
    offset: u64,
    /// Per range, its entry of each block so far.
    entries: Vec<Vec<Entry>>,
    buf: Vec<u8>,
}

impl<'w> Writer<'w> {
    pub(crate) fn new(sink: &'w mut (dyn Write + Send), ranges: usize) -> Writer<'w> {
        Writer {
            sink,
            offset: 0,
            entries: vec![Vec::new(); ranges],
            buf: Vec::new(),
        }
    }

    /// Writes a block: each range's rows (`by_range[r]`, as many as the writer has ranges), and
    /// empties them for the next.
    pub(crate) fn block(&mut self, by_range: &mut [Rows]) -> std::io::Result<()> {
        for (rows, entries) in by_range.iter_mut().zip(&mut self.entries) {
            let (buf, n) = (&mut self.buf, rows.len());
            buf.clear();
            buf.resize(n * ROW, 0);
            let (hash, rest) = buf.split_at_mut(8 * n);
            let (doc, rest) = rest.split_at_mut(4 * n);
            let (start, len) = rest.split_at_mut(4 * n);
            let cols = (hash.chunks_exact_mut(8))
                .zip(doc.chunks_exact_mut(4))
                .zip(start.chunks_exact_mut(4).zip(len.chunks_exact_mut(4)));
            for (((h, d), (s, l)), r) in cols.zip(rows.iter()) {
                h.copy_from_slice(&r.hash.to_le_bytes());
                d.copy_from_slice(&r.doc.to_le_bytes());
                s.copy_from_slice(&r.start.to_le_bytes());
                l.copy_from_slice(&r.len.to_le_bytes());
            }
            self.sink.write_all(buf)?;
            entries.push(Entry {
                offset: self.offset,
                rows: rows.len() as u32,
                check: xxh3_64(buf),
            });
            self.offset += buf.len() as u64;
            rows.clear();
        }
        Ok(())
    }

    /// The meta file's bytes.
    pub(crate) fn finish(self) -> Vec<u8> {
        let blocks = self.entries.first().map_or(0, Vec::len);
        let mut out = Vec::with_capacity(HEADER + self.entries.len() * (blocks * ENTRY + 8));
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(self.entries.len() as u64).to_le_bytes());
        out.extend_from_slice(&(blocks as u64).to_le_bytes());
        for entries in &self.entries {
            let at = out.len();
            for e in entries {
                out.extend_from_slice(&e.offset.to_le_bytes());
                out.extend_from_slice(&e.rows.to_le_bytes());
                out.extend_from_slice(&e.check.to_le_bytes());
            }
            let check = xxh3_64(&out[at..]);
            out.extend_from_slice(&check.to_le_bytes());
        }
        out
    }
}

/// The rows of one range as read: each block's bytes (its columns one after another, as
/// [`Writer::block`] wrote them), checked.
#[derive(Debug, Default)]
pub(crate) struct RangeRows {
    blocks: RangeBytes,
    /// The part's first document number, added to each row's position.
    first: u32,
}

impl RangeRows {
    pub(crate) fn len(&self) -> usize {
        (0..self.blocks.len())
            .map(|i| self.blocks.get(i).len() / ROW)
            .sum()
    }

    /// Calls `each` with every row, in file order.
    pub(crate) fn for_each(&self, mut each: impl FnMut(Row)) {
        for i in 0..self.blocks.len() {
            let b = self.blocks.get(i);
            let n = b.len() / ROW;
            let (hash, rest) = b.split_at(8 * n);
            let (doc, rest) = rest.split_at(4 * n);
            let (start, len) = rest.split_at(4 * n);
            for (((h, d), s), l) in (hash.chunks_exact(8))
                .zip(u32s_le(doc))
                .zip(u32s_le(start))
                .zip(u32s_le(len))
            {
                each(Row {
                    hash: u64_at(h, 0),
                    doc: self.first + d,
                    start: s,
                    len: l,
                });
            }
        }
    }

    /// The rows, in file order.
    pub(crate) fn to_rows(&self) -> Rows {
        let mut out = Rows::with_capacity(self.len());
        self.for_each(|r| out.push(r));
        out
    }
}

/// Reads the rows of range `r` (of `ranges`) that a signatures task wrote to `files` (data,
/// meta: [`crate::io::work::paragraph_rows_files`] or [`crate::io::work::substring_rows_files`]),
/// the part's first document being `first`: every slice checked, held as read (a task decodes
/// them as it goes, into what it keeps).
pub(crate) fn read_range(
    work: &OutputDir,
    files: &[String; 2],
    (r, ranges): (usize, usize),
    first: u64,
) -> Result<RangeRows> {
    let first = first as u32;
    let [data, meta] = files;
    let bad = |name: &str, msg: String| Error::WorkFile {
        path: work.location(name),
        source: msg.into(),
    };
    let header = work.read_ranges(meta, std::slice::from_ref(&(0..HEADER as u64)))?;
    let header = header.get(0);
    if header.len() != HEADER || &header[..8] != MAGIC {
        return Err(bad(meta, "not a row meta file (bad header)".into()));
    }
    let (written, blocks) = (u64_at(header, 8), u64_at(header, 16));
    if written != ranges as u64 {
        return Err(bad(
            meta,
            format!("written for {written} hash ranges, this plan has {ranges}"),
        ));
    }
    let per_range = blocks
        .checked_mul(ENTRY as u64)
        .and_then(|b| b.checked_add(8))
        .ok_or_else(|| bad(meta, "bad block count (damaged file)".into()))?;
    let at = HEADER as u64 + r as u64 * per_range;
    let got = work.read_ranges(meta, std::slice::from_ref(&(at..at + per_range)))?;
    let bytes = got.get(0);
    let Some((entries, check)) = bytes.len().checked_sub(8).map(|n| bytes.split_at(n)) else {
        return Err(bad(meta, "truncated".into()));
    };
    if bytes.len() as u64 != per_range || xxh3_64(entries) != u64_at(check, 0) {
        return Err(bad(meta, "checksum mismatch (damaged file)".into()));
    }
    let entries: Vec<Entry> = (entries.chunks_exact(ENTRY))
        .map(|e| Entry {
            offset: u64_at(e, 0),
            rows: u32_at(e, 8),
            check: u64_at(e, 12),
        })
        .filter(|e| e.rows > 0)
        .collect();
    let slices: Vec<_> = (entries.iter())
        .map(|e| e.offset..e.offset + ROW as u64 * u64::from(e.rows))
        .collect();
    if slices.is_empty() {
        return Ok(RangeRows {
            first,
            ..RangeRows::default()
        });
    }
    let blocks = work.read_ranges(data, &slices)?;
    for (i, e) in entries.iter().enumerate() {
        let b = blocks.get(i);
        if b.len() != ROW * e.rows as usize || xxh3_64(b) != e.check {
            return Err(bad(data, "checksum mismatch (damaged file)".into()));
        }
    }
    Ok(RangeRows { blocks, first })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(hash: u64, doc: u32, start: u32, len: u32) -> Row {
        Row {
            hash,
            doc,
            start,
            len,
        }
    }

    /// Writes part 1 with two blocks over three ranges, one range empty in the first block and
    /// one empty in both.
    fn write(dir: &OutputDir) -> Vec<Vec<Row>> {
        let blocks = [
            vec![(0, row(u64::MAX, 4, 0, 7)), (0, row(3, 4, 9, 1))],
            vec![(0, row(1, 9, 0, 5)), (2, row(7, 9, u32::MAX - 1, 1))],
        ];
        let mut want = vec![Vec::new(); 3];
        let mut by_range: Vec<Rows> = (0..3).map(|_| Rows::default()).collect();
        let mut data = Vec::new();
        let mut w = Writer::new(&mut data, 3);
        for b in blocks {
            for (r, x) in b {
                by_range[r].push(x);
                want[r].push(x);
            }
            w.block(&mut by_range).unwrap();
            assert!(by_range.iter().all(|r| r.is_empty()));
        }
        let meta = w.finish();
        let [d, m] = work::paragraph_rows_files(1);
        dir.write_bytes(&d, data).unwrap();
        dir.write_bytes(&m, meta).unwrap();
        want
    }

    fn read_all(work: &OutputDir) -> Result<Vec<Vec<Row>>> {
        (0..3)
            .map(|r| {
                let mut rows = Vec::new();
                read_range(work, &work::paragraph_rows_files(1), (r, 3), 0)
                    .map(|x| x.for_each(|row| rows.push(row)))
                    .map(|()| rows)
            })
            .collect()
    }

    #[test]
    fn ranges_read_back_across_blocks_and_damage_is_caught() {
        let dir = std::env::temp_dir().join(format!("cd-paras-{}", std::process::id()));
        let work = OutputDir::Local(dir.clone());
        let want = write(&work);
        assert_eq!(read_all(&work).unwrap(), want);
        // Rows name documents by position in their part: the reader adds the part's first.
        let shifted = read_range(&work, &work::paragraph_rows_files(1), (0, 3), 10).unwrap();
        let docs: Vec<u32> = shifted.to_rows().iter().map(|r| r.doc).collect();
        let want_docs: Vec<u32> = want[0].iter().map(|r| r.doc + 10).collect();
        assert_eq!(docs, want_docs);
        let err = read_range(&work, &work::paragraph_rows_files(1), (0, 4), 0)
            .unwrap_err()
            .to_string();
        assert!(err.contains("3 hash ranges"), "{err}");
        // A flipped bit in a slice, in an entry, a truncated data file.
        let [data, meta] = work::paragraph_rows_files(1);
        let good = (
            work.read(&data).unwrap().unwrap(),
            work.read(&meta).unwrap().unwrap(),
        );
        let mut bytes = good.0.clone();
        bytes[3] ^= 1;
        work.write_bytes(&data, bytes).unwrap();
        let err = read_all(&work).unwrap_err().to_string();
        assert!(err.contains("checksum") && err.contains(".bin"), "{err}");
        work.write_bytes(&data, good.0[..30].to_vec()).unwrap();
        assert!(read_all(&work).is_err());
        work.write_bytes(&data, good.0).unwrap();
        let mut bytes = good.1.clone();
        bytes[HEADER + 1] ^= 1;
        work.write_bytes(&meta, bytes).unwrap();
        let err = read_all(&work).unwrap_err().to_string();
        assert!(err.contains("checksum") && err.contains(".meta"), "{err}");
        std::fs::remove_dir_all(dir).ok();
    }
}
