//! The report's sections on what `apply` cuts out of kept documents: repeated paragraphs
//! (`--paragraphs`) and repeated runs (`--substrings`).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::numbers::{bytes, pct, short_name};
use super::svg::esc;
use super::Report;
use crate::tally::Tally;

/// Files and groups in each section's tables.
const ROWS: usize = 20;

/// Characters of a removed span the report shows.
const SHOWN: usize = 1_500;

/// A count a table shows beside the bytes removed: its heading and how a tally holds it.
type Count<'a> = Option<(&'a str, fn(&Tally) -> u64)>;

/// A table of the files (or groups) with most bytes removed by one rule (`removed` of a tally:
/// bytes, and the count shown beside them when there is one), none without.
fn removed_by(
    h: &mut String,
    what: &str,
    map: &BTreeMap<String, Tally>,
    count: Count,
    removed: fn(&Tally) -> u64,
) {
    let th = crate::progress::thousands;
    let _ = write!(h, "<table><tr><th>{what}</th>");
    if let Some((name, _)) = count {
        let _ = write!(h, "<th class=\"n\">{name}</th>");
    }
    h.push_str("<th class=\"n\">bytes removed</th><th class=\"n\">of kept bytes</th></tr>");
    let mut rows: Vec<(&String, &Tally)> = map.iter().filter(|(_, t)| removed(t) > 0).collect();
    rows.sort_by_key(|(_, t)| std::cmp::Reverse(removed(t)));
    for (k, t) in rows.into_iter().take(ROWS) {
        let kept = (t.bytes - t.bytes_dropped).max(1);
        let _ = write!(h, "<tr><td class=\"id\">{}</td>", esc(short_name(k)));
        if let Some((_, of)) = count {
            let _ = write!(h, "<td class=\"n\">{}</td>", th(of(t)));
        }
        let _ = write!(
            h,
            "<td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            th(removed(t)),
            pct(removed(t), kept)
        );
    }
    h.push_str("</table>");
}

/// The per-file and per-group tables of one rule.
fn tables(h: &mut String, r: &Report, count: Count, removed: fn(&Tally) -> u64) {
    removed_by(h, "file", &r.breakdown.by_file, count, removed);
    if !r.breakdown.by_group.is_empty() {
        removed_by(h, "group", &r.breakdown.by_group, count, removed);
    }
}

/// `--paragraphs`: bytes removed per file and group, and the texts removed most.
pub(super) fn paragraphs(h: &mut String, r: &Report) {
    let p = &r.summary["paragraphs"];
    if p.is_null() {
        return;
    }
    let th = crate::progress::thousands;
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let _ = write!(
        h,
        "<h2>Paragraphs</h2><p class=\"note\">{} of {} paragraphs of {}+ bytes in kept documents are removed by <code>apply</code> ({} within their own document, {} against indexed documents): {} of the kept documents' text, each retained by an earlier kept document. {} kept documents are left with whitespace only.</p>",
        th(n(&p["removed"])),
        th(n(&p["paragraphs"])),
        n(&p["min_bytes"]),
        th(n(&p["removed_within_document"])),
        th(n(&p["removed_against_index"])),
        pct(n(&p["bytes_removed"]), n(&p["kept_bytes"])),
        th(n(&p["documents_emptied"])),
    );
    let count: Count = Some(("paragraphs removed", |t| t.paragraphs_removed));
    tables(h, r, count, |t| t.paragraph_bytes_removed);
    if r.repeated_paragraphs.is_empty() {
        return;
    }
    h.push_str("<h3>Paragraphs removed most</h3>");
    for (removed, text, by) in &r.repeated_paragraphs {
        let _ = write!(
            h,
            "<details><summary>removed {} times · retained by <span class=\"id\">{}</span></summary><div class=\"body\"><pre>{}</pre></div></details>",
            th(*removed),
            esc(by),
            esc(text.as_deref().unwrap_or("(text not read: outside the report's read budget)"))
        );
    }
}

