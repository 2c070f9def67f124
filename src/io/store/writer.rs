//! Writing a part's store ([`write_part`], [`Writer`]): the format is in the module above.

use std::io::Write;

use xxhash_rust::xxh3::xxh3_64;

use super::{ids_name, record_size, sig_name, Layout, MAGIC};
use crate::error::Result;
use crate::io::output::OutputDir;
use crate::minhash::Signatures;

/// The two output streams of one part's store.
pub(crate) struct Files<'w> {
    /// Header and records.
    pub sig: &'w mut (dyn Write + Send),
    /// Id bytes.
    pub ids: &'w mut (dyn Write + Send),
}

/// Runs `write` with the two output streams of part `part`'s store in `work`: each file is
/// written under a temporary name (or as one upload) and renamed (completed) when `write`
/// succeeds.
pub(crate) fn write_part(
    work: &OutputDir,
    part: usize,
    write: impl FnOnce(Files) -> Result<()>,
) -> Result<()> {
    work.write_with(&ids_name(part), |ids| {
        work.write_with(&sig_name(part), |sig| write(Files { sig, ids }))
    })
}

/// Writes one part's store as a stream: [`Writer::append`] adds documents in order to the
/// records and the ids; offsets come from the running file length, so only the caller's
/// current chunk is held. [`Writer::finish`] checks that exactly the announced number of
/// documents was written.
pub(crate) struct Writer<'w> {
    files: Files<'w>,
    k: usize,
    /// Values written per record: k, or 0 where the records hold no signature.
    record_k: usize,
    /// The documents announced (None: a part whose files its task counts).
    docs: Option<u64>,
    written: u64,
    id_offset: u64,
    rec: Vec<u8>,
    /// A raw copy's (absent) signature.
    zeros: Vec<u32>,
}

impl<'w> Writer<'w> {
    /// Starts a store for `docs` documents (None: as many as are appended), signatures of
    /// `layout.k` values (in the records or not, as `layout` says).
    pub(crate) fn new(
        files: Files<'w>,
        layout: Layout,
        docs: Option<u64>,
    ) -> std::io::Result<Self> {
        let (k, record_k) = (layout.k, layout.record_k());
        files.sig.write_all(MAGIC)?;
        files.sig.write_all(&(record_k as u32).to_le_bytes())?;
        files
            .sig
            .write_all(&(docs.unwrap_or(0) as u32).to_le_bytes())?;
        files.sig.write_all(&0u64.to_le_bytes())?;
        Ok(Writer {
            files,
            k,
            record_k,
            docs,
            written: 0,
            id_offset: 0,
            rec: Vec::with_capacity(record_size(record_k) as usize),
            zeros: vec![0; record_k],
        })
    }

    /// Appends the documents of `sigs` (local index i) with their ids. A raw copy (`copy_of(i)`:
    /// its original's position in the part, an earlier document) is written as a record naming
    /// that original, without signature or shingle count.
    pub(crate) fn append<'a>(
        &mut self,
        sigs: &Signatures,
        id: impl Fn(usize) -> &'a str,
        copy_of: impl Fn(usize) -> Option<u32>,
    ) -> std::io::Result<()> {
        let k = self.k;
        let over = (self.docs).is_some_and(|d| self.written + sigs.len() as u64 > d);
        if sigs.k != k || over {
            return Err(std::io::Error::other(format!(
                "store announced {:?} documents of {k} values; got {} more of {}",
                self.docs,
                sigs.len(),
                sigs.k
            )));
        }
        for i in 0..sigs.len() {
            let position = self.written + i as u64;
            let (sig, shingles, copy) = match copy_of(i) {
                Some(o) if u64::from(o) < position => (&self.zeros[..], 0, u64::from(o) + 1),
                Some(o) => {
                    return Err(std::io::Error::other(format!(
                        "document {position} of the part is named a copy of {o}, not an earlier one"
                    )))
                }
                None => {
                    let at = i * k;
                    (&sigs.values[at..at + self.record_k], sigs.shingles[i], 0)
                }
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
            rec.extend_from_slice(&copy.to_le_bytes());
            let check = xxh3_64(rec);
            rec.extend_from_slice(&check.to_le_bytes());
            rec.extend_from_slice(&xxh3_64(idb).to_le_bytes());
            self.files.sig.write_all(rec)?;
            self.files.ids.write_all(idb)?;
            self.id_offset += idb.len() as u64;
        }
        self.written += sigs.len() as u64;
        Ok(())
    }

    /// Ends the store; fails unless every announced document was appended.
    pub(crate) fn finish(self) -> std::io::Result<()> {
        if self.docs.is_some_and(|d| d != self.written) {
            return Err(std::io::Error::other(format!(
                "store announced {:?} documents but {} were written",
                self.docs, self.written
            )));
        }
        Ok(())
    }
}
