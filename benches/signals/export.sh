#!/usr/bin/env bash
# `index export` at scale (make bench-export): NIGHTS generated nights of NIGHT_DOCS documents
# (gen-corpus --lang mixed, seeds 101..) added one by one to a --index-keys short index with a
# window holding them all, then `index export` of every live document, timed (wall and peak
# RSS). Corpora and the index stay under BENCH_DIR (delete it to start over); a stopped build
# resumes at the first night its index lacks.
#   make bench-export                        # 10 x 1M documents (~11 min, ~7 GB)
#   make bench-export NIGHTS=15              # 10.4M live documents (~25 min)
#   make bench-export NIGHTS=3 NIGHT_DOCS=100000
set -euo pipefail
target=${CARGO_TARGET_DIR:-$HOME/.cache/corpus-dedup-target}
nights=${NIGHTS:-10} per=${NIGHT_DOCS:-1000000}
base=${BENCH_DIR:-/tmp/corpus-dedup-bench-export}/$nights-$per
mkdir -p "$base"
cp "$target/release/corpus-dedup" "$base/corpus-dedup"; cp "$target/release/gen-corpus" "$base/gen-corpus"
bin=$base/corpus-dedup
for n in $(seq 1 "$nights"); do
  name=$(printf '2026-01-%02d' "$n")
  if grep -q "\"$name\"" "$base/index/index.json" 2>/dev/null; then continue; fi
  corpus=$base/night-$n
  if [ ! -d "$corpus" ]; then
    "$base/gen-corpus" --out "$corpus.tmp" --docs "$per" --lang mixed --seed $((100 + n)) --shards 4 --name "n$n"
    mv "$corpus.tmp" "$corpus"
  fi
  rm -rf "$base/out"
  "$bin" run --quiet --input "$corpus/*.parquet" --output "$base/out" --index "$base/index" \
    --batch "$name" --window "$nights" --index-keys short > /dev/null
  echo "bench-export: night $n of $nights indexed" >&2
done
/usr/bin/time -f '%e s wall, %M KB peak RSS' -o "$base/time" \
  "$bin" index export --index "$base/index" --output "$base/export.parquet"
echo "index export: $(cat "$base/time"); $(du -sh "$base/index" | cut -f1) index, $(du -h "$base/export.parquet" | cut -f1) written"
