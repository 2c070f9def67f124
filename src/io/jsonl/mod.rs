//! JSON Lines input: `.jsonl`, `.json` and `.ndjson` files, each plain or compressed (`.gz`,
//! `.zst`), local or `s3://`. One JSON object per line; the fields a run reads (the text, the id,
//! `--keep`'s and the label columns) are picked out of each line as it is parsed, every other
//! field skipped unread, so parsing costs what the run needs.
//!
//! The rules, the same for every command:
//! - A document is a line holding a JSON object; a line of only whitespace is no document (it is
//!   skipped and counted: the summary's `blank_lines`). `\r\n` ends a line as `\n` does, and a
//!   UTF-8 byte-order mark before the first line is skipped.
//! - A document's row (the manifest's `row`) is its place among its file's documents, from 0;
//!   without an id field (or with a null one) its id is `file:LINE`, LINE its line number from 1.
//! - A field name is a top-level key, or a dotted path into nested objects (`metadata.url`).
//! - Field types follow the Parquet columns': the text a string (or null), the id a string or an
//!   integer, `--keep COLUMN` a number or boolean, labels a string, integer or boolean. A missing
//!   field is null, but for the text. Anything else is an error naming the file and the line.
//! - A file is read as a stream, a chunk of documents at a time, never whole (an `s3://` object
//!   is fetched whole first, as a Parquet one is). The plan cuts a local file into groups of
//!   [`ROWS_PER_GROUP`] documents, as a Parquet file has row groups; for a plain (uncompressed)
//!   file it records where each group starts ([`GroupStart`]), so a task reading later rows
//!   seeks there. A compressed stream cannot be entered in the middle: a task reading its later
//!   rows reads the lines before them too. The reads of one file in a task continue where the
//!   last one stopped.

use std::io::{BufRead, BufReader, Read};
use std::sync::Mutex;

use polars::prelude::*;
use serde::{Deserialize, Serialize};

use crate::config::{Config, Keep, ReferenceConfig};
use crate::error::{Error, Result};
use crate::io::object;
use crate::io::shard::{ranked_priority, Label, Shard};

pub(crate) mod edit;
mod fields;

use fields::{Columns, Fields};

/// Rows per group of a local JSON Lines file in the plan: a task's part may start or end at any
/// of them, as at a Parquet row group.
pub(crate) const ROWS_PER_GROUP: u64 = 65_536;

/// Whether `file` names a JSON Lines file (by its extension, compressed or not).
pub(crate) fn is_jsonl(file: &str) -> bool {
    let (base, _) = split_compression(file);
    [".jsonl", ".json", ".ndjson"]
        .iter()
        .any(|e| base.to_ascii_lowercase().ends_with(e))
}

/// How a JSON Lines file is compressed, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compression {
    None,
    Gzip,
    Zstd,
}

/// The name without its compression extension, and the compression.
fn split_compression(file: &str) -> (&str, Compression) {
    let lower = file.to_ascii_lowercase();
    if lower.ends_with(".gz") {
        (&file[..file.len() - 3], Compression::Gzip)
    } else if lower.ends_with(".zst") {
        (&file[..file.len() - 4], Compression::Zstd)
    } else {
        (file, Compression::None)
    }
}

/// The compression of `file`, by its name.
pub(crate) fn compression(file: &str) -> Compression {
    split_compression(file).1
}

/// An error of `file` at `line`.
pub(super) fn at(file: &str, line: u64, msg: impl Into<String>) -> Error {
    Error::JsonLines {
        file: file.to_string(),
        line,
        msg: msg.into(),
    }
}

/// One line as [`Lines::next_line`] read it.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    /// Its number, from 1.
    pub line: u64,
    /// False for a line of only whitespace.
    pub document: bool,
    start: usize,
    content: std::ops::Range<usize>,
}

/// The document lines of one file, in order.
pub(crate) struct Lines {
    file: String,
    reader: Box<dyn BufRead + Send>,
    pos: Position,
    buf: Vec<u8>,
}

