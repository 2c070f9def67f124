//! What the plan reads of a JSON Lines file: its identity (size and a fingerprint of its ends),
//! and of a file its tasks count ([`counted_by_tasks`]) the first MiB only: the first document's
//! fields checked, and how many documents a byte holds.

use crate::config::Config;
use crate::error::Result;
use crate::io::object;

use super::fields::{Columns, Fields};
use super::{at, compression, is_jsonl, Compression, Lines, ROWS_PER_GROUP};

/// The groups of a file of `rows` documents: `per_group` documents each, the last one shorter
/// (none for an `s3://` file, read whole).
pub(super) fn groups_of(rows: u64, local: bool, per_group: u64) -> Vec<u64> {
    if !local {
        return Vec::new();
    }
    let mut g = vec![per_group; (rows / per_group) as usize];
    if !rows.is_multiple_of(per_group) {
        g.push(rows % per_group);
    }
    g
}

/// The row groups the plan gives a JSON Lines `file` of `rows` documents (what [`super::count_rows`]
/// finds; for a file the signatures tasks counted).
pub(crate) fn row_groups(file: &str, rows: u64) -> Vec<u64> {
    let per_group = crate::hooks::jsonl_group_rows(ROWS_PER_GROUP);
    groups_of(rows, !object::is_url(file), per_group)
}

/// Whether the documents of `file` are counted by the tasks that read it, not by the plan: a
/// compressed JSON Lines file (the plan would decompress it all, and the task again) or one on
/// object storage (the plan would fetch it all). Such a file is read whole by one task.
pub(crate) fn counted_by_tasks(file: &str) -> bool {
    is_jsonl(file) && (compression(file) != Compression::None || object::is_url(file))
}

/// The documents whose lines end within the first MiB of `file` (compressed, as stored), and
/// the bytes read: how many documents a byte of a file the plan did not count holds, for the
/// plan's estimate.
pub(crate) fn head_documents(file: &str) -> Result<(u64, u64)> {
    let (size, _, head) = identity_and_head(file)?;
    let read = head.len() as u64;
    let mut docs = 0;
    whole_documents(file, head, size, |_, _, _| {
        docs += 1;
        Ok(true)
    })?;
    Ok((docs, read))
}

/// Calls `each(line number, document, file)` with the documents of `head` (a file's first bytes,
/// of `size` in all) whose lines end in it, while it returns true. A read error or a line without
/// its end is the cut at the head's end, not the file's: it ends the documents.
fn whole_documents(
    file: &str,
    head: Vec<u8>,
    size: u64,
    mut each: impl FnMut(u64, &[u8], &str) -> Result<bool>,
) -> Result<()> {
    let whole = head.len() as u64 == size;
    let mut lines = Lines::open(file, Some(head))?;
    while let Ok(Some(l)) = lines.next_line() {
        if !l.document {
            continue;
        }
        if !(whole || lines.bytes(&l).ends_with(b"\n")) || !each(l.line, lines.content(&l), file)? {
            break;
        }
    }
    Ok(())
}

/// Bytes at each end of a JSON Lines file that its fingerprint covers.
const FINGERPRINT_BYTES: u64 = 1 << 20;

/// The size of a JSON Lines file and a fingerprint of it: xxh3-64 of its size and of its first
/// and last MiB (two range reads, local or `s3://`), so an appended or rewritten file gets
/// another one.
pub(crate) fn identity(file: &str) -> Result<(u64, String)> {
    identity_and_head(file).map(|(size, fingerprint, _)| (size, fingerprint))
}

/// [`identity`], and the file's first MiB.
fn identity_and_head(file: &str) -> Result<(u64, String, Vec<u8>)> {
    let (size, read) = crate::io::range_reader(file, |file, e| at(file, 0, e.to_string()))?;
    let head = read(0..size.min(FINGERPRINT_BYTES))?;
    let tail = read(size.saturating_sub(FINGERPRINT_BYTES)..size)?;
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&size.to_le_bytes());
    h.update(&head);
    h.update(&tail);
    Ok((size, format!("jsonl-{:016x}", h.digest()), head))
}

/// What the plan reads of a file its tasks count ([`counted_by_tasks`]): its size and
/// fingerprint, and its first document, checked against the run's fields so a wrong field name
/// fails before any task runs. Only the first MiB is read (a first line longer than it is
/// checked by the task).
pub(crate) fn list_uncounted(file: &str, cfg: &Config) -> Result<(u64, String)> {
    let (size, fingerprint, head) = identity_and_head(file)?;
    let fields = Fields::new(cfg, file);
    // The first document only, and only when its line ends in the head.
    whole_documents(file, head, size, |line, doc, file| {
        Columns::new(&fields, 1).push(&fields, file, line, doc)?;
        Ok(false)
    })?;
    Ok((size, fingerprint))
}
