//! End-to-end tests: the `corpus-dedup` binary run as a user, a driver or a scheduler would run
//! it. One test binary (one link of polars); each module covers one area.

mod common;

mod apply;
mod audit;
mod bad_input;
mod decontam;
mod dev_corpus;
mod explain;
mod index;
mod jsonl;
mod keeper;
mod paragraphs;
mod ray;
mod report;
mod run;
mod s3;
mod scripts;
mod serve;
mod signals;
mod slurm;
mod substrings;
mod sweep;
mod tasks;
mod terminal;
