//! Reading shards and writing outputs and work files: input shards ([`input`]), local and
//! object-store directories ([`output`], [`object`]), and the work files of a task run ([`work`]
//! names them; [`store`], [`band_rows`] and [`pairs`] are the binary ones).

pub mod band_rows;
pub mod input;
pub mod object;
pub mod output;
pub mod pairs;
pub mod store;
pub mod work;
