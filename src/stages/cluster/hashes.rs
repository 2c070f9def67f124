//! The cluster task's passes by hash range: the id-uniqueness check and the exact-copy groups.
//! Each pass sorts the documents whose hash falls in one range of the hash space, so its memory
//! is a share of the run's ([`passes`]).

use rayon::prelude::*;

use super::groups::Groups;
use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::io::store;
use crate::io::work::{part_file, polars_err as pe, series};
use crate::partition;
use crate::plan::Plan;
use crate::stages::lookup;

/// Fails on the first id that occurs twice (unless allowed), naming both places. Ids are
/// compared by 64-bit hash (16 bytes per document while checking, a range of hashes at a time:
/// [`passes`]); equal hashes are confirmed on the ids themselves.
pub(super) fn check_unique_ids(work: &OutputDir, plan: &Plan) -> Result<()> {
    let n = plan.documents as usize;
    let passes = passes(n, 16);
    let ids = store::Wanted::IDS;
    // Report the id that repeats first in input order (as a sequential scan would).
    let mut first_repeat: Option<(u64, u64)> = None;
    for pass in 0..passes {
        let mut hashes: Vec<(u64, u64)> = Vec::with_capacity(n / passes as usize + 1);
        for p in 0..plan.parts.len() {
            let name = part_file("docs", p);
            let df = work.read_parquet_columns(&name, Some(&["id_hash"]))?;
            let s = series(&df, "id_hash", "cluster")?;
            let first = plan.parts[p].0;
            hashes.extend(
                s.u64()
                    .map_err(pe("cluster"))?
                    .into_no_null_iter()
                    .zip(first..)
                    .filter(|&(h, _)| in_pass(h, pass, passes)),
            );
        }
        hashes.par_sort_unstable();
        for w in hashes.windows(2) {
            let ((h0, x), (h1, y)) = (w[0], w[1]);
            if h0 != h1 || first_repeat.is_some_and(|(_, best)| best <= y) {
                continue;
            }
            let f = store::fetch(work, &plan.parts, plan.store_layout(), vec![x, y], ids)?;
            if f.id(x) == f.id(y) {
                first_repeat = Some((x, y));
            }
        }
    }
    if let Some((x, y)) = first_repeat {
        let f = store::fetch(work, &plan.parts, plan.store_layout(), vec![x, y], ids)?;
        let place = |d: u64| {
            let (file, row) = plan.locate(d);
            format!("{file} row {row}")
        };
        return Err(Error::DuplicateId {
            id: f.id(x).to_string(),
            first: place(x),
            second: place(y),
        });
    }
    Ok(())
}

/// Passes over a range of the hash space each that hold `entry` bytes per document of `n`: one
/// when that fits in [`PASS_BYTES`], else enough that a pass holds [`PASS_BYTES_PER_DOC`] per
/// document of the run (the files are read once per pass).
pub(super) fn passes(n: usize, entry: usize) -> u128 {
    match n * entry <= crate::hooks::cluster_bytes(PASS_BYTES) {
        true => 1,
        false => entry.div_ceil(PASS_BYTES_PER_DOC) as u128,
    }
}

/// What one pass of [`first_copies`] or [`check_unique_ids`] may hold at most, over the run...
const PASS_BYTES_PER_DOC: usize = 4;
/// ...unless the run fits in this at once.
const PASS_BYTES: usize = 64 << 20;

/// Whether a 64-bit hash prefix falls in pass `pass` of `passes`.
pub(super) fn in_pass(top: u64, pass: u128, passes: u128) -> bool {
    (u128::from(top) * passes) >> 64 == pass
}

/// Each document's first exact copy in the input (itself when it has none): a 128-bit hash of
/// its normalised text (and partition) from the signatures stage, within its `--across` value
/// ([`partition::copy_group`]). Copies share a hash, so each pass over a range of hashes finds
/// all of a text's copies.
pub(super) fn first_copies(work: &OutputDir, plan: &Plan, across: &[u64]) -> Result<Groups> {
    let n = plan.documents as usize;
    let mut copies: Vec<(u64, u64)> = Vec::new();
    let passes = passes(n, 32);
    for pass in 0..passes {
        let mut hashes: Vec<(u128, u64)> = Vec::with_capacity(n / passes as usize + 1);
        for p in 0..plan.parts.len() {
            let r = plan.part_range(p);
            let ex = lookup::read_exact(work, p, (r.end - r.start) as usize)?;
            hashes.extend(
                ex.into_iter()
                    .zip(r)
                    .filter(|&(h, _)| h != 0)
                    .map(|(h, d)| {
                        let a = across.get(d as usize).copied().unwrap_or(0);
                        (partition::copy_group(h, a), d)
                    })
                    .filter(|&(key, _)| in_pass((key >> 64) as u64, pass, passes)),
            );
        }
        hashes.par_sort_unstable();
        for run in hashes.chunk_by(|x, y| x.0 == y.0) {
            copies.extend(run[1..].iter().map(|&(_, d)| (d, run[0].1)));
        }
    }
    Ok(Groups::new(n, copies))
}
