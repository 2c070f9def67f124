//! Library error type. Every variant names the file, column or value at fault and says what to do,
//! because the message is what a user sees at the end of a failed nightly run.

use std::path::PathBuf;

use crate::visible::visible;

/// Errors the library returns; the binary adds context with `anyhow` and prints one paragraph.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration value is outside its valid range or inconsistent with another one.
    #[error("invalid configuration: {0}")]
    Config(String),

    /// A setting given by name (the Python package's keyword arguments) that the job does not have.
    #[error("unknown setting `{name}` (the settings: {})", known.join(", "))]
    UnknownSetting { name: String, known: Vec<String> },

    /// A setting given by name whose value does not fit it.
    #[error("setting `{name}`: {source}")]
    BadSetting {
        name: String,
        #[source]
        source: serde_json::Error,
    },

    /// The configuration file could not be read or parsed.
    #[error("cannot read config file {path}: {source}")]
    ConfigFile {
        path: PathBuf,
        #[source]
        source: ConfigFileError,
    },

    /// An input glob matched nothing.
    #[error("input '{0}' matches no file; check the path/glob (quote it so the shell does not expand it) and that the files exist")]
    NoInput(String),

    /// An input glob pattern is malformed.
    #[error("input '{pattern}' is not a valid glob: {source}")]
    BadGlob {
        pattern: String,
        #[source]
        source: glob::PatternError,
    },

    /// A shard could not be read as Parquet (not Parquet, truncated, corrupt, unreadable).
    #[error("cannot read Parquet file '{file}': {source}. Check that the file is a complete Parquet file (re-copy it if it was truncated) or remove it from the input")]
    Parquet {
        file: String,
        #[source]
        source: ReadError,
    },

    /// A JSON Lines file cannot be read: a line that is no JSON object, a stream that ends early.
    #[error("cannot read JSON Lines file '{file}'{}: {msg}. Fix the file (re-copy it if it was truncated) or leave it out of the input", line_at(*line))]
    JsonLines {
        file: String,
        line: u64,
        msg: String,
    },

    /// A line of a JSON Lines file lacks a field the run reads.
    #[error("line {line} of '{file}' has no field '{field}' (its fields: {present}); pass the right name with --{flag} (a dotted path such as metadata.url names a nested field)")]
    MissingField {
        file: String,
        line: u64,
        field: String,
        present: String,
        flag: &'static str,
    },

    /// A field of a JSON Lines line has a type the job cannot use.
    #[error("field '{field}' at line {line} of '{file}' is {found}, expected {expected}; {hint}")]
    FieldType {
        file: String,
        line: u64,
        field: String,
        found: String,
        expected: &'static str,
        hint: &'static str,
    },

    /// A shard's string column holds bytes that are not UTF-8 (Parquet requires UTF-8 there).
    #[error("file '{file}' has a string column holding bytes that are not UTF-8 ({source}); re-encode that shard's text as UTF-8 (decoding with replacement characters, say) or leave the file out of the input")]
    InvalidUtf8 {
        file: String,
        #[source]
        source: ReadError,
    },

    /// A required column is missing from a shard.
    #[error("file '{file}' has no column '{column}' (its columns are: {available}); pass the right name with --{flag}")]
    MissingColumn {
        file: String,
        column: String,
        available: String,
        flag: &'static str,
    },

    /// A column has a type the job cannot use.
    #[error("column '{column}' in file '{file}' has type {found}, expected {expected}; {hint}")]
    ColumnType {
        file: String,
        column: String,
        found: String,
        expected: &'static str,
        hint: &'static str,
    },

    /// The same document id occurs more than once.
    #[error("duplicate id '{}': first at {first}, again at {second}. Ids must be unique so the manifest's duplicate_of is unambiguous; fix the input, choose another --id-column, or pass --allow-duplicate-ids (then duplicate_of may name either copy)", shown(id))]
    DuplicateId {
        id: String,
        first: String,
        second: String,
    },

    /// Writing an output failed.
    #[error("{}", output_message(path, source))]
    Output {
        path: String,
        #[source]
        source: WriteError,
    },

    /// A work file of a task run (plan, store, band, pair, edge or cluster file) is missing,
    /// unreadable or fails its check.
    #[error("cannot use work file '{path}': {source}. The work directory is damaged: if no corpus-dedup run is using it (`run` locks it while it runs; a cluster job's tasks share it until its merge), delete it or pick a new --work / --output, then run again")]
    WorkFile {
        path: String,
        #[source]
        source: FileError,
    },

    /// A driver asked for a task the plan does not have (`corpus-dedup task`).
    #[error("{0}")]
    NoSuchTask(String),

    /// `corpus-dedup task` before `plan` made the work directory's plan.
    #[error("no plan.json in '{work}': run `corpus-dedup plan --work {work} ...` first")]
    NoPlan { work: String },

    /// A stage ran before every task of a stage it reads finished.
    #[error("{stage} task {task} of {tasks} is not complete (no {marker}): run that stage first")]
    StageIncomplete {
        stage: &'static str,
        task: usize,
        tasks: usize,
        marker: String,
    },

    /// A part's shards no longer hold the rows the plan counted.
    #[error("part {part}: the plan counted {planned} rows but the shards' row ranges now give {read}: the input changed since the plan was made; plan again")]
    RowsChanged {
        part: usize,
        planned: u64,
        read: u64,
    },

    /// A thread of the job panicked (its message was printed); `what` says which.
    #[error("{0}")]
    Panicked(String),

    /// A state the code never produces (a bug, or a work directory that no longer fits).
    #[error("{0}")]
    Internal(String),

    /// An error from polars that is not tied to a single input file.
    #[error("dataframe error in stage {stage}: {source}")]
    Polars {
        stage: &'static str,
        #[source]
        source: polars::error::PolarsError,
    },

    /// An object-store request failed (after retries).
    #[error("cannot {what} '{url}': {msg}. Hint: {hint}")]
    ObjectStore {
        what: String,
        url: String,
        msg: String,
        hint: &'static str,
    },

    /// A file of the retained index (`--index`) is missing, truncated or fails its checksum.
    #[error("index file '{path}' is damaged: {source}. Nothing was written to the index or the output; {}", damaged_index_remedy(.path))]
    IndexFile {
        path: String,
        #[source]
        source: FileError,
    },

    /// The retained index cannot be used with this run (other settings, an older batch name).
    #[error("index '{index}': {msg}")]
    Index { index: String, msg: String },

    /// Another process holds the retained index's lock.
    #[error("index '{index}' is in use by {holder}; wait for that run to finish (a lock left by a process that died on this host is taken over automatically)")]
    IndexInUse { index: String, holder: String },

    /// A manifest (for `apply`, `explain`, `report`) is missing, unreadable or not one this tool
    /// wrote.
    #[error("cannot use manifest '{path}': {source}")]
    Manifest {
        path: String,
        #[source]
        source: FileError,
    },

    /// An input shard differs from the one the manifest was made from.
    #[error("input shard '{file}' changed since the manifest was made ({what}). The manifest names rows by position, so it only fits the shards the run read: restore those, or run `corpus-dedup run` again on the current shards and apply its manifest")]
    ShardChanged { file: String, what: String },

    /// `explain --id` with an id the manifest does not have.
    #[error("no document with id '{id}' in {manifest}: ids are the input's id column (or FILE:ROW where a shard has none)")]
    UnknownId { id: String, manifest: String },

    /// A directory that is not a run's output given to `report`.
    #[error("cannot read '{summary}' (missing or not JSON): the report needs the summary.json and manifest.parquet a `corpus-dedup run` wrote; is '{out}' the output directory of a run?")]
    NotAnOutput { summary: String, out: String },

    /// `apply` would write two inputs to one file name.
    #[error("inputs '{first}' and '{second}' have the same file name '{name}', so their outputs would overwrite each other: apply writes one file per input under its own name; rename one of the shards (and run again), or apply the manifest of each directory's run separately")]
    SameOutputName {
        first: String,
        second: String,
        name: String,
    },

    /// `apply` would write an output over one of its input shards.
    #[error("apply would write '{output}' over input shard '{input}'; give --output (and --dropped) a directory of their own")]
    OutputOverInput { output: String, input: String },

    /// `apply` would add a column an input already has.
    #[error("input '{file}' has a column '{column}' already, so {what}")]
    ColumnExists {
        file: String,
        column: String,
        what: &'static str,
    },

    /// An input shard changed between the plan and a task that reads it.
    #[error("input shard '{file}' changed after the run was planned ({what}). Rerun the same command: `run` plans again over the shards as they are now (a cluster job: run `plan` again with a new --work)")]
    InputChanged { file: String, what: String },

    /// The work directory's disk has less free space than the plan's estimate of the run.
    #[error("the work directory '{dir}' {what}. Free space there, point --work (or --output) at a larger disk, or rerun with --work-keys remade (shingle keys made again for the documents that need them: a much smaller work directory, for a second read of the input); --skip-space-check starts anyway")]
    NoSpace { dir: String, what: String },

    /// Another run holds the lock of an output or work directory.
    #[error("'{dir}' is in use by {holder}: another corpus-dedup run is writing there. Wait for it to finish (or rerun with --wait), or use another --output / --work; do not delete the directory while that run is alive (a lock left by a process that died on this host is taken over automatically)")]
    DirInUse { dir: String, holder: String },

    /// A benchmark reference file (`--reference`) cannot be used: no file matches, a column is
    /// missing or of another type, the file cannot be read or changed since the plan.
    #[error("benchmark reference (--reference) '{file}': {msg}. Nothing was written")]
    Reference {
        file: String,
        msg: String,
        /// The error reading it, when that is the cause (its text is in `msg`).
        #[source]
        cause: Option<Box<Error>>,
    },

    /// More documents than `what` (an option's stages, or one task's part) numbers in 32 bits.
    #[error("the input has {documents} documents for {what}, which numbers them in 32 bits (at most 4,294,967,294): {advice}")]
    TooManyDocuments {
        what: String,
        documents: u64,
        advice: String,
    },
}

