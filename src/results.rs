//! A finished run's output read back, for `apply`, `explain` and `report`: the manifest with the
//! settings and input shards its metadata records, and the texts of chosen rows.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use polars::prelude::*;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::io::{input, jsonl, object};

/// Manifest metadata key of the input shards as the run read them ([`inputs_json`]).
pub(crate) const INPUTS_KEY: &str = "corpus_dedup.inputs";

/// Metadata key of the benchmark reference files a `--reference` run read (absent otherwise).
pub(crate) const REFERENCE_KEY: &str = "corpus_dedup.reference";

/// The input shards as the run read them: name, rows, size and footer fingerprint of each, so
/// `apply` can refuse a shard that changed since.
pub(crate) fn recorded_inputs(plan: &crate::plan::Plan) -> Vec<RecordedInput> {
    plan.files
        .iter()
        .map(|f| RecordedInput {
            file: f.file.clone(),
            rows: f.rows,
            bytes: f.bytes,
            fingerprint: f.fingerprint.clone(),
        })
        .collect()
}

/// [`recorded_inputs`] as the manifest's metadata holds them.
pub(crate) fn inputs_json(plan: &crate::plan::Plan) -> serde_json::Value {
    serde_json::to_value(recorded_inputs(plan)).unwrap_or_default()
}

pub(crate) use crate::io::input::RecordedInput;

/// The columns of a manifest (`duplicate_of_batch` only with `--index`).
pub(crate) struct Columns<'a> {
    pub id: &'a StringChunked,
    pub file: &'a StringChunked,
    pub row: &'a UInt64Chunked,
    pub keep: &'a BooleanChunked,
    pub cluster: &'a UInt64Chunked,
    pub duplicate_of: &'a StringChunked,
    pub similarity: &'a Float32Chunked,
    pub batch: Option<&'a StringChunked>,
    /// Absent in manifests written before it existed.
    pub cluster_size: Option<&'a UInt32Chunked>,
    /// `--reference` runs only.
    pub contaminated_by: Option<&'a StringChunked>,
    pub contamination: Option<&'a Float32Chunked>,
}

/// A manifest read back.
pub(crate) struct Manifest {
    /// Where it was read from.
    pub location: String,
    pub frame: DataFrame,
    /// The run's configuration (thread count and output location are not recorded).
    pub config: Config,
    /// The input shards, in the run's order.
    pub inputs: Vec<RecordedInput>,
    /// `--reference`: the reference files as the run read them.
    pub reference: Vec<crate::reference::ReferenceFile>,
}

/// Where a manifest's bytes are: a local file (read in place) or an object fetched whole.
enum Source {
    File(std::fs::File),
    Bytes(Vec<u8>),
}

/// A Parquet reader over a manifest's bytes.
type Reader<'a> = ParquetReader<Box<dyn polars::io::mmap::MmapBytesReader + 'a>>;

impl Source {
    fn reader(&self) -> Result<Reader<'_>> {
        let inner: Box<dyn polars::io::mmap::MmapBytesReader + '_> = match self {
            Source::File(f) => Box::new(std::io::BufReader::new(f)),
            Source::Bytes(b) => Box::new(std::io::Cursor::new(b.as_slice())),
        };
        Ok(ParquetReader::new(inner))
    }
}

/// A manifest's rows, read a few columns and a row group at a time (the report's passes: what
/// it holds does not grow with the manifest's strings).
pub(crate) struct ManifestRows {
    location: String,
    source: Source,
    metadata: polars::io::parquet::metadata::FileMetadataRef,
    columns: Vec<String>,
    /// A manifest of one row group, read once with every column for all passes.
    whole: std::cell::OnceCell<DataFrame>,
}

impl ManifestRows {
    /// Whether the manifest has the column `name` (some exist only with some options).
    pub(crate) fn has(&self, name: &str) -> bool {
        self.columns.iter().any(|c| c == name)
    }

    /// The manifest's error for a column it cannot read.
    pub(crate) fn error(&self, e: PolarsError) -> Error {
        Error::Manifest {
            path: self.location.clone(),
            source: e.into(),
        }
    }

