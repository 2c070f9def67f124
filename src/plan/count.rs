//! Files the plan does not count: compressed JSON Lines and JSON Lines on object storage
//! ([`crate::io::jsonl::counted_by_tasks`]). Counting them would mean decompressing (or
//! fetching) every one of them in the plan, serially before any task starts, and again in the
//! signatures tasks. Instead a plan holding one cuts its parts along whole files, each part's
//! signatures task counts the documents of its files as it reads them (its work files number
//! documents by their position in the part), and every later stage sees the plan *settled*:
//! the counts from the signatures tasks' markers, the global document numbers a prefix sum over
//! them ([`Plan::settle`]). Every result is the same as with counted files: it depends on the
//! documents and the settings only, never on how the parts were cut.
//!
//! SimHash's document-frequency sample is every `stride`-th document of the input, which its
//! `sample` stage needs before the signatures stage: such a run counts every file in the plan.

use serde::{Deserialize, Serialize};

use super::{InputFile, Plan, Stage};
use crate::error::{Error, Result};
use crate::io::jsonl;
use crate::io::output::OutputDir;
use crate::io::work::COUNTS;

/// Files whose first MiB is read through to estimate how many documents a byte holds.
const HEAD_FILES: usize = 8;

/// Up to `n` of `items`, spread evenly over the list, in order.
pub(crate) fn spread<T: Copy>(items: &[T], n: usize) -> Vec<T> {
    let n = items.len().min(n);
    (0..n).map(|i| items[i * items.len() / n]).collect()
}

/// Up to [`HEAD_FILES`] uncounted files spread over the list (their positions), each with the
/// documents whose lines end in its first MiB and the bytes read
/// ([`jsonl::head_documents`]).
pub(crate) fn heads(files: &[InputFile]) -> Result<Vec<(usize, (u64, u64))>> {
    use rayon::prelude::*;
    let uncounted: Vec<usize> = (0..files.len()).filter(|&i| files[i].uncounted).collect();
    spread(&uncounted, HEAD_FILES)
        .par_iter()
        .map(|&i| jsonl::head_documents(&files[i].file).map(|h| (i, h)))
        .collect()
}

/// Sets each uncounted file's `estimated_rows`, for cutting parts and bucket ranges before it is
/// read (they only spread work over tasks): its bytes times the documents per byte of the
/// [`heads`] (a thousand bytes a document when none has a whole line there).
pub(super) fn estimate_rows(files: &mut [InputFile]) -> Result<()> {
    let heads = heads(files)?;
    let (docs, bytes) = (heads.iter()).fold((0, 0), |(d, b), (_, h)| (d + h.0, b + h.1));
    let per_byte = match docs > 0 && bytes > 0 {
        true => docs as f64 / bytes as f64,
        false => 1e-3,
    };
    for f in files.iter_mut().filter(|f| f.uncounted) {
        f.estimated_rows = ((f.bytes as f64 * per_byte).round() as u64).max(1);
    }
    Ok(())
}

/// A file's documents, or for a file not counted yet its estimate.
pub(super) fn weight(f: &InputFile) -> u64 {
    match f.uncounted {
        true => f.estimated_rows,
        false => f.rows,
    }
}

/// The documents of a file the signatures task of its part counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileCount {
    /// The file's position in the plan's list.
    pub file: usize,
    pub rows: u64,
    pub blank_lines: u64,
}

/// `documents` cut into `n` contiguous parts of about equal size. More parts than documents: the
/// surplus parts are empty, which every stage accepts.
pub(super) fn even_parts(documents: u64, n: u64) -> Vec<(u64, u64)> {
    let per = documents.div_ceil(n).max(1);
    (0..n)
        .map(|i| (i * per).min(documents))
        .map(|first| (first, per.min(documents - first)))
        .collect()
}

