//! `explain` of a document flagged by `--reference`: the item it holds and its share.

use serde::Serialize;

use crate::results::Manifest;
use crate::text::diff::Piece;
use crate::visible::visible;

/// The benchmark item a document holds (`--reference`), and where.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Contamination {
    /// The item's id (`contaminated_by`).
    pub item: String,
    /// The share of the item's n-grams found in the document (`contamination`).
    pub share: f32,
    /// The reference's items of that id (one, unless ids repeat), each with where it matched.
    pub items: Vec<ItemMatch>,
    /// Why the item's text cannot be shown (a reference file changed or is gone).
    pub unavailable: Option<String>,
}

/// One reference item and the stretch of the document that holds it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ItemMatch {
    pub file: String,
    pub row: u64,
    pub text_bytes: usize,
    /// From the item to the document's stretch: `same` is matched text, `removed` item words
    /// missing there, `added` the document's own words ([`crate::text::diff::item_in_doc`]).
    pub matched: Vec<Piece>,
}

/// The benchmark item manifest row `at` holds, with the item's text read from the reference
/// the run recorded (None when the row holds none).
pub(super) fn contamination(
    m: &Manifest,
    c: &crate::results::Columns,
    at: usize,
    doc: Option<String>,
) -> Option<Contamination> {
    let item = c.contaminated_by?.get(at)?.to_string();
    let share = c.contamination.and_then(|s| s.get(at)).unwrap_or(0.0);
    let cfg = m.config.reference.as_ref()?;
    let (items, unavailable) = match crate::reference::items_of(&m.reference, cfg, &[&item]) {
        Ok(found) => {
            let doc = doc.unwrap_or_default();
            let shown = found
                .into_iter()
                .map(|i| ItemMatch {
                    text_bytes: i.text.len(),
                    matched: crate::text::diff::item_in_doc(&i.text, &doc),
                    file: i.file,
                    row: i.row,
                })
                .collect();
            (shown, None)
        }
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    Some(Contamination {
        item,
        share,
        items,
        unavailable,
    })
}

/// The lines of `explain` about the benchmark item a document holds.
pub(super) fn contamination_text(s: &mut String, c: &Contamination, color: bool) {
    use std::fmt::Write;
    let _ = writeln!(
        s,
        "It holds benchmark text: reference item {} ({:.0}% of the item's n-grams are in it), so it is never kept.",
        visible(&c.item),
        100.0 * c.share
    );
    if let Some(why) = &c.unavailable {
        let _ = writeln!(s, "The item's text cannot be shown: {}", visible(why));
    }
    for it in &c.items {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "--- reference item {} ({}:{}) -> this document ---",
            visible(&c.item),
            visible(&it.file),
            it.row
        );
        let body = if color {
            crate::text::diff::to_ansi(&it.matched)
        } else {
            crate::text::diff::to_plain(&it.matched)
        };
        let _ = writeln!(s, "{}", body.trim());
    }
    let _ = writeln!(s);
}
