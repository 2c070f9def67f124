//! Renewal (`--cluster keeper` with `--index`): a document of tonight dropped against an indexed
//! kept document renews that document, so content that keeps coming back stays in the index
//! while `--window N` still forgets content not seen for N batches.
//!
//! Each batch lists the documents of earlier batches it renewed (`renewed.bin`, by batch
//! directory; [`BatchEntry::renews`] counts them). A batch that leaves the window lingers
//! ([`BatchEntry::lingering`]) while a batch in the window renewed any of its documents, and a
//! lookup compares with those documents only: a lingering batch's live documents are the union of
//! the window's renewals of it. Nothing is rewritten: a document's last-seen night is the newest
//! batch that renewed it, and it is forgotten when that batch leaves the window. The cost is a
//! lingering batch's files, kept whole while any of its documents lives.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::index::BatchEntry;
use crate::io::output::OutputDir;
use crate::io::u32_at;

/// A batch's renewals file.
pub(crate) const RENEWED: &str = "renewed.bin";

/// A batch's best index matches: the documents of earlier batches that were some document's
/// best match on its night (a superset of its renewals; same format). A rerun of the batch
/// finds exactly these in a batch that left the window since, so compaction keeps them.
pub(crate) const MATCHED: &str = "matched.bin";

/// Documents renewed, by the directory of the batch that holds them (each list sorted, unique).
pub(crate) type Renewals = BTreeMap<String, Vec<u32>>;

/// The bytes of `renewals`: a count of batches, then per batch its directory (length, UTF-8)
/// and its documents (count, u32 each), all little-endian.
pub(crate) fn encode(renewals: &Renewals) -> Vec<u8> {
    let mut out = Vec::new();
    let put = |out: &mut Vec<u8>, x: usize| out.extend_from_slice(&(x as u32).to_le_bytes());
    put(&mut out, renewals.len());
    for (dir, docs) in renewals {
        put(&mut out, dir.len());
        out.extend_from_slice(dir.as_bytes());
        put(&mut out, docs.len());
        for &d in docs {
            out.extend_from_slice(&d.to_le_bytes());
        }
    }
    out
}

/// Reads [`encode`]'s bytes; `path` names the file in an error.
pub(crate) fn decode(bytes: &[u8], path: &str) -> Result<Renewals> {
    let bad = |what: &str| Error::IndexFile {
        path: path.to_string(),
        source: crate::error::FileError::Invalid(format!(
            "not a renewals file ({what}); rerun the batch that wrote it"
        )),
    };
    let mut at = 0usize;
    let mut next = |n: usize| -> Result<&[u8]> {
        let s = bytes.get(at..at + n).ok_or_else(|| bad("truncated"))?;
        at += n;
        Ok(s)
    };
    let mut out = Renewals::new();
    let batches = u32_at(next(4)?, 0) as usize;
    for _ in 0..batches {
        let len = u32_at(next(4)?, 0) as usize;
        let dir = std::str::from_utf8(next(len)?).map_err(|_| bad("a directory not UTF-8"))?;
        let dir = dir.to_string();
        let n = u32_at(next(4)?, 0) as usize;
        let docs: Vec<u32> = next(4 * n)?.chunks_exact(4).map(|c| u32_at(c, 0)).collect();
        if !docs.windows(2).all(|w| w[0] < w[1]) {
            return Err(bad("documents out of order"));
        }
        out.insert(dir, docs);
    }
    if at != bytes.len() {
        return Err(bad("trailing bytes"));
    }
    Ok(out)
}

/// The renewals of the batch `entry` (none read when it renewed nothing).
pub(crate) fn read(index: &OutputDir, entry: &BatchEntry) -> Result<Renewals> {
    if entry.renews.is_empty() {
        return Ok(Renewals::new());
    }
    let dir = index.child(entry.files());
    let bytes = dir.read(RENEWED)?.ok_or_else(|| Error::IndexFile {
        path: dir.location(RENEWED),
        source: "missing (the index head says this batch renewed documents)".into(),
    })?;
    decode(&bytes, &dir.location(RENEWED))
}

/// For each batch of `compare` (a compare list: lingering batches, then the window), the
/// documents a lookup compares with: None for a batch in the window (all it holds), the live
/// documents for a lingering one.
pub(crate) fn alive(index: &OutputDir, compare: &[BatchEntry]) -> Result<Vec<Option<Vec<u32>>>> {
    let mut live: BTreeMap<&str, Vec<u32>> = compare
        .iter()
        .filter(|b| b.lingering)
        .map(|b| (b.dir.as_str(), Vec::new()))
        .collect();
    let window: Vec<&BatchEntry> = compare
        .iter()
        .filter(|b| !b.lingering && b.renews.keys().any(|d| live.contains_key(d.as_str())))
        .collect();
    for b in window {
        for (dir, docs) in read(index, b)? {
            if let Some(l) = live.get_mut(dir.as_str()) {
                l.extend(docs);
            }
        }
    }
    Ok(compare
        .iter()
        .map(|b| {
            let mut l = live.remove(b.dir.as_str())?;
            l.sort_unstable();
            l.dedup();
            Some(l)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, lingering: bool, renews: &[(&str, u64)]) -> BatchEntry {
        BatchEntry {
            name: name.into(),
            dir: format!("batches/{name}-0"),
            documents: 10,
            held: Some(10),
            bytes: 0,
            filter_bytes: 0,
            dropped: Some(0),
            lingering,
            renews: renews.iter().map(|&(d, n)| (d.to_string(), n)).collect(),
            compacted: None,
        }
    }

    #[test]
    fn renewals_round_trip_and_damage_is_named() {
        let r: Renewals = [
            ("batches/a-0".to_string(), vec![1, 5, 9]),
            ("batches/b-0".to_string(), vec![]),
        ]
        .into_iter()
        .collect();
        let bytes = encode(&r);
        assert_eq!(decode(&bytes, "x").unwrap(), r);
        let err = decode(&bytes[..bytes.len() - 1], "INDEX/renewed.bin").unwrap_err();
        assert!(err.to_string().contains("INDEX/renewed.bin"), "{err}");
        assert!(decode(&[bytes.clone(), vec![0]].concat(), "x").is_err());
    }

    #[test]
    fn a_lingering_batch_lives_on_the_windows_renewals_of_it() {
        let tmp = std::env::temp_dir().join(format!("cd-renew-{}", std::process::id()));
        let index = OutputDir::parse(tmp.to_str().unwrap());
        let (a, b) = ("batches/a-0", "batches/b-0");
        let compare = vec![
            entry("a", true, &[]),
            entry("b", false, &[(a, 2)]),
            entry("c", false, &[(a, 2), (b, 1)]),
        ];
        let write = |e: &BatchEntry, r: &[(&str, Vec<u32>)]| {
            let r: Renewals = r.iter().map(|(d, v)| (d.to_string(), v.clone())).collect();
            let dir = index.child(&e.dir);
            dir.prepare().unwrap();
            dir.write_bytes(RENEWED, encode(&r)).unwrap();
        };
        write(&compare[1], &[(a, vec![3, 7])]);
        write(&compare[2], &[(a, vec![1, 3]), (b, vec![4])]);
        let live = alive(&index, &compare).unwrap();
        assert_eq!(live, vec![Some(vec![1, 3, 7]), None, None]);
        // A batch that says it renewed documents but has no file is named.
        let err = alive(
            &index,
            &[entry("a", true, &[]), entry("d", false, &[(a, 1)])],
        );
        assert!(err.unwrap_err().to_string().contains("d-0"));
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