/// What kind of failure an [`Error`] is, for a caller that acts on it (the Python package raises
/// a class per kind): fix the call, fix the data, retry later, or look at the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The settings or the request are wrong: fix the call.
    Config,
    /// The input data (shards, columns, ids, a manifest or its shards) cannot be used as it is.
    Input,
    /// Reading or writing storage failed (a full disk, permissions, object storage): retryable
    /// once the cause is fixed; a rerun resumes.
    Storage,
    /// Another run holds the output, work directory or index: retry later (or `--wait`).
    Busy,
    /// The retained index does not fit this run (other settings, names) or is damaged.
    Index,
    /// A bug, or a work directory that no longer fits its plan.
    Internal,
}

impl Error {
    /// The kind of failure (see [`ErrorKind`]).
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Config(_)
            | Error::UnknownSetting { .. }
            | Error::BadSetting { .. }
            | Error::ConfigFile { .. }
            | Error::NoSuchTask(_)
            | Error::NoPlan { .. }
            | Error::StageIncomplete { .. }
            | Error::UnknownId { .. }
            | Error::NotAnOutput { .. }
            | Error::ColumnExists { .. } => ErrorKind::Config,
            Error::NoInput(_)
            | Error::BadGlob { .. }
            | Error::Parquet { .. }
            | Error::InvalidUtf8 { .. }
            | Error::JsonLines { .. }
            | Error::MissingField { .. }
            | Error::FieldType { .. }
            | Error::MissingColumn { .. }
            | Error::ColumnType { .. }
            | Error::DuplicateId { .. }
            | Error::Manifest { .. }
            | Error::ShardChanged { .. }
            | Error::InputChanged { .. }
            | Error::TooManyDocuments { .. }
            | Error::RowsChanged { .. }
            | Error::SameOutputName { .. }
            | Error::OutputOverInput { .. }
            | Error::Reference { .. } => ErrorKind::Input,
            Error::Output { .. }
            | Error::WorkFile { .. }
            | Error::ObjectStore { .. }
            | Error::NoSpace { .. } => ErrorKind::Storage,
            Error::IndexInUse { .. } | Error::DirInUse { .. } => ErrorKind::Busy,
            Error::IndexFile { .. } | Error::Index { .. } => ErrorKind::Index,
            Error::Panicked(_) | Error::Internal(_) | Error::Polars { .. } => ErrorKind::Internal,
        }
    }
}