    /// Columns `columns` (all when `None`) of rows `slice` (all when `None`).
    fn read(&self, columns: Option<&[&str]>, slice: Option<(usize, usize)>) -> Result<DataFrame> {
        let mut reader = self.source.reader()?;
        reader.set_metadata(self.metadata.clone());
        let columns = columns.map(|c| c.iter().map(|s| s.to_string()).collect());
        reader
            .with_columns(columns)
            .with_slice(slice)
            .finish()
            .map_err(|e| self.error(e))
    }

    /// Calls `each(first row, frame)` with columns `columns` of each row group in order (those
    /// the manifest lacks left out). A row group is read whole, but only the columns asked for.
    pub(crate) fn each_group(
        &self,
        columns: &[&str],
        mut each: impl FnMut(usize, &DataFrame) -> Result<()>,
    ) -> Result<()> {
        let present: Vec<&str> = columns.iter().copied().filter(|c| self.has(c)).collect();
        let groups = &self.metadata.row_groups;
        let step = crate::hooks::manifest_slice_rows(usize::MAX);
        if groups.len() == 1 && step >= groups[0].num_rows() {
            // One row group (up to 262,144 documents): its columns decoded once, not per pass.
            let whole = match self.whole.get() {
                Some(df) => df,
                None => {
                    let df = self.read(None, None)?;
                    self.whole.get_or_init(|| df)
                }
            };
            let df = whole
                .select(present.iter().copied())
                .map_err(|e| self.error(e))?;
            return each(0, &df);
        }
        let mut first = 0usize;
        for g in self.metadata.row_groups.iter() {
            let end = first + g.num_rows();
            let step = crate::hooks::manifest_slice_rows(g.num_rows());
            while first < end {
                let n = step.min(end - first);
                let df = self.read(Some(&present), Some((first, n)))?;
                each(first, &df)?;
                first += n;
            }
        }
        Ok(())
    }
}

