//! The retained index of earlier batches (`run --index INDEX --batch NAME --window N`): what a
//! nightly run compares tonight's documents with, and how tonight's batch is added and the oldest
//! batches expired.
//!
//! Layout of INDEX (a local directory or an s3:// prefix):
//! ```text
//! index.json                 the head: settings, batches in the window, retired batches, generation
//! LOCK                       who is using the index (pid, host, start time)
//! frequencies.bin            SimHash: the over-frequent feature filter of the first batch, reused
//! batches/NAME-HASH/         one batch ([`batch`]): band keys, exact-text hashes, records, ids
//! ```
//!
//! Invariants:
//! - The head is the only mutable file and is replaced in one step (a rename, or one PUT), so a
//!   reader sees the old index or the new one. Batch files are written before the head names
//!   them and deleted only after a head no longer names them.
//! - Across batches the earlier document wins: nothing in the index is ever dropped by a later run.
//! - Rerunning the newest batch compares with exactly what its first run compared with: the
//!   batches it expired stay on disk as `retired` until the next new batch is added, so the rerun
//!   gives the same manifest and leaves the same head.
//! - A batch name already in the index other than the newest, or one that sorts before the
//!   newest, is refused: batches are added in order (ISO dates sort correctly).
//! - The head records every setting that changes signatures or matches; another value fails at
//!   once, naming the setting and both values.
//! - One writer at a time: [`Lock`] (a `flock`ed file locally, released by the kernel when its
//!   process dies; a conditionally created object on S3).

pub mod batch;
pub mod blocks;
pub mod filter;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::{Config, Method};
use crate::error::{Error, Result};
use crate::io::object;
use crate::io::output::OutputDir;

/// Format of index.json and the batch files.
pub const FORMAT: u32 = 1;

/// The head file.
pub const HEAD: &str = "index.json";

/// The lock file (or object).
pub const LOCK: &str = "LOCK";

/// The SimHash feature filter every batch of an index shares.
pub const FREQUENCIES: &str = "frequencies.bin";

/// One batch of the index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchEntry {
    pub name: String,
    /// Its directory under the index (`batches/NAME-HASH`).
    pub dir: String,
    pub documents: u64,
    /// Bytes of its files on disk.
    pub bytes: u64,
    /// Bytes a lookup holds in memory for it (filters and block tables).
    pub filter_bytes: u64,
    /// Its documents its own run dropped (none in heads written before this was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<u64>,
}

/// index.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Head {
    pub format: u32,
    /// Raised by every commit.
    pub generation: u64,
    /// The settings every batch was made with ([`settings`]).
    pub settings: BTreeMap<String, serde_json::Value>,
    /// The batches in the window, oldest first.
    pub batches: Vec<BatchEntry>,
    /// Batches the newest batch expired, oldest first: no longer compared with by a new batch,
    /// kept on disk until the next new batch so that a rerun of the newest one is exact.
    pub retired: Vec<BatchEntry>,
    /// SimHash: the shared feature filter (index-relative name), once the first batch wrote it.
    pub frequencies: Option<String>,
}

/// What a run knows about the index from its plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexPlan {
    pub location: String,
    pub batch: String,
    /// Tonight's batch directory (`batches/NAME-HASH`, HASH from the input and settings).
    pub dir: String,
    pub window: usize,
    /// The batches tonight is compared with, oldest first.
    pub compare: Vec<BatchEntry>,
    /// The head generation the plan was made from (0: no head yet).
    pub generation: u64,
    /// SimHash: the index's feature filter, used instead of sampling tonight.
    pub frequencies: Option<String>,
    pub settings: BTreeMap<String, serde_json::Value>,
}

impl IndexPlan {
    /// The index directory.
    pub fn dir(&self) -> OutputDir {
        OutputDir::parse(&self.location)
    }

    /// Tonight's batch directory.
    pub fn batch_dir(&self) -> OutputDir {
        self.dir().child(&self.dir)
    }
}

