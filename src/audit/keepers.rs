//! Where the kept documents of the sampled pairs are and what they say: in this run (a pass
//! over the manifest's ids), or in an earlier batch of the index (the shard and row the batch
//! recorded, read as `explain` reads one).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::error::Result;
use crate::io::input::read_shard;
use crate::results::{read_row_at, Manifest};

/// Where each keeper of this run named in `ids` is (its shard and row): a pass over the
/// manifest's ids.
pub(super) fn here(
    rows: &crate::results::ManifestRows,
    ids: &HashSet<&str>,
) -> Result<HashMap<String, (String, u64)>> {
    let mut at = HashMap::new();
    rows.each_group(&["id", "file", "row"], |_, df| {
        let err = |e| rows.error(e);
        let col = |name: &str| df.column(name).map_err(err);
        let (id, file) = (
            col("id")?.str().map_err(err)?,
            col("file")?.str().map_err(err)?,
        );
        let row = col("row")?.u64().map_err(err)?;
        for i in 0..df.height() {
            if let Some(x) = id.get(i).filter(|x| ids.contains(x)) {
                let place = (
                    file.get(i).unwrap_or_default().to_string(),
                    row.get(i).unwrap_or(0),
                );
                at.insert(x.to_string(), place);
            }
        }
        Ok(())
    })?;
    Ok(at)
}

/// A keeper in an earlier batch of the index: its shard and row, and its text when readable.
pub(super) type Earlier = ((String, u64), Option<String>);

/// The place and text of each keeper in an earlier batch of the run's index (`(batch, id)`),
/// read from the shard the batch recorded for it, each shard checked and read once (an `s3://`
/// one is fetched whole); no text where it cannot be read (the batch expired, the shard is gone
/// or changed since).
pub(super) fn earlier(
    out: &str,
    m: &Manifest,
    wanted: &[(&str, &str)],
) -> HashMap<(String, String), Earlier> {
    let mut found = HashMap::new();
    let Some(index) = crate::results::run_index(out) else {
        return found;
    };
    let mut by_batch: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for &(batch, id) in wanted {
        by_batch.entry(batch).or_default().push(id);
    }
    // Per shard: the recorded input and the (batch, id, row) it holds.
    type Wanted = Vec<(String, String, u64)>;
    let mut by_shard: BTreeMap<String, (crate::io::input::RecordedInput, Wanted)> = BTreeMap::new();
    for (batch, ids) in by_batch {
        let Ok(places) = crate::index::origins::find_many(&index, batch, &ids) else {
            continue;
        };
        for (id, place) in places {
            if let Ok((input, row)) = place {
                let e = by_shard
                    .entry(input.file.clone())
                    .or_insert((input, Vec::new()));
                e.1.push((batch.to_string(), id, row));
            }
        }
    }
    for (file, (input, rows)) in by_shard {
        let unchanged = input.check_unchanged().is_ok();
        // An s3:// shard is fetched whole, once; a local one is read a row at a time.
        let whole = (unchanged && crate::io::object::is_url(&file))
            .then(|| {
                crate::io::object::get_all(std::slice::from_ref(&file))
                    .ok()?
                    .pop()
            })
            .flatten()
            .and_then(|bytes| read_shard(&file, Some(bytes), None, None, &m.config).ok());
        for (batch, id, row) in rows {
            // A shard rewritten with its rows moved can keep its footer: the row's id says
            // whether it still holds the kept document.
            let same = |read: Option<&str>| read.is_none_or(|r| r == id);
            let text = match &whole {
                Some(s) => (s.text.get(row as usize))
                    .filter(|_| same(s.id.as_ref().and_then(|ids| ids.get(row as usize))))
                    .map(str::to_string),
                None if unchanged => (read_row_at(&m.config, &file, row).ok())
                    .filter(|(_, read)| same(read.as_deref()))
                    .and_then(|(text, _)| text),
                None => None,
            };
            found.insert((batch, id), ((file.clone(), row), text));
        }
    }
    found
}
