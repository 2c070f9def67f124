//! Which file an input is: its size and a fingerprint that changes when it does (a Parquet
//! footer's hash, or [`jsonl::identity`]), read with two small range reads, local or `s3://`;
//! checked again before a shard is read or applied to, since the manifest names rows by position.

use crate::error::{Error, ReadError, Result};
use crate::io::{jsonl, object, object_ranges, range_reader};

/// The footer of a Parquet file (its metadata: schema, row groups, every column chunk's offset,
/// size, codec and statistics) and the file's size.
pub(crate) struct Footer {
    pub file_bytes: u64,
    /// The footer's bytes, without the trailing length and magic.
    pub raw: Vec<u8>,
}

/// What a footer read fetches of an `s3://` object's end at once: most footers fit, so one
/// request reads one.
const TAIL_BYTES: u64 = 64 << 10;

impl Footer {
    /// Reads the footer of a local file (two small reads) or an `s3://` object (one request for
    /// its last [`TAIL_BYTES`] when the object was listed, [`object::get_tail`]; one more when
    /// the footer is longer).
    pub(crate) fn read(file: &str) -> Result<Footer> {
        let err = |e: ReadError| Error::Parquet {
            file: file.to_string(),
            source: e,
        };
        let fail = |file: &str, source| Error::Parquet {
            file: file.to_string(),
            source,
        };
        let not_parquet = || {
            err(ReadError::Invalid(
                "not a Parquet file (no PAR1 footer)".into(),
            ))
        };
        let tail = match object::is_url(file) {
            true => Some(object::get_tail(file, TAIL_BYTES)?),
            false => None,
        };
        // The file's size, its last bytes (8 at least when it has them), and further reads.
        let (file_bytes, read) = match &tail {
            Some((size, _)) => (*size, object_ranges(file)),
            None => range_reader(file, fail)?,
        };
        if file_bytes < 12 {
            return Err(not_parquet());
        }
        let tail = match tail {
            Some((_, bytes)) if bytes.len() >= 8 => bytes,
            _ => read(file_bytes - 8..file_bytes)?,
        };
        let end = &tail[tail.len() - 8..];
        if end[4..] != *b"PAR1" {
            return Err(not_parquet());
        }
        let len = u32::from_le_bytes([end[0], end[1], end[2], end[3]]) as u64;
        if len + 12 > file_bytes {
            return Err(not_parquet());
        }
        let raw = match tail.len() as u64 >= len + 8 {
            true => tail[tail.len() - 8 - len as usize..tail.len() - 8].to_vec(),
            false => read(file_bytes - 8 - len..file_bytes - 8)?,
        };
        Ok(Footer { file_bytes, raw })
    }

    /// Reads the footer of `file` and checks that the file is still the one recorded as `bytes`
    /// long with footer `fingerprint`; otherwise `changed(what)` says how it differs (or that it
    /// cannot be read now).
    pub(crate) fn read_unchanged(
        file: &str,
        bytes: u64,
        fingerprint: &str,
        changed: impl Fn(String) -> Error,
    ) -> Result<Footer> {
        let footer = Footer::read(file).map_err(|e| match e {
            Error::Parquet { source, .. } => changed(format!("it cannot be read now: {source}")),
            Error::ObjectStore { msg, .. } => changed(format!("it cannot be read now: {msg}")),
            other => other,
        })?;
        if footer.file_bytes != bytes {
            return Err(changed(format!(
                "{bytes} bytes then, {} now",
                footer.file_bytes
            )));
        }
        if footer.fingerprint() != fingerprint {
            return Err(changed(format!(
                "same size, but its Parquet footer differs: fingerprint {fingerprint} then, {} now",
                footer.fingerprint()
            )));
        }
        Ok(footer)
    }

    /// The footer's xxh3-64 in hex: it covers every column chunk's offset, size and statistics,
    /// so a rewritten shard gets another one.
    pub(crate) fn fingerprint(&self) -> String {
        format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&self.raw))
    }

    /// The parsed footer.
    pub(crate) fn metadata(
        &self,
        file: &str,
    ) -> Result<polars_parquet::parquet::metadata::FileMetadata> {
        // A minimal file around the footer: magic, footer, length, magic.
        let mut buf = Vec::with_capacity(self.raw.len() + 12);
        buf.extend_from_slice(b"PAR1");
        buf.extend_from_slice(&self.raw);
        buf.extend_from_slice(&(self.raw.len() as u32).to_le_bytes());
        buf.extend_from_slice(b"PAR1");
        polars_parquet::parquet::read::read_metadata(&mut std::io::Cursor::new(buf)).map_err(|e| {
            Error::Parquet {
                file: file.to_string(),
                source: e.into(),
            }
        })
    }
}

/// A file's size and a fingerprint that changes when the file does: its Parquet footer's hash,
/// or [`jsonl::identity`].
pub(crate) fn identity(file: &str) -> Result<(u64, String)> {
    if jsonl::is_jsonl(file) {
        return jsonl::identity(file);
    }
    let footer = Footer::read(file)?;
    Ok((footer.file_bytes, footer.fingerprint()))
}

/// Checks that `file` is still the one recorded as `bytes` long with `fingerprint`; otherwise
/// `changed(what)` says how it differs (or that it cannot be read now).
pub(crate) fn check_unchanged(
    file: &str,
    bytes: u64,
    fingerprint: &str,
    changed: impl Fn(String) -> Error,
) -> Result<()> {
    if !jsonl::is_jsonl(file) {
        return Footer::read_unchanged(file, bytes, fingerprint, changed).map(|_| ());
    }
    let (now_bytes, now) =
        jsonl::identity(file).map_err(|e| changed(format!("it cannot be read now: {e}")))?;
    if now_bytes != bytes {
        return Err(changed(format!("{bytes} bytes then, {now_bytes} now")));
    }
    if now != fingerprint {
        return Err(changed(format!(
            "same size, but its first or last MiB differs: fingerprint {fingerprint} then, {now} now"
        )));
    }
    Ok(())
}
