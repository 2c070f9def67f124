//! `--across` with `--index`: each held document's across key (`across.bin`), so tonight's
//! documents are matched only with indexed documents of another value.
//!
//! Format: the number of distinct keys (u32), the keys (u64 each), then per held document in batch
//! order the varint of its key's position in that list: about a byte per document for the few
//! sources a column names. Little-endian.

use crate::error::{Error, Result};
use crate::index::BatchEntry;
use crate::io::output::OutputDir;
use crate::io::varint;

/// A batch's across file.
pub(crate) const ACROSS: &str = "across.bin";

/// The bytes of the keys of the held documents, in batch order.
pub(crate) fn encode(keys: &[u64]) -> Vec<u8> {
    let mut distinct: Vec<u64> = keys.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    let mut out = Vec::with_capacity(4 + 8 * distinct.len() + keys.len());
    out.extend_from_slice(&(distinct.len() as u32).to_le_bytes());
    for k in &distinct {
        out.extend_from_slice(&k.to_le_bytes());
    }
    for k in keys {
        let at = distinct.binary_search(k).unwrap_or(0);
        varint::put(&mut out, at as u32);
    }
    out
}

/// Reads [`encode`]'s bytes; `path` names the file in an error.
pub(crate) fn decode(bytes: &[u8], path: &str) -> Result<Vec<u64>> {
    let bad = |what: &str| Error::IndexFile {
        path: path.to_string(),
        source: crate::error::FileError::Invalid(format!("not an across file ({what})")),
    };
    let mut r = varint::Reader::new(bytes);
    let n = r.u32_le().ok_or_else(|| bad("truncated"))? as usize;
    let table = r.bytes(8 * n).ok_or_else(|| bad("truncated"))?;
    let distinct: Vec<u64> = table
        .chunks_exact(8)
        .map(|c| crate::io::u64_at(c, 0))
        .collect();
    let mut keys = Vec::new();
    while let Some(at) = r.varint() {
        keys.push(
            *distinct
                .get(at as usize)
                .ok_or_else(|| bad("a key out of range"))?,
        );
    }
    if !r.done() {
        return Err(bad("truncated"));
    }
    Ok(keys)
}

/// The across keys of `entry`'s held documents, by number.
pub(crate) fn read(index: &OutputDir, entry: &BatchEntry) -> Result<Vec<u64>> {
    let dir = index.child(entry.files());
    let bytes = dir.read(ACROSS)?.ok_or_else(|| Error::IndexFile {
        path: dir.location(ACROSS),
        source: "missing (the index records --across)".into(),
    })?;
    let keys = decode(&bytes, &dir.location(ACROSS))?;
    if keys.len() as u64 != entry.held() {
        return Err(Error::IndexFile {
            path: dir.location(ACROSS),
            source: crate::error::FileError::Invalid(format!(
                "{} keys for {} documents",
                keys.len(),
                entry.held()
            )),
        });
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_in_about_a_byte_each() {
        let keys = vec![9, 3, 9, 9, u64::MAX, 3];
        let bytes = encode(&keys);
        assert_eq!(decode(&bytes, "x").unwrap(), keys);
        assert_eq!(bytes.len(), 4 + 3 * 8 + keys.len());
        let err = decode(&bytes[..10], "INDEX/across.bin").unwrap_err();
        assert!(err.to_string().contains("INDEX/across.bin"), "{err}");
        assert!(decode(&[bytes.clone(), vec![7]].concat(), "x").is_err());
    }
}