/// The retained index the run in `out` used (`--index`), as its summary names it (the manifest
/// leaves locations out).
pub(crate) fn run_index(out: &str) -> Option<String> {
    let summary = read_location(&in_output(out, "summary.json")).ok()??;
    let summary: serde_json::Value = serde_json::from_slice(&summary).ok()?;
    summary["config"]["index"].as_str().map(str::to_string)
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
            source: e.into(),
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
    pub(crate) fn read(location: &str) -> Result<Manifest> {
        let (mut m, rows) = Manifest::open(location)?;
        m.frame = rows.read(None, None)?;
        Ok(m)
    }

    /// The manifest's recorded settings and inputs (its frame left empty), and its rows to read
    /// a few columns and row groups at a time.
    pub(crate) fn open(location: &str) -> Result<(Manifest, ManifestRows)> {
        let err = |msg: String| Error::Manifest {
            path: location.to_string(),
            source: msg.into(),
        };
        let missing =
            || err("no such file; pass the manifest.parquet a `corpus-dedup run` wrote".into());
        let source = if object::is_url(location) {
            Source::Bytes(read_location(location)?.ok_or_else(missing)?)
        } else {
            match std::fs::File::open(location) {
                Ok(f) => Source::File(f),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(missing()),
                Err(e) => return Err(err(e.to_string())),
            }
        };
        let metadata = source
            .reader()?
            .get_metadata()
            .map_err(|e| err(e.to_string()))?
            .clone();
        let kv: BTreeMap<String, String> = metadata
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
        let config: Config = serde_json::from_value(config).map_err(|source| Error::Manifest {
            path: location.to_string(),
            source: crate::error::FileError::Parse {
                what: "a configuration this version reads (its recorded one)",
                source,
            },
        })?;
        let inputs: Vec<RecordedInput> = kv
            .get(INPUTS_KEY)
            .and_then(|s| serde_json::from_str(s).ok())
            .ok_or_else(|| not_ours(INPUTS_KEY))?;
        let reference = kv
            .get(REFERENCE_KEY)
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or_default();
        let columns = metadata
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().to_string())
            .collect();
        let manifest = Manifest {
            location: location.to_string(),
            frame: DataFrame::empty(),
            config,
            inputs,
            reference,
        };
        let rows = ManifestRows {
            location: location.to_string(),
            source,
            metadata,
            columns,
            whole: std::cell::OnceCell::new(),
        };
        Ok((manifest, rows))
    }

    /// A column of the manifest.
    pub(crate) fn column(&self, name: &str) -> Result<&Column> {
        self.frame.column(name).map_err(|e| Error::Manifest {
            path: self.location.clone(),
            source: e.into(),
        })
    }

    /// The manifest's columns, typed.
    pub(crate) fn columns(&self) -> Result<Columns<'_>> {
        let err = |e: PolarsError| Error::Manifest {
            path: self.location.clone(),
            source: e.into(),
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
            cluster_size: self
                .frame
                .column("cluster_size")
                .ok()
                .and_then(|c| c.u32().ok()),
            contaminated_by: self
                .frame
                .column("contaminated_by")
                .ok()
                .and_then(|c| c.str().ok()),
            contamination: self
                .frame
                .column("contamination")
                .ok()
                .and_then(|c| c.f32().ok()),
        })
    }

    /// The manifest's rows per input shard: for each recorded input, the manifest row numbers
    /// of its rows in row order (every row of every shard appears exactly once).
    pub(crate) fn rows_by_input(&self) -> Result<Vec<Vec<u32>>> {
        let err = |msg: String| Error::Manifest {
            path: self.location.clone(),
            source: msg.into(),
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
        // Rows are numbered in 32 bits here (u32::MAX marks a row not seen yet).
        if rows.len() as u64 >= crate::plan::MAX_DOCS_32 {
            return Err(err(format!(
                "{} rows; apply reads a manifest of at most 4,294,967,294 rows at once",
                rows.len()
            )));
        }
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

/// Row groups of at most this many rows are read as one span (from the first wanted row to the
/// last); a row of a larger group is read alone, as a one-row slice (the reader skips the pages
/// before it, so the cost is about one call, ~10 ms, instead of decoding the group).
pub(crate) const SMALL_GROUP: u64 = 20_000;

/// Where the rows of a run's input lie: each recorded shard's row groups (an `s3://` shard counts
/// as one group: it is fetched whole), read from footers checked against the manifest's record.
pub(crate) struct RowGroups {
    /// Per input file: its index, the first row of each row group and the end, and whether it
    /// is fetched whole.
    files: HashMap<String, (usize, Vec<u64>, bool)>,
    /// Row groups in all, and those read as one span.
    pub total: usize,
    pub small: usize,
}

impl RowGroups {
    /// The row groups of the inputs (of `only` these files, when given).
    pub(crate) fn of(m: &Manifest, only: Option<&[&str]>) -> Result<RowGroups> {
        use rayon::prelude::*;
        let inputs: Vec<(usize, &RecordedInput)> = m
            .inputs
            .iter()
            .enumerate()
            .filter(|(_, f)| only.is_none_or(|o| o.contains(&f.file.as_str())))
            .collect();
        let bounds: Vec<(Vec<u64>, bool)> = inputs
            .par_iter()
            .map(|(_, rec)| {
                // A JSON Lines shard is one stream, read from its start: one span too.
                let Some(footer) = rec
                    .check_unchanged()?
                    .filter(|_| !object::is_url(&rec.file))
                else {
                    return Ok((vec![0, rec.rows], true));
                };
                let mut b = vec![0u64];
                for g in footer.metadata(&rec.file)?.row_groups.iter() {
                    b.push(b.last().copied().unwrap_or(0) + g.num_rows() as u64);
                }
                Ok((b, false))
            })
            .collect::<Result<_>>()?;
        let total = bounds.iter().map(|b| b.0.len().saturating_sub(1)).sum();
        let small = bounds
            .iter()
            .map(|(b, whole)| {
                b.windows(2)
                    .filter(|w| *whole || w[1] - w[0] <= SMALL_GROUP)
                    .count()
            })
            .sum();
        let files = inputs
            .into_iter()
            .zip(bounds)
            .map(|((i, rec), (b, whole))| (rec.file.clone(), (i, b, whole)))
            .collect();
        Ok(RowGroups {
            files,
            total,
            small,
        })
    }

    /// The row group (input index, group) of a row, its row range, and whether it is read as
    /// one span.
    pub(crate) fn group(
        &self,
        (file, row): (&str, u64),
    ) -> Option<((usize, usize), Range<u64>, bool)> {
        let (i, b, whole) = self.files.get(file)?;
        let g = b.partition_point(|&s| s <= row).checked_sub(1)?;
        let range = b[g]..*b.get(g + 1)?;
        let small = *whole || range.end - range.start <= SMALL_GROUP;
        Some(((*i, g), range, small))
    }
}

/// The text and the id (None without an id column) at `row` of the shard `file` (an `s3://`
/// shard is fetched whole), read with the run's column settings.
pub(crate) fn read_row_at(
    cfg: &Config,
    file: &str,
    row: u64,
) -> Result<(Option<String>, Option<String>)> {
    let (bytes, slice, at) = if object::is_url(file) {
        (object::get_all(&[file.to_string()])?.pop(), None, row)
    } else {
        (None, Some(row..row + 1), 0)
    };
    let shard = input::read_shard(file, bytes, slice, None, cfg)?;
    let id = (shard.id.as_ref()).and_then(|ids| ids.get(at as usize).map(str::to_string));
    Ok((shard.text.get(at as usize).map(str::to_string), id))
}

/// A read of texts: a file, its rows to read, and the manifest rows in them.
type Span<'a> = (&'a str, Range<u64>, Vec<usize>);

/// Where manifest row `i` is: its shard and row.
pub(crate) type At<'a> = dyn Fn(usize) -> (&'a str, u64) + Sync + 'a;

