//! Reading shards and writing outputs.

pub mod input;
pub mod output;
