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

    /// `--sweep`: the bands (bands, rows) it adds to the run's layout when its lowest threshold
    /// is below the run's, so that the two find a pair at that threshold as a run there would
    /// ([`crate::lsh::choose_sweep_bands`]); their band rows and candidates are the sweep's.
    pub(crate) fn sweep_layout(&self) -> Option<(usize, usize)> {
        let cfg = &self.config;
        let lowest = *cfg.sweep.first()?;
        let target = crate::config::LSH_TARGET_RECALL;
        let run = (cfg.bands, cfg.rows);
        (lowest < cfg.threshold)
            .then(|| crate::lsh::choose_sweep_bands(lowest, run, cfg.num_perm, target))
    }

    /// `--sweep`: the probability that the run's and the sweep's layouts together find a pair
    /// of Jaccard `s` ([`crate::lsh::union_probability`]).
    pub(crate) fn sweep_recall(&self, s: f64) -> f64 {
        let cfg = &self.config;
        let sweep = self.sweep_layout().unwrap_or((0, 1));
        crate::lsh::union_probability(s, (cfg.bands, cfg.rows), sweep, cfg.num_perm)
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
