//! corpus-dedup: near-duplicate detection for text corpora stored as Parquet shards.
//!
//! The pipeline: shards are read as polars columns ([`corpus`], [`io`]); texts are normalised,
//! tokenised and shingled ([`text`]); each document gets a MinHash signature ([`minhash`]) or a
//! SimHash fingerprint ([`simhash`]); documents sharing an LSH band bucket ([`lsh`]) or a block
//! table bucket become candidate pairs, which are verified and decided by the keeper rule
//! ([`stages::cluster`]: each document dropped only against a verified near-duplicate kept
//! before it; or union-find components, [`unionfind`]), and written as a keep/drop manifest;
//! documents holding benchmark text are found on the way ([`mod@reference`]). [`plan`] cuts a
//! run into stages and tasks ([`stages`], one module per stage); [`executor`] runs a task, or a
//! whole plan in this process; [`config`] holds the one validated configuration.
//! docs/ARCHITECTURE.md has the map.
//!
//! The public API is what the binary, the Python package, the tests and the benchmarks use: the
//! command line ([`cli`]), the settings ([`config`]), the errors ([`error`]), the sample corpus
//! generator ([`synth`]), and the items re-exported below; every module is otherwise internal.

mod apply;
mod audit;
mod bucket_sort;
pub mod cli;
pub mod config;
mod corpus;
pub mod error;
mod executor;
mod explain;
mod hooks;
mod index;
mod io;
mod lsh;
mod minhash;
mod partition;
mod plan;
mod progress;
mod reference;
mod report;
mod results;
mod serve;
mod simhash;
mod stages;
pub mod synth;
mod tally;
mod text;
mod unionfind;
mod visible;

pub use config::{Config, Settings};
pub use error::{Error, Result};

// What the Python package calls beside the command line.
pub use apply::{ApplyOptions, OutputFormat};
pub use executor::local::TaskOptions;
pub use results::{in_output, read_location};
pub use serve::Index;

/// The job's kernels, for the Python package's column functions and the kernel benchmarks: the
/// same code a run runs.
pub mod kernels {
    pub use crate::apply::DropSpans;
    pub use crate::corpus::Corpus;
    pub use crate::io::input::expand_inputs;
    pub use crate::lsh::band_keys;
    pub use crate::minhash::{Permutations, Signatures};
    pub use crate::simhash::fingerprint_column;
    pub use crate::stages::candidates::pairs_of_rows;
    pub use crate::stages::cluster::Clusters;
    pub use crate::stages::sample::params as simhash_params;
    pub use crate::stages::signatures::signatures_only;
    pub use crate::text::normalize::normalize_into;
    pub use crate::text::paragraphs::cut as cut_spans;
    pub use crate::text::paragraphs::{paragraphs, Scratch as ParagraphScratch};
    pub use crate::text::sets::{jaccard, KeyTable};
    pub use crate::text::shingle;
    pub use crate::text::substrings::{windows as substring_windows, Scratch as WindowScratch};
    pub use crate::text::tokenize::tokenize;
    pub use crate::unionfind::UnionFind;
}

/// What the end-to-end tests and the sample generator reach besides the command line: writing
/// Parquet as the job does, and the facts a test of locks and object storage needs.
pub mod testing {
    pub use crate::index::Lock as IndexLock;
    pub use crate::io::lock::hostname;
    pub use crate::io::object::PART_SIZE;
    pub use crate::io::output::{write_parquet_atomic, ParquetUse};
}