/// The settings that change signatures or matches, by method (what the head records).
pub fn settings(cfg: &Config) -> BTreeMap<String, serde_json::Value> {
    let all = cfg.to_json();
    let mut keys = vec!["method", "ngram", "threshold"];
    match cfg.method {
        Method::Minhash => keys.extend([
            "num_perm",
            "bands",
            "rows",
            "seed",
            "sketch",
            "verify",
            "min_shingles",
            "index_keys",
        ]),
        Method::Simhash => keys.extend([
            "hamming",
            "simhash_blocks",
            "simhash_ngram",
            "simhash_tf_cap",
            "simhash_max_df",
            "simhash_df_sample",
            "simhash_top_k",
            "simhash_min_features",
        ]),
    }
    let mut out: BTreeMap<String, serde_json::Value> = keys
        .into_iter()
        .map(|k| (k.to_string(), all.get(k).cloned().unwrap_or_default()))
        .collect();
    let tokenizer = serde_json::to_value(cfg.effective_tokenizer()).unwrap_or_default();
    out.insert("tokenizer".into(), tokenizer);
    out
}

/// Reads the head (None when the index is new).
pub fn read_head(index: &OutputDir) -> Result<Option<Head>> {
    let Some(bytes) = index.read(HEAD)? else {
        return Ok(None);
    };
    let head: Head = serde_json::from_slice(&bytes).map_err(|e| Error::IndexFile {
        path: index.location(HEAD),
        msg: format!("not an index head: {e}"),
    })?;
    if head.format != FORMAT {
        return Err(Error::IndexFile {
            path: index.location(HEAD),
            msg: format!(
                "index format {} (this corpus-dedup reads format {FORMAT})",
                head.format
            ),
        });
    }
    Ok(Some(head))
}

/// A flag spelling of a setting key.
fn flag(key: &str) -> String {
    format!("--{}", key.replace('_', "-"))
}

/// Plans tonight's use of the index: checks the settings and the batch name, and lists the
/// batches to compare with. `fingerprint` identifies tonight's input and settings (it names the
/// batch directory, so a rerun with other input never mixes files with the first run's).
pub fn plan(cfg: &Config, fingerprint: u64) -> Result<Option<IndexPlan>> {
    let (Some(location), Some(batch)) = (&cfg.index, &cfg.batch) else {
        return Ok(None);
    };
    let index = OutputDir::parse(location);
    let ours = settings(cfg);
    let head = read_head(&index)?;
    let err = |msg: String| Error::Index {
        index: location.clone(),
        msg,
    };
    let (compare, generation, frequencies) = match &head {
        None => (Vec::new(), 0, None),
        Some(h) => {
            // The method first: with another method every other setting differs too.
            let mut keys: Vec<&String> = h.settings.keys().collect();
            keys.sort_by_key(|k| *k != "method");
            for k in keys {
                let theirs = &h.settings[k];
                let mine = ours.get(k).cloned().unwrap_or_default();
                if &mine != theirs {
                    return Err(err(format!(
                        "it was built with {} {theirs}, this run has {} {mine}. Every batch of an index must use the same settings: run with {} {theirs}, or start a new index (another --index) for the new settings",
                        flag(k),
                        flag(k),
                        flag(k)
                    )));
                }
            }
            let newest = h.batches.last().map(|b| b.name.as_str());
            let compare = if newest == Some(batch.as_str()) {
                // A rerun of the newest batch: what its first run compared with.
                let mut c = h.retired.clone();
                c.extend(h.batches[..h.batches.len() - 1].iter().cloned());
                c
            } else {
                if h.batches.iter().chain(&h.retired).any(|b| &b.name == batch) {
                    return Err(err(format!(
                        "batch '{batch}' is already in the index and is not its newest batch ('{}'); only the newest batch can be rerun",
                        newest.unwrap_or("")
                    )));
                }
                if let Some(n) = newest.filter(|n| batch.as_str() <= *n) {
                    return Err(err(format!(
                        "batch '{batch}' sorts before the index's newest batch '{n}': batches are added in order, so name them to sort by time (e.g. 2026-11-23), or use a new index"
                    )));
                }
                h.batches.clone()
            };
            (compare, h.generation, h.frequencies.clone())
        }
    };
    Ok(Some(IndexPlan {
        location: location.clone(),
        batch: batch.clone(),
        dir: format!("batches/{batch}-{fingerprint:016x}"),
        window: cfg.window,
        compare,
        generation,
        frequencies,
        settings: ours,
    }))
}

