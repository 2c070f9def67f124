//! Blocked record files: how every data file of the retained index is laid out.
//!
//! A data file is a sequence of records cut into blocks of [`RECORDS_PER_BLOCK`] records. Its
//! companion `NAME.meta` holds, per block, the length, the key of the block's first record
//! (records are written in key order, so the keys are fences for a search) and the low 32 bits
//! of the block's xxh3, plus an optional Bloom filter over the file's keys; the meta file ends
//! with an xxh3 of everything before it. Offsets are the running sum of the lengths.
//!
//! Meta version 2 (`CDIXMET2`, 16 bytes per block) is written; version 1 (`CDIXMET1`: 28 bytes
//! per block, with the offset and the full 64-bit checksum) is still read, so batches written
//! before stay usable in the window.
//!
//! Invariants:
//! - A writer holds one block; a reader loads the meta whole (it is small: 0.25 bytes per record
//!   plus the filter) and reads data blocks by range, so looking up one key costs one block read
//!   (~64 records), never the file.
//! - Every block is checked against its checksum when read, and the meta against its own: a
//!   truncated or altered file is reported by name, never read as data.

use std::io::Write;
use std::ops::Range;

use crate::error::{Error, Result};
use crate::index::filter::Bloom;
use crate::io::output::OutputDir;
use crate::io::{u32_at, u64_at};

/// Records per block: a lookup reads one block (512 bytes of band keys).
pub(crate) const RECORDS_PER_BLOCK: usize = 64;

const MAGIC: &[u8; 8] = b"CDIXMET2";
const MAGIC_V1: &[u8; 8] = b"CDIXMET1";
/// Bytes per block in a meta file: length, first key, checksum (version 1: offset too, and a
/// 64-bit checksum).
const BLOCK_META: usize = 4 + 8 + 4;
const BLOCK_META_V1: usize = 8 + 4 + 8 + 8;

/// One block of a data file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BlockMeta {
    offset: u64,
    len: u32,
    /// Key of the block's first record.
    first: u64,
    /// xxh3 of the block (version 2: its low 32 bits).
    checksum: u64,
}

/// Streams a blocked file into `sink`: records in key order, then [`Writer::finish`] for the meta.
/// It holds one block (64 records) at a time.
pub(crate) struct Writer<'w> {
    sink: &'w mut (dyn Write + Send),
    block: Vec<u8>,
    blocks: Vec<BlockMeta>,
    records: u64,
    offset: u64,
}

impl<'w> Writer<'w> {
    /// A writer of the data file `sink`.
    pub(crate) fn new(sink: &'w mut (dyn Write + Send)) -> Writer<'w> {
        Writer {
            sink,
            block: Vec::new(),
            blocks: Vec::new(),
            records: 0,
            offset: 0,
        }
    }

    /// Appends one record whose key is `key` (keys must not decrease).
    pub(crate) fn push(&mut self, key: u64, record: &[u8]) -> std::io::Result<()> {
        if self.records.is_multiple_of(RECORDS_PER_BLOCK as u64) {
            self.close_block()?;
            self.blocks.push(BlockMeta {
                offset: self.offset,
                len: 0,
                first: key,
                checksum: 0,
            });
        }
        self.block.extend_from_slice(record);
        self.records += 1;
        Ok(())
    }

    fn close_block(&mut self) -> std::io::Result<()> {
        if let Some(b) = self
            .blocks
            .last_mut()
            .filter(|b| b.len == 0 && !self.block.is_empty())
        {
            b.len = self.block.len() as u32;
            b.checksum = xxhash_rust::xxh3::xxh3_64(&self.block);
            self.sink.write_all(&self.block)?;
            self.offset += self.block.len() as u64;
            self.block.clear();
        }
        Ok(())
    }

    /// Bytes of data written so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.offset + self.block.len() as u64
    }

