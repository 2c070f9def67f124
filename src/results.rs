//! A finished run's output read back, for `apply`, `explain` and `report`: the manifest with the
//! settings and input shards its metadata records, and the texts of chosen rows.

use std::collections::BTreeMap;

use polars::prelude::*;
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::io::{input, object};

/// Manifest metadata key of the input shards as the run read them ([`inputs_json`]).
pub const INPUTS_KEY: &str = "corpus_dedup.inputs";

/// The input shards as the run read them: name, rows, size and footer fingerprint of each, so
/// `apply` can refuse a shard that changed since.
pub fn inputs_json(plan: &crate::plan::Plan) -> serde_json::Value {
    plan.files
        .iter()
        .map(|f| {
            serde_json::json!({
                "file": f.file, "rows": f.rows, "bytes": f.bytes, "fingerprint": f.fingerprint,
            })
        })
        .collect()
}

/// An input shard as the run read it (recorded in the manifest's metadata).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedInput {
    pub file: String,
    pub rows: u64,
    pub bytes: u64,
    pub fingerprint: String,
}

impl RecordedInput {
    /// Checks that the shard is still the one the run read: same size and footer (which holds
    /// the row count and every column chunk's offset, size and statistics).
    pub fn check_unchanged(&self) -> Result<input::Footer> {
        let footer = input::Footer::read(&self.file).map_err(|e| match e {
            Error::Parquet { msg, .. } | Error::ObjectStore { msg, .. } => Error::ShardChanged {
                file: self.file.clone(),
                what: format!("it cannot be read now: {msg}"),
            },
            other => other,
        })?;
        let changed = |what: String| Error::ShardChanged {
            file: self.file.clone(),
            what,
        };
        if footer.file_bytes != self.bytes {
            return Err(changed(format!(
                "{} bytes then, {} now",
                self.bytes, footer.file_bytes
            )));
        }
        if footer.fingerprint() != self.fingerprint {
            return Err(changed(format!(
                "same size, but its Parquet footer differs: fingerprint {} then, {} now",
                self.fingerprint,
                footer.fingerprint()
            )));
        }
        Ok(footer)
    }
}

/// The columns of a manifest (`duplicate_of_batch` only with `--index`).
pub struct Columns<'a> {
    pub id: &'a StringChunked,
    pub file: &'a StringChunked,
    pub row: &'a UInt64Chunked,
    pub keep: &'a BooleanChunked,
    pub cluster: &'a UInt64Chunked,
    pub duplicate_of: &'a StringChunked,
    pub similarity: &'a Float32Chunked,
    pub batch: Option<&'a StringChunked>,
}

/// A manifest read back.
pub struct Manifest {
    /// Where it was read from.
    pub location: String,
    pub frame: DataFrame,
    /// The run's configuration (thread count and output location are not recorded).
    pub config: Config,
    /// The input shards, in the run's order.
    pub inputs: Vec<RecordedInput>,
}

/// Reads a whole local file or `s3://` object; `None` when it does not exist.
pub fn read_location(location: &str) -> Result<Option<Vec<u8>>> {
    if object::is_url(location) {
        return object::get_opt(location);
    }
    match std::fs::read(location) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::Manifest {
            path: location.to_string(),
            msg: e.to_string(),
        }),
    }
}

/// `OUT/name` for a local output directory or an `s3://` prefix.
pub fn in_output(out: &str, name: &str) -> String {
    format!("{}/{name}", out.trim_end_matches('/'))
}