/// What is wrong with a file the job wrote or reads back (a work file, an index file, a
/// manifest): the error of the layer that failed, kept as it is, or what the bytes hold that
/// they should not.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Polars(#[from] polars::error::PolarsError),
    /// The bytes do not parse as the file they should be (`what`: "a plan", "an index head").
    #[error("not {what}: {source}")]
    Parse {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// Missing, cut short, a failed checksum, counts that do not agree.
    #[error("{0}")]
    Invalid(String),
}

impl From<String> for FileError {
    fn from(s: String) -> FileError {
        FileError::Invalid(s)
    }
}

impl From<&str> for FileError {
    fn from(s: &str) -> FileError {
        FileError::Invalid(s.to_string())
    }
}

/// Why a `--config` file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Toml(#[from] toml::de::Error),
}

/// Why reading a Parquet file failed: the error of the layer that failed, kept as it is, or
/// what the file holds that is not Parquet as this job reads it.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Polars(#[from] polars::error::PolarsError),
    /// The footer cannot be parsed.
    #[error(transparent)]
    Footer(#[from] polars_parquet::parquet::error::ParquetError),
    /// The bytes are not the Parquet file their footer describes (no footer, wrong counts).
    #[error("{0}")]
    Invalid(String),
}

/// Why writing an output failed: the error of the layer that failed, kept as it is.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Encoding or writing Parquet (polars keeps the I/O error it met, if any).
    #[error(transparent)]
    Polars(#[from] polars::error::PolarsError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl WriteError {
    /// The operating system's kind of the failure, where it was one.
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        match self {
            WriteError::Io(e) => Some(e.kind()),
            WriteError::Polars(polars::error::PolarsError::IO { error, .. }) => Some(error.kind()),
            _ => None,
        }
    }
}