    /// Writes the last block; returns the meta file's bytes.
    pub(crate) fn finish(mut self, filter: Option<&Bloom>) -> std::io::Result<Vec<u8>> {
        self.close_block()?;
        let mut meta = Vec::with_capacity(40 + self.blocks.len() * BLOCK_META);
        meta.extend_from_slice(MAGIC);
        meta.extend_from_slice(&self.records.to_le_bytes());
        meta.extend_from_slice(&self.offset.to_le_bytes());
        meta.extend_from_slice(&(self.blocks.len() as u32).to_le_bytes());
        for b in &self.blocks {
            meta.extend_from_slice(&b.len.to_le_bytes());
            meta.extend_from_slice(&b.first.to_le_bytes());
            meta.extend_from_slice(&(b.checksum as u32).to_le_bytes());
        }
        meta.push(u8::from(filter.is_some()));
        if let Some(f) = filter {
            f.write(&mut meta);
        }
        let sum = xxhash_rust::xxh3::xxh3_64(&meta);
        meta.extend_from_slice(&sum.to_le_bytes());
        Ok(meta)
    }
}

/// Of blocks sorted by their first key, those that can hold a record with key `key`.
pub(crate) fn blocks_with<B>(blocks: &[B], first: impl Fn(&B) -> u64, key: u64) -> Range<usize> {
    let lo = blocks.partition_point(|b| first(b) < key).saturating_sub(1);
    let hi = blocks.partition_point(|b| first(b) <= key);
    lo..hi.max(lo)
}

/// The meta file name of data file `name`.
pub(crate) fn meta_name(name: &str) -> String {
    format!("{name}.meta")
}

/// A data file of the index, as known from its loaded meta.
#[derive(Debug, Clone)]
pub(crate) struct Blocked {
    /// The data file's name inside its batch directory.
    name: String,
    blocks: Vec<BlockMeta>,
    filter: Option<Bloom>,
    records: u64,
    /// Version 2: the checksums are the low 32 bits of each block's xxh3.
    short_sums: bool,
}

impl Blocked {
    /// Loads the meta of data file `name` in `dir`.
    pub(crate) fn load(dir: &OutputDir, name: &str) -> Result<Blocked> {
        let meta = meta_name(name);
        let bytes = dir.read(&meta)?.ok_or_else(|| Error::IndexFile {
            path: dir.location(&meta),
            source: "missing".into(),
        })?;
        Blocked::parse(&bytes, name).map_err(|msg| Error::IndexFile {
            path: dir.location(&meta),
            source: msg.into(),
        })
    }

    /// [`Blocked::load`] of a file a batch may lack (one written before the file existed, or
    /// without the option that writes it): None when its meta is missing.
    pub(crate) fn load_optional(dir: &OutputDir, name: &str) -> Result<Option<Blocked>> {
        let meta = meta_name(name);
        let Some(bytes) = dir.read(&meta)? else {
            return Ok(None);
        };
        Blocked::parse(&bytes, name)
            .map(Some)
            .map_err(|msg| Error::IndexFile {
                path: dir.location(&meta),
                source: msg.into(),
            })
    }

    fn parse(b: &[u8], name: &str) -> std::result::Result<Blocked, String> {
        let short = || "truncated".to_string();
        let v1 = b.get(..8) == Some(&MAGIC_V1[..]);
        if b.len() < 8 + 8 + 8 + 4 + 1 + 8 || !(v1 || &b[..8] == MAGIC) {
            return Err("not an index meta file (bad header)".into());
        }
        let body = &b[..b.len() - 8];
        if xxhash_rust::xxh3::xxh3_64(body) != u64_at(b, b.len() - 8) {
            return Err("checksum mismatch (the file was altered or cut short)".into());
        }
        let records = u64_at(b, 8);
        let data_bytes = u64_at(b, 16);
        let n = u32_at(b, 24) as usize;
        let mut at = 28;
        let mut blocks = Vec::with_capacity(n);
        let mut offset = 0u64;
        for _ in 0..n {
            let size = if v1 { BLOCK_META_V1 } else { BLOCK_META };
            let m = body.get(at..at + size).ok_or_else(short)?;
            let block = match v1 {
                true => BlockMeta {
                    offset: u64_at(m, 0),
                    len: u32_at(m, 8),
                    first: u64_at(m, 12),
                    checksum: u64_at(m, 20),
                },
                false => BlockMeta {
                    offset,
                    len: u32_at(m, 0),
                    first: u64_at(m, 4),
                    checksum: u64::from(u32_at(m, 12)),
                },
            };
            offset = block.offset + u64::from(block.len);
            blocks.push(block);
            at += size;
        }
        if offset != data_bytes {
            return Err(format!(
                "its blocks end at byte {offset}, not at the {data_bytes} bytes it records"
            ));
        }
        let filter = match body.get(at) {
            Some(1) => Some(Bloom::read(&body[at + 1..]).ok_or_else(short)?.0),
            Some(_) => None,
            None => return Err(short()),
        };
        Ok(Blocked {
            name: name.to_string(),
            blocks,
            filter,
            records,
            short_sums: !v1,
        })
    }