/// How far a [`Lines`] has read: the line last read (from 1), the documents and the blank lines
/// among them, and the bytes of those lines (in the decompressed stream).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Position {
    pub line: u64,
    pub rows: u64,
    pub blank: u64,
    pub byte: u64,
}

/// Where a group of rows of a plain local JSON Lines file starts, as the plan recorded it: the
/// group's first row, and the byte offset and line count after the line end of the row before
/// it (the blank lines before it counted too). A task seeks there instead of reading the lines
/// before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct GroupStart {
    pub row: u64,
    pub byte: u64,
    pub line: u64,
    pub blank: u64,
}

impl Position {
    /// Counts a line just read: a document, or a blank one.
    fn count_line(&mut self, blank: bool) {
        self.line += 1;
        match blank {
            true => self.blank += 1,
            false => self.rows += 1,
        }
    }
}

impl Lines {
    /// Opens `file` (local, or its bytes when already fetched from object storage), decompressing
    /// as its name says.
    pub(crate) fn open(file: &str, bytes: Option<Vec<u8>>) -> Result<Lines> {
        Self::open_buffered(file, bytes, 1 << 20)
    }

    /// [`Self::open`] with buffers of `capacity` bytes (tests use tiny ones, so lines cross them).
    fn open_buffered(file: &str, bytes: Option<Vec<u8>>, capacity: usize) -> Result<Lines> {
        let raw: Box<dyn Read + Send> = match bytes {
            Some(b) => Box::new(std::io::Cursor::new(b)),
            None if object::is_url(file) => {
                let mut got = object::get_all(std::slice::from_ref(&file.to_string()))?;
                Box::new(std::io::Cursor::new(got.pop().unwrap_or_default()))
            }
            None => Box::new(
                std::fs::File::open(file).map_err(|e| at(file, 0, format!("cannot open: {e}")))?,
            ),
        };
        let raw = BufReader::with_capacity(capacity, raw);
        let reader: Box<dyn BufRead + Send> = match compression(file) {
            Compression::None => Box::new(raw),
            Compression::Gzip => Box::new(BufReader::with_capacity(
                capacity,
                flate2::bufread::MultiGzDecoder::new(raw),
            )),
            Compression::Zstd => Box::new(BufReader::with_capacity(
                capacity,
                zstd::stream::read::Decoder::with_buffer(raw)
                    .map_err(|e| at(file, 0, format!("cannot start zstd decoding: {e}")))?,
            )),
        };
        Ok(Lines {
            file: file.to_string(),
            reader,
            pos: Position::default(),
            buf: Vec::new(),
        })
    }

    /// Opens a plain local `file` at `start` (its next document is row `start.row`), after
    /// checking a line ends just before it: the file is the one the plan read.
    fn open_at(file: &str, start: &GroupStart) -> Result<Lines> {
        use std::io::{Seek, SeekFrom};
        let changed = || {
            at(
                file,
                start.line,
                format!(
                    "no line ends at byte {} as when the run was planned: the file changed since \
                     the run began; run again on the new file",
                    start.byte
                ),
            )
        };
        let mut f =
            std::fs::File::open(file).map_err(|e| at(file, 0, format!("cannot open: {e}")))?;
        let mut before = [0u8; 1];
        let seek = |f: &mut std::fs::File, to: u64| f.seek(SeekFrom::Start(to)).map(|_| ());
        match start.byte {
            0 => return Err(changed()),
            b => seek(&mut f, b - 1)
                .and_then(|()| f.read_exact(&mut before))
                .map_err(|_| changed())?,
        }
        if before != *b"\n" {
            return Err(changed());
        }
        Ok(Lines {
            file: file.to_string(),
            reader: Box::new(BufReader::with_capacity(1 << 20, f)),
            pos: Position {
                line: start.line,
                rows: start.row,
                blank: start.blank,
                byte: start.byte,
            },
            buf: Vec::new(),
        })
    }

    /// The next document: its line number and bytes (without the line end), or `None` at the end.
    pub(crate) fn next_doc(&mut self) -> Result<Option<(u64, &[u8])>> {
        loop {
            match self.next_line()? {
                None => return Ok(None),
                Some(l) if l.document => {
                    let line = l.line;
                    let content = l.content;
                    return Ok(Some((line, &self.buf[content])));
                }
                Some(_) => {}
            }
        }
    }

