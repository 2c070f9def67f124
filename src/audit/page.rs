//! `OUT/audit.html`: one self-contained page (inline CSS and script, nothing from the network)
//! to label the sampled pairs with the keyboard: `y` a duplicate, `n` not one, `s` skip, arrows
//! to move. Labels are kept in the browser (local storage, per run) and exported as a JSON file
//! mapping each pair to its label, which `corpus-dedup audit OUT --score FILE` reads.
//!
//! Corpus text is hostile: it reaches the page only as JSON data (with `<`, `>`, `&` and the
//! line separators escaped, so nothing in it can end the script element) and is put on screen
//! with `textContent`, never parsed as markup; controls and bidi overrides are shown as escapes
//! ([`crate::visible::visible`]).

use serde_json::json;

use super::Audit;
use crate::text::diff::Piece;
use crate::visible::visible;

/// Characters of a text shown at most (the rest is said to be cut).
const FULL_TEXT: usize = 20_000;

/// A text for the page: controls shown, cut at [`FULL_TEXT`] characters.
fn shown(text: Option<&str>) -> serde_json::Value {
    let Some(t) = text else {
        return serde_json::Value::Null;
    };
    let t = visible(t);
    match t.char_indices().nth(FULL_TEXT) {
        Some((cut, _)) => json!(format!("{} [… cut at {FULL_TEXT} characters]", &t[..cut])),
        None => json!(t),
    }
}

/// The diff's pieces as `[op, text]` for the script.
fn pieces(diff: &[Piece]) -> serde_json::Value {
    let piece = |p: &Piece| match p {
        Piece::Same(t) => json!(["same", visible(t)]),
        Piece::Removed(t) => json!(["removed", visible(t)]),
        Piece::Added(t) => json!(["added", visible(t)]),
        Piece::Gap(n) | Piece::Elided(n) => json!(["gap", format!("… {n} words …")]),
        Piece::More(n) => json!(["gap", format!("… {n} more changes")]),
    };
    json!(diff.iter().map(piece).collect::<Vec<_>>())
}

