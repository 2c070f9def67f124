//! What `serve` retained, folded into the next nightly batch. The server journals its adds to
//! `INDEX/online/added.jsonl`; a nightly run's plan (under the index lock) seals that file as
//! `online/fold-N.jsonl` (a rename, under the journal lock the server takes for every write, so
//! no add is split between two files) and reads every sealed file not yet folded as its first
//! input. Their documents come before tonight's, so the keeper rule keeps them and drops
//! tonight's copies of them, and tonight's batch holds them. The head records the numbers it
//! folded (`folded_through`, and the files of the newest batch for its rerun); the server then
//! forgets those documents (the index answers for them) and the next new batch deletes the files.
//!
//! ```text
//! online/added.jsonl              adds since the last seal ({"id", "text"} lines)
//! online/copies.jsonl             answers given to texts dropped online since the last seal
//! online/fold-N.jsonl             sealed adds, N = 1, 2, ... (never reused)
//! online/fold-N.copies.jsonl      the copies' answers sealed with them
//! online/removed.jsonl            ids removed online ({"id"} lines), never matched again
//! online/journal.lock             flock'ed around every journal write and every seal
//! ```

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The journal's directory under the index.
pub(crate) const DIR: &str = "online";
/// The adds since the last seal.
pub(crate) const ADDED: &str = "added.jsonl";
/// The copies' answers since the last seal.
pub(crate) const COPIES: &str = "copies.jsonl";
/// The ids `serve` removed (`{"id"}` lines): no later night matches them either.
pub(crate) const REMOVED: &str = "removed.jsonl";
const LOCK: &str = "journal.lock";

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::Index {
        index: path.display().to_string(),
        msg: format!("cannot use the server's journal: {e}"),
    }
}

/// The sealed adds numbered `n`.
pub(crate) fn fold_file(n: u64) -> String {
    format!("fold-{n:06}.jsonl")
}

/// The copies' answers sealed with fold `n`.
pub(crate) fn copies_file(n: u64) -> String {
    format!("fold-{n:06}.copies.jsonl")
}

/// The number of a sealed adds file's name.
fn number(name: &str) -> Option<u64> {
    let n = name.strip_prefix("fold-")?.strip_suffix(".jsonl")?;
    (n.len() >= 6 && n.bytes().all(|b| b.is_ascii_digit()))
        .then(|| n.parse().ok())
        .flatten()
}

/// Whether an input file is a sealed journal file (read with the journal's fields, `id` and
/// `text`, whatever the run's columns).
pub(crate) fn is_fold_file(path: &str) -> bool {
    let p = Path::new(path);
    let in_journal = p.parent().and_then(Path::file_name) == Some(std::ffi::OsStr::new(DIR));
    in_journal
        && p.file_name()
            .and_then(|n| n.to_str())
            .and_then(number)
            .is_some()
}