/// Parts as ranges of whole files, `n` of them, of about equal (estimated) documents: a file
/// goes to the part its middle falls in (a part may be empty).
pub(super) fn cut_by_files(files: &[InputFile], n: u64) -> Vec<(usize, usize)> {
    let total: u64 = files.iter().map(weight).sum::<u64>().max(1);
    let mut parts = vec![(0usize, 0usize); n as usize];
    let (mut before, mut next) = (0u64, 0usize);
    for (p, part) in parts.iter_mut().enumerate() {
        let start = next;
        while next < files.len() {
            let middle = before + weight(&files[next]) / 2;
            if (u128::from(middle) * u128::from(n) / u128::from(total)) as usize > p {
                break;
            }
            before += weight(&files[next]);
            next += 1;
        }
        *part = (start, next);
    }
    // Whatever rounding left over joins the last part.
    if let Some(last) = parts.last_mut() {
        last.1 = files.len();
    }
    parts
}

impl Plan {
    /// True when every file's documents are counted: by the plan, or (settled) by the
    /// signatures tasks.
    pub(crate) fn counted(&self) -> bool {
        self.files.iter().all(|f| !f.uncounted)
    }

    /// Documents of the input, or before its files are counted an estimate for spreading work.
    pub(crate) fn documents_or_estimate(&self) -> u64 {
        self.files.iter().map(weight).sum()
    }

    /// Part `p`'s documents, or before its files are counted an estimate (a progress bar's).
    pub(crate) fn part_weight(&self, p: usize) -> u64 {
        match (self.counted(), self.part_files.get(p)) {
            (false, Some(&(a, b))) => self.files[a..b].iter().map(weight).sum(),
            _ => self.parts.get(p).map_or(0, |x| x.1),
        }
    }

    /// The input files of part `p`, in order.
    pub(crate) fn files_of_part(&self, p: usize) -> &[InputFile] {
        match self.part_files.get(p) {
            Some(&(a, b)) => &self.files[a..b],
            None => {
                let r = self.part_range(p);
                let a = self
                    .files
                    .partition_point(|f| f.first_doc + f.rows <= r.start);
                let b = self.files.partition_point(|f| f.first_doc < r.end);
                &self.files[a..b.max(a)]
            }
        }
    }

    /// The plan with the documents of its uncounted files set from `counts` (what the signatures
    /// tasks read): rows, blank lines and row groups per file, global document numbers, parts.
    pub(crate) fn settle(&mut self, counts: &[FileCount]) -> Result<()> {
        for c in counts {
            let Some(f) = self.files.get_mut(c.file).filter(|f| f.uncounted) else {
                continue;
            };
            f.rows = c.rows;
            f.blank_lines = c.blank_lines;
            f.row_groups = jsonl::row_groups(&f.file, c.rows);
            f.uncounted = false;
        }
        if let Some(f) = self.files.iter().find(|f| f.uncounted) {
            return Err(Error::Internal(format!(
                "{}: no signatures task counted its documents",
                f.file
            )));
        }
        let mut next = 0u64;
        for f in &mut self.files {
            f.first_doc = next;
            next += f.rows;
        }
        self.documents = next;
        let files = &self.files;
        self.parts = (self.part_files.iter())
            .map(|&(a, b)| {
                let first = files.get(a).map_or(next, |f| f.first_doc);
                (first, files[a..b].iter().map(|f| f.rows).sum())
            })
            .collect();
        super::check_documents(&self.config, next, &self.parts)
    }

    /// [`Plan::settle`] from the markers of the signatures tasks in `work`, before a task of a
    /// later stage runs (a no-op for a plan that counted its files). The counts are gathered from
    /// every marker once and kept in [`COUNTS`] for the other tasks (written whole, the same
    /// bytes by whichever task writes them).
    pub(crate) fn settle_from(&mut self, work: &OutputDir) -> Result<()> {
        self.settle_lines_from(work)?;
        if self.counted() {
            return Ok(());
        }
        gather_and_settle(
            self,
            work,
            (
                Stage::Signatures,
                "counted",
                COUNTS,
                "the counted documents",
            ),
            Plan::settle,
        )
    }
}

