//! Stage `frequencies` (SimHash only): the features of every part's sample -> the filter of
//! over-frequent features ([`DocFrequency`]) that every signatures task applies.
//!
//! `frequencies.bin` is the filter's bit words followed by their xxh3-64 (512 KiB + 8 bytes).

use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::io::work::FREQUENCIES;
use crate::plan::Plan;
use crate::simhash::DocFrequency;
use crate::stages::sample;

/// Counters of the frequencies task.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct FrequencyStats {
    /// Sampled documents (every stride-th one, with or without features).
    pub sampled: u64,
}

/// The frequencies task.
pub(crate) fn run(work: &OutputDir, plan: &Plan) -> Result<FrequencyStats> {
    let mut features = Vec::new();
    for p in 0..plan.parts.len() {
        features.extend(sample::read(work, p)?.into_iter().map(|(_, f)| f));
    }
    let sampled = plan.documents.div_ceil(plan.sample_stride());
    let df = DocFrequency::from_sample(
        features.iter().map(Vec::as_slice),
        sampled,
        plan.config.simhash_max_df,
    );
    let mut bytes = df.to_bytes();
    let check = xxh3_64(&bytes);
    bytes.extend_from_slice(&check.to_le_bytes());
    work.write_bytes(FREQUENCIES, bytes)?;
    Ok(FrequencyStats { sampled })
}

/// Reads the filter the frequencies task wrote.
pub(crate) fn read(work: &OutputDir) -> Result<DocFrequency> {
    read_from(work, FREQUENCIES, |path, msg| Error::WorkFile {
        path,
        source: msg.into(),
    })
}

/// Reads the filter a retained index keeps as `name`.
pub(crate) fn read_index(index: &OutputDir, name: &str) -> Result<DocFrequency> {
    read_from(index, name, |path, msg| Error::IndexFile {
        path,
        source: msg.into(),
    })
}

fn read_from(
    dir: &OutputDir,
    name: &str,
    err: fn(String, String) -> Error,
) -> Result<DocFrequency> {
    let bad = |msg: &str| err(dir.location(name), msg.to_string());
    let bytes = dir.read(name)?.ok_or_else(|| bad("missing"))?;
    let Some(split) = bytes.len().checked_sub(8) else {
        return Err(bad("truncated"));
    };
    let (words, check) = bytes.split_at(split);
    let mut c = [0u8; 8];
    c.copy_from_slice(check);
    if xxh3_64(words) != u64::from_le_bytes(c) {
        return Err(bad("checksum mismatch (damaged file)"));
    }
    DocFrequency::from_bytes(words).ok_or_else(|| bad("wrong length"))
}
