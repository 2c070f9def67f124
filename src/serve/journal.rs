//! What the server retained, made durable before it answers: `INDEX/online/added.jsonl` (one
//! `{"id", "text"}` object per line, in the order the adds were decided: JSON Lines a run reads
//! as input), `INDEX/online/removed.jsonl` (`{"id"}` per removed document) and
//! `INDEX/online/copies.jsonl` (the answer given to the first of each normalised text dropped
//! online, which its later exact copies get too). A line is
//! written whole and the file synced (`fdatasync`) before the request that made it is answered,
//! so an acknowledged add survives a crash; a last line cut short by one was never acknowledged
//! and is cut off when the journal is opened again. A nightly run seals the adds and copies
//! into a fold file ([`crate::index::fold`]) under the journal lock, which every write here
//! holds: the next write finds its file renamed and starts a new one.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::index::fold::{self, JournalLock, ADDED, COPIES, DIR, REMOVED};

/// The tag of documents in the adds file not yet sealed.
pub(crate) const UNSEALED: u64 = u64::MAX;

/// One retained document as the journal holds it; for an index with `--partition-by COLUMN`,
/// with its value at COLUMN (a dotted path is nested objects), where the nightly run that folds
/// the file in reads it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Added {
    pub id: String,
    pub text: String,
    #[serde(flatten, default)]
    labels: serde_json::Map<String, serde_json::Value>,
}

impl Added {
    /// The value at `column` (a run's `--partition-by`), as a run reads it (None: null, absent
    /// or of a kind a run refuses).
    pub(crate) fn label(&self, column: &str) -> Option<String> {
        let steps: Vec<&str> = column.split('.').collect();
        let (last, path) = steps.split_last()?;
        let mut at = &self.labels;
        for step in path {
            at = at.get(*step)?.as_object()?;
        }
        crate::partition::json_label(at.get(*last)?).flatten()
    }
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
    /// The retained documents not yet folded into a batch, in order, with the number of the
    /// fold file holding each ([`UNSEALED`]: the adds file).
    pub adds: Vec<(u64, Added)>,
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
    /// The journal lock, from [`Self::lock`] to [`Self::sync`].
    held: Option<JournalLock>,
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::Index {
        index: path.display().to_string(),
        msg: format!("cannot write the server's journal: {e}"),
    }
}

/// The whole lines at the start of `reader` that parse as `T`, and their bytes.
fn read_lines<T: for<'a> Deserialize<'a>>(
    reader: impl std::io::Read,
    path: &Path,
) -> Result<(Vec<T>, u64)> {
    let mut reader = BufReader::new(reader);
    let (mut items, mut good) = (Vec::new(), 0u64);
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
    Ok((items, good))
}

/// Opens `path` for appending (created when absent).
fn append(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)
        .map_err(|e| io_error(path, e))
}

/// Reads the whole lines of `path` as `T` (creating the file when absent); a last line without
/// its line end, or one that does not parse, is cut off (it was never acknowledged).
fn replay<T: for<'a> Deserialize<'a>>(path: &Path) -> Result<(File, Vec<T>)> {
    let mut file = append(path)?;
    let (items, good) = read_lines(&mut file, path)?;
    if file.metadata().map_err(|e| io_error(path, e))?.len() != good {
        file.set_len(good).map_err(|e| io_error(path, e))?;
        file.sync_data().map_err(|e| io_error(path, e))?;
    }
    file.seek(SeekFrom::End(0)).map_err(|e| io_error(path, e))?;
    Ok((file, items))
}

/// The items of a sealed file (none when it is gone).
fn read_sealed<T: for<'a> Deserialize<'a>>(path: &Path) -> Result<Vec<T>> {
    match File::open(path) {
        Ok(f) => Ok(read_lines(f, path)?.0),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io_error(path, e)),
    }
}

