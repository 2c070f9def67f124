//! The manifest's `drop_spans` of a part (`--paragraphs`, `--substrings`): what `apply` cuts out
//! of each kept document, each span with the document that retains its text.
//!
//! The manifest task reads what the paragraphs tasks removed (whole paragraphs) and what the
//! substrings tasks decided (windows removed against a first copy, and those first copies), and
//! merges them per document ([`merge_spans`]). A window is removed only against a first copy
//! that stays whole: the sources rounds ([`crate::stages::sources`]) list them per part; a first
//! copy that its own document's removals cut (a seam between a repeated run and new text, say)
//! retains nothing, and windows removed against it are left in. With both rules, a paragraph that retains a removed paragraph's text is
//! not cut by the other rule. A byte is counted once, under the paragraph rule when a removed
//! paragraph holds it.

use polars::prelude::*;

use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::io::paragraph_rows::{self, Rows};
use crate::io::store;
use crate::io::work::{self, polars_err, series, u32s};
use crate::plan::Plan;
use crate::tally::Cut;

/// A first copy's `retained_by` in a substrings drops file: it retains others, it is not
/// removed.
pub(crate) const FIRST_COPY: u32 = u32::MAX;

/// Who retains a removed span's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holder {
    /// A removed paragraph: its retained_by and retained_batch packed in [`PartSpans`]'s `by`
    /// (offset, length).
    Paragraph(u32, u32),
    /// A removed run: tonight's kept document (global number) whose first copy holds it.
    Window(u32),
}

/// The removed spans of one document, from its removed paragraphs `(start, end, holder)` (in
/// order, disjoint), its removable windows `(start, end, retained by)` (in start order), and
/// `held` (spans kept whole, in order). Returns the spans in order, disjoint, each with the
/// holder of every byte in it (a paragraph's first; else the window starting first among those
/// that hold the byte).
pub(crate) fn merge_spans(
    paragraphs: &[(u32, u32, Holder)],
    windows: &[(u32, u32, u32)],
    held: &[(u32, u32)],
) -> Vec<(u32, u32, Holder)> {
    let keep = union(held);
    // Windows' bytes, each to the first window that holds it.
    let mut runs = Vec::new();
    let mut covered = 0;
    for &(s, e, by) in windows {
        let s = s.max(covered);
        if s < e {
            runs.push((s, e, Holder::Window(by)));
            covered = e;
        }
    }
    let paragraph_bytes: Vec<(u32, u32)> = paragraphs.iter().map(|p| (p.0, p.1)).collect();
    let mut all = paragraphs.to_vec();
    all.extend(subtract(&runs, &paragraph_bytes));
    all.sort_unstable_by_key(|x| x.0);
    let mut out: Vec<(u32, u32, Holder)> = Vec::with_capacity(all.len());
    for x in subtract(&all, &keep) {
        match out.last_mut() {
            Some(last) if last.1 == x.0 && last.2 == x.2 => last.1 = x.1,
            _ => out.push(x),
        }
    }
    out
}

