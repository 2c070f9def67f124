//! Byte ranges of a plain local JSON Lines file, counted apart (the `lines` stage, one task per
//! few ranges) instead of by the plan reading the file through: a line belongs to the range its
//! first byte is in. Each range's count says where its first line starts and where its groups of
//! [`super::ROWS_PER_GROUP`] documents start, relative to the range; [`settle`] adds the ranges
//! before it, giving the file's documents, blank lines, row groups and group starts as if one
//! reader had counted the whole file.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

use serde::{Deserialize, Serialize};

use super::{at, GroupStart, Lines};
use crate::error::Result;

/// What a `lines` task counted in one byte range of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RangeCount {
    /// The file's position in the plan's list, and the range's position among its ranges.
    pub file: usize,
    pub range: usize,
    /// The documents and the blank lines whose lines start in the range.
    pub rows: u64,
    pub blank: u64,
    /// Where the range's first line starts (row, line and blank 0: nothing before it counted).
    pub first: u64,
    /// Where each later group of its documents starts: rows, lines and blank lines from the
    /// range's first line, bytes from the file's start.
    pub starts: Vec<GroupStart>,
}

/// Counts the lines of `file` that start in bytes `start..end`, with a group start every
/// `per_group` documents.
pub(crate) fn count_range(
    file: &str,
    (start, end): (u64, u64),
    per_group: u64,
    (index, range): (usize, usize),
) -> Result<RangeCount> {
    let first = first_line_at_or_after(file, start)?;
    let mut out = RangeCount {
        file: index,
        range,
        rows: 0,
        blank: 0,
        first,
        starts: Vec::new(),
    };
    if first >= end {
        return Ok(out);
    }
    let mut lines = match first {
        0 => Lines::open(file, None)?,
        b => Lines::open_at(
            file,
            &GroupStart {
                row: 0,
                byte: b,
                line: 0,
                blank: 0,
            },
        )?,
    };
    let mut next = per_group.max(1);
    loop {
        lines.count_within(next, end)?;
        if lines.pos.rows < next || lines.pos.byte >= end || lines.at_end() {
            break;
        }
        let p = lines.pos;
        out.starts.push(GroupStart {
            row: p.rows,
            byte: p.byte,
            line: p.line,
            blank: p.blank,
        });
        next += per_group.max(1);
    }
    lines.count_within(u64::MAX, end)?;
    out.rows = lines.pos.rows;
    out.blank = lines.pos.blank;
    Ok(out)
}

/// The byte where the first line starting at `start` or later begins (the file's size when none
/// does): `start` itself when a line ends just before it.
fn first_line_at_or_after(file: &str, start: u64) -> Result<u64> {
    if start == 0 {
        return Ok(0);
    }
    let fail = |e: std::io::Error| at(file, 0, format!("cannot read: {e}"));
    let mut f = std::fs::File::open(file).map_err(|e| at(file, 0, format!("cannot open: {e}")))?;
    f.seek(SeekFrom::Start(start - 1)).map_err(fail)?;
    let mut before = [0u8; 1];
    if f.read(&mut before).map_err(fail)? == 0 || before == *b"\n" {
        return Ok(start);
    }
    // Skip the rest of the line under way.
    let mut reader = BufReader::with_capacity(1 << 16, f);
    let mut skipped = start;
    loop {
        let buf = reader.fill_buf().map_err(fail)?;
        if buf.is_empty() {
            return Ok(skipped);
        }
        if let Some(i) = memchr::memchr(b'\n', buf) {
            return Ok(skipped + i as u64 + 1);
        }
        let n = buf.len();
        reader.consume(n);
        skipped += n as u64;
    }
}

/// A file's documents as its ranges' counts give them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Settled {
    pub rows: u64,
    pub blank_lines: u64,
    pub row_groups: Vec<u64>,
    pub group_starts: Vec<GroupStart>,
}

