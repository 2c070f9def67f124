//! `--work-keys stored`: the part's shingle key files ([`crate::io::keys`]), written as the
//! task's chunks are stored.

use super::ShingleKeys;
use crate::error::Result;
use crate::io::keys;
use crate::io::output::OutputDir;

/// Runs `write` with a writer of part `p`'s key files when `stored` (else none).
pub(super) fn with_key_files(
    work: &OutputDir,
    p: usize,
    stored: bool,
    write: impl FnOnce(Option<&mut keys::KeyWriter>) -> Result<()>,
) -> Result<()> {
    match stored {
        true => keys::write_part(work, p, |w| write(Some(w))),
        false => write(None),
    }
}

/// Appends a chunk's keys (`base`: its first document's position in the part): a raw copy
/// (`copies[i]`, its original's part position) is listed with its original's keys.
pub(super) fn append_keys(
    w: &mut keys::KeyWriter,
    base: u64,
    keys: &ShingleKeys,
    copies: &[Option<u32>],
) -> std::io::Result<()> {
    for (i, copy) in copies.iter().enumerate() {
        let doc = (base + i as u64) as u32;
        match copy {
            Some(o) => w.push_copy(doc, *o)?,
            None => w.push(doc, keys.get(i))?,
        }
    }
    Ok(())
}
