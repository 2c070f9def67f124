//! Writing a part's store ([`write_part`], [`Writer`]): the format is in the module above.

use std::io::{IoSlice, Write};

use xxhash_rust::xxh3::xxh3_64;

use super::{ids_name, keys_name, record_size, sig_name, MAGIC};
use crate::error::Result;
use crate::io::output::OutputDir;
use crate::minhash::Signatures;

/// The three output streams of one part's store.
pub(crate) struct Files<'w> {
    /// Header and records.
    pub sig: &'w mut (dyn Write + Send),
    /// Id bytes.
    pub ids: &'w mut (dyn Write + Send),
    /// Shingle keys.
    pub keys: &'w mut (dyn Write + Send),
}

/// Runs `write` with the three output streams of part `part`'s store in `work`: each file is
/// written under a temporary name (or as one upload) and renamed (completed) when `write`
/// succeeds.
pub(crate) fn write_part(
    work: &OutputDir,
    part: usize,
    write: impl FnOnce(Files) -> Result<()>,
) -> Result<()> {
    work.write_unbuffered_with(&keys_name(part), |keys| {
        work.write_with(&ids_name(part), |ids| {
            work.write_with(&sig_name(part), |sig| write(Files { sig, ids, keys }))
        })
    })
}

/// Writes one part's store as a stream: [`Writer::append`] adds documents in order to the
/// records, the ids and the keys; offsets come from the running file lengths, so only the
/// caller's current chunk is held. [`Writer::finish`] checks that exactly the announced number of
/// documents was written.
pub(crate) struct Writer<'w> {
    files: Files<'w>,
    k: usize,
    docs: u64,
    written: u64,
    id_offset: u64,
    keys_offset: u64,
    rec: Vec<u8>,
    keys: Vec<u8>,
    /// A raw copy's (absent) signature.
    zeros: Vec<u32>,
}

impl<'w> Writer<'w> {
    /// Starts a store for `docs` documents from global index `first_doc`, signatures of `k` values.
    pub(crate) fn new(
        files: Files<'w>,
        k: usize,
        first_doc: u64,
        docs: u64,
    ) -> std::io::Result<Self> {
        files.sig.write_all(MAGIC)?;
        files.sig.write_all(&(k as u32).to_le_bytes())?;
        files.sig.write_all(&(docs as u32).to_le_bytes())?;
        files.sig.write_all(&first_doc.to_le_bytes())?;
        Ok(Writer {
            files,
            k,
            docs,
            written: 0,
            id_offset: 0,
            keys_offset: 0,
            rec: Vec::with_capacity(record_size(k) as usize),
            keys: Vec::new(),
            zeros: vec![0; k],
        })
    }