/// Sorted spans merged where they overlap or touch.
fn union(spans: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(spans.len());
    for &(s, e) in spans {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// `pieces` (in order, disjoint) without the bytes of `cut` (in order, disjoint).
fn subtract<T: Copy>(pieces: &[(u32, u32, T)], cut: &[(u32, u32)]) -> Vec<(u32, u32, T)> {
    let mut out = Vec::with_capacity(pieces.len());
    let mut j = 0;
    for &(s, e, t) in pieces {
        let mut at = s;
        while j < cut.len() && cut[j].1 <= at {
            j += 1;
        }
        let mut k = j;
        while at < e {
            match cut.get(k) {
                Some(&(cs, ce)) if cs < e => {
                    if cs > at {
                        out.push((at, cs, t));
                    }
                    at = at.max(ce);
                    k += 1;
                }
                _ => {
                    out.push((at, e, t));
                    at = e;
                }
            }
        }
    }
    out
}

/// One removed span of a part's document.
#[derive(Debug, Clone, Copy)]
struct Span {
    doc: u32,
    start: u32,
    end: u32,
    holder: Holder,
}

/// The removed spans of a part's documents.
#[derive(Debug, Default)]
pub(crate) struct PartSpans {
    /// In (document, start) order.
    spans: Vec<Span>,
    /// The paragraphs' retained_by and retained_batch, packed as the part file holds them.
    by: Vec<u8>,
    /// The ids of the documents holding removed runs, by global number.
    window_ids: ahash::AHashMap<u32, String>,
    /// Per document of the part, its paragraphs (listed: of at least the minimum size), and the
    /// paragraphs the paragraphs tasks removed from it.
    listed: Vec<u32>,
    removed_paragraphs: Vec<u32>,
    /// Per document, the bytes of its removed paragraphs.
    paragraph_bytes: Vec<u64>,
}

/// The ends of the paragraphs at `(doc, start)` (in order) of a part's rows (in the same order),
/// an error naming `file` where the rows do not list one.
fn paragraph_ends(
    work: &OutputDir,
    rows: &Rows,
    at: impl Iterator<Item = (u32, u32)>,
    file: &str,
) -> Result<Vec<u32>> {
    let mut i = 0;
    let mut out = Vec::new();
    for (doc, start) in at {
        while i < rows.len() && (rows[i].doc, rows[i].start) < (doc, start) {
            i += 1;
        }
        if i == rows.len() || (rows[i].doc, rows[i].start) != (doc, start) {
            return Err(Error::WorkFile {
                path: work.location(file),
                source: format!(
                    "names a paragraph at {start} of document {doc} that its part does not list"
                )
                .into(),
            });
        }
        out.push(start + rows[i].len);
    }
    Ok(out)
}

/// What a part's removed spans are made of, as the paragraphs and substrings tasks wrote it.
#[derive(Debug, Default)]
pub(crate) struct PartInputs {
    /// Removed paragraphs (document, start, end, holder), in (document, start) order.
    pub paragraphs: Vec<(u32, u32, u32, Holder)>,
    /// The paragraphs' retained_by and retained_batch, packed.
    pub by: Vec<u8>,
    /// Paragraphs that retain a removed one (document, start, end), in order.
    pub held: Vec<(u32, u32, u32)>,
    /// Windows (document, start, end, retained by or [`FIRST_COPY`], the retaining copy's start),
    /// in order.
    pub windows: Vec<(u32, u32, u32, u32, u32)>,
    /// Per document of the part: its listed paragraphs, those removed, and their bytes.
    pub listed: Vec<u32>,
    pub removed_paragraphs: Vec<u32>,
    pub paragraph_bytes: Vec<u64>,
}

impl PartInputs {
    pub(crate) fn read(work: &OutputDir, plan: &Plan, p: usize) -> Result<PartInputs> {
        let (first, n) = plan.parts[p];
        let mut out = PartInputs {
            listed: vec![0; n as usize],
            removed_paragraphs: vec![0; n as usize],
            paragraph_bytes: vec![0; n as usize],
            ..Default::default()
        };
        let local = |d: u32| u64::from(d).checked_sub(first).map(|i| i as usize);
        let ranges = plan.paragraph_ranges();
        for r in 0..ranges {
            let files = work::paragraph_rows_files(p);
            let rows = paragraph_rows::read_range(work, &files, (r, ranges), first)?.to_rows();
            for d in rows.iter().map(|r| r.doc) {
                if let Some(c) = local(d).and_then(|i| out.listed.get_mut(i)) {
                    *c += 1;
                }
            }
            let drops = work::paragraph_drops_file(r, p);
            let df = work.read_parquet(&drops)?;
            let (doc, start) = (
                u32s(&df, "doc", "manifest")?,
                u32s(&df, "start", "manifest")?,
            );
            let by = series(&df, "retained_by", "manifest")?;
            let batch = series(&df, "retained_batch", "manifest")?;
            let (by, batch) = (
                by.str().map_err(polars_err("manifest"))?,
                batch.str().map_err(polars_err("manifest"))?,
            );
            // Both are in (document, start) order.
            let keys = doc.iter().copied().zip(start.iter().copied());
            let ends = paragraph_ends(work, &rows, keys, &drops)?;
            for j in 0..doc.len() {
                let at = out.by.len();
                for v in [by.get(j), batch.get(j)] {
                    match v {
                        Some(v) => {
                            out.by.extend_from_slice(&(v.len() as u32).to_le_bytes());
                            out.by.extend_from_slice(v.as_bytes());
                        }
                        None => out.by.extend_from_slice(&u32::MAX.to_le_bytes()),
                    }
                }
                let holder = Holder::Paragraph(at as u32, (out.by.len() - at) as u32);
                out.paragraphs.push((doc[j], start[j], ends[j], holder));
                if let Some(i) = local(doc[j]) {
                    out.removed_paragraphs[i] += 1;
                    out.paragraph_bytes[i] += u64::from(ends[j] - start[j]);
                }
            }
            if plan.config.substrings.is_some() {
                // The paragraphs that retain a removed one stay whole under the other rule.
                let name = work::paragraph_holders_file(r, p);
                let df = work.read_parquet(&name)?;
                let (doc, start) = (
                    u32s(&df, "doc", "manifest")?,
                    u32s(&df, "start", "manifest")?,
                );
                let keys = doc.iter().copied().zip(start.iter().copied());
                let ends = paragraph_ends(work, &rows, keys, &name)?;
                out.held
                    .extend((0..doc.len()).map(|j| (doc[j], start[j], ends[j])));
            }
        }
        out.paragraphs.sort_unstable_by_key(|x| (x.0, x.1));
        out.held.sort_unstable();
        for r in 0..plan.substring_ranges() {
            let df = work.read_parquet(&work::substring_drops_file(r, p))?;
            let col = |name| u32s(&df, name, "manifest");
            let (doc, start, len) = (col("doc")?, col("start")?, col("len")?);
            let (by, from) = (col("retained_by")?, col("source_start")?);
            out.windows.extend(
                (0..doc.len()).map(|j| (doc[j], start[j], start[j] + len[j], by[j], from[j])),
            );
        }
        // Each range's are in order: a merge of runs.
        out.windows.sort();
        Ok(out)
    }
}

impl PartSpans {
    /// The part's spans: its removed paragraphs, and the windows whose first copy stays whole:
    /// one that `cut` (given the documents the windows rely on) does not list (the `settle`
    /// round's lists, [`crate::stages::sources`]; a first copy as document, start, length).
    pub(crate) fn read(
        work: &OutputDir,
        plan: &Plan,
        p: usize,
        cut: impl FnOnce(&mut dyn Iterator<Item = u32>) -> Result<ahash::AHashSet<(u32, u32, u32)>>,
    ) -> Result<PartSpans> {
        let inputs = PartInputs::read(work, plan, p)?;
        let mut out = PartSpans {
            by: inputs.by,
            listed: inputs.listed,
            removed_paragraphs: inputs.removed_paragraphs,
            paragraph_bytes: inputs.paragraph_bytes,
            ..Default::default()
        };
        let removable = inputs.windows.iter().filter(|w| w.3 != FIRST_COPY);
        let cut = cut(&mut removable.clone().map(|w| w.3))?;
        let windows: Vec<(u32, u32, u32, u32)> = removable
            .filter(|w| !cut.contains(&(w.3, w.4, w.2 - w.1)))
            .map(|w| (w.0, w.1, w.2, w.3))
            .collect();
        let (paragraphs, held) = (inputs.paragraphs, inputs.held);
        out.spans = merge_part(&paragraphs, &windows, &held);
        let mut holders: Vec<u32> = (out.spans.iter())
            .filter_map(|s| match s.holder {
                Holder::Window(d) => Some(d),
                Holder::Paragraph(..) => None,
            })
            .collect();
        holders.sort_unstable();
        holders.dedup();
        if !holders.is_empty() {
            let wanted = store::Wanted::IDS;
            let f = store::fetch(
                work,
                &plan.parts,
                plan.store_layout(),
                holders.iter().map(|&d| u64::from(d)).collect(),
                wanted,
            )?;
            out.window_ids = holders
                .into_iter()
                .map(|d| (d, f.id(d.into()).to_string()))
                .collect();
        }
        Ok(out)
    }

    /// Per document of the part (`first ..`), what is removed from it; `small` is each one's
    /// text in paragraphs too small to list (the signatures task's `paragraph_small`; empty
    /// without `--paragraphs`).
    pub(crate) fn cuts(&self, first: u32, small: &[u32]) -> Vec<Cut> {
        let mut out = vec![Cut::default(); self.listed.len()];
        for s in &self.spans {
            if let Some(x) = out.get_mut((s.doc - first) as usize) {
                let bytes = u64::from(s.end - s.start);
                match s.holder {
                    Holder::Paragraph(..) => x.bytes += bytes,
                    Holder::Window(_) => x.substring_bytes += bytes,
                }
            }
        }
        for (i, x) in out.iter_mut().enumerate() {
            x.paragraphs = u64::from(self.removed_paragraphs[i]);
            // Every listed paragraph removed whole (none kept for the other rule), and no
            // smaller paragraph's text.
            let whole = x.bytes == self.paragraph_bytes[i];
            let listed = self.listed[i];
            x.emptied = x.paragraphs > 0
                && x.paragraphs == u64::from(listed)
                && whole
                && small.get(i).copied() == Some(0);
        }
        out
    }

    /// The part file's `drop_spans` column: per kept row its spans packed in a binary value
    /// ([`unpack_spans`] turns the column into the output's list column: a nested column costs
    /// more to write and read back than bytes), null for the other rows.
    pub(crate) fn column(&self, first: u32, keep: &[bool]) -> Column {
        // Every row's bytes in one buffer, then the column from slices of it.
        let (mut bytes, mut ends) = (Vec::new(), Vec::with_capacity(keep.len()));
        let mut at = 0;
        for i in 0..keep.len() {
            let d = first + i as u32;
            while at < self.spans.len() && self.spans[at].doc == d {
                let s = self.spans[at];
                bytes.extend_from_slice(&s.start.to_le_bytes());
                bytes.extend_from_slice(&s.end.to_le_bytes());
                match s.holder {
                    Holder::Paragraph(by, len) => {
                        bytes.extend_from_slice(&self.by[by as usize..(by + len) as usize])
                    }
                    Holder::Window(d) => {
                        let id = self.window_ids.get(&d).map_or("", String::as_str);
                        bytes.extend_from_slice(&(id.len() as u32).to_le_bytes());
                        bytes.extend_from_slice(id.as_bytes());
                        bytes.extend_from_slice(&u32::MAX.to_le_bytes());
                    }
                }
                at += 1;
            }
            ends.push(bytes.len());
        }
        let mut lo = 0;
        let packed: BinaryChunked = (keep.iter().zip(ends))
            .map(|(&k, hi)| {
                let row = &bytes[std::mem::replace(&mut lo, hi)..hi];
                k.then_some(row)
            })
            .collect();
        packed.with_name("drop_spans".into()).into_column()
    }
}

/// [`merge_spans`] document by document over a part's removed paragraphs, windows and held
/// paragraphs, each in (document, start) order.
fn merge_part(
    paragraphs: &[(u32, u32, u32, Holder)],
    windows: &[(u32, u32, u32, u32)],
    held: &[(u32, u32, u32)],
) -> Vec<Span> {
    let mut docs: Vec<u32> = (paragraphs.iter().map(|x| x.0))
        .chain(windows.iter().map(|x| x.0))
        .collect();
    docs.sort_unstable();
    docs.dedup();
    let (mut i, mut j, mut k) = (0, 0, 0);
    let mut out = Vec::new();
    let (mut ps, mut ws, mut hs) = (Vec::new(), Vec::new(), Vec::new());
    for d in docs {
        ps.clear();
        ws.clear();
        hs.clear();
        while i < paragraphs.len() && paragraphs[i].0 == d {
            let x = paragraphs[i];
            ps.push((x.1, x.2, x.3));
            i += 1;
        }
        while j < windows.len() && windows[j].0 == d {
            let x = windows[j];
            ws.push((x.1, x.2, x.3));
            j += 1;
        }
        while k < held.len() && held[k].0 < d {
            k += 1;
        }
        while k < held.len() && held[k].0 == d {
            hs.push((held[k].1, held[k].2));
            k += 1;
        }
        out.extend(
            merge_spans(&ps, &ws, &hs)
                .into_iter()
                .map(|(start, end, holder)| Span {
                    doc: d,
                    start,
                    end,
                    holder,
                }),
        );
    }
    out
}

/// The output's `drop_spans` from a manifest part's packed column ([`PartSpans::column`]): per
/// row a list of {start, end, retained_by, retained_batch}, null where the packed value is.
pub(crate) fn unpack_spans(packed: &Column) -> Result<Column> {
    let pe = polars_err("merge");
    let bad = || Error::Internal("a manifest part's drop_spans value is cut short".into());
    let packed = packed.binary().map_err(&pe)?;
    let (mut start, mut end) = (Vec::new(), Vec::new());
    let (mut by, mut batch): (Vec<Option<&str>>, Vec<Option<&str>>) = (Vec::new(), Vec::new());
    let mut offsets = Vec::with_capacity(packed.len() + 1);
    offsets.push(0i64);
    let mut valid = Vec::with_capacity(packed.len());
    for row in packed.iter() {
        valid.push(row.is_some());
        let mut b = row.unwrap_or(&[]);
        // The next `n` bytes of the row.
        fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
            let (head, rest) = b.split_at_checked(n)?;
            *b = rest;
            Some(head)
        }
        let word = |b: &mut &[u8]| take(b, 4).map(|w| crate::io::u32_at(w, 0)).ok_or_else(bad);
        while !b.is_empty() {
            start.push(u64::from(word(&mut b)?));
            end.push(u64::from(word(&mut b)?));
            for out in [&mut by, &mut batch] {
                out.push(match word(&mut b)? {
                    u32::MAX => None,
                    n => {
                        let v = take(&mut b, n as usize).ok_or_else(bad)?;
                        Some(std::str::from_utf8(v).map_err(|_| bad())?)
                    }
                });
            }
        }
        offsets.push(start.len() as i64);
    }
    let n = start.len();
    let fields = [
        Series::new("start".into(), start),
        Series::new("end".into(), end),
        Series::new("retained_by".into(), by),
        Series::new("retained_batch".into(), batch),
    ];
    let values = StructChunked::from_series("item".into(), n, fields.iter())
        .map_err(&pe)?
        .into_series();
    crate::io::output::list_column("drop_spans", &values, offsets, &valid).map_err(pe)
}
