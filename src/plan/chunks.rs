//! A part's rows as the signatures (and sample) tasks read them: its slice of each input file,
//! cut into chunks along row groups ([`Plan::chunks`]), or for a plan with files its tasks
//! count, each file in turn a chunk at a time ([`Chunker`]).

use std::ops::Range;

use crate::corpus::Slice;
use crate::io::jsonl::GroupStart;

use super::{InputFile, Plan};

impl Plan {
    /// Part `p`'s slices cut into chunks of at most `max_docs` rows each (local files only: an
    /// object-store shard is fetched whole, so its slice stays one chunk rather than being
    /// downloaded once per chunk). A signatures task reads and processes one chunk at a time.
    ///
    /// Chunks end on row-group boundaries where they can: a chunk is whole row groups (or the
    /// part's share of one), one slice each, which the reader decodes in parallel; a row group
    /// over `max_docs` rows is cut into equal pieces. Parquet is decompressed a page at a time
    /// from the start of a row group, so a chunk ending inside a group would make the next one
    /// decode the group's first rows again.
    ///
    /// Chunk sizes: the first aims at an eighth of `max_docs`, the last `2 * max_docs` rows at
    /// halving sizes down to an eighth (the task's workers wait for the first chunk to be read
    /// and for the last one to be stored, so short ends keep both waits short), and the others
    /// at `max_docs`; a chunk takes at least one piece. How a part is chunked never changes a
    /// result.
    pub(crate) fn chunks(&self, p: usize, max_docs: u64) -> Vec<Vec<Slice>> {
        let max_docs = max_docs.max(1);
        let small = (max_docs / 8).max(1);
        let r = self.part_range(p);
        // Pieces: (slice, fetched whole) in order, each within one row group.
        let mut pieces: Vec<(Slice, bool)> = Vec::new();
        let piece = |f: &InputFile, rows: Range<u64>, start: Option<&GroupStart>| Slice {
            file: f.file.clone(),
            rows: Some(rows),
            start: start.copied(),
            open: false,
        };
        for f in &self.files {
            let (lo, hi) = (r.start.max(f.first_doc), r.end.min(f.first_doc + f.rows));
            if f.rows == 0 || lo >= hi {
                continue;
            }
            let (lo, hi) = (lo - f.first_doc, hi - f.first_doc);
            if crate::io::object::is_url(&f.file) {
                pieces.push((piece(f, lo..hi, None), true));
                continue;
            }
            let single = [f.rows];
            let groups = if f.row_groups.is_empty() {
                &single[..]
            } else {
                &f.row_groups[..]
            };
            let mut g_start = 0;
            for (i, &g) in groups.iter().enumerate() {
                let (a, b) = (lo.max(g_start), hi.min(g_start + g));
                // Where the group starts in a plain JSON Lines file (the first at the file's).
                let start = i.checked_sub(1).and_then(|i| f.group_starts.get(i));
                if a < b {
                    let n = (b - a).div_ceil(max_docs);
                    let per = (b - a).div_ceil(n);
                    let mut x = a;
                    while x < b {
                        pieces.push((piece(f, x..(x + per).min(b), start), false));
                        x += per;
                    }
                }
                g_start += g;
            }
        }
        let total: u64 = (pieces.iter().filter_map(|(s, _)| s.rows.as_ref()))
            .map(|r| r.end - r.start)
            .sum();
        let target = |done: u64| {
            let left = total - done;
            if done == 0 {
                small
            } else if left > 2 * max_docs {
                max_docs
            } else {
                (left / 2).max(small)
            }
        };
        let mut chunks = Vec::new();
        let mut cur: Vec<Slice> = Vec::new();
        let (mut done, mut in_cur) = (0u64, 0u64);
        for (slice, whole) in pieces {
            let n = slice.rows.as_ref().map_or(0, |r| r.end - r.start);
            let fits = in_cur + n <= target(done - in_cur).max(small) && in_cur + n <= max_docs;
            if !cur.is_empty() && (whole || !fits) {
                chunks.push(std::mem::take(&mut cur));
                in_cur = 0;
            }
            cur.push(slice);
            in_cur += n;
            done += n;
            if whole {
                chunks.push(std::mem::take(&mut cur));
                in_cur = 0;
            }
        }
        if !cur.is_empty() {
            chunks.push(cur);
        }
        chunks
    }
}

/// Where a signatures task is in its part: the chunk it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum At {
    /// Chunk `i` of [`Plan::chunks`] (a plan that counted its files).
    Planned(usize),
    /// Rows from `from` of the plan's file `file` (a plan with files its tasks count).
    File { file: usize, from: u64 },
    /// The plan's small files `first..end`, each whole (its task counts them).
    Files { first: usize, end: usize },
}

/// The chunks of part `p` one after another: the plan's; or for a plan with files its tasks
/// count, `max_docs` rows at a time of each of the part's files in turn, a file its task counts
/// read until a chunk comes back short (one on object storage in one chunk: it is fetched whole),
/// and local files of an estimated quarter chunk or less read whole, several to a chunk.
pub(crate) struct Chunker<'a> {
    plan: &'a Plan,
    p: usize,
    max_docs: u64,
    planned: Vec<Vec<Slice>>,
}

