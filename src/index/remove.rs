//! `index remove`: taking the newest batches out of the index, under its lock.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::io::output::OutputDir;

use super::head::{read_head, BatchEntry, Head, HEAD};
use super::Lock;

/// The head of the index at `location`, read under its lock (taken through `lock`, which can
/// wait), for the `index` commands; fails when there is no index there.
pub(crate) fn locked_head(
    location: &str,
    lock: impl Fn() -> Result<Lock>,
) -> Result<(OutputDir, Head, Lock)> {
    let index = OutputDir::parse(location);
    let held = lock()?;
    let head = read_head(&index)?.ok_or_else(|| Error::Index {
        index: location.to_string(),
        msg: "there is no index here (no index.json): check the --index location".into(),
    })?;
    Ok((index, head, held))
}

/// What `index remove` did.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Removed {
    pub index: String,
    pub batch: String,
    /// The documents its files held (after compaction, those kept): no later night is compared
    /// with them any more.
    pub documents_forgotten: u64,
    /// Lingering batches that lived only on the removed batch's renewals, expired with it.
    pub batches_expired: Vec<String>,
    pub bytes_freed: u64,
}

/// Removes batch `name` from the index at `location` (under its lock, taken through `lock`): a
/// new head without it in one write (lingering batches only it renewed expire too), then its
/// files. A crash after the head is written leaves files no head names, which cost only space.
pub(crate) fn remove(
    location: &str,
    name: &str,
    lock: impl Fn() -> Result<Lock>,
) -> Result<Removed> {
    let (index, head, _lock) = locked_head(location, lock)?;
    let err = |msg: String| Error::Index {
        index: location.to_string(),
        msg,
    };
    let live: Vec<&BatchEntry> = head.batches.iter().chain(&head.lingering).collect();
    let Some(gone) = live.iter().find(|b| b.name == name).copied().cloned() else {
        let names: Vec<&str> = live.iter().map(|b| b.name.as_str()).collect();
        return Err(err(format!(
            "it holds no batch '{name}' (its batches: {}); a batch that expired is gone already",
            names.join(", ")
        )));
    };
    let newest = head.batches.last().is_some_and(|b| b.dir == gone.dir);
    let batches: Vec<BatchEntry> = head
        .batches
        .iter()
        .filter(|b| b.dir != gone.dir)
        .cloned()
        .collect();
    let renewed = |b: &BatchEntry| batches.iter().any(|w| w.renews.contains_key(&b.dir));
    let (lingering, expired): (Vec<BatchEntry>, Vec<BatchEntry>) = head
        .lingering
        .iter()
        .filter(|b| b.dir != gone.dir)
        .cloned()
        .partition(|b| renewed(b));
    let new_head = Head {
        generation: head.generation + 1,
        batches,
        lingering,
        compared: head
            .compared
            .iter()
            .filter(|b| b.dir != gone.dir)
            .cloned()
            .collect(),
        rerun: head.rerun && !newest,
        // The server's adds the removed batch folded in are the journal's again: the next batch
        // folds them (their numbers follow one another above the previous batch's).
        folded: if newest {
            Vec::new()
        } else {
            head.folded.clone()
        },
        folded_through: match newest && !head.folded.is_empty() {
            true => super::fold::first_number(&head.folded).saturating_sub(1),
            false => head.folded_through,
        },
        ..head.clone()
    };
    let text = serde_json::to_vec_pretty(&new_head).unwrap_or_default();
    index.write_bytes(HEAD, text)?;
    let kept = new_head.on_disk();
    let mut freed = 0;
    for b in head.on_disk() {
        if kept.iter().all(|k| k.files() != b.files()) {
            index.child(b.files()).remove_all()?;
            freed += b.bytes;
        }
    }
    Ok(Removed {
        index: location.to_string(),
        batch: name.to_string(),
        documents_forgotten: gone.in_files(),
        batches_expired: expired.iter().map(|b| b.name.clone()).collect(),
        bytes_freed: freed,
    })
}
