#!/usr/bin/env python3
"""Same-size corpora of one language each, for comparing speed across scripts.

usage: make.py MULTI_DIR OUT_DIR [--langs en th] [--mb 20] [--seed 3]

For each language, the lines of its documents in MULTI_DIR (../shared/corpus/multi/data) are the
pool; each document is 8-16 lines drawn at random from it, until the language's corpus holds
--mb megabytes of text. Every corpus is built the same way (so about as many near-duplicates
in each), into OUT_DIR/LANG/shard-0000N.parquet (4 shards).
"""
import argparse, glob, os, random
import pyarrow as pa, pyarrow.parquet as pq


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("multi")
    ap.add_argument("out")
    ap.add_argument("--langs", nargs="+", default=["en", "th"])
    ap.add_argument("--mb", type=float, default=20)
    ap.add_argument("--seed", type=int, default=3)
    a = ap.parse_args()
    tables = [pq.read_table(f, columns=["text", "lang"]) for f in sorted(glob.glob(os.path.join(a.multi, "*.parquet")))]
    for lang in a.langs:
        rng = random.Random(a.seed)
        lines = [l for t in tables for x, g in zip(t.column("text").to_pylist(), t.column("lang").to_pylist())
                 if g == lang for l in x.split("\n") if l.strip()]
        texts, size = [], 0
        while size < a.mb * 1e6:
            doc = "\n".join(rng.choice(lines) for _ in range(rng.randint(8, 16)))
            texts.append(doc)
            size += len(doc.encode())
        d = os.path.join(a.out, lang)
        os.makedirs(d, exist_ok=True)
        for s in range(4):
            part = texts[s::4]
            ids = [f"{lang}-{s}-{i}" for i in range(len(part))]
            pq.write_table(pa.table({"id": ids, "text": part}), os.path.join(d, f"shard-{s:05d}.parquet"))
        print(f"{lang}: {len(texts)} documents, {size / 1e6:.1f} MB, {len(lines)} distinct lines in the pool")


if __name__ == "__main__":
    main()
