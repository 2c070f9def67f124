//! Paragraph row files (`--paragraphs`): the paragraphs one signatures task found in one hash
//! range, read whole by that range's paragraphs task and by the part's manifest task.
//!
//! Format of `paragraphs/rRRR-pPPPPP.bin`, little-endian:
//! ```text
//! header  "CDPARAS1" | rows: u64 | xxh3-64 of the body: u64             (24 bytes)
//! body    hash: [u64; rows] | doc: [u32; rows] | start: [u32; rows] | len: [u32; rows]
//! ```
//! `doc` is the global document number, `start` and `len` the paragraph's span in the text
//! (Parquet stores a text's bytes with a 32-bit length, so 32-bit offsets hold any of them).
//! Rows are in document order, and a document's in text order. The checksum is verified on every
//! read; files are written whole under a temporary name (or as one object) and renamed.

use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::io::u32s_le;

const MAGIC: &[u8; 8] = b"CDPARAS1";
const HEADER: usize = 24;

/// One paragraph of a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Row {
    pub hash: u64,
    pub doc: u32,
    pub start: u32,
    pub len: u32,
}

/// The rows of one file, column by column.
#[derive(Debug, Default)]
pub(crate) struct Rows {
    pub hash: Vec<u64>,
    pub doc: Vec<u32>,
    pub start: Vec<u32>,
    pub len: Vec<u32>,
}

impl Rows {
    pub(crate) fn push(&mut self, r: Row) {
        self.hash.push(r.hash);
        self.doc.push(r.doc);
        self.start.push(r.start);
        self.len.push(r.len);
    }

    pub(crate) fn len(&self) -> usize {
        self.doc.len()
    }

    #[cfg(test)]
    pub(crate) fn get(&self, i: usize) -> Row {
        Row {
            hash: self.hash[i],
            doc: self.doc[i],
            start: self.start[i],
            len: self.len[i],
        }
    }

    /// Writes the file `name`, streamed (no copy of the rows is built: a part's rows are 20
    /// bytes per paragraph already).
    pub(crate) fn write(&self, work: &OutputDir, name: &str) -> Result<()> {
        let io = |e: std::io::Error| Error::Output {
            path: work.location(name),
            source: e.into(),
        };
        let mut check = xxhash_rust::xxh3::Xxh3::new();
        self.each_piece(|b| {
            check.update(b);
            Ok(())
        })
        .map_err(io)?;
        work.write_with(name, |sink| {
            sink.write_all(MAGIC).map_err(io)?;
            sink.write_all(&(self.len() as u64).to_le_bytes())
                .map_err(io)?;
            sink.write_all(&check.digest().to_le_bytes()).map_err(io)?;
            self.each_piece(|b| sink.write_all(b)).map_err(io)
        })
    }

    /// The body, little-endian, in pieces of at most 64 KiB.
    fn each_piece(&self, mut f: impl FnMut(&[u8]) -> std::io::Result<()>) -> std::io::Result<()> {
        let mut buf = Vec::with_capacity(1 << 16);
        for c in self.hash.chunks(1 << 13) {
            buf.clear();
            buf.extend(c.iter().flat_map(|h| h.to_le_bytes()));
            f(&buf)?;
        }
        for col in [&self.doc, &self.start, &self.len] {
            for c in col.chunks(1 << 14) {
                buf.clear();
                buf.extend(c.iter().flat_map(|x| x.to_le_bytes()));
                f(&buf)?;
            }
        }
        Ok(())
    }

    /// The file's bytes, as [`Rows::write`] writes them.
    #[cfg(test)]
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut body = Vec::new();
        let _ = self.each_piece(|b| {
            body.extend_from_slice(b);
            Ok(())
        });
        let mut out = Vec::with_capacity(HEADER + body.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(self.len() as u64).to_le_bytes());
        out.extend_from_slice(&xxh3_64(&body).to_le_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// Reads the file `name`.
    pub(crate) fn read(work: &OutputDir, name: &str) -> Result<Rows> {
        let bad = |msg: &str| Error::WorkFile {
            path: work.location(name),
            source: msg.into(),
        };
        let bytes = work.read(name)?.ok_or_else(|| bad("missing"))?;
        if bytes.len() < HEADER || &bytes[..8] != MAGIC {
            return Err(bad("not a paragraph row file (bad header)"));
        }
        let word = |b: &[u8]| u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
        let rows = word(&bytes[8..]);
        if rows.checked_mul(20) != Some((bytes.len() - HEADER) as u64) {
            return Err(bad("length does not match the row count (truncated?)"));
        }
        if xxh3_64(&bytes[HEADER..]) != word(&bytes[16..]) {
            return Err(bad("checksum mismatch (damaged file)"));
        }
        let n = rows as usize;
        let body = &bytes[HEADER..];
        let (hash, rest) = body.split_at(8 * n);
        let (doc, rest) = rest.split_at(4 * n);
        let (start, len) = rest.split_at(4 * n);
        Ok(Rows {
            hash: hash.chunks_exact(8).map(word).collect(),
            doc: u32s_le(doc),
            start: u32s_le(start),
            len: u32s_le(len),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_back_and_damage_is_caught() {
        let dir = std::env::temp_dir().join(format!("cd-paras-{}", std::process::id()));
        let work = OutputDir::Local(dir.clone());
        let name = crate::io::work::paragraph_rows_file(2, 1);
        let mut rows = Rows::default();
        for r in [(u64::MAX, 4, 0, 7), (7, 0, u32::MAX - 1, 1)] {
            rows.push(Row {
                hash: r.0,
                doc: r.1,
                start: r.2,
                len: r.3,
            });
        }
        rows.write(&work, &name).unwrap();
        assert_eq!(work.read(&name).unwrap().unwrap(), rows.encode());
        let back = Rows::read(&work, &name).unwrap();
        assert_eq!(
            (0..2).map(|i| back.get(i)).collect::<Vec<_>>(),
            (0..2).map(|i| rows.get(i)).collect::<Vec<_>>()
        );
        let mut bytes = rows.encode();
        bytes[30] ^= 1;
        work.write_bytes(&name, bytes).unwrap();
        let err = Rows::read(&work, &name).unwrap_err().to_string();
        assert!(err.contains("checksum"), "{err}");
        work.write_bytes(&name, rows.encode()[..40].to_vec())
            .unwrap();
        let err = Rows::read(&work, &name).unwrap_err().to_string();
        assert!(err.contains("truncated"), "{err}");
        std::fs::remove_dir_all(dir).ok();
    }
}
