#!/usr/bin/env bash
# The retained index over a months-long re-crawl stream (issue 47; make bench-index-soak):
# NIGHTS nights of NEW new documents and RECRAWL near-copies of earlier nights' documents
# (make.py) through one index with --window WINDOW; after each night `index status` gives the
# live documents, the lingering batches and the bytes on disk per live document, also as a
# multiple of night 1's.
#   make bench-index-soak [NIGHTS=24] [NEW=800] [RECRAWL=800] [WINDOW=2] [ARGS=...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${CARGO_TARGET_DIR:-$HOME/.cache/corpus-dedup-target}/release/corpus-dedup
corpus=$here/../../../shared/corpus
nights=${NIGHTS:-24} new=${NEW:-800} recrawl=${RECRAWL:-800} window=${WINDOW:-2} args=${ARGS:-}
py=$("$corpus/tools/setup.sh" | tail -1)
work=${BENCH_DIR:-/tmp/corpus-dedup-bench-index-soak}
rm -rf "$work"; mkdir -p "$work"
"$py" "$here/make.py" "$corpus/dev-small" "$work/data" --nights "$nights" --new "$new" --recrawl "$recrawl"
echo "| night | live documents | lingering batches | on disk | B per live document | x night 1 | dropped against the index |"
echo "|---|---|---|---|---|---|---|"
first=""
for n in $(seq 1 "$nights"); do
  batch=$(printf 'night-%02d' "$n")
  # shellcheck disable=SC2086 # ARGS are flags meant to split into words
  "$bin" run --quiet --input "$work/data/$batch.parquet" --output "$work/out" --index "$work/index" \
    --batch "$batch" --window "$window" $args > /dev/null
  "$bin" index status --json --index "$work/index" > "$work/status.json"
  first=$(python3 - "$work/status.json" "$work/out/summary.json" "$n" "$first" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); m = json.load(open(sys.argv[2]))
per = s["bytes_on_disk_per_live_document"]
first = float(sys.argv[4]) if sys.argv[4] else per
against = sum(m["index"]["dropped_against"].values())
print(f"| {sys.argv[3]} | {s['live_documents']:,} | {s['lingering']} | {s['bytes_on_disk'] / 1e6:.1f} MB "
      f"| {per:,.0f} | {per / first:.2f} | {against:,} |", file=sys.stderr)
print(first)
PY
)
done
