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
//!   rows reads the lines before them too, from the nearest place an open reader of the file
//!   stopped at (a task's last chunk, or another task's part before its own).

use std::sync::Mutex;

use polars::prelude::*;

use crate::config::{Config, Keep, ReferenceConfig};
use crate::error::{Error, Result};
use crate::io::object;
use crate::io::shard::{ranked_priority, Label, Shard};

pub(crate) mod edit;
mod fields;
mod head;
mod lines;
pub(crate) mod ranges;

use fields::{Columns, Fields};
use head::groups_of;
pub(crate) use head::{counted_by_tasks, head_documents, identity, list_uncounted, row_groups};
use lines::Position;
pub(crate) use lines::{GroupStart, Lines};

/// Rows per group of a local JSON Lines file in the plan: a task's part may start or end at any
/// of them, as at a Parquet row group.
pub(crate) const ROWS_PER_GROUP: u64 = 65_536;

/// The extensions of a JSON Lines file's name, before a compression extension.
pub(crate) const EXTENSIONS: [&str; 3] = [".jsonl", ".json", ".ndjson"];

/// Whether `file` names a JSON Lines file (by its extension, compressed or not).
pub(crate) fn is_jsonl(file: &str) -> bool {
    let base = without_compression(file).to_ascii_lowercase();
    EXTENSIONS.iter().any(|e| base.ends_with(e))
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

/// `file` without its compression extension (`.gz`, `.zst`), if it has one.
pub(crate) fn without_compression(file: &str) -> &str {
    split_compression(file).0
}

/// An error of `file` at `line`.
pub(super) fn at(file: &str, line: u64, msg: impl Into<String>) -> Error {
    Error::JsonLines {
        file: file.to_string(),
        line,
        msg: msg.into(),
    }
}

/// Open readers of files, each positioned after the rows last read with it, with the file's
/// size and modification time when it was opened: a read starts from the reader of its file
/// that stopped nearest before its first row (a task's next chunk continues where its last one
/// stopped; a task whose part starts where another's ended reads on from there instead of from
/// the file's start). A file changed since (a process of the Python package lives across runs)
/// is opened again.
static CURSORS: Mutex<Vec<(String, Stamp, Lines)>> = Mutex::new(Vec::new());

/// A local file's size and modification time.
type Stamp = Option<(u64, std::time::SystemTime)>;

fn stamp(file: &str) -> Stamp {
    let m = std::fs::metadata(file).ok()?;
    Some((m.len(), m.modified().ok()?))
}

/// Readers kept open at once.
const OPEN_CURSORS: usize = 8;

/// A reader of `file` whose next document is row `row`: the open one that stopped nearest
/// before it, unless `start` (a group start at or before `row`) is nearer, else one opened at
/// `start` or at the file's start.
fn lines_at(
    file: &str,
    bytes: Option<Vec<u8>>,
    row: u64,
    start: Option<&GroupStart>,
) -> Result<Lines> {
    let start = start.filter(|s| bytes.is_none() && s.row <= row && !object::is_url(file));
    if bytes.is_none() {
        let now = stamp(file);
        let mut open = CURSORS.lock().unwrap_or_else(|e| e.into_inner());
        open.retain(|(f, s, _)| f != file || (s.is_some() && *s == now));
        let nearest = (open.iter().enumerate())
            .filter(|(_, (f, _, l))| f == file && l.pos.rows <= row)
            .filter(|(_, (_, _, l))| start.is_none_or(|s| l.pos.rows >= s.row))
            .max_by_key(|(_, (_, _, l))| l.pos.rows)
            .map(|(i, _)| i);
        if let Some(i) = nearest {
            let mut lines = open.swap_remove(i).2;
            drop(open);
            lines.skip_to(row)?;
            return Ok(lines);
        }
    }
    let mut lines = match start {
        Some(s) => Lines::open_at(file, s)?,
        None => Lines::open(file, bytes)?,
    };
    lines.skip_to(row)?;
    Ok(lines)
}

/// Keeps `lines` open for a later read of its file (in place of one stopped at the same row),
/// without its line buffer (a long line's would stay held).
fn keep_open(mut lines: Lines, opened: Stamp) {
    lines.release_buffer();
    let mut open = CURSORS.lock().unwrap_or_else(|e| e.into_inner());
    open.retain(|(f, _, l)| *f != lines.file || l.pos.rows != lines.pos.rows);
    if open.len() >= OPEN_CURSORS {
        open.remove(0);
    }
    open.push((lines.file.clone(), opened, lines));
}

/// Closes the open readers (after the last stage that reads the input by parts).
pub(crate) fn close_readers() {
    CURSORS.lock().unwrap_or_else(|e| e.into_inner()).clear();
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
    read_rows(file, bytes, rows, start, false, cfg).map(|(shard, _)| shard)
}

/// Reads rows `rows` (all when `None`) of a JSON Lines shard the plan did not count, which may
/// end before `rows.end`; with the file's blank lines in all when the read reached its end.
pub(crate) fn read_uncounted(
    file: &str,
    bytes: Option<Vec<u8>>,
    rows: Option<std::ops::Range<u64>>,
    cfg: &Config,
) -> Result<(Shard, Option<u64>)> {
    read_rows(file, bytes, rows, None, true, cfg)
}

/// [`read_shard`], or with `open` [`read_uncounted`].
fn read_rows(
    file: &str,
    bytes: Option<Vec<u8>>,
    rows: Option<std::ops::Range<u64>>,
    start: Option<&GroupStart>,
    open: bool,
    cfg: &Config,
) -> Result<(Shard, Option<u64>)> {
    let from_store = bytes.is_some() || object::is_url(file);
    let first = rows.as_ref().map_or(0, |r| r.start);
    let end = rows.as_ref().map_or(u64::MAX, |r| r.end);
    let opened = stamp(file);
    let mut lines = lines_at(file, bytes, first, start)?;
    let fields = Fields::new(cfg, file);
    // A whole file's documents are not known: its columns grow from a little (a builder keeps
    // its capacity, and a chunk may hold thousands of small files).
    let capacity = match rows {
        Some(_) => (end - first).min(1 << 16) as usize,
        None => 64,
    };
    let mut cols = Columns::new(&fields, capacity);
    while lines.pos.rows < end {
        let Some((line, doc)) = lines.next_doc()? else {
            if rows.is_some() && !open {
                return Err(lines.changed(end));
            }
            break;
        };
        // `doc` is the reader's buffer; the columns copy what they keep.
        cols.push(&fields, file, line, doc)?;
    }
    // Kept open for the next chunk, unless the file is read to its end.
    let ended = lines.at_end();
    let blank_lines = ended.then_some(lines.pos.blank);
    if !from_store && rows.is_some() && !ended {
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
    let shard = Shard {
        first_row: first,
        file: file.to_string(),
        text: text.finish(),
        id: Some(id.finish()),
        priority,
        group,
        partition,
        across,
        line: Some(line),
    };
    Ok((shard, blank_lines))
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
    let fields = Fields::new(cfg, file);
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
    let mut lines = open_checked(file, &Fields::reference(cfg))?;
    lines.count_until(u64::MAX)?;
    Ok(lines.pos.rows)
}

/// `file` opened, its first document read with `fields` so that a wrong field name fails
/// before the file is read through.
fn open_checked(file: &str, fields: &Fields) -> Result<Lines> {
    let mut lines = Lines::open(file, None)?;
    if let Some((line, doc)) = lines.next_doc()? {
        Columns::new(fields, 1).push(fields, file, line, doc)?;
    }
    Ok(lines)
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
    let mut lines = open_checked(file, &Fields::new(cfg, file))?;
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
    let groups = groups_of(rows, local, per_group);
    // Blank lines after the last group's end start no group.
    starts.truncate(groups.len().saturating_sub(1));
    Ok(Counted {
        rows,
        groups,
        starts,
        blank_lines: lines.pos.blank,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new directory for a test's files (the test removes it) and the path of `name` in it.
    fn scratch(test: &str, name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("corpus-dedup-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        (dir, path)
    }

    /// A run's configuration over `file`, defaults otherwise.
    fn config(file: &str) -> Config {
        crate::Settings {
            input: vec![file.to_string()],
            output: Some("/tmp/unused".into()),
            ..Default::default()
        }
        .resolve()
        .unwrap()
    }

    #[test]
    fn a_task_continues_a_file_where_it_stopped_unless_the_file_changed() {
        let (dir, path) = scratch("cursor", "a.jsonl");
        let file = path.to_str().unwrap();
        let lines = |tag: &str| -> String {
            (0..6)
                .map(|i| format!("{{\"text\": \"{tag} {i}\"}}\n"))
                .collect()
        };
        let cfg = config(file);
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
    fn reads_in_any_order_from_open_readers_give_the_rows_asked_for() {
        let (dir, path) = scratch("order", "a.jsonl.zst");
        let file = path.to_str().unwrap();
        let text: String = (0..40)
            .map(|i| {
                format!(
                    "{{\"text\": \"doc {i}\"}}\n{}",
                    if i % 7 == 3 { "\n" } else { "" }
                )
            })
            .collect();
        std::fs::write(&path, zstd::encode_all(text.as_bytes(), 0).unwrap()).unwrap();
        let cfg = config(file);
        // Parts' chunks as concurrent tasks read them, interleaved: each read may start from a
        // reader another left before its rows.
        for (a, b) in [
            (0, 5),
            (20, 25),
            (5, 10),
            (25, 30),
            (10, 20),
            (30, 40),
            (3, 4),
            (35, 36),
        ] {
            let shard = read_shard(file, None, Some(a..b), None, &cfg).unwrap();
            let got: Vec<String> = shard.text.iter().map(|t| t.unwrap().to_string()).collect();
            let want: Vec<String> = (a..b).map(|i| format!("doc {i}")).collect();
            assert_eq!(got, want, "{a}..{b}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_read_from_a_group_start_equals_a_read_from_the_file_start() {
        let (dir, path) = scratch("seek", "a.jsonl");
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
        let cfg = config(file);
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
