//! `explain` of the spans removed from a kept document (`drop_spans`: repeated paragraphs and
//! runs), each with the document that retains it.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::results::Manifest;
use crate::visible::visible;

use super::Explanation;

/// A paragraph `apply` removes from a kept document (`--paragraphs`).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RemovedParagraph {
    pub start: u64,
    pub end: u64,
    /// Its text, up to [`PARAGRAPH_SHOWN`] characters.
    pub text: String,
    /// The document that retains the text (this one for a repeat inside it), and its batch
    /// when it is an indexed one.
    pub retained_by: Option<String>,
    pub retained_batch: Option<String>,
}

/// Characters of a removed paragraph `explain` shows.
pub(super) const PARAGRAPH_SHOWN: usize = 300;

/// Manifest row `at`'s removed paragraphs, with their text from `doc`.
pub(super) fn removed_paragraphs(
    m: &Manifest,
    at: usize,
    doc: Option<&str>,
) -> Result<Vec<RemovedParagraph>> {
    let Ok(c) = m.frame.column("drop_spans") else {
        return Ok(Vec::new());
    };
    let bad = |e: polars::prelude::PolarsError| Error::Manifest {
        path: m.location.clone(),
        source: e.into(),
    };
    let Some(row) = c.list().map_err(bad)?.get_as_series(at) else {
        return Ok(Vec::new());
    };
    let st = row.struct_().map_err(bad)?;
    let u = |n: &str| -> Result<Vec<u64>> {
        let f = st.field_by_name(n).map_err(bad)?;
        Ok(f.u64().map_err(bad)?.into_no_null_iter().collect())
    };
    let s = |n: &str| -> Result<Vec<Option<String>>> {
        let f = st.field_by_name(n).map_err(bad)?;
        Ok(f.str()
            .map_err(bad)?
            .iter()
            .map(|x| x.map(str::to_string))
            .collect())
    };
    let (start, end, by, batch) = (
        u("start")?,
        u("end")?,
        s("retained_by")?,
        s("retained_batch")?,
    );
    let doc = doc.unwrap_or("");
    Ok((0..start.len())
        .map(|i| RemovedParagraph {
            start: start[i],
            end: end[i],
            text: doc
                .get(start[i] as usize..end[i] as usize)
                .unwrap_or("")
                .trim()
                .chars()
                .take(PARAGRAPH_SHOWN)
                .collect(),
            retained_by: by[i].clone(),
            retained_batch: batch[i].clone(),
        })
        .collect())
}

/// Where a removed paragraph of document `id` is retained, as `explain` says it.
fn retained_where(p: &RemovedParagraph, id: &str) -> String {
    match (&p.retained_by, &p.retained_batch) {
        // An indexed document may have this id too (a re-crawl): it names its batch.
        (Some(by), None) if by == id => "earlier in this document".to_string(),
        (Some(by), Some(b)) => format!("by {} (batch {})", visible(by), visible(b)),
        (Some(by), None) => format!("by {}", visible(by)),
        (None, Some(b)) => format!("by a document of batch {}", visible(b)),
        (None, None) => "elsewhere".to_string(),
    }
}

/// The lines of `explain` about removed spans (`--paragraphs`, `--substrings`).
pub(super) fn paragraphs_text(s: &mut String, e: &Explanation) {
    use std::fmt::Write;
    let bytes: u64 = e.removed_paragraphs.iter().map(|p| p.end - p.start).sum();
    let _ = writeln!(
        s,
        "{} span(s), {bytes} bytes, are removed from it by apply (repeated paragraphs or runs whose text is retained elsewhere):",
        e.removed_paragraphs.len()
    );
    for p in &e.removed_paragraphs {
        let whose = retained_where(p, &e.id);
        let _ = writeln!(s, "  [{}, {}) retained {whose}:", p.start, p.end);
        let _ = writeln!(s, "    {}", visible(&p.text.replace('\n', " ")));
    }
    let _ = writeln!(s);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paragraph_retained_by_an_indexed_namesake_names_its_batch() {
        let p = |by: &str, batch: Option<&str>| RemovedParagraph {
            start: 0,
            end: 1,
            text: String::new(),
            retained_by: Some(by.to_string()),
            retained_batch: batch.map(str::to_string),
        };
        assert_eq!(
            retained_where(&p("d1", None), "d1"),
            "earlier in this document"
        );
        assert_eq!(retained_where(&p("d0", None), "d1"), "by d0");
        assert_eq!(
            retained_where(&p("d1", Some("night-1")), "d1"),
            "by d1 (batch night-1)"
        );
    }
}
