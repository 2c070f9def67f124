//! What the server retained, made durable before it answers: `INDEX/online/added.jsonl` (one
//! `{"id", "text"}` object per line, in the order the adds were decided: JSON Lines a run reads
//! as input), `INDEX/online/removed.jsonl` (`{"id"}` per removed document) and
//! `INDEX/online/copies.jsonl` (the answer given to the first of each normalised text dropped
//! online, which its later exact copies get too). A line is
//! written whole and the file synced (`fdatasync`) before the request that made it is answered,
//! so an acknowledged add survives a crash; a last line cut short by one was never acknowledged
//! and is cut off when the journal is opened again.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The journal's directory under the index.
pub(crate) const DIR: &str = "online";
const ADDED: &str = "added.jsonl";
const REMOVED: &str = "removed.jsonl";
const COPIES: &str = "copies.jsonl";

/// One retained document as the journal holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Added {
    pub id: String,
    pub text: String,
}

#[derive(Serialize, Deserialize)]
struct Removed {
    id: String,
}

/// The answer of a dropped text, by its exact-text hash (hex).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Copy {
    pub hash: String,
    pub batch: String,
    pub of: String,
    pub similarity: f32,
}

/// What a journal holds when it is opened.
#[derive(Debug, Default)]
pub(crate) struct Replayed {
    pub adds: Vec<Added>,
    pub removed: Vec<String>,
    pub copies: Vec<Copy>,
}

/// The open journal.
pub(crate) struct Journal {
    added: File,
    removed: File,
    copies: File,
    /// Whether `copies` was written since the last sync.
    copied: bool,
    dir: PathBuf,
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::Index {
        index: path.display().to_string(),
        msg: format!("cannot write the server's journal: {e}"),
    }
}

/// Reads the whole lines of `path` as `T` (creating the file when absent); a last line without
/// its line end, or one that does not parse, is cut off (it was never acknowledged).
fn replay<T: for<'a> Deserialize<'a>>(path: &Path) -> Result<(File, Vec<T>)> {
    let mut file = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)
        .map_err(|e| io_error(path, e))?;
    let mut items = Vec::new();
    let mut good = 0u64;
    {
        let mut reader = BufReader::new(&mut file);
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .map_err(|e| io_error(path, e))?;
            if n == 0 || !line.ends_with(b"\n") {
                break;
            }
            match serde_json::from_slice::<T>(&line) {
                Ok(item) => items.push(item),
                Err(_) => break,
            }
            good += n as u64;
        }
    }
    if file.metadata().map_err(|e| io_error(path, e))?.len() != good {
        file.set_len(good).map_err(|e| io_error(path, e))?;
        file.sync_data().map_err(|e| io_error(path, e))?;
    }
    file.seek(SeekFrom::End(0)).map_err(|e| io_error(path, e))?;
    Ok((file, items))
}

impl Journal {
    /// Opens the journal of the index directory `index`, with what it holds: the retained
    /// documents in order, the removed ids and the copies' answers.
    pub(crate) fn open(index: &Path) -> Result<(Journal, Replayed)> {
        let dir = index.join(DIR);
        std::fs::create_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
        let (added, adds) = replay::<Added>(&dir.join(ADDED))?;
        let (removed, gone) = replay::<Removed>(&dir.join(REMOVED))?;
        let (copies, answers) = replay::<Copy>(&dir.join(COPIES))?;
        let journal = Journal {
            added,
            removed,
            copies,
            copied: false,
            dir,
        };
        let replayed = Replayed {
            adds,
            removed: gone.into_iter().map(|r| r.id).collect(),
            copies: answers,
        };
        Ok((journal, replayed))
    }

    fn write(file: &mut File, path: PathBuf, item: &impl Serialize) -> Result<()> {
        let mut line = serde_json::to_vec(item).unwrap_or_default();
        line.push(b'\n');
        file.write_all(&line).map_err(|e| io_error(&path, e))
    }

    /// Appends a retained document (durable once [`Self::sync`] returns).
    pub(crate) fn add(&mut self, id: &str, text: &str) -> Result<()> {
        let item = Added {
            id: id.to_string(),
            text: text.to_string(),
        };
        Self::write(&mut self.added, self.dir.join(ADDED), &item)
    }

    /// Appends a removal, durable when it returns.
    pub(crate) fn remove(&mut self, id: &str) -> Result<()> {
        let item = Removed { id: id.to_string() };
        Self::write(&mut self.removed, self.dir.join(REMOVED), &item)?;
        self.removed
            .sync_data()
            .map_err(|e| io_error(&self.dir.join(REMOVED), e))
    }

    /// Appends a copy's answer (durable once [`Self::sync`] returns).
    pub(crate) fn copy(&mut self, item: &Copy) -> Result<()> {
        self.copied = true;
        Self::write(&mut self.copies, self.dir.join(COPIES), item)
    }

    /// Makes every add and copy's answer so far durable.
    pub(crate) fn sync(&mut self) -> Result<()> {
        self.added
            .sync_data()
            .map_err(|e| io_error(&self.dir.join(ADDED), e))?;
        if std::mem::take(&mut self.copied) {
            self.copies
                .sync_data()
                .map_err(|e| io_error(&self.dir.join(COPIES), e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_cut_short_by_a_crash_is_cut_off_and_the_rest_replayed() {
        let dir = std::env::temp_dir().join(format!("corpus-dedup-journal-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let copy = Copy {
            hash: format!("{:032x}", 7u128 << 70),
            batch: "online".into(),
            of: "b".into(),
            similarity: 0.9,
        };
        {
            let (mut j, r) = Journal::open(&dir).unwrap();
            assert!(r.adds.is_empty() && r.removed.is_empty() && r.copies.is_empty());
            j.add("a", "first text").unwrap();
            j.add("b", "second \"quoted\"\ntext").unwrap();
            j.copy(&copy).unwrap();
            j.sync().unwrap();
            j.remove("a").unwrap();
        }
        let path = dir.join(DIR).join(ADDED);
        let whole = std::fs::read(&path).unwrap();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"id\": \"c\", \"te").unwrap();
        drop(f);
        let (mut j, r) = Journal::open(&dir).unwrap();
        let ids: Vec<&str> = r.adds.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(r.adds[1].text, "second \"quoted\"\ntext");
        assert_eq!(r.removed, ["a"]);
        assert_eq!(r.copies, [copy]);
        assert_eq!(std::fs::read(&path).unwrap(), whole);
        j.add("c", "third").unwrap();
        j.sync().unwrap();
        let (_, r) = Journal::open(&dir).unwrap();
        assert_eq!(r.adds.len(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
