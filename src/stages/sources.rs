//! Stage `sources` (`--substrings`; one task per part): the first copies of the part's windows
//! that its own removals would cut ([`PartInputs::cut_sources`]). The manifest tasks leave in
//! every window removed against one of them, so a removal always relies on a copy that stays
//! whole, and no first copy holds back a byte of its own document.
//!
//! Reads the part's drop files of every substrings (and paragraphs) task; writes
//! `substrings/cut-pP.parquet` (document, start).

use polars::prelude::Column;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::io::output::OutputDir;
use crate::io::work::{self, u32s};
use crate::plan::Plan;
use crate::stages::drop_spans::PartInputs;

/// Counters of a sources task.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct SourceStats {
    /// First copies that windows are removed against, and those of them that their own
    /// document's removals cut.
    pub sources: u64,
    pub cut: u64,
}

/// The sources task of part `p`.
pub(crate) fn run(work: &OutputDir, plan: &Plan, p: usize) -> Result<SourceStats> {
    let inputs = PartInputs::read(work, plan, p)?;
    let cut = inputs.cut_sources();
    let stats = SourceStats {
        sources: (inputs.windows.iter())
            .filter(|w| w.3 == crate::stages::drop_spans::FIRST_COPY)
            .count() as u64,
        cut: cut.len() as u64,
    };
    let (doc, start): (Vec<u32>, Vec<u32>) = cut.into_iter().unzip();
    let columns = vec![
        Column::new("doc".into(), doc),
        Column::new("start".into(), start),
    ];
    work::write_frame(work, &work::substring_cut_file(p), "sources", columns)?;
    Ok(stats)
}

/// Part `q`'s cut first copies, as its sources task wrote them.
pub(crate) fn read(work: &OutputDir, q: usize) -> Result<Vec<(u32, u32)>> {
    let df = work.read_parquet(&work::substring_cut_file(q))?;
    let (doc, start) = (
        u32s(&df, "doc", "manifest")?,
        u32s(&df, "start", "manifest")?,
    );
    Ok(doc.into_iter().zip(start).collect())
}