/// What a commit did, for the summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Committed {
    /// Batches in the window after the commit, oldest first.
    pub batches: Vec<String>,
    /// The same batches with their documents and drops, for the report's history.
    pub window: Vec<BatchEntry>,
    pub batches_added: Vec<String>,
    pub batches_expired: Vec<String>,
    /// Documents in the window's batches.
    pub documents: u64,
    /// Bytes of the index on disk (the window's batches and the retired ones still kept).
    pub bytes_on_disk: u64,
    /// Bytes of filters and block tables a lookup of the next batch holds in memory.
    pub filter_bytes: u64,
}

/// Adds tonight's batch `added` (its files already written) to the index: a new head in one
/// write, then the files of batches no head names any more are deleted. Idempotent: when the head
/// already ends with this batch (a rerun after a crash past this point) it changes nothing.
/// `frequencies`: SimHash's feature filter, stored in the index when it has none yet.
pub fn commit(
    ip: &IndexPlan,
    added: BatchEntry,
    frequencies: Option<Vec<u8>>,
) -> Result<Committed> {
    let index = ip.dir();
    let _lock = Lock::acquire(&ip.location)?;
    let head = read_head(&index)?;
    // The head this batch already committed (a rerun after a crash past the commit).
    let done = head.as_ref().filter(|h| {
        h.batches
            .last()
            .is_some_and(|b| b.name == added.name && b.dir == added.dir)
    });
    let generation = head.as_ref().map_or(0, |h| h.generation);
    if done.is_none() && generation != ip.generation {
        return Err(Error::Index {
            index: ip.location.clone(),
            msg: format!(
                "it changed while this run was working (generation {} when planned, {generation} now): another run added a batch. Rerun the same command to compare with the new index",
                ip.generation
            ),
        });
    }
    let new_head = if let Some(h) = done {
        h.clone()
    } else {
        let mut all = ip.compare.clone();
        all.push(added.clone());
        let keep = all.len().saturating_sub(ip.window.max(1));
        let batches = all.split_off(keep);
        let mut frequencies_name = head.as_ref().and_then(|h| h.frequencies.clone());
        if let (None, Some(bytes)) = (&frequencies_name, frequencies) {
            index.write_bytes(FREQUENCIES, bytes)?;
            frequencies_name = Some(FREQUENCIES.to_string());
        }
        let new_head = Head {
            format: FORMAT,
            generation: generation + 1,
            settings: ip.settings.clone(),
            batches,
            retired: all,
            frequencies: frequencies_name,
        };
        let text = serde_json::to_vec_pretty(&new_head).unwrap_or_default();
        crate::hooks::crash_at("index-commit");
        index.write_bytes(HEAD, text)?;
        new_head
    };
    // Files no head names any more: the batches retired by the previous head (and an earlier
    // run's directory for this name, when its input differed).
    if let Some(old) = &head {
        let named = |d: &str| {
            new_head
                .batches
                .iter()
                .chain(&new_head.retired)
                .any(|b| b.dir == d)
        };
        for b in old.batches.iter().chain(&old.retired) {
            if !named(&b.dir) {
                index.child(&b.dir).remove_all()?;
            }
        }
    }
    Ok(Committed {
        batches: new_head.batches.iter().map(|b| b.name.clone()).collect(),
        window: new_head.batches.clone(),
        batches_added: vec![added.name.clone()],
        batches_expired: new_head.retired.iter().map(|b| b.name.clone()).collect(),
        documents: new_head.batches.iter().map(|b| b.documents).sum(),
        bytes_on_disk: new_head
            .batches
            .iter()
            .chain(&new_head.retired)
            .map(|b| b.bytes)
            .sum(),
        filter_bytes: new_head.batches.iter().map(|b| b.filter_bytes).sum(),
    })
}

/// The lock on an index, held while a run uses it; released when dropped.
#[derive(Debug)]
pub struct Lock {
    location: String,
    held: Held,
}

