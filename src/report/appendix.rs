//! The report's closing sections, from the summary: the index (`--index`) and the settings.

use std::fmt::Write;

use super::numbers::{bytes, pct, short_count};
use super::svg::esc;

pub(super) fn index(h: &mut String, s: &serde_json::Value) {
    let ix = &s["index"];
    if ix.is_null() {
        return;
    }
    let _ = write!(
        h,
        "<h2>Against earlier batches</h2><p class=\"note\">Batch <b>{}</b> was compared with {} earlier batch(es) in the index <code>{}</code> (window {}). Each batch of the index now (lingering ones are out of the window, kept for the documents re-crawls renewed), oldest first: its documents, what its own run dropped, and what tonight lost against it.</p><table><tr><th>batch</th><th class=\"n\">documents</th><th class=\"n\">dropped by its run</th><th class=\"n\">tonight's documents dropped against it</th></tr>",
        esc(ix["batch"].as_str().unwrap_or("")),
        ix["compared_with"].as_array().map_or(0, |a| a.len()),
        esc(ix["location"].as_str().unwrap_or("")),
        ix["window"]
    );
    let tonight = ix["batch"].as_str().unwrap_or("");
    let history = ix["history"].as_array().cloned().unwrap_or_default();
    let shown: Vec<&str> = history.iter().filter_map(|b| b["batch"].as_str()).collect();
    // One row per batch: name, documents and own drops (unknown for a batch gone from the
    // index), label. First the batches tonight dropped against that left with tonight's commit.
    let mut rows: Vec<(&str, Option<u64>, Option<u64>, &str)> = ix["dropped_against"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(name, _)| !shown.contains(&name.as_str()))
        .map(|(name, _)| (name.as_str(), None, None, " (expired tonight)"))
        .collect();
    rows.extend(history.iter().map(|b| {
        let lingering = b["lingering"].as_bool() == Some(true);
        (
            b["batch"].as_str().unwrap_or(""),
            b["documents"].as_u64(),
            b["dropped"].as_u64(),
            if lingering { " (lingering)" } else { "" },
        )
    }));
    for (name, docs, dropped, label) in rows {
        let own = match (dropped, docs) {
            (Some(d), Some(n)) => format!("{} ({})", crate::progress::thousands(d), pct(d, n)),
            _ => "-".to_string(),
        };
        let against = if name == tonight {
            format!(
                "{} within tonight",
                crate::progress::thousands(ix["dropped_within_batch"].as_u64().unwrap_or(0))
            )
        } else {
            crate::progress::thousands(ix["dropped_against"][name].as_u64().unwrap_or(0))
        };
        let _ = write!(
            h,
            "<tr><td>{}{label}</td><td class=\"n\">{}</td><td class=\"n\">{own}</td><td class=\"n\">{against}</td></tr>",
            esc(name),
            docs.map_or("-".to_string(), crate::progress::thousands)
        );
    }
    let _ = write!(
        h,
        "</table><p class=\"note\">Added: {}. Expired: {}. Renewed tonight: {} documents of earlier batches. The index holds {} documents in {} on disk ({:.0} B per document), {} of filters in memory.</p>",
        list(&ix["batches_added"]),
        list(&ix["batches_expired"]),
        crate::progress::thousands(ix["renewed"].as_object().map_or(0, |r| {
            r.values().filter_map(serde_json::Value::as_u64).sum()
        })),
        short_count(ix["documents_indexed"].as_u64().unwrap_or(0)),
        bytes(ix["index_bytes_on_disk"].as_u64().unwrap_or(0)),
        ix["index_bytes_per_document"].as_f64().unwrap_or(0.0),
        bytes(ix["filter_bytes_in_memory"].as_u64().unwrap_or(0)),
    );
    let copied = ix["most_copied"].as_array().cloned().unwrap_or_default();
    if copied.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<h3>Seen most often across nights</h3><p class=\"note\">Indexed documents tonight's documents were dropped against, by their copies so far: the document itself and every document dropped against it in any night, tonight's included (<code>corpus-dedup index export</code> lists every live document).</p><table><tr><th>document</th><th>batch</th><th class=\"n\">copies</th></tr>"
    );
    for c in copied {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td></tr>",
            esc(c["id"].as_str().unwrap_or("")),
            esc(c["batch"].as_str().unwrap_or("")),
            crate::progress::thousands(c["copies"].as_u64().unwrap_or(0))
        );
    }
    h.push_str("</table>");
}

fn list(v: &serde_json::Value) -> String {
    let names: Vec<String> = v
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_str().map(esc))
        .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

pub(super) fn settings(h: &mut String, s: &serde_json::Value) {
    h.push_str("<h2>Settings and stages</h2><div class=\"charts\"><div><table><tr><th>setting</th><th>value</th></tr>");
    let c = &s["config"];
    let minhash = c["method"].as_str() == Some("minhash");
    let mut keys = vec![
        "method",
        "threshold",
        "ngram",
        "tokenizer",
        "seed",
        "text_column",
        "id_column",
        "keep",
    ];
    if minhash {
        keys.extend(["num_perm", "sketch", "verify"]);
    } else {
        keys.extend(["hamming", "simhash_blocks", "simhash_max_df"]);
    }
    // Shown when set: they change what meets what.
    keys.extend(
        ["partition_by", "across"]
            .into_iter()
            .filter(|k| !c[*k].is_null()),
    );
    for k in keys {
        let v = match &c[k] {
            serde_json::Value::String(x) => x.clone(),
            serde_json::Value::Null => "-".into(),
            other => other.to_string(),
        };
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td></tr>",
            k.replace('_', "-"),
            esc(&v)
        );
    }
    if let (Some(b), Some(r)) = (s["lsh_bands"].as_u64(), s["lsh_rows"].as_u64()) {
        let _ = write!(h, "<tr><td>bands x rows</td><td>{b} x {r}</td></tr>");
    }
    h.push_str("</table></div><div><table><tr><th>stage</th><th class=\"n\">tasks</th><th class=\"n\">seconds</th><th class=\"n\">peak MiB</th></tr>");
    for st in s["stages"].as_array().into_iter().flatten() {
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{:.2}</td><td class=\"n\">{:.0}</td></tr>",
            esc(st["stage"].as_str().unwrap_or("")),
            st["tasks"],
            st["seconds"].as_f64().unwrap_or(0.0),
            st["peak_rss_mib"].as_f64().unwrap_or(0.0)
        );
    }
    h.push_str("</table></div></div>");
}