/// `--substrings`: bytes removed per file and group, and the longest spans removed with the
/// document that retains each.
pub(super) fn substrings(h: &mut String, r: &Report) {
    let p = &r.summary["substrings"];
    if p.is_null() {
        return;
    }
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let also = match r.summary["paragraphs"].is_null() {
        true => "",
        false => " besides the paragraphs above (a byte is counted once)",
    };
    let _ = write!(
        h,
        "<h2>Repeated runs</h2><p class=\"note\">Runs of {}+ bytes whose exact text an earlier kept document (or the same one, earlier) retains are removed by <code>apply</code>{also}: {} of the kept documents' text ({}). The copy that retains a removed run is never cut, so no text loses its last copy.</p>",
        n(&p["min_bytes"]),
        bytes(n(&p["bytes_removed"])),
        pct(n(&p["bytes_removed"]), n(&p["kept_bytes"])),
    );
    tables(h, r, None, |t| t.substring_bytes_removed);
    if r.longest_spans.is_empty() {
        return;
    }
    h.push_str("<h3>Longest spans removed</h3><p class=\"note\">Among the longest, those in the input the report reads.</p>");
    for s in &r.longest_spans {
        let text = match &s.text {
            Some(t) => {
                let shown: String = t.chars().take(SHOWN).collect();
                let more = if shown.len() < t.len() { " …" } else { "" };
                format!("{}{more}", esc(&shown))
            }
            None => "(text not read: outside the report's read budget)".to_string(),
        };
        let _ = write!(
            h,
            "<details><summary>{} removed from <span class=\"id\">{}</span> · retained by <span class=\"id\">{}</span></summary><div class=\"body\"><pre>{text}</pre></div></details>",
            bytes(s.bytes),
            esc(&s.id),
            esc(&s.retained_by),
        );
    }
}

/// A span removed from a kept document, as the report shows it.
#[derive(Debug, Clone)]
pub(crate) struct RemovedSpan {
    pub bytes: u64,
    /// The manifest row of the document it is removed from, its id, and the document that
    /// retains the text.
    pub row: usize,
    pub id: String,
    pub retained_by: String,
    pub start: u64,
    pub end: u64,
    /// The span's text, where the report read the document.
    pub text: Option<String>,
}

/// Longest spans the report considers, and shows.
const LONGEST: usize = 64;
pub(super) const SHOWN_SPANS: usize = 5;

/// Adds the spans of a row group's `drop_spans` (its first row `first`) to `best`, the
/// [`LONGEST`] longest so far, longest first (ties to the earlier row): (bytes, row, start, end,
/// retained by).
pub(super) fn longest(
    c: &polars::prelude::Column,
    first: usize,
    best: &mut Vec<(u64, usize, u64, u64, String)>,
) -> polars::prelude::PolarsResult<()> {
    let list = c.list()?;
    for (j, spans) in list.amortized_iter().enumerate() {
        let Some(spans) = spans else { continue };
        let st = spans.as_ref().struct_()?;
        let (start, end, by) = (
            st.field_by_name("start")?,
            st.field_by_name("end")?,
            st.field_by_name("retained_by")?,
        );
        let (start, end, by) = (start.u64()?, end.u64()?, by.str()?);
        for i in 0..start.len() {
            let (Some(s), Some(e)) = (start.get(i), end.get(i)) else {
                continue;
            };
            let len = e.saturating_sub(s);
            if best.len() < LONGEST || len > best[LONGEST - 1].0 {
                let by = by.get(i).unwrap_or("").to_string();
                best.push((len, first + j, s, e, by));
                best.sort_by_key(|x| (std::cmp::Reverse(x.0), x.1));
                best.truncate(LONGEST);
            }
        }
    }
    Ok(())
}

/// The spans [`longest`] found, without their ids (the report fills them) and texts.
pub(super) fn removed(best: Vec<(u64, usize, u64, u64, String)>) -> Vec<RemovedSpan> {
    best.into_iter()
        .map(|(bytes, row, start, end, retained_by)| RemovedSpan {
            bytes,
            row,
            id: String::new(),
            retained_by,
            start,
            end,
            text: None,
        })
        .collect()
}
