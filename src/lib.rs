//! corpus-dedup: near-duplicate detection for text corpora stored as Parquet shards.
//!
//! The pipeline: shards are read as polars columns ([`corpus`], [`io`]); texts are normalised,
//! tokenised and shingled ([`text`]); each document gets a MinHash signature ([`minhash`]) or a
//! SimHash fingerprint ([`simhash`]); documents sharing an LSH band bucket ([`lsh`]) or a block
//! table bucket become candidate pairs, which are verified and decided by the keeper rule
//! (the keeper rule, [`stages::cluster`]: each document dropped only against a verified
//! near-duplicate kept before it; or union-find components, [`unionfind`]), and written as a keep/drop manifest; documents holding
//! benchmark text are found on the way ([`mod@reference`]). [`plan`] cuts a run into stages and
//! tasks ([`stages`], one module per stage); [`executor`] runs a task, or a whole plan in this
//! process; [`config`] holds the one validated configuration. docs/ARCHITECTURE.md has the map.

pub mod apply;
pub mod cli;
pub mod config;
pub mod corpus;
pub mod error;
pub mod executor;
pub mod explain;
pub mod hooks;
pub mod index;
pub mod io;
pub mod lsh;
pub mod minhash;
pub mod partition;
pub mod plan;
pub mod progress;
pub mod reference;
pub mod report;
pub mod results;
pub mod simhash;
pub mod stages;
pub mod synth;
pub mod tally;
pub mod text;
pub mod unionfind;
pub mod visible;

pub use config::{Config, Settings};
pub use error::{Error, Result};
