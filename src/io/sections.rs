//! Files cut into one section per part, so that a task reads its own part's section alone (two
//! ranged reads per file) instead of every file whole: candidate pairs ([`crate::io::pairs`]) and
//! document lists ([`crate::io::doc_lists`]).
//!
//! Format, little-endian:
//! ```text
//! header  magic: [u8; 8] | parts: u32 | reserved: u32                           (16 bytes)
//! index   per part p: first byte of its section: u64 | xxh3-64 of the section: u64
//!         then the body's length: u64                                   (16 x parts + 8 bytes)
//! body    the sections, in part order
//! ```
//! The checksum is verified on every read. Files are written whole under a temporary name (or as
//! one object) and renamed.

use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::io::u64_at;

fn index_len(parts: usize) -> u64 {
    16 + 16 * parts as u64 + 8
}

/// A file of `sections` (one per part, in order) headed by `magic`.
pub(crate) fn encode(magic: &[u8; 8], sections: &[Vec<u8>]) -> Vec<u8> {
    let body: usize = sections.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(index_len(sections.len()) as usize + body);
    out.extend_from_slice(magic);
    out.extend_from_slice(&(sections.len() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    let mut start = 0u64;
    for s in sections {
        out.extend_from_slice(&start.to_le_bytes());
        out.extend_from_slice(&xxh3_64(s).to_le_bytes());
        start += s.len() as u64;
    }
    out.extend_from_slice(&start.to_le_bytes());
    for s in sections {
        out.extend_from_slice(s);
    }
    out
}

/// Part `p`'s section (of `parts`) of the file `name`, which must be headed by `magic` (a
/// `what` file, as an error names it).
pub(crate) fn read(
    work: &OutputDir,
    name: &str,
    (magic, what): (&[u8; 8], &str),
    parts: usize,
    p: usize,
) -> Result<Vec<u8>> {
    let bad = |msg: String| Error::WorkFile {
        path: work.location(name),
        source: msg.into(),
    };
    let head = work
        .read_ranges(name, std::slice::from_ref(&(0..index_len(parts))))?
        .into_first();
    if head.len() as u64 != index_len(parts) || &head[..8] != magic {
        return Err(bad(format!("not {what} (bad header)")));
    }
    if u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize != parts {
        return Err(bad("written for a different number of parts".into()));
    }
    let (lo, check) = (u64_at(&head, 16 + 16 * p), u64_at(&head, 24 + 16 * p));
    let hi = u64_at(&head, 16 + 16 * (p + 1));
    if lo > hi {
        return Err(bad("damaged index".into()));
    }
    if lo == hi {
        return Ok(Vec::new());
    }
    let base = index_len(parts);
    let bytes = work
        .read_ranges(name, std::slice::from_ref(&(base + lo..base + hi)))?
        .into_first();
    if bytes.len() as u64 != hi - lo || xxh3_64(&bytes) != check {
        return Err(bad("checksum mismatch (damaged file)".into()));
    }
    Ok(bytes)
}
