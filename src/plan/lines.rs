//! Plain local JSON Lines files, counted by the `lines` stage instead of by the plan: the plan
//! lists each with its size and cuts it into byte ranges ([`cut_ranges`]); the stage's tasks
//! count the lines of a few ranges each ([`crate::io::jsonl::ranges`]), in parallel, before any
//! other stage; every later task sees the plan settled from their counts ([`Plan::settle_lines`]):
//! the file's documents, blank lines and row groups (a group starts at each range's first line),
//! and then, when every file is counted, parts cut by documents as for any counted input. No task
//! reads a document before the plan is settled, so every result is what a plan that counted the
//! file itself gives.

use crate::error::{Error, Result};
use crate::io::jsonl::ranges::{self, RangeCount};
use crate::io::output::OutputDir;

use super::{InputFile, Plan, Stage};

/// The smallest byte range a file is cut into (a `lines` task counts a range at memory speed,
/// so a smaller one would only add tasks' start-up).
const MIN_RANGE_BYTES: u64 = 64 << 20;

/// The work file that holds the `lines` tasks' counts, gathered once from their markers.
pub(crate) const LINE_COUNTS: &str = "lines.json";

/// Whether `file` is counted by the `lines` stage: a plain JSON Lines file on a local disk (one
/// on object storage is fetched whole by one signatures task, and counted there).
pub(crate) fn counted_in_ranges(file: &str) -> bool {
    use crate::io::jsonl;
    jsonl::is_jsonl(file)
        && jsonl::compression(file) == jsonl::Compression::None
        && !crate::io::object::is_url(file)
}

/// Cuts each of `files` the `lines` stage counts into byte ranges (their starts, in
/// [`InputFile::ranges`]): of about equal size, at least [`MIN_RANGE_BYTES`], about as many in
/// all as `parts` when the files are large enough.
pub(super) fn cut_ranges(files: &mut [InputFile], parts: u64) {
    let ranged = |f: &InputFile| counted_in_ranges(&f.file);
    let total: u64 = files.iter().filter(|f| ranged(f)).map(|f| f.bytes).sum();
    let min = crate::hooks::jsonl_range_bytes(MIN_RANGE_BYTES).max(1);
    let size = total.div_ceil(parts.max(1)).max(min);
    for f in files.iter_mut().filter(|f| ranged(f)) {
        let n = f.bytes.div_ceil(size).max(1);
        f.ranges = (0..n).map(|i| i * f.bytes / n).collect();
    }
}

impl Plan {
    /// Whether a file of this plan is counted by the `lines` stage.
    pub(crate) fn has_ranges(&self) -> bool {
        self.files.iter().any(|f| !f.ranges.is_empty())
    }

    /// The byte ranges `lines` task `t` counts: (file, range, start, end), spread evenly in
    /// order over the stage's tasks.
    pub(crate) fn ranges_of_task(&self, t: usize) -> Vec<(usize, usize, u64, u64)> {
        let all: Vec<(usize, usize, u64, u64)> = (self.files.iter().enumerate())
            .flat_map(|(i, f)| {
                (0..f.ranges.len()).map(move |r| {
                    let end = f.ranges.get(r + 1).copied().unwrap_or(f.bytes);
                    (i, r, f.ranges[r], end)
                })
            })
            .collect();
        let tasks = self.tasks(Stage::Lines).max(1);
        let (a, b) = (t * all.len() / tasks, (t + 1) * all.len() / tasks);
        all.get(a..b).map(<[_]>::to_vec).unwrap_or_default()
    }

    /// The plan with its ranged files counted from `counts` (every range of every such file):
    /// rows, blank lines, row groups and group starts; then the documents' numbers and parts
    /// when every file is counted, or parts of whole files when files the signatures tasks count
    /// remain.
    pub(crate) fn settle_lines(&mut self, counts: &[RangeCount]) -> Result<()> {
        let mut sorted: Vec<&RangeCount> = counts.iter().collect();
        sorted.sort_by_key(|c| (c.file, c.range));
        sorted.dedup_by_key(|c| (c.file, c.range));
        for (i, f) in self.files.iter_mut().enumerate() {
            if f.ranges.is_empty() || !f.uncounted {
                continue;
            }
            let from = sorted.partition_point(|c| c.file < i);
            let to = sorted.partition_point(|c| c.file <= i);
            let mine = &sorted[from..to];
            if mine.len() != f.ranges.len() {
                return Err(Error::Internal(format!(
                    "{}: {} of its {} byte ranges counted",
                    f.file,
                    mine.len(),
                    f.ranges.len()
                )));
            }
            let s = ranges::settle(mine);
            f.rows = s.rows;
            f.blank_lines = s.blank_lines;
            f.row_groups = s.row_groups;
            f.group_starts = s.group_starts;
            f.uncounted = false;
        }
        let n = self.parts.len() as u64;
        match self.counted() {
            true => {
                let mut next = 0;
                for f in &mut self.files {
                    f.first_doc = next;
                    next += f.rows;
                }
                self.documents = next;
                self.parts = super::count::even_parts(next, n);
                self.part_files = Vec::new();
                super::check_documents(&self.config, next, &self.parts)
            }
            false => {
                self.part_files = super::count::cut_by_files(&self.files, n);
                Ok(())
            }
        }
    }

    /// [`Plan::settle_lines`] from the markers of the `lines` tasks in `work`, before a task of a
    /// later stage runs (a no-op for a plan without ranges, or settled already). The counts are
    /// gathered from every marker once and kept in [`LINE_COUNTS`] for the other tasks.
    pub(crate) fn settle_lines_from(&mut self, work: &OutputDir) -> Result<()> {
        if !self
            .files
            .iter()
            .any(|f| !f.ranges.is_empty() && f.uncounted)
        {
            return Ok(());
        }
        super::count::gather_and_settle(
            self,
            work,
            (Stage::Lines, "ranges", LINE_COUNTS, "the counted lines"),
            Plan::settle_lines,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_plain_files_are_cut_into_ranges_spread_over_the_tasks() {
        let mut plan = crate::plan::tests::tiny_plan();
        let file = |name: &str, bytes: u64| InputFile {
            file: name.to_string(),
            bytes,
            uncounted: true,
            ..plan.files[0].clone()
        };
        plan.files = vec![
            file("a.jsonl", 300 << 20),
            file("b.jsonl.zst", 300 << 20),
            file("c.ndjson", 10),
        ];
        plan.parts = vec![(0, 0); 4];
        cut_ranges(&mut plan.files, 4);
        // 300 MiB + 10 bytes over 4 parts: ranges of ~75 MiB.
        assert_eq!(plan.files[0].ranges.len(), 4);
        assert_eq!(plan.files[0].ranges[0], 0);
        assert!(
            plan.files[1].ranges.is_empty(),
            "compressed: counted by its task"
        );
        assert_eq!(plan.files[2].ranges, vec![0]);
        let all: Vec<_> = (0..4).flat_map(|t| plan.ranges_of_task(t)).collect();
        assert_eq!(all.len(), 5);
        assert_eq!(all[3].3, 300 << 20, "the last range ends at the file's end");
        assert_eq!(all[4], (2, 0, 0, 10));
        assert!(all.windows(2).all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1)));
        // Small inputs: one range per file, however many parts.
        cut_ranges(&mut plan.files, 64);
        assert_eq!(plan.files[0].ranges.len(), 5, "at least 64 MiB a range");
    }
}
