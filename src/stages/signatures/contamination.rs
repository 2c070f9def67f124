//! `--reference` in the signatures task's output: the docs-file columns and the documents per
//! item.

use polars::prelude::Column;

use crate::reference::{Hit, Reference};

/// The docs-file columns of `--reference`: the id of the item each document holds
/// (`contaminated_by`) and its share found (`contamination`), null for the others.
pub(super) fn contamination_columns(r: &Reference, hits: &[Option<Hit>]) -> [Column; 2] {
    let by: Vec<Option<&str>> = hits
        .iter()
        .map(|h| h.map(|h| r.ids[h.item as usize].as_str()))
        .collect();
    let share: Vec<Option<f32>> = hits.iter().map(|h| h.map(|h| h.share)).collect();
    [
        Column::new("contaminated_by".into(), by),
        Column::new("contamination".into(), share),
    ]
}

/// Documents per item hit, ascending by item.
pub(super) fn count_items(r: &Reference, hits: &[Option<Hit>]) -> Vec<crate::reference::ItemHits> {
    let mut by: std::collections::BTreeMap<u32, u64> = Default::default();
    for h in hits.iter().flatten() {
        *by.entry(h.item).or_default() += 1;
    }
    by.into_iter()
        .map(|(item, documents)| crate::reference::ItemHits {
            item,
            id: r.ids[item as usize].clone(),
            file: r.files[r.file_of[item as usize] as usize].file.clone(),
            documents,
        })
        .collect()
}