    /// Appends the documents of `sigs` (local index i), with their shingle keys and ids. A raw
    /// copy (`copy_of(i)`: its original's position in the part, an earlier document) is written
    /// as a record naming that original, without signature, shingle count or keys.
    pub(crate) fn append<'a>(
        &mut self,
        sigs: &Signatures,
        keys: impl Fn(usize) -> &'a [u32],
        id: impl Fn(usize) -> &'a str,
        copy_of: impl Fn(usize) -> Option<u32>,
    ) -> std::io::Result<()> {
        let k = self.k;
        if sigs.k != k || self.written + sigs.len() as u64 > self.docs {
            return Err(std::io::Error::other(format!(
                "store announced {} documents of {k} values; got {} more of {}",
                self.docs,
                sigs.len(),
                sigs.k
            )));
        }
        // The keys of the call's documents, written at the end in one vectored stream (the
        // keys' own memory on a little-endian CPU, else their converted bytes in `self.keys`).
        let mut key_slices: Vec<IoSlice<'a>> = Vec::new();
        self.keys.clear();
        for i in 0..sigs.len() {
            let position = self.written + i as u64;
            let (sig, shingles, keys, copy) = match copy_of(i) {
                Some(o) if u64::from(o) < position => {
                    (&self.zeros[..], 0, &[][..], u64::from(o) + 1)
                }
                Some(o) => {
                    return Err(std::io::Error::other(format!(
                        "document {position} of the part is named a copy of {o}, not an earlier one"
                    )))
                }
                None => (
                    &sigs.values[i * k..(i + 1) * k],
                    sigs.shingles[i],
                    keys(i),
                    0,
                ),
            };
            if keys.len() != shingles as usize {
                return Err(std::io::Error::other(format!(
                    "document {i} of the chunk has {shingles} shingles but {} keys",
                    keys.len()
                )));
            }
            let check_keys = if cfg!(target_endian = "little") {
                let kb = key_bytes(keys);
                key_slices.push(IoSlice::new(kb));
                xxh3_64(kb)
            } else {
                let start = self.keys.len();
                for v in keys {
                    self.keys.extend_from_slice(&v.to_le_bytes());
                }
                xxh3_64(&self.keys[start..])
            };
            let idb = id(i).as_bytes();
            let rec = &mut self.rec;
            rec.clear();
            for v in sig {
                rec.extend_from_slice(&v.to_le_bytes());
            }
            rec.extend_from_slice(&shingles.to_le_bytes());
            rec.extend_from_slice(&(idb.len() as u32).to_le_bytes());
            rec.extend_from_slice(&self.id_offset.to_le_bytes());
            rec.extend_from_slice(&self.keys_offset.to_le_bytes());
            rec.extend_from_slice(&copy.to_le_bytes());
            let check = xxh3_64(rec);
            rec.extend_from_slice(&check.to_le_bytes());
            rec.extend_from_slice(&xxh3_64(idb).to_le_bytes());
            rec.extend_from_slice(&check_keys.to_le_bytes());
            self.files.sig.write_all(rec)?;
            self.files.ids.write_all(idb)?;
            self.id_offset += idb.len() as u64;
            self.keys_offset += 4 * keys.len() as u64;
        }
        if cfg!(target_endian = "little") {
            write_all_vectored(&mut *self.files.keys, &mut key_slices)?;
        } else {
            self.files.keys.write_all(&self.keys)?;
        }
        self.written += sigs.len() as u64;
        Ok(())
    }

    /// Ends the store; fails unless every announced document was appended.
    pub(crate) fn finish(self) -> std::io::Result<()> {
        if self.written != self.docs {
            return Err(std::io::Error::other(format!(
                "store announced {} documents but {} were written",
                self.docs, self.written
            )));
        }
        Ok(())
    }
}

/// The bytes of `keys` in memory: their little-endian bytes on a little-endian CPU.
fn key_bytes(keys: &[u32]) -> &[u8] {
    // SAFETY: any u32 is four initialised bytes, u8 has alignment 1, and the length covers
    // exactly the keys' memory, borrowed for as long as `keys` is.
    unsafe { std::slice::from_raw_parts(keys.as_ptr().cast::<u8>(), 4 * keys.len()) }
}

/// Writes all of `bufs` in order, at most `IOV_MAX` (1024) slices per call.
fn write_all_vectored(w: &mut dyn Write, mut bufs: &mut [IoSlice<'_>]) -> std::io::Result<()> {
    IoSlice::advance_slices(&mut bufs, 0);
    while !bufs.is_empty() {
        match w.write_vectored(&bufs[..bufs.len().min(1024)]) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that takes at most 7 bytes per call, vectored or not.
    struct Trickle(Vec<u8>);

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let n = buf.len().min(7);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn vectored_writes_keep_every_byte_in_order() {
        // Empty slices, short writes that stop inside a slice, and more than 1024 slices.
        let pieces: Vec<Vec<u8>> = (0..3000u32)
            .map(|i| (0..i % 13).map(|j| (i * 31 + j) as u8).collect())
            .collect();
        let mut slices: Vec<IoSlice> = pieces.iter().map(|p| IoSlice::new(p)).collect();
        let mut w = Trickle(Vec::new());
        write_all_vectored(&mut w, &mut slices).unwrap();
        assert_eq!(w.0, pieces.concat());
    }
}
