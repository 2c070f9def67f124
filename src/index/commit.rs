//! Adding tonight's batch to the index ([`commit`]): the next window, the new head in one write,
//! the lingering batches compacted, the files no head names deleted.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

use super::compact::{self, compact_lingering};
use super::head::{read_head, BatchEntry, Head, FORMAT, FREQUENCIES, HEAD};
use super::planning::IndexPlan;
use super::Lock;

/// What a commit did, for the summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Committed {
    /// The batches in the window after the commit, oldest first.
    pub window: Vec<BatchEntry>,
    /// The lingering batches after the commit, oldest first.
    pub lingering: Vec<BatchEntry>,
    pub batches_added: Vec<String>,
    pub batches_expired: Vec<String>,
    /// Bytes of the index on disk (the window's, the lingering and those kept for a rerun).
    pub bytes_on_disk: u64,
    /// Bytes of filters and block tables a lookup of the next batch holds in memory.
    pub filter_bytes: u64,
    /// Lingering batches rewritten to the documents still compared with ([`compact`]).
    pub compacted: Vec<compact::CompactedBatch>,
    /// Seconds spent deciding and compacting.
    pub compaction_seconds: f64,
}

/// Adds tonight's batch `added` (its files already written) to the index: a new head in one
/// write, then the files of batches no head names any more are deleted. Idempotent: when the head
/// already ends with this batch (a rerun after a crash past this point) it changes nothing.
/// `frequencies`: SimHash's feature filter, stored in the index when it has none yet.
pub(crate) fn commit(
    ip: &IndexPlan,
    added: BatchEntry,
    frequencies: Option<Vec<u8>>,
    bands: usize,
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
        let mut frequencies_name = head.as_ref().and_then(|h| h.frequencies.clone());
        if let (None, Some(bytes)) = (&frequencies_name, frequencies) {
            index.write_bytes(FREQUENCIES, bytes)?;
            frequencies_name = Some(FREQUENCIES.to_string());
        }
        let (batches, lingering) = next_window(&ip.compare, added.clone(), ip.window);
        let new_head = Head {
            format: FORMAT,
            generation: generation + 1,
            settings: ip.settings.clone(),
            batches,
            lingering,
            compared: ip.compare.clone(),
            frequencies: frequencies_name,
            rerun: true,
            folded: ip.fold.clone(),
            folded_through: super::fold::last_number(&ip.fold, ip.folded_through),
        };
        let text = serde_json::to_vec_pretty(&new_head).unwrap_or_default();
        crate::hooks::crash_at("index-commit");
        index.write_bytes(HEAD, text)?;
        new_head
    };
    let kept = new_head.on_disk();
    // Files no head names any more: the batches the previous head kept for its rerun (and an
    // earlier run's directory for this name, when its input differed).
    if let Some(old) = &head {
        for b in old.on_disk() {
            if kept.iter().all(|k| k.files() != b.files()) {
                index.child(b.files()).remove_all()?;
            }
        }
    }
    // The server's journal files folded in by an earlier batch.
    if let Some(dir) = index.local_dir() {
        super::fold::forget(dir, new_head.folded_through, &new_head.folded)?;
    }
    // Then the lingering batches that shrank (also on a rerun after a crash: it finishes them).
    let start = std::time::Instant::now();
    let (new_head, compacted) = compact_lingering(&index, &new_head, bands)?;
    let kept = new_head.on_disk();
    Ok(Committed {
        compacted,
        compaction_seconds: (start.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        window: new_head.batches.clone(),
        lingering: new_head.lingering.clone(),
        batches_added: vec![added.name.clone()],
        batches_expired: new_head
            .compared
            .iter()
            .filter(|b| !new_head.holds(&b.dir))
            .map(|b| b.name.clone())
            .collect(),
        bytes_on_disk: kept.iter().map(|b| b.bytes).sum(),
        filter_bytes: new_head
            .batches
            .iter()
            .chain(&new_head.lingering)
            .map(|b| b.filter_bytes)
            .sum(),
    })
}

/// The window and the lingering batches after `added` joins the batches of `compare`: the newest
/// `window` batches, and the older ones that a batch in the window renewed documents of.
fn next_window(
    compare: &[BatchEntry],
    added: BatchEntry,
    window: usize,
) -> (Vec<BatchEntry>, Vec<BatchEntry>) {
    let (mut older, mut batches): (Vec<BatchEntry>, Vec<BatchEntry>) =
        compare.iter().cloned().partition(|b| b.lingering);
    batches.push(added);
    let expired = batches.len().saturating_sub(window.max(1));
    older.extend(batches.drain(..expired));
    let renewed = |b: &BatchEntry| batches.iter().any(|w| w.renews.contains_key(&b.dir));
    let lingering = older
        .into_iter()
        .filter(|b| renewed(b))
        .map(|b| BatchEntry {
            lingering: true,
            ..b
        })
        .collect();
    (batches, lingering)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, renews: &[&str]) -> BatchEntry {
        BatchEntry {
            name: name.into(),
            dir: format!("batches/{name}"),
            documents: 1,
            held: Some(1),
            bytes: 1,
            filter_bytes: 1,
            dropped: Some(0),
            lingering: false,
            renews: renews.iter().map(|r| (format!("batches/{r}"), 1)).collect(),
            compacted: None,
        }
    }

    fn names(v: &[BatchEntry]) -> Vec<&str> {
        v.iter().map(|b| b.name.as_str()).collect()
    }

    #[test]
    fn a_batch_leaving_the_window_lingers_while_the_window_renews_it() {
        // Window 2: n1 leaves when n3 joins; n2 renewed it, so it lingers.
        let (w, l) = next_window(
            &[entry("n1", &[]), entry("n2", &["n1"])],
            entry("n3", &[]),
            2,
        );
        assert_eq!((names(&w), names(&l)), (vec!["n2", "n3"], vec!["n1"]));
        assert!(l[0].lingering && !w[0].lingering);
        // n4 renews n1 again: n1 lingers on; n2 leaves, renewed by nobody, and goes.
        let compare: Vec<BatchEntry> = l.into_iter().chain(w).collect();
        let (w, l) = next_window(&compare, entry("n4", &["n1"]), 2);
        assert_eq!((names(&w), names(&l)), (vec!["n3", "n4"], vec!["n1"]));
        // n4 still renews n1 in the window n4, n5; in n5, n6 nothing does: n1 is forgotten.
        let compare: Vec<BatchEntry> = l.into_iter().chain(w).collect();
        let (w, l) = next_window(&compare, entry("n5", &[]), 2);
        assert_eq!((names(&w), names(&l)), (vec!["n4", "n5"], vec!["n1"]));
        let compare: Vec<BatchEntry> = l.into_iter().chain(w).collect();
        let (w, l) = next_window(&compare, entry("n6", &[]), 2);
        assert_eq!((names(&w), names(&l)), (vec!["n5", "n6"], vec![]));
    }
}
