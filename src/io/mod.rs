//! Reading shards and writing outputs.

pub mod input;
pub mod object;
pub mod output;
pub mod pairs;
pub mod store;