    /// The next line, a document or blank, with its bytes as they are in the file: `bytes` from
    /// [`Lines::bytes`], its document's JSON at [`Lines::content`].
    pub(crate) fn next_line(&mut self) -> Result<Option<Line>> {
        self.buf.clear();
        let n = match self.reader.read_until(b'\n', &mut self.buf) {
            Ok(n) => n,
            Err(e) => return Err(self.read_error(e)),
        };
        if n == 0 {
            return Ok(None);
        }
        self.pos.byte += n as u64;
        let mut end = self.buf.len();
        if self.buf[..end].ends_with(b"\n") {
            end -= 1;
        }
        if self.buf[..end].ends_with(b"\r") {
            end -= 1;
        }
        let start = if self.pos.line == 0 && self.buf.starts_with(b"\xEF\xBB\xBF") {
            3.min(end)
        } else {
            0
        };
        let document = !self.buf[start..end].iter().all(u8::is_ascii_whitespace);
        self.pos.count_line(!document);
        Ok(Some(Line {
            line: self.pos.line,
            document,
            start,
            content: start..end,
        }))
    }

    /// A line's bytes as in the file (from after a byte-order mark), its line end included.
    pub(crate) fn bytes(&self, l: &Line) -> &[u8] {
        &self.buf[l.start..]
    }

    /// A line's document, without its line end.
    pub(crate) fn content(&self, l: &Line) -> &[u8] {
        &self.buf[l.content.clone()]
    }

    /// Reads on, counting documents and blank lines as [`Self::next_line`] would but without
    /// copying a line, until `until` documents are read (stopping after that one's line end) or
    /// the file ends.
    fn count_until(&mut self, until: u64) -> Result<()> {
        // The first line goes through `next_line`, which knows the byte-order mark.
        if self.pos.line == 0 && self.pos.rows < until && self.next_line()?.is_none() {
            return Ok(());
        }
        // The line under way: whether it has bytes, and whether they are all whitespace.
        let (mut open, mut blank) = (false, true);
        while self.pos.rows < until {
            let buf = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) => return Err(self.read_error(e)),
            };
            if buf.is_empty() {
                if open {
                    self.pos.count_line(blank);
                }
                return Ok(());
            }
            let n = buf.len();
            let mut start = 0;
            let mut used = n;
            for end in memchr::memchr_iter(b'\n', buf).chain(std::iter::once(n)) {
                let part = &buf[start..end];
                open |= !part.is_empty();
                blank = blank && part.iter().all(u8::is_ascii_whitespace);
                if end == n {
                    break;
                }
                self.pos.count_line(blank);
                (open, blank) = (false, true);
                start = end + 1;
                if self.pos.rows == until {
                    used = start;
                    break;
                }
            }
            self.reader.consume(used);
            self.pos.byte += used as u64;
        }
        Ok(())
    }

    /// A read error at the next line, saying what a broken compressed file looks like.
    fn read_error(&self, e: std::io::Error) -> Error {
        let what = match compression(&self.file) {
            Compression::None => "",
            Compression::Gzip => " (is the gzip file complete? re-copy it if truncated)",
            Compression::Zstd => " (is the zstd file complete? re-copy it if truncated)",
        };
        at(
            &self.file,
            self.pos.line + 1,
            format!("cannot read: {e}{what}"),
        )
    }

    /// Whether nothing is left to read (a read error counts as more: the next read reports it).
    fn at_end(&mut self) -> bool {
        self.reader.fill_buf().is_ok_and(|b| b.is_empty())
    }

    /// Skips document rows until `row` is the next.
    fn skip_to(&mut self, row: u64) -> Result<()> {
        self.count_until(row)?;
        match self.pos.rows < row {
            true => Err(self.changed(row)),
            false => Ok(()),
        }
    }

    /// The file ended before document `expected` (counting from 1): it changed since the plan.
    fn changed(&self, expected: u64) -> Error {
        at(
            &self.file,
            self.pos.line,
            format!(
                "the file holds {} documents now, the run expected at least {expected}: it \
                 changed since the run began; run again on the new file",
                self.pos.rows
            ),
        )
    }
}

