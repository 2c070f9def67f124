//! Stage `substrings` (`--substrings`; one task per hash range of windows): which runs of kept
//! documents' text an earlier kept document, or the same one earlier, already retains.
//!
//! The rule: kept documents are taken in keep order, and a byte is removed when it lies in a
//! window ([`crate::text::substrings`]: a run of at least `--substring-min-bytes` bytes cut where
//! its content says) whose exact bytes are retained earlier: by an earlier kept document, or
//! earlier in the same document without overlapping the window. "Retained" is what `apply`
//! leaves, and removing bytes from the earlier copy could take that copy away. So a window is
//! removed only against a first copy that its own document's removals leave whole (three rounds
//! per part settle which, [`crate::stages::sources`]): what is removed is always held,
//! contiguous, by a copy that stays, earlier in keep order. That is the keeper guarantee for
//! substrings with no order between one removal and the next, so the rule needs no serial pass.
//!
//! Per (hash, length): the first copy in (keep position, offset) is the one that retains; every
//! later copy in another document, or in the same document starting at or after the first copy's
//! end, is removed against it. That is a minimum per hash, so the work splits by hash like
//! paragraphs: the signatures tasks wrote each window (hash, document, span) by hash range into
//! their part's row file; a task reads its range from every part, sorts the kept documents'
//! windows, and writes per part the removed windows and the first copies they rely on
//! (`substrings/drops-rR-pP.parquet`: document, offset, length, the document that retains it or
//! [`FIRST_COPY`] for a first copy, and the first copy's offset), which the part's sources rounds
//! and manifest tasks read.
//!
//! Memory: 8 bytes per document (keep positions) and 24 per window of a kept document in the
//! range, plus 2-4 per window to find the windows whose hash occurs once (most of them: they
//! decide nothing and skip the sort); the sort moves the rest into a second array.

use polars::prelude::Column;
use serde::{Deserialize, Serialize};

use crate::bucket_sort::sorted_by_leading_key;
use crate::error::Result;
use crate::io::output::OutputDir;
use crate::io::paragraph_rows;
use crate::io::work;
use crate::plan::Plan;

use crate::stages::drop_spans::FIRST_COPY;

/// Counters of a substrings task.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct SubstringStats {
    /// Windows of kept documents, and their distinct (hash, length) keys.
    pub windows: u64,
    pub distinct: u64,
    /// Windows found removable against an earlier copy, those of them within their own
    /// document, and the first copies they are removable against.
    pub removed: u64,
    pub removed_within_document: u64,
    pub first_copies: u64,
}

/// `--substrings` in the summary: the tasks' counters summed, and the bytes removed from the
/// manifest tasks' tallies.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct SubstringSummary {
    pub min_bytes: usize,
    pub windows: u64,
    pub distinct: u64,
    /// Windows found removable (some left in when their first copy is cut), those within their
    /// own document, the first copies they are removable against, and those of them their own
    /// document cuts (which retain nothing).
    pub windows_removable: u64,
    pub windows_removable_within_document: u64,
    pub first_copies: u64,
    pub first_copies_cut: u64,
    /// Bytes removed by this rule alone (with `--paragraphs` too, not those a removed paragraph
    /// already takes: a byte is counted once), and their share of the kept documents' text.
    pub bytes_removed: u64,
    pub kept_bytes: u64,
    pub share_removed: f64,
}

impl SubstringSummary {
    pub(crate) fn gather(
        min_bytes: usize,
        tasks: impl Iterator<Item = SubstringStats>,
        first_copies_cut: u64,
        by_file: &std::collections::BTreeMap<String, crate::tally::Tally>,
    ) -> SubstringSummary {
        let mut s = SubstringSummary {
            min_bytes,
            ..Default::default()
        };
        for t in tasks {
            s.windows += t.windows;
            s.distinct += t.distinct;
            s.windows_removable += t.removed;
            s.windows_removable_within_document += t.removed_within_document;
            s.first_copies += t.first_copies;
        }
        s.first_copies_cut = first_copies_cut;
        for t in by_file.values() {
            s.bytes_removed += t.substring_bytes_removed;
            s.kept_bytes += t.bytes - t.bytes_dropped;
        }
        s.share_removed = s.bytes_removed as f64 / s.kept_bytes.max(1) as f64;
        s
    }
}

/// One window of a kept document in a task's range: its key (hash, length), keep position and
/// offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Copy {
    pub hash: u64,
    pub len: u32,
    pub rank: u32,
    pub start: u32,
}

