#!/usr/bin/env bash
# Compares tokenisations of Thai, Lao, Khmer and Myanmar on ../shared/corpus/multi: for each
# planted pair, the Jaccard of 5-token shingles under each one; prints, per char5 J band, the
# share of spaceless pairs at >= 0.8 (what verification at the default threshold would accept),
# and each tokeniser's speed on one core. usage: benches/segmenters/run.sh
set -euo pipefail
cd "$(dirname "$0")"
PY=$(../../../shared/corpus/tools/setup.sh | tail -1)
OUT=${OUT:-/tmp/corpus-dedup-segmenters}
mkdir -p "$OUT"
"$PY" - "$OUT/texts.jsonl" <<'PY'
import glob, json, sys
import pyarrow.parquet as pq
with open(sys.argv[1], "w") as f:
    for p in sorted(glob.glob("../../../shared/corpus/multi/data/*.parquet")):
        t = pq.read_table(p, columns=["id", "text", "lang"])
        for i, x, l in zip(*[t.column(c).to_pylist() for c in ["id", "text", "lang"]]):
            f.write(json.dumps({"id": i, "text": x, "lang": l}, ensure_ascii=False) + "\n")
PY
cargo run --release -q -- "$OUT/texts.jsonl" ../../../shared/corpus/multi/pairs.csv > "$OUT/pairs.tsv"
"$PY" - "$OUT/pairs.tsv" <<'PY'
import sys
import pandas as pd
d = pd.read_csv(sys.argv[1], sep="\t")
d = d[d.lang.isin(["th", "lo", "km", "my"])]
d["band"] = pd.cut(d.char5, [0, 0.8, 0.85, 0.9, 0.95, 1.01], right=False,
                   labels=["<0.80", "0.80-0.85", "0.85-0.90", "0.90-0.95", "0.95-1.00"])
d["hit"] = d.J >= 0.8
print(d.pivot_table(index="mode", columns="band", values="hit", aggfunc="mean", observed=True).round(3).to_string())
top = d[d.char5 >= 0.95]
print(top.pivot_table(index="mode", columns="lang", values="hit", aggfunc="mean").round(3).to_string())
PY