/// Open files a task reads in order, each positioned after the rows last read from it (a later
/// chunk of a file continues where the last one stopped instead of reading from the start),
/// with the file's size and modification time when it was opened: a file changed since (a
/// process of the Python package lives across runs) is opened again.
static CURSORS: Mutex<Vec<(String, Stamp, Lines)>> = Mutex::new(Vec::new());

/// A local file's size and modification time.
type Stamp = Option<(u64, std::time::SystemTime)>;

fn stamp(file: &str) -> Stamp {
    let m = std::fs::metadata(file).ok()?;
    Some((m.len(), m.modified().ok()?))
}
/// Files kept open at once.
const OPEN_CURSORS: usize = 8;

/// A reader of `file` whose next document is row `row`: an open one that stopped there, else
/// one opened at `start` (a group start at or before `row`) or at the file's start.
fn lines_at(
    file: &str,
    bytes: Option<Vec<u8>>,
    row: u64,
    start: Option<&GroupStart>,
) -> Result<Lines> {
    if bytes.is_none() {
        let now = stamp(file);
        let mut open = CURSORS.lock().unwrap_or_else(|e| e.into_inner());
        open.retain(|(f, s, _)| f != file || (s.is_some() && *s == now));
        if let Some(i) = (open.iter()).position(|(f, _, l)| f == file && l.pos.rows == row) {
            return Ok(open.swap_remove(i).2);
        }
    }
    let mut lines = match start {
        Some(s) if bytes.is_none() && s.row <= row && !object::is_url(file) => {
            Lines::open_at(file, s)?
        }
        _ => Lines::open(file, bytes)?,
    };
    lines.skip_to(row)?;
    Ok(lines)
}

/// Keeps `lines` open for the next read of its file.
fn keep_open(lines: Lines, opened: Stamp) {
    let mut open = CURSORS.lock().unwrap_or_else(|e| e.into_inner());
    open.retain(|(f, _, _)| *f != lines.file);
    if open.len() >= OPEN_CURSORS {
        open.remove(0);
    }
    open.push((lines.file.clone(), opened, lines));
}

/// Reads rows `rows` (all when `None`) of a JSON Lines shard with the run's fields, from
/// `start` when the plan recorded where their group starts.
pub(crate) fn read_shard(
    file: &str,
    bytes: Option<Vec<u8>>,
    rows: Option<std::ops::Range<u64>>,
    start: Option<&GroupStart>,
    cfg: &Config,
) -> Result<Shard> {
    let from_store = bytes.is_some() || object::is_url(file);
    let first = rows.as_ref().map_or(0, |r| r.start);
    let end = rows.as_ref().map_or(u64::MAX, |r| r.end);
    let opened = stamp(file);
    let mut lines = lines_at(file, bytes, first, start)?;
    let fields = Fields::new(cfg);
    let capacity = (end - first).min(1 << 16) as usize;
    let mut cols = Columns::new(&fields, capacity);
    while lines.pos.rows < end {
        let Some((line, doc)) = lines.next_doc()? else {
            if rows.is_some() {
                return Err(lines.changed(end));
            }
            break;
        };
        // `doc` is the reader's buffer; the columns copy what they keep.
        cols.push(&fields, file, line, doc)?;
    }
    // Kept open for the next chunk, unless the file is read to its end.
    if !from_store && rows.is_some() && !lines.at_end() {
        keep_open(lines, opened);
    }
    let Columns {
        text,
        id,
        priority,
        labels,
        line,
    } = cols;
    let mut labels: Vec<Option<StringChunked>> =
        labels.into_iter().map(|b| Some(b.finish())).collect();
    let mut label =
        |l: Label| (fields.labels.iter().position(|(x, _)| *x == l)).and_then(|i| labels[i].take());
    let (partition, across, group, rank) = (
        label(Label::PartitionBy),
        label(Label::Across),
        label(Label::ReportGroup),
        label(Label::KeepRank),
    );
    let priority = match (&cfg.keep, rank) {
        (Keep::Ranked { values, .. }, Some(rank)) => Some(ranked_priority(&rank, values)),
        _ => fields
            .priority
            .map(|_| Float64Chunked::from_iter_options("priority".into(), priority.into_iter())),
    };
    Ok(Shard {
        first_row: first,
        file: file.to_string(),
        text: text.finish(),
        id: Some(id.finish()),
        priority,
        group,
        partition,
        across,
        line: Some(line),
    })
}