impl Journal {
    /// Opens the journal of the index directory `index`, with what it holds: the retained
    /// documents not folded into a batch yet (those of fold files numbered above `through`, then
    /// the adds file), the removed ids and the copies' answers.
    pub(crate) fn open(index: &Path, through: u64) -> Result<(Journal, Replayed)> {
        let dir = index.join(DIR);
        std::fs::create_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
        // No seal while the files are read.
        let _lock = JournalLock::take(&dir)?;
        let (mut adds, mut answers) = (Vec::new(), Vec::new());
        for (n, path) in fold::sealed(&dir)?.into_iter().filter(|s| s.0 > through) {
            adds.extend(read_sealed::<Added>(&path)?.into_iter().map(|a| (n, a)));
            answers.extend(read_sealed::<Copy>(&dir.join(fold::copies_file(n)))?);
        }
        let (added, unsealed) = replay::<Added>(&dir.join(ADDED))?;
        adds.extend(unsealed.into_iter().map(|a| (UNSEALED, a)));
        let (removed, gone) = replay::<Removed>(&dir.join(REMOVED))?;
        let (copies, unsealed) = replay::<Copy>(&dir.join(COPIES))?;
        answers.extend(unsealed);
        let journal = Journal {
            added,
            removed,
            copies,
            copied: false,
            dir,
            held: None,
        };
        let replayed = Replayed {
            adds,
            removed: gone.into_iter().map(|r| r.id).collect(),
            copies: answers,
        };
        Ok((journal, replayed))
    }

    /// Takes the journal lock for the writes of one request (held until [`Self::sync`]). When
    /// a nightly run sealed the adds since the last write, new files are started, and the sealed
    /// file's number is returned (0 when it is gone already: folded into a batch).
    pub(crate) fn lock(&mut self) -> Result<Option<u64>> {
        let held = JournalLock::take(&self.dir)?;
        let path = self.dir.join(ADDED);
        let ours = self.added.metadata().map_err(|e| io_error(&path, e))?;
        let same = |p: &Path| {
            std::fs::metadata(p).is_ok_and(|m| m.dev() == ours.dev() && m.ino() == ours.ino())
        };
        let mut sealed = None;
        if !same(&path) {
            let n = fold::sealed(&self.dir)?.into_iter().find(|s| same(&s.1));
            sealed = Some(n.map_or(0, |s| s.0));
            self.added = append(&path)?;
            self.copies = append(&self.dir.join(COPIES))?;
        }
        self.held = Some(held);
        Ok(sealed)
    }

    /// Releases the journal lock (also after a failed write).
    pub(crate) fn unlock(&mut self) {
        self.held = None;
    }

    /// [`Self::lock`] without writing: whether the adds were sealed since the last write.
    pub(crate) fn sealed_since(&mut self) -> Result<Option<u64>> {
        let sealed = self.lock()?;
        self.held = None;
        Ok(sealed)
    }

    fn write(file: &mut File, path: PathBuf, item: &impl Serialize) -> Result<()> {
        let mut line = serde_json::to_vec(item).unwrap_or_default();
        line.push(b'\n');
        file.write_all(&line).map_err(|e| io_error(&path, e))
    }

    /// Appends a retained document (durable once [`Self::sync`] returns), under [`Self::lock`];
    /// `label`: the index's `--partition-by` column and the text's value there.
    pub(crate) fn add(
        &mut self,
        id: &str,
        text: &str,
        label: Option<(&str, Option<&str>)>,
    ) -> Result<()> {
        let mut labels = serde_json::Map::new();
        if let Some((column, value)) = label {
            // Nested objects along a dotted column, as `label` reads them.
            let steps: Vec<&str> = column.split('.').collect();
            let (last, path) = steps.split_last().unwrap_or((&column, &[]));
            let mut inner = serde_json::Map::new();
            inner.insert(
                last.to_string(),
                value.map(serde_json::Value::from).unwrap_or_default(),
            );
            for step in path.iter().rev() {
                let mut outer = serde_json::Map::new();
                outer.insert(step.to_string(), serde_json::Value::Object(inner));
                inner = outer;
            }
            labels = inner;
        }
        let item = Added {
            id: id.to_string(),
            text: text.to_string(),
            labels,
        };
        Self::write(&mut self.added, self.dir.join(ADDED), &item)
    }

