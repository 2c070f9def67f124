//! The plan's band layout: the run's LSH bands (MinHash) or block tables (SimHash), and with
//! `--sweep` the bands of its lowest threshold, whose candidates are the sweep's own.

use super::Plan;
use crate::config::Method;
use crate::simhash::BlockIndex;

impl Plan {
    /// LSH bands (MinHash) or block tables (SimHash): the band row files per part and bucket range.
    pub(crate) fn bands(&self) -> usize {
        match self.config.method {
            Method::Minhash => self.config.bands,
            Method::Simhash => self.block_index().tables(),
        }
    }

    /// Candidates tasks of the run's own layout (the first ones; the sweep's follow).
    pub(crate) fn run_candidates(&self) -> usize {
        self.bands() * self.bucket_ranges
    }

    /// `--sweep`: the LSH layout (bands, rows) of its lowest threshold when that is below the
    /// run's, whose band rows and candidates the sweep adds to the run's; None otherwise.
    pub(crate) fn sweep_layout(&self) -> Option<(usize, usize)> {
        let cfg = &self.config;
        let lowest = *cfg.sweep.first()?;
        (lowest < cfg.threshold).then(|| {
            crate::lsh::choose_bands(lowest, cfg.num_perm, crate::config::LSH_TARGET_RECALL)
        })
    }

    /// Bands the sweep adds (0 without a sweep layout).
    pub(crate) fn sweep_bands(&self) -> usize {
        self.sweep_layout().map_or(0, |(bands, _)| bands)
    }

    /// SimHash: the block tables for `--hamming` with `--simhash-blocks` blocks.
    pub(crate) fn block_index(&self) -> BlockIndex {
        BlockIndex::new(self.config.simhash_blocks, self.config.hamming)
    }
}
