//! Where a batch's documents came from (`origins.bin`), so that `explain` of a document dropped
//! against an earlier batch can read the kept text from that night's shard: the run's input
//! shards as its manifest records them (file, rows, bytes, footer fingerprint) and, per document
//! the batch holds, its global input index.
//!
//! Format: a little-endian u32 length, that many bytes of JSON (the shards), then the held
//! documents' global indices in batch order (ascending), each as the LEB128 varint of its
//! difference from the one before: about one byte per document.

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::index::batch::BatchReader;
use crate::index::{read_head, BatchEntry};
use crate::io::input::RecordedInput;
use crate::io::output::OutputDir;
use crate::io::{u32_at, varint};

/// A batch's origins file.
pub(crate) const ORIGINS: &str = "origins.bin";

/// The bytes of the origins of `docs` (global input indices, ascending) read from `inputs`.
pub(crate) fn encode(inputs: &[RecordedInput], docs: &[u32]) -> Vec<u8> {
    let json = serde_json::to_vec(inputs).unwrap_or_default();
    let mut out = Vec::with_capacity(4 + json.len() + docs.len() + 4);
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&json);
    let mut last = 0u32;
    for &d in docs {
        varint::put(&mut out, d - last);
        last = d;
    }
    out
}

/// A batch's origins read back.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Origins {
    pub inputs: Vec<RecordedInput>,
    /// Global input index of each held document, by its number in the batch.
    pub docs: Vec<u32>,
}

impl Origins {
    /// Reads [`encode`]'s bytes; `path` names the file in an error.
    pub(crate) fn decode(bytes: &[u8], path: &str) -> Result<Origins> {
        let bad = |what: &str| Error::IndexFile {
            path: path.to_string(),
            source: crate::error::FileError::Invalid(format!("not an origins file ({what})")),
        };
        let len = bytes.get(..4).map(|b| u32_at(b, 0) as usize);
        let json = len
            .and_then(|n| bytes.get(4..4 + n))
            .ok_or_else(|| bad("truncated"))?;
        let inputs: Vec<RecordedInput> =
            serde_json::from_slice(json).map_err(|_| bad("its shard list"))?;
        let (mut docs, mut last) = (Vec::new(), 0u32);
        let mut r = varint::Reader::new(&bytes[4 + json.len()..]);
        while let Some(v) = r.varint() {
            last = last
                .checked_add(v)
                .ok_or_else(|| bad("an index overflows"))?;
            docs.push(last);
        }
        if !r.done() {
            return Err(bad("truncated"));
        }
        Ok(Origins { inputs, docs })
    }

    /// The shard and row of the document numbered `number` in the batch.
    pub(crate) fn locate(&self, number: u32) -> Option<(&RecordedInput, u64)> {
        let mut d = u64::from(*self.docs.get(number as usize)?);
        for input in &self.inputs {
            if d < input.rows {
                return Some((input, d));
            }
            d -= input.rows;
        }
        None
    }
}

/// Where the indexed document `id` of batch `batch` came from: its shard and row. Fails with a
/// message naming what is missing (the batch expired, the document is not in it, the batch
/// records no origins).
pub(crate) fn find(index: &str, batch: &str, id: &str) -> Result<(RecordedInput, u64)> {
    let mut found = find_many(index, batch, &[id])?;
    found.remove(id).unwrap_or_else(|| {
        Err(Error::Index {
            index: index.to_string(),
            msg: format!("batch '{batch}' holds no document with id '{id}'"),
        })
    })
}

/// [`find`] for several documents of one batch, its ids read once: each id's shard and row, or
/// why not (an id the batch does not hold); fails as a whole when the batch cannot be read.
pub(crate) fn find_many(
    index: &str,
    batch: &str,
    ids: &[&str],
) -> Result<HashMap<String, Result<(RecordedInput, u64)>>> {
    let dir = OutputDir::parse(index);
    let err = |msg: String| Error::Index {
        index: index.to_string(),
        msg,
    };
    let head = read_head(&dir)?.ok_or_else(|| err("it has no head (index.json)".into()))?;
    let entry: &BatchEntry = head
        .batches
        .iter()
        .chain(&head.lingering)
        .chain(&head.compared)
        .find(|b| b.name == batch)
        .ok_or_else(|| {
            err(format!(
                "batch '{batch}' is no longer in the index (it expired)"
            ))
        })?;
    let bytes = dir.child(entry.files()).read(ORIGINS)?.ok_or_else(|| {
        err(format!(
            "batch '{batch}' does not record where its documents came from (written before 2026-11-25)"
        ))
    })?;
    let origins = Origins::decode(&bytes, &dir.child(entry.files()).location(ORIGINS))?;
    let reader = BatchReader::open(&dir, entry, 0)?;
    let numbers: Vec<u32> = (0..origins.docs.len() as u32).collect();
    let all = reader.ids(&numbers)?;
    let wanted: std::collections::HashSet<&str> = ids.iter().copied().collect();
    let mut found: HashMap<String, Result<(RecordedInput, u64)>> = HashMap::new();
    for n in numbers {
        let Some(id) = all.get(&n).filter(|id| wanted.contains(id.as_str())) else {
            continue;
        };
        let at = (origins.locate(n))
            .map(|(input, row)| (input.clone(), row))
            .ok_or_else(|| err(format!("batch '{batch}': document {n} has no origin")));
        found.entry(id.clone()).or_insert(at);
    }
    for id in ids {
        if !found.contains_key(*id) {
            let missing = err(format!("batch '{batch}' holds no document with id '{id}'"));
            found.insert(id.to_string(), Err(missing));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(file: &str, rows: u64) -> RecordedInput {
        RecordedInput {
            file: file.into(),
            rows,
            bytes: 10,
            fingerprint: "f".into(),
        }
    }

    #[test]
    fn origins_round_trip_and_locate_rows() {
        let inputs = vec![input("a.parquet", 3), input("b.parquet", 200)];
        let docs = vec![0, 2, 3, 130, 202];
        let bytes = encode(&inputs, &docs);
        let o = Origins::decode(&bytes, "x").unwrap();
        assert_eq!(o, Origins { inputs, docs });
        assert_eq!(
            o.locate(1).map(|(i, r)| (i.file.as_str(), r)),
            Some(("a.parquet", 2))
        );
        assert_eq!(
            o.locate(3).map(|(i, r)| (i.file.as_str(), r)),
            Some(("b.parquet", 127))
        );
        assert_eq!(o.locate(4).map(|(_, r)| r), Some(199));
        assert!(o.locate(5).is_none());
        // One byte per document here (every step below 128).
        assert_eq!(bytes.len(), encode(&o.inputs, &[]).len() + 5);
        let cut = encode(&[], &[300]);
        let err = Origins::decode(&cut[..cut.len() - 1], "INDEX/origins.bin").unwrap_err();
        assert!(err.to_string().contains("INDEX/origins.bin"), "{err}");
    }
}