/// The file from its ranges' counts, in range order: each range's first line and group starts
/// moved by the documents, lines and blank lines of the ranges before it. Groups start at every
/// range's first line and within a range every `per_group` documents; a start with no document
/// after it (blank lines at the end) starts no group.
pub(crate) fn settle(counts: &[&RangeCount]) -> Settled {
    let (mut rows, mut blank) = (0u64, 0u64);
    let mut starts: Vec<GroupStart> = Vec::new();
    for c in counts {
        let moved = |s: &GroupStart| GroupStart {
            row: rows + s.row,
            byte: s.byte,
            line: rows + blank + s.line,
            blank: blank + s.blank,
        };
        if c.rows > 0 {
            starts.push(moved(&GroupStart {
                row: 0,
                byte: c.first,
                line: 0,
                blank: 0,
            }));
            starts.extend(c.starts.iter().map(moved));
        }
        rows += c.rows;
        blank += c.blank;
    }
    // The first group starts at the file's start; one start per row.
    starts.retain(|s| s.row > 0 && s.row < rows);
    starts.dedup_by_key(|s| s.row);
    let mut row_groups = Vec::with_capacity(starts.len() + 1);
    let mut from = 0;
    for s in starts.iter().map(|s| s.row).chain(std::iter::once(rows)) {
        if s > from {
            row_groups.push(s - from);
        }
        from = s;
    }
    Settled {
        rows,
        blank_lines: blank,
        row_groups,
        group_starts: starts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 200,
            rng_seed: proptest::test_runner::RngSeed::Fixed(61),
            failure_persistence: None,
            ..Default::default()
        })]
        /// Counting a file in ranges cut anywhere gives what counting it whole does, and every
        /// group read from its start gives the documents a whole read gives there, with their
        /// line numbers: for any mix of documents, blank lines, `\r\n`, a byte-order mark, a
        /// missing last line end and ranges inside lines or empty.
        #[test]
        fn ranges_counted_apart_settle_to_the_whole_file(
            parts in proptest::collection::vec(proptest::sample::select(vec!["{\"t\": \"a\"}", "{}", "", " ", "\t \r", "{\"t\": \"a long line that spans cuts\"}"]), 0..40),
            crlf in proptest::bool::ANY,
            bom in proptest::bool::ANY,
            last_end in proptest::bool::ANY,
            cuts in proptest::collection::vec(0.0f64..1.0, 0..8),
            per_group in 1u64..6,
        ) {
            let mut text = String::new();
            if bom {
                text.push('\u{feff}');
            }
            for (i, p) in parts.iter().enumerate() {
                text.push_str(p);
                if i + 1 < parts.len() || last_end {
                    text.push_str(if crlf { "\r\n" } else { "\n" });
                }
            }
            let dir = std::env::temp_dir().join(format!("corpus-dedup-ranges-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join("x.jsonl");
            std::fs::write(&path, &text).unwrap();
            let file = path.to_str().unwrap();
            let size = text.len() as u64;
            let mut bounds: Vec<u64> = cuts.iter().map(|c| (c * size as f64) as u64).collect();
            bounds.push(0);
            bounds.sort_unstable();
            bounds.dedup();
            let ends: Vec<u64> = bounds.iter().skip(1).copied().chain([size]).collect();
            let counts: Vec<RangeCount> = (bounds.iter().zip(&ends).enumerate())
                .map(|(r, (&a, &b))| count_range(file, (a, b), per_group, (0, r)).unwrap())
                .collect();
            let settled = settle(&counts.iter().collect::<Vec<_>>());
            // Whole: every line read.
            let mut whole = Lines::open(file, None).unwrap();
            let mut docs = Vec::new();
            while let Some((line, doc)) = whole.next_doc().unwrap() {
                docs.push((line, doc.to_vec()));
            }
            proptest::prop_assert_eq!(settled.rows, docs.len() as u64);
            proptest::prop_assert_eq!(settled.blank_lines, whole.pos.blank);
            proptest::prop_assert_eq!(settled.row_groups.iter().sum::<u64>(), settled.rows);
            proptest::prop_assert!(settled.row_groups.iter().all(|&g| g > 0));
            proptest::prop_assert_eq!(settled.group_starts.len() + usize::from(settled.rows > 0), settled.row_groups.len());
            for s in &settled.group_starts {
                let mut from = Lines::open_at(file, s).unwrap();
                let (line, doc) = from.next_doc().unwrap().unwrap();
                proptest::prop_assert_eq!(&docs[s.row as usize], &(line, doc.to_vec()));
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}
