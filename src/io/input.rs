//! Input: expanding globs into a sorted list of shards and reading a shard's columns with polars.
//!
//! Invariant: the shard list is sorted and free of repeats, so the global document index (shard
//! order, then row order) is the same on every run over the same files.

use polars::prelude::*;

use crate::config::{Config, Keep};
use crate::error::{Error, ReadError, Result};
use crate::io::object;

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

/// Reads a byte range of one file.
type RangeRead = dyn Fn(std::ops::Range<u64>) -> Result<Vec<u8>>;

/// The footer of a Parquet file (its metadata: schema, row groups, every column chunk's offset,
/// size, codec and statistics) and the file's size.
pub(crate) struct Footer {
    pub file_bytes: u64,
    /// The footer's bytes, without the trailing length and magic.
    pub raw: Vec<u8>,
}

impl Footer {
    /// Reads the footer of a local file or an `s3://` object (two small reads).
    pub(crate) fn read(file: &str) -> Result<Footer> {
        let err = |e: ReadError| Error::Parquet {
            file: file.to_string(),
            source: e,
        };
        let (file_bytes, read): (u64, Box<RangeRead>) = if object::is_url(file) {
            let url = file.to_string();
            let size = object::size(&url)?;
            let read = move |r: std::ops::Range<u64>| {
                Ok(object::get_ranges(&url, &[r])?.pop().unwrap_or_default())
            };
            (size, Box::new(read))
        } else {
            use std::os::unix::fs::FileExt;
            let f = std::fs::File::open(file).map_err(|e| err(e.into()))?;
            let size = f.metadata().map_err(|e| err(e.into()))?.len();
            let name = file.to_string();
            let read = move |r: std::ops::Range<u64>| {
                let mut buf = vec![0u8; (r.end - r.start) as usize];
                f.read_exact_at(&mut buf, r.start)
                    .map_err(|e| Error::Parquet {
                        file: name.clone(),
                        source: e.into(),
                    })?;
                Ok(buf)
            };
            (size, Box::new(read))
        };
        let not_parquet = || {
            err(ReadError::Invalid(
                "not a Parquet file (no PAR1 footer)".into(),
            ))
        };
        if file_bytes < 12 {
            return Err(not_parquet());
        }
        let tail = read(file_bytes - 8..file_bytes)?;
        if tail[4..] != *b"PAR1" {
            return Err(not_parquet());
        }
        let len = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) as u64;
        if len + 12 > file_bytes {
            return Err(not_parquet());
        }
        let raw = read(file_bytes - 8 - len..file_bytes - 8)?;
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

/// The columns of one shard that the pipeline uses, each as one contiguous chunk.
pub struct Shard {
    /// The file, as given.
    pub file: String,
    /// Text column (nulls allowed).
    pub text: StringChunked,
    /// Id column cast to strings, if the shard has one.
    pub id: Option<StringChunked>,
    /// Priority column for `--keep COLUMN`, cast to f64.
    pub priority: Option<Float64Chunked>,
    /// The `--report-group` column, cast to strings.
    pub group: Option<StringChunked>,
    /// The `--partition-by` column, cast to strings.
    pub partition: Option<StringChunked>,
    /// The `--across` column, cast to strings.
    pub across: Option<StringChunked>,
    /// Row of the file that row 0 here is (non-zero when a row range was read).
    pub first_row: u64,
}

impl Shard {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.text.len()
    }

    /// True for a shard without rows.
    pub fn is_empty(&self) -> bool {
        self.text.len() == 0
    }
}

