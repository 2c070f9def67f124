//! Reading shards and writing outputs and work files: input shards ([`input`]), local and
//! object-store directories ([`output`], [`object`]), and the work files of a task run ([`work`]
//! names them; [`store`], [`keys`], [`band_rows`], [`pairs`], [`doc_lists`] and [`pair_sigs`]
//! are the binary ones, [`sections`] the cut by part the two lists share).

pub(crate) mod band_rows;
pub(crate) mod doc_columns;
pub(crate) mod doc_lists;
pub(crate) mod input;
pub(crate) mod jsonl;
pub(crate) mod keys;
pub(crate) mod lock;
pub(crate) mod object;
pub(crate) mod output;
pub(crate) mod pair_sigs;
pub(crate) mod pairs;
pub(crate) mod paragraph_rows;
pub(crate) mod sections;
pub(crate) mod shard;
pub(crate) mod store;
pub(crate) mod varint;
pub(crate) mod work;

/// The little-endian u32 at byte `at` of a work file (the caller checked the length).
pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The little-endian u32s of `bytes` (a multiple of 4 long; a shorter tail is ignored), in a
/// loop the compiler turns into wide copies (a `u32_at` per element collected was ~1 ns each).
pub(crate) fn u32s_le(bytes: &[u8]) -> Vec<u32> {
    let mut out = vec![0u32; bytes.len() / 4];
    read_u32s_le(bytes, &mut out);
    out
}

/// Fills `out` with the little-endian u32s at the start of `bytes` (as many as both hold).
pub(crate) fn read_u32s_le(bytes: &[u8], out: &mut [u32]) {
    for (v, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
        *v = u32::from_le_bytes(c.try_into().unwrap_or_default());
    }
}

/// The little-endian u64 at byte `at` of a work file (the caller checked the length).
pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

/// Reads a byte range of one file.
pub(crate) type RangeRead = dyn Fn(std::ops::Range<u64>) -> crate::error::Result<Vec<u8>>;

/// A reader of an `s3://` object's byte ranges, one range request each.
pub(crate) fn object_ranges(url: &str) -> Box<RangeRead> {
    let url = url.to_string();
    Box::new(move |r: std::ops::Range<u64>| {
        Ok(object::get_ranges(&url, &[r])?.pop().unwrap_or_default())
    })
}

/// A file's size and a reader of its byte ranges (local, or `s3://` by range requests); `fail`
/// names a local file's read error.
pub(crate) fn range_reader(
    file: &str,
    fail: fn(&str, crate::error::ReadError) -> crate::error::Error,
) -> crate::error::Result<(u64, Box<RangeRead>)> {
    if object::is_url(file) {
        return Ok((object::size(file)?, object_ranges(file)));
    }
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open(file).map_err(|e| fail(file, e.into()))?;
    let size = f.metadata().map_err(|e| fail(file, e.into()))?.len();
    let name = file.to_string();
    let read = move |r: std::ops::Range<u64>| {
        let mut buf = vec![0u8; (r.end - r.start) as usize];
        f.read_exact_at(&mut buf, r.start)
            .map_err(|e| fail(&name, e.into()))?;
        Ok(buf)
    };
    Ok((size, Box::new(read)))
}
