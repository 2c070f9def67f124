//! A kept row's `drop_spans` cut out of its text, checked first (ordered, inside the text, on
//! character boundaries).

use polars::prelude::*;

use crate::error::Result;
use crate::results::Manifest;

use super::manifest_err;

/// `--paragraphs`: the manifest's `drop_spans`, [start, end) byte offsets per row.
pub struct DropSpans {
    /// Row i's spans are `spans[offsets[i]..offsets[i + 1]]`.
    offsets: Vec<usize>,
    spans: Vec<(u64, u64)>,
}

impl DropSpans {
    /// The manifest's spans (None when it has no `drop_spans` column).
    pub(crate) fn read(m: &Manifest) -> Result<Option<DropSpans>> {
        let Ok(c) = m.frame.column("drop_spans") else {
            return Ok(None);
        };
        let list = c.list().map_err(|e| manifest_err(m, e))?;
        DropSpans::from_list(list)
            .map(Some)
            .map_err(|e| manifest_err(m, e))
    }

    /// The spans of a `drop_spans` column (a list of {start, end, ...} per row).
    pub fn from_list(list: &ListChunked) -> PolarsResult<DropSpans> {
        let mut out = DropSpans {
            offsets: vec![0],
            spans: Vec::new(),
        };
        for row in list.amortized_iter() {
            if let Some(row) = row {
                let st = row.as_ref().struct_()?;
                let field = |name: &str| -> PolarsResult<Vec<Option<u64>>> {
                    let f = st.field_by_name(name)?.cast(&DataType::UInt64)?;
                    Ok(f.u64()?.iter().collect())
                };
                let (s, e) = (field("start")?, field("end")?);
                for (s, e) in s.into_iter().zip(e) {
                    out.spans.push((s.unwrap_or(u64::MAX), e.unwrap_or(0)));
                }
            }
            out.offsets.push(out.spans.len());
        }
        Ok(out)
    }

    /// Row `row`'s spans.
    pub fn of(&self, row: usize) -> &[(u64, u64)] {
        match (self.offsets.get(row), self.offsets.get(row + 1)) {
            (Some(&a), Some(&b)) => &self.spans[a..b],
            _ => &[],
        }
    }

    /// `text` (manifest row `row`'s) without its spans; an error naming the row when a span is
    /// not a range of the text on character boundaries, after the one before it.
    pub(crate) fn cut(&self, m: &Manifest, row: usize, text: &str) -> Result<String> {
        crate::text::paragraphs::cut(text, self.of(row)).map_err(|why| {
            manifest_err(
                m,
                format!("manifest row {row}: {why}; the manifest does not belong to this input or was edited: run the job again"),
            )
        })
    }
}