/// `--keep COLUMN=v1,v2,...` as priorities (the largest is kept): the first value listed
/// highest, values not listed 0, nulls null (they lose).
fn ranked_priority(rank: &StringChunked, values: &[String]) -> Float64Chunked {
    let n = values.len();
    rank.iter()
        .map(|v| {
            v.map(|v| {
                values
                    .iter()
                    .position(|x| x == v)
                    .map_or(0.0, |i| (n - i) as f64)
            })
        })
        .collect()
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
    /// Checks that the shard is still the one the run read: same size and footer (which holds
    /// the row count and every column chunk's offset, size and statistics).
    pub(crate) fn check_unchanged(&self) -> Result<Footer> {
        Footer::read_unchanged(&self.file, self.bytes, &self.fingerprint, |what| {
            Error::ShardChanged {
                file: self.file.clone(),
                what,
            }
        })
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

/// A column of labels a run reads beside the text: string, integer or boolean values, read as
/// strings (an integer 7 and a string "7" are one value; null stays null).
#[derive(Debug, Clone, Copy)]
enum Label {
    PartitionBy,
    Across,
    ReportGroup,
    /// `--keep COLUMN=v1,v2,...`.
    KeepRank,
}

impl Label {
    /// In the order they are checked: the report group defaults to one of the others, whose
    /// flag an error should name.
    const ALL: [Label; 4] = [
        Label::PartitionBy,
        Label::Across,
        Label::ReportGroup,
        Label::KeepRank,
    ];

    fn column(self, cfg: &Config) -> Option<&str> {
        match self {
            Label::ReportGroup => cfg.report_group.as_deref(),
            Label::PartitionBy => cfg.partition_by.as_deref(),
            Label::Across => cfg.across.as_deref(),
            Label::KeepRank => match &cfg.keep {
                Keep::Ranked { column, .. } => Some(column),
                _ => None,
            },
        }
    }

    /// The flag that names the column.
    fn flag(self) -> &'static str {
        match self {
            Label::ReportGroup => "report-group",
            Label::PartitionBy => "partition-by",
            Label::Across => "across",
            Label::KeepRank => "keep",
        }
    }

    /// Name under which the column is read (it may be the id column, or another label's, too).
    fn alias(self) -> &'static str {
        match self {
            Label::ReportGroup => "__corpus_dedup_group",
            Label::PartitionBy => "__corpus_dedup_partition",
            Label::Across => "__corpus_dedup_across",
            Label::KeepRank => "__corpus_dedup_rank",
        }
    }

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
                hint: match self {
                    Label::ReportGroup => "--report-group takes a column of labels such as a domain or source name",
                    Label::PartitionBy => "--partition-by takes a column of labels such as a language or crawl snapshot (a float or nested column is no label: derive a string column from it first)",
                    Label::Across => "--across takes a column of labels such as a source or dataset name (a float or nested column is no label: derive a string column from it first)",
                    Label::KeepRank => "--keep COLUMN=v1,v2,... ranks the values of a column of labels; a numeric column is --keep COLUMN (largest wins)",
                },
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

/// Number of rows of a shard and of each of its row groups, read from its footer, after checking
/// its columns (for the plan). The row groups are listed for local files only (an object-store
/// shard is fetched and read whole, so they do not matter there).
pub(crate) fn count_rows(file: &str, cfg: &Config) -> Result<(u64, Vec<u64>)> {
    let mut lf = scan(file, None)?;
    let schema = lf.collect_schema().map_err(|e| parquet_err(file, e))?;
    select_columns(file, &schema, cfg)?;
    let df = lf
        .select([len()])
        .collect()
        .map_err(|e| parquet_err(file, e))?;
    let n = df
        .columns()
        .first()
        .and_then(|c| c.get(0).ok())
        .and_then(|v| v.extract::<u64>());
    let n = n.ok_or_else(|| Error::Parquet {
        file: file.to_string(),
        source: ReadError::Invalid("no row count in the footer".into()),
    })?;
    if object::is_url(file) {
        return Ok((n, Vec::new()));
    }
    let f = std::fs::File::open(file).map_err(|e| Error::Parquet {
        file: file.to_string(),
        source: e.into(),
    })?;
    let mut reader = ParquetReader::new(f);
    let groups: Vec<u64> = reader
        .get_metadata()
        .map_err(|e| parquet_err(file, e))?
        .row_groups
        .iter()
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

/// Reads the text, id and priority columns of one Parquet shard (rows `rows` only, when given),
/// checking names and types. `bytes`, when given, is the file's content already fetched (object
/// storage); otherwise the file is scanned.
pub(crate) fn read_shard(
    file: &str,
    bytes: Option<Vec<u8>>,
    rows: Option<std::ops::Range<u64>>,
    cfg: &Config,
) -> Result<Shard> {
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
    })
}