impl<'a> Chunker<'a> {
    pub(crate) fn new(plan: &'a Plan, p: usize, max_docs: u64) -> Chunker<'a> {
        let planned = match plan.counted() {
            true => plan.chunks(p, max_docs),
            false => Vec::new(),
        };
        Chunker {
            plan,
            p,
            max_docs: max_docs.max(1),
            planned,
        }
    }

    /// The part's first chunk (None: the part has no rows).
    pub(crate) fn first(&self) -> Option<(At, Vec<Slice>)> {
        match self.plan.counted() {
            true => self.planned(0),
            false => self.file_from(self.plan.part_files.get(self.p)?.0, 0),
        }
    }

    /// The chunk after the one at `at`, which read `rows` rows (None: the part is done).
    pub(crate) fn after(&self, at: At, rows: u64) -> Option<(At, Vec<Slice>)> {
        let (file, from) = match at {
            At::Planned(i) => return self.planned(i + 1),
            At::Files { end, .. } => return self.file_from(end, 0),
            At::File { file, from } => (file, from),
        };
        let f = &self.plan.files[file];
        let remote = crate::io::object::is_url(&f.file);
        let more = match f.uncounted {
            true => !remote && rows == self.max_docs,
            false => !remote && from + rows < f.rows,
        };
        match more {
            true => self.file_from(file, from + rows),
            false => self.file_from(file + 1, 0),
        }
    }

    fn planned(&self, i: usize) -> Option<(At, Vec<Slice>)> {
        (self.planned.get(i)).map(|c| (At::Planned(i), c.clone()))
    }

    /// Whether the plan's file `i` is read whole in a chunk with others: local, uncounted, and
    /// estimated at a quarter chunk or less.
    fn small(&self, i: usize) -> bool {
        let f = &self.plan.files[i];
        f.uncounted && !crate::io::object::is_url(&f.file) && f.estimated_rows <= self.max_docs / 4
    }

    /// Rows from `from` of the plan's file `file` (with the small files after a small one, up to
    /// an estimated chunk), or when it is past the part's files, none.
    fn file_from(&self, file: usize, from: u64) -> Option<(At, Vec<Slice>)> {
        let end = self.plan.part_files.get(self.p)?.1;
        let f = self.plan.files.get(file).filter(|_| file < end)?;
        if from == 0 && self.small(file) {
            let mut last = file + 1;
            let mut docs = f.estimated_rows;
            while last < end && self.small(last) {
                docs += self.plan.files[last].estimated_rows;
                if docs > self.max_docs {
                    break;
                }
                last += 1;
            }
            let slices = (self.plan.files[file..last].iter())
                .map(|g| Slice {
                    file: g.file.clone(),
                    rows: None,
                    start: None,
                    open: true,
                })
                .collect();
            return Some((
                At::Files {
                    first: file,
                    end: last,
                },
                slices,
            ));
        }
        let remote = crate::io::object::is_url(&f.file);
        let rows = match (f.uncounted, remote) {
            (true, true) => None,
            (true, false) => Some(from..from + self.max_docs),
            (false, true) => Some(0..f.rows),
            (false, false) => Some(from..(from + self.max_docs).min(f.rows)),
        };
        let slice = Slice {
            file: f.file.clone(),
            rows,
            start: None,
            open: f.uncounted,
        };
        Some((At::File { file, from }, vec![slice]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_of_uncounted_files_is_read_file_by_file_small_ones_together() {
        let mut plan = crate::plan::tests::tiny_plan();
        let file = |name: &str, rows: u64, estimated_rows: u64| InputFile {
            file: name.to_string(),
            rows,
            uncounted: estimated_rows > 0,
            estimated_rows,
            ..plan.files[0].clone()
        };
        plan.files = vec![
            file("a.parquet", 10, 0),
            file("b.jsonl.zst", 0, 1),
            file("c.jsonl.gz", 0, 2),
            file("d.jsonl.zst", 0, 100),
        ];
        plan.part_files = vec![(0, 4)];
        let c = Chunker::new(&plan, 0, 8);
        let rows = |s: &[Slice]| -> Vec<(String, Option<Range<u64>>, bool)> {
            s.iter()
                .map(|x| (x.file.clone(), x.rows.clone(), x.open))
                .collect()
        };
        let (at, s) = c.first().unwrap();
        assert_eq!(at, At::File { file: 0, from: 0 });
        assert_eq!(rows(&s), vec![("a.parquet".into(), Some(0..8), false)]);
        let (at, s) = c.after(at, 8).unwrap();
        assert_eq!(rows(&s), vec![("a.parquet".into(), Some(8..10), false)]);
        // b and c are small (a quarter chunk or less): read whole, together.
        let (at, s) = c.after(at, 2).unwrap();
        assert_eq!(at, At::Files { first: 1, end: 3 });
        assert_eq!(
            rows(&s),
            vec![
                ("b.jsonl.zst".into(), None, true),
                ("c.jsonl.gz".into(), None, true)
            ]
        );
        // d is read a chunk at a time until one comes back short.
        let (at, s) = c.after(at, 5).unwrap();
        assert_eq!(rows(&s), vec![("d.jsonl.zst".into(), Some(0..8), true)]);
        let (at, s) = c.after(at, 8).unwrap();
        assert_eq!(rows(&s), vec![("d.jsonl.zst".into(), Some(8..16), true)]);
        assert!(c.after(at, 3).is_none());
    }
}