    /// The filter over the file's keys, if it has one.
    pub(crate) fn filter(&self) -> Option<&Bloom> {
        self.filter.as_ref()
    }

    /// The data file's name inside its batch directory.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Records in the file.
    pub(crate) fn records(&self) -> u64 {
        self.records
    }

    /// Bytes this meta holds in memory (filter and block table).
    pub(crate) fn memory_bytes(&self) -> usize {
        self.filter.as_ref().map_or(0, Bloom::bytes)
            + self.blocks.len() * std::mem::size_of::<BlockMeta>()
    }

    /// The blocks that can hold records with key `key` (records sorted by key).
    pub(crate) fn blocks_with(&self, key: u64) -> Range<usize> {
        blocks_with(&self.blocks, |b| b.first, key)
    }

    /// The key of each block's first record (its fences).
    pub(crate) fn fences(&self) -> Vec<u64> {
        self.blocks.iter().map(|b| b.first).collect()
    }

    /// Reads every block of the data file in `dir` (checked), a few hundred at a time, handing
    /// each block's index and bytes to `each`.
    pub(crate) fn for_each_block(
        &self,
        dir: &OutputDir,
        mut each: impl FnMut(usize, &[u8]) -> Result<()>,
    ) -> Result<()> {
        let all: Vec<usize> = (0..self.blocks.len()).collect();
        for chunk in all.chunks(256) {
            for (&i, bytes) in chunk.iter().zip(self.read(dir, chunk)?.iter()) {
                each(i, bytes)?;
            }
        }
        Ok(())
    }

    /// The block holding record `i` (records numbered in file order).
    pub(crate) fn block_of(&self, i: u64) -> usize {
        (i / RECORDS_PER_BLOCK as u64) as usize
    }

    /// Reads every block of the data file in `dir`, a few hundred at a time, each checked
    /// against its checksum; returns the bytes read.
    pub(crate) fn verify(&self, dir: &OutputDir) -> Result<u64> {
        let mut bytes = 0u64;
        self.for_each_block(dir, |_, b| {
            bytes += b.len() as u64;
            Ok(())
        })?;
        Ok(bytes)
    }

    /// Reads the blocks `wanted` names (in any order, repeats allowed) of the data file in
    /// `dir`, each checked: returns them sorted and unique, and their bytes in that order.
    pub(crate) fn read_some(
        &self,
        dir: &OutputDir,
        wanted: impl IntoIterator<Item = usize>,
    ) -> Result<(Vec<usize>, Vec<Vec<u8>>)> {
        let mut blocks: Vec<usize> = wanted.into_iter().collect();
        blocks.sort_unstable();
        blocks.dedup();
        let data = self.read(dir, &blocks)?;
        Ok((blocks, data))
    }