/// The texts of rows `rows` (sorted, distinct) of a JSON Lines shard, in one pass: only those
/// lines are parsed and kept (the report and `explain` want a few texts of a large file).
pub(crate) fn read_texts(
    file: &str,
    bytes: Option<Vec<u8>>,
    rows: &[u64],
    cfg: &Config,
) -> Result<Vec<Option<String>>> {
    let mut lines = Lines::open(file, bytes)?;
    let fields = Fields::new(cfg);
    let mut out = Vec::with_capacity(rows.len());
    for &row in rows {
        lines.skip_to(row)?;
        let Some((line, doc)) = lines.next_doc()? else {
            return Err(lines.changed(row + 1));
        };
        let mut one = Columns::new(&fields, 1);
        one.push(&fields, file, line, doc)?;
        out.push(one.text.finish().get(0).map(str::to_string));
    }
    Ok(out)
}

/// The items of a `--reference` JSON Lines file, all or the `count` from item `first`: their ids
/// (`file:LINE` without an id field, as for the input) and texts.
pub(crate) fn read_items(
    file: &str,
    bytes: Option<Vec<u8>>,
    cfg: &ReferenceConfig,
    span: Option<(u64, u64)>,
) -> Result<(Vec<String>, StringChunked)> {
    let (first, count) = span.unwrap_or((0, u64::MAX));
    let mut lines = Lines::open(file, bytes)?;
    lines.skip_to(first)?;
    let fields = Fields::reference(cfg);
    let mut cols = Columns::new(&fields, count.min(1 << 16) as usize);
    while lines.pos.rows - first < count {
        let Some((line, doc)) = lines.next_doc()? else {
            break;
        };
        cols.push(&fields, file, line, doc)?;
    }
    let ids = (cols.id.finish().iter().zip(&cols.line))
        .map(|(id, line)| id.map_or_else(|| format!("{file}:{line}"), str::to_string))
        .collect();
    Ok((ids, cols.text.finish()))
}

/// The items of a `--reference` JSON Lines file, counted; the first one's fields are checked.
pub(crate) fn count_items(file: &str, cfg: &ReferenceConfig) -> Result<u64> {
    let mut lines = Lines::open(file, None)?;
    let fields = Fields::reference(cfg);
    if let Some((line, doc)) = lines.next_doc()? {
        Columns::new(&fields, 1).push(&fields, file, line, doc)?;
    }
    lines.count_until(u64::MAX)?;
    Ok(lines.pos.rows)
}

/// What a plan needs of a JSON Lines file ([`count_rows`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Counted {
    pub rows: u64,
    /// Rows of each group (local files only: an `s3://` one is fetched and read whole).
    pub groups: Vec<u64>,
    /// Where each group after the first starts (plain local files only).
    pub starts: Vec<GroupStart>,
    pub blank_lines: u64,
}

/// Counts a JSON Lines file's documents, groups and blank lines. The first document's fields are
/// checked, so a wrong field name fails when the plan is made.
pub(crate) fn count_rows(file: &str, cfg: &Config) -> Result<Counted> {
    count_groups(file, cfg, crate::hooks::jsonl_group_rows(ROWS_PER_GROUP))
}

