#!/usr/bin/env python3
"""The Python package's minhash() against the Rust kernels it calls, on one core.

usage: udf.py KERNELS_LINE SHARD_GLOB   (make bench-python runs it)

KERNELS_LINE is the `signature-path kernels: ...` line of `kernels --signature-path` on the same
shards (one thread, pinned): its shingle hashes + MinHash (oph), and the two as one column
kernel (what minhash() calls). Prints
minhash()'s best of three over the same texts (a polars Series, one thread), their ratio, and
the cost of crossing into Python: per call (a one-row list) and per row (empty strings).
"""
import re
import sys
import time

import polars as pl

import corpus_dedup as cd


def best(f, n=3):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    line, glob = sys.argv[1], sys.argv[2]
    m = re.search(r"shingle hashes ([0-9.]+) s \+ MinHash \(oph\) ([0-9.]+) s.*column kernel ([0-9.]+) s", line)
    kernel = float(m.group(1)) + float(m.group(2))
    column = float(m.group(3))
    texts = pl.scan_parquet(glob).select("text").collect()["text"]
    mb = texts.str.len_bytes().sum() / 1e6
    udf = best(lambda: cd.minhash(texts))
    calls = 2000
    per_call = best(lambda: [cd.minhash(["a b c d e f"]) for _ in range(calls)]) / calls
    empty = pl.Series("text", [""] * 200_000)
    per_row = best(lambda: cd.minhash(empty)) / len(empty)
    print(f"| what | seconds | MB/s |\n|---|---|---|")
    print(f"| Rust kernels: shingle hashes + MinHash (oph) | {kernel:.3f} | {mb / kernel:.1f} |")
    print(f"| Rust: the same as one column kernel (what minhash() calls) | {column:.3f} | {mb / column:.1f} |")
    print(f"| corpus_dedup.minhash(Series) | {udf:.3f} | {mb / udf:.1f} |")
    print(f"\nminhash() / kernels: {udf / kernel:.2f}x; / the column kernel: {udf / column:.2f}x "
          f"({len(texts):,} texts, {mb:.1f} MB)")
    print(f"crossing into Python: {per_call * 1e6:.1f} us per call (a one-row list), "
          f"{per_row * 1e9:.0f} ns per row (empty strings: import, signature fill, export)")


if __name__ == "__main__":
    main()
