//! Input: expanding globs into a sorted list of shards and reading a shard's columns with polars.
//!
//! Invariant: the shard list is sorted and free of repeats, so the global document index (shard
//! order, then row order) is the same on every run over the same files.

use polars::prelude::*;

use crate::config::{Config, Keep};
use crate::error::{Error, ReadError, Result};
use crate::io::{jsonl, object};

mod identity;

pub(crate) use crate::io::shard::Shard;
use crate::io::shard::{ranked_priority, Label};

pub(crate) use identity::{check_unchanged, identity, Footer};

/// Expands each input pattern (a local path or glob, or an `s3://` URL glob) into files; the union,
/// sorted and deduplicated.
/// Every pattern must match at least one file.
pub fn expand_inputs(patterns: &[String]) -> Result<Vec<String>> {
    let mut files = Vec::new();
    for pattern in patterns {
        let before = files.len();
        if object::is_url(pattern) {
            files.extend(object::list_glob(pattern)?);
        } else if pattern.contains("://") {
            return Err(Error::Config(format!(
                "input '{pattern}': only local paths and s3:// URLs are supported"
            )));
        } else if pattern.contains(['*', '?', '[']) {
            let paths = glob::glob(pattern).map_err(|source| Error::BadGlob {
                pattern: pattern.clone(),
                source,
            })?;
            for p in paths {
                let p = p.map_err(|e| Error::Parquet {
                    file: e.path().display().to_string(),
                    source: std::io::Error::from(e).into(),
                })?;
                if p.is_file() {
                    files.push(p.to_string_lossy().into_owned());
                }
            }
        } else if std::path::Path::new(pattern).is_file() {
            files.push(pattern.clone());
        }
        if files.len() == before {
            return Err(Error::NoInput(pattern.clone()));
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

fn parquet_err(file: &str, e: PolarsError) -> Error {
    let file = file.to_string();
    // Text that is not UTF-8 is a fault of the data, not of the file: say so.
    if e.to_string().contains("invalid UTF-8") {
        return Error::InvalidUtf8 {
            file,
            source: e.into(),
        };
    }
    Error::Parquet {
        file,
        source: e.into(),
    }
}

pub(crate) fn column_list(schema: &Schema) -> String {
    schema
        .iter_names()
        .map(|n| n.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// An input shard as the run read it (recorded in the manifest's metadata).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct RecordedInput {
    pub file: String,
    pub rows: u64,
    pub bytes: u64,
    pub fingerprint: String,
}

impl RecordedInput {
    /// Checks that the shard is still the one the run read: same size and fingerprint (a
    /// Parquet footer holds the row count and every column chunk's offset, size and
    /// statistics). Gives a Parquet shard's footer; `None` for JSON Lines.
    pub(crate) fn check_unchanged(&self) -> Result<Option<Footer>> {
        let changed = |what| Error::ShardChanged {
            file: self.file.clone(),
            what,
        };
        if jsonl::is_jsonl(&self.file) {
            check_unchanged(&self.file, self.bytes, &self.fingerprint, changed)?;
            return Ok(None);
        }
        Footer::read_unchanged(&self.file, self.bytes, &self.fingerprint, changed).map(Some)
    }
}

/// Opens a shard lazily: `bytes`, when given, is the file's content already fetched (object
/// storage); otherwise the file (local path or `s3://` URL) is scanned by polars.
pub(crate) fn scan(file: &str, bytes: Option<Vec<u8>>) -> Result<LazyFrame> {
    // Hive partitioning off: a shard is one file, whatever directory names it sits under.
    let args = ScanArgsParquet {
        hive_options: HiveOptions::new_disabled(),
        ..ScanArgsParquet::default()
    };
    let lf = match bytes {
        Some(b) => LazyFrame::scan_parquet_sources(
            ScanSources::Buffers(std::sync::Arc::from(vec![b.into()])),
            args,
        ),
        None => LazyFrame::scan_parquet(PlRefPath::new(file), args),
    };
    lf.map_err(|e| parquet_err(file, e))
}

/// The columns a run reads from a shard, checked against the shard's schema.
struct Selection {
    exprs: Vec<Expr>,
    has_id: bool,
    priority_column: Option<String>,
}

impl Label {
    /// The expression reading column `c` as strings, after checking it exists with a label type.
    fn select(self, file: &str, schema: &Schema, c: &str) -> Result<Expr> {
        match schema.get(c) {
            Some(dt) if dt.is_string() || dt.is_integer() || dt.is_bool() => {
                Ok(col(c).cast(DataType::String).alias(self.alias()))
            }
            Some(dt) => Err(Error::ColumnType {
                file: file.to_string(),
                column: c.to_string(),
                found: dt.to_string(),
                expected: "string, integer or boolean",
                hint: self.hint(),
            }),
            None => Err(Error::MissingColumn {
                file: file.to_string(),
                column: c.to_string(),
                available: column_list(schema),
                flag: self.flag(),
            }),
        }
    }

    /// The column as read (None when the run does not use it).
    fn read(self, df: &DataFrame, cfg: &Config, file: &str) -> Result<Option<StringChunked>> {
        if self.column(cfg).is_none() {
            return Ok(None);
        }
        let pe = |e| parquet_err(file, e);
        let c = df.column(self.alias()).map_err(pe)?.str().map_err(pe)?;
        Ok(Some(c.rechunk().into_owned()))
    }
}

/// Checks the shard's columns (names and types) and lists what to read.
fn select_columns(file: &str, schema: &Schema, cfg: &Config) -> Result<Selection> {
    let text_dtype = schema
        .get(&cfg.text_column)
        .ok_or_else(|| Error::MissingColumn {
            file: file.to_string(),
            column: cfg.text_column.clone(),
            available: column_list(schema),
            flag: "text-column",
        })?;
    if *text_dtype != DataType::String {
        return Err(Error::ColumnType {
            file: file.to_string(),
            column: cfg.text_column.clone(),
            found: text_dtype.to_string(),
            expected: "string (utf8)",
            hint: "store the text as a UTF-8 string column, or name the right column with --text-column",
        });
    }
    let mut select = vec![col(cfg.text_column.as_str())];

    let has_id = match schema.get(&cfg.id_column) {
        Some(dt) if dt.is_string() || dt.is_integer() => true,
        Some(dt) => {
            return Err(Error::ColumnType {
                file: file.to_string(),
                column: cfg.id_column.clone(),
                found: dt.to_string(),
                expected: "string or integer",
                hint: "choose another column with --id-column",
            })
        }
        None if cfg.id_column_explicit => {
            return Err(Error::MissingColumn {
                file: file.to_string(),
                column: cfg.id_column.clone(),
                available: column_list(schema),
                flag: "id-column",
            })
        }
        None => false,
    };
    if has_id {
        select.push(col(cfg.id_column.as_str()).cast(DataType::String));
    }

    let priority_column = match &cfg.keep {
        Keep::Column(c) => Some(c.as_str()),
        _ => None,
    };
    if let Some(pc) = priority_column {
        match schema.get(pc) {
            Some(dt) if dt.is_primitive_numeric() || dt.is_bool() => {
                select.push(col(pc).cast(DataType::Float64));
            }
            Some(dt) => {
                return Err(Error::ColumnType {
                    file: file.to_string(),
                    column: pc.to_string(),
                    found: dt.to_string(),
                    expected: "numeric (the largest value is kept)",
                    hint: "--keep takes first, longest, a numeric priority column, or COLUMN=v1,v2,... to rank the values of a column of labels",
                })
            }
            None => {
                return Err(Error::MissingColumn {
                    file: file.to_string(),
                    column: pc.to_string(),
                    available: column_list(schema),
                    flag: "keep",
                })
            }
        }
    }

    for label in Label::ALL {
        if let Some(c) = label.column(cfg) {
            select.push(label.select(file, schema, c)?);
        }
    }

    Ok(Selection {
        exprs: select,
        has_id,
        priority_column: priority_column.map(str::to_string),
    })
}

/// What a plan needs to know of an input file.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counted {
    pub rows: u64,
    /// Rows of each row group (local files only: an object-store shard is fetched and read
    /// whole, so they do not matter there).
    pub row_groups: Vec<u64>,
    /// Plain JSON Lines: where each row group after the first starts.
    pub group_starts: Vec<jsonl::GroupStart>,
    /// JSON Lines: lines of only whitespace, which are no documents.
    pub blank_lines: u64,
    /// The file's size and fingerprint ([`identity()`]).
    pub bytes: u64,
    pub fingerprint: String,
    /// The documents are counted by the signatures task that reads the file, not by the plan
    /// ([`jsonl::counted_by_tasks`]): `rows` and what follows from them are 0 until then.
    pub uncounted: bool,
}

/// What the plan reads of a file its tasks count: size, fingerprint, the first document's
/// fields ([`jsonl::list_uncounted`]).
pub(crate) fn list_uncounted(file: &str, cfg: &Config) -> Result<Counted> {
    let (bytes, fingerprint) = jsonl::list_uncounted(file, cfg)?;
    Ok(Counted {
        bytes,
        fingerprint,
        uncounted: true,
        ..Counted::default()
    })
}

/// Counts the documents of an input file, Parquet (from its footer, after checking its columns)
/// or JSON Lines (reading it through, checking the first document's fields).
pub(crate) fn count_rows(file: &str, cfg: &Config) -> Result<Counted> {
    let (bytes, fingerprint, c) = if jsonl::is_jsonl(file) {
        let (bytes, fingerprint) = identity(file)?;
        (bytes, fingerprint, jsonl::count_rows(file, cfg)?)
    } else {
        let footer = Footer::read(file)?;
        let (rows, groups) = count_parquet_rows(file, &footer, cfg)?;
        let c = jsonl::Counted {
            rows,
            groups,
            ..Default::default()
        };
        (footer.file_bytes, footer.fingerprint(), c)
    };
    Ok(Counted {
        rows: c.rows,
        row_groups: c.groups,
        group_starts: c.starts,
        blank_lines: c.blank_lines,
        bytes,
        fingerprint,
        uncounted: false,
    })
}

/// Number of rows of a Parquet shard and of each of its row groups, from its footer, after
/// checking its columns. The row groups are listed for local files only.
fn count_parquet_rows(file: &str, footer: &Footer, cfg: &Config) -> Result<(u64, Vec<u64>)> {
    let meta = footer.metadata(file)?;
    let arrow =
        polars_parquet::arrow::read::infer_schema(&meta).map_err(|e| parquet_err(file, e))?;
    select_columns(file, &Schema::from_arrow_schema(&arrow), cfg)?;
    let n = meta.num_rows as u64;
    if object::is_url(file) {
        return Ok((n, Vec::new()));
    }
    let groups: Vec<u64> = (meta.row_groups.iter())
        .map(|g| g.num_rows() as u64)
        .collect();
    if groups.iter().sum::<u64>() != n {
        return Err(Error::Parquet {
            file: file.to_string(),
            source: ReadError::Invalid(format!(
                "row groups hold {} rows, the footer says {n}",
                groups.iter().sum::<u64>()
            )),
        });
    }
    Ok((n, groups))
}

/// A string column of a frame read from `file`, in one chunk.
pub(crate) fn string_column(df: &DataFrame, name: &str, file: &str) -> Result<StringChunked> {
    let pe = |e| parquet_err(file, e);
    let c = df.column(name).map_err(pe)?.str().map_err(pe)?;
    Ok(c.rechunk().into_owned())
}

/// The `--report-group` column of a whole shard (None when the run has none): read alone from
/// Parquet; from JSON Lines, with the rest of each line.
pub(crate) fn read_groups(
    file: &str,
    bytes: Option<Vec<u8>>,
    cfg: &Config,
) -> Result<Option<StringChunked>> {
    let Some(column) = Label::ReportGroup.column(cfg) else {
        return Ok(None);
    };
    if jsonl::is_jsonl(file) {
        return Ok(jsonl::read_shard(file, bytes, None, None, cfg)?.group);
    }
    let mut lf = scan(file, bytes)?;
    let schema = lf.collect_schema().map_err(|e| parquet_err(file, e))?;
    let expr = Label::ReportGroup.select(file, &schema, column)?;
    let df = (lf.select([expr]).collect()).map_err(|e| parquet_err(file, e))?;
    Label::ReportGroup.read(&df, cfg, file)
}

/// Reads the text, id and priority columns of one shard, Parquet or JSON Lines (rows `rows` only,
/// when given), checking names and types. `bytes`, when given, is the file's content already
/// fetched (object storage); otherwise the file is scanned.
pub(crate) fn read_shard(
    file: &str,
    bytes: Option<Vec<u8>>,
    rows: Option<std::ops::Range<u64>>,
    start: Option<&jsonl::GroupStart>,
    cfg: &Config,
) -> Result<Shard> {
    if jsonl::is_jsonl(file) {
        return jsonl::read_shard(file, bytes, rows, start, cfg);
    }
    let mut lf = scan(file, bytes)?;
    let schema = lf.collect_schema().map_err(|e| parquet_err(file, e))?;
    let Selection {
        exprs: select,
        has_id,
        priority_column,
    } = select_columns(file, &schema, cfg)?;
    let priority_column = priority_column.as_deref();
    if let Some(r) = &rows {
        lf = lf.slice(r.start as i64, (r.end - r.start) as IdxSize);
    }
    let df = lf
        .select(select)
        .collect()
        .map_err(|e| parquet_err(file, e))?;
    let pe = |e| parquet_err(file, e);
    let text = string_column(&df, &cfg.text_column, file)?;
    let id = if has_id {
        Some(
            df.column(&cfg.id_column)
                .map_err(pe)?
                .str()
                .map_err(pe)?
                .rechunk()
                .into_owned(),
        )
    } else {
        None
    };
    let priority = match priority_column {
        Some(pc) => Some(
            df.column(pc)
                .map_err(pe)?
                .f64()
                .map_err(pe)?
                .rechunk()
                .into_owned(),
        ),
        None => None,
    };
    let [partition, across, group, rank] = Label::ALL.map(|l| l.read(&df, cfg, file));
    let priority = match (&cfg.keep, rank?) {
        (Keep::Ranked { values, .. }, Some(rank)) => Some(ranked_priority(&rank, values)),
        _ => priority,
    };
    Ok(Shard {
        first_row: rows.map_or(0, |r| r.start),
        file: file.to_string(),
        text,
        id,
        priority,
        group: group?,
        partition: partition?,
        across: across?,
        line: None,
    })
}
