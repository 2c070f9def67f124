//! Stage `sample` (SimHash only): the weighted features of the part's sampled documents.
//!
//! The document-frequency filter of [`crate::simhash::DocFrequency`] is computed over every
//! `stride`-th document of the whole input ([`Plan::sample_stride`], about
//! `--simhash-df-sample` documents). Each part's task featurises its sampled documents and keeps
//! their features in `sample/pP.bin`; the frequencies task counts them all, and the part's
//! signatures task reuses them, so no document is featurised twice. A chunk with no sampled
//! document is not read.
//!
//! Format of `sample/pP.bin`, little-endian:
//! ```text
//! header  "CDSAMPL1" | documents: u64 | xxh3-64 of the body: u64                  (24 bytes)
//! body    per sampled document, ascending: doc: u64 | n: u32 | n x (hash: u64, weight: f32)
//! ```

use xxhash_rust::xxh3::xxh3_64;

use crate::config::Config;
use crate::corpus::Corpus;
use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::io::work::sample_file;
use crate::io::{u32_at, u64_at};
use crate::plan::{Plan, DOCS_PER_CHUNK};
use crate::simhash::{features_of, FeatureParams, Features};

const MAGIC: &[u8; 8] = b"CDSAMPL1";
const HEADER: usize = 24;

/// The SimHash feature parameters of a configuration.
pub fn params(cfg: &Config) -> FeatureParams {
    FeatureParams {
        ngram: cfg.simhash_ngram,
        tf_cap: cfg.simhash_tf_cap,
        top_k: cfg.simhash_top_k,
    }
}

/// Counters of a sample task.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct SampleStats {
    pub sampled: u64,
}

/// The sample task of part `p`.
pub(crate) fn run(work: &OutputDir, plan: &Plan, p: usize) -> Result<SampleStats> {
    let stride = plan.sample_stride();
    let params = params(&plan.config);
    let mut sampled: Vec<(u64, Features)> = Vec::new();
    let mut first = plan.parts[p].0;
    for chunk in plan.chunks(p, crate::hooks::chunk_rows(DOCS_PER_CHUNK)) {
        let rows: u64 = chunk
            .iter()
            .map(|s| s.rows.as_ref().map_or(0, |r| r.end - r.start))
            .sum();
        // Sampled documents of the chunk: global indices first.. first + rows that stride divides.
        let docs: Vec<u64> = (first.div_ceil(stride) * stride..first + rows)
            .step_by(stride as usize)
            .collect();
        if !docs.is_empty() {
            let corpus = Corpus::load_slices(&chunk, &plan.config, |_| {})?;
            let local: Vec<u32> = docs.iter().map(|&d| (d - first) as u32).collect();
            let feats = features_of(|i| corpus.text(local[i]), local.len(), params);
            sampled.extend(docs.into_iter().zip(feats));
        }
        first += rows;
    }
    work.write_bytes(&sample_file(p), encode(&sampled))?;
    Ok(SampleStats {
        sampled: sampled.len() as u64,
    })
}

fn encode(sampled: &[(u64, Features)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(sampled.len() as u64).to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    for (doc, feats) in sampled {
        out.extend_from_slice(&doc.to_le_bytes());
        out.extend_from_slice(&(feats.len() as u32).to_le_bytes());
        for &(h, w) in feats {
            out.extend_from_slice(&h.to_le_bytes());
            out.extend_from_slice(&w.to_le_bytes());
        }
    }
    let check = xxh3_64(&out[HEADER..]);
    out[16..24].copy_from_slice(&check.to_le_bytes());
    out
}

/// The sampled documents of part `p` and their features, ascending by document.
pub(crate) fn read(work: &OutputDir, p: usize) -> Result<Vec<(u64, Features)>> {
    let name = sample_file(p);
    let bad = |msg: &str| Error::WorkFile {
        path: work.location(&name),
        source: msg.into(),
    };
    let bytes = work.read(&name)?.ok_or_else(|| bad("missing"))?;
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return Err(bad("not a sample file (bad header)"));
    }
    if xxh3_64(&bytes[HEADER..]) != u64_at(&bytes, 16) {
        return Err(bad("checksum mismatch (damaged file)"));
    }
    let docs = u64_at(&bytes, 8);
    let mut out = Vec::new();
    let mut at = HEADER;
    for _ in 0..docs {
        if at + 12 > bytes.len() {
            return Err(bad("truncated"));
        }
        let doc = u64_at(&bytes, at);
        let n = u32_at(&bytes, at + 8) as usize;
        at += 12;
        if at + 12 * n > bytes.len() {
            return Err(bad("truncated"));
        }
        let feats = (0..n)
            .map(|j| {
                let f = at + 12 * j;
                (u64_at(&bytes, f), f32::from_bits(u32_at(&bytes, f + 8)))
            })
            .collect();
        at += 12 * n;
        out.push((doc, feats));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_files_read_back_and_damage_is_caught() {
        let dir = std::env::temp_dir().join(format!("cd-sample-{}", std::process::id()));
        let work = OutputDir::Local(dir.clone());
        let sampled = vec![(3, vec![(7, 0.5), (u64::MAX, 2.0)]), (9, Vec::new())];
        work.write_bytes(&sample_file(2), encode(&sampled)).unwrap();
        assert_eq!(read(&work, 2).unwrap(), sampled);
        let mut bad = encode(&sampled);
        bad[HEADER + 13] ^= 1;
        work.write_bytes(&sample_file(2), bad).unwrap();
        assert!(read(&work, 2).unwrap_err().to_string().contains("checksum"));
        assert!(read(&work, 5).unwrap_err().to_string().contains("missing"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