/// [`count_rows`] with groups of `per_group` documents.
fn count_groups(file: &str, cfg: &Config, per_group: u64) -> Result<Counted> {
    let mut lines = Lines::open(file, None)?;
    let fields = Fields::new(cfg);
    if let Some((line, doc)) = lines.next_doc()? {
        Columns::new(&fields, 1).push(&fields, file, line, doc)?;
    }
    let local = !object::is_url(file);
    let seekable = local && compression(file) == Compression::None;
    let mut starts = Vec::new();
    let mut next = per_group;
    loop {
        lines.count_until(next)?;
        if lines.pos.rows < next || lines.at_end() {
            break;
        }
        if seekable {
            let Position {
                line,
                rows,
                blank,
                byte,
            } = lines.pos;
            starts.push(GroupStart {
                row: rows,
                byte,
                line,
                blank,
            });
        }
        next += per_group;
    }
    lines.count_until(u64::MAX)?;
    let rows = lines.pos.rows;
    let groups = if local {
        let mut g = vec![per_group; (rows / per_group) as usize];
        if rows % per_group != 0 {
            g.push(rows % per_group);
        }
        g
    } else {
        Vec::new()
    };
    // Blank lines after the last group's end start no group.
    starts.truncate(groups.len().saturating_sub(1));
    Ok(Counted {
        rows,
        groups,
        starts,
        blank_lines: lines.pos.blank,
    })
}

/// Bytes at each end of a JSON Lines file that its fingerprint covers.
const FINGERPRINT_BYTES: u64 = 1 << 20;

