//! `--paragraphs` with `--index`: the paragraph texts each batch's kept documents retain
//! (`paragraphs.bin`), so a later night removes a paragraph an indexed document already holds.
//!
//! The file is a blocked file ([`crate::index::blocks`]) of 12-byte records in hash order: the
//! 64-bit hash of the paragraph's normalised text ([`crate::text::paragraphs`]) and the batch's
//! number of the first document retaining it. A batch holds the texts its night retained (those
//! no earlier batch of the index held), so each text is in one live batch, and the set leaves
//! with its batch: it is compared with while the batch is in the window or lingers, copied as it
//! is when the batch is compacted (document numbers stay), and deleted with the batch. A batch
//! written without `--paragraphs` has no file and holds no paragraph.

use ahash::AHashMap;

use crate::error::{Error, Result};
use crate::index::batch::{self, BatchReader, Written};
use crate::index::blocks::Blocked;
use crate::io::output::OutputDir;
use crate::io::u32_at;

/// The paragraph file of a batch.
pub(crate) const PARAGRAPHS: &str = "paragraphs.bin";

const RECORD: usize = 12;

/// Encodes a paragraphs task's retained texts (hash, tonight's document), sorted by hash.
pub(crate) fn encode_retained(retained: &[(u64, u32)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(RECORD * retained.len());
    for &(h, d) in retained {
        out.extend_from_slice(&h.to_le_bytes());
        out.extend_from_slice(&d.to_le_bytes());
    }
    out
}

/// Decodes [`encode_retained`]'s bytes of the work file `name`.
pub(crate) fn decode_retained(work: &OutputDir, name: &str) -> Result<Vec<(u64, u32)>> {
    let bytes = work.read(name)?.ok_or_else(|| Error::WorkFile {
        path: work.location(name),
        source: "missing".into(),
    })?;
    if !bytes.len().is_multiple_of(RECORD) {
        return Err(Error::WorkFile {
            path: work.location(name),
            source: "length is not a whole number of records (truncated?)".into(),
        });
    }
    Ok(bytes.chunks_exact(RECORD).map(record).collect())
}

fn record(r: &[u8]) -> (u64, u32) {
    let h = u64::from_le_bytes(r[..8].try_into().unwrap_or([0; 8]));
    (h, u32_at(r, 8))
}

/// Writes tonight's `paragraphs.bin` from (hash, batch document) pairs in hash order.
pub(crate) fn write(dir: &OutputDir, held: &[(u64, u32)]) -> Result<Written> {
    batch::put(dir, PARAGRAPHS, None, |w| {
        for &(h, d) in held {
            let mut rec = [0u8; RECORD];
            rec[..8].copy_from_slice(&h.to_le_bytes());
            rec[8..].copy_from_slice(&d.to_le_bytes());
            batch::push(w, dir, PARAGRAPHS, h, &rec)?;
        }
        Ok(())
    })
}

/// The first hash of hash range `r` of `ranges` ([`crate::stages::signatures::bucket_range`]).
fn range_start(r: usize, ranges: usize) -> u64 {
    let top = ((r as u128) << 32).div_ceil(ranges as u128);
    u64::try_from(top << 32).unwrap_or(u64::MAX)
}

/// The indexed documents holding paragraph texts of one hash range: (hash, batch position in
/// the plan's compare list, document), the earliest batch's per hash, in hash order.
#[derive(Default)]
pub(crate) struct Held {
    held: Vec<(u64, u32, u32)>,
    entries: Vec<crate::index::BatchEntry>,
    location: String,
    bands: usize,
}

impl Held {
    /// Reads range `r` of `ranges` of every compared batch's paragraph file (none without
    /// `--index`); `bands` is tonight's band count, which names the batches' files.
    pub(crate) fn read(
        index: Option<&crate::index::IndexPlan>,
        ranges: usize,
        bands: usize,
        r: usize,
    ) -> Result<Held> {
        let Some(ip) = index else {
            return Ok(Held::default());
        };
        let lo = range_start(r, ranges);
        let hi = (r + 1 < ranges).then(|| range_start(r + 1, ranges));
        let index = ip.dir();
        let mut held = Vec::new();
        for (b, entry) in ip.compare.iter().enumerate() {
            let dir = index.child(entry.files());
            let Some(file) = Blocked::load_optional(&dir, PARAGRAPHS)? else {
                continue;
            };
            let last = hi.map_or(u64::MAX, |h| h.saturating_sub(1));
            let blocks = file.blocks_with(lo).start..file.blocks_with(last).end;
            for bytes in file.read(&dir, &blocks.collect::<Vec<_>>())? {
                let recs = bytes.chunks_exact(RECORD).map(record);
                held.extend(
                    recs.filter(|&(h, _)| h >= lo && hi.is_none_or(|hi| h < hi))
                        .map(|(h, d)| (h, b as u32, d)),
                );
            }
        }
        held.sort_unstable();
        held.dedup_by_key(|x| x.0);
        Ok(Held {
            held,
            entries: ip.compare.clone(),
            location: ip.location.clone(),
            bands,
        })
    }

    /// The (batch position, document) holding a text, if an indexed document does.
    pub(crate) fn find(&self, hash: u64) -> Option<(u32, u32)> {
        let i = self.held.binary_search_by_key(&hash, |x| x.0).ok()?;
        Some((self.held[i].1, self.held[i].2))
    }

    /// The name of the compared batch at position `b`.
    pub(crate) fn batch_name(&self, b: u32) -> Option<&str> {
        self.entries.get(b as usize).map(|e| e.name.as_str())
    }

    /// The ids of indexed documents (batch position, document). A compacted batch no longer
    /// holds the ids of documents nothing compares with: those are left out.
    pub(crate) fn ids(&self, docs: &[(u32, u32)]) -> Result<AHashMap<(u32, u32), String>> {
        let mut out = AHashMap::new();
        let index = OutputDir::parse(&self.location);
        for run in docs.chunk_by(|a, b| a.0 == b.0) {
            let b = run[0].0;
            let Some(entry) = self.entries.get(b as usize) else {
                continue;
            };
            let reader = BatchReader::open(&index, entry, self.bands)?;
            let wanted: Vec<u32> = run.iter().map(|x| x.1).collect();
            for (d, id) in reader.ids(&wanted)? {
                out.insert((b, d), id);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::signatures::bucket_range;

    #[test]
    fn range_starts_are_the_first_hashes_of_their_ranges() {
        for ranges in [1, 2, 3, 7, 250] {
            assert_eq!(range_start(0, ranges), 0);
            for r in 1..ranges {
                let s = range_start(r, ranges);
                assert_eq!(bucket_range(s, ranges), r, "{r} of {ranges}");
                assert_eq!(bucket_range(s - 1, ranges), r - 1, "{r} of {ranges}");
            }
        }
    }
}
