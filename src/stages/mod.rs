//! The pipeline stages, one module per stage, in run order; each holds the stage's task (`run`)
//! and the algorithms only it uses. The stage list is [`crate::plan::Stage`]; what each task reads
//! and writes is in [`crate::plan`] and [`crate::io::work`].
//!
//! sample, frequencies (SimHash only) -> signatures -> candidates -> verify -> cluster ->
//! manifest -> merge.

pub mod candidates;
pub mod cluster;
pub mod frequencies;
pub mod index;
pub mod lookup;
pub mod manifest;
pub mod merge;
pub mod sample;
pub mod signatures;
pub mod verify;