/// JSON safe inside a `<script>` element: the same value, with the characters that could end
/// the element or a line of script written as escapes.
fn script_json(v: &serde_json::Value) -> String {
    let s = v.to_string();
    let s = crate::visible::json(&s);
    s.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// The page.
pub(super) fn render(a: &Audit) -> String {
    let pairs: Vec<serde_json::Value> = (a.pairs.iter())
        .map(|p| {
            json!({
                "pair": p.pair,
                "band": p.band,
                "group": p.group.as_deref().map(visible),
                "similarity": p.similarity,
                "jaccard": p.jaccard,
                "dropped_id": visible(&p.dropped_id),
                "kept_id": visible(&p.kept_id),
                "dropped_text": shown(p.dropped_text.as_deref()),
                "kept_text": shown(p.kept_text.as_deref()),
                "diff": pieces(&p.diff),
            })
        })
        .collect();
    let bands: Vec<serde_json::Value> = (a.bands.iter())
        .map(|b| {
            let group = b.group.as_deref().map(visible);
            json!({"group": group, "name": b.name, "drops": b.drops, "sampled": b.sampled})
        })
        .collect();
    let data = json!({
        "run": a.run,
        "threshold": a.threshold,
        "bands": bands,
        "pairs": pairs,
    });
    PAGE.replace("{{DATA}}", &script_json(&data))
}

const PAGE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>corpus-dedup audit</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}
header{background:#1d2430;color:#fff;padding:10px 18px;display:flex;gap:18px;align-items:baseline;flex-wrap:wrap}
header h1{font-size:17px;margin:0}
main{padding:14px 18px}
.keys span{display:inline-block;border:1px solid #9aa4b2;border-radius:4px;padding:0 6px;margin:0 2px;background:#fff;color:#1d2430;font-family:monospace}
#progress{font-weight:600}
.meta{display:flex;gap:16px;flex-wrap:wrap;margin:6px 0 10px}
.label{font-weight:700;padding:2px 10px;border-radius:10px;background:#e3e7ee}
.label.y{background:#c9efd3}.label.n{background:#f7cfcf}.label.s{background:#eee3c2}
.diff{background:#fff;border:1px solid #d5dae2;padding:8px 10px;margin-bottom:10px;white-space:pre-wrap;word-break:break-word;max-height:30vh;overflow:auto}
h2{font-size:14px;margin:0 0 4px}
.removed{background:#f7cfcf;text-decoration:line-through}
.added{background:#c9efd3}
.diff .gap{color:#7a8494;font-style:italic}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:12px}
.text{background:#fff;border:1px solid #d5dae2;padding:8px 10px;white-space:pre-wrap;word-break:break-word;max-height:60vh;overflow:auto}
table{border-collapse:collapse;margin-top:14px;font-size:13px}
td,th{border:1px solid #d5dae2;padding:3px 8px;text-align:right}
button{font:inherit;padding:3px 12px}
textarea{width:100%;height:80px;margin-top:8px;font-family:monospace;font-size:12px}
</style></head>
<body>
<header><h1>corpus-dedup audit</h1><span id="run"></span><span id="progress"></span>
<span class="keys"><span>y</span> duplicate <span>n</span> not a duplicate <span>s</span> skip <span>&larr;</span><span>&rarr;</span> move</span>
<button id="export">Export labels</button></header>
<main>
<div class="meta"><span id="where"></span><span id="band"></span><span id="sim"></span><span id="ids"></span><span id="label" class="label"></span></div>
<h2>word diff: <span class="removed">only in the kept text</span> <span class="added">only in the dropped one</span></h2>
<div class="diff" id="diff"></div>
<div class="cols"><div><h2>kept</h2><div class="text" id="kept"></div></div>
<div><h2>dropped</h2><div class="text" id="dropped"></div></div></div>
<table id="bands"><tr><th>group</th><th>band</th><th>documents (the run's drops; "would drop at": what that threshold adds)</th><th>pairs sampled</th><th>labelled</th></tr></table>
<textarea id="labels-json" readonly aria-label="exported labels"></textarea>
</main>
<script type="application/json" id="data">{{DATA}}</script>
<script>
"use strict";
const data = JSON.parse(document.getElementById("data").textContent);
const pairs = data.pairs;
const key = "corpus-dedup-audit-" + data.run;
let labels = {};
try { labels = JSON.parse(localStorage.getItem(key) || "{}"); } catch (e) { labels = {}; }
let at = 0;
const $ = id => document.getElementById(id);
const names = {y: "duplicate", n: "not a duplicate", s: "skipped"};
function save() { try { localStorage.setItem(key, JSON.stringify(labels)); } catch (e) {} }
function exported() {
  const out = {};
  for (const p of pairs) if (labels[p.pair]) out[p.pair] = labels[p.pair];
  return JSON.stringify(out, null, 1);
}
function bands() {
  const t = $("bands");
  while (t.rows.length > 1) t.deleteRow(1);
  for (const b of data.bands) {
    const r = t.insertRow();
    const done = pairs.filter(p => p.band === b.name && p.group === b.group && labels[p.pair]).length;
    for (const v of [b.group === null ? "all" : b.group, b.name, b.drops, b.sampled, done]) r.insertCell().textContent = String(v);
  }
}
function show() {
  $("run").textContent = "run " + data.run + ", threshold " + data.threshold;
  const done = pairs.filter(p => labels[p.pair]).length;
  $("progress").textContent = done + " of " + pairs.length + " labelled";
  $("labels-json").value = exported();
  bands();
  if (!pairs.length) { $("where").textContent = "No pair to label: the run dropped no document as a near-duplicate."; return; }
  const p = pairs[at];
  $("where").textContent = "pair " + (at + 1) + " of " + pairs.length + " (" + p.pair + ")";
  $("band").textContent = "band " + p.band + (p.group === null ? "" : ", group " + p.group);
  $("sim").textContent = (p.similarity === null ? "similarity not recorded" : "similarity " + p.similarity.toFixed(3)) + (p.jaccard === null ? "" : ", exact Jaccard " + p.jaccard.toFixed(3));
  $("ids").textContent = "kept " + p.kept_id + " / dropped " + p.dropped_id;
  const l = labels[p.pair];
  $("label").textContent = l ? names[l] : "not labelled";
  $("label").className = "label " + (l || "");
  const d = $("diff");
  d.textContent = "";
  for (const [op, text] of p.diff) {
    const s = document.createElement("span");
    s.className = op;
    s.textContent = text + " ";
    d.appendChild(s);
  }
  $("kept").textContent = p.kept_text === null ? "(no text)" : p.kept_text;
  $("dropped").textContent = p.dropped_text === null ? "(no text)" : p.dropped_text;
}
function move(by) { at = Math.max(0, Math.min(pairs.length - 1, at + by)); show(); }
document.addEventListener("keydown", e => {
  if (e.ctrlKey || e.metaKey || e.altKey || !pairs.length) return;
  const k = e.key.toLowerCase();
  if (k === "y" || k === "n" || k === "s") {
    labels[pairs[at].pair] = k; save();
    if (at < pairs.length - 1) at += 1;
    show();
  } else if (e.key === "ArrowRight") move(1);
  else if (e.key === "ArrowLeft") move(-1);
});
$("export").addEventListener("click", () => {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([exported()], {type: "application/json"}));
  a.download = "audit-labels-" + data.run + ".json";
  document.body.appendChild(a); a.click(); a.remove();
});
show();
</script>
</body></html>
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_cannot_end_the_script_element() {
        let v = json!({"t": "</script><script>alert(1)</script>&\u{2028}\u{202e}"});
        let s = script_json(&v);
        assert!(
            !s.contains('<') && !s.contains('>') && !s.contains('&'),
            "{s}"
        );
        assert!(!s.contains('\u{2028}') && !s.contains('\u{202e}'), "{s}");
        // The same value when parsed back.
        assert_eq!(serde_json::from_str::<serde_json::Value>(&s).unwrap(), v);
    }
}