/// The sealed adds files under `online` (the journal directory), by number.
pub(crate) fn sealed(online: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let entries = match std::fs::read_dir(online) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(online, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_error(online, e))?;
        let name = entry.file_name();
        if let Some(n) = name.to_str().and_then(number) {
            out.push((n, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// The journal lock, held while it lives (`flock`: the kernel releases it if the process dies).
pub(crate) struct JournalLock(#[expect(dead_code, reason = "held, never read")] File);

impl JournalLock {
    /// Waits for the journal lock of the journal directory `online`.
    pub(crate) fn take(online: &Path) -> Result<JournalLock> {
        use std::os::fd::AsRawFd;
        let path = online.join(LOCK);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| io_error(&path, e))?;
        // SAFETY: flock on a descriptor this function owns; no memory is shared with the kernel.
        let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if r != 0 {
            return Err(io_error(&path, std::io::Error::last_os_error()));
        }
        Ok(JournalLock(file))
    }
}

/// Cuts a last line without its line end off `path` (an add the server never acknowledged),
/// reading back from the end only as far as the last line end.
fn cut_torn_tail(path: &Path) -> Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| io_error(path, e))?;
    let len = f.metadata().map_err(|e| io_error(path, e))?.len();
    let mut end = len;
    let mut chunk = vec![0u8; 1 << 16];
    let whole = loop {
        if end == 0 {
            break 0;
        }
        let start = end.saturating_sub(chunk.len() as u64);
        let buf = &mut chunk[..(end - start) as usize];
        f.seek(SeekFrom::Start(start))
            .and_then(|_| f.read_exact(buf))
            .map_err(|e| io_error(path, e))?;
        if let Some(i) = buf.iter().rposition(|&b| b == b'\n') {
            break start + i as u64 + 1;
        }
        end = start;
    };
    if whole < len {
        f.set_len(whole).map_err(|e| io_error(path, e))?;
        f.sync_all().map_err(|e| io_error(path, e))?;
    }
    Ok(())
}

/// Seals the journal of the local index directory `index` for a new nightly batch: its adds
/// since the last seal become the next fold file (numbered above every earlier one and above
/// `through`, the head's last folded number). Returns every sealed file not yet folded (number
/// above `through`), oldest first: what tonight's batch folds in.
pub(crate) fn seal(index: &Path, through: u64) -> Result<Vec<String>> {
    let online = index.join(DIR);
    if !online.is_dir() {
        return Ok(Vec::new());
    }
    let _lock = JournalLock::take(&online)?;
    let added = online.join(ADDED);
    let len = std::fs::metadata(&added).map_or(0, |m| m.len());
    if len > 0 {
        cut_torn_tail(&added)?;
        let last = sealed(&online)?.last().map_or(0, |s| s.0);
        let n = last.max(through) + 1;
        let copies = online.join(COPIES);
        if copies.exists() {
            cut_torn_tail(&copies)?;
            let to = online.join(copies_file(n));
            std::fs::rename(&copies, &to).map_err(|e| io_error(&to, e))?;
        }
        let to = online.join(fold_file(n));
        std::fs::rename(&added, &to).map_err(|e| io_error(&to, e))?;
        File::open(&online)
            .and_then(|d| d.sync_all())
            .map_err(|e| io_error(&online, e))?;
    }
    Ok(sealed(&online)?
        .into_iter()
        .filter(|s| s.0 > through)
        .map(|s| s.1.display().to_string())
        .collect())
}

/// The ids removed online from the index directory `index`, sorted (whole lines only: a last
/// line cut short was never acknowledged).
pub(crate) fn removed_ids(index: &Path) -> Result<Vec<String>> {
    #[derive(serde::Deserialize)]
    struct Removed {
        id: String,
    }
    let path = index.join(DIR).join(REMOVED);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(&path, e)),
    };
    let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut ids: Vec<String> = bytes[..whole]
        .split(|&b| b == b'\n')
        .map_while(|line| serde_json::from_slice::<Removed>(line).ok())
        .map(|r| r.id)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

/// The highest number among `files` (fold files), or `through` when none is higher.
pub(crate) fn last_number(files: &[String], through: u64) -> u64 {
    files
        .iter()
        .filter_map(|f| Path::new(f).file_name()?.to_str().and_then(number))
        .fold(through, u64::max)
}

/// The lowest number among `files` (fold files; 0 when none).
pub(crate) fn first_number(files: &[String]) -> u64 {
    files
        .iter()
        .filter_map(|f| Path::new(f).file_name()?.to_str().and_then(number))
        .min()
        .unwrap_or(0)
}

/// Deletes the fold files numbered at most `through` that `keep` (the newest batch's, for its
/// rerun) does not name, with their copies' answers.
pub(crate) fn forget(index: &Path, through: u64, keep: &[String]) -> Result<()> {
    let online = index.join(DIR);
    for (n, path) in sealed(&online)? {
        let kept = keep.iter().any(|k| Path::new(k) == path);
        if n <= through && !kept {
            for p in [path, online.join(copies_file(n))] {
                match std::fs::remove_file(&p) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(io_error(&p, e))
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealing_numbers_files_after_every_earlier_one_and_cuts_a_torn_add() {
        let dir = std::env::temp_dir().join(format!("corpus-dedup-fold-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let online = dir.join(DIR);
        assert!(seal(&dir, 0).unwrap().is_empty(), "no journal: nothing");
        std::fs::create_dir_all(&online).unwrap();
        std::fs::write(
            online.join(ADDED),
            "{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"b\",\"te",
        )
        .unwrap();
        std::fs::write(online.join(COPIES), "").unwrap();
        let first = seal(&dir, 0).unwrap();
        assert_eq!(
            first,
            [online.join("fold-000001.jsonl").display().to_string()]
        );
        assert!(is_fold_file(&first[0]) && !is_fold_file("x/fold-000001.jsonl"));
        assert_eq!(
            std::fs::read_to_string(&first[0]).unwrap(),
            "{\"id\":\"a\",\"text\":\"x\"}\n"
        );
        assert!(online.join(copies_file(1)).exists() && !online.join(ADDED).exists());
        // Nothing new: the unfolded file again; after the head folded 1 and 5, number 6.
        assert_eq!(seal(&dir, 0).unwrap(), first);
        std::fs::write(online.join(ADDED), "{\"id\":\"c\",\"text\":\"y\"}\n").unwrap();
        let next = seal(&dir, 5).unwrap();
        assert_eq!(
            next,
            [online.join("fold-000006.jsonl").display().to_string()]
        );
        assert_eq!(last_number(&next, 5), 6);
        forget(&dir, 6, &next).unwrap();
        let left: Vec<u64> = sealed(&online).unwrap().into_iter().map(|s| s.0).collect();
        assert_eq!(left, [6]);
        assert!(!online.join(copies_file(1)).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