/// The texts of manifest rows `which` (`at` says where each is): the wanted span of each small
/// row group read once, each row of a large group read alone, all in parallel; an `s3://` shard
/// fetched once.
pub(crate) fn read_texts<'a>(
    m: &Manifest,
    groups: &RowGroups,
    which: &[usize],
    at: &At<'a>,
) -> Result<BTreeMap<usize, Option<String>>> {
    use rayon::prelude::*;
    let mut spans: BTreeMap<(usize, usize, u64), Span<'a>> = BTreeMap::new();
    for &i in which {
        let at = at(i);
        let Some(((f, g), _, small)) = groups.group(at) else {
            continue;
        };
        let key = if small { (f, g, 0) } else { (f, g, at.1 + 1) };
        let e = spans
            .entry(key)
            .or_insert((at.0, at.1..at.1 + 1, Vec::new()));
        e.1 = e.1.start.min(at.1)..e.1.end.max(at.1 + 1);
        e.2.push(i);
    }
    let spans: Vec<Span<'a>> = spans.into_values().collect();
    let read = |(file, span, idx): Span<'a>| -> Result<Vec<(usize, Option<String>)>> {
        let (bytes, slice) = if object::is_url(file) {
            (object::get_all(&[file.to_string()])?.pop(), None)
        } else {
            (None, Some(span.clone()))
        };
        let row = |i: usize| at(i).1;
        if jsonl::is_jsonl(file) {
            // One pass over the file, parsing and keeping the wanted lines only.
            let mut rows: Vec<u64> = idx.iter().map(|&i| row(i)).collect();
            rows.sort_unstable();
            rows.dedup();
            let texts = jsonl::read_texts(file, bytes, &rows, &m.config)?;
            return Ok(idx
                .into_iter()
                .map(|i| {
                    let at = rows.partition_point(|&r| r < row(i));
                    (i, texts[at].clone())
                })
                .collect());
        }
        let first = slice.as_ref().map_or(0, |r| r.start);
        let shard = input::read_shard(file, bytes, slice, None, &m.config)?;
        Ok(idx
            .into_iter()
            .map(|i| {
                let r = (at(i).1 - first) as usize;
                (i, shard.text.get(r).map(str::to_string))
            })
            .collect())
    };
    // A batch of reads at a time: a worker waiting on polars' own pool runs other reads of the
    // batch meanwhile, a stack frame deeper each, so one batch of all (400 reads) overflowed.
    let mut texts = BTreeMap::new();
    for batch in spans.chunks(READS_AT_ONCE) {
        let read: Vec<Vec<(usize, Option<String>)>> = (batch.to_vec().into_par_iter())
            .with_max_len(1)
            .map(read)
            .collect::<Result<_>>()?;
        texts.extend(read.into_iter().flatten());
    }
    Ok(texts)
}

/// Reads [`read_texts`] makes in parallel at most.
const READS_AT_ONCE: usize = 16;
