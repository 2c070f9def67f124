//! The lines of one JSON Lines file, read through its decompression: documents and blank lines
//! counted, a line's bytes as in the file, the lines before a row counted without copying them.

use std::io::{BufRead, BufReader, Read};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::io::object;

use super::{at, compression, Compression};

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
    pub(super) file: String,
    reader: Box<dyn BufRead + Send>,
    pub(super) pos: Position,
    buf: Vec<u8>,
    /// Whether the next line is the file's first, which may start with a byte-order mark.
    first: bool,
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
            first: true,
        })
    }

    /// Opens a plain local `file` at `start` (its next document is row `start.row`), after
    /// checking a line ends just before it: the file is the one the plan read.
    pub(super) fn open_at(file: &str, start: &GroupStart) -> Result<Lines> {
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
            first: false,
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
        let start = if self.first && self.buf.starts_with(b"\xEF\xBB\xBF") {
            3.min(end)
        } else {
            0
        };
        let document = !self.buf[start..end].iter().all(u8::is_ascii_whitespace);
        self.pos.count_line(!document);
        self.first = false;
        Ok(Some(Line {
            line: self.pos.line,
            document,
            start,
            content: start..end,
        }))
    }

    /// Frees the buffer of the line last read.
    pub(super) fn release_buffer(&mut self) {
        self.buf = Vec::new();
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
    pub(super) fn count_until(&mut self, until: u64) -> Result<()> {
        self.count_within(until, u64::MAX)
    }

    /// [`Self::count_until`], stopping too before a line that starts at byte `end` or later.
    pub(super) fn count_within(&mut self, until: u64, end: u64) -> Result<()> {
        // The first line goes through `next_line`, which knows the byte-order mark.
        if self.first && self.pos.rows < until && self.pos.byte < end && self.next_line()?.is_none()
        {
            return Ok(());
        }
        // The line under way: whether it has bytes, and whether they are all whitespace.
        let (mut open, mut blank) = (false, true);
        while self.pos.rows < until && (open || self.pos.byte < end) {
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
            for e in memchr::memchr_iter(b'\n', buf).chain(std::iter::once(n)) {
                let part = &buf[start..e];
                open |= !part.is_empty();
                blank = blank && part.iter().all(u8::is_ascii_whitespace);
                if e == n {
                    break;
                }
                self.pos.count_line(blank);
                (open, blank) = (false, true);
                start = e + 1;
                if self.pos.rows == until || self.pos.byte + start as u64 >= end {
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
    pub(super) fn at_end(&mut self) -> bool {
        self.reader.fill_buf().is_ok_and(|b| b.is_empty())
    }

    /// Skips document rows until `row` is the next.
    pub(super) fn skip_to(&mut self, row: u64) -> Result<()> {
        self.count_until(row)?;
        match self.pos.rows < row {
            true => Err(self.changed(row)),
            false => Ok(()),
        }
    }

    /// The file ended before document `expected` (counting from 1): it changed since the plan.
    pub(super) fn changed(&self, expected: u64) -> Error {
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
}
