//! Copies across nights (`copies.bin`): for each live indexed document, itself plus every
//! document dropped against it in any night, the signal a training mix upsamples by.
//!
//! A batch records the copies of its own held documents after its night (their cluster sizes),
//! and for each earlier document its night was dropped against (its renewals, [`super::renew`])
//! that document's total after its night: the previous total plus its night's drops. Totals only
//! grow, so a document's count is the one in the newest batch that names it. That batch is on
//! disk while the document lives: a document lives while its own batch is in the window or a
//! batch in the window renewed it, and every batch newer than one in the window is in it too.
//!
//! Format: the held documents' copies in batch order as varints; then the number of earlier
//! batches named, and per batch its directory (u32 length, UTF-8), the number of documents and
//! per document the varint of its number's difference from the one before and the varint of its
//! total. Little-endian, no padding.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::index::BatchEntry;
use crate::io::output::OutputDir;
use crate::io::varint;

/// A batch's copies file.
pub(crate) const COPIES: &str = "copies.bin";

/// One batch's copies file read back.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Copies {
    /// Copies of each held document after the batch's night, by its number in the batch.
    pub own: Vec<u32>,
    /// Totals after the batch's night of the earlier documents it renewed: by the directory of
    /// their batch, (number, total) ascending by number.
    pub renewed: BTreeMap<String, Vec<(u32, u32)>>,
}

impl Copies {
    /// The file's bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.own.len() + 64);
        out.extend_from_slice(&(self.own.len() as u32).to_le_bytes());
        for &c in &self.own {
            varint::put(&mut out, c);
        }
        out.extend_from_slice(&(self.renewed.len() as u32).to_le_bytes());
        for (dir, docs) in &self.renewed {
            out.extend_from_slice(&(dir.len() as u32).to_le_bytes());
            out.extend_from_slice(dir.as_bytes());
            out.extend_from_slice(&(docs.len() as u32).to_le_bytes());
            let mut last = 0;
            for &(x, total) in docs {
                varint::put(&mut out, x - last);
                varint::put(&mut out, total);
                last = x;
            }
        }
        out
    }

    /// Reads [`Copies::encode`]'s bytes; `path` names the file in an error.
    pub(crate) fn decode(bytes: &[u8], path: &str) -> Result<Copies> {
        let bad = |what: &str| Error::IndexFile {
            path: path.to_string(),
            source: crate::error::FileError::Invalid(format!("not a copies file ({what})")),
        };
        let cut = || bad("truncated");
        let mut r = varint::Reader::new(bytes);
        let held = r.u32_le().ok_or_else(cut)?;
        let own: Vec<u32> = (0..held)
            .map(|_| r.varint().ok_or_else(cut))
            .collect::<Result<_>>()?;
        let mut renewed = BTreeMap::new();
        for _ in 0..r.u32_le().ok_or_else(cut)? {
            let len = r.u32_le().ok_or_else(cut)? as usize;
            let name = r.bytes(len).ok_or_else(cut)?;
            let dir = std::str::from_utf8(name).map_err(|_| bad("a directory not UTF-8"))?;
            let n = r.u32_le().ok_or_else(cut)?;
            let (mut docs, mut last) = (Vec::new(), 0u32);
            for _ in 0..n {
                let (dx, total) = r.varint().zip(r.varint()).ok_or_else(cut)?;
                last = last
                    .checked_add(dx)
                    .ok_or_else(|| bad("a number overflows"))?;
                docs.push((last, total));
            }
            renewed.insert(dir.to_string(), docs);
        }
        if !r.done() {
            return Err(bad("trailing bytes"));
        }
        Ok(Copies { own, renewed })
    }
}

/// The copies file of `entry`.
pub(crate) fn read(index: &OutputDir, entry: &BatchEntry) -> Result<Copies> {
    let dir = index.child(entry.files());
    let bytes = dir.read(COPIES)?.ok_or_else(|| Error::IndexFile {
        path: dir.location(COPIES),
        source: "missing".into(),
    })?;
    Copies::decode(&bytes, &dir.location(COPIES))
}

/// A document's copies so far and the batch of its latest copy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Count {
    pub copies: u32,
    /// Position in the batch list given to [`counts`] of the newest batch that names it.
    pub latest: usize,
}

/// Copies so far of the documents `wanted(batch position, number)` of `batches` (oldest first),
/// by (batch position, number): the newest count any batch records.
pub(crate) fn counts(
    index: &OutputDir,
    batches: &[BatchEntry],
    wanted: impl Fn(usize, u32) -> bool,
) -> Result<BTreeMap<(usize, u32), Count>> {
    let position: BTreeMap<&str, usize> = batches
        .iter()
        .enumerate()
        .map(|(i, b)| (b.dir.as_str(), i))
        .collect();
    let mut out = BTreeMap::new();
    for (i, b) in batches.iter().enumerate() {
        let c = read(index, b)?;
        for (x, &copies) in c.own.iter().enumerate() {
            if wanted(i, x as u32) {
                out.insert((i, x as u32), Count { copies, latest: i });
            }
        }
        for (dir, docs) in &c.renewed {
            let Some(&at) = position.get(dir.as_str()) else {
                continue;
            };
            for &(x, copies) in docs.iter().filter(|&&(x, _)| wanted(at, x)) {
                out.insert((at, x), Count { copies, latest: i });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_round_trip_and_damage_is_named() {
        let c = Copies {
            own: vec![1, 3, 200, 1],
            renewed: [
                ("batches/a-0".to_string(), vec![(0, 2), (7, 400), (9, 3)]),
                ("batches/b-0".to_string(), vec![]),
            ]
            .into_iter()
            .collect(),
        };
        let bytes = c.encode();
        assert_eq!(Copies::decode(&bytes, "x").unwrap(), c);
        let err = Copies::decode(&bytes[..bytes.len() - 1], "INDEX/copies.bin").unwrap_err();
        assert!(err.to_string().contains("INDEX/copies.bin"), "{err}");
        assert!(Copies::decode(&[bytes.clone(), vec![0]].concat(), "x").is_err());
        assert_eq!(
            Copies::decode(&Copies::default().encode(), "x").unwrap(),
            Copies::default()
        );
    }
}
