//! `corpus-dedup index status` and `index verify`: what an index holds, and whether every file of
//! it reads back whole. Both take the index lock (as a run does), so no commit changes the index
//! while they read it.

use serde::Serialize;

use super::batch::{band_file, EXACT, IDS, KEYS};
use super::blocks::Blocked;
use super::{copies, labels, locked_head, origins, renew, Head, Lock};
use crate::config::Method;
use crate::error::{Error, Result};

/// One batch in `index status`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BatchStatus {
    pub batch: String,
    /// Its run's documents.
    pub documents: u64,
    /// The documents it holds (its run's kept ones under `keeper`).
    pub held: u64,
    /// The documents a next run compares with: all it holds, or for a lingering batch those
    /// the window renewed.
    pub live: u64,
    pub lingering: bool,
    pub bytes_on_disk: u64,
    pub bytes_in_memory: u64,
}

/// What `index status` prints.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Status {
    pub index: String,
    pub format: u32,
    pub generation: u64,
    /// The newest batch: the last night that ran.
    pub newest_batch: Option<String>,
    /// Lingering batches, then the window's, oldest first.
    pub batches: Vec<BatchStatus>,
    pub lingering: usize,
    pub live_documents: u64,
    /// Every batch on disk (a rerun's comparison list included).
    pub bytes_on_disk: u64,
    pub bytes_on_disk_per_live_document: f64,
    /// Filters and block tables a lookup of the next night holds.
    pub bytes_in_memory: u64,
    pub bytes_in_memory_per_live_document: f64,
    pub settings: std::collections::BTreeMap<String, serde_json::Value>,
}

/// What the index at `location` holds.
pub(crate) fn status(location: &str, lock: impl Fn() -> Result<Lock>) -> Result<Status> {
    let (index, head, _lock) = locked_head(location, lock)?;
    let compare = head.next_compare();
    let alive = renew::alive(&index, &compare)?;
    let batches: Vec<BatchStatus> = compare
        .iter()
        .zip(&alive)
        .map(|(b, a)| BatchStatus {
            batch: b.name.clone(),
            documents: b.documents,
            held: b.held(),
            live: a.as_ref().map_or(b.held(), |a| a.len() as u64),
            lingering: b.lingering,
            bytes_on_disk: b.bytes,
            bytes_in_memory: b.filter_bytes,
        })
        .collect();
    let live: u64 = batches.iter().map(|b| b.live).sum();
    let on_disk: u64 = head.on_disk().iter().map(|b| b.bytes).sum();
    let memory: u64 = batches.iter().map(|b| b.bytes_in_memory).sum();
    let per = |bytes: u64| (bytes as f64 / live.max(1) as f64 * 10.0).round() / 10.0;
    Ok(Status {
        index: location.to_string(),
        format: head.format,
        generation: head.generation,
        newest_batch: head.batches.last().map(|b| b.name.clone()),
        lingering: head.lingering.len(),
        live_documents: live,
        bytes_on_disk: on_disk,
        bytes_on_disk_per_live_document: per(on_disk),
        bytes_in_memory: memory,
        bytes_in_memory_per_live_document: per(memory),
        batches,
        settings: head.settings.clone(),
    })
}

/// A file `index verify` found damaged.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Damage {
    pub batch: String,
    pub file: String,
    pub error: String,
}

/// What `index verify` found.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Verified {
    pub index: String,
    pub batches: usize,
    pub files: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub damaged: Vec<Damage>,
}

/// Ok when a file lists the `want` documents its batch's files hold.
fn sized_to(name: &str, n: u64, want: u64) -> Result<u64> {
    match n == want {
        true => Ok(0),
        false => Err(Error::IndexFile {
            path: name.to_string(),
            source: format!("{n} documents for the {want} the batch's files hold").into(),
        }),
    }
}

/// Band files of a batch made with the head's settings (MinHash bands, SimHash block tables).
fn bands(head: &Head) -> usize {
    let n = |k: &str| {
        head.settings
            .get(k)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0)
    };
    let simhash = serde_json::to_value(Method::Simhash).ok();
    match head.settings.get("method") == simhash.as_ref() {
        true => {
            crate::simhash::BlockIndex::new(n("simhash_blocks") as usize, n("hamming") as usize)
                .tables()
        }
        false => n("bands") as usize,
    }
}

