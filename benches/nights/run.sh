#!/usr/bin/env bash
# The development corpus as 4 nights of 2 shards through one retained index (`make bench-nights`),
# scored against its exact ground truth beside one run over all 8 shards, and beside the ideal
# incremental result (what a run that never drops an indexed document can reach: ideal.py).
#
#   make bench-nights                      # MinHash, --window 4, --index-keys all
#   make bench-nights ARGS='--index-keys short'
#   make bench-nights ARGS='--method simhash'
#   make bench-nights WINDOW=1
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${CARGO_TARGET_DIR:-$HOME/.cache/corpus-dedup-target}/release/corpus-dedup
corpus=$here/../../../shared/corpus
dev=$corpus/dev-small
window=${WINDOW:-4}
args=${ARGS:-}
py=$("$corpus/tools/setup.sh" | tail -1)
work=${BENCH_DIR:-/tmp/corpus-dedup-bench-nights}
rm -rf "$work"; mkdir -p "$work"
for n in 1 2 3 4; do
  mkdir -p "$work/n$n"
  for s in $((2 * n - 2)) $((2 * n - 1)); do ln -s "$dev/shard-0000$s.parquet" "$work/n$n/"; done
done
# shellcheck disable=SC2086 # ARGS are flags meant to split into words
"$bin" run --input "$dev/shard-*.parquet" --output "$work/one" --quiet $args >/dev/null
for n in 1 2 3 4; do
  # shellcheck disable=SC2086
  "$bin" run --input "$work/n$n/*.parquet" --output "$work/out$n" --index "$work/index" \
    --batch "night-$n" --window "$window" --quiet $args >/dev/null
done
"$py" "$here/combine.py" "$work/nights" "$work"/out{1,2,3,4}
echo "one run over 8 shards: $("$py" "$corpus/tools/score_manifest.py" "$dev" "$work/one" | tail -1)"
echo "4 nights, --window $window $args: $("$py" "$corpus/tools/score_manifest.py" "$dev" "$work/nights" | tail -1)"
"$py" "$here/ideal.py" "$dev" 4 2 | tail -1
"$py" - "$work" <<'PY'
import json, sys
import pyarrow.parquet as pq
work = sys.argv[1]
def dropped(p):
    t = pq.read_table(p, columns=["id", "keep"])
    return {i for i, k in zip(t.column("id").to_pylist(), t.column("keep").to_pylist()) if not k}
a, b = dropped(f"{work}/nights/manifest.parquet"), dropped(f"{work}/one/manifest.parquet")
print(f"dropped: nights {len(a)}, one run {len(b)}, differing {len(a ^ b)} ({100 * len(a ^ b) / len(b):.2f}% of the one run's)")
for n in range(1, 5):
    s = json.load(open(f"{work}/out{n}/summary.json")); i = s["index"]
    print(f"night {n}: dropped {s['documents_dropped']} (exact {s['exact_duplicates']}), against {i['dropped_against']}, "
          f"window {i['batches']}, expired {i['batches_expired']}, disk {i['index_bytes_per_document']} B/doc, "
          f"filters {i['filter_bytes_per_document']} B/doc")
PY