/// The message of [`Error::Output`]: the common causes (a full disk or quota, no permission, a
/// read-only file system; told by the I/O error's kind) said first, with what to do.
fn output_message(path: &str, cause: &WriteError) -> String {
    use std::io::ErrorKind as K;
    match cause.io_kind() {
        Some(K::StorageFull | K::QuotaExceeded) => format!("no space left on device writing '{path}' ({cause}): free space there, or point --output / --work at a larger disk, then rerun the same command (finished tasks are kept)"),
        Some(K::PermissionDenied) => format!("permission denied writing '{path}' ({cause}): make the directory writable for this user, or choose another --output / --work"),
        Some(K::ReadOnlyFilesystem) => format!("read-only file system at '{path}' ({cause}): choose a writable --output / --work"),
        _ => format!("cannot write output '{path}': {cause}. Check that the output directory is writable and has free space"),
    }
}

/// Result alias for the library.
pub type Result<T> = std::result::Result<T, Error>;

/// An input value as shown in a message: whole when short, else its first 60 characters and its
/// length (an id column chosen by mistake can hold whole documents). Newlines and tabs (in a
/// text) are shown as spaces, so the message stays one line; other control characters as escapes
/// ([`visible`]).
fn shown(value: &str) -> String {
    let flat = |s: &str| -> String { visible(&s.replace(['\n', '\t'], " ")).into_owned() };
    match value.char_indices().nth(60) {
        None => flat(value),
        Some((cut, _)) => format!("{}... ({} bytes)", flat(&value[..cut]), value.len()),
    }
}

/// What to do about a damaged index file at `path`: restore a backup; for a batch's file, remove
/// that batch (losing its documents only, named with the command); or start a new index.
fn damaged_index_remedy(path: &str) -> String {
    let batch = path.rsplit_once("/batches/").and_then(|(index, rest)| {
        let dir = rest.split('/').next()?;
        // Batch directories are NAME-HASH, HASH 16 hex digits; a compacted batch's files are in
        // NAME-HASH.cG (G a head generation).
        let dir = match dir.rsplit_once(".c") {
            Some((d, g)) if !g.is_empty() && g.bytes().all(|b| b.is_ascii_digit()) => d,
            _ => dir,
        };
        let (name, hash) = dir.rsplit_once('-')?;
        (hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit())).then_some((index, name))
    });
    match batch {
        Some((index, name)) => format!(
            "restore the index from a backup, or remove batch '{name}' (`corpus-dedup index remove --index {index} --batch {name}`: later nights no longer match its documents; `index verify` lists every damaged file), or start a new index (a new --index location) and rerun"
        ),
        None => "restore the index from a backup, or start a new index (a new --index location) and rerun".into(),
    }
}

