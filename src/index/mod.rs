//! The retained index of earlier batches (`run --index INDEX --batch NAME --window N`): what a
//! nightly run compares tonight's documents with, and how tonight's batch is added and the oldest
//! batches expired.
//!
//! Layout of INDEX (a local directory or an s3:// prefix):
//! ```text
//! index.json                 the head: settings, the window's batches, lingering batches, what the
//!                            newest batch was compared with, generation
//! LOCK                       who is using the index (pid, host, start time)
//! frequencies.bin            SimHash: the over-frequent feature filter of the first batch, reused
//! online/                    what `serve` retained, sealed into the next batch ([`fold`])
//! batches/NAME-HASH/         one batch ([`batch`]): band keys, exact-text hashes, records, ids,
//!                            the documents of earlier batches it renewed ([`renew`]), where
//!                            its documents came from ([`origins`]), copies across nights
//!                            ([`copies`])
//! ```
//!
//! Invariants:
//! - The head is the only mutable file and is replaced in one step (a rename, or one PUT), so a
//!   reader sees the old index or the new one. Batch files are written before the head names
//!   them and deleted only after a head no longer names them.
//! - Across batches the earlier document wins: nothing in the index is ever dropped by a later run.
//! - Rerunning the newest batch compares with exactly what its first run compared with: the head
//!   keeps that list (`compared`) and its batches' files until the next new batch is added, so
//!   the rerun gives the same manifest and leaves the same head.
//! - `--cluster keeper`: a batch that leaves the window lingers while a batch in the window
//!   renewed any of its documents ([`renew`]); only those documents are compared with.
//! - A batch name already in the index other than the newest, or one that sorts before the
//!   newest, is refused: batches are added in order (ISO dates sort correctly).
//! - The head records every setting that changes signatures or matches; another value fails at
//!   once, naming the setting and both values.
//! - One writer at a time: [`Lock`] (a `flock`ed file locally, released by the kernel when its
//!   process dies; a conditionally created object on S3).

pub(crate) mod batch;
mod batch_write;
pub(crate) mod blocks;
mod commit;
pub(crate) mod compact;
pub(crate) mod copies;
pub(crate) mod export;
pub(crate) mod filter;
pub(crate) mod fold;
mod head;
pub(crate) mod inspect;
pub(crate) mod labels;
pub(crate) mod live;
pub(crate) mod origins;
pub(crate) mod paragraphs;
mod planning;
mod records;
mod remove;
pub(crate) mod renew;

pub(crate) use commit::commit;
pub(crate) use head::{read_head, BatchEntry, Head, HEAD};
pub(crate) use planning::{plan, IndexPlan};
pub(crate) use remove::{locked_head, remove};

use crate::error::{Error, Result};

/// The lock file (or object).
pub(crate) const LOCK: &str = "LOCK";

/// The lock on an index, held while a run uses it; released when dropped (see
/// [`crate::io::lock`]).
#[derive(Debug)]
pub struct Lock(#[expect(dead_code, reason = "held, never read")] crate::io::lock::Lock);

impl Lock {
    /// Takes the lock of the index at `location`, or fails naming its holder.
    pub fn acquire(location: &str) -> Result<Lock> {
        crate::io::lock::Lock::acquire(location, LOCK, |holder| Error::IndexInUse {
            index: location.to_string(),
            holder,
        })
        .map(Lock)
    }
}
