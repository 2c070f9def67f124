//! What later stages make again from the shards instead of reading it from work files: the
//! shingle keys of the documents an exact check needs ([`crate::stages::keys`]) and, with
//! `--work-keys remade`, the signatures of the documents candidate pairs name
//! ([`crate::stages::pair_signatures`]). Both are functions of the text and the settings, so
//! they come out as the signatures stage made them.

use polars::prelude::{NewChunkedArray, PlSmallStr, StringChunked};

use crate::corpus::Corpus;
use crate::error::{Error, Result};
use crate::plan::{Plan, DOCS_PER_CHUNK};
use crate::stages::signatures::check_inputs;

/// `make`'s results for the texts of `docs` (ascending, all of part `p`), concatenated in the
/// order of `docs`: each chunk of the part's shards that holds one of them is read whole (as the
/// signatures task read it), the next one while `make` runs on this one's texts; the other
/// chunks are skipped.
pub(crate) fn of_docs<T: Send>(
    plan: &Plan,
    p: usize,
    docs: &[u64],
    make: impl Fn(&StringChunked) -> Vec<T> + Sync,
) -> Result<Vec<T>> {
    let mut out = Vec::with_capacity(docs.len());
    if docs.is_empty() {
        return Ok(out);
    }
    check_inputs(plan, p)?;
    let cfg = &plan.config;
    // The chunks that hold wanted documents: (slices, global number of the first row, rows,
    // the wanted documents' range in `docs`).
    let mut wanted = Vec::new();
    let (mut at, mut i) = (plan.part_range(p).start, 0);
    for chunk in plan.chunks(p, DOCS_PER_CHUNK) {
        let n: u64 = (chunk.iter().filter_map(|s| s.rows.as_ref()))
            .map(|r| r.end - r.start)
            .sum();
        let end = docs[i..].partition_point(|&d| d < at + n) + i;
        if end > i {
            wanted.push((chunk, at, n, i..end));
        }
        (at, i) = (at + n, end);
    }
    if i != docs.len() {
        return Err(Error::Internal(format!(
            "part {p}: document {} is past the part's rows",
            docs[i]
        )));
    }
    let load = |c: usize| -> Option<Result<Corpus>> {
        let (chunk, _, n, _) = wanted.get(c)?;
        Some(Corpus::load_slices(chunk, cfg, |_| {}).and_then(|corpus| {
            match corpus.len() as u64 == *n {
                true => Ok(corpus),
                false => Err(Error::RowsChanged {
                    part: p,
                    planned: *n,
                    read: corpus.len() as u64,
                }),
            }
        }))
    };
    let mut next = load(0);
    for (c, (_, first, _, range)) in wanted.iter().enumerate() {
        let corpus = next.take().transpose()?;
        let Some(corpus) = corpus else { break };
        let made = || {
            let texts = StringChunked::from_iter_options(
                PlSmallStr::EMPTY,
                docs[range.clone()]
                    .iter()
                    .map(|&d| corpus.text((d - first) as u32)),
            );
            make(&texts)
        };
        let (results, following) = rayon::join(made, || load(c + 1));
        next = following;
        out.extend(results);
    }
    Ok(out)
}
