#!/usr/bin/env python3
"""The Python package's minhash() against the Rust kernels it calls, on one core, alternated.

usage: udf.py KERNELS_BIN SHARD_GLOB [ROUNDS]   (make bench-python runs it, pinned to one core)

Each round runs `KERNELS_BIN --signature-path SHARD_GLOB` (benches/kernels.rs: shingle hashes +
MinHash (oph) as separate steps, and the two as the one column kernel minhash() calls), then
times minhash() over the same texts as a polars Series (best of three). Prints each round's
ratios and their medians (this VM's speed drifts within minutes, so only ratios of one round are
compared), and the cost of crossing into Python: per call (a one-row list) and per row (empty
strings).
"""
import re
import statistics
import subprocess
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
    kernels, glob = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    texts = pl.scan_parquet(glob).select("text").collect()["text"]
    mb = texts.str.len_bytes().sum() / 1e6
    print(f"{len(texts):,} texts, {mb:.1f} MB, one thread\n")
    print("| round | kernels s (shingle hashes + MinHash) | column kernel s | minhash() s "
          "| minhash() / kernels | minhash() / column kernel |\n|---|---|---|---|---|---|")
    to_kernels, to_column = [], []
    for r in range(1, rounds + 1):
        out = subprocess.run([kernels, "--signature-path", glob], capture_output=True, text=True,
                             check=True).stdout
        m = re.search(r"shingle hashes ([0-9.]+) s \+ MinHash \(oph\) ([0-9.]+) s.*column kernel "
                      r"([0-9.]+) s", out)
        kernel, column = float(m.group(1)) + float(m.group(2)), float(m.group(3))
        udf = best(lambda: cd.minhash(texts))
        to_kernels.append(udf / kernel)
        to_column.append(udf / column)
        print(f"| {r} | {kernel:.3f} | {column:.3f} | {udf:.3f} | {udf / kernel:.2f} | "
              f"{udf / column:.2f} |")
    print(f"\nmedians: minhash() / kernels {statistics.median(to_kernels):.2f}x, "
          f"/ column kernel {statistics.median(to_column):.2f}x; minhash() at "
          f"{mb / best(lambda: cd.minhash(texts)):.0f} MB/s")
    calls = 2000
    per_call = best(lambda: [cd.minhash(["a b c d e f"]) for _ in range(calls)]) / calls
    empty = pl.Series("text", [""] * 200_000)
    per_row = best(lambda: cd.minhash(empty)) / len(empty)
    print(f"crossing into Python: {per_call * 1e6:.0f} us per call (a one-row list), "
          f"{per_row * 1e9:.0f} ns per row (empty strings: import, a 512-byte signature filled, "
          f"export)")


if __name__ == "__main__":
    main()
