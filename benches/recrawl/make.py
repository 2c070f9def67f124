#!/usr/bin/env python3
"""A nightly re-crawl corpus: the same pages crawled again each night, most unchanged, some edited.

usage: make.py SOURCE_DIR OUT_DIR [--nights 4] [--edited 0.07] [--rewritten 0.03] [--seed 1]

Night 1 is SOURCE_DIR's shards as they are. Night k is night k-1 crawled again: every page comes
back (ids ID@nK); a share --edited has 1-3% of its tokens replaced, a share --rewritten half of
them (new content), the rest is unchanged. Edits accumulate from night to night, as a live site's
do. Tokens: a CJK character, or a run of other non-space characters. Writes
OUT/shard-nK-SSSSS.parquet (id, text), one shard per source shard per night, so that
ground_truth.py OUT gives the truth over all nights and OUT/shard-nK-*.parquet is night K.
"""
import argparse, glob, os, random, re
import pyarrow as pa, pyarrow.parquet as pq

TOKEN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\s\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def edit(text, rate, rng):
    spans = [m.span() for m in TOKEN.finditer(text)]
    k = max(1, round(rate * len(spans))) if spans else 0
    out, last = [], 0
    for s, e in sorted(rng.sample(spans, k)):
        out.append(text[last:s])
        out.append(f"r{rng.randrange(10**6)}")
        last = e
    out.append(text[last:])
    return "".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("out")
    ap.add_argument("--nights", type=int, default=4)
    ap.add_argument("--edited", type=float, default=0.07)
    ap.add_argument("--rewritten", type=float, default=0.03)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    shards = []
    for f in sorted(glob.glob(f"{a.source}/shard-*.parquet")):
        t = pq.read_table(f, columns=["id", "text"])
        shards.append((t.column("id").to_pylist(), t.column("text").to_pylist()))
    for night in range(1, a.nights + 1):
        for s, (ids, texts) in enumerate(shards):
            if night > 1:
                new = []
                for text in texts:
                    x = rng.random()
                    if text and x < a.rewritten:
                        text = edit(text, 0.5, rng)
                    elif text and x < a.rewritten + a.edited:
                        text = edit(text, rng.uniform(0.01, 0.03), rng)
                    new.append(text)
                texts = new
                shards[s] = (ids, texts)
            name = f"{a.out}/shard-n{night}-{s:05d}.parquet"
            pq.write_table(pa.table({"id": [f"{i}@n{night}" for i in ids], "text": texts}), name)


if __name__ == "__main__":
    main()