/// Reads every file of every batch the index keeps on disk, checking every block against its
/// checksum and the files of a batch against each other (records, ids, origins, copies and
/// `--across` values for every document it holds).
pub(crate) fn verify(location: &str, lock: impl Fn() -> Result<Lock>) -> Result<Verified> {
    let start = std::time::Instant::now();
    let (index, head, _lock) = locked_head(location, lock)?;
    let mut files = 0u64;
    let mut bytes = 0u64;
    let mut damaged = Vec::new();
    let on_disk = head.on_disk();
    let across = head.settings.get("across").is_some_and(|v| !v.is_null());
    for entry in &on_disk {
        let dir = index.child(entry.files());
        let held = entry.held();
        let mut check = |file: &str, r: Result<u64>| match r {
            Ok(b) => {
                files += 1;
                bytes += b;
            }
            Err(e) => damaged.push(Damage {
                batch: entry.name.clone(),
                file: dir.location(file),
                error: e.to_string(),
            }),
        };
        let count = |b: &Blocked, what: &str, want: u64| match b.records() == want {
            true => Ok(()),
            false => Err(Error::IndexFile {
                path: dir.location(b.name()),
                source: crate::error::FileError::Invalid(format!(
                    "{} {what} for the {want} documents the batch holds",
                    b.records()
                )),
            }),
        };
        let mut names: Vec<String> = (0..bands(&head)).map(band_file).collect();
        names.extend([EXACT, super::batch::DOCS, IDS, KEYS].map(String::from));
        for name in &names {
            let r = Blocked::load(&dir, name).and_then(|b| {
                match name.as_str() {
                    super::batch::DOCS => count(&b, "records", entry.in_files())?,
                    IDS => count(&b, "ids", entry.in_files())?,
                    _ => {}
                }
                b.verify(&dir)
            });
            check(name, r);
        }
        // `--paragraphs`: a batch written with it.
        match Blocked::load_optional(&dir, super::paragraphs::PARAGRAPHS) {
            Ok(Some(b)) => check(super::paragraphs::PARAGRAPHS, b.verify(&dir)),
            Ok(None) => {}
            Err(e) => check(super::paragraphs::PARAGRAPHS, Err(e)),
        }
        let sized = |name: &str, n: usize| match n as u64 == held {
            true => Ok(0),
            false => Err(Error::IndexFile {
                path: dir.location(name),
                source: crate::error::FileError::Invalid(format!(
                    "{n} documents for the {held} the batch holds"
                )),
            }),
        };
        let read = |name: &str| -> Result<Vec<u8>> {
            dir.read(name)?.ok_or_else(|| Error::IndexFile {
                path: dir.location(name),
                source: "missing".into(),
            })
        };
        let origins = read(origins::ORIGINS).and_then(|b| {
            let o = origins::Origins::decode(&b, &dir.location(origins::ORIGINS))?;
            sized(origins::ORIGINS, o.docs.len()).map(|_| b.len() as u64)
        });
        check(origins::ORIGINS, origins);
        let copies = read(copies::COPIES).and_then(|b| {
            let c = copies::Copies::decode(&b, &dir.location(copies::COPIES))?;
            sized(copies::COPIES, c.own.len()).map(|_| b.len() as u64)
        });
        check(copies::COPIES, copies);
        if !entry.renews.is_empty() {
            check(renew::RENEWED, renew::read(&index, entry).map(|_| 0));
        }
        if across {
            check(labels::ACROSS, labels::read(&index, entry).map(|_| 0));
        }
        // A compacted batch: its list of documents kept and each band's first fences.
        if entry.compacted.is_some() {
            let live = super::live::read_live(&dir).and_then(|l| {
                sized_to(
                    &dir.location(super::live::LIVE),
                    l.len() as u64,
                    entry.in_files(),
                )
            });
            check(super::live::LIVE, live);
            let f = super::live::read_fences(&dir, bands(&head)).map(|_| 0);
            check(super::live::FENCES, f);
        }
    }
    Ok(Verified {
        index: location.to_string(),
        batches: on_disk.len(),
        files,
        bytes,
        seconds: (start.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        damaged,
    })
}