    /// Appends a removal, durable when it returns (never sealed: it holds for every night).
    pub(crate) fn remove(&mut self, id: &str) -> Result<()> {
        let item = Removed { id: id.to_string() };
        Self::write(&mut self.removed, self.dir.join(REMOVED), &item)?;
        self.removed
            .sync_data()
            .map_err(|e| io_error(&self.dir.join(REMOVED), e))
    }

    /// Appends a copy's answer (durable once [`Self::sync`] returns), under [`Self::lock`].
    pub(crate) fn copy(&mut self, item: &Copy) -> Result<()> {
        self.copied = true;
        Self::write(&mut self.copies, self.dir.join(COPIES), item)
    }

    /// Makes every add and copy's answer so far durable, and releases the journal lock.
    pub(crate) fn sync(&mut self) -> Result<()> {
        self.added
            .sync_data()
            .map_err(|e| io_error(&self.dir.join(ADDED), e))?;
        if std::mem::take(&mut self.copied) {
            self.copies
                .sync_data()
                .map_err(|e| io_error(&self.dir.join(COPIES), e))?;
        }
        self.held = None;
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
            let (mut j, r) = Journal::open(&dir, 0).unwrap();
            assert!(r.adds.is_empty() && r.removed.is_empty() && r.copies.is_empty());
            j.add("a", "first text", None).unwrap();
            j.add(
                "b",
                "second \"quoted\"\ntext",
                Some(("meta.lang", Some("en"))),
            )
            .unwrap();
            j.copy(&copy).unwrap();
            j.sync().unwrap();
            j.remove("a").unwrap();
        }
        let path = dir.join(DIR).join(ADDED);
        let whole = std::fs::read(&path).unwrap();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"id\": \"c\", \"te").unwrap();
        drop(f);
        let (mut j, r) = Journal::open(&dir, 0).unwrap();
        let ids: Vec<&str> = r.adds.iter().map(|a| a.1.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(r.adds[1].1.text, "second \"quoted\"\ntext");
        // A `--partition-by` value sits at its column's path, nested objects for a dotted one.
        assert_eq!(r.adds[1].1.label("meta.lang").as_deref(), Some("en"));
        assert!(String::from_utf8_lossy(&std::fs::read(&path).unwrap())
            .contains(r#""meta":{"lang":"en"}"#));
        assert_eq!(r.adds[0].1.label("meta.lang"), None);
        assert_eq!(r.removed, ["a"]);
        assert_eq!(r.copies, std::slice::from_ref(&copy));
        assert_eq!(std::fs::read(&path).unwrap(), whole);
        j.add("c", "third", None).unwrap();
        j.sync().unwrap();
        let (_, r) = Journal::open(&dir, 0).unwrap();
        assert_eq!(r.adds.len(), 3);
        // A nightly run seals the adds: the next write starts new files and names the sealed one.
        assert_eq!(crate::index::fold::seal(&dir, 0).unwrap().len(), 1);
        assert_eq!(j.lock().unwrap(), Some(1));
        j.add("d", "fourth", None).unwrap();
        j.sync().unwrap();
        assert_eq!(j.sealed_since().unwrap(), None);
        let (_, r) = Journal::open(&dir, 0).unwrap();
        let tagged: Vec<(u64, &str)> = r.adds.iter().map(|a| (a.0, a.1.id.as_str())).collect();
        assert_eq!(tagged, [(1, "a"), (1, "b"), (1, "c"), (UNSEALED, "d")]);
        assert_eq!((r.copies, r.removed), (vec![copy], vec!["a".to_string()]));
        // Once a batch folded number 1, only the adds since.
        let (_, r) = Journal::open(&dir, 1).unwrap();
        assert_eq!((r.adds.len(), r.copies.len()), (1, 0));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