impl Manifest {
    /// Reads `manifest.parquet` (a local path or `s3://` URL) with its recorded settings and
    /// inputs.
    pub fn read(location: &str) -> Result<Manifest> {
        let err = |msg: String| Error::Manifest {
            path: location.to_string(),
            msg,
        };
        let bytes = read_location(location)?.ok_or_else(|| {
            err("no such file; pass the manifest.parquet a `corpus-dedup run` wrote".into())
        })?;
        let mut reader = ParquetReader::new(std::io::Cursor::new(bytes));
        let kv: BTreeMap<String, String> = reader
            .get_metadata()
            .map_err(|e| err(e.to_string()))?
            .key_value_metadata()
            .iter()
            .flatten()
            .filter_map(|kv| Some((kv.key.clone(), kv.value.clone()?)))
            .collect();
        let not_ours = |key: &str| {
            err(format!(
                "its metadata has no {key} (it was not written by this version of corpus-dedup run); run the job again to get one"
            ))
        };
        let mut config: serde_json::Value = kv
            .get("corpus_dedup.config")
            .and_then(|s| serde_json::from_str(s).ok())
            .ok_or_else(|| not_ours("corpus_dedup.config"))?;
        if let Some(o) = config.as_object_mut() {
            o.insert("threads".into(), 1.into());
            o.insert("output".into(), "".into());
        }
        let config: Config = serde_json::from_value(config)
            .map_err(|e| err(format!("its recorded configuration is unreadable: {e}")))?;
        let inputs: Vec<RecordedInput> = kv
            .get(INPUTS_KEY)
            .and_then(|s| serde_json::from_str(s).ok())
            .ok_or_else(|| not_ours(INPUTS_KEY))?;
        let frame = reader.finish().map_err(|e| err(e.to_string()))?;
        Ok(Manifest {
            location: location.to_string(),
            frame,
            config,
            inputs,
        })
    }

    /// A column of the manifest.
    pub fn column(&self, name: &str) -> Result<&Column> {
        self.frame.column(name).map_err(|e| Error::Manifest {
            path: self.location.clone(),
            msg: e.to_string(),
        })
    }

    /// The manifest's columns, typed.
    pub fn columns(&self) -> Result<Columns<'_>> {
        let err = |e: PolarsError| Error::Manifest {
            path: self.location.clone(),
            msg: e.to_string(),
        };
        Ok(Columns {
            id: self.column("id")?.str().map_err(err)?,
            file: self.column("file")?.str().map_err(err)?,
            row: self.column("row")?.u64().map_err(err)?,
            keep: self.column("keep")?.bool().map_err(err)?,
            cluster: self.column("cluster_id")?.u64().map_err(err)?,
            duplicate_of: self.column("duplicate_of")?.str().map_err(err)?,
            similarity: self.column("similarity")?.f32().map_err(err)?,
            batch: self
                .frame
                .column("duplicate_of_batch")
                .ok()
                .and_then(|c| c.str().ok()),
        })
    }

    /// The manifest's rows per input shard: for each recorded input, the manifest row numbers
    /// of its rows in row order (every row of every shard appears exactly once).
    pub fn rows_by_input(&self) -> Result<Vec<Vec<u32>>> {
        let err = |msg: String| Error::Manifest {
            path: self.location.clone(),
            msg,
        };
        let position: std::collections::HashMap<&str, usize> = self
            .inputs
            .iter()
            .enumerate()
            .map(|(i, f)| (f.file.as_str(), i))
            .collect();
        let mut out: Vec<Vec<u32>> = self
            .inputs
            .iter()
            .map(|f| vec![u32::MAX; f.rows as usize])
            .collect();
        let files = self.column("file")?.str().map_err(|e| err(e.to_string()))?;
        let rows = self.column("row")?.u64().map_err(|e| err(e.to_string()))?;
        for (m, (f, r)) in files.iter().zip(rows.iter()).enumerate() {
            let (Some(f), Some(r)) = (f, r) else {
                return Err(err(format!("row {m} has no file or row")));
            };
            let i = *position.get(f).ok_or_else(|| {
                err(format!(
                    "row {m} names '{f}', which is not a recorded input"
                ))
            })?;
            let slot = out[i]
                .get_mut(r as usize)
                .ok_or_else(|| err(format!("row {m} names row {r} of '{f}', past its end")))?;
            if *slot != u32::MAX {
                return Err(err(format!("row {r} of '{f}' appears twice")));
            }
            *slot = m as u32;
        }
        if let Some((i, _)) = out.iter().enumerate().find(|(_, v)| v.contains(&u32::MAX)) {
            return Err(err(format!(
                "some rows of '{}' are missing",
                self.inputs[i].file
            )));
        }
        Ok(out)
    }
}

/// The texts of rows `rows` of a shard (in the order given), read with the run's text column.
pub fn texts(file: &str, rows: &[u64], cfg: &Config) -> Result<Vec<Option<String>>> {
    let bytes = if object::is_url(file) {
        object::get_all(&[file.to_string()])?.pop()
    } else {
        None
    };
    let shard = input::read_shard(file, bytes, None, cfg)?;
    Ok(rows
        .iter()
        .map(|&r| shard.text.get(r as usize).map(str::to_string))
        .collect())
}
