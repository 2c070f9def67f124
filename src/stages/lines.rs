//! Stage `lines` (plain local JSON Lines, one task per part): a few byte ranges of the input
//! files -> the documents, blank lines and group starts of each ([`crate::io::jsonl::ranges`]),
//! in the task's marker. Every later task settles the plan from them
//! ([`crate::plan::Plan::settle_lines`]).
//!
//! Invariants: a range's count depends on the file's bytes only, never on the other ranges or the
//! task counts; a file changed since the plan listed it is refused, naming it.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::io::jsonl::ranges::{count_range, RangeCount};
use crate::io::jsonl::ROWS_PER_GROUP;
use crate::plan::Plan;

/// Counters of a lines task, and its counts.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct LinesStats {
    /// Documents and bytes of its ranges.
    pub documents: u64,
    pub bytes: u64,
    pub ranges: Vec<RangeCount>,
}

/// The lines task `t`.
pub(crate) fn run(plan: &Plan, t: usize) -> Result<LinesStats> {
    let ranges = plan.ranges_of_task(t);
    let mut files: Vec<usize> = ranges.iter().map(|r| r.0).collect();
    files.dedup();
    for &i in &files {
        let f = &plan.files[i];
        crate::io::input::check_unchanged(&f.file, f.bytes, &f.fingerprint, |what| {
            Error::InputChanged {
                file: f.file.clone(),
                what,
            }
        })?;
    }
    let per_group = crate::hooks::jsonl_group_rows(ROWS_PER_GROUP);
    let counts: Vec<RangeCount> = ranges
        .par_iter()
        .map(|&(i, r, a, b)| count_range(&plan.files[i].file, (a, b), per_group, (i, r)))
        .collect::<Result<_>>()?;
    Ok(LinesStats {
        documents: counts.iter().map(|c| c.rows).sum(),
        bytes: ranges.iter().map(|r| r.3 - r.2).sum(),
        ranges: counts,
    })
}
