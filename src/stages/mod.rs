//! The pipeline stages, in order. Each is a function from columns/frames to columns/frames:
//! signature (text -> MinHash signatures; `fingerprint` for SimHash), bands (signatures -> band rows), candidates (band rows -> pairs),
//! verify (pairs -> edges), cluster (edges -> clusters), manifest (clusters -> manifest frame).

pub mod bands;
pub mod candidates;
pub mod cluster;
pub mod fingerprint;
pub mod manifest;
pub mod signature;
pub mod verify;
