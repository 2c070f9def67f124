#!/usr/bin/env bash
# Speed per script: the same-size corpora of benches/scripts/make.py, one thread, languages
# alternated ROUNDS times; prints MB/s of text per language (median) and its ratio to English.
# usage: benches/scripts/run.sh [BIN] (env: LANGS='en th km my', MB=20, ROUNDS=3, ARGS=...)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-${CARGO_TARGET_DIR:-target}/release/corpus-dedup}
LANGS=${LANGS:-en th km my}
ROUNDS=${ROUNDS:-3}
DATA=${DATA:-/tmp/corpus-dedup-scripts}
PY=$(../shared/corpus/tools/setup.sh | tail -1)
read -ra langs <<< "$LANGS"
[ -d "$DATA/${langs[-1]}" ] || "$PY" benches/scripts/make.py ../shared/corpus/multi/data "$DATA" --langs "${langs[@]}" --mb "${MB:-20}"
for r in $(seq "$ROUNDS"); do
  for l in "${langs[@]}"; do
    rm -rf "$DATA/out-$l"
    "$BIN" run --input "$DATA/$l/*.parquet" --output "$DATA/out-$l" --threads 1 --quiet ${ARGS:-} \
      | sed "s/^/$l /" >> "$DATA/times.$$"
  done
done
"$PY" - "$DATA" "$DATA/times.$$" <<'PY'
import glob, json, os, statistics, sys
import pyarrow.parquet as pq
data, times = sys.argv[1], sys.argv[2]
secs = {}
for line in open(times):
    lang, js = line.split(" ", 1)
    secs.setdefault(lang, []).append(json.loads(js)["seconds"])
mbs = {}
print("| language | documents | MB of text | seconds (median) | MB/s | vs en |\n|---|---|---|---|---|---|")
for lang, s in secs.items():
    t = [pq.read_table(f, columns=["text"]).column("text").to_pylist() for f in glob.glob(f"{data}/{lang}/*.parquet")]
    mb = sum(len(x.encode()) for part in t for x in part) / 1e6
    m = statistics.median(s)
    mbs[lang] = mb / m
    ratio = f"{mbs[lang] / mbs['en']:.2f}" if "en" in mbs else "-"
    print(f"| {lang} | {sum(map(len, t)):,} | {mb:.1f} | {m:.2f} | {mb / m:.1f} | {ratio} |")
PY
rm -f "$DATA/times.$$"
