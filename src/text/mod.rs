//! Text handling: normalisation, tokenisation, and shingling into 64-bit hash sets.

pub mod diff;
pub mod features;
pub mod normalize;
pub mod script;
pub mod shingle;
pub mod tokenize;