/// The size of a JSON Lines file and a fingerprint of it: xxh3-64 of its size and of its first
/// and last MiB (two range reads, local or `s3://`), so an appended or rewritten file gets
/// another one.
pub(crate) fn identity(file: &str) -> Result<(u64, String)> {
    let (size, read) = crate::io::range_reader(file, |file, e| at(file, 0, e.to_string()))?;
    let head = read(0..size.min(FINGERPRINT_BYTES))?;
    let tail = read(size.saturating_sub(FINGERPRINT_BYTES)..size)?;
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&size.to_le_bytes());
    h.update(&head);
    h.update(&tail);
    Ok((size, format!("jsonl-{:016x}", h.digest())))
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 300,
            rng_seed: proptest::test_runner::RngSeed::Fixed(58),
            failure_persistence: None,
            ..Default::default()
        })]
        /// The plan's count (the first document read, the rest counted without copying lines)
        /// and a skip to any document are what reading every line gives, for any mix of
        /// documents, blank lines, `\r\n`, a byte-order mark and a missing last line end.
        #[test]
        fn counting_and_skipping_equal_reading_every_line(
            parts in proptest::collection::vec(proptest::sample::select(vec!["{}", "{\"t\": 1}", "", " ", "\t \r", "\u{feff}{}"]), 0..40),
            ends in proptest::collection::vec(proptest::sample::select(vec!["\n", "\r\n"]), 40),
            last_end in proptest::bool::ANY,
            capacity in 1usize..9,
        ) {
            let mut text = String::new();
            for (i, p) in parts.iter().enumerate() {
                text.push_str(p);
                if i + 1 < parts.len() || last_end {
                    text.push_str(ends[i]);
                }
            }
            let open =
                || Lines::open_buffered("x.jsonl", Some(text.clone().into_bytes()), capacity).unwrap();
            let mut every = open();
            while every.next_line().unwrap().is_some() {}
            let mut counted = open();
            let _ = counted.next_doc().unwrap();
            counted.count_until(u64::MAX).unwrap();
            proptest::prop_assert_eq!(
                (counted.pos.rows, counted.pos.blank, counted.pos.line),
                (every.pos.rows, every.pos.blank, every.pos.line)
            );
            // Skipping to any document, then reading it, gives what reading line by line gives.
            for k in 0..=every.pos.rows {
                let mut read = open();
                let mut want = None;
                for _ in 0..=k {
                    want = read.next_doc().unwrap().map(|(l, d)| (l, d.to_vec()));
                }
                let mut skipped = open();
                skipped.skip_to(k).unwrap();
                let got = skipped.next_doc().unwrap().map(|(l, d)| (l, d.to_vec()));
                proptest::prop_assert_eq!(got, want);
            }
        }
    }

    #[test]
    fn a_task_continues_a_file_where_it_stopped_unless_the_file_changed() {
        let dir = std::env::temp_dir().join(format!("corpus-dedup-cursor-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.jsonl");
        let file = path.to_str().unwrap();
        let lines = |tag: &str| -> String {
            (0..6)
                .map(|i| format!("{{\"text\": \"{tag} {i}\"}}\n"))
                .collect()
        };
        let cfg = crate::Settings {
            input: vec![file.to_string()],
            output: Some("/tmp/unused".into()),
            ..Default::default()
        }
        .resolve()
        .unwrap();
        let texts = |rows: std::ops::Range<u64>| -> Vec<String> {
            let shard = read_shard(file, None, Some(rows), None, &cfg).unwrap();
            shard.text.iter().map(|t| t.unwrap().to_string()).collect()
        };
        std::fs::write(&path, lines("old")).unwrap();
        assert_eq!(texts(0..2), ["old 0", "old 1"]);
        assert_eq!(texts(2..4), ["old 2", "old 3"]);
        // Rewritten (longer) under the same name: the next read opens it again.
        std::fs::write(&path, lines("newer")).unwrap();
        assert_eq!(texts(4..6), ["newer 4", "newer 5"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_read_from_a_group_start_equals_a_read_from_the_file_start() {
        let dir = std::env::temp_dir().join(format!("corpus-dedup-seek-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.jsonl");
        let file = path.to_str().unwrap();
        // A byte-order mark, blank lines (also at a group's edge), `\r\n`, no last line end.
        let mut text = String::from("\u{feff}");
        for i in 0..23 {
            text.push_str(&format!("{{\"text\": \"doc {i}\"}}"));
            text.push_str(if i % 3 == 0 { "\r\n" } else { "\n" });
            if i % 4 == 1 {
                text.push_str(" \n\n");
            }
        }
        text.push_str("{\"text\": \"last\"}");
        std::fs::write(&path, &text).unwrap();
        let cfg = crate::Settings {
            input: vec![file.to_string()],
            output: Some("/tmp/unused".into()),
            ..Default::default()
        }
        .resolve()
        .unwrap();
        let whole = read_shard(file, None, None, None, &cfg).unwrap();
        let rows_of = |s: &Shard| -> Vec<(String, u64)> {
            (s.text.iter().zip(s.line.as_ref().unwrap().iter()))
                .map(|(t, l)| (t.unwrap().to_string(), *l))
                .collect()
        };
        let all = rows_of(&whole);
        assert_eq!(all.len(), 24);
        for per_group in [1, 2, 5, 24, 30] {
            let c = count_groups(file, &cfg, per_group).unwrap();
            assert_eq!((c.rows, c.blank_lines), (24, 12));
            assert_eq!(c.starts.len(), c.groups.len() - 1, "{per_group}");
            for (g, s) in c.starts.iter().enumerate() {
                assert_eq!(s.row, (g as u64 + 1) * per_group);
                // Every row from the group start on, with its line number.
                for k in s.row..24 {
                    let got = read_shard(file, None, Some(k..k + 1), Some(s), &cfg).unwrap();
                    assert_eq!(rows_of(&got), [all[k as usize].clone()], "{per_group} {k}");
                }
            }
        }
        // A start that is no line end (the file changed since the plan) is refused.
        let c = count_groups(file, &cfg, 5).unwrap();
        let moved = GroupStart {
            byte: c.starts[0].byte + 1,
            ..c.starts[0]
        };
        let e = read_shard(file, None, Some(5..6), Some(&moved), &cfg)
            .err()
            .unwrap();
        assert!(e.to_string().contains("changed since"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn names_say_the_format_and_the_compression() {
        for f in ["a.jsonl", "s3://b/x.JSONL.gz", "c.json.zst", "d.ndjson"] {
            assert!(is_jsonl(f), "{f}");
        }
        for f in ["a.parquet", "b.jsonl.bak", "c.gz"] {
            assert!(!is_jsonl(f), "{f}");
        }
        assert_eq!(compression("x.jsonl.gz"), Compression::Gzip);
        assert_eq!(compression("x.jsonl.ZST"), Compression::Zstd);
        assert_eq!(compression("x.jsonl"), Compression::None);
    }
}
