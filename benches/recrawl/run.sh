#!/usr/bin/env bash
# A nightly re-crawl through one retained index (`make bench-recrawl`): the development corpus
# crawled again on nights 2-4 (make.py: most pages unchanged, some edited, edits accumulating),
# each night a run against the index, under both --cluster rules. Prints per night the keeper
# scorer's figures (drops, the ideal incremental keeper drops from the exact ground truth,
# orphans) and the index's size on disk, and the size after the last night over the first.
#
#   make bench-recrawl [ARGS='--index-keys short'] [NIGHTS=4]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${CARGO_TARGET_DIR:-$HOME/.cache/corpus-dedup-target}/release/corpus-dedup
corpus=$here/../../../shared/corpus
nights=${NIGHTS:-4}
args=${ARGS:-}
py=$("$corpus/tools/setup.sh" | tail -1)
data=${RECRAWL_DIR:-/tmp/corpus-dedup-recrawl}
work=${BENCH_DIR:-/tmp/corpus-dedup-bench-recrawl}
if [ ! -f "$data/gt_pairs.parquet" ]; then
  rm -rf "$data"
  "$py" "$here/make.py" "$corpus/dev-small" "$data" --nights "$nights"
  "$py" "$corpus/tools/ground_truth.py" "$data" --verify-sample 0 --procs 2 >/dev/null
fi
short=${WINDOW:-2}
for run in "keeper $nights" "components $nights" "keeper $short"; do
  read -r rule window <<<"$run"
  dir="$work/$rule-w$window"
  rm -rf "$dir"; mkdir -p "$dir"
  outs=()
  for n in $(seq 1 "$nights"); do
    out="$dir/out$n"
    # shellcheck disable=SC2086 # ARGS are flags meant to split into words
    "$bin" run --input "$data/shard-n$n-*.parquet" --output "$out" --index "$dir/index" \
      --batch "night-$n" --window "$window" --cluster "$rule" --quiet $args >/dev/null
    outs+=("$out")
  done
  echo "--cluster $rule --window $window $args"
  if [ "$window" -lt "$nights" ]; then
    "$py" "$here/score_window.py" "$data" "$window" "${outs[@]}"
  else
    "$py" "$corpus/tools/score_keeper.py" "$data" "${outs[@]}"
  fi
  "$py" - "${outs[@]}" <<'PY'
import json, sys
sizes = []
for n, o in enumerate(sys.argv[1:], 1):
    i = json.load(open(f"{o}/summary.json"))["index"]
    sizes.append(i["index_bytes_on_disk"])
    print(f"night {n}: documents indexed {i['documents_indexed']}, index on disk {i['index_bytes_on_disk'] / 1e6:.1f} MB, lingering {i['lingering']}")
print(f"index after night {len(sizes)} / after night 1: {sizes[-1] / sizes[0]:.2f}x")
PY
done
