//! What a compacted batch's files hold beyond a batch's own ([`super::compact`] writes them,
//! [`super::batch::BatchReader`] reads them): the documents kept (`live.bin`), each band's
//! fences as first written (`fences.bin`), and how its band records and filter are keyed.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::io::u32_at;

/// Where a compacted batch's files are and how many documents they hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Compacted {
    pub files: String,
    pub documents: u64,
}

/// The numbers of the documents a compacted batch's files hold.
pub(crate) const LIVE: &str = "live.bin";

/// Bytes of a compacted band record: a band record's key fragment and document (6 bytes), the
/// block it was first written in (then SimHash's fingerprint).
pub(crate) const BAND_RECORD: usize = 6 + 4;

/// Each band's fences as first written.
pub(crate) const FENCES: &str = "fences.bin";

/// The filter key of a compacted band record: its old block and key fragment.
pub(crate) fn block_key(block: u32, fragment: u16) -> u64 {
    crate::lsh::mix64((u64::from(block) << 16) | u64::from(fragment))
}

/// Lists of u32s, each behind its count, little-endian, behind the number of lists.
pub(crate) fn encode(lists: &[Vec<u32>]) -> Vec<u8> {
    let mut out = (lists.len() as u32).to_le_bytes().to_vec();
    for l in lists {
        out.extend_from_slice(&(l.len() as u32).to_le_bytes());
        for v in l {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

/// [`encode`]'s lists back from file `name` of `dir`, each ascending (strictly when `strict`);
/// the file's error otherwise.
fn decode(dir: &OutputDir, name: &str, strict: bool) -> Result<Vec<Vec<u32>>> {
    let bad = |what: &str| Error::IndexFile {
        path: dir.location(name),
        source: what.into(),
    };
    let bytes = dir.read(name)?.ok_or_else(|| bad("missing"))?;
    let mut at = 0;
    let mut next = |n: usize| -> Result<&[u8]> {
        let s = bytes.get(at..at + n).ok_or_else(|| bad("cut short"))?;
        at += n;
        Ok(s)
    };
    let lists = u32_at(next(4)?, 0) as usize;
    let mut out = Vec::with_capacity(lists.min(1 << 16));
    for _ in 0..lists {
        let n = u32_at(next(4)?, 0) as usize;
        let l: Vec<u32> = next(4 * n)?.chunks_exact(4).map(|c| u32_at(c, 0)).collect();
        if !l
            .windows(2)
            .all(|w| w[0] < w[1] || (!strict && w[0] == w[1]))
        {
            return Err(bad("numbers out of order"));
        }
        out.push(l);
    }
    if at != bytes.len() {
        return Err(bad("trailing bytes"));
    }
    Ok(out)
}

/// The documents a compacted batch's files hold.
pub(crate) fn read_live(dir: &OutputDir) -> Result<Vec<u32>> {
    Ok(decode(dir, LIVE, true)?.pop().unwrap_or_default())
}

/// The fences as first written (the high 32 bits of each old block's first key) of the first
/// `bands` band files (a reader of ids alone asks for none).
pub(crate) fn read_fences(dir: &OutputDir, bands: usize) -> Result<Vec<Vec<u64>>> {
    let mut lists = decode(dir, FENCES, false)?;
    if lists.len() < bands {
        return Err(Error::IndexFile {
            path: dir.location(FENCES),
            source: format!("{} bands, the index has {bands}", lists.len()).into(),
        });
    }
    lists.truncate(bands);
    Ok(lists
        .into_iter()
        .map(|l| l.into_iter().map(u64::from).collect())
        .collect())
}
