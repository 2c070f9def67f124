//! The reference's files: listed for the plan (each checked: its columns or fields, its size
//! and fingerprint), and their items read back (all, for the table; a few, for `explain` and the
//! report), Parquet or JSON Lines.

use polars::prelude::*;
use rayon::prelude::*;

use crate::config::ReferenceConfig;
use crate::error::{Error, Result};
use crate::io::input::{self, column_list, Footer};
use crate::io::jsonl;
use crate::io::object;

use super::ReferenceFile;

/// The reference files of `cfg` (each glob must match a file), with their row counts and
/// footers, after checking their columns.
pub(crate) fn list(cfg: &ReferenceConfig) -> Result<Vec<ReferenceFile>> {
    let mut names = Vec::new();
    for g in &cfg.globs {
        let found = input::expand_inputs(std::slice::from_ref(g)).map_err(|e| match e {
            Error::NoInput(p) => Error::Reference {
                file: p,
                msg: "matches no file; check the path or glob (quote it so the shell does not expand it) and that the files exist".into(),
                cause: None,
            },
            other => reference_err(g, other),
        })?;
        names.extend(found);
    }
    names.sort();
    names.dedup();
    names
        .par_iter()
        .map(|f| {
            if jsonl::is_jsonl(f) {
                let (bytes, fingerprint) = jsonl::identity(f).map_err(|e| reference_err(f, e))?;
                let rows = jsonl::count_items(f, cfg).map_err(|e| reference_err(f, e))?;
                return Ok(ReferenceFile {
                    file: f.clone(),
                    rows,
                    bytes,
                    fingerprint,
                });
            }
            let footer = Footer::read(f).map_err(|e| reference_err(f, e))?;
            let mut lf = input::scan(f, None).map_err(|e| reference_err(f, e))?;
            let schema = lf.collect_schema().map_err(|e| polars_err(f, e))?;
            check_columns(f, &schema, cfg)?;
            // The footer read above holds the row count: no second read of the file.
            let rows = footer
                .metadata(f)
                .map_err(|e| reference_err(f, e))?
                .num_rows as u64;
            Ok(ReferenceFile {
                file: f.clone(),
                rows,
                bytes: footer.file_bytes,
                fingerprint: footer.fingerprint(),
            })
        })
        .collect()
}

/// One reference item as read back for `explain` and the report.
#[derive(Debug, Clone)]
pub(crate) struct ItemRow {
    pub id: String,
    pub file: String,
    pub row: u64,
    pub text: String,
}

/// The items whose id is one of `ids` in the reference `files` (as a run recorded them: each
/// is checked unchanged, and read once).
pub(crate) fn items_of(
    files: &[ReferenceFile],
    cfg: &ReferenceConfig,
    ids: &[&str],
) -> Result<Vec<ItemRow>> {
    let wanted: ahash::AHashSet<&str> = ids.iter().copied().collect();
    let mut out = Vec::new();
    for f in files {
        let (all, texts) = read_items(f, cfg)?;
        for (r, id) in all.into_iter().enumerate() {
            if wanted.contains(id.as_str()) {
                out.push(ItemRow {
                    id,
                    file: f.file.clone(),
                    row: r as u64,
                    text: texts.get(r).unwrap_or("").to_string(),
                });
            }
        }
    }
    Ok(out)
}

/// Items `items` (positions in the reference: files in order, rows in order), in the order
/// asked (None past the end); each file opened once (an object is fetched whole), and read in
/// slices around the rows asked.
pub(crate) fn items_at(
    files: &[ReferenceFile],
    cfg: &ReferenceConfig,
    items: &[u64],
) -> Result<Vec<Option<ItemRow>>> {
    // Rows this close are read in one slice; farther ones each in their own (the reader
    // decodes only the pages a slice holds, so a few items of a large file cost a few pages).
    const NEAR: u64 = 1024;
    let mut out = vec![None; items.len()];
    let mut first = 0u64;
    for f in files {
        let mut rows: Vec<(u64, usize)> = (items.iter().enumerate())
            .filter(|(_, &i)| (first..first + f.rows).contains(&i))
            .map(|(k, &i)| (i - first, k))
            .collect();
        first += f.rows;
        if rows.is_empty() {
            continue;
        }
        rows.sort_unstable();
        let file = open(f, cfg)?;
        // A JSON Lines file is a stream, read from its start for every slice: one slice.
        let near = match file.format {
            Format::Parquet { .. } => NEAR,
            Format::JsonLines(_) => u64::MAX,
        };
        for run in rows.chunk_by(|a, b| b.0 - a.0 <= near) {
            let (lo, hi) = (run[0].0, run[run.len() - 1].0);
            let (ids, texts) = file.rows(Some((lo, hi + 1 - lo)))?;
            for &(row, k) in run {
                let at = (row - lo) as usize;
                if let (Some(id), Some(text)) = (ids.get(at), texts.get(at)) {
                    out[k] = Some(ItemRow {
                        id: id.clone(),
                        file: f.file.clone(),
                        row,
                        text: text.to_string(),
                    });
                }
            }
        }
    }
    Ok(out)
}

/// The id and text columns of one reference file, after checking it is the one the plan listed.
pub(super) fn read_items(
    f: &ReferenceFile,
    cfg: &ReferenceConfig,
) -> Result<(Vec<String>, StringChunked)> {
    read_rows(f, cfg, None)
}

/// [`read_items`] of every row, or of the rows `(first, count)`.
fn read_rows(
    f: &ReferenceFile,
    cfg: &ReferenceConfig,
    span: Option<(u64, u64)>,
) -> Result<(Vec<String>, StringChunked)> {
    open(f, cfg)?.rows(span)
}

