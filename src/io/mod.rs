//! Reading shards and writing outputs.

pub mod band_rows;
pub mod input;
pub mod object;
pub mod output;
pub mod pairs;
pub mod store;