/// The decisions of one hash range, each `(document, start, length, retained by, the retaining
/// copy's start)` (retained by [`FIRST_COPY`] for a first copy that retains others), in
/// (document, start) order.
#[derive(Debug, Default)]
pub(crate) struct Decided {
    pub windows: Vec<(u32, u32, u32, u32, u32)>,
    pub stats: SubstringStats,
}

/// The rule over one range's windows of kept documents; `doc_at(position)` gives the document
/// at a keep position.
pub(crate) fn decide(mut copies: Vec<Copy>, doc_at: impl Fn(u32) -> u32) -> Decided {
    let mut out = Decided::default();
    out.stats.windows = copies.len() as u64;
    // Most windows occur once (their hash is in no other copy) and decide nothing: they are
    // left out before the sort, and counted as distinct keys.
    let seen = Repeats::of(&copies);
    copies.retain(|c| seen.repeated(c.hash));
    drop(seen);
    copies.shrink_to_fit();
    out.stats.distinct = out.stats.windows - copies.len() as u64;
    let copies = sorted_by_leading_key(copies, |c| c.hash);
    for run in copies.chunk_by(|a, b| (a.hash, a.len) == (b.hash, b.len)) {
        out.stats.distinct += 1;
        let first = run[0];
        let holder = doc_at(first.rank);
        let mut any = false;
        for c in &run[1..] {
            let same_doc = c.rank == first.rank;
            // In the same document only a copy past the first one's end: removing an
            // overlapping one would cut into the copy that retains it.
            if same_doc && c.start < first.start + first.len {
                continue;
            }
            any = true;
            out.windows
                .push((doc_at(c.rank), c.start, c.len, holder, first.start));
            out.stats.removed += 1;
            out.stats.removed_within_document += u64::from(same_doc);
        }
        if any {
            out.windows
                .push((holder, first.start, first.len, FIRST_COPY, first.start));
            out.stats.first_copies += 1;
        }
    }
    drop(copies);
    out.windows = sorted_by_leading_key(std::mem::take(&mut out.windows), |w| {
        u64::from(w.0) << 32 | u64::from(w.1)
    });
    out
}

/// Which hashes of a range's windows may occur more than once: two bitmaps over the hash's low
/// bits, set for slots seen once and twice. A hash whose slot was seen once is unique; a slot
/// seen twice may also hold unique hashes (about one in eight: eight or more slots per window),
/// which the sort then finds alone. Two to four bytes per window, beside the 24 of its record.
struct Repeats {
    once: Vec<u64>,
    twice: Vec<u64>,
    mask: u64,
}

impl Repeats {
    fn of(copies: &[Copy]) -> Repeats {
        let slots = (8 * copies.len()).next_power_of_two().max(64);
        let mut r = Repeats {
            once: vec![0; slots / 64],
            twice: vec![0; slots / 64],
            mask: slots as u64 - 1,
        };
        for c in copies {
            let (w, bit) = r.slot(c.hash);
            r.twice[w] |= r.once[w] & bit;
            r.once[w] |= bit;
        }
        r
    }

    #[inline]
    fn slot(&self, hash: u64) -> (usize, u64) {
        let i = hash & self.mask;
        ((i >> 6) as usize, 1 << (i & 63))
    }

    #[inline]
    fn repeated(&self, hash: u64) -> bool {
        let (w, bit) = self.slot(hash);
        self.twice[w] & bit != 0
    }
}