/// A reference file opened for reading ([`open`]); its rows are read by [`Opened::rows`].
struct Opened<'a> {
    f: &'a ReferenceFile,
    cfg: &'a ReferenceConfig,
    format: Format,
}

/// How an opened reference file is read.
enum Format {
    Parquet {
        lf: Box<LazyFrame>,
        has_id: bool,
    },
    /// Its bytes when fetched from object storage (a local file is streamed).
    JsonLines(Option<Vec<u8>>),
}

/// Checks that a reference file is the one the plan listed.
pub(super) fn check_unchanged(f: &ReferenceFile) -> Result<()> {
    input::check_unchanged(&f.file, f.bytes, &f.fingerprint, |what| Error::Reference {
        file: f.file.clone(),
        msg: format!("changed since the run was planned ({what}); run again, which plans anew"),
        cause: None,
    })
}

/// Opens a reference file after checking it is the one the plan listed and its columns (an
/// object is fetched whole, once).
fn open<'a>(f: &'a ReferenceFile, cfg: &'a ReferenceConfig) -> Result<Opened<'a>> {
    check_unchanged(f)?;
    let bytes = if object::is_url(&f.file) {
        object::get_all(std::slice::from_ref(&f.file))
            .map_err(|e| reference_err(&f.file, e))?
            .pop()
    } else {
        None
    };
    if jsonl::is_jsonl(&f.file) {
        let format = Format::JsonLines(bytes);
        return Ok(Opened { f, cfg, format });
    }
    let mut lf = input::scan(&f.file, bytes).map_err(|e| reference_err(&f.file, e))?;
    let schema = lf.collect_schema().map_err(|e| polars_err(&f.file, e))?;
    let has_id = check_columns(&f.file, &schema, cfg)?;
    let format = Format::Parquet {
        lf: Box::new(lf),
        has_id,
    };
    Ok(Opened { f, cfg, format })
}

impl Opened<'_> {
    /// The ids and texts of every row, or of the rows `(first, count)` (the reader decodes
    /// only the pages that hold them).
    fn rows(&self, span: Option<(u64, u64)>) -> Result<(Vec<String>, StringChunked)> {
        let (f, cfg) = (self.f, self.cfg);
        let (lf, has_id) = match &self.format {
            Format::Parquet { lf, has_id } => (lf, *has_id),
            Format::JsonLines(bytes) => {
                return jsonl::read_items(&f.file, bytes.clone(), cfg, span)
                    .map_err(|e| reference_err(&f.file, e))
            }
        };
        let mut select = vec![col(cfg.text_column.as_str())];
        if has_id {
            select.push(col(cfg.id_column.as_str()).cast(DataType::String));
        }
        let mut lf = LazyFrame::clone(lf);
        if let Some((first, count)) = span {
            lf = lf.slice(first as i64, count as u32);
        }
        let df = lf
            .select(select)
            .collect()
            .map_err(|e| polars_err(&f.file, e))?;
        let first = span.map_or(0, |s| s.0);
        let column = |name: &str| {
            input::string_column(&df, name, &f.file).map_err(|e| reference_err(&f.file, e))
        };
        let texts = column(&cfg.text_column)?;
        let ids = if has_id {
            let c = column(&cfg.id_column)?;
            (c.iter().zip(first..))
                .map(|(id, r)| id.map_or_else(|| format!("{}:{r}", f.file), str::to_string))
                .collect()
        } else {
            (first..first + texts.len() as u64)
                .map(|r| format!("{}:{r}", f.file))
                .collect()
        };
        Ok((ids, texts))
    }
}

/// Checks a reference file's columns; returns whether it has the id column.
fn check_columns(file: &str, schema: &Schema, cfg: &ReferenceConfig) -> Result<bool> {
    let err = |msg: String| Error::Reference {
        file: file.to_string(),
        msg,
        cause: None,
    };
    match schema.get(&cfg.text_column) {
        None => {
            return Err(err(format!(
                "has no column '{}' (its columns are: {}); name the text column with --reference-text-column",
                cfg.text_column,
                column_list(schema)
            )))
        }
        Some(dt) if *dt != DataType::String => {
            return Err(err(format!(
                "column '{}' has type {dt}, expected a string (utf8) column of item texts; name another with --reference-text-column",
                cfg.text_column
            )))
        }
        Some(_) => {}
    }
    match schema.get(&cfg.id_column) {
        Some(dt) if dt.is_string() || dt.is_integer() => Ok(true),
        Some(dt) => Err(err(format!(
            "column '{}' has type {dt}, expected string or integer ids; name another with --reference-id-column",
            cfg.id_column
        ))),
        None if cfg.id_column_explicit => Err(err(format!(
            "has no column '{}' (its columns are: {}); name the id column with --reference-id-column",
            cfg.id_column,
            column_list(schema)
        ))),
        None => Ok(false),
    }
}

/// An error reading a reference file, named as the reference's.
fn reference_err(file: &str, e: Error) -> Error {
    let msg = match &e {
        Error::Parquet { source, .. } => format!("cannot be read as Parquet ({source}); check that it is a complete Parquet file or leave it out of --reference"),
        // Storage stays storage (retryable), and names the object.
        Error::ObjectStore { .. } => return e,
        other => other.to_string(),
    };
    Error::Reference {
        file: file.to_string(),
        msg,
        cause: Some(Box::new(e)),
    }
}

fn polars_err(file: &str, e: PolarsError) -> Error {
    reference_err(
        file,
        Error::Parquet {
            file: file.to_string(),
            source: e.into(),
        },
    )
}