/// Settles `plan` with the lists the markers of `stage` hold under `field` (`(stage, field,
/// cache, what)`; a null field is an empty list). The lists are gathered from every marker once
/// and, once settled, kept in the work file `cache` for the other tasks (written whole, the
/// same bytes by whichever task writes them); `what` names them in a parse error.
pub(super) fn gather_and_settle<T: Serialize + serde::de::DeserializeOwned>(
    plan: &mut Plan,
    work: &OutputDir,
    (stage, field, cache, what): (Stage, &str, &str, &'static str),
    settle: impl FnOnce(&mut Plan, &[T]) -> Result<()>,
) -> Result<()> {
    if let Some(bytes) = work.read(cache)? {
        let items: Vec<T> = serde_json::from_slice(&bytes).map_err(|source| Error::WorkFile {
            path: work.location(cache),
            source: crate::error::FileError::Parse { what, source },
        })?;
        return settle(plan, &items);
    }
    let mut items = Vec::new();
    for report in super::require_stage(work, plan, stage)? {
        let listed = report.stats.get(field).cloned().unwrap_or_default();
        let of_task: Vec<T> = match listed.is_null() {
            true => Vec::new(),
            false => serde_json::from_value(listed)
                .map_err(|e| Error::Internal(format!("a {} marker's counts: {e}", stage.name())))?,
        };
        items.extend(of_task);
    }
    settle(plan, &items)?;
    work.write_bytes(cache, serde_json::to_vec(&items).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, rows: u64, bytes: u64, uncounted: bool) -> InputFile {
        InputFile {
            file: name.to_string(),
            rows,
            first_doc: 0,
            row_groups: Vec::new(),
            bytes,
            fingerprint: String::new(),
            blank_lines: 0,
            group_starts: Vec::new(),
            uncounted,
            estimated_rows: if uncounted { bytes * 3 } else { 0 },
            ranges: Vec::new(),
        }
    }

    #[test]
    fn parts_are_whole_files_of_about_equal_weight() {
        // Estimated 3,000 documents each.
        let files: Vec<InputFile> = (0..6)
            .map(|i| file(&format!("f{i}.jsonl.zst"), 0, 1_000, true))
            .collect();
        assert_eq!(cut_by_files(&files, 3), vec![(0, 2), (2, 4), (4, 6)]);
        assert_eq!(cut_by_files(&files, 1), vec![(0, 6)]);
        // More parts than files: some are empty, every file is in one.
        let parts = cut_by_files(&files[..2], 4);
        assert_eq!(parts.len(), 4);
        assert_eq!(parts.iter().map(|p| p.1 - p.0).sum::<usize>(), 2);
        assert!(parts.windows(2).all(|w| w[0].1 == w[1].0));
        // A counted file weighs its rows.
        let mixed = vec![
            file("a.parquet", 9_000, 1, false),
            files[0].clone(),
            files[1].clone(),
        ];
        assert_eq!(cut_by_files(&mixed, 2), vec![(0, 1), (1, 3)]);
    }

    #[test]
    fn settling_numbers_the_documents_in_file_order() {
        let files = vec![
            file("a.parquet", 5, 1, false),
            file("b.jsonl.zst", 0, 10, true),
            file("c.jsonl.gz", 0, 10, true),
        ];
        let mut plan = Plan {
            part_files: cut_by_files(&files, 2),
            files,
            documents: 0,
            parts: vec![(0, 0); 2],
            ..crate::plan::tests::tiny_plan()
        };
        assert!(!plan.counted());
        let counts = [
            FileCount {
                file: 2,
                rows: 4,
                blank_lines: 1,
            },
            FileCount {
                file: 1,
                rows: 3,
                blank_lines: 0,
            },
        ];
        assert!(
            plan.clone().settle(&counts[..1]).is_err(),
            "b was not counted"
        );
        plan.settle(&counts).unwrap();
        assert!(plan.counted());
        assert_eq!(plan.documents, 12);
        let firsts: Vec<u64> = plan.files.iter().map(|f| f.first_doc).collect();
        assert_eq!(firsts, vec![0, 5, 8]);
        assert_eq!(plan.files[2].blank_lines, 1);
        let total: u64 = plan.parts.iter().map(|p| p.1).sum();
        assert_eq!(total, 12);
        assert_eq!(plan.locate(9), ("c.jsonl.gz", 1));
    }
}
