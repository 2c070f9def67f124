//! corpus-dedup: near-duplicate detection for text corpora stored as Parquet shards.
//!
//! The pipeline (MinHash): shards are read as polars columns ([`corpus`], [`io`]); texts are
//! normalised, tokenised and shingled ([`text`]); a MinHash signature column is computed
//! ([`minhash`], [`stages::signature`]); signatures are cut into LSH bands ([`lsh`],
//! [`stages::bands`]); documents sharing a band bucket become candidate pairs
//! ([`stages::candidates`]), which are verified ([`stages::verify`]), clustered with union-find
//! ([`stages::cluster`]) and written as a keep/drop manifest ([`stages::manifest`]).
//! [`plan`] cuts a run into tasks per stage; [`executor::local`] runs them in one process,
//! `corpus-dedup task` one at a time on a cluster; [`config`] holds the one validated configuration.

pub mod config;
pub mod corpus;
pub mod error;
pub mod executor;
pub mod io;
pub mod lsh;
pub mod minhash;
pub mod plan;
pub mod simhash;
pub mod stages;
pub mod synth;
pub mod text;

pub use config::{Config, Settings};
pub use error::{Error, Result};