/// " at line N" for a message about a line, nothing for the file as a whole (line 0).
fn line_at(line: u64) -> String {
    match line {
        0 => String::new(),
        n => format!(" at line {n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_file_keeps_its_cause_typed() {
        use std::error::Error as _;
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
        let e = Error::WorkFile {
            path: "w/plan.json".into(),
            source: io.into(),
        };
        let cause = e.source().and_then(|s| s.source().or(Some(s)));
        assert!(cause.is_some_and(|c| c.is::<std::io::Error>() || c.is::<FileError>()));
        assert!(
            matches!(&e, Error::WorkFile { source: FileError::Io(x), .. } if x.kind() == std::io::ErrorKind::PermissionDenied)
        );
        let parse = serde_json::from_str::<u32>("x").unwrap_err();
        let e = Error::IndexFile {
            path: "i/index.json".into(),
            source: FileError::Parse {
                what: "an index head",
                source: parse,
            },
        };
        assert!(
            e.to_string()
                .contains("is damaged: not an index head: expected value"),
            "{e}"
        );
        assert_eq!(e.kind(), ErrorKind::Index);
    }

    #[test]
    fn long_values_are_shortened_in_messages() {
        assert_eq!(shown("doc-1"), "doc-1");
        assert_eq!(shown("a\nb"), "a b");
        assert_eq!(shown("a\u{1b}[2J\u{0}"), "a\\x1b[2J\\x00");
        let long = "字".repeat(100);
        assert_eq!(shown(&long), format!("{}... (300 bytes)", "字".repeat(60)));
        let e = Error::DuplicateId {
            id: long,
            first: "f row 1".into(),
            second: "f row 2".into(),
        };
        assert!(e
            .to_string()
            .starts_with(&format!("duplicate id '{}...", "字".repeat(60))));
    }

    #[test]
    fn kinds_say_what_to_do() {
        let busy = Error::IndexInUse {
            index: "i".into(),
            holder: "pid 1".into(),
        };
        assert_eq!(busy.kind(), ErrorKind::Busy);
        assert_eq!(Error::Config("x".into()).kind(), ErrorKind::Config);
        assert_eq!(Error::NoInput("x".into()).kind(), ErrorKind::Input);
        let storage = Error::Output {
            path: "p".into(),
            source: std::io::Error::other("m").into(),
        };
        assert_eq!(storage.kind(), ErrorKind::Storage);
        assert_eq!(Error::Internal("t".into()).kind(), ErrorKind::Internal);
    }

    #[test]
    fn write_failures_are_told_by_their_io_kind() {
        let of = |e: std::io::Error| {
            Error::Output {
                path: "out/x".into(),
                source: e.into(),
            }
            .to_string()
        };
        let full = std::io::Error::from_raw_os_error(28);
        assert!(of(full).starts_with("no space left on device writing 'out/x'"));
        let quota = std::io::Error::from_raw_os_error(122);
        assert!(of(quota).starts_with("no space left on device"));
        assert!(of(std::io::Error::from_raw_os_error(13)).starts_with("permission denied"));
        assert!(of(std::io::Error::from_raw_os_error(30)).starts_with("read-only file system"));
        let other = of(std::io::Error::other("boom"));
        assert!(
            other.starts_with("cannot write output 'out/x': boom."),
            "{other}"
        );
        // Through polars, which keeps the I/O error.
        let polars = polars::error::PolarsError::from(std::io::Error::from_raw_os_error(28));
        let e = Error::Output {
            path: "m.parquet".into(),
            source: polars.into(),
        };
        assert!(e.to_string().starts_with("no space left"), "{e}");
        assert!(std::error::Error::source(&e).is_some());
    }

    #[test]
    fn a_damaged_batch_file_names_its_batch_and_the_remove_command() {
        let e = Error::IndexFile {
            path: "s3://b/idx/batches/2026-11-02-0123456789abcdef/docs.bin".into(),
            source: "block 3 fails its checksum".into(),
        };
        let text = e.to_string();
        assert!(
            text.contains("index remove --index s3://b/idx --batch 2026-11-02"),
            "{text}"
        );
        // A compacted batch's files, in NAME-HASH.cG.
        let compacted = Error::IndexFile {
            path: "idx/batches/night-07-0123456789abcdef.c12/live.bin".into(),
            source: "cut short".into(),
        };
        let text = compacted.to_string();
        assert!(
            text.contains("index remove --index idx --batch night-07`"),
            "{text}"
        );
        let head = Error::IndexFile {
            path: "idx/index.json".into(),
            source: "cut".into(),
        };
        assert!(!head.to_string().contains("index remove"));
    }
}
