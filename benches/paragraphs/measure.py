"""Paragraph dedup on a corpus (make bench-paragraphs): the job's drop_spans against an
independent implementation of the rule (kept documents in input order, paragraphs between blank
lines or lines, 100+ bytes, whitespace runs as one space), what it removes by source, and what a
near-identical rule would remove on top (BFF-style: a paragraph seen when >= 80% of its word
5-grams were seen), with a sample of those.

usage: measure.py OUT 'SHARDS_GLOB' [docs_meta.parquet] [--min-bytes 100]
(by source: docs_meta's base_src, or the shards' lang column)
"""
import argparse
import random
import re

import polars as pl


WS = " \t\n\r\x0c"  # ASCII whitespace as Rust's u8::is_ascii_whitespace (src/text/paragraphs.rs)


def paragraphs(t, min_bytes):
    """(start, end, normalised text) of each paragraph of t, as src/text/paragraphs.rs cuts it."""
    lines, at = [], 0
    for line in t.split("\n"):
        n = len(line.encode())
        lines.append((at, at + n, line.strip(WS) == ""))
        at += n + 1
    text_lines = [i for i, x in enumerate(lines) if not x[2]]
    if not text_lines:
        return []
    first, last = text_lines[0], text_lines[-1]
    by_blank = any(x[2] for x in lines[first:last])
    units, after_blank = [], True
    for s, e, blank in lines[first:last + 1]:
        if blank:
            after_blank = True
            continue
        if units and by_blank and not after_blank:
            units[-1][1] = e
        else:
            units.append([s, e])
        after_blank = False
    b, out = t.encode(), []
    for i, (s, e) in enumerate(units):
        nxt = units[i + 1][0] if i + 1 < len(units) else len(b)
        body = b[s:e].decode().strip(WS)
        if len(body.encode()) >= min_bytes:
            out.append((s, nxt, " ".join(w for w in re.split("[" + WS + "]+", body) if w)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("shards")
    ap.add_argument("meta", nargs="?")
    ap.add_argument("--min-bytes", type=int, default=100)
    a = ap.parse_args()
    m = pl.read_parquet(a.out + "/manifest.parquet")
    df = pl.read_parquet(a.shards)
    texts = dict(zip(df["id"].to_list(), df["text"].to_list()))
    src = {}
    if "lang" in df.columns:
        src = dict(zip(df["id"].to_list(), df["lang"].to_list()))
    if a.meta:
        meta = pl.read_parquet(a.meta)
        col = "base_src" if "base_src" in meta.columns else meta.columns[1]
        src = dict(zip(meta["id"].to_list(), meta[col].to_list()))
    seen, grams_seen, want, by_src = set(), set(), set(), {}
    kept = removed = near_more = near_more_bytes = 0
    near_samples, exact_samples = [], []
    for id_, keep in zip(m["id"].to_list(), m["keep"].to_list()):
        if not keep:
            continue
        t = texts[id_]
        kept += len(t.encode())
        for s, e, norm in paragraphs(t, a.min_bytes):
            w = norm.split()
            grams = {" ".join(w[i:i + 5]) for i in range(max(1, len(w) - 4))}
            near = sum(g in grams_seen for g in grams) / len(grams) >= 0.8
            if norm in seen:
                want.add((id_, s, e))
                exact_samples.append(norm[:150])
                removed += e - s
                k = src.get(id_, "all")
                by_src[k] = by_src.get(k, 0) + e - s
            elif near:
                near_more += 1
                near_more_bytes += e - s
                near_samples.append(norm[:150])
            seen.add(norm)
            grams_seen |= grams
    got = {(i, sp["start"], sp["end"]) for i, sps in zip(m["id"].to_list(), m["drop_spans"].to_list())
           for sp in sps or []}
    print(f"- kept text {kept / 1e6:.1f} MB; exact rule removes {len(want):,} paragraphs, "
          f"{removed / 1e6:.2f} MB ({removed / max(kept, 1):.1%}); corpus-dedup's drop_spans "
          f"{'equal' if got == want else f'DIFFER ({len(got ^ want)} spans)'}")
    print("- removed bytes by source (share of kept text): " + ", ".join(
        f"{k} {v / max(kept, 1):.1%}" for k, v in sorted(by_src.items(), key=lambda x: -x[1])[:8]))
    random.seed(49)
    print("- a sample of the removed paragraphs:")
    for s in random.sample(exact_samples, min(5, len(exact_samples))):
        print(f"  - {s!r}")
    print(f"- near-identical (80% of word 5-grams seen) would remove {near_more:,} more paragraphs, "
          f"{near_more_bytes / 1e6:.2f} MB ({near_more_bytes / max(kept, 1):.1%}); a sample:")
    for s in random.sample(near_samples, min(5, len(near_samples))):
        print(f"  - {s!r}")


main()
