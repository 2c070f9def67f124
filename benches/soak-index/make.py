#!/usr/bin/env python3
"""A months-long re-crawl stream for the retained index (issue 47): each night NEW documents never
seen before, and RECRAWL near-copies (1 word in 50 replaced) of documents drawn uniformly from
all earlier nights' new documents (tokens replaced as benches/recrawl/make.py does; a CJK
character is a token), so content keeps coming back from every age.

usage: make.py SOURCE_DIR OUT_DIR [--nights 24] [--new 800] [--recrawl 800] [--seed 1]

New documents are SOURCE_DIR's shards' texts in a seeded order (so NIGHTS x NEW must not exceed
them). Writes OUT/night-KK.parquet (id, text), one file per night.
"""
import argparse, glob, os, random, sys

import pyarrow as pa, pyarrow.parquet as pq

# The re-crawl benchmark's edit: tokens replaced at a rate (a CJK character is a token).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "recrawl"))
from make import edit  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("out")
    ap.add_argument("--nights", type=int, default=24)
    ap.add_argument("--new", type=int, default=800)
    ap.add_argument("--recrawl", type=int, default=800)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    texts = []
    for f in sorted(glob.glob(f"{a.source}/shard-*.parquet")):
        texts.extend(t for t in pq.read_table(f, columns=["text"]).column("text").to_pylist() if t)
    rng.shuffle(texts)
    if a.nights * a.new > len(texts):
        raise SystemExit(f"{a.nights} nights x {a.new} new documents need more than {len(texts)} texts")
    os.makedirs(a.out, exist_ok=True)
    seen = []
    for night in range(1, a.nights + 1):
        fresh = texts[(night - 1) * a.new:night * a.new]
        ids = [f"n{night}-new{i}" for i in range(len(fresh))]
        rows = list(zip(ids, fresh))
        if seen:
            for i in range(a.recrawl):
                src = rng.choice(seen)
                rows.append((f"n{night}-copy{i}", edit(src, 1 / 50, rng)))
        seen.extend(fresh)
        pq.write_table(pa.table({"id": [r[0] for r in rows], "text": [r[1] for r in rows]}),
                       f"{a.out}/night-{night:02d}.parquet")


main()
