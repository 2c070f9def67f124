#!/usr/bin/env python3
"""One giant bucket: N near copies of one page, each with a share of its words replaced.

usage: make.py OUT_DIR [--copies 50000] [--words 327] [--min-edit 0.005] [--max-edit 0.04] [--seed 1]

Writes OUT_DIR/giant.parquet (id, text): copy i has uniform(min-edit, max-edit) of the page's words
replaced by fresh ones, so copies are near-duplicates of the page and of one another at varying
Jaccard, and every band bucket of the page holds most of them (the case --max-bucket-pairs caps).
"""
import argparse, os, random
import pyarrow as pa, pyarrow.parquet as pq


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--copies", type=int, default=50000)
    ap.add_argument("--words", type=int, default=327)
    ap.add_argument("--min-edit", type=float, default=0.005)
    ap.add_argument("--max-edit", type=float, default=0.04)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    page = [f"w{rng.randrange(10**6)}" for _ in range(a.words)]
    ids, texts = [], []
    for i in range(a.copies):
        words = list(page)
        for at in rng.sample(range(a.words), max(1, round(rng.uniform(a.min_edit, a.max_edit) * a.words))):
            words[at] = f"e{rng.randrange(10**9)}"
        ids.append(f"g{i}")
        texts.append(" ".join(words))
    os.makedirs(a.out, exist_ok=True)
    pq.write_table(pa.table({"id": ids, "text": texts}), f"{a.out}/giant.parquet")


if __name__ == "__main__":
    main()