    /// Reads blocks `wanted` (sorted, unique) of the data file in `dir`, each checked against its
    /// checksum; returns their bytes in the same order.
    pub(crate) fn read(&self, dir: &OutputDir, wanted: &[usize]) -> Result<Vec<Vec<u8>>> {
        let damaged = |msg: String| Error::IndexFile {
            path: dir.location(&self.name),
            source: msg.into(),
        };
        let mut ranges = Vec::with_capacity(wanted.len());
        for &i in wanted {
            let b = self
                .blocks
                .get(i)
                .ok_or_else(|| damaged(format!("block {i} does not exist")))?;
            ranges.push(b.offset..b.offset + u64::from(b.len));
        }
        if ranges.is_empty() {
            return Ok(Vec::new());
        }
        let got = dir.read_ranges(&self.name, &ranges).map_err(|e| match e {
            Error::WorkFile { source, .. } => Error::IndexFile {
                path: dir.location(&self.name),
                source,
            },
            other => other,
        })?;
        let mut out = Vec::with_capacity(wanted.len());
        for (j, &i) in wanted.iter().enumerate() {
            let bytes = got.get(j);
            let b = self.blocks[i];
            let sum = xxhash_rust::xxh3::xxh3_64(bytes);
            let sum = if self.short_sums {
                sum & 0xffff_ffff
            } else {
                sum
            };
            if bytes.len() != b.len as usize || sum != b.checksum {
                return Err(damaged(format!(
                    "block {i} (bytes {}..{}) fails its checksum",
                    b.offset,
                    b.offset + u64::from(b.len)
                )));
            }
            out.push(bytes.to_vec());
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The version-1 meta of a data file whose version-2 meta is `meta`.
    fn version_1(meta: &[u8], data: &[u8]) -> Vec<u8> {
        let n = u32_at(meta, 24) as usize;
        let mut v1 = MAGIC_V1.to_vec();
        v1.extend_from_slice(&meta[8..28]);
        let mut offset = 0u64;
        for i in 0..n {
            let m = &meta[28 + i * BLOCK_META..];
            let len = u32_at(m, 0);
            let block = &data[offset as usize..(offset + u64::from(len)) as usize];
            v1.extend_from_slice(&offset.to_le_bytes());
            v1.extend_from_slice(&len.to_le_bytes());
            v1.extend_from_slice(&m[4..12]);
            v1.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(block).to_le_bytes());
            offset += u64::from(len);
        }
        v1.extend_from_slice(&meta[28 + n * BLOCK_META..meta.len() - 8]);
        let sum = xxhash_rust::xxh3::xxh3_64(&v1);
        v1.extend_from_slice(&sum.to_le_bytes());
        v1
    }

    #[test]
    fn write_load_search_and_detect_damage() {
        let dir = std::env::temp_dir().join(format!("cd-blocks-{}", std::process::id()));
        let out = OutputDir::parse(dir.to_str().unwrap());
        out.prepare().unwrap();
        let mut data = Vec::new();
        let mut w = Writer::new(&mut data);
        let mut f = Bloom::with_keys(200);
        // 200 records with keys 0, 0, 2, 2, 4, ... (pairs share a key, across block edges too).
        for i in 0..200u64 {
            let key = i / 2 * 2;
            f.insert(crate::lsh::mix64(key));
            w.push(key, &(i as u32).to_le_bytes()).unwrap();
        }
        let meta = w.finish(Some(&f)).unwrap();
        out.write_bytes("d.bin", data).unwrap();
        out.write_bytes("d.bin.meta", meta.clone()).unwrap();
        let b = Blocked::load(&out, "d.bin").unwrap();
        assert_eq!(b.records(), 200);
        assert!(b.filter().unwrap().contains(crate::lsh::mix64(126)));
        // Key 126 is records 126 and 127: block 1 only; key 128 starts block 2, but a run of
        // equal keys may begin in the block before, so that one is read too.
        assert_eq!(b.blocks_with(126), 1..2);
        assert_eq!(b.blocks_with(128), 1..3);
        let blocks = b.read(&out, &[1, 2]).unwrap();
        assert_eq!(blocks[0].len(), 64 * 4);
        assert_eq!(u32_at(&blocks[1], 0), 128);
        // A version-1 meta of the same file (offsets, 64-bit checksums) reads the same.
        let data = std::fs::read(dir.join("d.bin")).unwrap();
        out.write_bytes("d.bin.meta", version_1(&meta, &data))
            .unwrap();
        let old = Blocked::load(&out, "d.bin").unwrap();
        assert_eq!((old.records(), old.blocks_with(128)), (200, 1..3));
        assert_eq!(old.read(&out, &[1, 2]).unwrap(), blocks);
        assert_eq!(old.filter(), b.filter());
        out.write_bytes("d.bin.meta", meta.clone()).unwrap();
        // One flipped data byte: the block read fails, naming the file.
        let mut data = std::fs::read(dir.join("d.bin")).unwrap();
        data[300] ^= 1;
        std::fs::write(dir.join("d.bin"), &data).unwrap();
        let e = b.read(&out, &[1]).unwrap_err().to_string();
        assert!(e.contains("d.bin") && e.contains("checksum"), "{e}");
        // A cut meta file fails to load.
        out.write_bytes("d.bin.meta", meta[..meta.len() - 3].to_vec())
            .unwrap();
        let e = Blocked::load(&out, "d.bin").unwrap_err().to_string();
        assert!(e.contains("d.bin.meta") && e.contains("damaged"), "{e}");
        out.remove_all().unwrap();
    }
}