/// The substrings task of hash range `r`.
pub(crate) fn run(work: &OutputDir, plan: &Plan, r: usize) -> Result<SubstringStats> {
    let rank = crate::io::doc_columns::keep_positions(work, plan.parts.len(), plan.documents)?;
    let doc_at = super::documents_by_position(&rank);
    let mut copies: Vec<Copy> = Vec::new();
    for q in 0..plan.parts.len() {
        let files = work::substring_rows_files(q);
        let rows = paragraph_rows::read_range(
            work,
            &files,
            (r, plan.substring_ranges()),
            plan.parts[q].0,
        )?;
        // Exactly: doubling would leave up to half the task's largest buffer unused.
        copies.reserve_exact(rows.len());
        rows.for_each(|row| {
            let k = rank.get(row.doc as usize).copied().unwrap_or(u32::MAX);
            if k != u32::MAX {
                copies.push(Copy {
                    hash: row.hash,
                    len: row.len,
                    rank: k,
                    start: row.start,
                });
            }
        });
    }
    drop(rank);
    let decided = decide(copies, |k| doc_at[k as usize]);
    drop(doc_at);
    for (q, part) in plan
        .by_part(&decided.windows, |x| x.0.into())
        .into_iter()
        .enumerate()
    {
        let mut cols: [Vec<u32>; 5] = Default::default();
        for &(doc, start, len, by, from) in part {
            for (c, v) in cols.iter_mut().zip([doc, start, len, by, from]) {
                c.push(v);
            }
        }
        let [doc, start, len, by, from] = cols;
        let columns = vec![
            Column::new("doc".into(), doc),
            Column::new("start".into(), start),
            Column::new("len".into(), len),
            Column::new("retained_by".into(), by),
            Column::new("source_start".into(), from),
        ];
        work::write_frame(
            work,
            &work::substring_drops_file(r, q),
            "substrings",
            columns,
        )?;
    }
    Ok(decided.stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::substrings::tests::prose;
    use crate::text::substrings::{windows, Scratch};
    use crate::text::word_edges::is_edge;

    /// Runs the rule over `texts` (all kept, in keep order) with `ranges` hash ranges and merges
    /// as the manifest task does; returns each text's removed spans with their holders.
    pub(crate) fn spans_of(
        texts: &[&[u8]],
        min: usize,
        ranges: usize,
    ) -> Vec<Vec<(u32, u32, u32)>> {
        let mut by_range: Vec<Vec<Copy>> = vec![Vec::new(); ranges];
        let mut scratch = Scratch::default();
        for (d, t) in texts.iter().enumerate() {
            let mut w = Vec::new();
            windows(t, min, &mut scratch, &mut w);
            for x in w {
                let r = crate::stages::signatures::bucket_range(x.hash, ranges);
                by_range[r].push(Copy {
                    hash: x.hash,
                    len: (x.end - x.start) as u32,
                    rank: d as u32,
                    start: x.start as u32,
                });
            }
        }
        let mut all = Vec::new();
        for copies in by_range {
            all.extend(decide(copies, |k| k).windows);
        }
        all.sort_unstable();
        // As the sources rounds and manifest tasks do: only first copies that stay whole retain.
        let inputs = crate::stages::drop_spans::PartInputs {
            windows: all
                .iter()
                .map(|w| (w.0, w.1, w.1 + w.2, w.3, w.4))
                .collect(),
            ..Default::default()
        };
        let cut = crate::stages::sources::settle_in_one_part(&inputs);
        (0..texts.len() as u32)
            .map(|d| {
                let mine: Vec<_> = (all.iter())
                    .filter(|x| x.0 == d && x.3 != FIRST_COPY && !cut.contains(&(x.3, x.4, x.2)))
                    .map(|x| (x.1, x.1 + x.2, x.3))
                    .collect();
                let merged = crate::stages::drop_spans::merge_spans(&[], &mine, &[]);
                (merged.into_iter())
                    .map(|(s, e, h)| match h {
                        crate::stages::drop_spans::Holder::Window(by) => (s, e, by),
                        crate::stages::drop_spans::Holder::Paragraph(..) => unreachable!(),
                    })
                    .collect()
            })
            .collect()
    }

    /// What `apply` leaves of each text.
    fn retained(texts: &[&[u8]], spans: &[Vec<(u32, u32, u32)>]) -> Vec<Vec<u8>> {
        texts
            .iter()
            .zip(spans)
            .map(|(t, s)| {
                let (mut out, mut at) = (Vec::new(), 0);
                for &(a, b, _) in s {
                    out.extend_from_slice(&t[at..a as usize]);
                    at = b as usize;
                }
                out.extend_from_slice(&t[at..]);
                out
            })
            .collect()
    }

    /// The guarantee, checked by brute force: every removed byte of text `d` lies in a
    /// `min`-byte window of its text, inside a removed span, whose bytes the retained text of its
    /// holder holds (at an earlier place when the holder is `d` itself: the retained text before
    /// the span). Returns the bytes removed.
    fn check(texts: &[&[u8]], min: usize, ranges: usize) -> usize {
        let spans = spans_of(texts, min, ranges);
        let kept = retained(texts, &spans);
        let mut removed = 0;
        for (d, s) in spans.iter().enumerate() {
            let t = texts[d];
            let mut prev_end = 0;
            for &(a, b, by) in s {
                let (a, b) = (a as usize, b as usize);
                assert!(a >= prev_end && a < b && b <= t.len(), "{s:?}");
                assert!(
                    std::str::from_utf8(t).is_err() || {
                        let t = std::str::from_utf8(t).unwrap();
                        t.is_char_boundary(a) && t.is_char_boundary(b)
                    }
                );
                assert!(
                    is_edge(t, a) && is_edge(t, b),
                    "a span of text {d} cuts a word at {a}..{b}"
                );
                prev_end = b;
                removed += b - a;
                assert!(by as usize <= d, "held by a later document");
                // Each byte of the span: some min-byte window of the text around it whose
                // bytes stay in the holder's retained text (before this span when it is d).
                let holder: &[u8] = if by as usize == d {
                    // Text d as apply writes it, up to where this span begins.
                    let cut_before = retained(
                        &[&t[..a]],
                        &[s.iter().filter(|x| (x.1 as usize) <= a).copied().collect()],
                    );
                    &cut_before[0].clone()
                } else {
                    &kept[by as usize]
                };
                let holder = holder.to_vec();
                for i in a..b {
                    let lo = i.saturating_sub(min - 1);
                    let ok = (lo..=i)
                        .filter(|&w| w + min <= t.len())
                        .any(|w| find(&holder, &t[w..w + min]));
                    assert!(ok, "byte {i} of text {d} is removed with no retained copy");
                }
            }
        }
        removed
    }

    fn find(hay: &[u8], needle: &[u8]) -> bool {
        hay.windows(needle.len()).any(|w| w == needle)
    }

    #[test]
    fn a_run_shared_with_an_earlier_document_is_removed_and_the_first_copy_stays() {
        let run = prose(1, 60);
        let a = format!("{} {run} {}", prose(2, 20), prose(3, 20));
        let b = format!("{} {run} {}", prose(4, 20), prose(5, 20));
        let texts = [a.as_bytes(), b.as_bytes()];
        let spans = spans_of(&texts, 64, 3);
        assert!(spans[0].is_empty());
        let cut: usize = spans[1].iter().map(|s| (s.1 - s.0) as usize).sum();
        assert!(
            cut > run.len() - 80 && cut <= run.len() + 2,
            "{cut} of {}",
            run.len()
        );
        assert!(spans[1].iter().all(|s| s.2 == 0));
        check(&texts, 64, 3);
    }

    #[test]
    fn a_copy_whose_retained_copy_was_cut_still_finds_one_that_stays() {
        // Text 1 is B + C, text 2 is A + B + C with A from text 0: the rule must not remove
        // text 1's copy of B-C's seam while text 2 relies on it, nor anything it relies on.
        let (x, y, z) = (prose(7, 50), prose(8, 50), prose(9, 50));
        let t0 = format!("{x} {y}");
        let t1 = format!("{y} {z}");
        let t2 = format!("{x} {y} {z}");
        let texts = [t0.as_bytes(), t1.as_bytes(), t2.as_bytes()];
        let removed = check(&texts, 48, 2);
        assert!(removed > y.len() + x.len(), "{removed}");
    }

    #[test]
    fn degenerate_documents_keep_one_copy_in_linear_time() {
        let ten_mb = "a ".repeat(5 << 20);
        let texts: [&[u8]; 1] = [ten_mb.as_bytes()];
        let spans = spans_of(&texts, 200, 2);
        let kept: usize =
            ten_mb.len() - spans[0].iter().map(|s| (s.1 - s.0) as usize).sum::<usize>();
        assert!((200..200 + 2 * 64).contains(&kept), "{kept}");
        // One 10 MB word: never cut inside.
        let word = "a".repeat(10 << 20);
        assert!(spans_of(&[word.as_bytes()], 200, 2)[0].is_empty());
        // Smaller ones checked by brute force.
        let abc = "abc.".repeat(1500);
        let nul = "\0".repeat(3000);
        let ws = " \n\t".repeat(1000);
        let mixed = "ไทย字".repeat(400);
        for t in [&abc, &nul, &ws, &mixed] {
            let texts: [&[u8]; 2] = [t.as_bytes(), t.as_bytes()];
            let removed = check(&texts, 64, 2);
            assert!(removed > t.len() * 2 - 400, "{removed} of {}", t.len() * 2);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 200,
            rng_seed: proptest::test_runner::RngSeed::Fixed(57),
            failure_persistence: None,
            ..Default::default()
        })]
        /// Applying the spans never removes the only retained copy of a window: every removed
        /// byte lies in a window whose bytes the retained text of an earlier (or the same,
        /// earlier) document holds. Any number of ranges gives the same spans.
        #[test]
        fn no_removed_byte_loses_its_retained_copy(
            docs in proptest::collection::vec(
                proptest::collection::vec(0usize..5, 1..8), 1..6),
            ranges in 1usize..4,
        ) {
            let pieces: Vec<String> = (0..5).map(|i| prose(i as u64 + 20, 12)).collect();
            let texts: Vec<String> = docs.iter()
                .map(|ps| ps.iter().map(|&p| pieces[p].as_str()).collect::<Vec<_>>().join("\n"))
                .collect();
            let bytes: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
            check(&bytes, 40, ranges);
            proptest::prop_assert_eq!(spans_of(&bytes, 40, ranges), spans_of(&bytes, 40, 1));
        }
    }
}
