//! The pipeline stages, one module per stage, in run order; each holds the stage's task (`run`)
//! and the algorithms only it uses. The stage list is [`crate::plan::Stage`]; what each task reads
//! and writes is in [`crate::plan`] and [`crate::io::work`].
//!
//! lines (plain local JSON Lines) -> sample, frequencies (SimHash only) -> signatures -> candidates -> pair-signatures (`--work-keys
//! remade`) -> verify -> keys -> exact -> sweep (`--sweep`) -> cluster ->
//! paragraphs (`--paragraphs`) -> substrings, sources (`--substrings`) -> manifest -> merge.

pub(crate) mod candidates;
pub(crate) mod cluster;
pub(crate) mod drop_spans;
pub(crate) mod frequencies;
pub(crate) mod index;
pub(crate) mod keys;
pub(crate) mod lines;
pub(crate) mod lookup;
pub(crate) mod manifest;
pub(crate) mod merge;
pub(crate) mod pair_signatures;
pub(crate) mod paragraphs;
pub(crate) mod remade;
pub(crate) mod sample;
pub(crate) mod signatures;
pub(crate) mod sources;
pub(crate) mod substrings;
pub(crate) mod sweep;
pub(crate) mod verify;

/// The documents at each keep position, from
/// [`crate::io::doc_columns::keep_positions`].
pub(crate) fn documents_by_position(rank: &[u32]) -> Vec<u32> {
    let mut doc_at = vec![cluster::NOT_TONIGHT; rank.len()];
    for (d, &k) in rank.iter().enumerate() {
        if let Some(slot) = doc_at.get_mut(k as usize) {
            *slot = d as u32;
        }
    }
    doc_at
}