#[derive(Debug)]
enum Held {
    /// This process already held it (a run's commit inside the run).
    Again,
    /// The locked file: the lock lasts while it is open.
    File(#[expect(dead_code, reason = "held open, never read")] std::fs::File),
    Object(String),
}

/// Locations whose lock this process holds.
static HELD: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn held() -> std::sync::MutexGuard<'static, Vec<String>> {
    HELD.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Lock {
    /// Takes the lock of the index at `location`, or fails naming its holder.
    pub fn acquire(location: &str) -> Result<Lock> {
        if held().iter().any(|l| l == location) {
            return Ok(Lock {
                location: location.to_string(),
                held: Held::Again,
            });
        }
        let me = holder();
        let in_use = |holder: String| Error::IndexInUse {
            index: location.to_string(),
            holder,
        };
        let dir = OutputDir::parse(location);
        let held_as = match dir.local_dir() {
            Some(path) => {
                dir.prepare()?;
                let p = path.join(LOCK);
                let io = |e: std::io::Error| Error::Output {
                    path: p.display().to_string(),
                    msg: e.to_string(),
                };
                let mut f = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(&p)
                    .map_err(io)?;
                match f.try_lock() {
                    Ok(()) => {}
                    Err(std::fs::TryLockError::WouldBlock) => {
                        let who = std::fs::read_to_string(&p).unwrap_or_default();
                        return Err(in_use(who.trim().to_string()));
                    }
                    Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
                }
                use std::io::Write;
                f.set_len(0).map_err(io)?;
                f.write_all(me.as_bytes()).map_err(io)?;
                Held::File(f)
            }
            None => {
                let url = format!("{}/{LOCK}", location.trim_end_matches('/'));
                if !object::put_new(&url, me.clone().into_bytes())? {
                    let who = object::get_opt(&url)?
                        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
                        .unwrap_or_default();
                    // A lock object naming a dead process of this host is replaced; if another
                    // run replaced it first, the conditional PUT fails and so does this run.
                    let taken_over = stale(&who) && {
                        object::delete(&url)?;
                        object::put_new(&url, me.into_bytes())?
                    };
                    if !taken_over {
                        return Err(in_use(who));
                    }
                }
                Held::Object(url)
            }
        };
        held().push(location.to_string());
        Ok(Lock {
            location: location.to_string(),
            held: held_as,
        })
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        if matches!(self.held, Held::Again) {
            return;
        }
        held().retain(|l| l != &self.location);
        if let Held::Object(url) = &self.held {
            // Best effort: a lock object left behind by a failed delete names a dead process
            // of this host, which the next run on this host takes over.
            let _ = object::delete(url);
        }
        // A file lock is released when the file is closed.
    }
}

/// "pid N on HOST since TIME" for this process.
fn holder() -> String {
    format!(
        "pid {} on {} since {}",
        std::process::id(),
        hostname(),
        utc_now()
    )
}

/// True when `holder` names a process of this host that no longer runs.
fn stale(holder: &str) -> bool {
    let mut w = holder.split_whitespace();
    let (Some("pid"), Some(pid), Some("on"), Some(host)) = (w.next(), w.next(), w.next(), w.next())
    else {
        return false;
    };
    let Ok(pid) = pid.parse::<i32>() else {
        return false;
    };
    host == hostname() && !alive(pid)
}

fn alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks whether the process exists; it touches no memory.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// This machine's host name.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at most that many bytes.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if r != 0 {
        return "unknown-host".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The current time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_is_exclusive_and_reentrant_in_process() {
        let dir = std::env::temp_dir().join(format!("cd-lock-{}", std::process::id()));
        let loc = dir.to_str().unwrap().to_string();
        let a = Lock::acquire(&loc).unwrap();
        // The same process may take it again (a run's commit); the outer guard still holds it.
        drop(Lock::acquire(&loc).unwrap());
        let text = std::fs::read_to_string(dir.join(LOCK)).unwrap();
        assert!(
            text.starts_with(&format!("pid {} on ", std::process::id())),
            "{text}"
        );
        // Another open file description cannot lock it while `a` holds it.
        let f = std::fs::File::open(dir.join(LOCK)).unwrap();
        assert!(f.try_lock().is_err());
        drop(a);
        assert!(f.try_lock().is_ok());
        drop(f);
        assert!(!stale(&holder()));
        assert!(stale(&format!("pid 2147483000 on {} since x", hostname())));
        assert!(!stale("pid 2147483000 on some-other-host since x"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn utc_now_is_well_formed() {
        let t = utc_now();
        assert_eq!(t.len(), 20);
        assert!(t.starts_with("20") && t.ends_with('Z'), "{t}");
    }
}
